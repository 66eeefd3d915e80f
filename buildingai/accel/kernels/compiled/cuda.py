"""CUDA twins: the same kernels as the numba twins, as fused CuPy element-wise kernels for float32
device arrays. A NumPy kernel run with ``xp = cupy`` is a chain of CuPy ufuncs, one GPU kernel
and one round trip through device memory per pass; each twin here is one kernel that reads its
inputs once and writes its outputs once. Exact GELU uses CUDA's ``erff`` (the NumPy kernel's
float32 form is a fitted tanh, within 6.5e-7 of it).

Names match the numba twins ("activations.gelu", "optim.adam"): :func:`run` looks a NumPy
kernel's twin name up here. The row kernels (softmax, layer norm, ...) have their CUDA twins in
``cuda_rows.py``, as plans of reductions and maps. Kernels are built on first use (CuPy compiles
them with NVRTC and caches them on disk). Each source compiles with NVRTC on the CPU
(``tests/accel/kernels/test_cuda_compile.py``); ``tests/gpu`` compares every kernel with its
NumPy reference on a GPU and ``benchmarks/gpu_check.sh`` times them there.
"""

from __future__ import annotations

from ....backend.device import cupy_module

_K = "0.7978845608028654f"  # sqrt(2 / pi)
_C = "0.044715f"

# twin name -> (input parameters, output parameters, operation); outputs may be read (in place)
SOURCES = {
    "activations.sigmoid": ("float32 x", "float32 out", "out = 1.0f / (1.0f + expf(-x));"),
    "activations.sigmoid_grad": (
        "float32 grad, float32 s",
        "float32 out",
        "out = (1.0f - s) * s * grad;",
    ),
    "activations.silu": (
        "float32 x",
        "float32 sigmoid, float32 out",
        "sigmoid = 1.0f / (1.0f + expf(-x)); out = x * sigmoid;",
    ),
    "activations.silu_grad": (
        "float32 grad, float32 x, float32 s",
        "float32 out",
        "out = ((1.0f - s) * x + 1.0f) * s * grad;",
    ),
    "activations.gelu": (
        "float32 x",
        "float32 out, float32 cdf",
        "cdf = 0.5f * (1.0f + erff(x * 0.7071067811865476f)); out = x * cdf;",
    ),
    "activations.gelu_grad": (
        "float32 grad, float32 x, float32 cdf",
        "float32 out",
        "out = (expf(-0.5f * x * x) * 0.3989422804014327f * x + cdf) * grad;",
    ),
    "activations.gelu_tanh": (
        "float32 x",
        "float32 out, float32 gate",
        f"gate = 1.0f / (1.0f + expf(-2.0f * {_K} * (x + {_C} * x * x * x))); out = x * gate;",
    ),
    "activations.gelu_tanh_grad": (
        "float32 grad, float32 x, float32 gate",
        "float32 out",
        f"float slope = 2.0f * {_K} * (1.0f + 3.0f * {_C} * x * x) * x;"
        f" float rest = 1.0f / (1.0f + expf(2.0f * {_K} * (x + {_C} * x * x * x)));"
        " out = (slope * rest + 1.0f) * gate * grad;",
    ),
    # 1 - beta arrive computed in double on the host: 1.0f - 0.999f is off by 1.3e-5
    "optim.adam": (
        "float32 grad, float32 b1, float32 rest1, float32 b2, float32 rest2, float32 l2,"
        " float32 decay, float32 shift, float32 step, bool maximize",
        "float32 param, float32 exp_avg, float32 exp_avg_sq",
        "float g = maximize ? -grad : grad; float p = param;"
        " if (l2 != 0.0f) g += p * l2;"
        " float m = rest1 * g + b1 * exp_avg; float v = rest2 * (g * g) + b2 * exp_avg_sq;"
        " exp_avg = m; exp_avg_sq = v; param = step * (m / (sqrtf(v) + shift)) + decay * p;",
    ),
}

_kernels: dict = {}


def twin(name: str):
    """The CuPy kernel for twin ``name``, built on first use; None where there is none."""
    kernel = _kernels.get(name)
    if kernel is None and name in SOURCES:
        cupy = cupy_module()
        inputs, outputs, operation = SOURCES[name]
        kernel = cupy.ElementwiseKernel(inputs, outputs, operation, "bai_" + name.replace(".", "_"))
        _kernels[name] = kernel
    return kernel


def run_adam(kernel, param, grad, exp_avg, exp_avg_sq, **scalars) -> None:
    """``adam_update``'s arithmetic (``compiled/optim.py`` has the same formulas) with the
    scalars folded as the numba twin folds them."""
    decoupled = scalars["decoupled_weight_decay"]
    weight_decay = scalars["weight_decay"]
    correction = scalars["bias_correction2_sqrt"]
    kernel(
        grad,
        scalars["beta1"],
        1.0 - scalars["beta1"],
        scalars["beta2"],
        1.0 - scalars["beta2"],
        0.0 if decoupled else weight_decay,
        1.0 - scalars["lr"] * weight_decay if decoupled else 1.0,
        scalars["eps"] * correction,
        -scalars["step_size"] * correction,
        bool(scalars["maximize"]),
        param,
        exp_avg,
        exp_avg_sq,
    )
