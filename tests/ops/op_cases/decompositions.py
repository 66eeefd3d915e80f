"""Cases of the decomposition records: det and its cofactor gradient, slogdet's two parts, inv,
solve, cholesky, the QR factors, eigvalsh and the eigenvectors, the singular vectors, pinv.

Inputs are built so that each record is well defined: well-conditioned square matrices (rows
of a diagonally dominant matrix permuted, so determinants of both signs occur), symmetric ones
for eigh, positive-definite ones for cholesky. Eigenvectors and singular vectors are each
determined up to a sign, and the PyTorch references take the signs NumPy chose.
"""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .base import Draw, Sample, backward_of, case, torch

FLOAT_DTYPES = (np.float32, np.float64)
SWEEP = ("tests/functions/test_linear_algebra.py",)


def _tensor(d: Draw, array, grad: bool = False) -> bai.Tensor:
    """A (n, ...) Tensor of ``array`` whose first axis is the symbolic batch size "n"."""
    return d.tensor(array.astype(d.dtype), {0: "n"}, requires_grad=grad)


def _square(d: Draw, size: int | None = None, grad: bool = False) -> bai.Tensor:
    """A well-conditioned (n, k, k) stack."""
    k = d.size(1, 4) if size is None else size
    array = d.rng.uniform(-1.0, 1.0, d.shape(("n", k, k))) + 3.0 * np.eye(k)
    return _tensor(d, array[..., d.rng.permutation(k), :], grad)


def _symmetric(d: Draw, grad: bool = False) -> bai.Tensor:
    k = d.size(1, 4)
    array = d.rng.uniform(-2.0, 2.0, d.shape(("n", k, k)))
    return _tensor(d, array + np.swapaxes(array, -1, -2), grad)


def _positive_definite(d: Draw) -> bai.Tensor:
    k = d.size(1, 4)
    array = d.rng.uniform(-1.0, 1.0, d.shape(("n", k, k)))
    return _tensor(d, array @ np.swapaxes(array, -1, -2) + k * np.eye(k))


def _rectangular(d: Draw, rows: int | None = None, columns: int | None = None) -> bai.Tensor:
    rows = d.size(1, 4) if rows is None else rows
    columns = d.size(1, 4) if columns is None else columns
    return _tensor(d, d.rng.uniform(-2.0, 2.0, d.shape(("n", rows, columns))))


# ----- determinants --------------------------------------------------------------------------------


case(
    "det",
    lambda d: d.call("det", _square(d)),
    dtypes=FLOAT_DTYPES,
    torch=torch.linalg.det,
    gradgrad=True,
    covered_by=SWEEP,
)


def _cofactor(d: Draw) -> Sample:
    a = _square(d, grad=True)
    return d.capture("cofactor", lambda: backward_of(bai.linalg.det, a), symbols={(0, 0): "n"})


def _torch_cofactor(a):
    """The gradient of torch.linalg.det, kept differentiable (PyTorch's SVD-based form)."""
    with torch.enable_grad():
        leaf = a if a.requires_grad else a.detach().requires_grad_()
        (grad,) = torch.autograd.grad(torch.linalg.det(leaf).sum(), leaf, create_graph=True)
    return grad


case(
    "cofactor",
    _cofactor,
    dtypes=FLOAT_DTYPES,
    torch=_torch_cofactor,
    gradgrad=True,
    onnx="ONNX has no adjugate; the record serves det's gradient",
    covered_by=SWEEP,
)

_OVERFLOW = "ONNX has only Det, which over- or underflows where slogdet does not"
case(
    "slogdet_sign",
    lambda d: d.call("slogdet_sign", _square(d)),
    dtypes=FLOAT_DTYPES,
    torch=lambda a: torch.linalg.slogdet(a).sign,
    onnx=_OVERFLOW,
    covered_by=SWEEP,
)
case(
    "logabsdet",
    lambda d: d.call("logabsdet", _square(d)),
    dtypes=FLOAT_DTYPES,
    torch=lambda a: torch.linalg.slogdet(a).logabsdet,
    gradgrad=True,
    onnx=_OVERFLOW,
    covered_by=SWEEP,
)


# ----- inverse and solves --------------------------------------------------------------------------


case(
    "inv",
    lambda d: d.call("inv", _square(d)),
    dtypes=FLOAT_DTYPES,
    torch=torch.linalg.inv,
    gradgrad=True,
    onnx="ONNX has no standard matrix inverse (Inverse is a com.microsoft contrib op)",
    covered_by=SWEEP,
)


def _solve(d: Draw) -> Sample:
    a = _square(d)
    b = d.floats("n", a.shape[-1], d.size(1, 3))
    return d.capture("solve", lambda: bai.linalg.solve(a, b))


case(
    "solve",
    _solve,
    dtypes=FLOAT_DTYPES,
    torch=torch.linalg.solve,
    gradgrad=True,
    onnx="ONNX has no linear solver",
    covered_by=SWEEP,
)

case(
    "cholesky",
    lambda d: d.call("cholesky", _positive_definite(d)),
    dtypes=FLOAT_DTYPES,
    torch=torch.linalg.cholesky,
    gradgrad=True,
    onnx="ONNX has no Cholesky factorisation",
    covered_by=SWEEP,
)


# ----- QR, eigh, singular vectors ------------------------------------------------------------------


def _qr(name: str):
    def make(d: Draw) -> Sample:
        """Reduced mode on any shape; complete mode only where it is differentiable (m <= n)."""
        mode = d.variant(("reduced", "complete"))
        rows = d.size(1, 4)
        a = _rectangular(d, rows, d.size(rows, 4) if mode == "complete" else None)
        return d.capture(name, lambda: bai.linalg.qr(a, mode))

    return make


_NO_QR = "ONNX has no QR decomposition"
case(
    "qr_q",
    _qr("qr_q"),
    dtypes=FLOAT_DTYPES,
    torch=lambda a, *, mode: torch.linalg.qr(a, mode).Q,
    gradgrad=True,
    onnx=_NO_QR,
    covered_by=SWEEP,
)
case(
    "qr_r",
    _qr("qr_r"),
    dtypes=FLOAT_DTYPES,
    torch=lambda a, *, mode: torch.linalg.qr(a, mode).R,
    gradgrad=True,
    onnx=_NO_QR,
    covered_by=SWEEP,
)


def _eigh(name: str):
    def make(d: Draw) -> Sample:
        a = _symmetric(d)
        uplo = d.variant(("L", "U"))
        return d.capture(name, lambda: bai.linalg.eigh(a, uplo))

    return make


def _torch_eigh_vectors(a, *, uplo):
    """PyTorch's eigenvectors, each with the sign NumPy gave it."""
    vectors = torch.linalg.eigh(a, UPLO=uplo).eigenvectors
    numpy_vectors = np.linalg.eigh(a.detach().numpy(), UPLO=uplo)[1]
    signs = torch.sign((vectors.detach() * torch.from_numpy(numpy_vectors)).sum(-2, keepdim=True))
    return vectors * signs


_NO_EIGH = "ONNX has no eigendecomposition"
case(
    "eigvalsh",
    _eigh("eigvalsh"),
    dtypes=FLOAT_DTYPES,
    torch=lambda a, *, uplo: torch.linalg.eigvalsh(a, UPLO=uplo),
    gradgrad=True,
    onnx=_NO_EIGH,
    covered_by=SWEEP,
)
case(
    "eigh_vectors",
    _eigh("eigh_vectors"),
    dtypes=FLOAT_DTYPES,
    torch=_torch_eigh_vectors,
    gradgrad=True,
    onnx=_NO_EIGH,
    covered_by=SWEEP,
)


def _svd(name: str):
    def make(d: Draw) -> Sample:
        a = _rectangular(d)
        full_matrices = d.variant((False, True))
        return d.capture(name, lambda: bai.linalg.svd(a, full_matrices))

    return make


def _torch_singular_vectors(factor: int):
    """PyTorch's U or Vh, each pair (u_i, v_i) with the signs NumPy gave it; the vectors
    beyond min(m, n) of a full SVD (any basis of a complement, which gets no gradient) are
    NumPy's."""

    def reference(a, *, full_matrices):
        u, s, vh = torch.linalg.svd(a, full_matrices=full_matrices)
        numpy_u, _, numpy_vh = np.linalg.svd(a.detach().numpy(), full_matrices=full_matrices)
        k = s.shape[-1]
        paired = (u[..., :k].detach() * torch.from_numpy(numpy_u[..., :k])).sum(-2)
        signs = torch.sign(paired)  # (..., k)
        if factor == 0:
            rest = torch.from_numpy(numpy_u[..., k:])
            return torch.cat([u[..., :k] * signs.unsqueeze(-2), rest], dim=-1)
        rest = torch.from_numpy(numpy_vh[..., k:, :])
        return torch.cat([vh[..., :k, :] * signs.unsqueeze(-1), rest], dim=-2)

    return reference


_NO_SVD = "ONNX has no singular value decomposition"
case(
    "svd_u",
    _svd("svd_u"),
    dtypes=FLOAT_DTYPES,
    torch=_torch_singular_vectors(0),
    gradgrad=True,
    onnx=_NO_SVD,
    covered_by=SWEEP,
)
case(
    "svd_vh",
    _svd("svd_vh"),
    dtypes=FLOAT_DTYPES,
    torch=_torch_singular_vectors(1),
    gradgrad=True,
    onnx=_NO_SVD,
    covered_by=SWEEP,
)


def _pinv(d: Draw) -> Sample:
    hermitian = d.variant((False, True, False))
    a = _symmetric(d) if hermitian else _rectangular(d)
    atol = d.choice((None, 0.1))
    return d.capture("pinv", lambda: bai.linalg.pinv(a, hermitian=hermitian, atol=atol))


case(
    "pinv",
    _pinv,
    dtypes=FLOAT_DTYPES,
    torch=lambda a, *, atol, rtol, hermitian: torch.linalg.pinv(
        a, atol=atol, rtol=rtol, hermitian=hermitian
    ),
    gradgrad=True,
    onnx=_NO_SVD,
    covered_by=SWEEP,
)
