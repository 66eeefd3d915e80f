"""Optimizers, learning-rate schedulers and gradient clipping.

Each optimizer is a thin class over a pure per-parameter update function (``sgd_update``,
``adam_update``, ...) that works in place on backend arrays.
"""

from ..backend.threads import get_num_threads, set_num_threads  # optimizer updates use them too
from . import schedulers
from .adadelta import Adadelta, adadelta_update
from .adagrad import Adagrad, adagrad_update
from .adam import Adam, AdamW, adam_update
from .clip import (
    NonFiniteNormError,
    clip_grad_hook,
    clip_grad_norm_,
    clip_grad_value_,
    clip_value_hook,
)
from .lion import Lion, lion_update
from .optimizer import OptimizerBase, OptimizerError, StepHookHandle
from .rmsprop import RMSprop, rmsprop_update
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
from .sgd import SGD, sgd_update

Optimizer = OptimizerBase  # PyTorch's name for the base class

__all__ = [
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "Lion",
    "MultiStepLR",
    "NonFiniteNormError",
    "OneCycleLR",
    "Optimizer",
    "OptimizerBase",
    "OptimizerError",
    "RMSprop",
    "ReduceLROnPlateau",
    "SGD",
    "SequentialLR",
    "StepHookHandle",
    "StepLR",
    "WarmupLR",
    "adadelta_update",
    "adagrad_update",
    "adam_update",
    "clip_grad_hook",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_value_hook",
    "get_num_threads",
    "lion_update",
    "rmsprop_update",
    "schedulers",
    "set_num_threads",
    "sgd_update",
]
