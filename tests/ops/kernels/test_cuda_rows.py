"""The CUDA row twins' plans (``compiled/cuda_rows.py``), checked without a GPU: each plan names a
registered row kernel, reads only what it has, and, run step by step in NumPy (reductions along
each row, maps broadcast over rows), computes what the NumPy reference kernel of the same name
computes, -inf and NaN rows included. On a GPU, tests/gpu/test_cuda_twins.py runs the plans
through CuPy."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from buildingai.ops.kernels import compiled, split
from buildingai.ops.kernels.compiled import cuda_rows
from tests.ops.kernels.cuda_transliteration import evaluate, value_of
from tests.ops.kernels.row_cases import arrays_for, keywords_for


def _reference(name):
    return next(kernel for kernel, (twin, _) in compiled.REGISTRY.items() if twin == name)


def _run_plan(plan, arrays, keywords) -> None:
    """The plan in NumPy, as ``cuda_rows.run`` runs it in CuPy."""
    values = cuda_rows.values_of(plan, arrays, keywords)
    for step in plan.steps:
        if isinstance(step, cuda_rows.Reduce):
            mapped = np.broadcast_to(value_of(step.value, values), arrays[0].shape)
            reduce = np.max if step.kind == "max" else np.sum
            result = reduce(mapped, axis=1, keepdims=True)
            if step.target in plan.arrays:
                values[step.target][...] = result
            else:
                values[step.target] = result
        else:
            scope = dict(values)
            evaluate(step.operation, scope)
            for target in step.targets:
                values[target][...] = scope[target]


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
def test_plan_computes_the_numpy_kernel(name, bias):
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
    _run_plan(cuda_rows.TWINS[name], got, keywords)
    for index in _outputs(name):
        label = cuda_rows.TWINS[name].arrays[index]
        np.testing.assert_allclose(got[index], expected[index], rtol=2e-5, atol=2e-6, err_msg=label)


class _FakeDevice:
    """Stands for CuPy in the dispatch test: split_rows only compares it with NumPy."""


def test_split_rows_hands_device_rows_to_run_gpu_and_falls_back_to_the_kernel(monkeypatch):
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


def test_run_gpu_sends_row_twins_to_their_plan_with_the_partial_keywords(monkeypatch):
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
