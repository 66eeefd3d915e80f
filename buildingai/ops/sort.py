"""Ordering and triangle primitives: ``sort_indices`` (the permutation behind sort, argsort,
topk and kthvalue), ``gather_elements`` (values picked at a tensor of indices, differentiable),
and ``tril``/``triu`` (a triangle of the last two axes, the rest zeroed).

Values of a sort are never a primitive of their own: they are ``gather_elements`` of the input at
the sorted positions, so one gradient rule (scatter back into zeros) serves sort, topk and
kthvalue, and an exported graph computes both from the input.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import array_namespace
from .abstract import ValueSpec
from .families import CopyOp, symbolic_sizes
from .index import ZerosIndexAdd

_INT64 = np.dtype(np.int64)
_ZEROS_INDEX_ADD = ZerosIndexAdd()


def _along_axis(xp, index, axis: int) -> tuple:
    """The advanced index picking ``x[..., index[i, j, k], ...]`` along ``axis``: ``index`` on
    ``axis``, ``arange`` broadcast on every other axis."""
    parts = []
    for position, extent in enumerate(index.shape):
        if position == axis:
            parts.append(index)
        else:
            shape = [1] * index.ndim
            shape[position] = extent
            parts.append(xp.arange(extent).reshape(shape))
    return tuple(parts)


def stable_order(xp, x, axis: int, descending: bool):
    """Positions that sort ``x`` along ``axis``, equal elements kept in their input order; NaN
    counts as the largest value (last ascending, first descending), as in PyTorch."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    # descending and still stable: sort the reversed axis ascending, read the result backwards
    size = x.shape[axis]
    reversed_x = xp.flip(x, axis=axis)
    order = xp.flip(xp.argsort(reversed_x, axis=axis, kind="stable"), axis=axis)
    return (size - 1) - order


def first_in_order(xp, x, axis: int, k: int | None, descending: bool):
    """Positions of the ``k`` smallest (``descending``: largest) elements along ``axis``, in
    sorted order, ties in input order; every position for ``k`` None.

    A few of many (topk over a vocabulary) are chosen by ``argpartition`` in linear time and only
    those are sorted. A partition chooses freely among elements tied at the k-th value, so when
    such ties reach past the chosen ones (or the k-th value is NaN) the full stable sort decides.
    """
    size = x.shape[axis]
    if k is not None and k == 0:
        return xp.take(xp.zeros(x.shape, dtype=xp.int64), xp.arange(0), axis=axis)
    if k is None or 2 * k > size or x.dtype.kind not in "biuf":  # bfloat16: no partition
        return _first_by_sorting(xp, x, axis, k, descending)
    # NaN goes last in a partition, so it counts as the largest value, as in sorting
    kth = size - k if descending else k - 1
    partition = xp.argpartition(x, kth, axis=axis)
    kept = xp.arange(kth, size) if descending else xp.arange(k)
    chosen = xp.sort(xp.take(partition, kept, axis=axis), axis=axis)  # back in input order
    values = xp.take_along_axis(x, chosen, axis=axis)
    boundary = xp.take_along_axis(x, xp.take(partition, xp.arange(kth, kth + 1), axis=axis), axis)
    tied = (x == boundary).sum(axis=axis) != (values == boundary).sum(axis=axis)
    if bool(tied.any()) or bool(xp.isnan(boundary).any()):
        return _first_by_sorting(xp, x, axis, k, descending)
    order = stable_order(xp, values, axis, descending)  # ties keep the input order of chosen
    return xp.take_along_axis(chosen, order, axis=axis)


def _first_by_sorting(xp, x, axis: int, k: int | None, descending: bool):
    order = stable_order(xp, x, axis, descending)
    return order if k is None or k == x.shape[axis] else xp.take(order, xp.arange(k), axis=axis)


class SortIndices(CopyOp):
    """The int64 positions of the ``k`` smallest (``descending``: largest) elements along
    ``axis``, in sorted order (all of them when ``k`` is None); ties keep their input order.

    x: (..., n, ...) -> (..., k, ...) int64. No gradient: values are ``gather_elements``.
    """

    name = "sort_indices"
    save_inputs, differentiable = False, False

    def infer(self, x, *, axis, k, descending) -> ValueSpec:
        shape = list(x.shape)
        if k is not None:
            shape[axis] = k
        return ValueSpec(tuple(shape), _INT64, x.device)

    def forward(self, ctx, xp, x, *, axis, k, descending):
        return first_in_order(xp, x, axis, k, descending).astype(xp.int64, copy=False)

    def to_onnx(self, emit, inputs, output, attrs):
        x, axis, k = inputs[0], attrs["axis"], attrs["k"]
        count = emit.ints([emit.shapes[x][axis] if k is None else k])
        dtype = emit.dtype(x)
        if dtype.kind == "b" or (dtype.kind in "iu" and dtype.itemsize < 4):
            x = emit.cast(x, "int32")  # onnxruntime's TopK takes 32- and 64-bit types only
        elif dtype.kind not in "iu" and dtype.itemsize < 4:
            x = emit.cast(x, "float32")  # float16/bfloat16: the same order in float32
        values = emit.fresh("topk_values")
        node = emit.helper.make_node(
            "TopK",
            [x, count],
            [values, output],
            axis=int(axis),
            largest=int(bool(attrs["descending"])),
            sorted=1,
        )
        emit.nodes.append(node)
        emit.dtypes[values], emit.dtypes[output] = emit.dtype(x), _INT64


class GatherElements(CopyOp):
    """``out[i, j, k] = x[i, index[i, j, k], k]`` for ``axis=1`` (and so on): the values at a
    tensor of positions (PyTorch's gather, ONNX's GatherElements). The index is an input, so a
    traced graph recomputes it.

    x: (d0, ..., dn), index: int64 of the same rank with ``index.shape[a] <= x.shape[a]`` off
    ``axis`` -> shaped like index. The gradient scatter-adds into zeros shaped like x.
    """

    name = "gather_elements"

    def infer(self, x, index, *, axis) -> ValueSpec:
        with symbolic_sizes(self.name):
            return ValueSpec(tuple(index.shape), x.dtype, x.device)

    def forward(self, ctx, xp, x, index, *, axis):
        return xp.take_along_axis(x, index, axis=axis)

    def backward(self, ctx, grad):
        x, index = ctx.inputs
        xp = array_namespace(index.array)
        positions = _along_axis(xp, index.array, ctx.attrs["axis"] % index.ndim)
        return _ZEROS_INDEX_ADD(grad, shape=tuple(x.shape), index=positions), None

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("GatherElements", list(inputs), output, axis=int(attrs["axis"]))


class Triangle(CopyOp):
    """The lower (``tril``) or upper (``triu``) triangle of the last two axes, from diagonal
    ``diagonal`` (0: the main one, > 0 above it, < 0 below); other elements are zero.

    x: (..., m, n) -> (..., m, n). The gradient is the same triangle of the output gradient.
    """

    save_inputs = False

    def __init__(self, name: str, upper: bool) -> None:
        self.name, self.upper = name, upper

    def infer(self, x, *, diagonal) -> ValueSpec:
        return x

    def forward(self, ctx, xp, x, *, diagonal):
        if self.upper:
            return xp.triu(x, k=diagonal)
        return xp.tril(x, k=diagonal)

    def backward(self, ctx, grad):
        return (self(grad, diagonal=ctx.attrs["diagonal"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        x, dtype = inputs[0], emit.dtype(inputs[0])
        k = emit.constant(np.asarray(attrs["diagonal"], dtype=np.int64))
        upper = int(self.upper)
        if dtype in (np.float32, np.float64, np.int64, np.bool_):
            emit.node("Trilu", [x, k], output, upper=upper)
            return
        # onnxruntime's Trilu takes float, double, int64 and bool: compute wide, cast back
        wide = np.float64 if dtype.kind in "iu" or dtype.itemsize > 4 else np.float32
        triangle = emit.node("Trilu", [emit.cast(x, wide), k], dtype=wide, upper=upper)
        emit.cast(triangle, dtype, output)


SORT_INDICES = SortIndices()
GATHER_ELEMENTS = GatherElements()
TRIL, TRIU = Triangle("tril", upper=False), Triangle("triu", upper=True)
