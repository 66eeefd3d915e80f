"""GradScaler against torch.amp.GradScaler on the same scripted gradient sequence, overflows
included: the same scales, skipped steps, growth steps and parameters, step for step."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import optim
from buildingai.amp import GradScaler, GradScalerError

torch = pytest.importorskip("torch")

# one row per step: the gradient the unscaled loss gives; inf/NaN rows overflow once scaled
SCRIPT = [
    [0.5, -1.0, 2.0],
    [1e35, 0.0, 1.0],  # finite, but inf once multiplied by the scale
    [0.25, 0.25, -0.5],
    [np.nan, 1.0, 1.0],
    [1.0, 2.0, 3.0],
    [-0.5, 0.1, 0.2],
    [0.3, 0.3, 0.3],
    [np.inf, 0.0, 0.0],
    [0.1, -0.2, 0.3],
    [2.0, 1.0, 0.5],
    [0.7, 0.7, -0.7],
]


def _run_ours(init_scale, growth_interval, clip):
    weight = bai.Tensor(np.array([1.0, -2.0, 0.5], np.float32), requires_grad=True)
    optimizer = optim.SGD([weight], lr=0.1, momentum=0.9)
    scaler = GradScaler(init_scale=init_scale, growth_interval=growth_interval)
    history = []
    for row in SCRIPT:
        coefficients = bai.Tensor(np.array(row, np.float32))
        optimizer.zero_grad()
        loss = (weight * coefficients).sum()  # d loss / d weight = the row
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(optimizer)
            optim.clip_grad_norm_([weight], 1.0)
        before = weight.numpy().copy()
        scaler.step(optimizer)
        skipped = np.array_equal(before, weight.numpy())
        scaler.update()
        history.append((scaler.get_scale(), skipped, weight.numpy().copy()))
    return history, scaler


def _run_torch(init_scale, growth_interval, clip):
    weight = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    optimizer = torch.optim.SGD([weight], lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    history = []
    for row in SCRIPT:
        coefficients = torch.tensor(row, dtype=torch.float32)
        optimizer.zero_grad()
        loss = (weight * coefficients).sum()
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_([weight], 1.0)
        scaler.step(optimizer)
        scaler.update()
        history.append((scaler.get_scale(), None, weight.detach().numpy().copy()))
    return history, scaler


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
@pytest.mark.parametrize("clip", [False, True])
def test_matches_torch_step_for_step(clip):
    ours, scaler = _run_ours(init_scale=2.0**16, growth_interval=3, clip=clip)
    theirs, torch_scaler = _run_torch(init_scale=2.0**16, growth_interval=3, clip=clip)
    for step, ((scale, _, weight), (torch_scale, _, torch_weight)) in enumerate(zip(ours, theirs)):
        assert scale == torch_scale, f"step {step}"
        np.testing.assert_allclose(weight, torch_weight, rtol=1e-6, atol=1e-7, err_msg=f"{step}")
    skipped = [step for step, (_, was_skipped, _) in enumerate(ours) if was_skipped]
    assert skipped == [1, 3, 7]  # exactly the overflowing steps
    assert scaler.state_dict() == torch_scaler.state_dict()


def test_growth_is_capped_at_a_finite_scale():
    scaler = GradScaler(init_scale=2.0**127, growth_interval=1)
    weight = bai.Tensor(np.ones(2, np.float32), requires_grad=True)
    optimizer = optim.SGD([weight], lr=0.0)
    (weight * 1e-30).sum().backward()
    scaler.scale(bai.Tensor(np.float32(1.0)))
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**127  # 2**128 overflows float32: PyTorch keeps the scale


def test_state_dict_round_trip_and_disabled_pass_through():
    scaler = GradScaler(init_scale=1024.0, growth_interval=5)
    state = scaler.state_dict()
    restored = GradScaler()
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    off = GradScaler(enabled=False)
    loss = bai.Tensor(np.float32(3.0))
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


def test_calls_out_of_order_say_what_to_do():
    weight = bai.Tensor(np.ones(2, np.float32), requires_grad=True)
    optimizer = optim.SGD([weight], lr=0.1)
    scaler = GradScaler()
    with pytest.raises(GradScalerError, match="before scale"):
        scaler.step(optimizer)
    scaler.scale((weight * 2.0).sum()).backward()
    scaler.step(optimizer)
    with pytest.raises(GradScalerError, match="already been called"):
        scaler.step(optimizer)
    with pytest.raises(GradScalerError, match="after step"):
        scaler.unscale_(optimizer)
    scaler.update()
    scaler.scale((weight * 2.0).sum()).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(GradScalerError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
