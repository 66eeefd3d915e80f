"""``torch.backends.cuda``: whether the GPU backend (CuPy) is installed, and the TF32 flag of
matrix products, kept as PyTorch's is (see ``buildingai.backends``)."""

from __future__ import annotations

import importlib.util


def is_built() -> bool:
    """True when CuPy, BuildingAI's GPU backend, is installed (a GPU may still be missing: ask
    ``buildingai.cuda.is_available()``)."""
    return importlib.util.find_spec("cupy") is not None


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: flags a program may set; they change nothing here.
    TF32 products: ``buildingai.set_math_precision("tf32")``."""

    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()
