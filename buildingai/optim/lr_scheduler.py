"""``buildingai.optim.lr_scheduler``: PyTorch's spelling (``torch.optim.lr_scheduler``) of the
schedulers in ``buildingai.optim.schedulers``; the same classes, not copies.

``_LRScheduler`` is the base class's older PyTorch name, which custom schedulers in older
programs subclass.
"""

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
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "OneCycleLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
    "WarmupLR",
]
