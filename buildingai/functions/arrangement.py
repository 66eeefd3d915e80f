"""Arranging tensors, as PyTorch does: grids and index lists, diagonals, the ``*stack`` family,
picking elements, rotations, differences and the small products (``kron``, ``tensordot``,
``addmm``...).

Every function here is a composite of existing ops (reshape, expand, indexing, concatenate,
matmul...), so gradients of any order and frozen graphs come from those ops' records. A
diagonal is a strided slice of the flattened matrices: its positions come from the shape, never
from the values.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.dtypes import as_dtype, get_default_dtype, is_floating
from ..errors import ArgumentError, DTypeError, IndexingError, ShapeError, dimensions
from ..ops.abstract import SymbolicSizeError
from ._common import dimensioned_axis, normalize_axis
from .creation import as_tensor, tensor, zeros
from .elementwise import clone, logical_xor
from .index import _check_range, _index_array, gather, masked_fill, zeros_index_add
from .linalg import matmul
from .shape import (
    _as_tensor_list,
    broadcast_shapes,
    concatenate,
    expand,
    flatten,
    flip,
    movedim,
    permute,
    reshape,
    stack,
    swapaxes,
)

# ----- grids and index lists ------------------------------------------------------------------

# PyTorch's own text, so that warning filters written for PyTorch also match here
_MESHGRID_WARNING = (
    "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."
)


def _unpack(tensors: tuple) -> tuple:
    """``f(a, b)`` and ``f([a, b])`` alike."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0])
    return tensors


def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from k vectors of sizes n1..nk (0-d tensors count as size 1): k tensors
    shaped (n1, ..., nk) with ``indexing='ij'``, or (n2, n1, n3, ..., nk) with ``'xy'``
    (Cartesian: the first vector runs along the columns). Each grid is a broadcast view.

    Without ``indexing`` the grid is 'ij', with PyTorch's warning that the argument will be
    required.
    """
    tensors = _unpack(tensors)
    if not tensors:
        raise ArgumentError("[meshgrid] needs at least one tensor, got none")
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(
            f"[meshgrid] indexing must be 'ij' or 'xy', got {indexing!r}",
            help="'ij' gives matrix indexing (n1, n2, ...), 'xy' Cartesian (n2, n1, ...)",
        )
    for position, x in enumerate(tensors):
        if x.ndim > 1:
            raise ShapeError(
                f"[meshgrid] expects 0-d or 1-D tensors, got shape {tuple(x.shape)} at "
                f"position {position}",
                help="flatten it first: x.reshape(-1)",
            )
        if x.dtype != tensors[0].dtype:
            raise DTypeError(
                f"[meshgrid] expects tensors of one dtype, got {tensors[0].dtype} at position 0 "
                f"and {x.dtype} at position {position}",
                help=f"convert them first, e.g. x.astype('{tensors[0].dtype}')",
            )
    axes = list(range(len(tensors)))  # where each vector runs in the grids
    if indexing == "xy" and len(tensors) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for x, axis in zip(tensors, axes):
        shape[axis] = x.reshape(-1).shape[0]
    grids = []
    for x, axis in zip(tensors, axes):
        laid = [1] * len(tensors)
        laid[axis] = -1
        grids.append(expand(reshape(x, tuple(laid)), tuple(shape)))
    return tuple(grids)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each of k vectors of sizes n1..nk, in
    lexicographic order: (n1 * ... * nk, k), as ``itertools.product``. One vector is returned
    as it is."""
    tensors = _unpack(tensors)
    if not tensors:
        raise ArgumentError("[cartesian_prod] needs at least one tensor, got none")
    for position, x in enumerate(tensors):
        if x.ndim != 1:
            raise ShapeError(
                f"[cartesian_prod] expects 1-D tensors, got shape {tuple(x.shape)} at "
                f"position {position}",
                help="flatten it first: x.reshape(-1)",
            )
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([grid.reshape(-1) for grid in grids], dim=1)


def _fixed_sizes(op: str, **sizes) -> None:
    """Refuse sizes that are symbolic (while freezing): positions computed from the sample
    size would be constants of the graph, wrong for every other size."""
    for name, size in sizes.items():
        if isinstance(size, int) and type(size) not in (int, bool):
            raise SymbolicSizeError(
                f"[{op}] {name} is a symbolic size ({size} in this trace): the positions "
                "computed from it would be frozen for this one size",
                help="fix that dimension's size in the input signature",
            )


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype, device, keep) -> Tensor:
    _fixed_sizes(op, row=row, col=col)
    row, col, offset = operator.index(row), operator.index(col), operator.index(offset)
    if row < 0 or col < 0:
        raise ArgumentError(
            f"[{op}] row and col must be non-negative, got row={row}, col={col}",
            help="give the matrix's number of rows and columns",
        )
    dtype = as_dtype(dtype)
    if dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise DTypeError(
            f"[{op}] dtype must be int64 or int32, got {dtype}",
            help="leave dtype out for int64 indices",
        )
    rows, cols = np.nonzero(keep(np.ones((row, col), dtype=bool), offset))  # row-major order
    return tensor(np.stack([rows, cols]), dtype=dtype, device=device)


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype=np.int64, device=None, layout=None
) -> Tensor:
    """The coordinates of the lower triangle of a ``row`` x ``col`` matrix (on and below
    diagonal ``offset``), row by row: (2, N), first row the row indices, second the columns.
    ``layout`` is accepted for PyTorch's signature (only the strided layout exists)."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, np.tril)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype=np.int64, device=None, layout=None
) -> Tensor:
    """The coordinates of the upper triangle of a ``row`` x ``col`` matrix (on and above
    diagonal ``offset``), row by row: (2, N). ``layout`` is accepted for PyTorch's signature."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, np.triu)


# ----- diagonals --------------------------------------------------------------------------------


def _diagonal_slice(op: str, rows: int, cols: int, offset: int) -> slice:
    """Where diagonal ``offset`` of a ``rows`` x ``cols`` matrix lies in the matrix flattened
    row by row: every ``cols + 1``-th element from the first one on the diagonal."""
    _fixed_sizes(op, rows=rows, columns=cols)
    count = max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)
    if count == 0:
        return slice(0, 0)
    start = offset if offset >= 0 else -offset * cols
    return slice(start, start + (count - 1) * (cols + 1) + 1, cols + 1)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """Diagonal ``offset`` (0: the main one, > 0 above it, < 0 below) of the matrices spanned
    by ``dim1`` and ``dim2``: those two dimensions are removed and the diagonal appended last.
    (n, m) -> (min(n, m - offset),) for offset >= 0; (B, n, m) with dims 1, 2 -> (B, k)."""
    offset = operator.index(offset)
    first = normalize_axis(operator.index(dim1), input.ndim, "diagonal")
    second = normalize_axis(operator.index(dim2), input.ndim, "diagonal")
    if first == second:
        raise ShapeError(
            f"[diagonal] dim1 and dim2 must differ, got {dim1} and {dim2} for a tensor shaped "
            f"{tuple(input.shape)}",
            help="name the two dimensions that span the matrices",
        )
    if first > second:  # the same elements, in the same order, with the dims in memory order
        first, second, offset = second, first, -offset
    rows, cols = input.shape[first], input.shape[second]
    where = _diagonal_slice("diagonal", rows, cols, offset)
    # a view of ``input`` (as in PyTorch) whenever the two dimensions can be merged without a copy,
    # so that writing into the diagonal (x.diagonal().fill_(0)) writes into ``input``
    flat = flatten(movedim(input, (first, second), (-2, -1)), -2)  # (..., rows * cols)
    return flat[..., where]


_diagonal = diagonal  # for ``diag``, whose argument ``diagonal`` hides the function


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dimension of ``input`` on diagonal ``offset`` and zeros
    elsewhere: (..., n) -> (..., n + |offset|, n + |offset|) with the default dims; ``dim1``
    and ``dim2`` (counted in the result) say where the two matrix dimensions go."""
    offset = operator.index(offset)
    ndim = input.ndim + 1
    first = normalize_axis(operator.index(dim1), ndim, "diag_embed")
    second = normalize_axis(operator.index(dim2), ndim, "diag_embed")
    if first == second:
        raise ShapeError(
            f"[diag_embed] dim1 and dim2 must differ, got {dim1} and {dim2} for a result with "
            f"{dimensions(ndim)}",
            help="name two dimensions of the result for the matrices",
        )
    length = input.shape[-1]
    side = length + abs(offset)
    batch = tuple(input.shape[:-1])
    where = _diagonal_slice("diag_embed", side, side, offset)
    flat = zeros_index_add(input, batch + (side * side,), (..., where))  # (..., side * side)
    return movedim(flat.reshape(batch + (side, side)), (-2, -1), (first, second))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector (n,) becomes the square matrix (n + |diagonal|, n + |diagonal|) with it on
    diagonal ``diagonal``; a matrix (n, m) gives its diagonal ``diagonal`` as a vector."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return _diagonal(input, diagonal)
    raise ShapeError(
        f"[diag] expects a 1-D or 2-D tensor, got shape {tuple(input.shape)}",
        help="use diagonal() or diag_embed() for batches of matrices",
    )


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened ``input`` (n elements, any shape) on diagonal ``offset`` of a square
    matrix (n + |offset|, n + |offset|), zeros elsewhere; a 0-d tensor gives (1, 1)."""
    return diag_embed(input.reshape(-1), offset)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix: (n, m) -> (); integers sum to int64."""
    if input.ndim != 2:
        raise ShapeError(
            f"[trace] expects a matrix, got shape {tuple(input.shape)}",
            help="use diagonal(x, dim1=-2, dim2=-1).sum(-1) for a batch of matrices",
        )
    if input.dtype == np.bool_:
        raise DTypeError(
            "[trace] is not defined for bool tensors (as in PyTorch)",
            help="convert it first: x.long()",
        )
    return diagonal(input).sum()


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the given blocks, top left to bottom right: a 0-d block is
    (1, 1), a 1-D one (1, n), a 2-D one as it is; (r_i, c_i) blocks -> (sum r_i, sum c_i)."""
    if not tensors:
        return zeros(1, 0, dtype=get_default_dtype())
    blocks = []
    for position, block in enumerate(tensors):
        if not isinstance(block, Tensor):
            raise TypeError(
                f"[block_diag] expects tensors, got {type(block).__name__} at position {position}"
            )
        if block.ndim > 2:
            raise ShapeError(
                f"[block_diag] blocks must have at most 2 dimensions, got shape "
                f"{tuple(block.shape)} at position {position}",
                help="reshape each block to a matrix first",
            )
        blocks.append(block.reshape(1, -1) if block.ndim < 2 else block)
    width = sum(block.shape[1] for block in blocks)
    rows, start = [], 0
    for block in blocks:
        height, columns = block.shape
        left = zeros(height, start, dtype=block.dtype, device=block.device)
        right = zeros(height, width - start - columns, dtype=block.dtype, device=block.device)
        rows.append(concatenate([left, block, right], 1))
        start += columns
    return concatenate(rows, 0)


# ----- joining and splitting ------------------------------------------------------------------


def _each(tensors: tuple, raise_rank):
    """``atleast_*`` of one tensor, of several (a tuple) or of one list (a tuple)."""
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return raise_rank(as_tensor(tensors[0]))
    return tuple(raise_rank(as_tensor(x)) for x in _unpack(tensors))


def _at_least_1d(x: Tensor) -> Tensor:
    return x.reshape(1) if x.ndim == 0 else x


def _at_least_2d(x: Tensor) -> Tensor:
    return x.reshape(1, -1) if x.ndim < 2 else x


def _at_least_3d(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return x.reshape(1, 1, 1)
    if x.ndim == 1:
        return x.reshape(1, -1, 1)
    return x.unsqueeze(-1) if x.ndim == 2 else x


def atleast_1d(*tensors: Tensor):
    """Each tensor with at least 1 dimension: () -> (1,); others unchanged. One tensor gives a
    tensor; several (or a list) a tuple."""
    return _each(tensors, _at_least_1d)


def atleast_2d(*tensors: Tensor):
    """Each tensor with at least 2 dimensions: () -> (1, 1), (n,) -> (1, n)."""
    return _each(tensors, _at_least_2d)


def atleast_3d(*tensors: Tensor):
    """Each tensor with at least 3 dimensions: () -> (1, 1, 1), (n,) -> (1, n, 1),
    (m, n) -> (m, n, 1)."""
    return _each(tensors, _at_least_3d)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join horizontally: 1-D tensors (0-d count as (1,)) end to end, others along dimension 1.
    (n,), (m,) -> (n + m,); (r, a), (r, b) -> (r, a + b)."""
    tensors = [_at_least_1d(x) for x in _as_tensor_list(tensors, "hstack")]
    return concatenate(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join vertically, after making each tensor at least 2-D: (n,), (n,) -> (2, n);
    (a, n), (b, n) -> (a + b, n)."""
    return concatenate([_at_least_2d(x) for x in _as_tensor_list(tensors, "vstack")], 0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join in depth (dimension 2), after making each tensor at least 3-D: (m, n), (m, n) ->
    (m, n, 2)."""
    return concatenate([_at_least_3d(x) for x in _as_tensor_list(tensors, "dstack")], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join as columns: 0-d and 1-D tensors become columns (n, 1), others are joined along
    dimension 1 as they are. (n,), (n, k) -> (n, 1 + k)."""
    tensors = _as_tensor_list(tensors, "column_stack")
    return concatenate([x.reshape(-1, 1) if x.ndim < 2 else x for x in tensors], 1)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``input`` along ``dim``, that dimension removed: (3, n) -> three (n,)
    views."""
    axis = dimensioned_axis(operator.index(dim), input.ndim, "unbind")
    before = (slice(None),) * axis
    return tuple(input[before + (position,)] for position in range(input.shape[axis]))


def ravel(input: Tensor) -> Tensor:
    """The elements in row-major order: any shape -> (numel,); a view when possible."""
    return input.reshape(-1)


# ----- picking elements -----------------------------------------------------------------------


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at position ``index`` (negative counts from the end) along ``dim``, that
    dimension removed: (a, b, c) with dim 1 -> (a, c). A view."""
    axis = dimensioned_axis(operator.index(dim), input.ndim, "select")
    index = operator.index(index)
    extent = input.shape[axis]
    if not -extent <= index < extent:
        raise IndexingError(
            f"[select] index {index} is out of range for dimension {axis} of size {extent} "
            f"of a tensor shaped {tuple(input.shape)}",
            help=f"use an index in [{-extent}, {extent - 1}]",
        )
    return input[(slice(None),) * axis + (index,)]


def take(input: Tensor, index) -> Tensor:
    """Elements of ``input`` read as if flattened, at the integer positions ``index``
    (negative count from the end): the result is shaped like ``index``."""
    array = _index_array(index, "take")
    flat = input.reshape(-1)
    _check_range("take", array, flat.shape[0], 0, flat.shape, negative=True)
    return flat[array]


def take_along_dim(input: Tensor, indices, dim: int | None = None) -> Tensor:
    """``input`` gathered at ``indices`` along ``dim``; on the other dimensions the two are
    broadcast against each other. (a, n, c) with indices (a, k, 1), dim 1 -> (a, k, c).
    Without ``dim`` both are flattened: indices of any shape -> (numel of indices,)."""
    array = _index_array(indices, "take_along_dim")
    if dim is None:
        flat = input.reshape(-1)
        _check_range("take_along_dim", array, flat.shape[0], 0, flat.shape, negative=False)
        return gather(flat, 0, array.reshape(-1))
    axis = dimensioned_axis(operator.index(dim), input.ndim, "take_along_dim")
    if array.ndim != input.ndim:
        raise ShapeError(
            f"[take_along_dim] indices have {dimensions(array.ndim)} but the input has "
            f"{dimensions(input.ndim)} (indices shape {tuple(array.shape)}, input shape "
            f"{tuple(input.shape)})",
            help="give indices as many dimensions as the input (size 1 broadcasts)",
        )
    _check_range("take_along_dim", array, input.shape[axis], axis, input.shape, negative=False)
    others = list(input.shape)
    others[axis] = array.shape[axis]
    try:
        shape = np.broadcast_shapes(tuple(others), tuple(array.shape))
    except ValueError:
        raise ShapeError(
            f"[take_along_dim] indices shape {tuple(array.shape)} does not broadcast against "
            f"the input shape {tuple(input.shape)} outside dimension {axis}",
            help="outside dim, sizes must match or be 1",
        ) from None
    xp = array_namespace(array)
    input_shape = shape[:axis] + (input.shape[axis],) + shape[axis + 1 :]
    return gather(expand(input, input_shape), axis, xp.broadcast_to(array, shape))


# ----- reordering -----------------------------------------------------------------------------


def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dimension 1): needs at least 2 dimensions; same shape."""
    if input.ndim < 2:
        raise ShapeError(
            f"[fliplr] needs a tensor with at least 2 dimensions, got shape {tuple(input.shape)}",
            help="use flip(x, 0) to reverse a vector",
        )
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dimension 0): needs at least 1 dimension; same shape."""
    if input.ndim < 1:
        raise ShapeError(
            "[flipud] needs a tensor with at least 1 dimension, got a 0-d tensor",
            help="a 0-d tensor has nothing to reverse",
        )
    return flip(input, 0)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times, from the first of ``dims`` towards the second:
    (m, n) -> (n, m) for odd ``k``. ``rot90([[1, 2], [3, 4]])`` -> ``[[2, 4], [1, 3]]``."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise ShapeError(
            f"[rot90] dims must name exactly 2 dimensions, got {dims}",
            help="pass the plane to rotate in, e.g. dims=(0, 1)",
        )
    if input.ndim < 2:
        raise ShapeError(
            f"[rot90] needs a tensor with at least 2 dimensions, got shape {tuple(input.shape)}",
            help="reshape it to a matrix first",
        )
    first = normalize_axis(operator.index(dims[0]), input.ndim, "rot90")
    second = normalize_axis(operator.index(dims[1]), input.ndim, "rot90")
    if first == second:
        raise ShapeError(
            f"[rot90] the two dims must differ, got {dims}",
            help="name two different dimensions, e.g. dims=(0, 1)",
        )
    turns = operator.index(k) % 4
    if turns == 1:
        return swapaxes(flip(input, second), first, second)
    if turns == 2:
        return flip(input, (first, second))
    if turns == 3:
        return swapaxes(flip(input, first), first, second)
    return clone(input)  # a copy, as PyTorch returns for a full turn


# ----- differences and products ---------------------------------------------------------------


def diff(
    input: Tensor,
    n: int = 1,
    dim: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
) -> Tensor:
    """The ``n``-th forward difference along ``dim``, ``out[i] = x[i + 1] - x[i]`` applied
    ``n`` times (logical xor for bool), after ``prepend`` and ``append`` are joined at the two
    ends: (..., L, ...) -> (..., max(L - n, 0), ...)."""
    if input.ndim == 0:
        raise ShapeError(
            "[diff] expects a tensor with at least 1 dimension, got a 0-d tensor",
            help="reshape it first: x.reshape(1)",
        )
    n = operator.index(n)
    if n < 0:
        raise ArgumentError(f"[diff] the order n must be non-negative, got {n}")
    axis = normalize_axis(operator.index(dim), input.ndim, "diff")
    parts = [input]
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        extra = as_tensor(extra)
        if extra.ndim != input.ndim:
            raise ShapeError(
                f"[diff] {name} has shape {tuple(extra.shape)} but the input has shape "
                f"{tuple(input.shape)}: they need the same number of dimensions",
                help=f"give {name} the input's shape except along dim {axis}",
            )
        parts.insert(0 if name == "prepend" else len(parts), extra)
    out = concatenate(parts, axis) if len(parts) > 1 else input
    before = (slice(None),) * axis
    for _ in range(n):
        if out.shape[axis] == 0:
            break
        later, earlier = out[before + (slice(1, None),)], out[before + (slice(None, -1),)]
        out = logical_xor(later, earlier) if out.dtype == np.bool_ else later - earlier
    return out


_CROSS_WARNING = (
    "Using torch.cross without specifying the dim arg is deprecated.\n"
    "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
    "The default value of dim will change to agree with that of linalg.cross in a future release."
)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (both sizes 3; the other dimensions
    broadcast): (..., 3, ...) x (..., 3, ...) -> (..., 3, ...). Without ``dim``: the first
    dimension of ``input`` of size 3, with PyTorch's deprecation warning."""
    if dim is None:
        warnings.warn(_CROSS_WARNING, UserWarning, stacklevel=2)
        dim = next((axis for axis, size in enumerate(input.shape) if size == 3), None)
        if dim is None:
            raise ShapeError(
                f"[cross] input of shape {tuple(input.shape)} has no dimension of size 3",
                help="pass dim= to name the dimension that holds the vectors",
            )
    if input.ndim != other.ndim:
        raise ShapeError(
            f"[cross] inputs need the same number of dimensions, got shapes "
            f"{tuple(input.shape)} and {tuple(other.shape)}",
            help="unsqueeze the smaller one; sizes of 1 broadcast",
        )
    axis = dimensioned_axis(operator.index(dim), input.ndim, "cross")
    if input.shape[axis] != 3 or other.shape[axis] != 3:
        raise ShapeError(
            f"[cross] dimension {axis} must have size 3 in both inputs, got shapes "
            f"{tuple(input.shape)} and {tuple(other.shape)}",
            help="pass dim= to name the dimension that holds the vectors",
        )
    if input.dtype == np.bool_ or other.dtype == np.bool_:
        raise DTypeError("[cross] is not defined for bool tensors (as in PyTorch)")
    try:
        broadcast_shapes(tuple(input.shape), tuple(other.shape))
    except ShapeError:
        raise ShapeError(
            f"[cross] shapes {tuple(input.shape)} and {tuple(other.shape)} do not broadcast",
            help="outside dim, sizes must match or be 1",
        ) from None
    before = (slice(None),) * axis
    a = [input[before + (slice(i, i + 1),)] for i in range(3)]
    b = [other[before + (slice(i, i + 1),)] for i in range(3)]
    components = [
        a[(i + 1) % 3] * b[(i + 2) % 3] - a[(i + 2) % 3] * b[(i + 1) % 3] for i in range(3)
    ]
    return concatenate(components, axis)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block (i, j, ...) is ``input[i, j, ...] * other``; the shorter
    shape gets leading 1s. (a0, a1) x (b0, b1) -> (a0 * b0, a1 * b1)."""
    ndim = max(input.ndim, other.ndim)
    left = (1,) * (ndim - input.ndim) + tuple(input.shape)
    right = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...) -> (a0, b0, a1, b1, ...), then pairs merged
    spread = input.reshape(tuple(s for size in left for s in (size, 1)))
    tiled = other.reshape(tuple(s for size in right for s in (1, size)))
    return (spread * tiled).reshape(tuple(a * b for a, b in zip(left, right)))


def _contraction_dims(a: Tensor, b: Tensor, dims) -> tuple[list[int], list[int]]:
    """``tensordot``'s dims as two lists of axes: an int n (the last n of ``a`` with the first
    n of ``b``), a pair of ints or int lists, or a tensor holding either form."""
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise ArgumentError(
                f"[tensordot] dims must be an int or two lists of dimensions, got {dims!r}"
            )
        first, second = ([d] if isinstance(d, int) else list(d) for d in dims)
        return first, second
    count = operator.index(dims)
    if count < 0:
        raise ArgumentError(f"[tensordot] dims must be non-negative, got {count}")
    if count > a.ndim or count > b.ndim:
        raise ShapeError(
            f"[tensordot] cannot contract {count} dimensions of tensors shaped "
            f"{tuple(a.shape)} and {tuple(b.shape)}",
            help="dims may be at most the smaller number of dimensions",
        )
    return list(range(a.ndim - count, a.ndim)), list(range(count))


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Sum the products over the paired dimensions ``dims`` of ``a`` and ``b``; the result
    holds ``a``'s other dimensions, then ``b``'s. (i, j, k) with (j, k, l) and dims=2 ->
    (i, l); dims=([1], [0]) pairs a's dimension 1 with b's 0. A contracted size of 1 broadcasts
    against its partner."""
    first, second = _contraction_dims(a, b, dims)
    if len(first) != len(second):
        raise ShapeError(
            f"[tensordot] the two dimension lists must have the same length, got {first} and "
            f"{second}",
            help="pair each dimension of a with one of b",
        )
    first = [normalize_axis(operator.index(d), a.ndim, "tensordot") for d in first]
    second = [normalize_axis(operator.index(d), b.ndim, "tensordot") for d in second]
    for axes, x in ((first, a), (second, b)):
        if len(set(axes)) != len(axes):
            raise ShapeError(f"[tensordot] dimensions {axes} of {tuple(x.shape)} repeat")
    contracted = []
    for i, j in zip(first, second):
        size_a, size_b = a.shape[i], b.shape[j]
        if size_a != size_b and 1 not in (size_a, size_b):
            raise ShapeError(
                f"[tensordot] contracted dimensions must match: dimension {i} of "
                f"{tuple(a.shape)} has size {size_a}, dimension {j} of {tuple(b.shape)} has "
                f"size {size_b}",
                help="pair dimensions of equal size",
            )
        contracted.append(max(size_a, size_b) if 0 not in (size_a, size_b) else 0)
    free_a = [axis for axis in range(a.ndim) if axis not in first]
    free_b = [axis for axis in range(b.ndim) if axis not in second]
    shape_a = [a.shape[axis] for axis in free_a]
    shape_b = [b.shape[axis] for axis in free_b]
    # (free of a..., contracted...) @ (contracted..., free of b...), each flattened to a matrix
    left = expand(permute(a, free_a + first), tuple(shape_a + contracted))
    right = expand(permute(b, second + free_b), tuple(contracted + shape_b))
    inner_size = math.prod(contracted)
    product = matmul(
        left.reshape(math.prod(shape_a), inner_size),
        right.reshape(inner_size, math.prod(shape_b)),
    )
    return product.reshape(tuple(shape_a + shape_b))


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The inner product over the last dimension, for every pair of leading positions:
    (..., n) with (..., n) -> (input's leading..., other's leading...); a 0-d operand scales
    the other."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise ShapeError(
            f"[inner] the last dimensions must match, got shapes {tuple(input.shape)} and "
            f"{tuple(other.shape)}",
            help="use tensordot(a, b, dims=([i], [j])) to contract other dimensions",
        )
    return tensordot(input, other, ([-1], [-1]))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector: (n, m) @ (m,) -> (n,)."""
    if input.ndim != 2 or vec.ndim != 1 or input.shape[1] != vec.shape[0]:
        raise ShapeError(
            f"[mv] expects a matrix (n, m) and a vector (m,), got {tuple(input.shape)} and "
            f"{tuple(vec.shape)}",
            help="use matmul (@) for other shapes",
        )
    return matmul(input, vec)


def _scaled_sum(op: str, input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape. With
    ``beta == 0`` the input's values (NaN and inf too) are ignored, as PyTorch documents; it
    still takes part in the graph, with a zero gradient."""
    shape = tuple(product.shape)
    fits = input.ndim <= len(shape)
    if fits:
        try:
            fits = broadcast_shapes(tuple(input.shape), shape) == shape
        except ShapeError:
            fits = False
    if not fits:
        raise ShapeError(
            f"[{op}] input of shape {tuple(input.shape)} does not broadcast to the product's "
            f"shape {shape}",
            help=f"give input the shape {shape}, or sizes of 1 where it should repeat",
        )
    if not is_floating(product.dtype) or not is_floating(input.dtype):
        for name, value in (("beta", beta), ("alpha", alpha)):
            if not float(value).is_integer():
                raise ArgumentError(
                    f"[{op}] {name}={value} is not a whole number, but the tensors hold "
                    f"{input.dtype} and {product.dtype}",
                    help="pass an integer, or convert the tensors to floating point",
                )
    if beta == 0:
        input = masked_fill(input, np.asarray(True), 0)
    elif beta != 1:
        input = input * beta
    if alpha != 1:
        product = product * alpha
    return input + product


def _check_matrices(op: str, left: Tensor, right: Tensor, ranks: tuple) -> None:
    matches = (left.ndim, right.ndim) == ranks and left.shape[-1] == right.shape[ranks[1] - 2]
    if ranks == (3, 3):
        matches = matches and left.shape[0] == right.shape[0]
    if not matches:
        raise ShapeError(
            f"[{op}] cannot multiply {tuple(left.shape)} by {tuple(right.shape)}",
            help={
                (2, 2): "expects matrices (n, k) and (k, m)",
                (2, 1): "expects a matrix (n, m) and a vector (m,)",
                (3, 3): "expects batches (b, n, k) and (b, k, m) of the same size b",
            }[ranks],
        )


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``: (n, k) @ (k, m) -> (n, m), ``input``
    broadcast to (n, m). With ``beta=0`` the input is ignored (its NaN and inf too)."""
    _check_matrices("addmm", mat1, mat2, (2, 2))
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``: (n, m) @ (m,) -> (n,), ``input`` broadcast to
    (n,). With ``beta=0`` the input is ignored."""
    _check_matrices("addmv", mat, vec, (2, 1))
    return _scaled_sum("addmv", input, matmul(mat, vec), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``: (b, n, k) @ (b, k, m) -> (b, n, m),
    ``input`` broadcast to (b, n, m). With ``beta=0`` the input is ignored."""
    _check_matrices("baddbmm", batch1, batch2, (3, 3))
    return _scaled_sum("baddbmm", input, matmul(batch1, batch2), beta, alpha)


# ----- aliases and the Tensor methods ---------------------------------------------------------

row_stack = vstack
concat = concatenate

__all__ = [
    "meshgrid", "cartesian_prod", "tril_indices", "triu_indices",
    "diagonal", "diag_embed", "diag", "diagflat", "trace", "block_diag",
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "concat", "unbind", "ravel",
    "select", "take", "take_along_dim", "fliplr", "flipud", "rot90",
    "diff", "cross", "kron", "tensordot", "inner", "mv", "addmm", "addmv", "baddbmm",
]  # fmt: skip

TENSOR_METHODS = {
    "diag": diag, "diagonal": diagonal, "diag_embed": diag_embed, "diagflat": diagflat,
    "trace": trace,
    "unbind": unbind, "ravel": ravel, "select": select, "take": take,
    "take_along_dim": take_along_dim, "fliplr": fliplr, "flipud": flipud, "rot90": rot90,
    "diff": diff, "cross": cross, "kron": kron, "inner": inner, "mv": mv,
    "addmm": addmm, "addmv": addmv, "baddbmm": baddbmm,
}  # fmt: skip
