"""Mixed precision: ``autocast`` (per-op dtypes from the op records) and ``GradScaler`` (loss
scaling for float16). The matmul/conv compute precision of float32 work is
``buildingai.set_math_precision``."""

from .autocast import PolicyTable, autocast
from .grad_scaler import GradScaler, GradScalerError

__all__ = ["GradScaler", "GradScalerError", "PolicyTable", "autocast"]
