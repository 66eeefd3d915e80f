"""Indexing primitives.

``getitem`` reads ``x[index]`` for a *basic* index (ints, slices, None, Ellipsis): the result is a
view that shares memory, and so the version counter, with ``x``. ``index`` reads ``x[index]`` for
an *advanced* index (integer or boolean arrays, alone or mixed with basic parts): the result is a
copy. Their adjoint ``zeros_index_add`` adds values into a zero array at the same index (summing
where an integer array repeats a position). Each is the other's backward, so gradients of any
order flow through indexing. ``one_hot`` turns class indices into int64 indicator vectors.

``index`` attributes are tuples already normalised by the public functions: ints, slices, None,
Ellipsis and integer or boolean backend arrays.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import BuildingAIError, DTypeError, IndexingError, dimensions
from .abstract import DimExpr, SymbolicSizeError, ValueSpec, broadcast_shapes
from .families import CopyOp, ViewOp, symbolic_sizes


def has_advanced(index: tuple) -> bool:
    """True when the index holds an array (advanced indexing copies and may repeat positions)."""
    return any(hasattr(part, "shape") for part in index)


# ----- explaining a bad index ---------------------------------------------------------------------


def describe_index(index: tuple) -> str:
    """``[0, 1:5:2, None, ..., array(shape=(3, 4), dtype=int64)]``: an index as a user wrote it."""
    if index and index[-1] is Ellipsis and len(index) > 1:
        index = index[:-1]  # the '...' that normalisation appends to basic indices
    return "[" + ", ".join(_describe_part(part) for part in index) + "]"


def _describe_part(part) -> str:
    if part is Ellipsis:
        return "..."
    if isinstance(part, slice):
        text = ("" if part.start is None else str(part.start)) + ":"
        text += "" if part.stop is None else str(part.stop)
        return text if part.step is None else f"{text}:{part.step}"
    if hasattr(part, "shape"):
        if part.ndim == 1 and part.size <= 6:
            return str(part.tolist())
        return f"array(shape={tuple(part.shape)}, dtype={part.dtype})"
    return repr(part)


def find_index_problem(op: str, shape: tuple, index: tuple) -> IndexingError | None:
    """The error ``index`` causes on a tensor of ``shape``, or None when it fits.

    Reading the extremes of integer arrays costs one pass over the index (not over the tensor),
    so it is cheap; NumPy checks bounds itself, so on the CPU this runs only after NumPy refused
    the index, to say precisely what was wrong. CuPy does not check, so on a GPU it runs first.
    """
    where = _Context(shape, index)
    ndim = len(shape)
    ellipses = sum(1 for part in index if part is Ellipsis)
    if ellipses > 1:
        return IndexingError(
            f"[{op}] an index can have only one ellipsis ('...'), got {ellipses} {where}"
        )
    consumed = 0
    for part in index:
        if hasattr(part, "shape") and part.dtype.kind == "b":
            consumed += part.ndim
        elif part is not None and part is not Ellipsis and type(part) is not bool:
            consumed += 1
    if consumed > ndim:
        return IndexingError(
            f"[{op}] too many indices: the index addresses {dimensions(consumed)} but the "
            f"tensor has {dimensions(ndim)} {where}",
            help="use one index per dimension at most; '...' stands for all the dimensions "
            "not indexed",
        )
    axis = 0
    broadcast_shapes = []
    for part in index:
        if part is Ellipsis:
            axis += ndim - consumed
            continue
        if part is None or type(part) is bool:
            continue
        if isinstance(part, slice):
            for bound in (part.start, part.stop, part.step):
                if bound is not None and not _is_integer(bound):
                    return IndexingError(
                        f"[{op}] slice bounds must be integers, got {bound!r} at axis {axis} "
                        f"{where}"
                    )
            if part.step == 0:
                return IndexingError(f"[{op}] slice step cannot be zero at axis {axis} {where}")
            axis += 1
            continue
        if hasattr(part, "shape"):
            problem = _array_problem(op, part, shape, axis, where)
            if problem is not None:
                return problem
            if part.dtype.kind == "b":
                broadcast_shapes.append((int(part.sum()),))
                axis += part.ndim
            else:
                broadcast_shapes.append(tuple(part.shape))
                axis += 1
            continue
        if not _is_integer(part):
            return IndexingError(
                f"[{op}] {part!r} of type {type(part).__name__} is not a valid index {where}",
                help="index with ints, slices, None, '...', or integer or boolean arrays/tensors",
            )
        value, size = operator.index(part), shape[axis]
        if not -size <= value < size:
            return IndexingError(
                f"[{op}] index {value} is out of range for axis {axis} with size {size} {where}",
                help=_range_help(size),
            )
        axis += 1
    if len(broadcast_shapes) > 1 and not _broadcastable(broadcast_shapes):
        listed = ", ".join(str(s) for s in broadcast_shapes)
        return IndexingError(
            f"[{op}] the index arrays of shapes {listed} cannot be broadcast together {where}",
            help="advanced indices are paired element by element, so their shapes must broadcast",
        )
    return None


class _Context:
    """``(tensor shape ..., index ...)`` for a message, formatted only if an error is raised."""

    def __init__(self, shape: tuple, index: tuple) -> None:
        self.shape, self.index = shape, index

    def __str__(self) -> str:
        return f"(tensor shape {tuple(self.shape)}, index {describe_index(self.index)})"


def _array_problem(op: str, part, shape: tuple, axis: int, where: _Context) -> IndexingError | None:
    kind = part.dtype.kind
    if kind == "b":
        covered = tuple(shape[axis : axis + part.ndim])
        if tuple(part.shape) != covered:
            axes = f"axis {axis}" if part.ndim == 1 else f"axes {axis}..{axis + part.ndim - 1}"
            return IndexingError(
                f"[{op}] boolean mask of shape {tuple(part.shape)} does not match the indexed "
                f"dimensions {covered} at {axes} {where}",
                help="a mask must have exactly the shape of the dimensions it selects from",
            )
        return None
    if kind not in "iu":
        return IndexingError(
            f"[{op}] index arrays must hold integers or booleans, got dtype {part.dtype} at axis "
            f"{axis} {where}",
            help="convert the index with .long() (or .astype('int64'))",
        )
    size = shape[axis]
    if part.size:
        low, high = int(part.min()), int(part.max())
        bad = high if high >= size else low if low < -size else None
        if bad is not None:
            return IndexingError(
                f"[{op}] index {bad} (in an index array) is out of range for axis {axis} with "
                f"size {size} {where}",
                help=_range_help(size),
            )
    return None


def _range_help(size: int) -> str:
    if size == 0:
        return "the axis is empty, so no index can be read from it"
    return f"valid indices are {-size}..{size - 1} (negative ones count from the end)"


def _is_integer(value) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return not isinstance(value, bool)


def _is_whole(part) -> bool:
    return isinstance(part, slice) and part == _WHOLE


_WHOLE = slice(None)


def _broadcastable(shapes: list) -> bool:
    width = max(len(s) for s in shapes)
    for position in range(1, width + 1):
        extents = {s[-position] for s in shapes if len(s) >= position} - {1}
        if len(extents) > 1:
            return False
    return True


def _failure(op: str, shape: tuple, index: tuple, exc: Exception) -> BuildingAIError:
    problem = find_index_problem(op, shape, index)
    if problem is not None:
        return problem
    return IndexingError(
        f"[{op}] cannot index a tensor of shape {tuple(shape)} with {describe_index(index)}: {exc}"
    )


def on_device(xp, index: tuple) -> tuple:
    """The index with every array moved into ``xp``'s memory (a no-op on the CPU)."""
    if xp.__name__ == "numpy":
        return index
    return tuple(xp.asarray(part) if hasattr(part, "shape") else part for part in index)


# ----- the shape of a selection (for infer) -------------------------------------------------------


def _slice_length(size, part: slice):
    """How many elements ``part`` selects from an axis of ``size``. A symbolic size is taken to
    be at least as large as the slice's bounds (``x[1:]`` has ``size - 1`` elements, ``x[-3:]``
    three); slices whose length is not ``c * symbols + k`` then raise SymbolicSizeError."""
    if not isinstance(size, DimExpr):
        return len(range(*part.indices(size)))
    step = 1 if part.step is None else part.step
    if step < 0:
        raise SymbolicSizeError(
            f"a slice with negative step ({_describe_part(part)}) of the symbolic size "
            f"{size!r} has no length of the form c * symbols + k",
            help="flip the tensor instead, or fix that dimension's size",
        )
    start = 0 if part.start is None else part.start
    stop = size if part.stop is None else part.stop
    start = size + start if start < 0 else start  # negative bounds count from the end
    stop = size + stop if isinstance(stop, int) and stop < 0 else stop
    length = stop - start
    if isinstance(length, DimExpr) and length.coefficient < 0:
        raise SymbolicSizeError(
            f"the slice {_describe_part(part)} of the symbolic size {size!r} has a length that "
            "depends on how large the size is",
            help="slice from a fixed offset towards the end, or fix that dimension's size",
        )
    if isinstance(length, int):
        length = max(length, 0)
    if isinstance(length, int):
        return -(-length // step)
    if length.coefficient % step == 0 and length.offset % step == 0:
        return length // step
    return (length + step - 1) // step  # ceil division; raises unless step divides it


def _expand_ellipsis(index: tuple, ndim: int) -> list:
    """The index with its Ellipsis (or the missing trailing axes) written out as ``:``."""
    parts = list(index)
    consumed = 0
    for part in parts:
        if hasattr(part, "shape") and part.dtype.kind == "b":
            consumed += part.ndim
        elif part is not None and part is not Ellipsis:
            consumed += 1
    if consumed > ndim:
        raise IndexingError(
            f"too many indices: the index addresses {dimensions(consumed)} but the tensor has "
            f"{dimensions(ndim)}",
            help="use one index per dimension at most",
        )
    whole = [slice(None)] * (ndim - consumed)
    for at, part in enumerate(parts):
        if part is Ellipsis:  # (not ``in``: that would compare index arrays element-wise)
            return parts[:at] + whole + parts[at + 1 :]
    return parts + whole


def one_axis_range(shape: tuple, index: tuple) -> tuple | None:
    """``(axis, start, stop)`` where the basic ``index`` into an array of ``shape`` takes one
    non-empty step-1 range along one axis and every other axis whole, as ``split`` and
    ``chunk`` do; None for any other index (ints, None, steps, two ranges, or all whole)."""
    if type(index) is not tuple:
        return None
    found = None
    for axis, part in enumerate(_expand_ellipsis(index, len(shape))):
        if type(part) is not slice:
            return None
        start, stop, step = part.indices(shape[axis])
        if start == 0 and stop == shape[axis] and step == 1:
            continue
        if found is not None or step != 1 or stop <= start:
            return None
        found = (axis, start, stop)
    return found


def index_shape(shape: tuple, index: tuple) -> tuple:
    """The shape of ``x[index]`` for ``x`` of ``shape`` (ints and ``DimExpr``), with NumPy's
    rules: basic parts (slices, None) keep their places; advanced parts (arrays, and ints
    among arrays) broadcast together, in place of the first when they are adjacent, else in
    front."""
    parts = _expand_ellipsis(index, len(shape))
    advanced = has_advanced(index)
    out: list = []  # basic sizes, and one marker where the advanced shape goes
    advanced_shapes, positions = [], []
    axis = 0
    for position, part in enumerate(parts):
        if part is None:
            out.append(1)
            continue
        if isinstance(part, slice):
            out.append(_slice_length(shape[axis], part))
            axis += 1
            continue
        if hasattr(part, "shape"):
            if part.dtype.kind == "b":
                advanced_shapes.append((int(part.sum()),))
                axis += part.ndim
            else:
                advanced_shapes.append(tuple(part.shape))
                axis += 1
        else:  # an int: drops its axis, or joins the advanced parts as a 0-d array
            axis += 1
            if not advanced:
                continue
            advanced_shapes.append(())
        positions.append(position)
        if len(positions) == 1:
            out.append(None)
    if not positions:
        return tuple(out)
    selected = broadcast_shapes(*advanced_shapes)
    at = out.index(None)
    del out[at]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    if not adjacent:
        at = 0
    return tuple(out[:at]) + tuple(selected) + tuple(out[at:])


def _index_bytes(index: tuple) -> int:
    return sum(int(part.nbytes) for part in index if hasattr(part, "nbytes"))


# ----- the records --------------------------------------------------------------------------------


class GetItem(ViewOp):
    """``x[index]`` for a basic index: a view of ``x`` (it shares ``x``'s version counter)."""

    name = "getitem"

    def infer(self, x, *, index) -> ValueSpec:
        with symbolic_sizes(self.name):
            return x.with_shape(_checked_index_shape(self.name, x.shape, index))

    def forward(self, ctx, xp, x, *, index):
        ctx.input_shape = x.shape
        try:
            return x[index]
        except (IndexError, TypeError, ValueError) as exc:
            raise _failure("getitem", x.shape, index, exc) from None

    def backward(self, ctx, grad):
        return (grad.zeros_index_add(ctx.input_shape, ctx.attrs["index"]),)

    def add_grad_into(self, total, grad, attrs):
        """``total[index] += grad``: backward's scatter, added into a sum the engine holds."""
        total[attrs["index"]] += grad

    def grad_block(self, shape, attrs):
        """The part of its input's gradient this op's gradient fills, ``(axis, start, stop)``,
        where the index is one range along one axis (a piece of ``split`` or ``chunk``);
        else None."""
        return one_axis_range(shape, attrs["index"])

    def to_onnx(self, emit, inputs, output, attrs):
        _basic_index_onnx(emit, inputs[0], attrs["index"], output)


def _checked_index_shape(op: str, shape: tuple, index: tuple) -> tuple:
    """``index_shape``, with an index that does not fit named as ``find_index_problem`` does."""
    if all(isinstance(extent, int) for extent in shape):
        problem = find_index_problem(op, shape, index)
        if problem is not None:
            raise problem
    try:
        return index_shape(shape, index)
    except IndexingError as error:
        raise IndexingError(f"[{op}] {error.message}", help=error.help) from None


class Index(CopyOp):
    """``x[index]`` for an advanced index (integer or boolean arrays): a copy of the selection."""

    name = "index"
    save_inputs = False

    def infer(self, x, *, index) -> ValueSpec:
        with symbolic_sizes(self.name):
            return x.with_shape(_checked_index_shape(self.name, x.shape, index))

    def cost(self, x, *, index) -> tuple:
        out = self.infer(x, index=index)
        return (0, out.nbytes + _index_bytes(index), out.nbytes)  # reads only what it selects

    def forward(self, ctx, xp, x, *, index):
        ctx.input_shape = x.shape
        if xp.__name__ != "numpy":  # CuPy wraps out-of-range indices silently: check first
            index = on_device(xp, index)
            problem = find_index_problem("getitem", x.shape, index)
            if problem is not None:
                raise problem
        try:
            return x[index]
        except (IndexError, TypeError, ValueError) as exc:
            raise _failure("getitem", x.shape, index, exc) from None

    def backward(self, ctx, grad):
        return (grad.zeros_index_add(ctx.input_shape, ctx.attrs["index"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        # the common advanced index: one integer array at one axis, every other axis whole
        index = attrs["index"]
        rank = len(emit.shapes[inputs[0]])
        arrays = [p for p, part in enumerate(index) if hasattr(part, "shape")]
        others_whole = all(
            hasattr(part, "shape") or part is Ellipsis or _is_whole(part) for part in index
        )
        if len(arrays) != 1 or not others_whole or index[arrays[0]].dtype.kind not in "iu":
            raise IndexingError(
                f"[index] ONNX export supports one integer index array at one axis, got "
                f"{describe_index(index)}",
                help="index one axis at a time (x[idx][:, idy]), or use gather/index_select",
            )
        position = arrays[0]
        if any(part is Ellipsis for part in index[:position]):
            axis = rank - len(index) + position
        else:
            axis = position
        chosen = emit.constant(np.asarray(index[position]).astype(np.int64))  # an initializer
        emit.node("Gather", [inputs[0], chosen], output, axis=int(axis))


class ZerosIndexAdd(CopyOp):
    """``out = zeros(shape); out[index] += values`` (repeated positions accumulate)."""

    name = "zeros_index_add"
    save_inputs = False

    def infer(self, values, *, shape, index) -> ValueSpec:
        return ValueSpec(tuple(shape), values.dtype, values.device)

    def cost(self, values, *, shape, index) -> tuple:
        out = self.infer(values, shape=shape, index=index)
        return (values.numel, values.nbytes + _index_bytes(index), out.nbytes)

    def check(self, values, *, shape, index):
        # Integer arrays are folded into flat positions below, where an out-of-range index
        # would land on a wrong element instead of failing: validate them first.
        if has_advanced(index):
            problem = find_index_problem("zeros_index_add", shape, index)
            if problem is not None:
                raise problem

    def forward(self, ctx, xp, values, *, shape, index):
        out = xp.zeros(shape, dtype=values.dtype)
        if not has_advanced(index):
            out[index] = values  # basic indices never repeat a position
            return out
        index = on_device(xp, index)
        if all(part.dtype.kind == "b" for part in index if hasattr(part, "shape")):
            out[index] = values  # masks select each position at most once
            return out
        positions = flat_positions(xp, shape, index)
        if positions is None:
            xp.add.at(out, index, values)
        else:
            # Flat positions beat add.at's tuple index; bincount would accumulate in float64.
            flat_values = xp.broadcast_to(values, positions.shape).reshape(-1)
            xp.add.at(out.reshape(-1), positions.reshape(-1), flat_values)
        return out

    def backward(self, ctx, grad):
        return (grad.getitem(ctx.attrs["index"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        # Any index, basic or advanced: the flat positions it selects become a constant, and
        # ScatterElements adds the values there into zeros (repeats accumulate, as in forward).
        shape, index = tuple(attrs["shape"]), attrs["index"]
        if not all(isinstance(extent, int) for extent in shape):
            raise IndexingError(
                f"[zeros_index_add] ONNX export needs a fixed output shape, got {shape}",
                help="make the dimensions of the scattered-into shape fixed in the signature",
            )
        if emit.opset < 16:
            raise BuildingAIError(
                "[zeros_index_add] ONNX export needs opset 16 or later (ScatterElements with "
                "reduction='add')",
                help="export with opset=16 or later",
            )
        positions = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[index]
        dtype = emit.dtype(output)
        (values,) = emit.operands(inputs, dtype)
        updates = emit.node("Expand", [values, emit.ints(positions.shape)])
        updates = emit.node("Reshape", [updates, emit.ints([-1])])
        zero = emit.onnx.numpy_helper.from_array(np.zeros(1, dtype=dtype))
        zeros = emit.node(
            "ConstantOfShape", [emit.ints([math.prod(shape)])], dtype=dtype, value=zero
        )
        flat = emit.constant(positions.reshape(-1))
        added = emit.node("ScatterElements", [zeros, flat, updates], axis=0, reduction="add")
        emit.node("Reshape", [added, emit.ints(shape)], output)


def flat_positions(xp, shape: tuple, index: tuple):
    """Flat positions in an array of ``shape`` of the elements ``index`` selects, shaped like the
    selection; None when the index is not one of the two common forms handled here:

    - one integer array per dimension (gather, take_along_axis, scatter_add);
    - a single integer array at axis ``a`` with every other axis whole (``x[idx]``,
      ``x[:, idx]``, index_select, embedding lookups).

    Indices must already be validated: negative ones are wrapped with ``%``.
    """
    parts = [part for part in index if part is not Ellipsis]
    if len(parts) == len(shape) and all(
        hasattr(part, "shape") and part.dtype.kind in "iu" for part in parts
    ):
        positions = 0
        for part, size in zip(parts, shape):
            positions = positions * size + part % size
        return positions
    arrays = [position for position, part in enumerate(index) if hasattr(part, "shape")]
    if len(arrays) != 1 or index[arrays[0]].dtype.kind not in "iu":
        return None
    for part in index:
        if not (part is Ellipsis or hasattr(part, "shape") or _is_whole(part)):
            return None
    position = arrays[0]
    if any(part is Ellipsis for part in index[:position]):
        axis = len(shape) - len(index) + position  # count from the end: only ':' follow
    else:
        axis = position
    chosen = index[position]
    lead = 1
    for extent in shape[:axis]:
        lead *= extent
    inner = 1
    for extent in shape[axis + 1 :]:
        inner *= extent
    size = shape[axis]
    rows = xp.arange(lead).reshape(lead, 1, 1) * size + (chosen.reshape(1, -1, 1) % size)
    positions = rows * inner + xp.arange(inner).reshape(1, 1, inner)
    return positions.reshape(tuple(shape[:axis]) + tuple(chosen.shape) + tuple(shape[axis + 1 :]))


class OneHot(CopyOp):
    """Class indices ``(...)`` -> int64 indicators ``(..., num_classes)`` (no gradient)."""

    name = "one_hot"
    save_inputs, differentiable = False, False
    checks_values = True  # the indices' range, on every run of a traced graph too

    def infer(self, indices, *, num_classes) -> ValueSpec:
        return ValueSpec(indices.shape + (num_classes,), np.dtype(np.int64), indices.device)

    def cost(self, indices, *, num_classes) -> tuple:
        out = self.infer(indices, num_classes=num_classes)
        return (out.numel, indices.nbytes, out.nbytes)  # one comparison per output element

    def check(self, indices, *, num_classes):
        if indices.dtype.kind not in "iu":
            raise DTypeError(
                f"[one_hot] indices must be integers, got dtype {indices.dtype}",
                help="convert them with .long()",
            )
        if indices.size:
            low, high = int(indices.min()), int(indices.max())
            if low < 0 or high >= num_classes:
                bad = low if low < 0 else high
                raise IndexingError(
                    f"[one_hot] class index {bad} is out of range for num_classes={num_classes} "
                    f"(indices shape {tuple(indices.shape)})",
                    help=f"class indices must lie in 0..{num_classes - 1}; "
                    "drop ignored labels (such as -100) first",
                )

    def forward(self, ctx, xp, indices, *, num_classes):
        return (indices[..., None] == xp.arange(num_classes)).astype(xp.int64)

    def to_onnx(self, emit, inputs, output, attrs):
        depth = emit.constant(np.asarray([attrs["num_classes"]], dtype=np.int64))
        values = emit.constant(np.asarray([0, 1], dtype=np.int64))
        emit.node("OneHot", [inputs[0], depth, values], output, axis=-1, dtype="int64")


_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def _basic_index_onnx(emit, x, index: tuple, output: str) -> None:
    """ONNX for a basic index: one Slice over every sliced or integer-indexed axis, a Squeeze of
    the integer-indexed axes, an Unsqueeze for each ``None``."""
    rank = len(emit.shapes[x])
    parts = list(index)
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        taken = sum(1 for part in parts if part is not None and part is not Ellipsis)
        parts[at : at + 1] = [slice(None)] * (rank - taken)
    parts += [slice(None)] * (rank - sum(1 for part in parts if part is not None))
    starts, ends, axes, steps, squeezed, inserted = [], [], [], [], [], []
    axis = position = 0
    for part in parts:
        if part is None:
            inserted.append(position)
            position += 1
            continue
        if isinstance(part, slice):
            if part != slice(None):
                step = 1 if part.step is None else part.step
                default_start, default_stop = (0, _INT64_MAX) if step > 0 else (-1, _INT64_MIN)
                starts.append(default_start if part.start is None else part.start)
                ends.append(default_stop if part.stop is None else part.stop)
                axes.append(axis)
                steps.append(step)
            position += 1
        else:  # an integer: a slice of one element, squeezed afterwards
            starts.append(part)
            ends.append(_INT64_MAX if part == -1 else part + 1)
            axes.append(axis)
            steps.append(1)
            squeezed.append(axis)
        axis += 1
    out = x
    if axes:
        operands = [out, emit.ints(starts), emit.ints(ends), emit.ints(axes), emit.ints(steps)]
        out = emit.node("Slice", operands)
    if squeezed:
        out = emit.squeeze(out, squeezed)
    if inserted:
        out = emit.unsqueeze(out, inserted)
    emit.node("Identity", [out], output)


GETITEM, INDEX, ZEROS_INDEX_ADD, ONE_HOT = GetItem(), Index(), ZerosIndexAdd(), OneHot()
