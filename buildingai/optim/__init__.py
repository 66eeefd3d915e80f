"""Optimizers, learning-rate schedulers and gradient clipping.

Each optimizer is a thin class over its textbook per-parameter rule, ``update(param, grad,
state, group)``, in place on backend arrays. The fused forms that run with acceleration on live
in ``buildingai/accel/optimizers.py``.
"""

from ..backend.threads import get_num_threads, set_num_threads  # the accelerated step uses them
from . import lr_scheduler, schedulers
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .chained_scheduler import ChainedScheduler
from .clip import (
    NonFiniteNormError,
    clip_grad_hook,
    clip_grad_norm_,
    clip_grad_value_,
    clip_value_hook,
)
from .cyclic_lr import CyclicLR
from .factor_schedulers import ConstantLR, MultiplicativeLR, PolynomialLR
from .lbfgs import LBFGS
from .lion import Lion
from .nadam import NAdam
from .optimizer import OptimizerBase, OptimizerError, StepHookHandle
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
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
from .sgd import SGD

Optimizer = OptimizerBase  # PyTorch's name for the base class

__all__ = [
    "ASGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LBFGS",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "Lion",
    "MultiStepLR",
    "MultiplicativeLR",
    "NAdam",
    "NonFiniteNormError",
    "OneCycleLR",
    "Optimizer",
    "OptimizerBase",
    "OptimizerError",
    "PolynomialLR",
    "RAdam",
    "RMSprop",
    "ReduceLROnPlateau",
    "Rprop",
    "SGD",
    "SequentialLR",
    "StepHookHandle",
    "StepLR",
    "WarmupLR",
    "clip_grad_hook",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_value_hook",
    "get_num_threads",
    "lr_scheduler",
    "schedulers",
    "set_num_threads",
]
