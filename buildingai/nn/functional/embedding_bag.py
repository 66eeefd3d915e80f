"""``embedding_bag``: the sum, mean or maximum of each bag of embeddings, with PyTorch's
signature, without forming the bags' looked-up rows one by one: the bags are laid out as a
(bags, longest bag) index matrix with a mask, looked up at once, masked and reduced. Bags are
the rows of a 2-D input, or the segments of a 1-D input that ``offsets`` start."""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...functions.creation import as_tensor
from ...functions.elementwise import where
from ...functions.nn import embedding
from ...functions.positions import computed_from
from .embedding_rows import frequency_scaling, renormalize_rows

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _bag_matrix(op: str, input: Tensor, offsets, include_last_offset: bool):  # noqa: A002
    """(index (B, L), present (B, L) bool, positions (B, L) into the flat input or None): a
    2-D input is its own matrix; a 1-D input's segments are padded to the longest."""
    if input.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"[{op}] offsets must be None for a 2-D input (one bag per row)")
        return input, None, None
    if input.ndim != 1 or offsets is None:
        raise ShapeError(
            f"[{op}] expects a 2-D input (B, N) or a 1-D input with 1-D offsets, got input "
            f"{tuple(input.shape)} and offsets {None if offsets is None else tuple(offsets.shape)}",
            help="offsets[i] is where bag i starts in the 1-D input",
        )
    starts = np.asarray(as_tensor(offsets).array, dtype=np.int64).reshape(-1)
    total = input.shape[0]
    ends = np.append(starts[1:], total)
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    if starts.size and (starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > total):
        raise ArgumentError(
            f"[{op}] offsets must start at 0 and not decrease past the input's {total} "
            f"entries, got {starts.tolist()[:8]}"
        )
    lengths = ends - starts
    longest = max(int(lengths.max(initial=0)), 1)
    step = np.arange(longest)
    present = step[None, :] < lengths[:, None]
    positions = np.where(present, starts[:, None] + step[None, :], 0)
    source = offsets.array if isinstance(offsets, Tensor) else None
    index = input[computed_from(positions, source, input.array)]
    return index, computed_from(present, source), positions


def embedding_bag(
    input: Tensor,  # noqa: A002 - PyTorch's name
    weight: Tensor,
    offsets=None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Per bag, the ``mode`` ("sum", "mean" or "max") of the rows of ``weight`` (num, D) it
    looks up -> (B, D). Entries equal to ``padding_idx`` are left out (and not counted by the
    mean); an empty bag gives zeros. ``per_sample_weights`` (input's shape) scales each
    looked-up row, in "sum" mode only."""
    op = "embedding_bag"
    if mode not in _MODES:
        raise ArgumentError(f"[{op}] mode {mode!r} is not valid", help="use 'sum', 'mean' or 'max'")
    if sparse:
        raise ArgumentError(f"[{op}] sparse gradients are not supported", help="use sparse=False")
    if per_sample_weights is not None and mode != "sum":
        raise ArgumentError(f"[{op}] per_sample_weights needs mode='sum', got mode={mode!r}")
    input = as_tensor(input)  # noqa: A001
    if max_norm is not None:
        renormalize_rows(weight, input, max_norm, norm_type)
    index, present, positions = _bag_matrix(op, input, offsets, include_last_offset)
    if padding_idx is not None:
        padding_idx %= weight.shape[0]
        kept = index != padding_idx
        present = kept if present is None else present & kept
    rows = embedding(index, weight)  # (B, L, D)
    if scale_grad_by_freq and rows.requires_grad:
        rows.register_hook(frequency_scaling(index))
    if per_sample_weights is not None:
        scale = per_sample_weights if positions is None else per_sample_weights[Tensor(positions)]
        rows = rows * scale.unsqueeze(-1)
    if present is None:  # every entry of every bag counts
        if mode == "max":
            return rows.max(1).values
        return rows.sum(1) if mode == "sum" else rows.mean(1)
    mask = present.unsqueeze(-1)
    if mode == "max":
        best = where(mask, rows, float("-inf")).max(1).values
        return where(present.any(1, keepdim=True), best, 0.0)  # an empty bag: zeros
    total = where(mask, rows, 0.0).sum(1)
    if mode == "sum":
        return total
    counts = present.sum(1, keepdim=True).clamp(min=1).to(total.dtype)
    return total / counts
