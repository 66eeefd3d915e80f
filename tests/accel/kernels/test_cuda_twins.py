"""The CUDA twins' sources, checked without a GPU: each names a registered twin, and each
activation's CUDA expression, transliterated to NumPy (float32), computes what its NumPy
reference kernel computes. On a GPU, tests/gpu/test_cuda_twins.py runs the kernels themselves."""

from __future__ import annotations

import re

import numpy as np
import pytest

from buildingai.accel.kernels import compiled
from buildingai.accel.kernels.compiled import cuda
from tests.accel.kernels.cuda_transliteration import evaluate as _evaluate
from tests.accel.kernels.cuda_transliteration import parameters as _parameters


def test_every_cuda_source_names_a_registered_twin():
    registered = {name for name, _ in compiled.REGISTRY.values()}
    assert set(cuda.SOURCES) <= registered
    for name, (inputs, outputs, operation) in cuda.SOURCES.items():
        for parameter in _parameters(inputs) + _parameters(outputs):
            assert re.search(rf"\b{parameter}\b", operation), f"{name}: {parameter} unused"


ACTIVATIONS = sorted(name for name in cuda.SOURCES if name.startswith("activations."))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_cuda_expression_computes_the_numpy_kernel(name):
    reference = next(k for k, (twin, _) in compiled.REGISTRY.items() if twin == name)
    inputs, outputs, operation = cuda.SOURCES[name]
    rng = np.random.default_rng(0)
    arrays = {}
    for parameter in _parameters(inputs):
        if parameter in ("s", "gate", "cdf"):  # a sigmoid or a CDF: in (0, 1)
            arrays[parameter] = rng.random(1000).astype(np.float32)
        else:
            arrays[parameter] = (rng.standard_normal(1000) * 3).astype(np.float32)
    expected = [np.empty(1000, np.float32) for _ in _parameters(outputs)]
    with np.errstate(over="ignore"):
        reference(np, *arrays.values(), *expected)
    values = dict(arrays)
    _evaluate(operation, values)
    for output, want in zip(_parameters(outputs), expected):
        # exact GELU: erf here, the fitted tanh form in the NumPy kernel (within 6.5e-7)
        np.testing.assert_allclose(values[output], want, rtol=2e-6, atol=1e-6, err_msg=output)


def test_without_a_gpu_no_cuda_twin_is_tried():
    x = np.ones(4, np.float32)
    # NumPy arrays never reach the CUDA twins (split.elementwise sends them to the numba ones)
    assert not compiled.run_gpu(np.negative, [x])


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"weight_decay": 0.1, "maximize": True},
        {"weight_decay": 0.1, "decoupled_weight_decay": True},
    ],
    ids=["plain", "l2-maximize", "decoupled"],
)
def test_cuda_adam_with_its_scalars_computes_the_numpy_update(options):
    from buildingai.accel.optimizers import adam_update

    scalars = {"weight_decay": 0.0, "decoupled_weight_decay": False, "maximize": False}
    scalars.update(options, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    scalars.update(
        step_size=1e-3 / (1 - 0.9**3), bias_correction2_sqrt=float(np.sqrt(1 - 0.999**3))
    )
    rng = np.random.default_rng(1)
    param, grad = (rng.standard_normal(500).astype(np.float32) for _ in range(2))
    exp_avg = (rng.standard_normal(500) * 0.01).astype(np.float32)
    exp_avg_sq = (rng.random(500) * 0.01).astype(np.float32)
    expected = [a.copy() for a in (param, exp_avg, exp_avg_sq)]
    work = [np.empty(500, np.float32) for _ in range(2)]
    adam_update(np, expected[0], grad, expected[1], expected[2], None, work, **scalars)

    inputs, outputs, operation = cuda.SOURCES["optim.adam"]

    def kernel(*arguments):  # what CuPy's ElementwiseKernel would receive
        values = dict(zip(_parameters(inputs) + _parameters(outputs), arguments))
        values = {
            k: np.asarray(v, bool if k == "maximize" else np.float32) for k, v in values.items()
        }
        _evaluate(operation, values)
        for name, array in zip(_parameters(outputs), arguments[-3:]):
            array[...] = values[name]

    got = [a.copy() for a in (param, exp_avg, exp_avg_sq)]
    cuda.run_adam(kernel, got[0], grad, got[1], got[2], **scalars)
    for name, want, have in zip(("param", "exp_avg", "exp_avg_sq"), expected, got):
        np.testing.assert_allclose(have, want, rtol=2e-6, atol=1e-8, err_msg=name)
