"""The CUDA twins on a GPU (skipped cleanly elsewhere): each fused CuPy kernel and each row
plan against its NumPy reference kernel on the host, Adam's fused update against the NumPy
update, and the row ops (softmax, log_softmax, cross-entropy, layer norm) against the CPU."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import compiled
from buildingai.accel.kernels.compiled import cuda, cuda_rows
from tests.accel.kernels.cuda_transliteration import parameters as _parameters
from tests.accel.kernels.row_cases import arrays_for, keywords_for

pytestmark = [
    pytest.mark.skipif(not bai.cuda_is_available(), reason="needs CuPy and a CUDA GPU"),
    pytest.mark.usefixtures("accel_on"),  # the twins belong to buildingai.accel, off at import
]


def _cupy():
    from buildingai.backend.device import cupy_module

    return cupy_module()


@pytest.mark.parametrize("name", sorted(n for n in cuda.SOURCES if n.startswith("activations.")))
def test_cuda_twin_matches_its_numpy_reference(name):
    cupy = _cupy()
    reference = next(k for k, (twin, _) in compiled.REGISTRY.items() if twin == name)
    inputs, outputs, _ = cuda.SOURCES[name]
    rng = np.random.default_rng(0)
    host = []
    for parameter in _parameters(inputs):
        if parameter in ("s", "gate", "cdf"):
            host.append(rng.random(100_003).astype(np.float32))
        else:
            host.append((rng.standard_normal(100_003) * 3).astype(np.float32))
    expected = [np.empty(100_003, np.float32) for _ in _parameters(outputs)]
    with np.errstate(over="ignore"):
        reference(np, *host, *expected)
    device = [cupy.asarray(a) for a in host]
    got = [cupy.empty(100_003, cupy.float32) for _ in expected]
    assert compiled.run_gpu(reference, [*device, *got]), f"{name}: the CUDA twin did not run"
    for want, have in zip(expected, got):
        np.testing.assert_allclose(have.get(), want, rtol=2e-6, atol=1e-6)


def test_adam_on_the_gpu_runs_the_fused_kernel_and_matches_the_cpu():
    rng = np.random.default_rng(1)
    start = rng.standard_normal((300, 200)).astype(np.float32)
    grads = [rng.standard_normal((300, 200)).astype(np.float32) for _ in range(3)]
    results = {}
    for device in ("cpu", "cuda"):
        param = bai.nn.Parameter(bai.tensor(start).to(device))
        optimizer = bai.optim.Adam([param], lr=1e-2, weight_decay=0.01)
        for grad in grads:
            param.grad = bai.tensor(grad).to(device)
            optimizer.step()
        results[device] = param.to("cpu").numpy()
    np.testing.assert_allclose(results["cuda"], results["cpu"], rtol=1e-5, atol=1e-6)
    assert "optim.adam" not in compiled._gpu_failures


@pytest.mark.parametrize("name", sorted(cuda_rows.TWINS))
def test_cuda_row_twin_matches_its_numpy_reference(name):
    cupy = _cupy()
    rng = np.random.default_rng(0)
    host = arrays_for(name, rng)
    keywords = keywords_for(name, rng)
    reference = next(k for k, (twin, _) in compiled.REGISTRY.items() if twin == name)
    taken = {k: v for k, v in keywords.items() if k in reference.compiled_twin[1]}
    expected = [a.copy() for a in host]
    with np.errstate(invalid="ignore", over="ignore"):
        reference(np, *expected, **taken)
    device_keywords = {
        k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in taken.items()
    }
    kernel = functools.partial(reference, **device_keywords) if device_keywords else reference
    device = [cupy.asarray(a) for a in host]
    assert compiled.run_gpu(kernel, device), f"{name}: the CUDA twin did not run"
    for index, (want, have) in enumerate(zip(expected, device)):
        label = cuda_rows.TWINS[name].arrays[index]
        np.testing.assert_allclose(have.get(), want, rtol=2e-5, atol=2e-6, err_msg=label)


def test_row_ops_on_the_gpu_run_their_twins_and_match_the_cpu():
    F = bai.nn.functional
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    target = rng.integers(0, 1000, 64)
    weight, bias = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    results = {}
    for device in ("cpu", "cuda"):
        inputs = bai.tensor(x).to(device).requires_grad_()
        w = bai.nn.Parameter(bai.tensor(weight).to(device))
        b = bai.nn.Parameter(bai.tensor(bias).to(device))
        normed = F.layer_norm(inputs, (1000,), w, b)
        loss = F.cross_entropy(normed, bai.tensor(target).to(device))
        loss = loss + F.log_softmax(normed, dim=-1).mean() + F.softmax(normed, dim=-1).max()
        loss.backward()
        results[device] = [t.to("cpu").numpy() for t in (loss, inputs.grad, w.grad, b.grad)]
    for got, want in zip(results["cuda"], results["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert not any(name.startswith("rows.") for name in compiled._gpu_failures)
