"""Special functions and the smooth activations built on them: erf, sigmoid, silu, softplus, gelu.

NumPy has no ``erf``, so ``erf_array`` evaluates it in float64 with the rational approximations of
fdlibm's ``s_erf.c`` (W. J. Cody's method, as in FreeBSD and glibc libm): four ranges of |x|, each
a ratio of short polynomials, accurate to about one unit in the last place. On CuPy it defers to
``cupyx.scipy.special.erf``. The activations are written so that no intermediate overflows for
large |x| and no answer loses relative precision to cancellation. FLOP counts (``cost``) take
exp, tanh and erf as one operation each.
"""

from __future__ import annotations

import math

import numpy as np

from .families import FloatFunction
from .promotion import as_float

# ----- erf: fdlibm coefficients -------------------------------------------------------------
# Polynomial coefficients are listed from the highest power down, ready for Horner's rule.

# |x| < 0.84375: erf(x) = x + x * P(x^2) / Q(x^2)
_ERF_SMALL_P = (
    -2.37630166566501626084e-05,
    -5.77027029648944159157e-03,
    -2.84817495755985104766e-02,
    -3.25042107247001499370e-01,
    1.28379167095512558561e-01,
)
_ERF_SMALL_Q = (
    -3.96022827877536812320e-06,
    1.32494738004321644526e-04,
    5.08130628187576562776e-03,
    6.50222499887672944485e-02,
    3.97917223959155352819e-01,
    1.0,
)
# 0.84375 <= |x| < 1.25: erf(x) = erx + P(s) / Q(s), s = |x| - 1
_ERX = 8.45062911510467529297e-01
_ERF_MID_P = (
    -2.16637559486879084300e-03,
    3.54783043256182359371e-02,
    -1.10894694282396677476e-01,
    3.18346619901161753674e-01,
    -3.72207876035701323847e-01,
    4.14856118683748331666e-01,
    -2.36211856075265944077e-03,
)
_ERF_MID_Q = (
    1.19844998467991074170e-02,
    1.36370839120290507362e-02,
    1.26171219808761642112e-01,
    7.18286544141962662868e-02,
    5.40397917702171048937e-01,
    1.06420880400844228286e-01,
    1.0,
)
# 1.25 <= |x| < 1/0.35: erfc(x) = exp(-x^2 - 0.5625 + R(s) / S(s)) / x, s = 1 / x^2
_ERFC_NEAR_R = (
    -9.81432934416914548592e00,
    -8.12874355063065934246e01,
    -1.84605092906711035994e02,
    -1.62396669462573470355e02,
    -6.23753324503260060396e01,
    -1.05586262253232909814e01,
    -6.93858572707181764372e-01,
    -9.86494403484714822705e-03,
)
_ERFC_NEAR_S = (
    -6.04244152148580987438e-02,
    6.57024977031928170135e00,
    1.08635005541779435134e02,
    4.29008140027567833386e02,
    6.45387271733267880336e02,
    4.34565877475229228821e02,
    1.37657754143519042600e02,
    1.96512716674392571292e01,
    1.0,
)
# 1/0.35 <= |x| < 6: the same form with other coefficients
_ERFC_FAR_R = (
    -4.83519191608651397019e02,
    -1.02509513161107724954e03,
    -6.37566443368389627722e02,
    -1.60636384855821916062e02,
    -1.77579549177547519889e01,
    -7.99283237680523006574e-01,
    -9.86494292470009928597e-03,
)
_ERFC_FAR_S = (
    -2.24409524465858183362e01,
    4.74528541206955367215e02,
    2.55305040643316442583e03,
    3.19985821950859553908e03,
    1.53672958608443695994e03,
    3.25792512996573918826e02,
    3.03380607434824582924e01,
    1.0,
)
_ERFC_SWITCH = 1 / 0.35
# float32 and narrower: Eigen's single rational approximation x P(x^2) / Q(x^2) on [-4, 4] (erf
# rounds to +-1 in float32 beyond 4). One branch, so no gathers: about twice as fast as the fdlibm
# path. Evaluated in float64 it stays within 1.6 float32 units of the true value (in float32
# arithmetic the rounding of the long Horner chain would add several more).
_ERF32_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF32_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# Beyond 6, 1 - erf(x) < 2e-17: erf rounds to +-1 in float64.
_ERF_SATURATES = 6.0
_HIGH_WORD_MASK = 0xFFFFFFFF00000000


def _horner(s, coefficients):
    """Evaluate a polynomial (coefficients from the highest power) at the 1-d array ``s``,
    reusing one buffer."""
    result = s * coefficients[0]
    result += coefficients[1]
    for coefficient in coefficients[2:]:
        result *= s
        result += coefficient
    return result


def _erf_tail(xp, ax, r_coefficients, s_coefficients):
    """erf(|x|) = 1 - erfc(|x|) for 1.25 <= |x| < 6 (``ax`` a 1-d float64 array)."""
    s = 1.0 / (ax * ax)
    ratio = _horner(s, r_coefficients)
    ratio /= _horner(s, s_coefficients)
    # exp(-x^2) loses accuracy when x^2 is rounded; split x = z + (x - z), with z keeping only the
    # high 32 bits of x, so that z*z is exact and the correction (z - x)(z + x) is small.
    z = (ax.view(xp.uint64) & xp.uint64(_HIGH_WORD_MASK)).view(xp.float64)
    erfc = xp.exp(-z * z - 0.5625)
    erfc *= xp.exp((z - ax) * (z + ax) + ratio)
    erfc /= ax
    return 1.0 - erfc


def erf_array(xp, x):
    """erf of a backend array, elementwise, in the array's floating dtype.

    float64 is accurate to about one unit in the last place; float32, float16 and bfloat16 use a
    float32-grade approximation (within 1.6 float32 units). Integer and boolean inputs give float32
    (the default float dtype), as in PyTorch.
    """
    if xp.__name__ != "numpy":
        from cupyx.scipy.special import erf as cupy_erf

        return cupy_erf(x)
    if x.dtype == xp.float64:
        return _erf_float64(xp, x)
    dtype = x.dtype if x.dtype.kind in "fV" else xp.dtype(xp.float32)
    return _erf_float32(xp, x.astype(xp.float64)).astype(dtype, copy=False)


def _erf_float32(xp, x):
    """Eigen's approximation, on a float64 array holding float32-or-narrower values."""
    clipped = xp.clip(x, -4.0, 4.0)  # NaN stays NaN
    z = clipped * clipped
    numerator = _horner(z, _ERF32_P)
    numerator *= clipped
    numerator /= _horner(z, _ERF32_Q)
    return numerator


def _erf_float64(xp, x):
    # 1-d working copy: boolean indexing below needs at least one dimension
    ax = xp.abs(x.reshape(-1))
    # sign(|x|) is 1 for the saturated range and for inf, 0 at 0, and NaN for NaN: the right
    # starting values for everything the ranges below do not overwrite.
    out = xp.sign(ax)

    small = ax < 0.84375
    if small.any():
        v = ax[small]
        z = v * v
        ratio = _horner(z, _ERF_SMALL_P)
        ratio /= _horner(z, _ERF_SMALL_Q)
        ratio *= v
        ratio += v
        out[small] = ratio

    mid = (ax >= 0.84375) & (ax < 1.25)
    if mid.any():
        s = ax[mid] - 1.0
        ratio = _horner(s, _ERF_MID_P)
        ratio /= _horner(s, _ERF_MID_Q)
        ratio += _ERX
        out[mid] = ratio

    near = (ax >= 1.25) & (ax < _ERFC_SWITCH)
    if near.any():
        out[near] = _erf_tail(xp, ax[near], _ERFC_NEAR_R, _ERFC_NEAR_S)

    far = (ax >= _ERFC_SWITCH) & (ax < _ERF_SATURATES)
    if far.any():
        out[far] = _erf_tail(xp, ax[far], _ERFC_FAR_R, _ERFC_FAR_S)

    xp.copysign(out, x.reshape(-1), out=out)  # erf is odd
    return out.reshape(x.shape)


def sigmoid_array(xp, x):
    """1 / (1 + exp(-x)).

    There is no cancellation: 1 + exp(-x) is a sum of positives, so the result keeps full
    relative precision wherever it is a normal number. Where exp(-x) overflows (x below about
    -88 in float32) the result is 0, as in PyTorch; the exact value there is below the smallest
    normal float.
    """
    with np.errstate(over="ignore"):
        denominator = xp.exp(-x)
    denominator += 1
    return xp.divide(1, denominator)


SQRT_HALF = math.sqrt(0.5)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_CUBIC = 0.044715


# ----- op records -------------------------------------------------------------------------------


class Erf(FloatFunction):
    name = "erf"

    def forward(self, ctx, xp, x):
        return erf_array(xp, as_float(x))

    def backward(self, ctx, grad):
        # d/dx erf(x) = 2/sqrt(pi) * exp(-x^2)
        (x,) = ctx.inputs
        return (grad * ((x * x).neg().exp() * TWO_OVER_SQRT_PI),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Erf", inputs, output)


class Sigmoid(FloatFunction):
    name = "sigmoid"
    flops_per_element = 4  # negate, exp, add, divide
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return sigmoid_array(xp, as_float(x))

    def backward(self, ctx, grad):
        return (SIGMOID_GRAD(grad, ctx.output),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sigmoid", inputs, output)


class Silu(FloatFunction):
    """x * sigmoid(x) (also called swish)."""

    name = "silu"  # ONNX has no SiLU: to_onnx writes x * Sigmoid(x)
    flops_per_element = 5

    def forward(self, ctx, xp, x):
        x = as_float(x)
        ctx.sigmoid = sigmoid = sigmoid_array(xp, x)  # kept: backward would recompute it
        return x * sigmoid

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (SILU_GRAD(grad, x, ctx.tensor(ctx.sigmoid)),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Mul", [x, emit.node("Sigmoid", [x])], output)


class Softplus(FloatFunction):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's rule)."""

    name = "softplus"  # ONNX Softplus has beta = 1 and no threshold: to_onnx adds them
    flops_per_element = 7  # scale, logaddexp (max, abs, exp, log1p, add), compare

    def forward(self, ctx, xp, x, *, beta, threshold):
        x = as_float(x)
        scaled = x * x.dtype.type(beta) if beta != 1 else x  # (bfloat16 stays bfloat16)
        # logaddexp(0, y) = max(y, 0) + log1p(exp(-|y|)): no overflow, no cancellation
        out = xp.logaddexp(0, scaled)
        if beta != 1:
            out /= beta
        return xp.where(scaled > threshold, x, out)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (SOFTPLUS_GRAD(grad, x, **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        beta, threshold = attrs["beta"], attrs["threshold"]
        scaled = x if beta == 1 else emit.node("Mul", [x, emit.scalar(beta, x)])
        soft = emit.node("Softplus", [scaled])
        if beta != 1:
            soft = emit.node("Div", [soft, emit.scalar(beta, x)])
        above = emit.node("Greater", [scaled, emit.scalar(threshold, x)], dtype="bool")
        emit.node("Where", [above, x, soft], output)


class Gelu(FloatFunction):
    """x * Phi(x), Phi the standard normal CDF; ``approximate="tanh"`` uses
    0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).

    ``ctx.cache`` keeps what the gradient needs again: Phi(x), or the tanh form's gate
    (1 + tanh(u)) / 2 = sigmoid(2u), written as a sigmoid so that it does not cancel to 0
    for large negative u.
    """

    name = "gelu"  # ONNX Gelu (opset 20) has the same ``approximate`` attribute
    flops_per_element = 8  # tanh form: 7 multiply-adds and an exp; erf form: 4 and an erf

    def forward(self, ctx, xp, x, *, approximate):
        x = as_float(x)
        if approximate == "tanh":
            with np.errstate(over="ignore"):  # x^3 may reach inf: the gate is then 0 or 1
                two_u = x * (1 + GELU_TANH_CUBIC * x * x) * (2 * SQRT_2_OVER_PI)
            cdf = sigmoid_array(xp, two_u)
        else:
            cdf = erf_array(xp, x * x.dtype.type(SQRT_HALF))  # (bfloat16 stays bfloat16)
            cdf += 1
            cdf *= 0.5
        ctx.cache = cdf
        return cdf * x

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (GELU_GRAD(grad, x, ctx.tensor(ctx.cache), **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        approximate = attrs["approximate"]
        if emit.opset >= 20:
            emit.node("Gelu", [x], output, approximate=approximate)
            return
        if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = emit.node("Mul", [emit.node("Mul", [x, x]), x])
            inner = emit.node("Add", [x, emit.node("Mul", [cube, emit.scalar(GELU_TANH_CUBIC, x)])])
            inner = emit.node("Mul", [inner, emit.scalar(SQRT_2_OVER_PI, x)])
            cdf = emit.node("Tanh", [inner])
        else:  # 0.5 x (1 + erf(x / sqrt(2)))
            cdf = emit.node("Erf", [emit.node("Mul", [x, emit.scalar(SQRT_HALF, x)])])
        cdf = emit.node("Add", [cdf, emit.scalar(1, x)])
        half_x = emit.node("Mul", [x, emit.scalar(0.5, x)])
        emit.node("Mul", [half_x, cdf], output)


# ----- gradients of the activations -------------------------------------------------------------
# Each is one op instead of a chain of Tensor ops, reusing what the forward kept (the gate, Phi,
# the sigmoid). Every one is linear in the upstream gradient, so its gradient there is the op
# itself again; its gradient in x is written with Tensor ops that recompute the kept values from
# x, so derivatives of every order stay exact.


class GeluGrad(FloatFunction):
    """``grad * gelu'(x)``.

    Inputs: grad and x (one shape), and ``cache``, a constant Tensor of x's shape: the gate
    s = sigmoid(2u) = (1 + tanh(u)) / 2 of the forward for ``approximate="tanh"``
    (u = sqrt(2/pi) (x + 0.044715 x^3)), Phi(x) otherwise.
    """

    name = "gelu_grad"
    flops_per_element = 9

    def forward(self, ctx, xp, grad, x, cache, *, approximate):
        x = as_float(x)
        if approximate == "tanh":
            # d/dx [x s] = s (1 + 2 x u' (1 - s)), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
            two_x_du = x * (1 + 3 * GELU_TANH_CUBIC * x * x) * (2 * SQRT_2_OVER_PI)
            return grad * (cache * (1 + two_x_du * (1 - cache)))
        # d/dx [x Phi(x)] = Phi(x) + x phi(x)
        density = xp.exp(x * x * -0.5) * INV_SQRT_2PI
        return grad * (cache + x * density)

    def backward(self, ctx, grad_of_output):
        grad, x, cache = ctx.inputs
        approximate = ctx.attrs["approximate"]
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = GELU_GRAD(grad_of_output, x, cache, approximate=approximate)
        if x.requires_grad:
            if approximate == "tanh":
                # with w = 1 - t^2: gelu'' = w (u' + 0.5 x (u'' - 2 t u'^2))
                x_squared = x * x
                t = ((x_squared * GELU_TANH_CUBIC + 1) * x * SQRT_2_OVER_PI).tanh()
                du = (x_squared * (3 * GELU_TANH_CUBIC) + 1) * SQRT_2_OVER_PI
                ddu = x * (6 * GELU_TANH_CUBIC * SQRT_2_OVER_PI)
                second = (1 - t * t) * (du + x * 0.5 * (ddu - t * du * du * 2))
            else:
                # gelu'' = phi(x) (2 - x^2)
                x_squared = x * x
                second = (x_squared * -0.5).exp() * INV_SQRT_2PI * (2 - x_squared)
            grad_x = grad_of_output * grad * second
        return grad_grad, grad_x, None


class SigmoidGrad(FloatFunction):
    """``grad * s (1 - s)``, s the sigmoid's output (a differentiable input: the sigmoid's
    second derivative flows through it)."""

    name = "sigmoid_grad"
    flops_per_element = 3

    def forward(self, ctx, xp, grad, out):
        return grad * (out * (1 - out))

    def backward(self, ctx, grad_of_output):
        grad, out = ctx.inputs
        grad_grad = grad_out = None
        if grad.requires_grad:
            grad_grad = SIGMOID_GRAD(grad_of_output, out)
        if out.requires_grad:
            grad_out = grad_of_output * grad * (1 - 2 * out)
        return grad_grad, grad_out


class SiluGrad(FloatFunction):
    """``grad * silu'(x)`` with silu' = s (1 + x (1 - s)); ``cache`` is the constant s = sigmoid(x)
    of the forward."""

    name = "silu_grad"
    flops_per_element = 5

    def forward(self, ctx, xp, grad, x, cache):
        x = as_float(x)
        return grad * (cache * (1 + x * (1 - cache)))

    def backward(self, ctx, grad_of_output):
        grad, x, cache = ctx.inputs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = SILU_GRAD(grad_of_output, x, cache)
        if x.requires_grad:
            # silu'' = s (1 - s) (2 + x (1 - 2 s))
            s = x.sigmoid()
            grad_x = grad_of_output * grad * (s * (1 - s) * (2 + x * (1 - 2 * s)))
        return grad_grad, grad_x, None


class SoftplusGrad(FloatFunction):
    """``grad * sigmoid(beta x)``, and ``grad`` itself where beta x > threshold."""

    name = "softplus_grad"
    flops_per_element = 7

    def forward(self, ctx, xp, grad, x, *, beta, threshold):
        x = as_float(x)
        scaled = x * x.dtype.type(beta) if beta != 1 else x
        return xp.where(scaled > threshold, grad, grad * sigmoid_array(xp, scaled))

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        beta, threshold = ctx.attrs["beta"], ctx.attrs["threshold"]
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = SOFTPLUS_GRAD(grad_of_output, x, beta=beta, threshold=threshold)
        if x.requires_grad:
            scaled = x * beta if beta != 1 else x
            s = scaled.sigmoid()
            second = grad_of_output * grad * (s * (1 - s) * beta)
            grad_x = second.where(scaled <= threshold, 0.0)
        return grad_grad, grad_x


ERF, SIGMOID, SILU, SOFTPLUS, GELU = Erf(), Sigmoid(), Silu(), Softplus(), Gelu()
GELU_GRAD, SILU_GRAD, SOFTPLUS_GRAD = GeluGrad(), SiluGrad(), SoftplusGrad()
SIGMOID_GRAD = SigmoidGrad()
