"""Shape primitives: ops that move or repeat elements without arithmetic.

Views (reshape, expand, permute, squeeze, unsqueeze) cost nothing in ``cost``; copies read and
write their elements once. ``infer`` works with symbolic sizes: ``reshape`` to ``(-1, 4)``
divides the symbolic element count, ``concatenate`` adds symbolic sizes of one symbol.
"""

from __future__ import annotations

import math

from ..errors import BuildingAIError, ShapeError, dimensions, tensor_with_dimensions
from .abstract import DimExpr, SymbolicSizeError, ValueSpec, prod
from .families import CopyOp, ViewOp, symbolic_sizes
from .promotion import result_type


class Reshape(ViewOp):
    name = "reshape"

    def infer(self, x, *, shape) -> ValueSpec:
        with symbolic_sizes(self.name):
            total = x.numel
            unknown = [axis for axis, extent in enumerate(shape) if _is_minus_one(extent)]
            known = prod([extent for extent in shape if not _is_minus_one(extent)])
            if len(unknown) > 1 or (not unknown and total != known):
                raise ShapeError(
                    f"[reshape] cannot reshape {x.shape} ({total} elements) to {tuple(shape)}",
                    help="the product of the new shape must equal the element count; at most "
                    "one dimension may be -1",
                )
            if not unknown:
                return x.with_shape(shape)
            if not isinstance(total, DimExpr) and isinstance(known, DimExpr):
                raise SymbolicSizeError(
                    f"cannot divide {total} elements by the symbolic size {known!r} for -1"
                )
            if isinstance(total, int) and isinstance(known, int) and (known == 0 or total % known):
                raise ShapeError(
                    f"[reshape] cannot reshape {x.shape} ({total} elements) to {tuple(shape)}",
                    help="the known dimensions must divide the element count",
                )
            out = list(shape)
            out[unknown[0]] = total // known
            return x.with_shape(out)

    def check(self, x, *, shape):
        if -1 not in shape and math.prod(shape) == x.size:  # the commonest call: sizes that fit
            return
        known = 1
        unknown = 0
        for extent in shape:
            if extent == -1:
                unknown += 1
            else:
                known *= extent
        total = x.size
        if (
            unknown > 1
            or (unknown == 0 and known != total)
            or (unknown == 1 and (known == 0 or total % known != 0))
        ):
            raise ShapeError(
                f"[reshape] cannot reshape {tuple(x.shape)} ({total} elements) to {tuple(shape)}",
                help="the product of the new shape must equal the element count; at most one "
                "dimension may be -1",
            )

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        return x.reshape(shape)  # (the array's method: np.reshape adds a Python call around it)

    def backward(self, ctx, grad):
        return (grad.reshape(ctx.input_shape),)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX reads a 0 in the target as "copy this dimension" unless allowzero is set
        zero = any(isinstance(extent, int) and extent == 0 for extent in attrs["shape"])
        emit.node("Reshape", [inputs[0], emit.ints(attrs["shape"])], output, allowzero=int(zero))


def _is_minus_one(extent) -> bool:
    return isinstance(extent, int) and extent == -1


class Expand(ViewOp):
    """Broadcast to a larger shape (a read-only view: no memory is copied)."""

    name = "expand"

    def infer(self, x, *, shape) -> ValueSpec:
        if len(shape) < x.ndim or any(
            have != 1 and have != want for have, want in zip(x.shape[::-1], shape[::-1])
        ):
            raise ShapeError(
                f"[expand] cannot expand {x.shape} to {tuple(shape)}",
                help="only dimensions of size 1 can grow; new dimensions go in front",
            )
        return x.with_shape(shape)

    def check(self, x, *, shape):
        fits = len(shape) >= x.ndim
        for have, want in zip(x.shape[::-1], shape[::-1]):  # a loop: no generator's frame
            if have != 1 and have != want:
                fits = False
        if not fits:
            raise ShapeError(
                f"[expand] cannot expand {tuple(x.shape)} to {tuple(shape)}",
                help="only dimensions of size 1 can grow; new dimensions go in front",
            )

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        return xp.broadcast_to(x, shape)

    def backward(self, ctx, grad):
        return (grad.sum_to(ctx.input_shape),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Expand", [inputs[0], emit.ints(attrs["shape"])], output)


class Permute(ViewOp):
    name = "permute"

    def infer(self, x, *, axes) -> ValueSpec:
        if sorted(axes) != list(range(x.ndim)):
            raise ShapeError(
                f"[permute] axes {tuple(axes)} are not a permutation of the axes of "
                f"{tensor_with_dimensions(x.ndim)} shaped {x.shape}"
            )
        return x.with_shape(tuple(x.shape[axis] for axis in axes))

    def check(self, x, *, axes):
        if sorted(axes) != list(range(x.ndim)):
            raise ShapeError(
                f"[permute] axes {tuple(axes)} are not a permutation of the axes of "
                f"{tensor_with_dimensions(x.ndim)} shaped {tuple(x.shape)}"
            )

    def forward(self, ctx, xp, x, *, axes):
        return x.transpose(axes)

    def backward(self, ctx, grad):
        axes = ctx.attrs["axes"]
        inverse = [0] * len(axes)
        for position, axis in enumerate(axes):
            inverse[axis] = position
        return (grad.permute(tuple(inverse)),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Transpose", inputs, output, perm=[int(a) for a in attrs["axes"]])


RESHAPE, EXPAND, PERMUTE = Reshape(), Expand(), Permute()


class Squeeze(ViewOp):
    """Drop dimensions of size 1 (a view). ``axes`` is a sorted tuple of non-negative ints."""

    name = "squeeze"

    def infer(self, x, *, axes) -> ValueSpec:
        for axis in axes:
            if isinstance(x.shape[axis], DimExpr):
                raise SymbolicSizeError(
                    f"[squeeze] cannot squeeze axis {axis} of {x.shape}: its size is the symbol "
                    f"{x.shape[axis]!r}, not 1",
                    help="squeeze only fixed dimensions of size 1",
                )
            if x.shape[axis] != 1:
                raise ShapeError(f"[squeeze] cannot squeeze axis {axis} of {x.shape}: not size 1")
        return x.with_shape(tuple(d for axis, d in enumerate(x.shape) if axis not in axes))

    def check(self, x, *, axes):
        for axis in axes:
            if x.shape[axis] != 1:
                raise ShapeError(
                    f"[squeeze] cannot squeeze axis {axis} of a tensor shaped {tuple(x.shape)}: "
                    f"its size is {x.shape[axis]}, not 1",
                    help="the record takes only axes of size 1; call buildingai.squeeze, which "
                    "keeps an axis of another size in place as PyTorch does",
                )

    def forward(self, ctx, xp, x, *, axes):
        return x.squeeze(axis=axes)

    def backward(self, ctx, grad):
        return (grad.unsqueeze(ctx.attrs["axes"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.squeeze(inputs[0], attrs["axes"], output)


class Unsqueeze(ViewOp):
    """Insert dimensions of size 1 (a view). ``axes`` are sorted positions in the output."""

    name = "unsqueeze"

    def infer(self, x, *, axes) -> ValueSpec:
        sizes = iter(x.shape)
        ndim = x.ndim + len(axes)
        return x.with_shape(tuple(1 if axis in axes else next(sizes) for axis in range(ndim)))

    def forward(self, ctx, xp, x, *, axes):
        if len(axes) == 1:  # x[:, ..., None]: the commonest call, without expand_dims's steps
            return x[(slice(None),) * axes[0] + (None,)]
        return xp.expand_dims(x, axes)

    def backward(self, ctx, grad):
        return (grad.squeeze(ctx.attrs["axes"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.unsqueeze(inputs[0], attrs["axes"], output)


class Concatenate(CopyOp):
    """Join tensors along an existing axis; the gradient of each input is its slice of ``grad``.
    Inputs of different dtypes meet in PyTorch's promoted dtype."""

    name = "concatenate"
    save_inputs = False

    def infer(self, *specs, axis) -> ValueSpec:
        first = specs[0]
        for other in specs[1:]:
            if other.ndim != first.ndim or any(
                have != want
                for dim, (have, want) in enumerate(zip(other.shape, first.shape))
                if dim != axis
            ):
                shapes = ", ".join(str(spec.shape) for spec in specs)
                raise ShapeError(
                    f"[concatenate] cannot concatenate shapes {shapes} along axis {axis}",
                    help="every dimension except the concatenation axis must match",
                )
        with symbolic_sizes(self.name):
            size = sum((spec.shape[axis] for spec in specs), start=0)
        shape = first.shape[:axis] + (size,) + first.shape[axis + 1 :]
        return ValueSpec(shape, result_type(*specs), first.device)

    def check(self, *arrays, axis):
        first = arrays[0]
        for position, other in enumerate(arrays[1:], start=1):
            same_rank = other.ndim == first.ndim
            if same_rank and all(
                have == want
                for dim, (have, want) in enumerate(zip(other.shape, first.shape))
                if dim != axis
            ):
                continue
            shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
            if not same_rank:
                reason = (
                    f"input {position} has {dimensions(other.ndim)} but input 0 has "
                    f"{dimensions(first.ndim)}"
                )
            else:
                dim = next(
                    d
                    for d, (have, want) in enumerate(zip(other.shape, first.shape))
                    if d != axis and have != want
                )
                reason = (
                    f"input {position} has size {other.shape[dim]} in dimension {dim} where "
                    f"input 0 has {first.shape[dim]}"
                )
            raise ShapeError(
                f"[concatenate] cannot concatenate shapes {shapes} along axis {axis}: {reason}",
                help="every dimension except the concatenation axis must match; reshape or "
                "unsqueeze the inputs first, or use stack() to join along a new axis",
            )

    def forward(self, ctx, xp, *arrays, axis):
        ctx.sizes = [a.shape[axis] for a in arrays]
        dtype = arrays[0].dtype
        if any(a.dtype != dtype for a in arrays[1:]):  # NumPy would widen int + float32
            return xp.concatenate(arrays, axis=axis, dtype=result_type(*arrays))
        # row-major, as PyTorch's cat: NumPy's own result would follow strided inputs' layout
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        return xp.concatenate(arrays, axis=axis, out=xp.empty(shape, dtype))

    def backward(self, ctx, grad):
        axis = ctx.attrs["axis"]
        lead = (slice(None),) * axis
        grads = []
        start = 0
        for value, size in zip(ctx.inputs, ctx.sizes):
            wanted = getattr(value, "requires_grad", False)
            grads.append(grad.getitem(lead + (slice(start, start + size),)) if wanted else None)
            start += size
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Concat", inputs, output, axis=int(attrs["axis"]))


# Pad modes, with the names ONNX's Pad operator (opset 19) gives them.
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


class Pad(CopyOp):
    """Pad every axis by ``widths[axis] = (before, after)`` (non-negative) in one of four modes.

    Constant padding fills with ``value``; its gradient is the central slice of ``grad``. The
    other modes copy input elements into the border, so their gradient folds the border's
    gradient back onto the elements it was copied from (``pad_adjoint``, whose own gradient is
    this pad again).
    """

    name = "pad"
    save_inputs = False

    def infer(self, x, *, widths, mode, value) -> ValueSpec:
        with symbolic_sizes(self.name):
            shape = tuple(s + before + after for s, (before, after) in zip(x.shape, widths))
        return x.with_shape(shape)

    def check(self, x, *, widths, mode, value):
        for axis, (before, after) in enumerate(widths):
            size = x.shape[axis]
            if mode == "reflect" and max(before, after) >= max(size, 1):
                raise ShapeError(
                    f"[pad] reflect padding ({before}, {after}) on axis {axis} of a tensor "
                    f"shaped {tuple(x.shape)} must be smaller than that dimension ({size})",
                    help="pad less, or use mode='replicate' or 'constant'",
                )
            if mode == "circular" and max(before, after) > size:
                raise ShapeError(
                    f"[pad] circular padding ({before}, {after}) on axis {axis} of a tensor "
                    f"shaped {tuple(x.shape)} cannot exceed that dimension ({size})",
                    help="pad at most the dimension's size, or use mode='replicate'",
                )
            if mode == "replicate" and size == 0 and before + after > 0:
                raise ShapeError(
                    f"[pad] replicate padding on axis {axis} of a tensor shaped "
                    f"{tuple(x.shape)} has no edge value to repeat (the dimension is empty)",
                    help="use mode='constant' to pad an empty dimension",
                )

    def forward(self, ctx, xp, x, *, widths, mode, value):
        # One allocation, one copy of the input and border copies: several times cheaper than
        # xp.pad's general machinery.
        ctx.input_shape = x.shape
        out_shape = tuple(s + b + a for s, (b, a) in zip(x.shape, widths))
        if mode == "constant":
            out = xp.full(out_shape, value, dtype=x.dtype)
            out[_central(x.shape, widths)] = x
            return out
        out = xp.empty(out_shape, dtype=x.dtype)
        central = _central(x.shape, widths)
        out[central] = x
        for axis, (before, after) in enumerate(widths):
            if before or after:
                # Axes before this one are already padded in full; later ones only centrally.
                _fill_border(out, central[axis + 1 :], axis, before, after, x.shape[axis], mode)
        return out

    def backward(self, ctx, grad):
        widths, mode = ctx.attrs["widths"], ctx.attrs["mode"]
        if mode == "constant":
            return (grad.getitem(_central(ctx.input_shape, widths)),)
        return (grad.pad_adjoint(widths, mode),)

    def to_onnx(self, emit, inputs, output, attrs):
        widths = attrs["widths"]
        pads = [before for before, _ in widths] + [after for _, after in widths]
        mode = PAD_MODES[attrs["mode"]]
        if mode == "wrap" and emit.opset < 19:
            raise BuildingAIError(
                "[pad] circular padding needs ONNX opset 19 or later",
                help="export with opset=19",
            )
        operands = [inputs[0], emit.ints(pads)]
        if mode == "constant":
            operands.append(emit.scalar(attrs["value"], inputs[0]))
        emit.node("Pad", operands, output, mode=mode)


class PadAdjoint(CopyOp):
    """The adjoint of a reflect/replicate/circular ``pad``: each input element of the pad receives
    the sum of the output values that were copied from it. Written with slices (a scatter-add
    would be several times slower); its gradient is the pad itself."""

    name = "pad_adjoint"
    save_inputs = False

    def infer(self, grad, *, widths, mode) -> ValueSpec:
        with symbolic_sizes(self.name):
            shape = tuple(s - before - after for s, (before, after) in zip(grad.shape, widths))
        return grad.with_shape(shape)

    def cost(self, grad, *, widths, mode) -> tuple:
        out = self.infer(grad, widths=widths, mode=mode)
        with symbolic_sizes(self.name):
            return (grad.numel - out.numel, grad.nbytes, out.nbytes)  # one add per border value

    def forward(self, ctx, xp, grad, *, widths, mode):
        for axis, (before, after) in enumerate(widths):
            if before or after:
                grad = _fold_axis(grad, axis, before, after, mode)
        return grad

    def backward(self, ctx, grad):
        return (grad.pad(ctx.attrs["widths"], mode=ctx.attrs["mode"]),)


def _fold_axis(padded, axis: int, before: int, after: int, mode: str):
    """Undo one axis of a pad: add the border values onto the positions they copied."""

    def along(start, stop, step=None):
        return (slice(None),) * axis + (slice(start, stop, step),)

    size = padded.shape[axis] - before - after
    folded = padded[along(before, before + size)].copy()
    left = padded[along(0, before)]
    right = padded[along(before + size, None)]
    if mode == "reflect":
        # output position -k (k = 1..before) copied input k; position size - 1 + k copied
        # input size - 1 - k: both borders land mirrored, next to (not on) the edges.
        if before:
            folded[along(1, before + 1)] += padded[along(before - 1, None, -1)]
        if after:
            folded[along(size - 1 - after, size - 1)] += right[along(None, None, -1)]
    elif mode == "replicate":
        if before:
            folded[along(0, 1)] += left.sum(axis=axis, keepdims=True)
        if after:
            folded[along(size - 1, size)] += right.sum(axis=axis, keepdims=True)
    else:  # circular: the left border copied the last elements, the right border the first
        if before:
            folded[along(size - before, size)] += left
        if after:
            folded[along(0, after)] += right
    return folded


def _fill_border(out, later: tuple, axis: int, before: int, after: int, size: int, mode: str):
    """Fill the border of one axis of ``out`` in place from its central ``size`` elements."""

    def along(start, stop, step=None):
        return (slice(None),) * axis + (slice(start, stop, step),) + later

    end = before + size  # one past the last original element
    if mode == "reflect":
        # output position -k (k = 1..before) copies input k: mirror around the edge element
        if before:
            out[along(0, before)] = out[along(2 * before, before, -1)]
        if after:
            stop = end - 2 - after
            out[along(end, end + after)] = out[along(end - 2, stop if stop >= 0 else None, -1)]
    elif mode == "replicate":
        if before:
            out[along(0, before)] = out[along(before, before + 1)]
        if after:
            out[along(end, end + after)] = out[along(end - 1, end)]
    else:  # circular: the left border repeats the last elements, the right border the first
        if before:
            out[along(0, before)] = out[along(end - before, end)]
        if after:
            out[along(end, end + after)] = out[along(before, before + after)]


def _central(shape: tuple, widths: tuple) -> tuple:
    """The index of the original elements inside the padded output."""
    return tuple(slice(before, before + size) for size, (before, _) in zip(shape, widths))


class Contiguous(CopyOp):
    """A C-ordered copy (the public function skips it when the input is already C-ordered)."""

    name = "contiguous"
    save_inputs = False

    def infer(self, x) -> ValueSpec:
        return x

    def forward(self, ctx, xp, x):
        return x.copy(order="C")

    def backward(self, ctx, grad):
        return (grad,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Identity", inputs, output)


SQUEEZE, UNSQUEEZE, CONCATENATE = Squeeze(), Unsqueeze(), Concatenate()
PAD, PAD_ADJOINT, CONTIGUOUS = Pad(), PadAdjoint(), Contiguous()
