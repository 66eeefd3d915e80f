"""A compiled training step whose convolution picks another kernel at run time than when it was
traced: traced with im2col (which keeps its columns for the weight gradient), run where the
direct convolution twins take over (which keep none), and the other way round. Losses and
parameters agree with eager steps from the same start."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn
from buildingai.accel.kernels import compiled
from buildingai.graph import TensorSpec
from buildingai.ops import conv

pytest.importorskip("numba")
pytest.importorskip("threadpoolctl")


def _model_and_step(seed: int = 0):
    bai.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return model, step


def _direct_weight_grads(monkeypatch) -> list:
    calls = []
    run = compiled.run

    def spy(kernel, arrays, keywords=None):
        done = run(kernel, arrays, keywords)
        if done and kernel is conv.correlate_weight_grad:
            calls.append(arrays[0].shape)
        return done

    monkeypatch.setattr(compiled, "run", spy)
    return calls


@pytest.mark.parametrize("traced_in_one_pool", [False, True])
def test_compiled_step_agrees_when_the_convolution_kernel_changes(monkeypatch, traced_in_one_pool):
    from buildingai.backend import threads

    monkeypatch.setattr(compiled, "MIN_PARALLEL_WORK", 0)
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)  # the choice, not OpenBLAS's spin
    direct = _direct_weight_grads(monkeypatch)
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal((16, 3, 16, 16)).astype(np.float32))
    y = bai.tensor(rng.integers(0, 10, 16))
    signature = [TensorSpec((None, 3, 16, 16), bai.float32), TensorSpec((None,), bai.int64)]
    eager_model, eager_step = _model_and_step()
    model, step = _model_and_step()
    try:
        if traced_in_one_pool:
            bai.set_num_threads(2, gemm=True)
        compiled_step = bai.compile(step, input_signature=signature)
        losses = [compiled_step(x, y).item()]
        bai.set_num_threads(None if traced_in_one_pool else 2, gemm=not traced_in_one_pool)
        losses += [compiled_step(x, y).item() for _ in range(2)]
    finally:
        bai.set_num_threads(None)
    assert direct  # one of the two arrangements ran the direct weight gradient
    expected = [eager_step(x, y).item() for _ in range(3)]
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    for (name, ours), (_, theirs) in zip(model.named_parameters(), eager_model.named_parameters()):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
