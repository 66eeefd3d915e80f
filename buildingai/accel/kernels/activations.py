"""Array kernels of the activations in ``ops/activation.py`` and ``ops/special.py``: each forward
and first derivative as a few in-place passes over preallocated arrays, so ``split.elementwise``
can cut them across threads, and each marked with its compiled twin (``compiled/activations.py``,
one pass on numba's threads; ``compiled/cuda.py`` on the GPU). ``kernel(xp, *inputs, *outputs)``
takes arrays of one shape; the records' forwards are the reference they are tested against.
"""

from __future__ import annotations

import numpy as np

from ...ops.special import GELU_TANH_CUBIC, SQRT_2_OVER_PI
from .compiled import ANY_SIZE, compiled_twin
from .scalar_loops import extremum_with_scalar

# ----- rectifiers ---------------------------------------------------------------------------------


@compiled_twin("activations.relu")
def relu(xp, x, out) -> None:
    """out = max(x, 0) for float NumPy arrays of one shape; NaN stays NaN."""
    extremum_with_scalar(xp, xp.maximum, x, 0, out=out)


@compiled_twin("activations.relu_grad", min_work=ANY_SIZE)
def relu_grad(xp, grad, out, result) -> None:
    """result = grad where out != 0, else 0, for float NumPy arrays of one shape."""
    kept = out != 0
    # NumPy's where over an irregular mask is much slower than a product with it; the product
    # equals where's result unless an inf or NaN gradient lands where the mask is off (0 * inf
    # is NaN), so it is taken when every gradient is finite.
    if bool(np.isfinite(grad).all()):
        np.multiply(grad, kept, out=result)
    else:
        np.copyto(result, np.where(kept, grad, grad.dtype.type(0)))


def exact_one(dtype, slope) -> bool:
    """Whether ``_leaky_slopes`` gives exactly 1 for x > 0 (so x passes unchanged): true for
    every slope in [0, 1], checked for the others."""
    one = np.ones(1, dtype)
    one *= 1 - slope
    one += slope
    return bool(one[0] == 1)


def _leaky_slopes(xp, x, slopes, *, slope) -> None:
    """slopes = 1 where x > 0, else ``slope`` (x's dtype): a compare written as float and one
    multiply-add, where NumPy's ``where`` over an irregular mask is several times slower."""
    np.greater(x, 0, out=slopes, casting="unsafe")
    slopes *= 1 - slope
    slopes += slope


@compiled_twin("activations.leaky_relu", params=("slope",), min_work=ANY_SIZE)
def leaky_relu(xp, x, out, *, slope) -> None:
    """out = x where x > 0, else slope * x (float NumPy arrays of one shape)."""
    _leaky_slopes(xp, x, out, slope=slope)
    out *= x


@compiled_twin("activations.leaky_relu_grad", params=("slope",), min_work=ANY_SIZE)
def leaky_relu_grad(xp, grad, x, result, *, slope) -> None:
    """result = grad where x > 0, else slope * grad (float NumPy arrays of one shape)."""
    _leaky_slopes(xp, x, result, slope=slope)
    result *= grad


# ----- sigmoid and silu ---------------------------------------------------------------------------


def reciprocal(xp, array):
    """1 / array, in place where it can be: ``divide(1, a)`` is faster than NumPy's
    ``reciprocal`` on float32 and rounds the same."""
    if array.ndim:
        return xp.divide(1, array, out=array)
    return xp.divide(1, array)


@compiled_twin("activations.sigmoid", min_work=ANY_SIZE)
def sigmoid(xp, x, out) -> None:
    """out = 1 / (1 + exp(-x)) for arrays of one shape."""
    xp.negative(x, out=out)
    with np.errstate(over="ignore"):
        xp.exp(out, out=out)
    out += 1
    xp.divide(1, out, out=out)


@compiled_twin("activations.sigmoid_grad")
def sigmoid_grad(xp, grad, s, out) -> None:
    """out = grad * s (1 - s); arrays of one shape and dtype."""
    xp.subtract(1, s, out=out)
    out *= s
    out *= grad


@compiled_twin("activations.tanh", threads_only=True)
def tanh(xp, x, out) -> None:
    """out = tanh(x) for arrays of one shape. (On one thread NumPy's own tanh, vectorised by
    NumPy itself, beats the twin's Cephes form; the twin takes the calls it splits.)"""
    xp.tanh(x, out=out)


@compiled_twin("activations.tanh_grad")
def tanh_grad(xp, grad, t, out) -> None:
    """out = grad (1 - t^2), t the tanh's output; arrays of one shape and dtype."""
    xp.multiply(t, t, out=out)
    xp.subtract(1, out, out=out)
    out *= grad


@compiled_twin("activations.silu", min_work=ANY_SIZE)
def silu(xp, x, sigmoid_out, out) -> None:
    """sigmoid_out = 1 / (1 + exp(-x)) and out = x * sigmoid_out, for arrays of one shape."""
    sigmoid(xp, x, sigmoid_out)
    xp.multiply(x, sigmoid_out, out=out)


@compiled_twin("activations.silu_grad")
def silu_grad(xp, grad, x, s, out) -> None:
    """out = grad * s (1 + x (1 - s)), s = sigmoid(x); arrays of one shape and dtype."""
    xp.subtract(1, s, out=out)
    out *= x
    out += 1
    out *= s
    out *= grad


# ----- softplus -----------------------------------------------------------------------------------

# float32 exp overflows above 88.7: the float32 kernels need every kept value below it
EXP32_FINITE = 80.0


def _replace_above(xp, out, scaled, threshold, replacement):
    """out where scaled <= threshold, else replacement (all one shape): a masked copy of the
    few values above, where NumPy's ``where`` over the whole array is far slower."""
    above = scaled > threshold
    if above.any():
        out[above] = replacement[above]
    return out


@compiled_twin("activations.softplus", params=("beta", "threshold"), min_work=ANY_SIZE)
def softplus_float32(xp, x, out, *, beta, threshold) -> None:
    """out = log(1 + exp(beta x)) / beta, and x where beta x > threshold, for float32 NumPy
    arrays of one shape and a threshold below exp's overflow. log1p(exp(y)): exp cannot
    overflow below the threshold, and NumPy's logaddexp is twenty times slower on float32;
    the rare values above the threshold are copied."""
    scaled = x * x.dtype.type(beta) if beta != 1 else x
    with np.errstate(over="ignore"):  # above the threshold: replaced below
        xp.exp(scaled, out=out)
    xp.log1p(out, out=out)
    if beta != 1:
        out /= beta
    _replace_above(xp, out, scaled, threshold, x)


@compiled_twin("activations.softplus_grad", params=("beta", "threshold"), min_work=ANY_SIZE)
def softplus_grad_float32(xp, grad, x, out, *, beta, threshold) -> None:
    """out = grad * sigmoid(beta x), and grad where beta x > threshold (float32 NumPy arrays
    of one shape)."""
    scaled = x * x.dtype.type(beta) if beta != 1 else x
    sigmoid(xp, scaled, out)
    out *= grad
    _replace_above(xp, out, scaled, threshold, grad)


# ----- gelu, tanh form (the exact form's float32 kernels are in gelu32.py) ------------------------


@compiled_twin("activations.gelu_tanh", min_work=ANY_SIZE)
def gelu_tanh(xp, x, out, gate) -> None:
    """out = 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); gate is
    set to sigmoid(2u). One exp instead of a tanh: NumPy's float32 tanh is about twice as slow
    as its exp, and the identity is exact."""
    # Overflow is harmless here and its warning is silenced (a clamp would be one more pass, as
    # long as five multiplies): x^3 and exp(-2u) may reach inf, and 1 / (1 + inf) = 0 is the
    # sigmoid there, so out = x sigmoid(2u) comes out as x or 0 (of x's sign) at the extremes.
    with np.errstate(over="ignore"):
        xp.multiply(x, x, out=gate)
        gate *= -2 * SQRT_2_OVER_PI * GELU_TANH_CUBIC
        gate -= 2 * SQRT_2_OVER_PI
        gate *= x  # -2u
        xp.exp(gate, out=gate)
    gate += 1
    reciprocal(xp, gate)
    xp.multiply(x, gate, out=out)


@compiled_twin("activations.gelu_tanh_grad", min_work=ANY_SIZE)
def gelu_tanh_grad(xp, grad, x, gate, out) -> None:
    """out = grad * d/dx[x s(2u)] = grad * s (1 + 2 x u' (1 - s)), s = gate = sigmoid(2u),
    u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2). 1 - s is computed again as sigmoid(-2u): taken
    from s, it would keep only float32's absolute precision where s is near 1, and 2 x u'
    magnifies that error."""
    rest = xp.multiply(x, x)
    rest *= 2 * SQRT_2_OVER_PI * GELU_TANH_CUBIC
    rest += 2 * SQRT_2_OVER_PI
    rest *= x  # 2u
    with np.errstate(over="ignore"):
        xp.exp(rest, out=rest)
    rest += 1
    reciprocal(xp, rest)  # sigmoid(-2u) = 1 - s
    xp.multiply(x, x, out=out)
    out *= 6 * SQRT_2_OVER_PI * GELU_TANH_CUBIC
    out += 2 * SQRT_2_OVER_PI
    out *= x  # 2 x u'
    out *= rest
    out += 1
    out *= gate
    out *= grad
