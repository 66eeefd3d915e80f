"""Linear algebra primitives: matmul, the fused linear layer, einsum.

Every backward rule is itself written with these ops, so derivatives of any order flow through
matrix products and contractions. The array helpers ``matmul_array``, ``linear_array`` and
``einsum_array`` are the reference computations; other ops' forwards call them too.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend.precision import MULTIPLIED_AS_STORED, gemm_operand, gemm_result_dtype
from ..errors import DTypeError, ShapeError
from .abstract import ValueSpec, broadcast_shapes, bytes_of, prod, total
from .activation import ReluAfter
from .base import Op
from .reduce import SUM


def _broadcast_batch(left: tuple, right: tuple) -> tuple | None:
    """The broadcast of two batch shapes, or None when they do not broadcast."""
    shape = []
    for index in range(1, max(len(left), len(right)) + 1):
        a = left[-index] if index <= len(left) else 1
        b = right[-index] if index <= len(right) else 1
        if a != b and a != 1 and b != 1:
            return None
        shape.append(max(a, b) if a != 0 and b != 0 else 0)
    return tuple(reversed(shape))


def multiply(xp, a, b):
    """``a @ b`` for a: (..., n, k) and b: (..., k, m), batch dimensions broadcast, in the
    operands' dtype.

    A batch against one matrix, a: (B, n, k) and b: (k, m), is one product of all B * n rows
    with b rather than B products of n rows: its rows are the batch folded into one matrix.
    """
    if b.ndim == 2:
        if a.ndim == 2:
            return a.dot(b)  # two matrices: ``dot`` skips matmul's broadcasting
        if a.ndim > 2:
            # a view when a's rows are contiguous, else one copy; the row count is explicit,
            # as -1 cannot be inferred when the inner dimension is 0
            rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
            return rows.dot(b).reshape(*a.shape[:-1], b.shape[1])
    return xp.matmul(a, b)


def in_math_precision(product, xp, a, b):
    """``product(xp, a, b)`` in the math precision in force (``backend/precision.py``):
    float16/bfloat16 operands, and float32 ones under "bf16"/"fp16", are multiplied as float32
    operands and the result rounded once to the product's dtype."""
    result_dtype = gemm_result_dtype(a, b)
    if result_dtype is None:
        return product(xp, a, b)
    return product(xp, gemm_operand(a), gemm_operand(b)).astype(result_dtype, copy=False)


def matmul_array(xp, a, b):
    """``a @ b`` for arrays of rank >= 2 (batch dimensions broadcast), in the operands' dtype as
    PyTorch gives it, in the math precision in force."""
    result_dtype = gemm_result_dtype(a, b)
    if result_dtype is None and a.ndim == 2 == b.ndim:
        return a.dot(b)  # two matrices, multiplied as they are (multiply's first case)
    if a.ndim < 2 or b.ndim < 2:  # xp.matmul would accept vectors, with other semantics
        raise ValueError("matmul operands need rank >= 2")
    if result_dtype is not None:  # half operands, or float32 rounded to a lower precision first
        return multiply(xp, gemm_operand(a), gemm_operand(b)).astype(result_dtype, copy=False)
    return multiply(xp, a, b)


def linear_array(xp, x, weight, bias=None, product=multiply):
    """``x @ weight.T + bias`` for x: (..., in), weight: (out, in), bias: (out,) or None, in
    the math precision in force: the bias is added to the float32 product before its one
    rounding. ``product(xp, a, b)`` multiplies the prepared operands (``multiply``)."""
    result_dtype = gemm_result_dtype(x, weight)
    if result_dtype is not None:
        if bias is not None:
            result_dtype = np.result_type(result_dtype, bias.dtype)
            bias = bias.astype(np.float32) if bias.dtype.itemsize == 2 else bias
        x, weight = gemm_operand(x), gemm_operand(weight)
    out = product(xp, x, weight.T) if x.ndim > 1 else x.dot(weight.T)
    if bias is not None:
        if bias.dtype is out.dtype or out.dtype == xp.result_type(out, bias):
            out += bias  # in place: the product is a fresh array nobody else holds
        else:
            out = out + bias
    return out if result_dtype is None else out.astype(result_dtype, copy=False)


def einsum_array(xp, equation: str, *arrays, optimize=False):
    """``xp.einsum`` that also takes ml_dtypes' floats (bfloat16), which NumPy's einsum rejects:
    those are contracted in float32 and the result given in their own dtype."""
    if not any(array.dtype.kind == "V" for array in arrays):
        return xp.einsum(equation, *arrays, optimize=optimize)
    dtype = xp.result_type(*arrays)
    widened = [array.astype(xp.float32) if array.dtype.kind == "V" else array for array in arrays]
    return xp.einsum(equation, *widened, optimize=optimize).astype(dtype)


def _matmul(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """``MATMUL`` with only the flags that are set among its attributes."""
    if transpose_a:
        if transpose_b:
            return MATMUL(a, b, transpose_a=True, transpose_b=True)
        return MATMUL(a, b, transpose_a=True)
    if transpose_b:
        return MATMUL(a, b, transpose_b=True)
    return MATMUL(a, b)


def swap_last_two(shape: tuple) -> tuple:
    """A shape with its last two extents exchanged: the shape of a matrix stack's transpose."""
    return (*shape[:-2], shape[-1], shape[-2])


class MatMul(Op):
    """Matrix product of two arrays of rank >= 2, with batch dimensions broadcast.

    a: (..., n, k), b: (..., k, m) -> (..., n, m). (The public ``matmul`` turns 1-D operands into
    matrices first, as NumPy does.) ``transpose_a`` / ``transpose_b`` multiply by an operand's
    transpose in its last two axes (a: (..., k, n) or b: (..., m, k)) without a transpose op, as
    GEMM routines do: every gradient of a product is such a product, so backward makes one op per
    gradient instead of a transpose and a product.
    """

    name = "matmul"
    autocast = "low"

    # No ``check``: the backend rejects every bad shape, and ``describe_failure`` explains it.
    def describe_failure(self, exc, arrays, attrs):
        a, b = arrays[0], arrays[1]
        if a.ndim < 2 or b.ndim < 2:
            return ShapeError(
                f"[matmul] the op multiplies arrays of rank >= 2, got {tuple(a.shape)} and "
                f"{tuple(b.shape)}",
                help="call buildingai.matmul (or a @ b), which also takes vectors",
            )
        shape_a = swap_last_two(a.shape) if attrs.get("transpose_a") else tuple(a.shape)
        shape_b = swap_last_two(b.shape) if attrs.get("transpose_b") else tuple(b.shape)
        if shape_a[-1] != shape_b[-2]:
            return ShapeError(
                f"[matmul] cannot multiply {shape_a} by {shape_b}: inner dimensions "
                f"{shape_a[-1]} != {shape_b[-2]}",
                help="the last dimension of the left operand must equal the second-to-last of the "
                "right one; transpose an operand (x.T or x.swapaxes(-1, -2)) if needed",
            )
        if _broadcast_batch(shape_a[:-2], shape_b[:-2]) is None:
            return ShapeError(
                f"[matmul] cannot multiply {shape_a} by {shape_b}: batch dimensions "
                f"{shape_a[:-2]} and {shape_b[:-2]} do not broadcast",
                help="batch dimensions (all but the last two) must match or be 1; reshape or "
                "unsqueeze an operand to align them",
            )
        return super().describe_failure(exc, arrays, attrs)

    def forward(self, ctx, xp, a, b, *, transpose_a=False, transpose_b=False):
        if transpose_a:
            a = a.swapaxes(-1, -2)  # a strided view: the product reads it transposed, no copy
        if transpose_b:
            b = b.swapaxes(-1, -2)
        if a.ndim == 2 == b.ndim and a.dtype is b.dtype and a.dtype in MULTIPLIED_AS_STORED:
            return a.dot(b)  # matmul_array's commonest case, without its two calls
        return matmul_array(xp, a, b)

    def infer(self, a, b, *, transpose_a=False, transpose_b=False):
        shape_a = swap_last_two(a.shape) if transpose_a and a.ndim >= 2 else tuple(a.shape)
        shape_b = swap_last_two(b.shape) if transpose_b and b.ndim >= 2 else tuple(b.shape)
        if len(shape_a) < 2 or len(shape_b) < 2 or shape_a[-1] != shape_b[-2]:
            raise ShapeError(
                f"[matmul] cannot multiply {shape_a} by {shape_b}",
                help="both operands need rank >= 2, and the last dimension of the left one must "
                "equal the second-to-last of the right one",
            )
        try:
            batch = broadcast_shapes(shape_a[:-2], shape_b[:-2])
        except ShapeError:
            raise ShapeError(
                f"[matmul] cannot multiply {shape_a} by {shape_b}: batch dimensions "
                f"{shape_a[:-2]} and {shape_b[:-2]} do not broadcast",
                help="batch dimensions (all but the last two) must match or be 1",
            ) from None
        shape = (*batch, shape_a[-2], shape_b[-1])
        return ValueSpec(shape, np.result_type(a.dtype, b.dtype), a.device)

    def cost(self, a, b, *, transpose_a=False, transpose_b=False):
        out = self.infer(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
        inner = a.shape[-2] if transpose_a else a.shape[-1]
        return 2 * out.numel * inner, bytes_of(a, b), out.nbytes

    def backward(self, ctx, grad):
        # C = A' B' with A' = A or A^T, B' = B or B^T: dA' = G B'^T and dB' = A'^T G, and the
        # gradient of a transposed operand is the transpose of that: each is one product.
        a, b = ctx.inputs
        transpose_a = ctx.attrs.get("transpose_a", False)
        transpose_b = ctx.attrs.get("transpose_b", False)
        grad_a = grad_b = None
        if a.requires_grad:
            if transpose_a:  # dA = (G B'^T)^T = B' G^T
                grad_a = _matmul(b, grad, transpose_a=transpose_b, transpose_b=True)
            else:
                grad_a = _matmul(grad, b, transpose_b=not transpose_b)
        if b.requires_grad:
            if b.ndim == 2 and a.ndim > 2 and not transpose_a:
                # A batched input against one weight matrix: fold the batch into the rows and
                # make one GEMM, instead of a batch of products summed afterwards.
                rows_a, rows_grad = _rows(a), _rows(grad)
                if transpose_b:  # dB = (A^T G)^T = G^T A
                    grad_b = _matmul(rows_grad, rows_a, transpose_a=True)
                else:
                    grad_b = _matmul(rows_a, rows_grad, transpose_a=True)
            elif transpose_b:  # dB = (A'^T G)^T = G^T A'
                grad_b = _matmul(grad, a, transpose_a=True, transpose_b=transpose_a)
            else:
                grad_b = _matmul(a, grad, transpose_a=not transpose_a)
        return grad_a, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        a, b = inputs
        if attrs.get("transpose_a"):
            a = emit.node("Transpose", [a], perm=_last_two_swapped(emit.rank(a)))
        if attrs.get("transpose_b"):
            b = emit.node("Transpose", [b], perm=_last_two_swapped(emit.rank(b)))
        emit.node("MatMul", [a, b], output)


def _rows(tensor):
    """A (..., k) tensor as a matrix (rows, k)."""
    rows = 1
    for extent in tensor.shape[:-1]:  # explicit: -1 cannot be inferred when k is 0
        rows *= extent
    return tensor.reshape(rows, tensor.shape[-1])


def _last_two_swapped(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


class Linear(Op):
    """The affine map of a dense layer, in PyTorch's weight layout, fused into one op.

    x: (..., in), weight: (out, in), bias: (out,) or None -> (..., out) = x @ weight.T + bias.
    One op instead of transpose + matmul + add: less dispatch, no temporary for the sum, and a
    backward that folds batch dimensions into a single GEMM for the weight gradient.
    """

    name = "linear"
    autocast = "low"

    def check(self, x, weight, bias=None):
        if x.dtype.kind not in "fV":  # NumPy would promote it silently (int64 @ float32: float64)
            raise DTypeError(
                f"[linear] input must be a floating-point tensor, got {x.dtype} of shape "
                f"{tuple(x.shape)} (weight {weight.dtype} {tuple(weight.shape)})",
                help=f"convert it first: x.float(), or x.astype('{weight.dtype}') to match the "
                "weight",
            )
        if weight.ndim != 2:
            raise ShapeError(
                f"[linear] weight must be 2-D (out_features, in_features), got {tuple(weight.shape)}"
            )
        if x.ndim < 1 or x.shape[-1] != weight.shape[1]:
            raise ShapeError(
                f"[linear] input {tuple(x.shape)} does not fit weight {tuple(weight.shape)}: the "
                f"last input dimension must be in_features = {weight.shape[1]}",
                help="the weight is laid out (out_features, in_features), as in PyTorch",
            )
        if bias is not None and bias.shape != (weight.shape[0],):
            raise ShapeError(
                f"[linear] bias {tuple(bias.shape)} does not fit weight {tuple(weight.shape)}: "
                f"expected ({weight.shape[0]},)"
            )

    def forward(self, ctx, xp, x, weight, bias=None):
        return linear_array(xp, x, weight, bias)

    def infer(self, x, weight, bias=None):
        if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
            raise ShapeError(
                f"[linear] input {x.shape} does not fit weight {weight.shape}",
                help="the weight is laid out (out_features, in_features) and in_features must "
                "be the input's last dimension",
            )
        dtypes = [x.dtype, weight.dtype] + ([] if bias is None else [bias.dtype])
        shape = (*x.shape[:-1], weight.shape[0])
        return ValueSpec(shape, np.result_type(*dtypes), x.device)

    def cost(self, x, weight, bias=None):
        out = self.infer(x, weight, bias)
        flops = 2 * out.numel * weight.shape[1]  # a multiply-add per weight per input row
        if bias is not None:
            flops = total((flops, out.numel))
        return flops, bytes_of(x, weight, bias), out.nbytes

    def backward(self, ctx, grad):
        x, weight, *rest = ctx.inputs
        bias = rest[0] if rest else None
        grad_x = grad_weight = grad_bias = None
        if bias is not None and hasattr(bias, "requires_grad") and bias.requires_grad:
            # first, while the gradient its op just wrote is still in cache
            grad_bias = SUM(grad, axes=tuple(range(grad.ndim - 1)), keepdims=False)
        if x.requires_grad:
            grad_x = grad @ weight
        if weight.requires_grad:
            rows_grad, rows_x = (grad, x) if x.ndim == 2 else (_rows(grad), _rows(x))
            grad_weight = _matmul(rows_grad, rows_x, transpose_a=True)
        return (grad_x, grad_weight) if bias is None else (grad_x, grad_weight, grad_bias)

    def to_onnx(self, emit, inputs, output, attrs):
        x, weight, *rest = inputs
        if emit.rank(x) == 2:  # Gemm takes matrices only
            emit.node("Gemm", [x, weight, *rest], output, transB=1)
            return
        weight_t = emit.node("Transpose", [weight], perm=[1, 0])
        if not rest:
            emit.node("MatMul", [x, weight_t], output)
            return
        emit.node("Add", [emit.node("MatMul", [x, weight_t]), rest[0]], output)


class LinearRelu(ReluAfter, Linear):
    """``relu(linear(x, weight, bias))`` as one op: what the graph passes make of a linear
    layer whose only reader is a ReLU (``graph/passes/layer_activation.py``), so that the
    product is rectified in place, with no second step, array or pass. Inputs and shapes as
    ``linear``'s.
    """

    name = "linear_relu"

    def forward(self, ctx, xp, x, weight, bias=None):
        out = linear_array(xp, x, weight, bias)
        return xp.maximum(out, 0, out=out)  # in place: the product is a fresh array; NaN stays


class Einsum(Op):
    """Einstein summation over explicit subscripts.

    ``equation`` is normalised by the public ``einsum``: every operand and the output have
    explicit labels (no ellipsis), no label repeats within one operand, and operands sharing a
    label have equal sizes there. Those rules make every gradient another einsum.
    """

    name = "einsum"
    autocast = "low"

    def check(self, *arrays, equation):
        inputs, _ = equation.split("->")
        sizes: dict[str, int] = {}
        for labels, array in zip(inputs.split(","), arrays):
            for label, extent in zip(labels, array.shape):
                if sizes.setdefault(label, extent) != extent:
                    shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
                    raise ShapeError(
                        f"[einsum] label '{label}' has size {sizes[label]} and {extent} in "
                        f"'{equation}' with operands {shapes}",
                        help="dimensions that share a label must have the same size (or 1)",
                    )

    def forward(self, ctx, xp, *arrays, equation):
        return einsum_array(xp, equation, *arrays, optimize=worth_a_path(equation, arrays))

    def infer(self, *specs, equation):
        sizes = _label_sizes(equation, specs)
        output = equation.split("->")[1]
        dtype = np.result_type(*(spec.dtype for spec in specs))
        return ValueSpec(tuple(sizes[label] for label in output), dtype, specs[0].device)

    def cost(self, *specs, equation):
        """Evaluated naively, every point of the label space costs one multiply-add per pair of
        operands (a single operand: one addition); the planner may find cheaper orders."""
        work = prod(tuple(_label_sizes(equation, specs).values()))
        flops = work if len(specs) == 1 else 2 * (len(specs) - 1) * work
        return flops, bytes_of(*specs), self.infer(*specs, equation=equation).nbytes

    def backward(self, ctx, grad):
        inputs, output = ctx.attrs["equation"].split("->")
        terms = inputs.split(",")
        operands = ctx.inputs
        grads = []
        for position, operand in enumerate(operands):
            if not operand.requires_grad:
                grads.append(None)
                continue
            others = [term for k, term in enumerate(terms) if k != position]
            available = set(output).union(*others)
            # Labels only this operand carries were summed away: the gradient is constant along
            # them, so compute it without them and broadcast back.
            kept = "".join(label for label in terms[position] if label in available)
            equation = ",".join([output, *others]) + "->" + kept
            other_operands = [x for k, x in enumerate(operands) if k != position]
            part = EINSUM(grad, *other_operands, equation=equation)
            if kept != terms[position]:
                keep_shape = tuple(
                    extent if label in available else 1
                    for label, extent in zip(terms[position], operand.shape)
                )
                part = part.reshape(keep_shape).expand(tuple(operand.shape))
            grads.append(part)
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Einsum", inputs, output, equation=attrs["equation"])


def _label_sizes(equation: str, specs) -> dict:
    """The size of every label of ``equation`` in the operands ``specs``, which must agree (as
    ``check`` requires)."""
    sizes: dict = {}
    for labels, spec in zip(equation.split("->")[0].split(","), specs):
        for label, extent in zip(labels, spec.shape):
            if sizes.setdefault(label, extent) != extent:
                raise ShapeError(
                    f"[einsum] label '{label}' has size {sizes[label]!r} and {extent!r} in "
                    f"'{equation}'",
                    help="dimensions that share a label must have the same size",
                )
    return sizes


# Work (product of all label sizes) below which finding a contraction path costs what it saves.
_PATH_MIN_WORK = 1 << 16


def worth_a_path(equation: str, arrays) -> bool:
    """Whether to let the backend plan the contraction (``optimize=True``)."""
    if len(arrays) != 2:
        return len(arrays) > 2  # three or more operands: the order of contraction matters most
    sizes: dict[str, int] = {}
    for labels, array in zip(equation.split("->")[0].split(","), arrays):
        sizes.update(zip(labels, array.shape))
    work = 1
    for extent in sizes.values():
        work *= extent
    return work >= _PATH_MIN_WORK


MATMUL, LINEAR, LINEAR_RELU, EINSUM = MatMul(), Linear(), LinearRelu(), Einsum()
