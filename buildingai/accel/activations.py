"""Faster forwards and first derivatives of the activation records (``ops/activation.py``,
``ops/special.py``, ``ops/activation_extra.py``, and ``tanh`` of ``ops/elementwise.py``),
registered against the record they speed up.

Each kernel writes into preallocated arrays in a few in-place passes, cut across threads when
large (``kernels/split.py``), or in one pass through its compiled twin (numba on the CPU, CUDA
for float32 CuPy arrays) where one exists; the exact GELU of float32 arrays uses a fitted
polynomial in place of erf (``kernels/gelu32.py``). Where a kernel does not apply, the record's
forward runs.
"""

from __future__ import annotations

import functools

import numpy as np

from ..ops import activation, activation_extra, special
from ..ops.elementwise import TANH, TANH_GRAD
from .kernels import activations as kernels
from .kernels import activations_extra as extra_kernels
from .kernels import activations_fused as fused_kernels
from .kernels import compiled, gelu32
from .kernels.split import elementwise
from .registry import register

_FLOAT32_64 = (np.dtype(np.float32), np.dtype(np.float64))


def _numpy_float(*arrays) -> bool:
    """Whether every one of ``arrays`` is a float NumPy array."""
    if len(arrays) == 1:  # the commonest call, without the generator's cost
        return type(arrays[0]) is np.ndarray and arrays[0].dtype.kind == "f"
    return all(type(array) is np.ndarray and array.dtype.kind == "f" for array in arrays)


def _numpy_float32_64(*arrays) -> bool:
    """Whether ``arrays`` are float32 or float64 NumPy arrays of one shape and dtype."""
    first = arrays[0]
    return all(
        type(array) is np.ndarray
        and array.dtype in _FLOAT32_64
        and array.dtype == first.dtype
        and array.shape == first.shape
        for array in arrays
    )


def _same(*arrays) -> bool:
    """Whether ``arrays`` have one shape and one float dtype."""
    first = arrays[0]
    return first.dtype.kind == "f" and all(
        array.shape == first.shape and array.dtype == first.dtype for array in arrays
    )


def _kernel_runs(xp, kernel, x) -> bool:
    """Whether ``kernel`` takes x: NumPy arrays always, float32 CuPy arrays through its CUDA
    twin (its NumPy form is written for host arrays)."""
    return xp is np or (x.dtype == np.float32 and compiled.has_gpu_twin(kernel))


def _into(xp, kernel, inputs, outputs: int = 1, **params):
    """``kernel(xp, *inputs, *outs, **params)`` into ``outputs`` new arrays of the first
    input's shape, cut across threads when large; returns the new arrays."""
    outs = tuple(xp.empty_like(inputs[0]) for _ in range(outputs))
    elementwise(xp, functools.partial(kernel, **params) if params else kernel, inputs, outs)
    return outs


# ----- rectifiers ---------------------------------------------------------------------------------


# Elements of the smallest input for the twin (input and output together make its work): below,
# the kernel is the record's own ``maximum`` behind more calls.
RELU_MIN_SIZE = (compiled.MIN_WORK + 1) // 2


def _relu_fits(xp, x) -> bool:
    """Float NumPy arrays large enough for the twin."""
    return x.size >= RELU_MIN_SIZE and _numpy_float(x)


def _relu(ctx, xp, x):
    out = np.empty_like(x)
    # a contiguous array straight to the twin: the commonest call, without the general steps
    if x.flags.c_contiguous and compiled.run(kernels.relu, [x.reshape(-1), out.reshape(-1)]):
        return out
    elementwise(np, kernels.relu, (x,), (out,))
    return out


def _relu_grad_fits(xp, grad, out) -> bool:
    return _numpy_float(grad) and grad.shape == out.shape


def _relu_grad(ctx, xp, grad, out):
    return _into(np, kernels.relu_grad, (grad, out))[0]


def _leaky_fits(xp, x, *, negative_slope) -> bool:
    return _numpy_float32_64(x) and kernels.exact_one(x.dtype, negative_slope)


def _leaky_relu(ctx, xp, x, *, negative_slope):
    return _into(np, kernels.leaky_relu, (x,), slope=negative_slope)[0]


def _leaky_grad_fits(xp, grad, x, *, negative_slope) -> bool:
    return _numpy_float32_64(grad, x) and kernels.exact_one(x.dtype, negative_slope)


def _leaky_relu_grad(ctx, xp, grad, x, *, negative_slope):
    return _into(np, kernels.leaky_relu_grad, (grad, x), slope=negative_slope)[0]


register(
    activation.RELU,
    _relu_fits,
    _relu,
    name="relu.fused",
    description="max(x, 0) in one pass, cut across threads or through its compiled twin",
    min_size=RELU_MIN_SIZE,
)
register(
    activation.RELU_GRAD,
    _relu_grad_fits,
    _relu_grad,
    name="relu_grad.fused",
    description="the gradient gate as a product with the mask while every gradient is finite",
)
register(
    activation.LEAKY_RELU,
    _leaky_fits,
    _leaky_relu,
    name="leaky_relu.fused",
    description="x times its slope (1 or negative_slope): a product instead of where",
)
register(
    activation.LEAKY_RELU_GRAD,
    _leaky_grad_fits,
    _leaky_relu_grad,
    name="leaky_relu_grad.fused",
    description="grad times the slope of x: a product instead of where",
)

# ----- sigmoid, silu, softplus --------------------------------------------------------------------


# Elements from which sigmoid and SiLU take their kernels: below, the record's few NumPy calls
# cost less than the kernel's own steps (docs/design_notes/performance.md).
SIGMOID_MIN_SIZE = 1 << 13


def _sigmoid_fits(xp, x) -> bool:
    return x.ndim and x.dtype.kind == "f" and _kernel_runs(xp, kernels.sigmoid, x)


def _sigmoid(ctx, xp, x):
    return _into(xp, kernels.sigmoid, (x,))[0]


def _silu_fits(xp, x) -> bool:
    return x.ndim and x.dtype.kind == "f" and _kernel_runs(xp, kernels.silu, x)


def _silu(ctx, xp, x):
    ctx.sigmoid, out = _into(xp, kernels.silu, (x,), outputs=2)
    return out


def _sigmoid_grad(ctx, xp, grad, out):
    return _into(xp, kernels.sigmoid_grad, (grad, out))[0]


def _silu_grad_fits(xp, grad, x, cache) -> bool:
    return _same(grad, x, cache)


def _silu_grad(ctx, xp, grad, x, cache):
    return _into(xp, kernels.silu_grad, (grad, x, cache))[0]


def _float32_numpy(*arrays) -> bool:
    return all(type(array) is np.ndarray and array.dtype == np.float32 for array in arrays)


def _softplus_fits(xp, x, *, beta, threshold) -> bool:
    return _float32_numpy(x) and x.ndim and threshold < kernels.EXP32_FINITE


def _softplus(ctx, xp, x, *, beta, threshold):
    return _into(np, kernels.softplus_float32, (x,), beta=beta, threshold=threshold)[0]


def _softplus_grad_fits(xp, grad, x, *, beta, threshold) -> bool:
    return _float32_numpy(grad, x) and x.ndim and grad.shape == x.shape


def _softplus_grad(ctx, xp, grad, x, *, beta, threshold):
    kernel = kernels.softplus_grad_float32
    return _into(np, kernel, (grad, x), beta=beta, threshold=threshold)[0]


def _tanh_fits(xp, x) -> bool:
    return x.ndim and x.dtype.kind == "f" and _kernel_runs(xp, kernels.tanh, x)


register(
    TANH,
    _tanh_fits,
    lambda ctx, xp, x: _into(xp, kernels.tanh, (x,))[0],
    name="tanh.fused",
    description="tanh cut across threads, or in one pass of Cephes' float32 form (its twin)",
)
register(
    TANH_GRAD,
    lambda xp, grad, out: _same(grad, out),
    lambda ctx, xp, grad, out: _into(xp, kernels.tanh_grad, (grad, out))[0],
    name="tanh_grad.fused",
    description="grad * (1 - t^2) in one pass",
)
register(
    special.SIGMOID,
    _sigmoid_fits,
    _sigmoid,
    name="sigmoid.fused",
    min_size=SIGMOID_MIN_SIZE,
    description="1 / (1 + exp(-x)) in place, cut across threads or through its compiled twin",
)
register(
    special.SIGMOID_GRAD,
    lambda xp, grad, out: _same(grad, out),
    _sigmoid_grad,
    name="sigmoid_grad.fused",
    description="grad * s (1 - s) in one pass",
)
register(
    special.SILU,
    _silu_fits,
    _silu,
    name="silu.fused",
    min_size=SIGMOID_MIN_SIZE,
    description="the sigmoid and x times it in one pass",
)
register(
    special.SILU_GRAD,
    _silu_grad_fits,
    _silu_grad,
    name="silu_grad.fused",
    description="grad * s (1 + x (1 - s)) in one pass",
)
register(
    special.SOFTPLUS,
    _softplus_fits,
    _softplus,
    name="softplus.float32",
    description="log1p(exp(beta x)) for float32 below exp's overflow, instead of logaddexp",
)
register(
    special.SOFTPLUS_GRAD,
    _softplus_grad_fits,
    _softplus_grad,
    name="softplus_grad.float32",
    description="grad * sigmoid(beta x) in one pass, the few values above the threshold copied",
)

# ----- gelu ---------------------------------------------------------------------------------------


def _gelu_tanh_fits(xp, x, *, approximate) -> bool:
    return approximate == "tanh" and x.dtype.kind == "f" and _kernel_runs(xp, kernels.gelu_tanh, x)


def _gelu_tanh(ctx, xp, x, *, approximate):
    out, ctx.cache = _into(xp, kernels.gelu_tanh, (x,), outputs=2)
    return out


def _gelu_tanh_grad_fits(xp, grad, x, cache, *, approximate) -> bool:
    return (
        approximate == "tanh"
        and _same(grad, x, cache)
        and _kernel_runs(xp, kernels.gelu_tanh_grad, x)
    )


def _gelu_tanh_grad(ctx, xp, grad, x, cache, *, approximate):
    return _into(xp, kernels.gelu_tanh_grad, (grad, x, cache))[0]


def _gelu_polynomial_fits(xp, x, *, approximate) -> bool:
    return (
        approximate != "tanh" and x.dtype == np.float32 and _kernel_runs(xp, gelu32.gelu_forward, x)
    )


def _gelu_polynomial(ctx, xp, x, *, approximate):
    out, ctx.cache = _into(xp, gelu32.gelu_forward, (x,), outputs=2)
    return out


def _gelu_polynomial_grad_fits(xp, grad, x, cache, *, approximate) -> bool:
    return (
        approximate != "tanh"
        and x.dtype == np.float32
        and _same(grad, x, cache)
        and _kernel_runs(xp, gelu32.gelu_backward, x)
    )


def _gelu_polynomial_grad(ctx, xp, grad, x, cache, *, approximate):
    return _into(xp, gelu32.gelu_backward, (grad, x, cache))[0]


register(
    special.GELU,
    _gelu_tanh_fits,
    _gelu_tanh,
    name="gelu.tanh_fused",
    description="the tanh form as x sigmoid(2u): one exp instead of a tanh, in place",
)
register(
    special.GELU,
    _gelu_polynomial_fits,
    _gelu_polynomial,
    name="gelu.float32_polynomial",
    description="exact GELU of float32 arrays with Phi = (1 + tanh(x K(x^2))) / 2, K fitted",
)
register(
    special.GELU_GRAD,
    _gelu_tanh_grad_fits,
    _gelu_tanh_grad,
    name="gelu_grad.tanh_fused",
    description="the tanh form's derivative from the kept gate in one pass",
)
register(
    special.GELU_GRAD,
    _gelu_polynomial_grad_fits,
    _gelu_polynomial_grad,
    name="gelu_grad.float32_polynomial",
    description="Phi(x) + x phi(x) from the kept Phi, for float32 arrays",
)

# ----- the other activations: array kernels of f and f', cut across threads -------------------


def _times_derivative(kernel, grad, x, **params):
    """grad * f'(x), with f'(x) from an array kernel, in one new array."""
    derivative = _into(np, kernel, (x,), **params)[0]
    derivative *= grad
    return derivative


def _unary_fits(xp, x, **attrs) -> bool:
    return _numpy_float32_64(x)


def _grad_fits(xp, grad, x, **attrs) -> bool:
    return _numpy_float32_64(grad, x)


def _register_exponential_linear(op) -> None:
    def kernel(ctx, xp, x, **attrs):
        alpha, scale, input_scale = op.constants(attrs)
        constants = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
        return _into(np, fused_kernels.exponential_linear, (x,), **constants)[0]

    register(
        op,
        _unary_fits,
        kernel,
        name=f"{op.name}.fused",
        description="expm1 and the linear branch blended in place, cut across threads",
    )


for _op in (activation_extra.ELU, activation_extra.SELU, activation_extra.CELU):
    _register_exponential_linear(_op)


def _exponential_linear_grad(ctx, xp, grad, x, *, alpha, scale, input_scale):
    constants = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
    return _into(np, fused_kernels.exponential_linear_grad, (grad, x), **constants)[0]


register(
    activation_extra.EXPONENTIAL_LINEAR_GRAD,
    _grad_fits,
    _exponential_linear_grad,
    name="exponential_linear_grad.fused",
    description="grad times the derivative blended in place, cut across threads",
)


def _unary(op, kernel, description: str) -> None:
    register(
        op,
        _unary_fits,
        lambda ctx, xp, x: _into(np, kernel, (x,))[0],
        name=f"{op.name}.fused",
        description=description,
    )


def _fused_gradient(op, kernel, description: str, **params) -> None:
    """Register ``kernel(xp, grad, x, out, **params)``, grad * f'(x) in one array (one pass
    through its twin), for the gradient record ``op``."""
    register(
        op,
        _grad_fits,
        lambda ctx, xp, grad, x: _into(np, kernel, (grad, x), **params)[0],
        name=f"{op.name}.fused",
        description=description,
    )


def _gradient(op, kernel, description: str) -> None:
    register(
        op,
        _grad_fits,
        lambda ctx, xp, grad, x: _times_derivative(kernel, grad, x),
        name=f"{op.name}.fused",
        description=description,
    )


_unary(activation_extra.HARDSIGMOID, fused_kernels.hardsigmoid, "the clipped ramp in place")
_unary(activation_extra.HARDSWISH, fused_kernels.hardswish, "x times the clipped ramp in place")
_fused_gradient(
    activation_extra.HARDSWISH_GRAD,
    fused_kernels.hardswish_grad,
    "grad times the derivative blended from masks as products",
)
_fused_gradient(
    activation_extra.HARDSIGMOID_GRAD,
    fused_kernels.hardsigmoid_grad,
    "grad / 6 times the inside mask as a product, instead of where",
    one_sixth=activation_extra._ONE_SIXTH,
)
_unary(activation_extra.MISH, extra_kernels.mish, "log1p(exp(x)) in place of logaddexp")
_gradient(activation_extra.MISH_GRAD, extra_kernels.mish_derivative, "grad times mish' in place")
_unary(activation_extra.SOFTSIGN, extra_kernels.softsign, "x / (1 + |x|) in place")
_gradient(
    activation_extra.SOFTSIGN_GRAD,
    extra_kernels.softsign_derivative,
    "grad / (1 + |x|)^2 in place",
)
_unary(
    activation_extra.LOGSIGMOID,
    fused_kernels.logsigmoid,
    "the stable form in place, or in one pass through its twin",
)
_fused_gradient(
    activation_extra.LOGSIGMOID_GRAD,
    fused_kernels.logsigmoid_grad,
    "grad / (1 + exp(x)) in place, or in one pass through its twin",
)


def _threshold(ctx, xp, x, *, threshold, value):
    return _into(np, extra_kernels.threshold, (x,), threshold=threshold, value=value)[0]


register(
    activation_extra.THRESHOLD,
    _unary_fits,
    _threshold,
    name="threshold.fused",
    description="x times the kept mask plus value times the replaced one, instead of where",
)
