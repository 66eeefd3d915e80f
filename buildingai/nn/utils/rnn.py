"""Padded and packed batches of variable-length sequences, as ``torch.nn.utils.rnn``:
``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``pad_sequence``,
``unpad_sequence``, ``pack_sequence``, ``unpack_sequence`` and ``invert_permutation``.

A packed batch holds its sequences sorted by decreasing length and interleaved time step by time
step: ``data`` (sum of lengths, *) has the ``batch_sizes[0]`` first elements of every sequence,
then the ``batch_sizes[1]`` second elements, and so on. Every conversion here is one gather with a
constant index array (and a concatenation that adds one row of padding), so gradients flow through
packing and padding by the gradients of indexing and ``concatenate``. The lengths are read as
Python values: a frozen graph refuses lengths computed from its inputs and keeps given ones as
constants. ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` take a ``PackedSequence`` as input (see
``nn.rnn``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...functions import argsort, concatenate, full, tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """A batch of variable-length sequences packed for a recurrent layer (a named tuple).

    data: (sum of lengths, *) the sequences' elements, time step by time step; batch_sizes:
    (longest length,) int64, how many sequences are still running at each step; sorted_indices:
    (B,) int64, the original batch position of each packed sequence (None when the batch was
    already sorted), and unsorted_indices its inverse. Made by ``pack_padded_sequence`` or
    ``pack_sequence``; ``PackedSequence(data, batch_sizes, sorted_indices)`` fills in
    ``unsorted_indices``, and ``PackedSequence((data, batch_sizes))`` is accepted as well.
    """

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (tuple, list)) and len(data) == 2):
                raise ArgumentError(
                    "[PackedSequence] expected data and batch_sizes, or one pair "
                    f"(data, batch_sizes), got {type(data).__name__}",
                    help="make packed sequences with pack_padded_sequence or pack_sequence",
                )
            data, batch_sizes = data
        if isinstance(batch_sizes, Tensor) and batch_sizes.device.type != "cpu":
            raise ArgumentError(
                f"[PackedSequence] batch_sizes should always be on the CPU, got "
                f"{batch_sizes.device}",
                help="make packed sequences with pack_padded_sequence or pack_sequence",
            )
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        """This batch with ``data`` in place of its data; the permutations follow its device,
        ``batch_sizes`` stays on the CPU. ``self`` itself when ``data`` is the same tensor."""
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if indices is None else indices.to(data.device)
            for indices in (self.sorted_indices, self.unsorted_indices)
        )
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data.to(...)`` (dtype and/or device, as ``Tensor.to``); ``self`` when nothing
        changes."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs) -> PackedSequence:
        """The batch with its data (and permutations) on a CUDA GPU."""
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        """The batch with its data (and permutations) on the CPU."""
        return self._with_data(self.data.cpu())

    def double(self) -> PackedSequence:
        return self._with_data(self.data.double())

    def float(self) -> PackedSequence:
        return self._with_data(self.data.float())

    def half(self) -> PackedSequence:
        return self._with_data(self.data.half())

    def long(self) -> PackedSequence:
        return self._with_data(self.data.long())

    def int(self) -> PackedSequence:
        return self._with_data(self.data.int())

    def short(self) -> PackedSequence:
        return self._with_data(self.data.short())

    def char(self) -> PackedSequence:
        return self._with_data(self.data.char())

    def byte(self) -> PackedSequence:
        return self._with_data(self.data.byte())

    @property
    def is_cuda(self) -> bool:
        """True when the data lives on a CUDA GPU."""
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation: (n,) int64 -> (n,) int64 with
    ``inverse[permutation[i]] == i``; None for None."""
    if permutation is None:
        return None
    return argsort(permutation)


# ----- checks and index arrays -------------------------------------------------------------------


def _read_lengths(lengths, name: str) -> list[int]:
    """``lengths`` (a 1-D tensor, array or sequence of ints) as a list of Python ints.

    Reading a tensor's values is refused while freezing when they depend on the graph's
    inputs: the index arrays made from them would be constants of one sample's lengths.
    """
    if isinstance(lengths, Tensor):
        shape = tuple(lengths.shape)
        values = lengths.tolist()
    else:
        array = np.asarray(lengths)
        shape = array.shape
        values = array.tolist()
    if len(shape) != 1:
        raise ShapeError(
            f"[{name}] lengths must be one length per sequence (1-D), got shape {shape}",
            help="pass a list of ints or a 1-D int64 tensor",
        )
    return [int(value) for value in values]


def _check_tensor(value, name: str, what: str, min_ndim: int) -> None:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"[{name}] {what} must be a Tensor, got {type(value).__name__}")
    if value.ndim < min_ndim:
        raise ShapeError(
            f"[{name}] {what} must have at least {min_ndim} dimensions, got shape "
            f"{tuple(value.shape)}",
            help="sequences are (L, *) and padded batches (T, B, *), or (B, T, *) with "
            "batch_first=True",
        )


def _read_batch_sizes(sequence, name: str) -> list[int]:
    """The batch sizes of a packed batch as Python ints, checked against its data."""
    if not isinstance(sequence, PackedSequence):
        raise ArgumentError(
            f"[{name}] expected a PackedSequence, got {type(sequence).__name__}",
            help="make one with pack_padded_sequence or pack_sequence",
        )
    batch_sizes = _read_lengths(sequence.batch_sizes, name)
    data = sequence.data
    rows = data.shape[0] if isinstance(data, Tensor) and data.ndim > 0 else None
    if (
        not batch_sizes
        or batch_sizes[-1] <= 0
        or any(a < b for a, b in zip(batch_sizes, batch_sizes[1:]))
        or rows != sum(batch_sizes)
    ):
        raise ShapeError(
            f"[{name}] batch_sizes {batch_sizes} do not describe packed data of shape "
            f"{tuple(data.shape) if isinstance(data, Tensor) else type(data).__name__}: they "
            "must be positive, non-increasing and add up to the data's rows",
            help="make packed sequences with pack_padded_sequence or pack_sequence",
        )
    return batch_sizes


def _packed_rows(batch_sizes: list[int], steps: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """For a padded (steps, batch) grid of a packed batch in sorted order: the row of the packed
    data each cell holds (or one past the last row, for padding) and the lengths (batch,)."""
    sizes = np.zeros(steps, dtype=np.int64)
    sizes[: len(batch_sizes)] = batch_sizes
    offsets = np.cumsum(sizes) - sizes  # the first row of every time step
    columns = np.arange(batch)
    valid = columns[None, :] < sizes[:, None]  # (steps, batch)
    rows = np.where(valid, offsets[:, None] + columns[None, :], int(sizes.sum()))
    return rows, valid.sum(axis=0)


# ----- packing and padding -----------------------------------------------------------------------


def pack_padded_sequence(
    input: Tensor,  # noqa: A002 - PyTorch's name
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch: input (T, B, *), or (B, T, *) with ``batch_first``, with the
    sequence lengths (B,) -> PackedSequence with data (sum of lengths, *).

    With ``enforce_sorted`` the lengths must be decreasing; otherwise the batch is sorted by
    decreasing length (ties keep their order) and ``sorted_indices`` records how.
    """
    name = "pack_padded_sequence"
    _check_tensor(input, name, "input", 2)
    lengths = _read_lengths(lengths, name)
    batch_axis, time_axis = (0, 1) if batch_first else (1, 0)
    batch, steps = input.shape[batch_axis], input.shape[time_axis]
    if input.numel() == 0:
        raise ShapeError(
            f"[{name}] cannot pack empty tensors, got input of shape {tuple(input.shape)}"
        )
    if len(lengths) != batch:
        raise ShapeError(
            f"[{name}] expected one length per sequence: got {len(lengths)} lengths for a batch "
            f"of {batch} (input shape {tuple(input.shape)}, batch_first={batch_first})",
            help="check batch_first: the batch dimension is 1 by default, 0 with batch_first=True",
        )
    if min(lengths) <= 0 or max(lengths) > steps:
        raise ArgumentError(
            f"[{name}] every length must be between 1 and the padded length {steps}, got "
            f"lengths {lengths}",
            help="sequences of length 0 cannot be packed; leave them out of the batch",
        )
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise ArgumentError(
                f"[{name}] lengths {lengths} must be sorted in decreasing order when "
                "enforce_sorted is True",
                help="pass enforce_sorted=False to have the batch sorted for you",
            )
        order = np.arange(batch)
        sorted_indices = None
    else:
        order = np.argsort(-np.asarray(lengths), kind="stable")
        sorted_indices = tensor(order, dtype="int64", device=input.device)
    sorted_lengths = np.asarray(lengths)[order]
    batch_sizes = (sorted_lengths[None, :] > np.arange(sorted_lengths[0])[:, None]).sum(axis=1)
    # the packed rows in order: step t holds sorted sequences 0 .. batch_sizes[t] - 1
    times = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    ranks = np.arange(len(times)) - np.repeat(np.cumsum(batch_sizes) - batch_sizes, batch_sizes)
    columns = order[ranks]
    data = input[(columns, times) if batch_first else (times, columns)]
    return PackedSequence(data, tensor(batch_sizes, dtype="int64"), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Unpack a packed batch: PackedSequence with data (sum of lengths, *) -> (padded (T, B, *),
    or (B, T, *) with ``batch_first``; lengths (B,) int64), in the original batch order.

    T is the longest length, or ``total_length`` when given (at least the longest length);
    the cells past each sequence's end hold ``padding_value``.
    """
    name = "pad_packed_sequence"
    batch_sizes = _read_batch_sizes(sequence, name)
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(
                f"[{name}] expected total_length to be at least the length of the longest "
                f"sequence ({steps}), got total_length={total_length}",
                help="pass total_length=None to pad to the longest sequence",
            )
        steps = total_length
    rows, lengths = _packed_rows(batch_sizes, steps, batch_sizes[0])
    if sequence.unsorted_indices is not None:
        unsorted = np.asarray(sequence.unsorted_indices.tolist(), dtype=np.int64)
        rows, lengths = rows[:, unsorted], lengths[unsorted]
    data = sequence.data
    if lengths.min() < steps:  # some cells are padding: one padding row to gather them from
        padding = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
        data = concatenate([data, padding])
    padded = data[rows.T if batch_first else rows]
    return padded, tensor(lengths, dtype="int64")


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Pad B sequences (L_i, *) to one tensor (T, B, *), or (B, T, *) with ``batch_first``, T
    the longest L_i; ``padding_value`` fills the cells after each sequence (before it with
    ``padding_side='left'``). The result has the first sequence's dtype.
    """
    name = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise ArgumentError(
            f"[{name}] expected an iterable of sequences, got {type(sequences).__name__}",
            help="pass a list of tensors (L_i, *)",
        )
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise ArgumentError(
            f"[{name}] padding_side must be 'left' or 'right', got {padding_side!r}"
        )
    if not sequences:
        raise ArgumentError(f"[{name}] received an empty list of sequences")
    for sequence in sequences:
        _check_tensor(sequence, name, "every sequence", 1)
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    for index, sequence in enumerate(sequences):
        if tuple(sequence.shape[1:]) != trailing:
            raise ShapeError(
                f"[{name}] sequences must agree in all but their first dimension: sequence 0 "
                f"is {tuple(first.shape)}, sequence {index} is {tuple(sequence.shape)}",
                help="sequences are (L_i, *) with the same trailing dimensions *",
            )
    lengths = np.array([sequence.shape[0] for sequence in sequences], dtype=np.int64)
    steps = int(lengths.max())
    offsets = np.cumsum(lengths) - lengths  # each sequence's first row in the concatenation
    starts = steps - lengths if padding_side == "left" else np.zeros_like(lengths)
    positions = np.arange(steps)[:, None] - starts[None, :]  # (T, B) place in its sequence
    valid = (positions >= 0) & (positions < lengths[None, :])
    rows = np.where(valid, offsets[None, :] + positions, int(lengths.sum()))
    dtype = first.dtype
    pieces = [s if s.dtype == dtype else s.astype(dtype) for s in sequences]
    pieces.append(full((1, *trailing), padding_value, dtype=dtype, device=first.device))
    return concatenate(pieces)[rows.T if batch_first else rows]


def unpad_sequence(
    padded_sequences: Tensor,
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
) -> list[Tensor]:
    """Cut a padded batch (T, B, *), or (B, T, *) with ``batch_first``, back into B sequences
    (lengths[i], *): the first lengths[i] steps of each (views of the padded batch)."""
    name = "unpad_sequence"
    _check_tensor(padded_sequences, name, "padded_sequences", 2)
    lengths = _read_lengths(lengths, name)
    batch = padded_sequences.shape[0 if batch_first else 1]
    if len(lengths) != batch:
        raise ShapeError(
            f"[{name}] expected one length per sequence: got {len(lengths)} lengths for a batch "
            f"of {batch} (padded shape {tuple(padded_sequences.shape)}, batch_first={batch_first})",
            help="check batch_first: the batch dimension is 1 by default, 0 with batch_first=True",
        )
    if batch_first:
        return [padded_sequences[i, : max(n, 0)] for i, n in enumerate(lengths)]
    return [padded_sequences[: max(n, 0), i] for i, n in enumerate(lengths)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack B sequences (L_i, *) -> PackedSequence with data (sum of L_i, *): ``pad_sequence``
    then ``pack_padded_sequence``. With ``enforce_sorted`` the L_i must be decreasing."""
    sequences = list(sequences)
    lengths = [sequence.shape[0] if isinstance(sequence, Tensor) else 0 for sequence in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The B sequences (L_i, *) of a packed batch, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
