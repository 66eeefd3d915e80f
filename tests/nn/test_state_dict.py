"""State dicts: round trips with PyTorch (both ways) and strict-mode errors."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn import IncompatibleKeys, Linear, Sequential

from .models import Net, TorchNet

torch = pytest.importorskip("torch")


def _forward_and_grads(ours, theirs, x: np.ndarray):
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x.copy(), requires_grad=True)
    ours_out, theirs_out = ours(ours_x), theirs(theirs_x)
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-12)
    weights = np.random.default_rng(1).standard_normal(ours_out.shape)
    (ours_out * bai.Tensor(weights)).sum().backward()
    (theirs_out * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10)
    theirs_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(
            param.grad.numpy(), theirs_params[name].grad.numpy(), rtol=1e-10, atol=1e-14,
            err_msg=name,
        )  # fmt: skip


def test_pytorch_state_dict_loads_and_models_agree_in_float64():
    theirs = TorchNet().double()
    with torch.no_grad():
        for buffer in theirs.buffers():
            if buffer.is_floating_point():
                buffer.uniform_(0.5, 1.5)
    ours = Net().to(bai.float64)
    result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert result == ([], []) and repr(result) == "<All keys matched successfully>"
    assert isinstance(result, IncompatibleKeys)
    x = np.random.default_rng(0).standard_normal((5, 3))
    _forward_and_grads(ours, theirs, x)


def test_our_state_dict_loads_into_pytorch():
    ours = Net().to(bai.float64)
    theirs = TorchNet().double()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((4, 3))
    _forward_and_grads(ours, theirs, x)


def test_state_dict_values_share_memory_and_are_detached():
    model = Linear(2, 3)
    state = model.state_dict()
    assert isinstance(state, OrderedDict) and list(state) == ["weight", "bias"]
    assert not state["weight"].requires_grad
    assert np.shares_memory(state["weight"].data, model.weight.data)
    assert model.state_dict(keep_vars=True)["weight"] is model.weight
    assert list(model.state_dict(prefix="fc.")) == ["fc.weight", "fc.bias"]


def test_load_copies_in_place_and_casts():
    model = Linear(2, 3)
    weight = model.weight
    values = np.arange(6, dtype=np.float64).reshape(3, 2)
    model.load_state_dict({"weight": values, "bias": [1, 2, 3]})  # lists and ints work too
    assert model.weight is weight and model.weight.dtype == np.float32
    np.testing.assert_array_equal(model.weight.numpy(), values)
    np.testing.assert_array_equal(model.bias.numpy(), [1, 2, 3])
    values[0, 0] = 99.0  # the model holds a copy
    assert model.weight.numpy()[0, 0] == 0.0
    # Torch tensors are read through numpy.asarray.
    model.load_state_dict({"weight": torch.ones(3, 2), "bias": torch.zeros(3)})
    assert model.weight.numpy().sum() == 6.0


def test_load_keeps_optimizer_references_working():
    model = Linear(2, 1)
    held = list(model.parameters())  # what an optimizer would keep
    model.load_state_dict({"weight": np.ones((1, 2)), "bias": np.zeros(1)})
    out = model(bai.ones(1, 2))
    assert out.item() == 2.0
    out.sum().backward()
    assert all(p.grad is not None for p in held)


def test_strict_errors_list_missing_unexpected_and_mismatched_keys():
    model = Sequential(Linear(2, 3), Linear(3, 1))
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    del state["1.bias"]
    state["1.gamma"] = np.zeros(1)
    state["0.weight"] = np.zeros((2, 3))
    before = model[0].weight.numpy()
    with pytest.raises(bai.CheckpointError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "Error(s) in loading state_dict for Sequential:" in message
    assert 'Missing key(s) in state_dict: "1.bias".' in message
    assert 'Unexpected key(s) in state_dict: "1.gamma".' in message
    assert (
        "size mismatch for 0.weight: copying a param with shape (2, 3) from checkpoint, the "
        "shape in current model is (3, 2)." in message
    )
    assert "strict=False" in message
    assert isinstance(info.value, RuntimeError)  # as PyTorch's error is
    np.testing.assert_array_equal(model[0].weight.numpy(), before)  # nothing was copied


def test_non_strict_returns_keys_but_size_mismatch_still_raises():
    model = Sequential(Linear(2, 3), Linear(3, 1))
    state = {k: v.numpy() + 1 for k, v in model.state_dict().items() if k != "1.bias"}
    state["extra"] = np.zeros(2)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["1.bias"] and result.unexpected_keys == ["extra"]
    missing, unexpected = result
    assert (missing, unexpected) == (["1.bias"], ["extra"])
    np.testing.assert_array_equal(model[0].bias.numpy(), state["0.bias"])

    state["0.bias"] = np.zeros(4)
    with pytest.raises(bai.CheckpointError, match="size mismatch for 0.bias") as info:
        model.load_state_dict(state, strict=False)
    assert "Missing" not in str(info.value)


def test_load_rejects_what_is_not_a_mapping_or_an_array():
    model = Linear(1, 1)
    with pytest.raises(TypeError, match="expects a mapping of names to tensors, got list"):
        model.load_state_dict([("weight", np.zeros((1, 1)))])
    with pytest.raises(TypeError, match=r"state_dict\['bias'\] is of type object"):
        model.load_state_dict({"weight": np.zeros((1, 1)), "bias": object()})


def test_buffers_round_trip_and_non_persistent_ones_stay_out():
    source, target = Net(), Net()
    with bai.no_grad():
        source.layers[1].scale.fill_(3.0)
        source.layers[1].cache.fill_(5.0)
        source.step.fill_(7)
    target.load_state_dict(source.state_dict())
    assert target.layers[1].scale.numpy().tolist() == [3.0] * 4
    assert target.layers[1].cache.numpy().tolist() == [0.0] * 4
    assert target.step.item() == 7 and target.step.dtype == np.int64
