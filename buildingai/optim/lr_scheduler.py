"""``buildingai.optim.lr_scheduler``: PyTorch's spelling (``torch.optim.lr_scheduler``) of the
schedulers in ``buildingai.optim`` (``schedulers.py``, ``factor_schedulers.py``,
``cyclic_lr.py``, ``chained_scheduler.py``); the same classes, not copies.

``_LRScheduler`` is the base class's older PyTorch name, which custom schedulers in older
programs subclass.
"""

from .chained_scheduler import ChainedScheduler
from .cyclic_lr import CyclicLR
from .factor_schedulers import ConstantLR, MultiplicativeLR, PolynomialLR
from .schedulers import (
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
    WarmupLR,
)

_LRScheduler = LRScheduler

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
    "WarmupLR",
]
