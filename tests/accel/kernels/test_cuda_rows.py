"""The CUDA row twins' plans (``compiled/cuda_rows.py``), checked without a GPU: each plan names a
registered row kernel and reads only what it has, and ``cuda_rows.run``, given NumPy stand-ins
for CuPy's ReductionKernel and ElementwiseKernel that evaluate the CUDA expressions in NumPy,
computes what the NumPy reference kernel of the same name computes, -inf and NaN rows included.
On a GPU, tests/gpu/test_cuda_twins.py runs the plans through CuPy itself."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from buildingai.accel.kernels import compiled, split
from buildingai.accel.kernels.compiled import cuda_rows
from tests.accel.kernels.cuda_transliteration import evaluate, parameters, value_of
from tests.accel.kernels.row_cases import arrays_for, keywords_for


def _reference(name):
    return next(kernel for kernel, (twin, _) in compiled.REGISTRY.items() if twin == name)


class _NumpyKernels:
    """Stands for CuPy in ``cuda_rows``: its ReductionKernel and ElementwiseKernel run the CUDA
    expressions they are given in NumPy, with the arguments ``cuda_rows.run`` passes."""

    class ReductionKernel:
        def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map, identity, name):
            assert out_params == "float32 y" and post_map == "y = a", name
            self.inputs, self.map_expr, self.name = parameters(in_params), map_expr, name
            self.reduce = np.max if (reduce_expr, identity) == cuda_rows._MAX else np.sum
            assert self.reduce is np.max or (reduce_expr, identity) == cuda_rows._SUM

        def __call__(self, *arguments, axis, keepdims):
            assert len(arguments) == len(self.inputs) and axis == 1 and keepdims, self.name
            scope = dict(zip(self.inputs, arguments))
            shape = np.broadcast_shapes(*(np.shape(a) for a in arguments))
            mapped = np.broadcast_to(value_of(self.map_expr, scope), shape)
            return self.reduce(mapped, axis=1, keepdims=True)

    class ElementwiseKernel:
        def __init__(self, in_params, out_params, operation, name):
            self.inputs, self.outputs = parameters(in_params), parameters(out_params)
            self.operation, self.name = operation, name

        def __call__(self, *arguments):
            assert len(arguments) == len(self.inputs) + len(self.outputs), self.name
            scope = dict(zip(self.inputs + self.outputs, arguments))
            evaluate(self.operation, scope)
            for name, array in zip(self.outputs, arguments[len(self.inputs) :]):
                array[...] = scope[name]


@pytest.fixture
def numpy_kernels(monkeypatch):
    """``cuda_rows`` building its kernels from ``_NumpyKernels`` instead of CuPy."""
    monkeypatch.setattr(cuda_rows, "cupy_module", lambda: _NumpyKernels)
    monkeypatch.setattr(cuda_rows, "_built", {})


def _outputs(name) -> list[int]:
    """Positions of the arrays a plan writes."""
    plan = cuda_rows.TWINS[name]
    written = {step.target for step in plan.steps if isinstance(step, cuda_rows.Reduce)}
    for step in plan.steps:
        if isinstance(step, cuda_rows.Map):
            written.update(step.targets)
    return [index for index, array in enumerate(plan.arrays) if array in written]


def test_every_plan_names_a_registered_row_kernel_with_its_arrays_and_parameters():
    registered = {twin: params for twin, params in compiled.REGISTRY.values()}
    for name, plan in cuda_rows.TWINS.items():
        assert name in registered, name
        assert set(registered[name]) <= set(plan.params) | {"axis"}, name
        assert _outputs(name), f"{name} writes nothing"


@pytest.mark.parametrize("name", sorted(cuda_rows.TWINS))
def test_every_step_reads_only_names_it_has(name):
    plan = cuda_rows.TWINS[name]
    known = set(plan.arrays) | set(plan.params) | {"scale"}
    for step in plan.steps:
        code = step.value if isinstance(step, cuda_rows.Reduce) else step.operation
        words = set(re.findall(r"\b[a-z_]\w*\b", code)) - {"expf", "logf", "sqrtf"}
        assert words <= known | set(getattr(step, "targets", ())), (name, words - known)
        known |= {step.target} if isinstance(step, cuda_rows.Reduce) else set(step.targets)


CASES = [(name, True) for name in sorted(cuda_rows.TWINS)] + [
    (name, False) for name in sorted(cuda_rows.TWINS) if "bias" in cuda_rows.TWINS[name].params
]


@pytest.mark.parametrize(("name", "bias"), CASES)
def test_plan_computes_the_numpy_kernel(name, bias, numpy_kernels):
    rng = np.random.default_rng(0)
    arrays = arrays_for(name, rng)
    keywords = keywords_for(name, rng)
    if not bias:  # layer norm without one
        keywords["bias"] = None
    expected = [a.copy() for a in arrays]
    reference = _reference(name)
    kernel_keywords = {k: v for k, v in keywords.items() if k in reference.compiled_twin[1]}
    with np.errstate(invalid="ignore", over="ignore"):
        reference(np, *expected, **kernel_keywords)
    got = [a.copy() for a in arrays]
    cuda_rows.run(name, got, keywords)
    for index in _outputs(name):
        label = cuda_rows.TWINS[name].arrays[index]
        np.testing.assert_allclose(got[index], expected[index], rtol=2e-5, atol=2e-6, err_msg=label)


class _FakeDevice:
    """Stands for CuPy in the dispatch test: split_rows only compares it with NumPy."""


def test_split_rows_hands_device_rows_to_run_gpu_and_falls_back_to_the_kernel(
    monkeypatch, accel_on
):
    seen = []

    def run_gpu(kernel, arrays, keywords=None):
        seen.append((kernel, arrays))
        return len(seen) == 1  # the first call "runs", the second does not

    monkeypatch.setattr(compiled, "run_gpu", run_gpu)
    calls = []

    def kernel(xp, x, out):
        calls.append(xp)

    x, out = np.ones((3, 4), np.float32), np.empty((3, 4), np.float32)
    split.split_rows(_FakeDevice, kernel, x, out)
    assert not calls and seen[0][0] is kernel
    split.split_rows(_FakeDevice, kernel, x, out)
    assert calls == [_FakeDevice]


def test_run_gpu_sends_row_twins_to_their_plan_with_the_partial_keywords(monkeypatch, accel_on):
    ran = []
    monkeypatch.setattr(
        cuda_rows, "run", lambda name, arrays, keywords: ran.append((name, keywords))
    )
    reference = _reference("rows.layer_norm_rows")
    kernel = functools.partial(reference, weight=np.ones(3, np.float32), bias=None, eps=1e-5)
    arrays = [np.ones((2, 3), np.float32) for _ in range(3)] + [np.ones((2, 1), np.float32)]
    assert compiled.run_gpu(kernel, arrays)
    assert ran[0][0] == "rows.layer_norm_rows" and ran[0][1]["eps"] == 1e-5
    assert compiled.has_gpu_twin(reference)
