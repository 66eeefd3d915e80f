"""Gradient clipping: by total norm or by value, as functions and as optimizer step pre-hooks.

total_norm = clip_grad_norm_(params, max_norm=1.0)       # in the training loop, or
optimizer.register_step_pre_hook(clip_grad_hook(1.0))   # once, at setup
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..accel.vector_blas import sum_of_squares
from ..autograd import Tensor
from ..autograd.engine import defer_to_update
from ..backend import array_namespace
from ..backend.threads import blas_called, own_blas
from ..errors import BuildingAIError


class NonFiniteNormError(BuildingAIError, RuntimeError):
    """The total gradient norm is inf or NaN, so scaling by it would destroy the gradients."""


def _defer(function, *args):
    """While a training step is traced for ``buildingai.compile``, defer ``function(*args)`` to
    the step's optimizer update (the gradients exist only when the graph runs) and return a
    stand-in result; otherwise None."""
    return defer_to_update(lambda: function(*args))


def _gradients(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad.array for p in parameters if p.grad is not None]


def _vector_norm(xp, array, norm_type: float) -> float:
    """The ``norm_type``-norm of all entries of one array, as a Python float."""
    if array.size == 0:
        return 0.0 if norm_type != -math.inf else math.inf
    if array.dtype.itemsize < 4:  # half precision would overflow while summing
        array = array.astype(xp.float32)
    flat = array.reshape(-1)
    if norm_type == 2.0:
        squares = sum_of_squares(xp, flat)  # one BLAS pass where acceleration's binding takes it
        if squares is not None:
            return math.sqrt(squares)
        if xp is np and own_blas():
            # one pool: NumPy's BLAS threads stay asleep (a threaded dot would leave them
            # spinning on the pool's cores, and the next step's kernels on one thread)
            return math.sqrt(float(np.square(flat).sum()))
        blas_called()
        return math.sqrt(float(xp.dot(flat, flat)))  # BLAS: no |x|**2 temporary
    if norm_type == math.inf:
        return float(xp.max(xp.abs(flat)))
    if norm_type == -math.inf:
        return float(xp.min(xp.abs(flat)))
    if norm_type == 0:
        return float(xp.count_nonzero(flat))
    if norm_type == 1.0:
        return float(xp.sum(xp.abs(flat)))
    return float(xp.sum(xp.abs(flat) ** norm_type)) ** (1.0 / norm_type)


def _total_norm(norms: list[float], norm_type: float) -> float:
    """Combine per-tensor norms into the norm of all entries together."""
    if norm_type == math.inf:
        return max(norms)
    if norm_type == -math.inf:
        return min(norms)
    if norm_type == 0:
        return sum(norms)
    return float(np.linalg.norm(np.asarray(norms, dtype=np.float64), ord=norm_type))


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total norm (all gradients
    seen as one vector) is at most ``max_norm``; each gradient keeps its parameter's shape.
    Returns the total norm before clipping, as a 0-d Tensor of shape ``()`` (as
    ``torch.nn.utils.clip_grad_norm_``).

    Args:
        parameters: tensors whose ``.grad`` is clipped (those without a gradient are skipped).
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm; ``float("inf")`` for the largest absolute entry.
        error_if_nonfinite: raise ``NonFiniteNormError`` if the total norm is inf or NaN
            (otherwise the gradients are scaled by it, which makes them NaN, as PyTorch does).
        foreach: accepted for PyTorch's signature; each gradient array is scaled in place
            either way.
    """
    norm_type = float(norm_type)
    max_norm = float(max_norm)
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    deferred = _defer(clip_grad_norm_, parameters, max_norm, norm_type, error_if_nonfinite)
    if deferred is not None:  # a compiled step: clipping runs in its optimizer update
        return deferred
    grads = _gradients(parameters)
    if not grads:
        return Tensor(np.asarray(0.0, dtype=np.float32))
    xp = array_namespace(grads[0])
    total = _total_norm([_vector_norm(xp, g, norm_type) for g in grads], norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise NonFiniteNormError(
            f"[clip_grad_norm_] the total norm of order {norm_type} of the gradients is {total}, "
            "so they cannot be clipped",
            help="find where the gradient overflows (e.g. with anomaly detection), or pass "
            "error_if_nonfinite=False to scale by the non-finite norm anyway",
        )
    coefficient = max_norm / (total + 1e-6)
    # a NaN norm spreads to the gradients rather than being hidden (as in PyTorch)
    if coefficient < 1.0 or math.isnan(coefficient):
        for grad in grads:
            grad *= coefficient
    return Tensor(xp.asarray(total, dtype=grads[0].dtype))


def clip_grad_value_(
    parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient entry of ``parameters`` into ``[-clip_value, clip_value]``, in place
    (each gradient keeps its parameter's shape; ``foreach`` is accepted for PyTorch's
    signature)."""
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"[clip_grad_value_] clip_value must be >= 0, got {clip_value}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    if _defer(clip_grad_value_, parameters, clip_value) is not None:
        return  # a compiled step: clipping runs in its optimizer update
    for grad in _gradients(parameters):
        array_namespace(grad).clip(grad, -clip_value, clip_value, out=grad)


class clip_grad_hook:  # noqa: N801 - used like a function: clip_grad_hook(max_norm=1.0)
    """A step pre-hook clipping the total gradient norm of all the optimizer's parameters:
    ``optimizer.register_step_pre_hook(clip_grad_hook(max_norm=1.0))``.

    The gradients are scaled in place, each keeping its parameter's shape; ``last_total_norm``
    holds the norm measured before the latest clipping, as a float (for logging).
    """

    def __init__(
        self, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
    ) -> None:
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.error_if_nonfinite = error_if_nonfinite
        self.last_total_norm: float | None = None

    def __call__(self, optimizer) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        total = clip_grad_norm_(params, self.max_norm, self.norm_type, self.error_if_nonfinite)
        self.last_total_norm = float(total.item())

    def __repr__(self) -> str:
        return f"clip_grad_hook(max_norm={self.max_norm}, norm_type={self.norm_type})"


class clip_value_hook:  # noqa: N801 - used like a function: clip_value_hook(0.5)
    """A step pre-hook clamping every gradient entry of the optimizer's parameters into
    ``[-clip_value, clip_value]``, in place (each gradient keeps its parameter's shape)."""

    def __init__(self, clip_value: float) -> None:
        self.clip_value = clip_value

    def __call__(self, optimizer) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        clip_grad_value_(params, self.clip_value)

    def __repr__(self) -> str:
        return f"clip_value_hook(clip_value={self.clip_value})"
