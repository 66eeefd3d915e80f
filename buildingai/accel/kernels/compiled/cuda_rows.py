"""CUDA twins of the row kernels (softmax, log_softmax, cross-entropy, layer norm, standardize
and their gradients) for float32 CuPy arrays of rows (rows, n).

A NumPy row kernel run with ``xp = cupy`` is a chain of CuPy ops: softmax is a maximum, a
subtraction, an exp, a sum and a division, eight passes over device memory. Each twin here is a
short plan of fused CuPy kernels: a per-row reduction (``cupy.ReductionKernel`` along axis 1,
one value per row) for each row statistic, then one element-wise kernel (``ElementwiseKernel``,
the row statistics broadcast over their rows) that writes the outputs. Softmax becomes two
reductions and one map, four passes; layer norm two reductions, a map over the row statistics
and one map.

A plan is data (``TWINS``): each step names its target and a CUDA expression in the twin's
arrays, its scalars (``scale`` = 1 / n, ``eps``, ``weight``, ``bias``) and earlier targets, so
``tests/accel/kernels/test_cuda_rows.py`` runs every plan in NumPy on the CPU and compares it with
the NumPy reference kernel of the same name. Kernels are built on first use (CuPy compiles them
with NVRTC and caches them on disk); ``tests/accel/kernels/test_cuda_compile.py`` compiles every
step with NVRTC on the CPU; on a GPU, ``tests/gpu/test_cuda_twins.py`` and
``benchmarks/gpu_check.sh`` run the plans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ....backend.device import cupy_module

# NaN wins, as in NumPy's maximum; -inf (bits 0xff800000) is the identity.
_MAX = ("(a != a || a > b) ? a : b", "__int_as_float(0xff800000)")
_SUM = ("a + b", "0")


@dataclass(frozen=True)
class Reduce:
    """``target`` (rows, 1) = the ``kind`` ("sum" or "max") over each row of ``value``."""

    target: str
    kind: str
    value: str


@dataclass(frozen=True)
class Map:
    """Element-wise statements writing ``targets``; (rows, 1) values broadcast over rows."""

    targets: tuple
    operation: str


@dataclass(frozen=True)
class Plan:
    """A twin: the NumPy kernel's ``arrays`` in order (rows, n) or (rows, 1), the keyword
    ``params`` it takes, and its ``steps``."""

    arrays: tuple
    params: tuple
    steps: tuple


_SOFTMAX_STATISTICS = (Reduce("peak", "max", "x"), Reduce("total", "sum", "expf(x - peak)"))
_SOFTMAX = Plan(
    ("x", "out"), (), _SOFTMAX_STATISTICS + (Map(("out",), "out = expf(x - peak) / total;"),)
)
_MOMENTS = (
    Reduce("total", "sum", "x"),
    Reduce("squares", "sum", "(x - total * scale) * (x - total * scale)"),
    Map(("rstd",), "rstd = 1.0f / sqrtf(squares * scale + eps);"),
)
_STANDARDIZE_GRAD = (
    Reduce("total", "sum", "g"),
    Reduce("projection", "sum", "g * xhat"),
    Map(("out",), "out = (g - total * scale - xhat * (projection * scale)) * rstd;"),
)

TWINS = {
    "rows.softmax_rows": _SOFTMAX,
    "rows.log_softmax_rows": Plan(
        ("x", "out"),
        (),
        _SOFTMAX_STATISTICS + (Map(("out",), "out = x - peak - logf(total);"),),
    ),
    "rows.cross_entropy_rows": Plan(
        ("x", "probs", "peak", "log_total"),
        (),
        _SOFTMAX_STATISTICS
        + (
            Map(("probs",), "probs = expf(x - peak) / total;"),
            Map(("log_total",), "log_total = logf(total);"),
        ),
    ),
    "rows.softmax_grad_rows": Plan(
        ("grad", "out", "result"),
        ("axis",),
        (
            Reduce("projection", "sum", "grad * out"),
            Map(("result",), "result = (grad - projection) * out;"),
        ),
    ),
    "rows.log_softmax_grad_rows": Plan(
        ("grad", "out", "result"),
        ("axis",),
        (Reduce("total", "sum", "grad"), Map(("result",), "result = grad - expf(out) * total;")),
    ),
    "rows.standardize_rows": Plan(
        ("x", "out", "rstd"),
        ("eps",),
        _MOMENTS + (Map(("out",), "out = (x - total * scale) * rstd;"),),
    ),
    "rows.standardize_grad_rows": Plan(("g", "xhat", "rstd", "out"), (), _STANDARDIZE_GRAD),
    "rows.layer_norm_rows": Plan(
        ("x", "xhat", "out", "rstd"),
        ("weight", "bias", "eps"),
        _MOMENTS
        + (
            Map(
                ("xhat", "out"),
                "xhat = (x - total * scale) * rstd; out = xhat * weight + bias;",
            ),
        ),
    ),
    "rows.layer_norm_input_grad_rows": Plan(
        ("grad", "xhat", "rstd", "out"),
        ("weight",),
        (
            Reduce("total", "sum", "grad * weight"),
            Reduce("projection", "sum", "grad * weight * xhat"),
            Map(
                ("out",),
                "out = (grad * weight - total * scale - xhat * (projection * scale)) * rstd;",
            ),
        ),
    ),
}


def values_of(plan: Plan, arrays, keywords, xp=np) -> dict:
    """The names a plan's expressions read: its arrays, ``scale`` = 1 / n (float32, as the NumPy
    kernels take it), and its parameters (weight and bias as (1, n) rows; an absent bias 0)."""
    values = dict(zip(plan.arrays, arrays))
    values["scale"] = np.float32(1 / arrays[0].shape[1])
    for param in plan.params:
        value = keywords.get(param)
        if param in ("weight", "bias"):
            value = np.float32(0.0) if value is None else value.reshape(1, -1)
        elif param == "eps":
            value = np.float32(value)
        values[param] = value
    return values


def reads(expression: str, names, exclude=()) -> list[str]:
    """The ``names`` (but not those in ``exclude``) that ``expression`` uses, sorted."""
    return sorted(
        name
        for name in names
        if name not in exclude and re.search(rf"\b{name}\b", expression) is not None
    )


def step_inputs(plan: Plan) -> list[list[str]]:
    """For each step of ``plan``, the names it reads: the kernel's input parameters in order."""
    known = [*plan.arrays, "scale", *plan.params]
    inputs = []
    for step in plan.steps:
        if isinstance(step, Reduce):
            inputs.append(reads(step.value, known, exclude=(step.target,)))
            if step.target not in known:
                known.append(step.target)
        else:
            inputs.append(reads(step.operation, known, exclude=step.targets))
    return inputs


_built: dict = {}  # twin name -> [(kernel, input names)], built on first use


def _build(name: str) -> list:
    steps = _built.get(name)
    if steps is None:
        cupy = cupy_module()
        plan = TWINS[name]
        steps = []
        for index, (step, inputs) in enumerate(zip(plan.steps, step_inputs(plan))):
            label = "bai_" + re.sub(r"\W", "_", name) + f"_{index}"
            declared = ", ".join(f"float32 {value}" for value in inputs)
            if isinstance(step, Reduce):
                reduce_expression, identity = _MAX if step.kind == "max" else _SUM
                kernel = cupy.ReductionKernel(
                    declared, "float32 y", step.value, reduce_expression, "y = a", identity, label
                )
            else:
                outputs = ", ".join(f"float32 {target}" for target in step.targets)
                kernel = cupy.ElementwiseKernel(declared, outputs, step.operation, label)
            steps.append((kernel, inputs))
        _built[name] = steps
    return steps


def run(name: str, arrays, keywords) -> None:
    """Run twin ``name`` on float32 CuPy ``arrays`` (the NumPy kernel's, in its order)."""
    plan = TWINS[name]
    values = values_of(plan, arrays, keywords)
    for step, (kernel, inputs) in zip(plan.steps, _build(name)):
        arguments = [values[value] for value in inputs]
        if isinstance(step, Reduce):
            result = kernel(*arguments, axis=1, keepdims=True)
            given = values.get(step.target)  # an output array of the twin, or a new value
            if given is None:
                values[step.target] = result
            else:
                given[...] = result
        else:
            kernel(*arguments, *(values[target] for target in step.targets))
