"""The CUDA twins on a GPU (skipped cleanly elsewhere): each fused CuPy kernel against its NumPy
reference kernel on the host, and Adam's fused update against the NumPy update."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.ops.kernels import compiled
from buildingai.ops.kernels.compiled import cuda

pytestmark = pytest.mark.skipif(not bai.cuda_is_available(), reason="needs CuPy and a CUDA GPU")


def _cupy():
    from buildingai.backend.device import cupy_module

    return cupy_module()


def _parameters(declaration: str) -> list[str]:
    return [part.split()[-1] for part in declaration.split(",")]


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
