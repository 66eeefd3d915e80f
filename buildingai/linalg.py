"""``torch.linalg``'s spelling: ``buildingai.linalg.norm``, ``matrix_norm``, ``vector_norm`` and
``svdvals`` (the functions live in ``functions/matrix_norms.py``)."""

from .functions.matrix_norms import linalg_norm as norm
from .functions.matrix_norms import matrix_norm, svdvals, vector_norm

__all__ = ["matrix_norm", "norm", "svdvals", "vector_norm"]
