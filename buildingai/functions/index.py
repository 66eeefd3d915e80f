"""Indexing: ``x[...]`` and ``x[...] = v`` with every NumPy/PyTorch index form, and the
index-driven ops ``gather``, ``scatter_add``, ``index_select``, ``take_along_axis``,
``masked_fill`` and ``one_hot``.

Reading goes through two primitives: ``getitem`` (basic indices, a view) and ``index`` (advanced
indices, a copy), whose adjoint is ``zeros_index_add``. The other ops are built from them, so
their gradients (scatter-adds for gathers and gathers for scatter-adds) and second derivatives
come from those three records.
"""

from __future__ import annotations

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.mode import grad_mode
from ..autograd.tensor import Tensor, bump_version
from ..backend.device import array_namespace, is_read_only
from ..errors import (
    AutogradError,
    BuildingAIError,
    DeviceError,
    DTypeError,
    IndexingError,
    ShapeError,
    dimensions,
)
from ..ops import index as ops
from ._common import check_scalar_axis, normalize_axis, pick
from .elementwise import where

# Index parts that need no conversion (bool is excluded: ``x[True]`` is a mask, not ``x[1]``).
_PLAIN = frozenset({int, slice, type(None), type(Ellipsis)})


def _normalize_index(index, op: str = "getitem") -> tuple[tuple, bool]:
    """``(parts, advanced)``: the index as a tuple of ints, slices, None, Ellipsis and backend
    arrays, and whether it holds an array (advanced indexing).

    Tensors become their arrays, lists become arrays, and 0-d integer host arrays or tensors
    become ints (so ``x[i]`` with a 0-d tensor ``i`` is a view, as with a Python int). This runs
    for every slice of a batch, so the common parts (ints, slices) cost one set lookup each.
    """
    if type(index) is not tuple:
        if type(index) is int or type(index) is slice:  # x[i], x[a:b]: the training-loop case
            return (index, Ellipsis), False
        index = (index,)
    parts = None
    advanced = has_ellipsis = False
    for position, part in enumerate(index):
        if type(part) in _PLAIN:
            if part is Ellipsis:
                has_ellipsis = True
            continue
        converted = _convert_part(part, op)
        if hasattr(converted, "shape"):
            advanced = True
        if converted is not part:
            if parts is None:
                parts = list(index)
            parts[position] = converted
    if parts is not None:
        index = tuple(parts)
    if not advanced and not has_ellipsis:
        # A trailing '...' makes NumPy return a 0-d view instead of a scalar copy when every
        # dimension gets an int, so that the result still shares memory with the input.
        index += (Ellipsis,)
    return index, advanced


def _convert_part(part, op: str):
    if isinstance(part, Tensor):
        part = part.array
    elif isinstance(part, (list, tuple, range)):
        part = np.asarray(part)
        if part.size == 0 and part.dtype.kind == "f":
            part = part.astype(np.intp)  # ``x[[]]`` selects nothing, as in NumPy and PyTorch
    if hasattr(part, "shape"):
        kind = part.dtype.kind
        if kind not in "iub":
            raise IndexingError(
                f"[{op}] index arrays must hold integers or booleans, got dtype {part.dtype}",
                help="convert the index with .long() (or .astype('int64'))",
            )
        if part.ndim == 0 and kind in "iu" and type(part) is np.ndarray:
            return int(part)
        return part
    if isinstance(part, (bool, np.bool_)):
        return bool(part)
    if isinstance(part, np.integer):
        return int(part)
    if part is None or part is Ellipsis or isinstance(part, slice):
        return part
    if isinstance(part, int):  # as it is: while freezing, an int may carry a symbolic size
        return part
    try:
        return int(part.__index__())
    except (AttributeError, TypeError):
        raise IndexingError(
            f"[{op}] {part!r} of type {type(part).__name__} is not a valid index",
            help="index with ints, slices, None, '...', or integer or boolean arrays/tensors",
        ) from None


# ----- reading and writing ------------------------------------------------------------------------


def getitem(x: Tensor, index) -> Tensor:
    """``x[index]``, differentiable; the gradient adds back into the indexed positions.

    Accepts every NumPy index form: ints (negative count from the end), slices (negative steps
    too), None (a new axis), '...', integer arrays/lists/tensors (several are broadcast
    together and paired element by element) and boolean masks. A basic index (no arrays) gives
    a view sharing memory and version counter with ``x``; an advanced one gives a copy.
    The result has NumPy's shape for that index: ``(N, C)`` with ``x[:, 0]`` -> ``(N,)``,
    with ``x[:, None]`` -> ``(N, 1, C)``, with a boolean mask of x's shape -> ``(K,)``, K the
    number of True entries.
    """
    index, advanced = _normalize_index(index)
    return apply(ops.INDEX if advanced else ops.GETITEM, x, index=index)


def zeros_index_add(values: Tensor, shape, index) -> Tensor:
    """A zero tensor of ``shape`` with ``values`` added at ``index`` (the adjoint of getitem):
    where an integer index array repeats a position, the values there are summed."""
    index, _ = _normalize_index(index, "zeros_index_add")
    return apply(ops.ZEROS_INDEX_ADD, values, shape=tuple(shape), index=index)


def setitem(x: Tensor, index, value) -> None:
    """``x[index] = value``: write ``value`` (a number, array or tensor, broadcast to the shape
    of ``x[index]``) in place; returns None and ``x`` keeps its shape.

    Writing is not recorded in the graph, so it is refused on a tensor that requires grad while
    gradients are recorded. The write bumps ``x``'s version counter (shared with its views), so
    a backward that saved ``x`` before the write raises instead of using the new values.
    """
    if grad_mode.enabled:
        if x.requires_grad:
            raise AutogradError(
                f"[setitem] cannot write into a tensor of shape {tuple(x.shape)} that requires "
                "grad: the write would not be part of the graph",
                help="build the result out of place instead (bai.where(mask, value, x), "
                "x.masked_fill(mask, value), or x + delta.zeros_index_add(x.shape, index)); "
                "to edit parameters directly, write under 'with bai.no_grad():'",
            )
        if isinstance(value, Tensor) and value.requires_grad:
            raise AutogradError(
                "[setitem] the value requires grad, but writing it into a tensor is not "
                "recorded, so its gradient would be lost",
                help="build the tensor out of place (e.g. value.zeros_index_add(shape, index) "
                "or bai.where), or write under 'with bai.no_grad():' if no gradient is wanted",
            )
    index, advanced = _normalize_index(index, "setitem")
    target = x.array
    if isinstance(value, Tensor):
        value = value.array
        if type(value) is not type(target):
            raise DeviceError(
                f"[setitem] the value lives on {Tensor(value).device} but the tensor on {x.device}",
                help="move the value with .to(x.device) first",
            )
    if advanced:
        xp = array_namespace(target)
        if xp is not np:  # CuPy does not check index bounds
            index = ops.on_device(xp, index)
            problem = ops.find_index_problem("setitem", target.shape, index)
            if problem is not None:
                raise problem
    try:
        target[index] = value
    except (IndexError, TypeError) as exc:
        problem = ops.find_index_problem("setitem", target.shape, index)
        if problem is not None:
            raise problem from None
        raise BuildingAIError(f"[setitem] cannot write {_describe_value(value)}: {exc}") from None
    except ValueError as exc:
        if is_read_only(target):
            raise BuildingAIError(
                f"[setitem] the tensor of shape {tuple(x.shape)} is a read-only view (for "
                "example of expand/broadcast_to), so it cannot be written",
                help="write into a copy: x = x.clone() (or x + 0) first",
            ) from None
        raise ShapeError(
            f"[setitem] cannot write {_describe_value(value)} into the selection "
            f"{ops.describe_index(index)} of a tensor shaped {tuple(x.shape)}: {exc}",
            help="the value must broadcast to the shape of the selection",
        ) from None
    bump_version(x, "setitem")


def _describe_value(value) -> str:
    if hasattr(value, "shape"):
        return f"a value of shape {tuple(value.shape)} ({value.dtype})"
    return f"the value {value!r}"


# ----- index-driven ops ---------------------------------------------------------------------------


def _index_array(index, op: str):
    """The backend array of an integer index given as a Tensor, array or list."""
    array = index.array if isinstance(index, Tensor) else index
    if not hasattr(array, "shape"):
        array = np.asarray(array)
        if array.size == 0:
            array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise DTypeError(
            f"[{op}] index must hold integers, got dtype {array.dtype}",
            help="convert it with .long() (or .astype('int64'))",
        )
    return array


def _check_range(op: str, array, size: int, dim: int, shape: tuple, negative: bool) -> None:
    """Raise IndexingError if an index lies outside ``0..size-1`` (``-size..size-1`` with
    ``negative``): one pass over the index."""
    if array.size == 0:
        return
    low, high = int(array.min()), int(array.max())
    floor = -size if negative else 0
    if low < floor or high >= size:
        bad = low if low < floor else high
        valid = f"{floor}..{size - 1}" if size else "none (the dimension is empty)"
        raise IndexingError(
            f"[{op}] index {bad} is out of range for dim {dim} with size {size} (input shape "
            f"{tuple(shape)}, index shape {tuple(array.shape)})",
            help=f"valid indices are {valid}"
            + ("" if negative or low >= 0 else "; negative indices are not allowed here"),
        )


def _along_axis(array, dim: int, extents: tuple) -> tuple:
    """The advanced index that picks ``array[i, j, ...]`` along ``dim`` at every other position:
    ``arange(extent)`` broadcast on each other axis, ``array`` on ``dim``."""
    xp = array_namespace(array)
    parts = []
    for axis, extent in enumerate(extents):
        if axis == dim:
            parts.append(array)
        else:
            shape = [1] * len(extents)
            shape[axis] = extent
            parts.append(xp.arange(extent).reshape(shape))
    return tuple(parts)


def _check_gather_shapes(op: str, x_shape: tuple, index_shape: tuple, dim: int, what="input"):
    if len(index_shape) != len(x_shape):
        raise ShapeError(
            f"[{op}] index has {dimensions(len(index_shape))} but the {what} has "
            f"{dimensions(len(x_shape))} "
            f"(index shape {index_shape}, {what} shape {x_shape})",
            help="index must have as many dimensions as the input; unsqueeze it if needed",
        )
    for axis, (have, limit) in enumerate(zip(index_shape, x_shape)):
        if axis != dim and have > limit:
            raise ShapeError(
                f"[{op}] index size {have} exceeds the {what} size {limit} at dim {axis} "
                f"(index shape {index_shape}, {what} shape {x_shape})",
                help=f"outside dim {dim}, the index may be at most as large as the {what}",
            )


def gather(x: Tensor, dim: int, index) -> Tensor:
    """PyTorch's gather: ``out[i][j][k] = x[index[i][j][k]][j][k]`` for ``dim=0`` (and so on).

    x: (d0, ..., dn); index: integers with the same number of dimensions, ``index.shape[d] <=
    x.shape[d]`` for ``d != dim``, values in ``0..x.shape[dim]-1``. Returns a tensor shaped like
    ``index``. The gradient scatter-adds back into ``x``. A 0-d ``x`` is read as one element
    (``dim`` 0 or -1) with a 0-d or 1-D index, as in PyTorch: ``gather(scalar, 0, [0, 0])`` has
    shape (2,).
    """
    array = _index_array(index, "gather")
    if x.ndim == 0:
        return _gather_from_a_scalar(x, dim, array)
    dim = normalize_axis(dim, x.ndim, "gather")
    _check_gather_shapes("gather", tuple(x.shape), tuple(array.shape), dim)
    _check_range("gather", array, x.shape[dim], dim, x.shape, negative=False)
    return apply(ops.INDEX, x, index=_along_axis(array, dim, array.shape))


def _gather_from_a_scalar(x: Tensor, dim: int, array) -> Tensor:
    """``gather`` of a 0-d ``x``: the output is shaped like the (0-d or 1-D) index."""
    check_scalar_axis(dim, "gather")
    if array.ndim > 1:
        raise ShapeError(
            f"[gather] index has {dimensions(array.ndim)} but the input is 0-d "
            f"(index shape {tuple(array.shape)})",
            help="a 0-d input takes a 0-d or 1-D index; reshape the index with .reshape(-1)",
        )
    _check_range("gather", array, 1, 0, (), negative=False)
    flat = array.reshape(-1)
    return apply(ops.INDEX, x.reshape(1), index=(flat,)).reshape(array.shape)


def take_along_axis(x: Tensor, indices, axis: int | None = -1, *, dim: int | None = None):
    """NumPy's take_along_axis: gather along ``axis``, with ``indices`` broadcast against ``x``
    on the other axes (negative indices count from the end). ``axis=None`` reads from the
    flattened ``x`` with 1-D ``indices``.

    x (..., N, ...), indices (..., K, ...) with as many dimensions -> (..., K, ...): the size
    along ``axis`` is the indices', the others are broadcast; ``axis=None``: indices (K,) ->
    (K,).
    """
    axis = pick("axis", axis if dim is None else None, "dim", dim)
    array = _index_array(indices, "take_along_axis")
    if axis is None:
        if array.ndim != 1:
            raise ShapeError(
                f"[take_along_axis] with axis=None, indices must be 1-D, got shape "
                f"{tuple(array.shape)}"
            )
        x, axis = x.reshape(-1), 0
    if array.ndim != x.ndim:
        raise ShapeError(
            f"[take_along_axis] indices have {dimensions(array.ndim)} but x has "
            f"{dimensions(x.ndim)} "
            f"(indices shape {tuple(array.shape)}, x shape {tuple(x.shape)})",
            help="indices must have as many dimensions as x (size 1 broadcasts)",
        )
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    for position, (have, size) in enumerate(zip(array.shape, x.shape)):
        if position != axis and have != size and have != 1 and size != 1:
            raise ShapeError(
                f"[take_along_axis] indices shape {tuple(array.shape)} does not broadcast "
                f"against x shape {tuple(x.shape)} at axis {position}",
                help="outside the chosen axis, sizes must match or be 1",
            )
    _check_range("take_along_axis", array, x.shape[axis], axis, x.shape, negative=True)
    return apply(ops.INDEX, x, index=_along_axis(array, axis, x.shape))


def scatter_add(x: Tensor, dim: int, index, src: Tensor) -> Tensor:
    """PyTorch's scatter_add, out of place: a copy of ``x`` with ``out[index[i][j]][j] +=
    src[i][j]`` for ``dim=0`` (repeated indices accumulate).

    x: (d0, ..., dn); index: integers with the same number of dimensions, ``index.shape[d] <=
    src.shape[d]`` everywhere and ``<= x.shape[d]`` for ``d != dim``; only the leading
    ``index.shape`` block of ``src`` is used. Gradients: ``x`` gets the output gradient,
    ``src`` gathers it.
    """
    array = _index_array(index, "scatter_add")
    if not isinstance(src, Tensor):
        src = Tensor(src)
    if src.dtype != x.dtype:
        raise DTypeError(
            f"[scatter_add] src has dtype {src.dtype} but x has {x.dtype}",
            help="convert one of them, e.g. src.astype(x.dtype)",
        )
    if x.ndim == 0:
        return scatter_add(x.reshape(1), 0, array.reshape(1), src.reshape(1)).reshape(())
    dim = normalize_axis(dim, x.ndim, "scatter_add")
    _check_gather_shapes("scatter_add", tuple(x.shape), tuple(array.shape), dim)
    _check_gather_shapes("scatter_add", tuple(src.shape), tuple(array.shape), -1, what="src")
    _check_range("scatter_add", array, x.shape[dim], dim, x.shape, negative=False)
    if tuple(src.shape) != tuple(array.shape):
        src = getitem(src, tuple(slice(0, extent) for extent in array.shape))
    return x + zeros_index_add(src, x.shape, _along_axis(array, dim, array.shape))


def index_select(x: Tensor, dim: int, index) -> Tensor:
    """The slices of ``x`` at positions ``index`` (1-D integers) along ``dim``: ``x`` of shape
    (..., n, ...) gives (..., len(index), ...). The gradient scatter-adds back."""
    array = _index_array(index, "index_select")
    if array.ndim > 1:
        raise ShapeError(
            f"[index_select] index must be 1-D, got shape {tuple(array.shape)}",
            help="flatten it with .reshape(-1), or use x[index] for multi-dimensional indices",
        )
    array = array.reshape(-1)
    if x.ndim == 0:  # PyTorch: a 0-d input gives a 0-d result
        check_scalar_axis(dim, "index_select")
        _check_range("index_select", array, 1, 0, x.shape, negative=False)
        if array.size != 1:
            raise ShapeError(
                f"[index_select] a 0-d input takes an index of one element, got "
                f"{array.size} elements",
                help="index 0 is the only position of a 0-d tensor",
            )
        return apply(ops.INDEX, x.reshape(1), index=(array,)).reshape(())
    dim = normalize_axis(dim, x.ndim, "index_select")
    _check_range("index_select", array, x.shape[dim], dim, x.shape, negative=False)
    return apply(ops.INDEX, x, index=(slice(None),) * dim + (array,) + (Ellipsis,))


def masked_fill(x: Tensor, mask, value) -> Tensor:
    """``x`` with ``value`` wherever ``mask`` (boolean, broadcast with ``x``) is True.

    ``value`` is a number (cast to ``x``'s dtype, as in PyTorch) or a tensor; a tensor value
    that requires grad receives the sum of the gradient over the filled positions.
    x: (...) -> the same shape (the broadcast shape of ``x`` and ``mask`` when ``mask`` has
    more or larger dimensions).
    """
    mask_array = mask.array if isinstance(mask, Tensor) else mask
    if not hasattr(mask_array, "shape"):
        mask_array = np.asarray(mask_array)
    if mask_array.dtype.kind != "b":
        raise DTypeError(
            f"[masked_fill] the mask must be boolean, got dtype {mask_array.dtype}",
            help="build it with a comparison (x > 0) or convert it with .bool()",
        )
    try:
        np.broadcast_shapes(tuple(mask_array.shape), tuple(x.shape))
    except ValueError:
        raise ShapeError(
            f"[masked_fill] mask of shape {tuple(mask_array.shape)} cannot be broadcast with x "
            f"of shape {tuple(x.shape)}",
            help="each dimension must match or be 1; unsqueeze the mask to align it",
        ) from None
    if isinstance(value, Tensor):
        if value.dtype != x.dtype:
            value = value.astype(x.dtype)
    else:
        value = Tensor(array_namespace(x.array).asarray(value, dtype=x.dtype))
    # a Tensor mask stays one, so that a frozen call reads it as a value of its graph
    return where(mask if isinstance(mask, Tensor) else mask_array, value, x)


def one_hot(indices, num_classes: int = -1) -> Tensor:
    """Class indices (...) -> int64 one-hot vectors (..., num_classes), as
    ``torch.nn.functional.one_hot``; ``num_classes=-1`` means ``indices.max() + 1``."""
    if not isinstance(indices, Tensor):
        indices = Tensor(np.asarray(indices))
    if num_classes == -1:
        if indices.array.size == 0:
            raise ShapeError(
                "[one_hot] cannot infer the number of classes from an empty tensor",
                help="pass num_classes explicitly",
            )
        # read through the tensor: a traced graph refuses a shape that depends on the values
        num_classes = int(indices.max()) + 1
    if num_classes < 0:
        raise ShapeError(f"[one_hot] num_classes must be -1 or >= 0, got {num_classes}")
    return apply(ops.ONE_HOT, indices, num_classes=int(num_classes))


__all__ = [
    "IndexingError",
    "gather",
    "getitem",
    "index_select",
    "masked_fill",
    "one_hot",
    "scatter_add",
    "setitem",
    "take_along_axis",
    "zeros_index_add",
]


def iterate(x: Tensor):
    """``for row in x``: the entries of ``x`` along its first axis, each of shape x.shape[1:]."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for position in range(x.shape[0]):
        yield apply(ops.GETITEM, x, index=(position, Ellipsis))


TENSOR_METHODS = {
    "__iter__": iterate,
    "__getitem__": getitem,
    "__setitem__": setitem,
    "getitem": getitem,
    "zeros_index_add": zeros_index_add,
    "gather": gather,
    "scatter_add": scatter_add,
    "index_select": index_select,
    "masked_fill": masked_fill,
    "take_along_axis": take_along_axis,
}
