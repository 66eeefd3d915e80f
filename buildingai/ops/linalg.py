"""Linear algebra primitives: matmul, the fused linear layer, einsum.

Every backward rule is itself written with these ops, so derivatives of any order flow through
matrix products and contractions.
"""

from __future__ import annotations

import numpy as np

from ..accel.kernels import compiled
from ..backend.precision import gemm_operand, gemm_result_dtype
from ..backend.threads import blas_called, gemm_threads, one_pool, own_blas, parallel_for
from ..errors import ShapeError
from .abstract import ValueSpec, broadcast_shapes, bytes_of, prod, total
from .base import Op
from .reduce import SUM

# A product of at least this many multiply-adds is cut across BuildingAI's threads when they run
# the GEMMs (``set_num_threads(..., gemm=True)``): below it the hand-off costs more than it saves.
# Handing a part to the Python pool costs several times what numba's threads take
# (docs/design_notes/performance.md), so products stay whole longer without the compiled tier.
SPLIT_MULTIPLY_ADDS = 1 << 22
PYTHON_SPLIT_MULTIPLY_ADDS = 1 << 24


# NumPy's OpenBLAS runs a product of at most this many multiply-adds on the calling thread
# (65536 x its GEMM_MULTITHREAD_THRESHOLD, 4): smaller products leave its threads asleep.
BLAS_THREADED_MULTIPLY_ADDS = 1 << 18


def _floats(a, b) -> bool:
    """Whether a and b are NumPy arrays of one float dtype (float16/32/64: ml_dtypes' and CuPy
    arrays stay whole, on NumPy's or CuPy's own call)."""
    return (
        a.dtype == b.dtype
        and a.dtype.kind == "f"
        and isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
    )


def _splits(a, b, length: int, multiply_adds: int) -> bool:
    """Whether a product of ``multiply_adds``, cut along an output axis ``length`` long, is cut
    across threads."""
    threads = gemm_threads()
    return (
        threads > 1
        and length >= 2 * threads
        and multiply_adds >= SPLIT_MULTIPLY_ADDS
        and _floats(a, b)
    )


def _on_own_blas(entry_work: int, a, b) -> bool:
    """Whether a product whose matrices each take ``entry_work`` multiply-adds goes to
    BuildingAI's own BLAS even uncut: in one pool on it, every product NumPy's BLAS would
    thread, so that NumPy's threads never wake for BuildingAI."""
    return own_blas() and entry_work > BLAS_THREADED_MULTIPLY_ADDS and _floats(a, b)


def _compiled_product(a, b, out, work: int, by_columns: bool, cut: bool, own: bool) -> bool:
    """``compiled.split_product`` cut when asked (else uncut on BuildingAI's own BLAS, when
    ``own``); True when it ran."""
    if cut and compiled.split_product(a, b, out, work, by_columns):
        return True
    return own and compiled.split_product(a, b, out, work, by_columns, cut=False)


# In one pool, a matrix-vector product of a matrix this large or larger runs on BuildingAI's
# own BLAS, on one thread; a smaller one on NumPy's, whose threads share it faster than numba's
# wake up for it (docs/design_notes/performance.md).
OWN_GEMV_ELEMENTS = 1 << 20


def _matrix_vector(a, b, out, work: int):
    """``a.dot(b)`` in one pool where a has one row or b one column: one GEMV (a one-row GEMM
    is several times slower), on BuildingAI's own BLAS for a large matrix, else on NumPy's,
    noting the call where that BLAS may thread it."""
    if own_blas() and work >= OWN_GEMV_ELEMENTS and _floats(a, b):
        result = np.empty((a.shape[0], b.shape[1]), a.dtype) if out is None else out
        if compiled.matrix_vector(a, b, result):
            return result
    if own_blas() and work > BLAS_THREADED_MULTIPLY_ADDS:
        blas_called()
    return a.dot(b) if out is None else np.dot(a, b, out=out)


def _dot(a, b, out=None):
    """``a.dot(b)`` for 2-D NumPy arrays (into ``out`` if given): one BLAS call, or in one pool
    one single-threaded BLAS call per range of output rows, or of output columns where ``b`` is
    the larger operand (each thread then reads only its part of it), on BuildingAI's threads:
    numba's (``compiled.split_product``) where the compiled tier runs, else the Python pool."""
    if not one_pool():  # the default: BLAS threads the product itself
        blas_called()
        return a.dot(b) if out is None else np.dot(a, b, out=out)
    (rows, inner), columns = a.shape, b.shape[1]
    work = rows * inner * columns
    if rows == 1 or columns == 1:
        return _matrix_vector(a, b, out, work)
    by_columns = b.size > a.size
    cut = _splits(a, b, columns if by_columns else rows, work)
    own = _on_own_blas(work, a, b)
    if not (cut or own):
        return a.dot(b) if out is None else np.dot(a, b, out=out)
    if out is None:
        out = np.empty((rows, columns), a.dtype)
    if _compiled_product(a[None], b[None], out[None], work, by_columns, cut, own):
        return out
    if own_blas() or not cut or work < PYTHON_SPLIT_MULTIPLY_ADDS:
        blas_called()  # (NumPy's BLAS, with its threads where it is not held)
        return np.dot(a, b, out=out)

    def row_range(start: int, stop: int) -> None:
        np.dot(a[start:stop], b, out=out[start:stop])

    def column_range(start: int, stop: int) -> None:
        out[:, start:stop] = a.dot(b[:, start:stop])

    if by_columns:
        parallel_for(column_range, columns, work=work)
    else:
        parallel_for(row_range, rows, work=work)
    return out


def _split_matmul(a, b):
    """``np.matmul`` of two stacks with the same batch shape in one pool: cut across
    BuildingAI's threads by batch entries, or by rows when there are fewer entries than
    threads; or uncut on BuildingAI's own BLAS. None where it does not apply."""
    if not one_pool() or a.ndim < 3 or a.shape[:-2] != b.shape[:-2]:
        return None
    rows, inner, columns = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = int(np.prod(a.shape[:-2]))
    work = batch * rows * inner * columns
    if rows == 1 or columns == 1:  # matrix-vector products: NumPy's, faster than GEMMs
        return None
    cut = _splits(a, b, batch * rows, work)
    own = _on_own_blas(rows * inner * columns, a, b)
    if not (cut or own):
        return None
    out = np.empty(a.shape[:-1] + (columns,), a.dtype)
    stacks = a.reshape(batch, rows, inner), b.reshape(batch, inner, columns)
    results = out.reshape(batch, rows, columns)
    if _compiled_product(*stacks, results, work, False, cut, own):
        return out
    if own_blas() or not cut or work < PYTHON_SPLIT_MULTIPLY_ADDS:
        blas_called()
        np.matmul(*stacks, out=results)
        return out
    if batch < 2 * gemm_threads():
        for index in range(batch):
            _dot(stacks[0][index], stacks[1][index], out=results[index])
        return out

    def entries(start: int, stop: int) -> None:
        np.matmul(stacks[0][start:stop], stacks[1][start:stop], out=results[start:stop])

    parallel_for(entries, batch, work=work)
    return out


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


def matrix_product(xp, a, b):
    """``a @ b`` for a of rank >= 2, computed as few GEMMs as possible, in the math precision in
    force (``backend/precision.py``: float16/bfloat16 operands and reduced precisions run a
    float32 GEMM on prepared operands).

    NumPy's ``matmul`` runs one GEMM per batch entry, even when ``b`` is a single matrix; with a
    (32, 64, 128) input that is 32 small GEMMs, each paying the BLAS threading set-up. Folding the
    batch into the rows makes one (2048, 128) GEMM. For two matrices, ``ndarray.dot`` skips the
    ufunc machinery of ``matmul``.
    """
    if a.ndim < 2 or b.ndim < 2:  # NumPy would accept vectors, with other semantics
        raise ValueError("matmul operands need rank >= 2")
    return _in_math_precision(_folded_product, xp, a, b)


def _in_math_precision(product, xp, a, b):
    """``product(xp, a, b)``, on prepared float32 operands and cast back where the math
    precision asks for it (``gemm_result_dtype``)."""
    result_dtype = gemm_result_dtype(a, b)
    if result_dtype is None:
        return product(xp, a, b)
    return product(xp, gemm_operand(a), gemm_operand(b)).astype(result_dtype, copy=False)


def _folded_product(xp, a, b):
    if b.ndim == 2:
        if a.ndim == 2:
            return _dot(a, b)
        # a view when a's rows are contiguous, else one copy; the row count is explicit, as -1
        # cannot be inferred when the inner dimension is 0
        rows = a.reshape(int(np.prod(a.shape[:-1])), a.shape[-1])
        return _dot(rows, b).reshape(*a.shape[:-1], b.shape[1])
    return _matmul_array(xp, a, b)


def matmul_array(xp, a, b):
    """``xp.matmul(a, b)`` in the operands' dtype, as PyTorch gives it, in the math precision in
    force (as ``matrix_product``)."""
    return _in_math_precision(_matmul_array, xp, a, b)


def _matmul_array(xp, a, b):
    out = _split_matmul(a, b) if xp is np else None
    if out is not None:
        return out
    if not own_blas() or a.shape[-2] * a.shape[-1] * b.shape[-1] > BLAS_THREADED_MULTIPLY_ADDS:
        blas_called()  # (on BuildingAI's own BLAS, small products leave NumPy's threads asleep)
    # NumPy multiplies ml_dtypes' bfloat16 matrices into float32 (while ``dot`` keeps bfloat16)
    out = xp.matmul(a, b)
    if out.dtype != a.dtype and a.dtype.kind == "V":
        dtype = xp.result_type(a, b)
        if out.dtype != dtype:
            out = out.astype(dtype)
    return out


def einsum_array(xp, equation: str, *arrays, optimize=False):
    """``xp.einsum`` that also takes ml_dtypes' floats (bfloat16), which NumPy's einsum rejects:
    those are contracted in float32 and the result given in their own dtype."""
    if optimize:  # a contraction path hands pairs of operands to BLAS
        blas_called()
    if not any(array.dtype.kind == "V" for array in arrays):
        return xp.einsum(equation, *arrays, optimize=optimize)
    dtype = xp.result_type(*arrays)
    widened = [array.astype(xp.float32) if array.dtype.kind == "V" else array for array in arrays]
    return xp.einsum(equation, *widened, optimize=optimize).astype(dtype)


def _matmul(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """``MATMUL`` with only the flags that are set among its attributes."""
    attrs = {}
    if transpose_a:
        attrs["transpose_a"] = True
    if transpose_b:
        attrs["transpose_b"] = True
    return MATMUL(a, b, **attrs)


def swap_last_two(shape: tuple) -> tuple:
    """A shape with its last two extents exchanged: the shape of a matrix stack's transpose."""
    return (*shape[:-2], shape[-1], shape[-2])


class MatMul(Op):
    """Matrix product of two arrays of rank >= 2, with batch dimensions broadcast.

    a: (..., n, k), b: (..., k, m) -> (..., n, m). (The public ``matmul`` turns 1-D operands into
    matrices first, as NumPy does.) ``transpose_a`` / ``transpose_b`` multiply by an operand's
    transpose in its last two axes (a: (..., k, n) or b: (..., m, k)) without a transpose op, as
    BLAS does: every gradient of a product is such a product, so backward makes one op per
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
            a = a.swapaxes(-1, -2)  # a strided view: BLAS reads it transposed, no copy
        if transpose_b:
            b = b.swapaxes(-1, -2)
        if b.ndim == 2 and a.ndim == 2 and gemm_result_dtype(a, b) is None:  # the hottest case
            if one_pool():
                return _dot(a, b)
            blas_called()
            return a.dot(b)
        return matrix_product(xp, a, b)

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
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise ShapeError(
                f"[linear] bias {tuple(bias.shape)} does not fit weight {tuple(weight.shape)}: "
                f"expected ({weight.shape[0]},)"
            )

    def forward(self, ctx, xp, x, weight, bias=None):
        result_dtype = gemm_result_dtype(x, weight)
        if result_dtype is not None:  # a float32 GEMM, the bias added before the one rounding
            if bias is not None:
                result_dtype = np.result_type(result_dtype, bias.dtype)
                bias = bias.astype(np.float32) if bias.dtype.itemsize == 2 else bias
            x, weight = gemm_operand(x), gemm_operand(weight)
        out = _folded_product(xp, x, weight.T) if x.ndim > 1 else x.dot(weight.T)
        if bias is not None:
            if out.dtype == xp.result_type(out, bias):
                out += bias  # in place: the product is a fresh array nobody else holds
            else:
                out = out + bias
        return out if result_dtype is None else out.astype(result_dtype, copy=False)

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
        grad_x = grad @ weight if x.requires_grad else None
        grad_weight = grad_bias = None
        if weight.requires_grad:
            rows_grad, rows_x = (grad, x) if x.ndim == 2 else (_rows(grad), _rows(x))
            grad_weight = _matmul(rows_grad, rows_x, transpose_a=True)
        if bias is not None and hasattr(bias, "requires_grad") and bias.requires_grad:
            grad_bias = SUM(grad, axes=tuple(range(grad.ndim - 1)), keepdims=False)
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
        return einsum_array(xp, equation, *arrays, optimize=_worth_a_path(equation, arrays))

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


def _worth_a_path(equation: str, arrays) -> bool:
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


MATMUL, LINEAR, EINSUM = MatMul(), Linear(), Einsum()
