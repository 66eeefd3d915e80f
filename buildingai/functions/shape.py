"""Shape functions: reshape, squeeze, concatenate, split, pad, tile and friends.

Most of them are thin: they normalise PyTorch and NumPy spellings (``dim``/``axis``) and either
call a primitive of ``ops.shape`` or compose primitives (``flip`` and ``split`` are slices,
``tile`` is reshape + expand + reshape), so their gradients come for free.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import ArgumentError, DTypeError, ShapeError, dimensions
from ..ops import shape as ops
from ..ops.index import GETITEM
from ._common import (
    as_shape,
    check_scalar_axis,
    dimensioned_axis,
    normalize_axes,
    normalize_axis,
    pick,
)
from .creation import as_tensor
from .memory_format import MemoryFormat, check_memory_format, contiguous_format

# ----- reshaping and reordering --------------------------------------------------------------


def reshape(x: Tensor, *shape) -> Tensor:
    """The same elements in a new shape (a view when possible); one dimension may be -1."""
    shape = as_shape(shape)
    if tuple(x.shape) == shape:
        return x
    return apply(ops.RESHAPE, x, shape=shape)


def view(x: Tensor, *shape) -> Tensor:
    """PyTorch's ``view``: the same memory in a new shape; one dimension may be -1.

    Raises a ShapeError where the new shape cannot be laid over ``x``'s strides, exactly where
    ``torch.Tensor.view`` raises (e.g. merging the dimensions of a transposed tensor); use
    ``reshape``, which copies in that case. ``(B, H, T, D).transpose(1, 2)`` then
    ``.view(B, T, H * D)`` raises; ``.reshape(B, T, H * D)`` works.
    """
    shape = as_shape(shape)
    if tuple(x.shape) == shape:
        return x
    if x.array.flags.c_contiguous:  # any shape of its size lies over C-ordered memory
        return apply(ops.RESHAPE, x, shape=shape)
    target = _resolve_shape(shape, int(math.prod(x.shape)))
    if target is not None and _has_torch_layout(x):
        itemsize = x.array.itemsize
        strides = tuple(step // itemsize for step in x.array.strides)
        if not _strides_allow_view(tuple(x.shape), strides, target):
            raise ShapeError(
                f"[view] cannot view a tensor of shape {tuple(x.shape)} and strides {strides} "
                f"as {shape}: the new shape would merge dimensions that are not adjacent in "
                "memory (the tensor is not contiguous, e.g. after transpose or permute)",
                help=f"use x.reshape{shape}, which copies when it must, or "
                f"x.contiguous().view{shape}",
            )
    return apply(ops.RESHAPE, x, shape=shape)


def _resolve_shape(shape: tuple, count: int) -> tuple | None:
    """``shape`` with its -1 filled in, or None when it cannot hold ``count`` elements (the
    reshape op then reports it)."""
    known = int(math.prod(extent for extent in shape if extent != -1))
    unknown = shape.count(-1)
    if unknown == 0:
        return shape if known == count else None
    if unknown > 1 or known == 0 or count % known:
        return None
    return tuple(count // known if extent == -1 else extent for extent in shape)


def _has_torch_layout(x: Tensor) -> bool:
    """Whether ``x``'s strides are the ones PyTorch would give it: a view (no negative steps)
    of a C-ordered tensor. Computed results may be laid out differently from PyTorch's (a sum
    over a permuted tensor keeps NumPy's order), and ``flip`` is a view here but a copy there,
    so ``view`` judges only layouts that both agree on."""
    base = x._base
    if base is None or not base.array.flags.c_contiguous:
        return False
    strides = getattr(x.array, "strides", None)
    return strides is not None and all(step >= 0 for step in strides)


def _strides_allow_view(shape: tuple, strides: tuple, target: tuple) -> bool:
    """PyTorch's rule (``computeStride``): walk the dimensions from the last, grouping those
    that are contiguous with each other into chunks; every chunk must be split or merged by the
    target shape on its own. Strides are in elements."""
    if not shape or 0 in shape:
        return True
    target_axis = len(target) - 1
    chunk_stride = strides[-1]
    chunk_count = target_count = 1
    for axis in range(len(shape) - 1, -1, -1):
        chunk_count *= shape[axis]
        chunk_ends = axis == 0 or (
            shape[axis - 1] != 1 and strides[axis - 1] != chunk_count * chunk_stride
        )
        if not chunk_ends:
            continue
        while target_axis >= 0 and (target_count < chunk_count or target[target_axis] == 1):
            target_count *= target[target_axis]
            target_axis -= 1
        if target_count != chunk_count:
            return False
        if axis > 0:
            chunk_stride = strides[axis - 1]
            chunk_count = target_count = 1
    return target_axis == -1


def expand(x: Tensor, *shape) -> Tensor:
    """Broadcast to ``shape`` without copying; -1 keeps a dimension."""
    shape = as_shape(shape)
    if -1 in shape:  # -1 keeps a dimension
        lead = len(shape) - x.ndim
        for axis, extent in enumerate(shape[: max(lead, 0)]):
            if extent == -1:
                raise ShapeError(
                    f"[expand] -1 at axis {axis} of {shape}: a new leading dimension has no "
                    "size to keep",
                    help="give the new leading dimensions their sizes; -1 keeps only existing ones",
                )
        shape = tuple(
            x.shape[axis - lead] if extent == -1 else extent for axis, extent in enumerate(shape)
        )
    if tuple(x.shape) == shape:
        return x
    return apply(ops.EXPAND, x, shape=shape)


def broadcast_shapes(*shapes) -> tuple:
    """The shape that tensors of ``shapes`` broadcast to, as ``torch.broadcast_shapes``:
    ``broadcast_shapes((3, 1), (4,))`` -> ``(3, 4)``."""
    try:
        return tuple(int(size) for size in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(
            f"[broadcast_shapes] shapes {', '.join(str(tuple(s)) for s in shapes)} do not "
            "broadcast together",
            help="sizes must match, or be 1, aligned from the last dimension",
        ) from None


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded (a view, no copy) to the shape they broadcast to together, as
    ``torch.broadcast_tensors``."""
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def permute(x: Tensor, *axes) -> Tensor:
    """Reorder dimensions: ``x.permute(0, 2, 1)``."""
    ndim = x.ndim
    axes = tuple([normalize_axis(a, ndim, "permute") for a in as_shape(axes)])
    if axes == (_IN_ORDER[ndim] if ndim < len(_IN_ORDER) else tuple(range(ndim))):
        return x
    return apply(ops.PERMUTE, x, axes=axes)


def reversed_axes(x: Tensor) -> Tensor:
    """``x.T``: the dimensions in reverse order (NumPy's ``.T``); a tensor of at most one
    dimension is itself."""
    ndim = x.ndim
    if ndim < 2:
        return x
    axes = _REVERSED[ndim] if ndim < len(_REVERSED) else tuple(range(ndim - 1, -1, -1))
    return apply(ops.PERMUTE, x, axes=axes)


# The axes of a tensor of up to 7 dimensions in order and reversed, made once: ``permute`` and
# ``.T`` run between most layers' ops, and building these tuples cost as much as their op.
_IN_ORDER = tuple(tuple(range(ndim)) for ndim in range(8))
_REVERSED = tuple(order[::-1] for order in _IN_ORDER)


def transpose(x: Tensor, *axes) -> Tensor:
    """With no axes, reverse the dimensions (NumPy); with two axes, swap them (PyTorch).

    ``(A, B, C)`` -> ``(C, B, A)``; ``transpose(x, 0, 1)`` -> ``(B, A, C)``; any other axes
    are a full order, as ``permute``.
    """
    if not axes:
        return reversed_axes(x)
    if len(axes) == 2 and isinstance(axes[0], int) and isinstance(axes[1], int):
        return swapaxes(x, *axes)
    return permute(x, *axes)


def swapaxes(x: Tensor, axis1: int, axis2: int) -> Tensor:
    """Exchange two dimensions (a 0-d tensor takes axes 0 and -1, and stays as it is).

    ``(A, B, C)`` with ``swapaxes(0, 2)`` -> ``(C, B, A)``.
    """
    if x.ndim == 0:
        check_scalar_axis(axis1, "swapaxes")
        check_scalar_axis(axis2, "swapaxes")
        return x
    first = normalize_axis(axis1, x.ndim, "swapaxes")
    second = normalize_axis(axis2, x.ndim, "swapaxes")
    if first == second:
        return x
    order = list(_IN_ORDER[x.ndim] if x.ndim < len(_IN_ORDER) else range(x.ndim))
    order[first], order[second] = order[second], order[first]
    return apply(ops.PERMUTE, x, axes=tuple(order))


def movedim(x: Tensor, source, destination) -> Tensor:
    """Move the dimensions ``source`` (an int or a sequence) to positions ``destination``; the
    other dimensions keep their order. ``movedim(x, 0, -1)``: (N, C, H) -> (C, H, N)."""
    source = (source,) if isinstance(source, int) else tuple(source)
    destination = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(source) != len(destination):
        raise ShapeError(
            f"[movedim] source {source} and destination {destination} must name as many axes",
            help="pass one destination per moved axis",
        )
    src = [normalize_axis(a, x.ndim, "movedim") for a in source]
    dst = [normalize_axis(a, x.ndim, "movedim") for a in destination]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"[movedim] repeated axis in source {source} or destination {destination}")
    order = [axis for axis in range(x.ndim) if axis not in src]
    for position, axis in sorted(zip(dst, src)):
        order.insert(position, axis)
    return permute(x, tuple(order))


def squeeze(x: Tensor, axis=None, *, dim=None) -> Tensor:
    """Remove dimensions of size 1: all of them (no axis), or those among the given int or tuple
    of ints. ``(1, 3, 1) -> (3,)``.

    A named axis whose size is not 1 is left in place, as in PyTorch (``squeeze(0)`` of a
    ``(2, 3)`` tensor returns it unchanged), so a PyTorch program runs unchanged; an axis out
    of range still raises. While freezing, a named axis of symbolic size is not known to be 1
    and raises.
    """
    axes = normalize_axes(pick("axis", axis, "dim", dim), x.ndim, "squeeze")
    if axes is None:
        axes = tuple(a for a, extent in enumerate(x.shape) if extent == 1)
    else:  # PyTorch's rule: a named axis whose size is a number other than 1 is kept
        axes = tuple(a for a in axes if type(x.shape[a]) is not int or x.shape[a] == 1)
    if not axes:
        return x
    return apply(ops.SQUEEZE, x, axes=axes)


def unsqueeze(x: Tensor, axis=None, *, dim=None) -> Tensor:
    """Insert a dimension of size 1 at ``axis`` (an int, or a tuple of positions in the result,
    as NumPy's ``expand_dims``). ``(3, 4)`` with axis -1 -> ``(3, 4, 1)``."""
    axis = pick("axis", axis, "dim", dim)
    if axis is None:
        raise TypeError("unsqueeze() needs the position of the new dimension (axis= or dim=)")
    count = 1 if isinstance(axis, int) else len(axis)
    axes = normalize_axes(axis, x.ndim + count, "unsqueeze")
    return apply(ops.UNSQUEEZE, x, axes=axes)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` (inclusive) into one: ``(N, C, H, W)`` with
    ``start_dim=1`` -> ``(N, C*H*W)``. A 0-d tensor becomes ``(1,)``, as in PyTorch."""
    if x.ndim == 0:
        return reshape(x, (1,))
    start = normalize_axis(start_dim, x.ndim, "flatten")
    end = normalize_axis(end_dim, x.ndim, "flatten")
    if start > end:
        raise ShapeError(
            f"[flatten] start_dim {start_dim} comes after end_dim {end_dim} for a tensor shaped "
            f"{tuple(x.shape)}",
            help="start_dim must not be after end_dim",
        )
    if start == end:
        return x
    merged = int(math.prod(x.shape[start : end + 1]))
    return apply(ops.RESHAPE, x, shape=x.shape[:start] + (merged,) + x.shape[end + 1 :])


def unflatten(x: Tensor, dim: int, sizes) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (one of which may be -1): the inverse of
    ``flatten``. ``(N, 12)`` with ``unflatten(1, (3, -1))`` -> ``(N, 3, 4)``."""
    axis = dimensioned_axis(dim, x.ndim, "unflatten")
    sizes = as_shape((sizes,))
    extent = x.shape[axis]
    known = int(np.prod([s for s in sizes if s != -1]))
    unknown = sum(1 for s in sizes if s == -1)
    valid = all(s >= 0 or s == -1 for s in sizes) and unknown <= 1
    if unknown:
        fits = valid and known > 0 and extent % known == 0
    else:
        fits = valid and known == extent
    if not sizes or not fits:
        raise ShapeError(
            f"[unflatten] sizes {sizes} do not multiply to {extent}, the size of dimension "
            f"{axis} of a tensor shaped {tuple(x.shape)}",
            help="the product of the sizes must equal the dimension; at most one may be -1",
        )
    if unknown:
        sizes = tuple(extent // known if s == -1 else s for s in sizes)
    return reshape(x, x.shape[:axis] + sizes + x.shape[axis + 1 :])


def contiguous(x: Tensor, memory_format: MemoryFormat = contiguous_format) -> Tensor:
    """``x`` itself when its memory is C-ordered, otherwise a C-ordered copy; same shape.

    ``memory_format`` takes PyTorch's values; ``channels_last`` gives the same row-major
    tensor (``buildingai.functions.memory_format`` says why).
    """
    if memory_format is not contiguous_format:
        check_memory_format("contiguous", memory_format, x.ndim, allow_preserve=False)
    if x.array.flags.c_contiguous:
        return x
    return apply(ops.CONTIGUOUS, x)


# ----- joining --------------------------------------------------------------------------------


def _as_tensor_list(tensors, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"[{op}] expects a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ShapeError(f"[{op}] needs at least one tensor, got an empty sequence")
    return [as_tensor(t) for t in tensors]


def _is_legacy_empty(x: Tensor) -> bool:
    return x.ndim == 1 and x.shape[0] == 0


def concatenate(tensors: Sequence[Tensor], axis: int | None = None, *, dim=None) -> Tensor:
    """Join tensors along an existing axis (default 0). All dimensions but ``axis`` must match;
    dtypes are promoted. ``[(2, 3), (4, 3)]`` along 0 -> ``(6, 3)``.

    As in PyTorch, an empty 1-D tensor (shape ``(0,)``, the old way of writing "nothing yet")
    beside tensors of other ranks adds no elements: ``cat([empty(0), x])`` is ``x`` (its dtype
    still takes part in promotion, and it receives an empty gradient)."""
    tensors = _as_tensor_list(tensors, "concatenate")
    first = next((t for t in tensors if not _is_legacy_empty(t)), tensors[0])
    if first.ndim == 0:
        raise ShapeError(
            "[concatenate] cannot concatenate 0-d tensors: they have no axis to join along",
            help="use stack() to join scalars into a vector",
        )
    axis = normalize_axis(pick("axis", axis, "dim", dim, 0), first.ndim, "concatenate")
    if first.ndim != 1:  # each legacy empty becomes a zero-width slice of ``first``'s shape
        nothing = tuple(0 if a == axis else n for a, n in enumerate(first.shape))
        tensors = [t.reshape(nothing) if _is_legacy_empty(t) else t for t in tensors]
    return apply(ops.CONCATENATE, *tensors, axis=axis)


def stack(tensors: Sequence[Tensor], axis: int | None = None, *, dim=None) -> Tensor:
    """Join equally shaped tensors along a new axis (default 0): ``3 x (2, 4)`` -> ``(3, 2, 4)``."""
    tensors = _as_tensor_list(tensors, "stack")
    shape = tuple(tensors[0].shape)
    if any(tuple(t.shape) != shape for t in tensors):
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise ShapeError(
            f"[stack] expects tensors of equal shape, got {shapes}",
            help="reshape the inputs to one shape, or use concatenate() along an existing axis",
        )
    axis = normalize_axis(pick("axis", axis, "dim", dim, 0), len(shape) + 1, "stack")
    if axis < len(shape):
        # Joined along the axis the new one goes before, then that axis split in two: two ops
        # (and one slice per input in backward), where an unsqueeze per input costs one each.
        joined = apply(ops.CONCATENATE, *tensors, axis=axis)
        return reshape(joined, shape[:axis] + (len(tensors), shape[axis]) + shape[axis + 1 :])
    expanded = [unsqueeze(t, axis) for t in tensors]
    return apply(ops.CONCATENATE, *expanded, axis=axis)


# ----- splitting and slicing ------------------------------------------------------------------


def _slice_along(x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    """``x[:, ..., start:stop]`` along ``axis`` (non-negative): the getitem op itself, with the
    index as ``getitem`` would normalise it (a trailing '...')."""
    return apply(GETITEM, x, index=(slice(None),) * axis + (slice(start, stop), Ellipsis))


def _pieces(x: Tensor, axis: int, sizes: list) -> tuple:
    """Views of ``x`` along ``axis`` (non-negative), of ``sizes`` in turn (they sum to it)."""
    pieces = []
    start = 0
    for size in sizes:
        pieces.append(_slice_along(x, axis, start, start + size))
        start += size
    return tuple(pieces)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements ``start .. start + length - 1`` along ``dim`` (a view); ``start`` may be
    negative (counted from the end). ``(4, 6)`` with ``narrow(1, 2, 3)`` -> ``(4, 3)``."""
    axis = dimensioned_axis(dim, x.ndim, "narrow")
    extent = x.shape[axis]
    begin = start + extent if -extent <= start < 0 else start
    if not 0 <= begin <= extent or length < 0 or begin + length > extent:
        raise ShapeError(
            f"[narrow] start {start} and length {length} do not fit in dimension {axis} of size "
            f"{extent} of a tensor shaped {tuple(x.shape)}",
            help=f"need 0 <= start and start + length <= {extent}",
        )
    return _slice_along(x, axis, begin, begin + length)


def split(x: Tensor, split_size_or_sections, dim: int | None = None, *, axis=None) -> tuple:
    """Split along ``dim`` (default 0), PyTorch style: an int is the size of each piece (the last
    may be smaller), a list gives every piece's size and must sum to the dimension. Returns a
    tuple of views. ``(5, 3)`` with ``split(2)`` -> ``(2, 3), (2, 3), (1, 3)``."""
    axis = dimensioned_axis(pick("axis", axis, "dim", dim, 0), x.ndim, "split")
    extent = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise ShapeError(
                f"[split] split size must be positive, got {size}",
                help="pass the size of each piece, or a list of piece sizes",
            )
        sizes = [size] * (extent // size) + ([extent % size] if extent % size else [])
        sizes = sizes or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != extent or any(s < 0 for s in sizes):
            raise ShapeError(
                f"[split] section sizes {tuple(sizes)} (sum {sum(sizes)}) do not add up to "
                f"{extent}, the size of dimension {axis} of a tensor shaped {tuple(x.shape)}",
                help="the sizes must be non-negative and sum to the dimension; pass an int to cut "
                "equal pieces",
            )
    return _pieces(x, axis, sizes)


def chunk(x: Tensor, chunks: int, dim: int | None = None, *, axis=None) -> tuple:
    """Split along ``dim`` into at most ``chunks`` pieces of ``ceil(size / chunks)`` elements
    (PyTorch semantics: fewer pieces when the size does not allow more). Returns a tuple of
    views. ``(5, 2)`` with ``chunk(3)`` -> ``(2, 2), (2, 2), (1, 2)``."""
    axis = dimensioned_axis(pick("axis", axis, "dim", dim, 0), x.ndim, "chunk")
    if chunks <= 0:
        raise ShapeError(f"[chunk] the number of chunks must be positive, got {chunks}")
    extent = x.shape[axis]
    if extent == 0:
        return tuple(_slice_along(x, axis, 0, 0) for _ in range(chunks))
    size = -(-extent // chunks)
    return _pieces(x, axis, [size] * (extent // size) + ([extent % size] if extent % size else []))


def split_with_sizes(x: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Split along ``dim`` into pieces of the given sizes, which must be non-negative and sum to
    the dimension. Returns a tuple of views. ``(2, 5)`` with ``([2, 3], dim=1)`` -> ``(2, 2),
    (2, 3)``."""
    if isinstance(split_sizes, (int, np.integer)):
        raise TypeError(
            f"[split_with_sizes] takes a list of piece sizes, got the int {split_sizes}; "
            "use split(x, size) for pieces of one size"
        )
    sizes = [int(size) for size in split_sizes]
    axis = dimensioned_axis(dim, x.ndim, "split_with_sizes")
    if sum(sizes) != x.shape[axis] or any(size < 0 for size in sizes):
        raise ShapeError(
            f"[split_with_sizes] sizes {tuple(sizes)} (sum {sum(sizes)}) do not add up to "
            f"{x.shape[axis]}, the size of dimension {axis} of a tensor shaped {tuple(x.shape)}",
            help="the sizes must be non-negative and sum to the dimension",
        )
    return split(x, sizes, axis)


def _split_points(indices_or_sections, op: str) -> tuple[list[int] | None, int | None]:
    """``(indices, None)`` or ``(None, sections)``: a Tensor is read as PyTorch does (0-d: the
    number of sections, 1-D: the indices), and must hold integers."""
    if isinstance(indices_or_sections, Tensor):
        points = indices_or_sections
        if points.dtype.kind not in "iu":
            raise DTypeError(
                f"[{op}] takes integer split points, got a {points.dtype} tensor",
                help="convert them first: points.long()",
            )
        if points.ndim > 1:
            raise ShapeError(
                f"[{op}] takes a 0-d tensor (the number of sections) or a 1-D tensor (the "
                f"indices), got one shaped {tuple(points.shape)}",
                help="flatten the indices first: points.flatten()",
            )
        values = points.numpy().tolist()
        return (None, int(values)) if points.ndim == 0 else ([int(v) for v in values], None)
    if isinstance(indices_or_sections, bool) or not isinstance(
        indices_or_sections, (int, np.integer, Sequence)
    ):
        raise TypeError(
            f"[{op}] takes an int number of sections or a list of int indices, got "
            f"{indices_or_sections!r}"
        )
    if isinstance(indices_or_sections, (int, np.integer)):
        return None, int(indices_or_sections)
    for point in indices_or_sections:
        if isinstance(point, bool) or not isinstance(point, (int, np.integer)):
            raise TypeError(f"[{op}] takes int indices, got {indices_or_sections!r}")
    return [int(point) for point in indices_or_sections], None


def tensor_split(x: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Split along ``dim`` into views, as ``torch.tensor_split``.

    An int ``n`` gives ``n`` pieces; when the size ``s`` does not divide, the first ``s % n``
    pieces get one element more: ``(7,)`` in 3 -> ``(3,), (2,), (2,)``. A list of indices cuts
    before each, as the slices ``x[:i0], x[i0:i1], ..., x[ik:]`` (so negative indices count
    from the end and a decreasing pair gives an empty piece). A 0-d integer tensor counts as
    ``n``, a 1-D one as the indices.
    """
    if x.ndim == 0:
        raise ShapeError(
            "[tensor_split] needs a tensor with at least 1 dimension, got a 0-d tensor",
            help="reshape it to one element first: x.reshape(1)",
        )
    axis = normalize_axis(dim, x.ndim, "tensor_split")
    indices, sections = _split_points(indices_or_sections, "tensor_split")
    if indices is None:
        if sections <= 0:
            raise ArgumentError(
                f"[tensor_split] the number of sections must be positive, got {sections}",
                help="pass n >= 1, or a list of indices to cut before",
            )
        extent = x.shape[axis]
        base, longer = divmod(extent, sections)
        indices = list(itertools.accumulate(base + (i < longer) for i in range(sections - 1)))
    starts, stops = [0, *indices], [*indices, None]
    lead = (slice(None),) * axis
    return tuple(x.getitem((*lead, slice(a, b))) for a, b in zip(starts, stops))


def _split_at_axis(x: Tensor, indices_or_sections, axis: int, least: int, op: str) -> tuple:
    """``hsplit``/``vsplit``/``dsplit``: ``tensor_split`` along ``axis``, except that a number
    of sections must divide the dimension."""
    if x.ndim < least:
        raise ShapeError(
            f"[{op}] needs a tensor with at least {dimensions(least)}, got one shaped "
            f"{tuple(x.shape)}",
            help="reshape it first, or use tensor_split(x, sections, dim) along an axis it has",
        )
    _, sections = _split_points(indices_or_sections, op)
    if sections is not None and (sections <= 0 or x.shape[axis] % sections):
        raise ShapeError(
            f"[{op}] cannot split dimension {axis} of size {x.shape[axis]} (of a tensor shaped "
            f"{tuple(x.shape)}) into {sections} equal sections",
            help="pass a number of sections that divides it, a list of indices, or use "
            "tensor_split for uneven sections",
        )
    return tensor_split(x, indices_or_sections, axis)


def hsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split horizontally: along dimension 1, or 0 for a 1-D tensor (``numpy.hsplit``).
    ``(4, 6)`` with ``hsplit(3)`` -> three ``(4, 2)`` views."""
    return _split_at_axis(x, indices_or_sections, 0 if x.ndim == 1 else 1, 1, "hsplit")


def vsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split vertically: along dimension 0 of a tensor with 2 or more dimensions.
    ``(6, 4)`` with ``vsplit([2])`` -> ``(2, 4), (4, 4)`` views."""
    return _split_at_axis(x, indices_or_sections, 0, 2, "vsplit")


def dsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split depth-wise: along dimension 2 of a tensor with 3 or more dimensions.
    ``(2, 2, 6)`` with ``dsplit(2)`` -> two ``(2, 2, 3)`` views."""
    return _split_at_axis(x, indices_or_sections, 2, 3, "dsplit")


def flip(x: Tensor, axis=None, *more_axes, dims=None) -> Tensor:
    """Reverse the order of elements along ``axis`` (an int or tuple; every axis when None).
    ``x.flip(0, 1)`` and ``flip(x, (0, 1))`` are the same; a view, like a ``[::-1]`` slice."""
    axis = pick("axis", axis, "dims", dims)
    if more_axes:
        axis = (axis,) + more_axes
    axes = normalize_axes(axis, x.ndim, "flip")
    if axes is None:
        axes = tuple(range(x.ndim))
    if not axes:
        return x
    reverse = slice(None, None, -1)
    return x.getitem(tuple(reverse if a in axes else slice(None) for a in range(x.ndim)))


# ----- padding and repetition -----------------------------------------------------------------

_PAD_MODE_NAMES = {"edge": "replicate", "wrap": "circular"}


def _pad_widths(pad, shape: tuple) -> list[list[int]]:
    """Per-axis ``[before, after]`` from PyTorch's flat form or NumPy's per-axis form."""
    ndim = len(shape)
    if isinstance(pad, (int, np.integer)):
        return [[int(pad), int(pad)] for _ in range(ndim)]
    pad = list(pad)
    if all(isinstance(p, (int, np.integer)) for p in pad):
        # PyTorch: (left, right, top, bottom, ...) starting from the last dimension.
        if len(pad) % 2 or len(pad) // 2 > ndim:
            raise ShapeError(
                f"[pad] PyTorch-style padding {tuple(pad)} needs an even length of at most "
                f"{2 * ndim} for a tensor shaped {shape}",
                help="give (before, after) pairs starting from the last dimension, or NumPy's "
                "((before, after), ...) with one pair per axis",
            )
        widths = [[0, 0] for _ in range(ndim)]
        for pair in range(len(pad) // 2):
            widths[ndim - 1 - pair] = [int(pad[2 * pair]), int(pad[2 * pair + 1])]
        return widths
    pairs = [list(p) for p in pad]
    if len(pairs) == 1:
        pairs = pairs * ndim  # NumPy broadcasts a single pair to every axis
    if len(pairs) != ndim or any(len(p) != 2 for p in pairs):
        raise ShapeError(
            f"[pad] NumPy-style padding {tuple(tuple(p) for p in pad)} needs one (before, after) "
            f"pair per axis of a tensor shaped {shape}",
            help=f"give {ndim} pairs, or PyTorch's flat (left, right, top, bottom, ...) form",
        )
    return [[int(b), int(a)] for b, a in pairs]


def pad(x: Tensor, pad, mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad ``x`` with ``value`` (constant) or with copies of its own elements.

    ``pad`` takes either form:

    - PyTorch's flat tuple, starting from the *last* dimension: ``(left, right)`` pads the last
      axis, ``(left, right, top, bottom)`` the last two. ``(N, C, 4, 5)`` with ``(1, 1, 2, 0)``
      -> ``(N, C, 6, 7)``.
    - NumPy's per-axis pairs, starting from the *first* dimension: ``((0, 0), (0, 0), (2, 0),
      (1, 1))`` is the same padding; a single pair or an int applies to every axis.

    Modes: ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror without repeating the edge;
    widths must be smaller than the dimension), ``"replicate"`` (repeat the edge; NumPy's
    ``"edge"``) and ``"circular"`` (wrap around; NumPy's ``"wrap"``). Negative widths crop, in
    every mode, as in PyTorch: reflect and replicate borders still mirror or repeat the edges of
    the whole input, circular ones wrap around what is left. Any axis may be padded, not only
    the trailing ones. With no padding at all ``x`` itself is returned.
    """
    mode = _PAD_MODE_NAMES.get(mode, mode)
    if mode not in ops.PAD_MODES:
        raise ValueError(
            f"[pad] unknown mode {mode!r}; use 'constant', 'reflect', 'replicate' or 'circular'"
        )
    widths = _pad_widths(pad, tuple(x.shape))
    if any(w < 0 for pair in widths for w in pair):
        return _pad_and_crop(x, widths, mode, value)
    widths = tuple((b, a) for b, a in widths)
    if all(b == 0 and a == 0 for b, a in widths):
        return x
    return apply(ops.PAD, x, widths=widths, mode=mode, value=value)


def _crop(x: Tensor, widths: list, mode: str) -> Tensor:
    """``x`` without the elements that the negative ``widths`` cut off each axis (positive
    ones are ignored here)."""
    crop = []
    for axis, (before, after) in enumerate(widths):
        extent = x.shape[axis]
        start, stop = max(-before, 0), extent - max(-after, 0)
        if start > stop:
            raise ShapeError(
                f"[pad] padding ({before}, {after}) crops more than the {extent} elements of "
                f"axis {axis} of a tensor shaped {tuple(x.shape)} (mode {mode!r})",
                help="negative widths crop: together they may remove at most the whole axis",
            )
        crop.append(slice(start, stop))
    return x.getitem(tuple(crop))


def _pad_and_crop(x: Tensor, widths: list, mode: str, value: float) -> Tensor:
    """``pad`` with negative widths, which crop, as in PyTorch: constant and circular padding
    crop first (circular then wraps around what is left); reflect and replicate pad first, so
    their borders mirror or repeat the edges of the whole input, then crop."""
    padding = [[max(b, 0), max(a, 0)] for b, a in widths]
    if mode in ("constant", "circular"):
        return pad(_crop(x, widths, mode), padding, mode, value)
    for axis, (before, after) in enumerate(widths):
        if x.shape[axis] + before + after <= 0:
            raise ShapeError(
                f"[pad] {mode} padding ({before}, {after}) on axis {axis} of a tensor shaped "
                f"{tuple(x.shape)} leaves {x.shape[axis] + before + after} elements",
                help=f"{mode} padding must leave at least one element on each axis, as in "
                "PyTorch; crop with narrow() or slicing to empty an axis",
            )
    return _crop(pad(x, padding, mode, value), widths, mode)


def pad_adjoint(x: Tensor, widths, mode: str) -> Tensor:
    """The adjoint of ``pad`` in a copying mode (reflect, replicate, circular): a tensor shaped
    like the unpadded input, where each element holds the sum of the values of ``x`` at every
    position the pad copied it to. ``widths`` is NumPy's per-axis ``((before, after), ...)``.
    This is the gradient of such a pad; its own gradient is the pad."""
    mode = _PAD_MODE_NAMES.get(mode, mode)
    widths = tuple((int(b), int(a)) for b, a in _pad_widths(widths, tuple(x.shape)))
    if mode not in ("reflect", "replicate", "circular") or any(
        b < 0 or a < 0 or b + a > extent for (b, a), extent in zip(widths, x.shape)
    ):
        raise ShapeError(
            f"[pad_adjoint] cannot fold {mode!r} padding {widths} out of a tensor shaped "
            f"{tuple(x.shape)}",
            help="use a copying mode and non-negative widths that fit in the tensor",
        )
    if all(b == 0 and a == 0 for b, a in widths):
        return x
    return apply(ops.PAD_ADJOINT, x, widths=widths, mode=mode)


def tile(x: Tensor, *reps) -> Tensor:
    """Repeat the whole tensor ``reps[i]`` times along each axis (NumPy's ``tile``; PyTorch's
    ``Tensor.repeat``). Shorter ``reps`` are padded with 1s in front, a smaller tensor gets new
    leading axes. ``(2, 3)`` tiled ``(2, 1, 2)`` -> ``(2, 2, 6)``. When every count is 1 the
    result may share memory with ``x``."""
    reps = as_shape(reps)
    if any(r < 0 for r in reps):
        raise ShapeError(f"[tile] repeat counts must be non-negative, got {reps}")
    ndim = max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    # Each repeated axis becomes a (reps, size) pair: a broadcast view, then one copying reshape.
    paired, broadcast = [], []
    for count, extent in zip(reps, shape):
        if count != 1:
            paired.append(1)
            broadcast.append(count)
        paired.append(extent)
        broadcast.append(extent)
    result = tuple(count * extent for count, extent in zip(reps, shape))
    return reshape(expand(reshape(x, tuple(paired)), tuple(broadcast)), result)


def repeat(x: Tensor, *sizes) -> Tensor:
    """PyTorch's ``Tensor.repeat``: tile with one count per dimension (at least ``x.ndim``).
    ``x.repeat(2, 3)`` == ``tile(x, (2, 3))``. (NumPy's ``repeat`` is ``repeat_interleave``.)"""
    sizes = as_shape(sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(
            f"[repeat] got {len(sizes)} repeat counts {sizes} for a tensor shaped "
            f"{tuple(x.shape)} with {dimensions(x.ndim)}",
            help="give at least one count per dimension, or use tile() (NumPy semantics)",
        )
    return tile(x, sizes)


def repeat_interleave(
    x: Tensor, repeats, dim: int | None = None, *, axis=None, output_size: int | None = None
) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (NumPy's ``repeat``); ``repeats`` is
    an int or one count per element. With no ``dim`` the tensor is flattened first.
    ``[a, b]`` with ``repeats=2`` -> ``[a, a, b, b]``; ``repeats=[1, 3]`` -> ``[a, b, b, b]``.
    ``output_size`` (PyTorch's) is the expected size of ``dim`` in the result; it is checked.
    ``(2, 3)`` with ``repeats=2``: ``dim=1`` -> ``(2, 6)``, no dim -> ``(12,)``."""
    chosen = pick("axis", axis, "dim", dim)
    out = _repeat_interleave(x, repeats, chosen)
    if output_size is not None:
        where = 0 if chosen is None else dimensioned_axis(chosen, x.ndim, "repeat_interleave")
        if out.shape[where] != output_size:
            raise ShapeError(
                f"[repeat_interleave] output_size={output_size}, but the repeats give "
                f"{out.shape[where]} elements along dimension {where}",
                help="pass the sum of the repeat counts, or leave output_size out",
            )
    return out


def _repeat_interleave(x: Tensor, repeats, axis) -> Tensor:
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = dimensioned_axis(axis, x.ndim, "repeat_interleave")
    extent = x.shape[axis]
    counts = repeats.numpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or (counts < 0).any():
        raise ShapeError(
            f"[repeat_interleave] repeats must be a non-negative int or a 1-d sequence of them, "
            f"got {repeats!r}"
        )
    if counts.ndim == 1 and counts.size == 1:
        counts = counts.reshape(())
    if counts.ndim == 0:
        # One count for all: a broadcast view along a new axis, merged by one copying reshape.
        count = int(counts)
        shape = tuple(x.shape)
        widened = expand(unsqueeze(x, axis + 1), shape[: axis + 1] + (count,) + shape[axis + 1 :])
        return reshape(widened, shape[:axis] + (extent * count,) + shape[axis + 1 :])
    if counts.shape != (extent,):
        raise ShapeError(
            f"[repeat_interleave] got {counts.size} repeat counts for dimension {axis} of size "
            f"{extent} of a tensor shaped {tuple(x.shape)}",
            help="give one count per element along the dimension, or a single int",
        )
    xp = array_namespace(x.array)
    source = xp.asarray(np.repeat(np.arange(extent), counts))
    return x.getitem((slice(None),) * axis + (source,))


# ----- aliases and the Tensor methods ----------------------------------------------------------

broadcast_to = expand
swapdims = swapaxes
moveaxis = movedim
expand_dims = unsqueeze
cat = concatenate

__all__ = ["reshape", "view", "expand", "broadcast_to", "broadcast_shapes", "broadcast_tensors",
           "permute", "transpose", "swapaxes",
           "swapdims", "movedim", "moveaxis", "squeeze", "unsqueeze", "expand_dims", "flatten",
           "unflatten", "contiguous", "concatenate", "cat", "stack", "narrow", "split", "chunk",
           "split_with_sizes", "tensor_split", "hsplit", "vsplit", "dsplit", "flip", "pad", "pad_adjoint", "tile", "repeat_interleave"]  # fmt: skip

TENSOR_METHODS = {
    "reshape": reshape, "view": view, "expand": expand, "broadcast_to": expand,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "swapdims": swapaxes,
    "T": property(reversed_axes),
    "mT": property(lambda x: swapaxes(x, -1, -2)),
    "movedim": movedim, "moveaxis": movedim,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "expand_dims": unsqueeze,
    "flatten": flatten, "unflatten": unflatten, "contiguous": contiguous,
    "narrow": narrow, "split": split, "chunk": chunk, "flip": flip,
    "split_with_sizes": split_with_sizes, "tensor_split": tensor_split,
    "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "pad": pad, "pad_adjoint": pad_adjoint,
    "tile": tile, "repeat": repeat, "repeat_interleave": repeat_interleave,
}  # fmt: skip
