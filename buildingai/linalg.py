"""``torch.linalg``'s spelling: ``buildingai.linalg.det``, ``inv``, ``solve``, ``cholesky``,
``qr``, ``eigh``, ``svd``, ``pinv``, ``lstsq``... (in ``functions/linear_algebra.py``) and the
norms ``norm``, ``matrix_norm``, ``vector_norm`` and ``svdvals`` (in
``functions/matrix_norms.py``)."""

from .functions.linalg import matmul
from .functions.linear_algebra import (
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_exp,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    slogdet,
    solve,
    solve_triangular,
)
from .functions.linear_algebra import linalg_cholesky as cholesky
from .functions.linear_algebra import linalg_cross as cross
from .functions.linear_algebra import linalg_qr as qr
from .functions.linear_algebra import linalg_svd as svd
from .functions.matrix_norms import linalg_norm as norm
from .functions.matrix_norms import matrix_norm, svdvals, vector_norm
from .ops.decompositions import LinAlgError

__all__ = [
    "LinAlgError",
    "cholesky",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vector_norm",
]
