"""Linear algebra of matrix stacks, as ``torch.linalg`` and the top-level torch functions spell
it: determinants, inverses, linear solves, Cholesky, QR, the symmetric eigendecomposition, the
SVD, the pseudo-inverse, rank, least squares, matrix powers and chained products.

Every function is batched over the leading dimensions. The factorisations are the records of
``ops/decompositions.py``; the rest is composed from them and matmul, so gradients follow. The
``torch.linalg`` names live in ``buildingai.linalg``; ``__all__`` holds the top-level ones
(``det``, ``inverse``, ``svd``...), some of which keep PyTorch's older signatures.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from numbers import Real
from typing import NamedTuple

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops import decompositions as ops
from .arrangement import _check_matrices, _scaled_sum, cross
from .creation import eye, zeros
from .elementwise import abs as absolute
from .elementwise import maximum, where
from .linalg import dot, matmul, outer
from .matrix_norms import svdvals
from .reduce import amax
from .reduce import sum as total
from .shape import broadcast_shapes


class SignLogAbsDet(NamedTuple):
    """What ``slogdet`` returns: det = sign * exp(logabsdet)."""

    sign: Tensor
    logabsdet: Tensor


class QR(NamedTuple):
    """What ``qr`` returns: A = Q R."""

    Q: Tensor
    R: Tensor


class Eigh(NamedTuple):
    """What ``linalg.eigh`` returns: A = V diag(eigenvalues) V^T, V = eigenvectors."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVD(NamedTuple):
    """What ``linalg.svd`` returns: A = U diag(S) Vh."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class SVDWithV(NamedTuple):
    """What the older ``torch.svd`` returns: A = U diag(S) V^T."""

    U: Tensor
    S: Tensor
    V: Tensor


class Lstsq(NamedTuple):
    """What ``linalg.lstsq`` returns (the fields a driver does not compute are empty)."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def _require_matrices(op: str, A: Tensor, square: bool = True) -> None:
    if A.ndim < 2:
        form = "(..., n, n)" if square else "(..., m, n)"
        raise ShapeError(
            f"[{op}] needs matrices {form}, got a tensor shaped {tuple(A.shape)}",
            help="reshape a vector into a matrix first",
        )
    if square and A.shape[-1] != A.shape[-2]:
        raise ShapeError(
            f"[{op}] needs square matrices (..., n, n), got a tensor shaped {tuple(A.shape)}",
            help="use linalg.pinv or linalg.lstsq for rectangular matrices",
        )


def _batch_shape(op: str, A: Tensor, B: Tensor) -> tuple:
    """The broadcast of the batch shapes of matrix stacks A and B."""
    try:
        return tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    except (ShapeError, ValueError):
        raise ShapeError(
            f"[{op}] the batch shapes of A {tuple(A.shape)} and B {tuple(B.shape)} do not "
            "broadcast",
            help="batch dimensions (all but the last two) must match or be 1",
        ) from None


def _expand_batch(x: Tensor, batch: tuple) -> Tensor:
    shape = (*batch, *x.shape[-2:])
    return x if tuple(x.shape) == shape else x.expand(shape)


# ----- determinants --------------------------------------------------------------------------------


def det(A: Tensor) -> Tensor:
    """The determinant of each matrix (``torch.linalg.det``, ``torch.det``).

    A: (..., n, n) float32 or float64 -> (...). Differentiable everywhere: the gradient is the
    cofactor matrix, also at singular matrices.
    """
    return apply(ops.DET, A)


def slogdet(A: Tensor) -> SignLogAbsDet:
    """The sign and the log of the absolute value of each determinant, without overflow
    (``torch.linalg.slogdet``). A: (..., n, n) -> (sign (...), logabsdet (...)); a singular
    matrix gives sign 0 and logabsdet -inf."""
    return SignLogAbsDet(apply(ops.SLOGDET_SIGN, A), apply(ops.LOGABSDET, A))


def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: nan where the determinant is negative, -inf where it is zero
    (``torch.logdet``). input: (..., n, n) -> (...)."""
    sign, logabsdet = slogdet(input)
    return where(sign < 0, math.nan, logabsdet)


# ----- inverses and solves -------------------------------------------------------------------------


def inv(A: Tensor) -> Tensor:
    """The inverse of each matrix (``torch.linalg.inv``). A: (..., n, n) -> (..., n, n); a
    singular matrix raises ``buildingai.linalg.LinAlgError``."""
    return apply(ops.INV, A)


def inverse(input: Tensor) -> Tensor:
    """The inverse of each matrix (``torch.inverse``, the same as ``linalg.inv``).
    input: (..., n, n) -> (..., n, n)."""
    return apply(ops.INV, input)


def _is_vector(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D, or has the shape of A
    without its last dimension."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (or ``X A = B`` with ``left=False``), without forming the
    inverse (``torch.linalg.solve``).

    A: (..., n, n); B: (..., n, k) -> X (..., n, k), or B: (..., n) -> X (..., n) for vectors;
    the batch dimensions broadcast. With ``left=False``, B: (..., k, n) -> X (..., k, n). A
    singular A raises ``buildingai.linalg.LinAlgError``.
    """
    _require_matrices("solve", A)
    if B.ndim < 1:
        raise ShapeError("[solve] B must have at least 1 dimension, got a 0-d tensor")
    vector = _is_vector(A, B)
    matrix_B = B.unsqueeze(-1) if vector else B  # (..., n, k), or (..., k, n) with left=False
    n = A.shape[-1]
    if matrix_B.shape[-2 if left else -1] != n:
        equation, form = (
            ("A X = B", f"(..., {n}, k) or (..., {n})") if left else ("X A = B", f"(..., k, {n})")
        )
        raise ShapeError(
            f"[solve] cannot solve {equation} for A {tuple(A.shape)} and B {tuple(B.shape)}: "
            f"B must be {form}",
            help="B needs as many rows as A has columns (A X = B), or as many columns as A has "
            "rows with left=False (X A = B)",
        )
    if not left:  # X A = B  <=>  A^T X^T = B^T
        A, matrix_B = A.mT, matrix_B.mT
    batch = _batch_shape("solve", A, matrix_B)
    X = apply(ops.SOLVE, _expand_batch(A, batch), _expand_batch(matrix_B, batch))
    if not left:
        X = X.mT
    return X.squeeze(-1) if vector else X


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) reading only the upper
    or lower triangle of A, its diagonal taken as ones with ``unitriangular``
    (``torch.linalg.solve_triangular``). A: (..., n, n), B: (..., n, k) (or (..., k, n) with
    ``left=False``) -> X of B's shape; batch dimensions broadcast. The gradient of A is
    confined to the triangle read, as in PyTorch."""
    _require_matrices("solve_triangular", A)
    if B.ndim < 2:
        raise ShapeError(
            f"[solve_triangular] B must be a matrix (..., n, k), got shape {tuple(B.shape)}",
            help="unsqueeze a vector right-hand side: B.unsqueeze(-1)",
        )
    if unitriangular:
        strict = A.triu(1) if upper else A.tril(-1)
        triangle = strict + eye(A.shape[-1], dtype=A.dtype, device=A.device)
    else:
        triangle = A.triu() if upper else A.tril()
    return solve(triangle, B, left=left)


# ----- Cholesky ------------------------------------------------------------------------------------


def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix (``torch.linalg.cholesky``):
    lower L with A = L L^T, read from the lower triangle; with ``upper``, U = L^T with
    A = U^T U, read from the upper triangle. A: (..., n, n) -> (..., n, n). A matrix that is
    not positive-definite raises ``buildingai.linalg.LinAlgError``."""
    if upper:  # the lower factor of A^T reads A's upper triangle
        return apply(ops.CHOLESKY, A.mT).mT
    return apply(ops.CHOLESKY, A)


_CHOLESKY_WARNING = (
    "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
    "future PyTorch release: use linalg.cholesky(A), or linalg.cholesky(A).mH for upper=True"
)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch, with its warning): ``linalg.cholesky``
    with ``upper`` positional. input: (..., n, n) -> (..., n, n)."""
    warnings.warn(_CHOLESKY_WARNING, UserWarning, stacklevel=2)
    return linalg_cholesky(input, upper=upper)


# ----- QR ------------------------------------------------------------------------------------------


def linalg_qr(A: Tensor, mode: str = "reduced") -> QR:
    """The QR decomposition A = Q R of each matrix (``torch.linalg.qr``).

    A: (..., m, n), k = min(m, n). ``mode="reduced"``: Q (..., m, k), R (..., k, n);
    ``"complete"``: Q (..., m, m), R (..., m, n); ``"r"``: R only (reduced) and an empty Q, and
    no gradient. Gradients need ``"reduced"``, or ``"complete"`` with m <= n, as in PyTorch.
    """
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(
            f"[qr] mode must be 'reduced', 'complete' or 'r', got {mode!r}",
            help="'reduced' (the default) is the one to differentiate through",
        )
    _require_matrices("qr", A, square=False)
    if mode == "r":
        return QR(zeros(0, dtype=A.dtype, device=A.device), apply(ops.QR_R, A, mode="r"))
    return QR(apply(ops.QR_Q, A, mode=mode), apply(ops.QR_R, A, mode=mode))


_QR_WARNING = (
    "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
    "PyTorch release: Q, R = torch.qr(A, some) becomes "
    "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')"
)


def qr(input: Tensor, some: bool = True) -> QR:
    """``torch.qr`` (deprecated in PyTorch, with its warning): the reduced decomposition, or
    the complete one with ``some=False``. input: (..., m, n) -> (Q, R)."""
    warnings.warn(_QR_WARNING, UserWarning, stacklevel=2)
    return linalg_qr(input, "reduced" if some else "complete")


# ----- symmetric eigendecomposition ----------------------------------------------------------------


def _uplo(UPLO: str) -> str:
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise ArgumentError(
            f"[eigh] UPLO must be 'L' or 'U', got {UPLO!r}",
            help="'L' reads the lower triangle of each matrix, 'U' the upper one",
        )
    return UPLO.upper()


def eigh(A: Tensor, UPLO: str = "L") -> Eigh:
    """The eigenvalues (ascending) and orthonormal eigenvectors of each symmetric matrix, read
    from its lower (``UPLO="L"``) or upper triangle (``torch.linalg.eigh``).

    A: (..., n, n) -> (eigenvalues (..., n), eigenvectors (..., n, n)), A = V diag(w) V^T. Each
    eigenvector is determined up to its sign; gradients through the eigenvectors assume
    distinct eigenvalues.
    """
    uplo = _uplo(UPLO)
    return Eigh(apply(ops.EIGVALSH, A, uplo=uplo), apply(ops.EIGH_VECTORS, A, uplo=uplo))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending (``torch.linalg.eigvalsh``).
    A: (..., n, n) -> (..., n)."""
    return apply(ops.EIGVALSH, A, uplo=_uplo(UPLO))


# ----- SVD -----------------------------------------------------------------------------------------


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVD:
    """The singular value decomposition A = U diag(S) Vh of each matrix (``torch.linalg.svd``).

    A: (..., m, n), k = min(m, n) -> U (..., m, m), S (..., k), Vh (..., n, n); with
    ``full_matrices=False``, U (..., m, k) and Vh (..., k, n). The pair (u_i, v_i) is
    determined up to a common sign. Gradients through U and Vh assume distinct singular values
    (and full rank for a non-square A); the columns of U and rows of Vh beyond k get none.
    """
    if driver is not None:
        raise ArgumentError(
            f"[svd] driver={driver!r} is a cuSOLVER option, which CPU and NumPy inputs do not "
            "take (as in PyTorch)",
            help="leave driver=None",
        )
    _require_matrices("svd", A, square=False)
    full = bool(full_matrices)
    U = apply(ops.SVD_U, A, full_matrices=full)
    Vh = apply(ops.SVD_VH, A, full_matrices=full)
    return SVD(U, svdvals(A), Vh)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDWithV:
    """``torch.svd``: the SVD with V instead of Vh, reduced unless ``some=False``.

    input: (..., m, n) -> U (..., m, k), S (..., k), V (..., n, k) (k = min(m, n), or m and n
    for the complete U and V). With ``compute_uv=False``, U and V are zero matrices
    (..., m, m) and (..., n, n), as in PyTorch.
    """
    if not compute_uv:
        _require_matrices("svd", input, square=False)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        U = zeros((*batch, m, m), dtype=input.dtype, device=input.device)
        V = zeros((*batch, n, n), dtype=input.dtype, device=input.device)
        return SVDWithV(U, svdvals(input), V)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return SVDWithV(U, S, Vh.mT)


# ----- pseudo-inverse and rank ---------------------------------------------------------------------


def _tolerances(op: str, A: Tensor, atol, rtol) -> tuple[float, float]:
    """PyTorch's defaults: no atol; rtol = eps * max(m, n) unless atol > 0 is given."""
    values = []
    for name, value in (("atol", atol), ("rtol", rtol)):
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise ArgumentError(
                    f"[{op}] {name} must be a number or a 0-d tensor here, got a tensor shaped "
                    f"{tuple(value.shape)}",
                    help="use linalg.matrix_rank for tolerances per matrix, or one number",
                )
            value = float(value.item())
        if value is not None and not isinstance(value, Real):
            raise ArgumentError(f"[{op}] {name} must be a number, got {value!r}")
        values.append(value)
    atol, rtol = values
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _default_rtol(A)
    return float(0.0 if atol is None else atol), float(rtol)


def _default_rtol(A: Tensor) -> float:
    return float(np.finfo(A.dtype).eps) * max(A.shape[-2], A.shape[-1])


def pinv(
    A: Tensor,
    rcond: float | None = None,
    hermitian: bool = False,
    *,
    atol: float | None = None,
    rtol: float | None = None,
) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix (``torch.linalg.pinv``).

    A: (..., m, n) -> (..., n, m). Singular values at most ``max(atol, rtol * largest)`` count
    as zero; by default rtol = eps * max(m, n), and 0 when only atol > 0 is given. ``rcond``
    (PyTorch's older positional spelling) is rtol with atol = 0. ``hermitian`` reads the lower
    triangle of a symmetric A and uses its eigendecomposition.
    """
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise ArgumentError("[pinv] pass rcond or atol/rtol, not both")
        atol, rtol = 0.0, rcond
    _require_matrices("pinv", A, square=bool(hermitian))
    atol, rtol = _tolerances("pinv", A, atol, rtol)
    return apply(ops.PINV, A, atol=atol, rtol=rtol, hermitian=bool(hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: the pseudo-inverse with singular values at most ``rcond`` times the
    largest counted as zero. input: (..., m, n) -> (..., n, m)."""
    return pinv(input, rtol=rcond, atol=0.0)


def matrix_rank(
    A: Tensor,
    tol=None,
    hermitian: bool = False,
    *,
    atol=None,
    rtol=None,
) -> Tensor:
    """The numerical rank of each matrix: the count of singular values (absolute eigenvalues
    with ``hermitian``) above ``max(atol, rtol * largest)`` (``torch.linalg.matrix_rank``).

    A: (..., m, n) -> int64 (...). Defaults as ``pinv``; ``atol`` and ``rtol`` may be numbers
    or tensors that broadcast against the batch shape; ``tol`` (PyTorch's older spelling) is
    atol with rtol = 0.
    """
    if tol is not None:
        if atol is not None or rtol is not None:
            raise ArgumentError("[matrix_rank] pass tol or atol/rtol, not both")
        atol, rtol = tol, 0.0
    _require_matrices("matrix_rank", A, square=bool(hermitian))
    batch = tuple(A.shape[:-2])
    if min(A.shape[-2], A.shape[-1]) == 0:
        return zeros(batch, dtype=np.int64, device=A.device)
    values = absolute(eigvalsh(A)) if hermitian else svdvals(A)  # (..., k)
    if rtol is None:  # PyTorch's default, matrix by matrix: 0 where atol > 0
        default = _default_rtol(A)
        if atol is None:
            rtol = default
        elif isinstance(atol, Tensor):
            rtol = where(atol > 0, 0.0, default)
        else:
            rtol = 0.0 if atol > 0 else default
    atol = 0.0 if atol is None else atol
    tolerance = maximum(_per_matrix(atol), _per_matrix(rtol) * amax(values, -1, keepdims=True))
    return total(values > tolerance, axis=-1)


def _per_matrix(value):
    """A tolerance: a number, or a (...) tensor made (..., 1) to meet the values (..., k)."""
    return value.unsqueeze(-1) if isinstance(value, Tensor) else value


# ----- least squares -------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> Lstsq:
    """The least-squares solution X minimising ||A X - B|| for each matrix
    (``torch.linalg.lstsq``), the minimum-norm one where A is rank-deficient.

    A: (..., m, n), B: (..., m, k) (or (..., m) when B has one dimension fewer than A) ->
    solution (..., n, k); batch dimensions broadcast. ``rcond`` (default eps * max(m, n))
    decides the rank. As PyTorch's CPU drivers: ``rank`` (of A's own batch) for every driver
    but "gels"; ``singular_values`` for "gelsd" and "gelss"; ``residuals`` ||A X - B||^2 per
    column (..., k) when m > n, the driver is not "gelsy" (the default) and every matrix has
    full rank. Fields not computed are empty. The solution is ``pinv(A) B``.
    """
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise ArgumentError(
            f"[lstsq] driver must be one of {_DRIVERS} on CPU, got {driver!r}",
            help="leave driver=None for 'gelsy'",
        )
    _require_matrices("lstsq", A, square=False)
    if B.ndim > A.ndim or A.ndim - B.ndim > 1:
        raise ShapeError(
            f"[lstsq] B must have as many dimensions as A, or one fewer (vectors), got A "
            f"{tuple(A.shape)} and B {tuple(B.shape)}"
        )
    if A.dtype != B.dtype:
        raise DTypeError(
            f"[lstsq] A and B must have the same dtype, got {A.dtype} and {B.dtype}",
            help="convert one of them with .to(other.dtype)",
        )
    vector = B.ndim == A.ndim - 1
    matrix_B = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if matrix_B.shape[-2] != m:
        raise ShapeError(
            f"[lstsq] A {tuple(A.shape)} has {m} rows but B {tuple(B.shape)} has "
            f"{matrix_B.shape[-2]}",
            help="A X = B needs one row of B per row of A",
        )
    rcond = _default_rtol(A) if rcond is None else float(rcond)
    batch = _batch_shape("lstsq", A, matrix_B)
    A_batch, B_batch = _expand_batch(A, batch), _expand_batch(matrix_B, batch)
    solution = matmul(pinv(A_batch, atol=0.0, rtol=rcond), B_batch)  # (..., n, k)
    empty_float = zeros(0, dtype=A.dtype, device=A.device)
    rank = zeros(0, dtype=np.int64, device=A.device)
    if driver != "gels":
        rank = matrix_rank(A, atol=0.0, rtol=rcond)
    values = svdvals(A) if driver in ("gelsd", "gelss") else empty_float
    residuals = empty_float
    if m > n and driver != "gelsy":
        full_rank = driver == "gels" or bool((rank == n).all())
        if full_rank:
            difference = matmul(A_batch, solution) - B_batch
            residuals = total(difference * difference, axis=-2)
    return Lstsq(solution.squeeze(-1) if vector else solution, residuals, rank, values)


# ----- powers and products -------------------------------------------------------------------------


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A to the integer power ``n`` by repeated squaring (``torch.linalg.matrix_power``): the
    identity for n = 0 (which still carries a zero gradient to A, as in PyTorch), powers of
    the inverse for n < 0. A: (..., m, m) -> (..., m, m)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise ArgumentError(f"[matrix_power] n must be an integer, got {n!r}") from None
    _require_matrices("matrix_power", A)
    if n == 0:
        identity = eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(tuple(A.shape))
        return identity + A.sign() * 0  # sign: zero gradient, and finite for inf entries
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A.clone()
    if n == 2:
        return A @ A
    if n == 3:
        return (A @ A) @ A
    result, square = None, None
    while n:  # the binary digits of n, lowest first
        square = A if square is None else square @ square
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
    return result


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices, multiplied in the order that costs the fewest
    multiplications (``torch.linalg.multi_dot``). The first may be a vector (1, n) and the
    last a vector (n, 1), whose dimension is then dropped: (n) x (n, p) x ... x (q) -> ()."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ArgumentError(
            f"[multi_dot] expected at least 2 tensors but got {len(tensors)}",
            help="use matmul for two tensors, or the tensor itself for one",
        )
    for position, tensor in enumerate(tensors):
        end = position in (0, len(tensors) - 1)
        if tensor.ndim != 2 and not (end and tensor.ndim == 1):
            which = "first" if position == 0 else "last" if end else f"tensor {position}"
            allowed = "1D or 2D" if end else "2D"
            raise ShapeError(
                f"[multi_dot] the {which} tensor must be {allowed} but got {tensor.ndim}D"
            )
    row_vector, column_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    if row_vector:
        tensors[0] = tensors[0].unsqueeze(0)
    if column_vector:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for left, right in zip(tensors, tensors[1:]):
        if left.shape[1] != right.shape[0]:
            raise ShapeError(
                f"[multi_dot] cannot multiply {tuple(left.shape)} by {tuple(right.shape)} in "
                "the chain",
                help="each matrix needs as many rows as the one before it has columns",
            )
    out = _chain(tensors, _chain_order(tensors), 0, len(tensors) - 1)
    if row_vector:
        out = out.squeeze(0)
    if column_vector:
        out = out.squeeze(-1)
    return out


def _chain_order(tensors: list) -> list:
    """The classic dynamic programme for the matrix chain: ``split[i][j]`` is where the
    cheapest product of tensors i..j divides."""
    sizes = [tensors[0].shape[0]] + [tensor.shape[1] for tensor in tensors]
    count = len(tensors)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                candidate = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if candidate < cost[i][j]:
                    cost[i][j], split[i][j] = candidate, k
    return split


def _chain(tensors: list, split: list, i: int, j: int) -> Tensor:
    if i == j:
        return tensors[i]
    k = split[i][j]
    return _chain(tensors, split, i, k) @ _chain(tensors, split, k + 1, j)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of two or more matrices in the cheapest order: PyTorch's deprecated spelling
    of ``multi_dot(matrices)``, which warns as PyTorch does; one matrix gives a copy of it.
    (n, a) x (a, b) x ... x (c, m) -> (n, m)."""
    warnings.warn(
        "chain_matmul is deprecated, as in PyTorch: use linalg.multi_dot([a, b, ...]), which "
        "takes a list of tensors",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise ArgumentError(
            "[chain_matmul] expects one or more matrices, got none",
            help="pass the matrices as arguments: chain_matmul(a, b, c)",
        )
    for position, matrix in enumerate(matrices):
        if matrix.ndim != 2:
            raise ShapeError(
                f"[chain_matmul] every argument must be a matrix, but argument {position} is "
                f"shaped {tuple(matrix.shape)}",
                help="reshape vectors to (1, n) or (n, 1) first, or use linalg.multi_dot",
            )
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# ----- the scaled products: addr, addbmm, vdot --------------------------------------------------


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``: (n,) x (m,) -> (n, m), ``input``
    broadcast to (n, m). With ``beta=0`` the input is ignored (its NaN and inf too)."""
    for name, vector in (("vec1", vec1), ("vec2", vec2)):
        if vector.ndim != 1:
            raise ShapeError(
                f"[addr] expects {name} to be 1-D, got shape {tuple(vector.shape)}",
                help=f"flatten it first: {name}.reshape(-1)",
            )
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``: (b, n, k) @ (b, k, m) summed
    over b -> (n, m), ``input`` broadcast to (n, m). With ``beta=0`` the input is ignored."""
    _check_matrices("addbmm", batch1, batch2, (3, 3))
    # the batch sum is the product of (n, b*k) by (b*k, m): one matmul
    left = batch1.permute(1, 0, 2).reshape(batch1.shape[1], -1)  # (n, b*k)
    right = batch2.reshape(-1, batch2.shape[2])  # (b*k, m)
    return _scaled_sum("addbmm", input, matmul(left, right), beta, alpha)


def vdot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The inner product of two 1-D tensors of the same length and dtype: (n,), (n,) -> ().
    For complex numbers PyTorch conjugates the first; BuildingAI's dtypes are all real, where
    it is ``dot``."""
    if input.ndim != 1 or other.ndim != 1 or input.shape[0] != other.shape[0]:
        raise ShapeError(
            f"[vdot] expects two 1-D tensors of the same length, got {tuple(input.shape)} "
            f"and {tuple(other.shape)}",
            help="flatten them first: vdot(a.reshape(-1), b.reshape(-1))",
        )
    if input.dtype != other.dtype:
        raise DTypeError(
            f"[vdot] expects both vectors to have the same dtype, got {input.dtype} and "
            f"{other.dtype}",
            help=f"convert one first: b.astype('{input.dtype}')",
        )
    return dot(input, other)


# ----- the matrix exponential ------------------------------------------------------------------

# Higham's degree-13 Pade approximant ("The scaling and squaring method for the matrix
# exponential revisited", 2005): its coefficients, and the largest 1-norm it serves to
# float64 rounding
_PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
            129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
            40840800.0, 960960.0, 16380.0, 182.0, 1.0)  # fmt: skip
_THETA_13 = 5.371920351148152


def _squarings(A: Tensor) -> np.ndarray:
    """How many times each matrix must be halved so its 1-norm is at most theta_13: (...,).
    The norms are read through tensor ops: the count depends on the values, so a traced graph
    refuses it rather than keep the count of the values it was traced with."""
    norms = A.detach().abs().sum(axis=-2).amax(axis=-1)
    norms = np.asarray(norms.tolist(), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # zero, inf and NaN norms
        exponents = np.ceil(np.log2(norms / _THETA_13))
    return np.where(np.isfinite(exponents), np.maximum(exponents, 0), 0).astype(np.int64)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix: (..., n, n) ->
    (..., n, n). Scaling and squaring with the degree-13 Pade approximant, made of matmuls
    and one linear solve, so its gradient follows from theirs."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(
            f"[matrix_exp] expects square matrices (..., n, n), got shape {tuple(A.shape)}",
            help="pass a matrix or a batch of square matrices",
        )
    if A.dtype.kind not in "f" and A.dtype.name != "bfloat16":
        raise DTypeError(
            f"[matrix_exp] expects floating-point matrices, got {A.dtype}",
            help="convert first: A.double()",
        )
    if A.numel() == 0:
        return A.clone()
    squarings = _squarings(A)  # (...,)
    scale = Tensor(np.ldexp(1.0, -squarings).astype(A.dtype)[..., None, None])
    scaled = A * scale.to(A.device)
    size = A.shape[-1]
    identity = eye(size, dtype=A.dtype, device=A.device)
    b = _PADE_13
    A2 = scaled @ scaled
    A4 = A2 @ A2
    A6 = A4 @ A2
    odd = scaled @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
                    + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * identity)  # fmt: skip
    even = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2
    even = even + b[0] * identity
    result = solve(even - odd, even + odd)
    # square each matrix as many times as it was halved
    for step in range(int(squarings.max())):
        still = Tensor(np.asarray(squarings > step)[..., None, None]).to(A.device)
        result = where(still, result @ result, result)
    return result


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (``torch.linalg.cross``: ``cross`` with
    dim keyword-only and -1 by default). (..., 3) x (..., 3) -> (..., 3); the other
    dimensions broadcast."""
    return cross(input, other, dim=dim)


__all__ = [
    "addbmm",
    "addr",
    "chain_matmul",
    "cholesky",
    "det",
    "inverse",
    "logdet",
    "matrix_exp",
    "matrix_power",
    "pinverse",
    "qr",
    "slogdet",
    "svd",
    "vdot",
]

TENSOR_METHODS = {
    "addbmm": addbmm,
    "addr": addr,
    "cholesky": cholesky,
    "det": det,
    "inverse": inverse,
    "logdet": logdet,
    "matrix_exp": matrix_exp,
    "matrix_power": matrix_power,
    "pinverse": pinverse,
    "qr": qr,
    "slogdet": slogdet,
    "svd": svd,
    "vdot": vdot,
}
