"""A compiled training step traced with acceleration in one setting and run in the other:
traced on the records' reference (im2col, which keeps its columns for the weight gradient) and
run where the direct convolution kernels take over (which keep none), and the other way round.
Losses and parameters agree with eager steps from the same start."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn
from buildingai.accel import convolution
from buildingai.graph import TensorSpec

pytest.importorskip("numba")


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
    """The shapes of x in each call the direct weight-gradient kernel computed."""
    entry = bai.accel.kernel("conv2d_weight_grad.direct")
    calls = []
    run = entry.run

    def spy(ctx, xp, *arrays, **attrs):
        result = run(ctx, xp, *arrays, **attrs)
        if result is not NotImplemented:
            calls.append(arrays[0].shape)
        return result

    monkeypatch.setattr(entry, "run", spy)
    return calls


@pytest.mark.parametrize("traced_with_accel", [False, True])
def test_compiled_step_agrees_when_the_convolution_kernel_changes(monkeypatch, traced_with_accel):
    monkeypatch.setattr(convolution, "DIRECT_MIN_THREADS", 1)  # the kernel, whatever the threads
    direct = _direct_weight_grads(monkeypatch)
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal((16, 3, 16, 16)).astype(np.float32))
    y = bai.tensor(rng.integers(0, 10, 16))
    signature = [TensorSpec((None, 3, 16, 16), bai.float32), TensorSpec((None,), bai.int64)]
    eager_model, eager_step = _model_and_step()
    model, step = _model_and_step()
    with bai.accel.enabled(traced_with_accel):
        compiled_step = bai.compile(step, input_signature=signature)
        losses = [compiled_step(x, y).item()]
    with bai.accel.enabled(not traced_with_accel):
        losses += [compiled_step(x, y).item() for _ in range(2)]
    with bai.accel.enabled(False):
        expected = [eager_step(x, y).item() for _ in range(3)]
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    for (name, ours), (_, theirs) in zip(model.named_parameters(), eager_model.named_parameters()):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert direct  # the arrangement with acceleration on ran the direct weight gradient
