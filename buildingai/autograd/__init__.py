"""Tensors, the dynamic graph, and the backward engine."""

from .dispatch import DispatchMode, active_modes, apply, dispatch_mode
from .engine import backward, grad
from .gradients import Gradients
from .mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .node import Node
from .tensor import Tensor
