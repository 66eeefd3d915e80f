"""``buildingai.cuda.amp``: PyTorch's older spelling (``torch.cuda.amp``) of mixed precision.

``GradScaler`` is ``buildingai.amp.GradScaler`` (same arguments). ``autocast`` takes
``torch.cuda.amp.autocast``'s arguments and returns ``buildingai.amp.autocast``; its default
dtype is float16, as there. Both work on the CPU as well: BuildingAI's autocast lowers the
products of whatever device the tensors are on.
"""

from __future__ import annotations

from ..amp import GradScaler
from ..amp import autocast as _autocast
from ..backend.dtypes import float16


def autocast(enabled: bool = True, dtype=float16, cache_enabled: bool = True) -> _autocast:
    """``with autocast(): ...``: products in ``dtype`` (float16 or bfloat16) inside the block.
    ``cache_enabled`` is accepted for PyTorch's signature; BuildingAI keeps no cast cache."""
    return _autocast(dtype=dtype, enabled=enabled)


__all__ = ["GradScaler", "autocast"]
