"""Activation kernels with a compiled twin (``compiled/activations_fused.py``): the forwards of
elu/selu/celu, hardsigmoid, hardswish and logsigmoid, and their gradients as ``grad * f'(x)``
in one array.

The NumPy forms here are the references the twins are tested against, made of the in-place
passes of ``activations_extra.py``; a twin reads each input once and writes once, where those
take three to six passes (PyTorch's kernels take one). ``kernel(xp, *inputs, out, **params)``.
"""

from __future__ import annotations

from . import activations_extra as extra
from .compiled import ANY_SIZE, compiled_twin

_EXPONENTIAL = ("alpha", "scale", "input_scale")


@compiled_twin("activations_fused.exponential_linear", _EXPONENTIAL, min_work=ANY_SIZE)
def exponential_linear(xp, x, out, *, alpha, scale, input_scale) -> None:
    """scale * x above 0, alpha * scale * expm1(input_scale * x) up to 0 (NaN stays NaN)."""
    extra.exponential_linear(xp, x, out, alpha=alpha, scale=scale, input_scale=input_scale)


@compiled_twin("activations_fused.exponential_linear_grad", _EXPONENTIAL, min_work=ANY_SIZE)
def exponential_linear_grad(xp, grad, x, out, *, alpha, scale, input_scale) -> None:
    """grad * f'(x): alpha * scale * input_scale * exp(input_scale * x) up to 0, then scale."""
    extra.exponential_linear_derivative(
        xp, x, out, alpha=alpha, scale=scale, input_scale=input_scale
    )
    out *= grad


@compiled_twin("activations_fused.hardsigmoid", min_work=ANY_SIZE)
def hardsigmoid(xp, x, out) -> None:
    """min(max(x + 3, 0), 6) / 6 (NaN stays NaN)."""
    extra.hardsigmoid(xp, x, out)


@compiled_twin("activations_fused.hardsigmoid_grad", ("one_sixth",), min_work=ANY_SIZE)
def hardsigmoid_grad(xp, grad, x, out, *, one_sixth) -> None:
    """grad * one_sixth strictly inside (-3, 3), else 0 (NaN: 0)."""
    extra.hardsigmoid_derivative(xp, x, out, one_sixth=one_sixth)
    out *= grad


@compiled_twin("activations_fused.hardswish", min_work=ANY_SIZE)
def hardswish(xp, x, out) -> None:
    """x * min(max(x + 3, 0), 6) / 6 (NaN stays NaN)."""
    extra.hardswish(xp, x, out)


@compiled_twin("activations_fused.hardswish_grad", min_work=ANY_SIZE)
def hardswish_grad(xp, grad, x, out) -> None:
    """0 up to -3, grad * (x / 3 + 0.5) inside (-3, 3), then grad (NaN: grad)."""
    extra.hardswish_derivative(xp, x, out)
    out *= grad


@compiled_twin("activations_fused.logsigmoid", min_work=ANY_SIZE)
def logsigmoid(xp, x, out) -> None:
    """min(x, 0) - log1p(exp(-|x|)) (NaN stays NaN)."""
    extra.logsigmoid(xp, x, out)


@compiled_twin("activations_fused.logsigmoid_grad", min_work=ANY_SIZE)
def logsigmoid_grad(xp, grad, x, out) -> None:
    """grad * sigmoid(-x) = grad / (1 + exp(x)) (0 where exp overflows; NaN stays NaN)."""
    extra.logsigmoid_derivative(xp, x, out)
    out *= grad
