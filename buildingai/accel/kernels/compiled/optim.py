"""Compiled twins of optimizer updates: one pass over the parameter, its gradient and its
state, where the NumPy forms (``sgd_update`` and ``adam_update`` in ``accel/optimizers.py``)
make four to ten. Flat float32 arrays of one length; an absent optional array (SGD's momentum
buffer without momentum, AMSGrad's maximum) arrives empty."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@njit(inline="always", fastmath={"contract"})
def _effective_gradient(grad, param, l2, maximize):
    """The gradient a rule follows at one element: ±grad, plus the L2 term where l2 is not 0
    (as the NumPy form: 0 * an infinite parameter adds no NaN)."""
    g = -grad if maximize else grad
    return g + param * l2 if l2 != _ZERO else g


@njit(parallel=True, nogil=True, cache=True, fastmath={"contract"})
def sgd(
    param,
    grad,
    momentum_buffer,
    lr,
    momentum,
    dampening,
    nesterov,
    weight_decay,
    maximize,
    first_step,
):
    """``sgd_update`` in one pass, in place, with the reference's formulas and order:
    g = ±grad + wd p; b = g on the first step, else (1 - dampening) g + momentum b;
    d = g + momentum b (Nesterov), b (momentum) or g; p = -lr d + p."""
    l2 = np.float32(weight_decay)
    mu = np.float32(momentum)
    keep = np.float32(1.0 - dampening)
    step = np.float32(-lr)
    with_momentum = momentum_buffer.size > 0
    for i in prange(param.size):
        p = param[i]
        g = _effective_gradient(grad[i], p, l2, maximize)
        direction = g
        if with_momentum:
            b = g if first_step else keep * g + mu * momentum_buffer[i]
            momentum_buffer[i] = b
            direction = g + mu * b if nesterov else b
        param[i] = step * direction + p


@njit(parallel=True, nogil=True, cache=True, fastmath={"contract"})
def adam(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    decoupled_weight_decay,
    maximize,
    step_size,
    bias_correction2_sqrt,
):
    """``adam_update`` in one pass, in place, with the reference's formulas and order:
    m = (1 - b1) g + b1 m, v = (1 - b2) g^2 + b2 v (v_max = max(v_max, v) with AMSGrad),
    p = decay p - step_size bc2 m / (sqrt(v) + eps bc2)."""
    one_minus_beta1 = np.float32(1.0 - beta1)
    one_minus_beta2 = np.float32(1.0 - beta2)
    b1 = np.float32(beta1)
    b2 = np.float32(beta2)
    l2 = np.float32(0.0 if decoupled_weight_decay else weight_decay)
    decay = np.float32(1.0 - lr * weight_decay if decoupled_weight_decay else 1.0)
    shift = np.float32(eps * bias_correction2_sqrt)
    step = np.float32(-step_size * bias_correction2_sqrt)
    amsgrad = max_exp_avg_sq.size > 0
    for i in prange(param.size):
        p = param[i]
        g = _effective_gradient(grad[i], p, l2, maximize)
        m = one_minus_beta1 * g + b1 * exp_avg[i]
        v = one_minus_beta2 * (g * g) + b2 * exp_avg_sq[i]
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            v = max(max_exp_avg_sq[i], v)
            max_exp_avg_sq[i] = v
        param[i] = step * (m / (math.sqrt(v) + shift)) + decay * p
