"""Matrix decompositions and the functions built on them: determinants, inverses, linear
solves, Cholesky, QR, the symmetric eigendecomposition, the SVD's singular vectors and the
pseudo-inverse. Every record maps a stack of matrices (..., m, n) with NumPy's ``linalg``.

Records have one output, so a decomposition with several factors is one record per factor
(``qr_q`` and ``qr_r``, ``eigvalsh`` and ``eigh_vectors``, ``svd_u`` and ``svd_vh`` beside
``svdvals``): asking for both factors runs the factorisation twice. In exchange each gradient
rule is the published formula for that factor alone (PyTorch's ``derivatives.yaml``), written
with Tensor ops over the other records, so derivatives of every order follow from them.

``det`` has a gradient everywhere: the cofactor matrix, computed from the SVD so that singular
matrices need no division. Second derivatives of ``det``, and first ones of ``logabsdet``, use
the inverse, so they raise ``LinAlgError`` at singular matrices (where they are infinite).
"""

from __future__ import annotations

import numpy as np

from ..errors import BuildingAIError, DTypeError, ShapeError
from .abstract import SymbolicSizeError, ValueSpec, bytes_of, prod
from .base import Op
from .creation import EYE
from .families import symbolic_sizes
from .linalg import MATMUL
from .shape import PAD
from .singular_values import SVDVALS


class LinAlgError(BuildingAIError, RuntimeError):
    """A matrix the computation cannot take: singular for an inverse or a solve, not
    positive-definite for a Cholesky factor (``torch.linalg.LinAlgError``)."""


# ----- checks, shared by check (arrays) and infer (specs) ----------------------------------------


def _check_matrices(op: str, *values, form: str = "(..., m, n)") -> None:
    for value in values:
        if value.ndim < 2:
            raise ShapeError(
                f"[{op}] needs matrices {form}, got a tensor shaped {tuple(value.shape)}",
                help="reshape a vector into a matrix first (x.unsqueeze(-1) or x.unsqueeze(0))",
            )
        if value.dtype.kind != "f" or value.dtype.itemsize < 4:
            raise DTypeError(
                f"[{op}] computes in float32 or float64, got {value.dtype}",
                help="convert the input with .float() or .double() first",
            )


def _check_square(op: str, x) -> None:
    _check_matrices(op, x, form="(..., n, n)")
    if x.shape[-1] != x.shape[-2]:
        raise ShapeError(
            f"[{op}] needs square matrices (..., n, n), got a tensor shaped {tuple(x.shape)}",
            help="use linalg.pinv or linalg.lstsq for rectangular matrices",
        )


def _smaller_extent(m, n):
    """min(m, n) for ints, or a symbolic size both share; else SymbolicSizeError."""
    if isinstance(m, int) and isinstance(n, int):
        return min(m, n)
    if m == n:
        return m
    raise SymbolicSizeError(
        f"cannot tell which of the matrix sizes {m!r} and {n!r} is smaller",
        help="fix the last two sizes in the TensorSpec, or give both the same name",
    )


def _cost(op: str, x, flops_per_matrix, inputs: tuple, out) -> tuple:
    """``(flops, bytes read, bytes written)``: ``flops_per_matrix(m, n, k)`` for each matrix of
    x: (..., m, n), with k = min(m, n)."""
    with symbolic_sizes(op):
        m, n = x.shape[-2], x.shape[-1]
        flops = prod(x.shape[:-2]) * flops_per_matrix(m, n, _smaller_extent(m, n))
        return (flops, bytes_of(*inputs), out.nbytes)


def _failing_matrix(x, factor) -> int:
    """The index (in the flattened batch) of the first matrix ``factor`` raises on."""
    matrices = x.reshape(-1, *x.shape[-2:])
    for index, matrix in enumerate(matrices):
        try:
            factor(matrix)
        except np.linalg.LinAlgError:
            return index
    return 0


def _which(x, index: int) -> str:
    return "the matrix" if x.ndim == 2 else f"matrix {index} of the batch (flattened)"


# ----- Tensor helpers for the backward rules ------------------------------------------------------


def _identity(like, size: int):
    """The (size, size) identity in the dtype and on the device of Tensor ``like``."""
    return EYE(rows=size, columns=size, dtype=like.dtype, device=str(like.device))


def _per_matrix(x):
    """A (...) Tensor as (..., 1, 1): one factor for each matrix of a (..., n, n) stack."""
    return x.reshape((*x.shape, 1, 1))


def _solve_right(a, b):
    """X with X a = b, for square a: (a^T \\ b^T)^T."""
    return SOLVE(a.mT, b.mT).mT


# ----- determinants --------------------------------------------------------------------------------


class Det(Op):
    """The determinant of each matrix. a: (..., n, n) -> (...).

    Its gradient is the cofactor matrix ``det(a) a^-T``, defined for singular matrices too.
    """

    name = "det"
    autocast = "float32"

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        _check_square(self.name, a)
        return ValueSpec(tuple(a.shape[:-2]), a.dtype, a.device)

    def cost(self, a) -> tuple:  # an LU factorisation: about 2n^3 / 3 flops, counted as n^3
        return _cost(self.name, a, lambda m, n, k: n * n * n, (a,), self.infer(a))

    def forward(self, ctx, xp, a):
        return xp.linalg.det(a)

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        return (_per_matrix(grad) * COFACTOR(a),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Det", inputs, output)


class Cofactor(Op):
    """The cofactor matrix ``det(a) a^-T`` (the transposed adjugate): the gradient of ``det``.

    a: (..., n, n) -> (..., n, n). With the SVD a = U diag(s) V^T it is
    ``det(U) det(V) U diag(c) V^T`` with c_i the product of the s_j for j != i, which needs no
    division, so singular matrices get the limit of the formula (as PyTorch's).
    """

    name = "cofactor"
    autocast = "float32"
    save_output = True

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        _check_square(self.name, a)
        return a

    def cost(self, a) -> tuple:  # an SVD and two products
        return _cost(self.name, a, lambda m, n, k: 10 * n * n * n, (a,), a)

    def forward(self, ctx, xp, a):
        u, s, vh = xp.linalg.svd(a)
        ones = xp.ones_like(s[..., :1])
        before = xp.cumprod(xp.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
        after = xp.cumprod(xp.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        others = before * after  # c_i = prod_{j < i} s_j * prod_{j > i} s_j
        orientation = xp.linalg.det(u) * xp.linalg.det(vh)  # +1 or -1
        return orientation[..., None, None] * ((u * others[..., None, :]) @ vh)

    def backward(self, ctx, grad):
        # <H, det(a) a^-T> = det(a) tr(a^-1 H), whose gradient in a is
        # tr(a^-1 H) cof(a) - det(a) (a^-1 H a^-1)^T
        (a,) = ctx.inputs
        try:
            inverse = INV(a)
        except LinAlgError:
            raise LinAlgError(
                "[det] second derivatives of the determinant at a singular matrix are not "
                "available (its first derivative, the cofactor matrix, is)",
                help="take first derivatives only at singular matrices",
            ) from None
        trace = (inverse.mT * grad).sum((-2, -1))
        return (
            _per_matrix(trace) * ctx.output - _per_matrix(DET(a)) * (inverse @ grad @ inverse).mT,
        )


class SlogdetSign(Op):
    """The sign of each determinant (-1, 0 or 1), as ``slogdet`` gives it. a: (..., n, n) ->
    (...). Piecewise constant: its gradient is zero, as in PyTorch."""

    name = "slogdet_sign"
    autocast = "float32"
    save_inputs = False

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        return DET.infer(a)

    def cost(self, a) -> tuple:
        return DET.cost(a)

    def forward(self, ctx, xp, a):
        return xp.linalg.slogdet(a)[0]

    def backward(self, ctx, grad):
        (a,) = ctx.inputs  # kept for its shape: the values are not read
        return (grad.new_zeros(tuple(a.shape)),)


class LogAbsDet(Op):
    """``log |det a|`` of each matrix, without forming det (which overflows for large
    matrices). a: (..., n, n) -> (...); -inf for a singular matrix. Gradient: ``a^-T``."""

    name = "logabsdet"
    autocast = "float32"
    save_output = True

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        return DET.infer(a)

    def cost(self, a) -> tuple:
        return DET.cost(a)

    def forward(self, ctx, xp, a):
        return xp.linalg.slogdet(a)[1]

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        if bool((ctx.output.array == -np.inf).any()):
            raise LinAlgError(
                "[slogdet] the gradient of logabsdet at a singular matrix is infinite",
                help="regularise the matrix (add a small multiple of the identity) first",
            )
        return (_per_matrix(grad) * INV(a).mT,)


# ----- inverse and solves --------------------------------------------------------------------------


class Inv(Op):
    """The inverse of each matrix. a: (..., n, n) -> (..., n, n); a singular matrix raises
    ``LinAlgError``. Gradient: ``-a^-T G a^-T``, from the output."""

    name = "inv"
    autocast = "float32"
    save_inputs = False
    save_output = True

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        _check_square(self.name, a)
        return a

    def cost(self, a) -> tuple:  # LU, then the inverse from it
        return _cost(self.name, a, lambda m, n, k: 2 * n * n * n, (a,), a)

    def forward(self, ctx, xp, a):
        try:
            return xp.linalg.inv(a)
        except np.linalg.LinAlgError:
            index = _failing_matrix(a, xp.linalg.inv)
            raise LinAlgError(
                f"[inv] {_which(a, index)} is singular: it has no inverse",
                help="use linalg.pinv for a least-squares inverse, or regularise the matrix",
            ) from None

    def backward(self, ctx, grad):
        inverse = ctx.output
        return (-MATMUL(MATMUL(inverse, grad, transpose_a=True), inverse, transpose_b=True),)


class Solve(Op):
    """X with a X = b, for a: (..., n, n) and b: (..., n, k) with the same batch shape (the
    public ``linalg.solve`` broadcasts and handles vectors). A singular a raises
    ``LinAlgError``. Gradients: ``G_b = a^-T G``, ``G_a = -G_b X^T``."""

    name = "solve"
    autocast = "float32"
    save_output = True

    def check(self, a, b):
        _check_square(self.name, a)
        _check_matrices(self.name, b)
        if b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
            raise ShapeError(
                f"[solve] cannot solve a X = b for a {tuple(a.shape)} and b {tuple(b.shape)}",
                help="b must be (..., n, k) with the batch shape of a (..., n, n)",
            )
        if a.dtype != b.dtype:
            raise DTypeError(
                f"[solve] a and b must have the same dtype, got {a.dtype} and {b.dtype}",
                help="convert one of them with .to(other.dtype)",
            )

    def infer(self, a, b) -> ValueSpec:
        self.check(a, b)
        return b

    def cost(self, a, b) -> tuple:  # LU of a, then two triangular solves per column of b
        columns = b.shape[-1]
        return _cost(
            self.name, a, lambda m, n, k: n * n * n + 2 * n * n * columns, (a, b), b
        )  # fmt: skip

    def forward(self, ctx, xp, a, b):
        try:
            return xp.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            index = _failing_matrix(a, xp.linalg.inv)
            raise LinAlgError(
                f"[solve] {_which(a, index)} is singular: the system has no unique solution",
                help="use linalg.lstsq for a least-squares solution",
            ) from None

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_b = SOLVE(a.mT, grad)
        grad_a = -MATMUL(grad_b, ctx.output, transpose_b=True) if a.requires_grad else None
        return grad_a, grad_b


# ----- Cholesky ------------------------------------------------------------------------------------


class Cholesky(Op):
    """The lower Cholesky factor L (a = L L^T) of each symmetric positive-definite matrix,
    from its lower triangle. a: (..., n, n) -> (..., n, n); a matrix that is not positive-definite
    raises ``LinAlgError``.

    Gradient (Murray, 2016; PyTorch's rule): with P = tril(L^T G) and
    Phi = (P + tril(P, -1)^T) / 2, ``G_a = L^-T Phi L^-1``, a symmetric matrix.
    """

    name = "cholesky"
    autocast = "float32"
    save_inputs = False
    save_output = True

    def check(self, a):
        _check_square(self.name, a)

    def infer(self, a) -> ValueSpec:
        _check_square(self.name, a)
        return a

    def cost(self, a) -> tuple:  # about n^3 / 3 flops, counted as n^3
        return _cost(self.name, a, lambda m, n, k: n * n * n, (a,), a)

    def forward(self, ctx, xp, a):
        try:
            return xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            index = _failing_matrix(a, xp.linalg.cholesky)
            matrix = a.reshape(-1, *a.shape[-2:])[index]
            order = _failing_minor(xp, matrix)
            raise LinAlgError(
                f"[cholesky] {_which(a, index)} is not positive-definite (its leading minor of "
                f"order {order} is not)",
                help="the input must be symmetric positive-definite; add a small multiple of "
                "the identity to a covariance that is only semi-definite",
            ) from None

    def backward(self, ctx, grad):
        factor = ctx.output
        product = MATMUL(factor, grad, transpose_a=True).tril()
        phi = (product + product.tril(-1).mT) * 0.5
        return (_solve_right(factor, SOLVE(factor.mT, phi)),)


def _failing_minor(xp, matrix) -> int:
    """The order of the first leading minor of ``matrix`` that is not positive-definite."""
    for order in range(1, matrix.shape[-1] + 1):
        try:
            xp.linalg.cholesky(matrix[:order, :order])
        except np.linalg.LinAlgError:
            return order
    return matrix.shape[-1]


# ----- QR --------------------------------------------------------------------------------------


def _qr_shapes(op: str, a, mode: str) -> tuple:
    """The shapes of Q and R of a: (..., m, n) for ``mode`` ("reduced", "complete" or "r")."""
    _check_matrices(op, a)
    batch, (m, n) = tuple(a.shape[:-2]), tuple(a.shape[-2:])
    with symbolic_sizes(op):
        k = m if mode == "complete" else _smaller_extent(m, n)
    return (*batch, m, k), (*batch, k, n)


class QrFactor(Op):
    """One factor of the QR decomposition a = Q R (Householder, as LAPACK's geqrf): Q with
    orthonormal columns, R upper triangular. a: (..., m, n), k = min(m, n); ``mode``
    "reduced": Q (..., m, k), R (..., k, n); "complete": Q (..., m, m), R (..., m, n); "r": R
    only (reduced), and no gradient.

    Gradient: PyTorch's rule for Q and R together, each record taking its own part.
    """

    autocast = "float32"
    save_output = True

    def __init__(self, name: str, factor: int) -> None:
        self.name, self.factor = name, factor  # factor 0: Q, 1: R

    def check(self, a, *, mode):
        _qr_shapes(self.name, a, mode)

    def infer(self, a, *, mode) -> ValueSpec:
        return a.with_shape(_qr_shapes(self.name, a, mode)[self.factor])

    def cost(self, a, *, mode) -> tuple:
        return _cost(self.name, a, lambda m, n, k: 4 * m * n * k, (a,), self.infer(a, mode=mode))

    def forward(self, ctx, xp, a, *, mode):
        if mode == "r":
            return xp.linalg.qr(a, mode="r")
        return xp.linalg.qr(a, mode=mode)[self.factor]

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        mode = ctx.attrs["mode"]
        if mode == "r":
            raise BuildingAIError(
                "[qr] the derivative of linalg.qr depends on Q, which mode='r' does not compute",
                help="use linalg.qr(A, mode='reduced') to differentiate through qr",
            )
        if self.factor == 0:
            return (_qr_backward(ctx.output, QR_R(a, mode=mode), grad, None, mode),)
        return (_qr_backward(QR_Q(a, mode=mode), ctx.output, None, grad, mode),)


def _qr_backward(q, r, grad_q, grad_r, mode: str):
    """PyTorch's QR backward rule (real case) for the gradients of Q and/or R."""
    m, n = q.shape[-2], r.shape[-1]
    if mode == "complete" and m > n:
        raise BuildingAIError(
            "[qr] the QR decomposition is not differentiable with mode='complete' and more "
            f"rows than columns ({m} > {n}): part of Q is not determined by the input",
            help="use mode='reduced'",
        )
    if grad_q is None:
        mixed = MATMUL(grad_r, r, transpose_b=True)
    else:
        mixed = -MATMUL(q, grad_q, transpose_a=True)
        if grad_r is not None:
            mixed = mixed + MATMUL(grad_r, r, transpose_b=True)
    if m >= n:
        upper = mixed.triu()
        grad_a = q @ (upper + upper.triu(1).mT)  # X + X^T with the diagonal once
        if grad_q is not None:
            grad_a = grad_a + grad_q
        return _solve_right(r.mT, grad_a)  # grad_a R^-T
    grad_a = q @ (mixed.mT - mixed).tril()
    grad_a = _solve_right(r[..., :m].mT, grad_a)  # against the leading m x m block of R
    widths = ((0, 0),) * (grad_a.ndim - 1) + ((0, n - m),)
    grad_a = PAD(grad_a, widths=widths, mode="constant", value=0.0)
    if grad_r is not None:
        grad_a = grad_a + q @ grad_r
    return grad_a


# ----- symmetric eigendecomposition ----------------------------------------------------------------


class Eigvalsh(Op):
    """The eigenvalues of each symmetric matrix, ascending, from the triangle ``uplo`` ("L" or
    "U"). a: (..., n, n) -> (..., n). Gradient: ``V diag(G) V^T``."""

    name = "eigvalsh"
    autocast = "float32"

    def check(self, a, *, uplo):
        _check_square(self.name, a)

    def infer(self, a, *, uplo) -> ValueSpec:
        _check_square(self.name, a)
        return a.with_shape(a.shape[:-1])

    def cost(self, a, *, uplo) -> tuple:  # tridiagonalisation, then QR iterations
        return _cost(self.name, a, lambda m, n, k: 2 * n * n * n, (a,), self.infer(a, uplo=uplo))

    def forward(self, ctx, xp, a, *, uplo):
        return xp.linalg.eigvalsh(a, UPLO=uplo)

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        vectors = EIGH_VECTORS(a, uplo=ctx.attrs["uplo"])
        return (MATMUL(vectors * grad.unsqueeze(-2), vectors, transpose_b=True),)


class EighVectors(Op):
    """The orthonormal eigenvectors (columns) of each symmetric matrix, in the order of
    ``eigvalsh``, from the triangle ``uplo``. a: (..., n, n) -> (..., n, n). Each column is
    determined up to its sign; the gradient assumes distinct eigenvalues.

    Gradient: ``V (skew(V^T G) / E) V^T`` with skew(X) = (X - X^T) / 2 and
    E_ij = lambda_j - lambda_i (PyTorch's rule).
    """

    name = "eigh_vectors"
    autocast = "float32"
    save_output = True

    def check(self, a, *, uplo):
        _check_square(self.name, a)

    def infer(self, a, *, uplo) -> ValueSpec:
        _check_square(self.name, a)
        return a

    def cost(self, a, *, uplo) -> tuple:
        return _cost(self.name, a, lambda m, n, k: 9 * n * n * n, (a,), a)

    def forward(self, ctx, xp, a, *, uplo):
        return xp.linalg.eigh(a, UPLO=uplo)[1]

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        vectors = ctx.output
        values = EIGVALSH(a, uplo=ctx.attrs["uplo"])
        projected = MATMUL(vectors, grad, transpose_a=True)
        skew = (projected - projected.mT) * 0.5
        gaps = values.unsqueeze(-2) - values.unsqueeze(-1) + _identity(values, values.shape[-1])
        return (MATMUL(vectors @ (skew / gaps), vectors, transpose_b=True),)


# ----- singular vectors ----------------------------------------------------------------------------


def _svd_shapes(op: str, a, full_matrices: bool) -> tuple:
    """The shapes of U and V^T of a: (..., m, n)."""
    _check_matrices(op, a)
    batch, (m, n) = tuple(a.shape[:-2]), tuple(a.shape[-2:])
    if full_matrices:
        return (*batch, m, m), (*batch, n, n)
    with symbolic_sizes(op):
        k = _smaller_extent(m, n)
    return (*batch, m, k), (*batch, k, n)


class SvdVectors(Op):
    """The left (U) or right (V^T) singular vectors of each matrix; ``svdvals`` gives the
    singular values of the same SVD a = U diag(s) V^T. a: (..., m, n), k = min(m, n):
    U (..., m, k) and V^T (..., k, n), or (..., m, m) and (..., n, n) with ``full_matrices``.
    The pair (u_i, v_i) is determined up to a common sign.

    Gradient: PyTorch's SVD rule for distinct singular values (and a full-rank matrix when it
    is not square); with ``full_matrices`` the gradient of the columns beyond k is ignored,
    as in PyTorch.
    """

    autocast = "float32"
    save_output = True

    def __init__(self, name: str, factor: int) -> None:
        self.name, self.factor = name, factor  # factor 0: U, 1: V^T

    def check(self, a, *, full_matrices):
        _svd_shapes(self.name, a, full_matrices)

    def infer(self, a, *, full_matrices) -> ValueSpec:
        return a.with_shape(_svd_shapes(self.name, a, full_matrices)[self.factor])

    def cost(self, a, *, full_matrices) -> tuple:
        out = self.infer(a, full_matrices=full_matrices)
        return _cost(self.name, a, lambda m, n, k: 12 * (m + n) * k * k, (a,), out)

    def forward(self, ctx, xp, a, *, full_matrices):
        return xp.linalg.svd(a, full_matrices=full_matrices)[2 * self.factor]

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        full = ctx.attrs["full_matrices"]
        k = min(a.shape[-2], a.shape[-1])
        if self.factor == 0:
            u, vh = ctx.output, SVD_VH(a, full_matrices=full)
        else:
            u, vh = SVD_U(a, full_matrices=full), ctx.output
        if full:  # the vectors beyond k are not determined by a
            u, vh = u[..., :k], vh[..., :k, :]
            grad = grad[..., :k] if self.factor == 0 else grad[..., :k, :]
        grads = (grad, None) if self.factor == 0 else (None, grad)
        return (_svd_backward(u, SVDVALS(a), vh, *grads),)


def _svd_backward(u, s, vh, grad_u, grad_vh):
    """PyTorch's SVD backward rule (real, reduced SVD) for a gradient of U or of V^T."""
    m, n = u.shape[-2], vh.shape[-1]
    squares = s * s
    gaps = squares.unsqueeze(-2) - squares.unsqueeze(-1) + _identity(s, s.shape[-1])
    if grad_u is not None:
        projected = MATMUL(u, grad_u, transpose_a=True)
        inner = ((projected - projected.mT) / gaps) * s.unsqueeze(-2)
        if m > n:  # the part of grad_u outside the column space of U
            scaled = grad_u / s.unsqueeze(-2)
            outer = u @ inner + scaled - u @ MATMUL(u, scaled, transpose_a=True)
            return outer @ vh
    else:
        projected = MATMUL(vh, grad_vh, transpose_b=True)
        inner = s.unsqueeze(-1) * ((projected - projected.mT) / gaps)
        if m < n:  # the part of grad_vh outside the row space of V^T
            scaled = grad_vh / s.unsqueeze(-1)
            outer = inner @ vh + scaled - MATMUL(scaled, vh, transpose_b=True) @ vh
            return u @ outer
    return u @ inner @ vh


# ----- pseudo-inverse ------------------------------------------------------------------------------


class Pinv(Op):
    """The Moore-Penrose pseudo-inverse of each matrix. a: (..., m, n) -> (..., n, m).

    From the SVD (or, with ``hermitian``, the eigendecomposition of the lower triangle), the
    singular values at most ``max(atol, rtol * largest)`` count as zero. Gradient: PyTorch's
    rule (Golub and Pereyra), valid where the rank does not change.
    """

    name = "pinv"
    autocast = "float32"
    save_output = True

    def check(self, a, *, atol, rtol, hermitian):
        if hermitian:
            _check_square(self.name, a)
        _check_matrices(self.name, a)

    def infer(self, a, *, atol, rtol, hermitian) -> ValueSpec:
        self.check(a, atol=atol, rtol=rtol, hermitian=hermitian)
        return a.with_shape((*a.shape[:-2], a.shape[-1], a.shape[-2]))

    def cost(self, a, *, atol, rtol, hermitian) -> tuple:
        out = self.infer(a, atol=atol, rtol=rtol, hermitian=hermitian)
        return _cost(
            self.name, a, lambda m, n, k: 12 * (m + n) * k * k + 2 * m * n * k, (a,), out
        )  # fmt: skip

    def forward(self, ctx, xp, a, *, atol, rtol, hermitian):
        if a.shape[-1] == 0 or a.shape[-2] == 0:
            return xp.zeros((*a.shape[:-2], a.shape[-1], a.shape[-2]), dtype=a.dtype)
        if hermitian:
            values, vectors = xp.linalg.eigh(a)
            magnitudes = xp.abs(values)
            tolerance = xp.maximum(atol, rtol * magnitudes.max(axis=-1, keepdims=True))
            inverted = _inverted_above(xp, values, magnitudes > tolerance)
            return (vectors * inverted[..., None, :]) @ xp.swapaxes(vectors, -1, -2)
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        tolerance = xp.maximum(atol, rtol * s[..., :1])  # s is descending
        inverted = _inverted_above(xp, s, s > tolerance)
        return (xp.swapaxes(vh, -1, -2) * inverted[..., None, :]) @ xp.swapaxes(u, -1, -2)

    def backward(self, ctx, grad):
        (a,) = ctx.inputs
        pinv, pinv_t, grad_t = ctx.output, ctx.output.mT, grad.mT
        if a.shape[-2] <= a.shape[-1]:  # the products with the smaller matrices first
            kernel = grad_t @ pinv
            kernel_pinv_t = kernel @ pinv_t
            return (
                -(pinv @ kernel).mT
                + kernel_pinv_t
                - (a @ pinv) @ kernel_pinv_t
                + (pinv_t @ pinv) @ (grad_t - kernel @ a),
            )
        kernel = pinv @ grad_t
        pinv_t_kernel = pinv_t @ kernel
        return (
            -(kernel @ pinv).mT
            + (grad_t - a @ kernel) @ pinv @ pinv_t
            + pinv_t_kernel
            - pinv_t_kernel @ pinv @ a,
        )


def _inverted_above(xp, values, kept):
    """1 / values where ``kept``, 0 elsewhere, without dividing by the values cut."""
    return xp.where(kept, 1 / xp.where(kept, values, 1), 0).astype(values.dtype, copy=False)


DET, COFACTOR, SLOGDET_SIGN, LOGABSDET = Det(), Cofactor(), SlogdetSign(), LogAbsDet()
INV, SOLVE, CHOLESKY = Inv(), Solve(), Cholesky()
QR_Q, QR_R = QrFactor("qr_q", 0), QrFactor("qr_r", 1)
EIGVALSH, EIGH_VECTORS = Eigvalsh(), EighVectors()
SVD_U, SVD_VH = SvdVectors("svd_u", 0), SvdVectors("svd_vh", 1)
PINV = Pinv()
