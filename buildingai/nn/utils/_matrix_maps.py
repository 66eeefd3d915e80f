"""The matrix functions behind ``parametrizations.orthogonal``: the exponential of a
skew-symmetric matrix and a product of Householder reflectors, composed of matmuls so that
gradients reach the weight (the Cayley transform is ``linalg.solve``); and, outside the graph,
the QR factorisations that set a weight's starting value.

Every function takes stacks of matrices: a: (..., n, k).
"""

from __future__ import annotations

import math

import numpy as np

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...backend.device import array_namespace
from ...functions.creation import eye

# exp(X) for ||X||_1 <= 1 from its Taylor polynomial of degree 19: the first term left out is
# below 1 / 20! ~ 4e-19, under double precision's rounding.
_TAYLOR_DEGREE = 19
# Paterson-Stockmeyer: the polynomial in blocks of 4 terms, a Horner scheme in X**4, costs
# 3 + 4 matmuls instead of 18.
_BLOCK = 4


def _identity_like(a: Tensor, rows: int, columns: int | None = None) -> Tensor:
    return eye(rows, columns, dtype=a.dtype, device=a.device)


def matrix_exp(a: Tensor) -> Tensor:
    """The matrix exponential exp(A) = sum_j A**j / j!, a: (..., n, n) -> (..., n, n).

    Scaling and squaring: exp(A) = exp(A / 2**s) ** (2**s), with s chosen so that the scaled
    matrix has 1-norm at most 1 (one s for the whole stack), where the Taylor polynomial of
    degree 19 is exact to double precision. Differentiable to any order through its matmuls.
    """
    n = a.shape[-1]
    if a.numel() == 0:
        return a + _identity_like(a, n)
    with no_grad():  # (not detach: a frozen graph must see that s depends on the values)
        norm = a.abs().sum(dim=-2).amax().item()  # the largest 1-norm in the stack
    squarings = max(0, math.ceil(math.log2(norm))) if norm > 0 else 0
    x = a * (0.5**squarings)

    powers = [_identity_like(a, n), x]  # X**0 .. X**_BLOCK
    for _ in range(_BLOCK - 1):
        powers.append(powers[-1] @ x)
    coefficients = [1.0 / math.factorial(j) for j in range(_TAYLOR_DEGREE + 1)]

    def block(start: int) -> Tensor:  # sum_r c[start + r] X**r, r < _BLOCK
        terms = [coefficients[start + r] * powers[r] for r in range(_BLOCK)]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    starts = list(range(0, _TAYLOR_DEGREE + 1, _BLOCK))
    result = block(starts[-1])
    for start in reversed(starts[:-1]):
        result = block(start) + result @ powers[_BLOCK]
    for _ in range(squarings):
        result = result @ result
    return result


def householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 H_2 ... H_k, with H_i = I - tau_i v_i v_i^T and v_i the i-th
    column of ``a`` below the diagonal, with a 1 on the diagonal and zeros above
    (``torch.linalg.householder_product``). a: (..., n, k), tau: (..., k) -> (..., n, k).

    Built from the right: each reflector is a rank-1 update of the product so far."""
    n, k = a.shape[-2], a.shape[-1]
    reflectors = a.tril(-1) + _identity_like(a, n, k)  # (..., n, k)
    product = _identity_like(a, n, k).expand(*a.shape[:-2], n, k)  # (..., n, k)
    for index in reversed(range(k)):
        v = reflectors[..., :, index : index + 1]  # (..., n, 1)
        scale = tau[..., index : index + 1].unsqueeze(-1)  # (..., 1, 1)
        product = product - scale * (v @ (v.mT @ product))
    return product


# ----- outside the graph: starting values ------------------------------------------------------
def is_orthogonal(q: Tensor) -> bool:
    """Whether the columns of q: (..., n, k) are orthonormal, to a tolerance that grows with n."""
    array = q.detach().array
    xp = array_namespace(array)
    n, k = array.shape[-2], array.shape[-1]
    tolerance = 10.0 * n * np.finfo(array.dtype).eps
    gram = xp.swapaxes(array, -1, -2) @ array
    return bool(xp.allclose(gram, xp.eye(k, dtype=array.dtype), atol=tolerance))


def make_orthogonal(a: Tensor) -> Tensor:
    """The Q factor of a = QR for a tall a: (..., n, k) -> (..., n, k), with its columns' signs
    chosen so that R has a non-negative diagonal (a zero on R's diagonal zeroes the column, as
    in PyTorch)."""
    array = a.detach().array
    xp = array_namespace(array)
    q, r = xp.linalg.qr(array)
    signs = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))
    return Tensor(q * signs[..., None, :])


def geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's compact QR of a: (..., n, k) -> (reflectors (..., n, k), tau (..., min(n, k))):
    R on and above the diagonal, the Householder vectors below it (``torch.geqrf``)."""
    array = a.detach().array
    xp = array_namespace(array)
    transposed, tau = xp.linalg.qr(array, mode="raw")  # LAPACK's column-major layout
    return Tensor(xp.ascontiguousarray(xp.swapaxes(transposed, -1, -2))), Tensor(tau)
