"""PyTorch's ``foreach`` / ``fused`` optimizer arguments: accepted by every optimizer, mapped to
the packed update (None/True: packed; foreach=False: one by one), same results either way, and
kept in the parameter groups and state dicts."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.packing import ParameterPack
from buildingai.optim import OptimizerError

pytestmark = pytest.mark.usefixtures("accel_on")  # packing is part of the accelerated step


def _packs(optimizer) -> dict:
    """The packs the accelerated step keeps, by parameter group index."""
    return optimizer._accelerated.get("packs", {})


NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Lion"]
SHAPES = [(4,), (3, 5), (2,)]


def _run(name, **options):
    rng = np.random.default_rng(0)
    params = [bai.tensor(rng.standard_normal(s), requires_grad=True) for s in SHAPES]
    optimizer = getattr(bai.optim, name)(params, lr=0.01, **options)
    for step in range(3):
        for position, param in enumerate(params):
            grad = np.random.default_rng(10 * step + position).standard_normal(param.shape)
            param.grad = bai.tensor(grad)
        optimizer.step()
    return params, optimizer


@pytest.mark.parametrize("name", NAMES)
def test_foreach_and_fused_choose_the_packed_or_the_single_update(name):
    reference, default = _run(name)
    assert isinstance(_packs(default).get(0), ParameterPack)
    for options, packed in (
        ({"foreach": True}, True),
        ({"fused": True}, True),
        ({"foreach": False}, False),
        ({"foreach": False, "fused": True}, True),
    ):
        params, optimizer = _run(name, **options)
        assert isinstance(_packs(optimizer).get(0), ParameterPack) is packed, options
        for ours, theirs in zip(params, reference):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15)
        group = optimizer.param_groups[0]
        assert (group["foreach"], group["fused"]) == (
            options.get("foreach"),
            options.get("fused"),
        )


def test_torch_style_calls_run():
    torch = pytest.importorskip("torch")
    weights = np.random.default_rng(1).standard_normal((3, 2))
    ours = bai.tensor(weights, requires_grad=True)
    theirs = torch.tensor(weights, requires_grad=True)
    ours_optimizer = bai.optim.AdamW([ours], lr=0.1, fused=True)
    theirs_optimizer = torch.optim.AdamW([theirs], lr=0.1, foreach=False)
    for _ in range(3):
        (ours * ours).sum().backward()
        (theirs * theirs).sum().backward()
        ours_optimizer.step()
        theirs_optimizer.step()
        ours_optimizer.zero_grad()
        theirs_optimizer.zero_grad()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_foreach_and_fused_both_true_are_refused_as_in_torch():
    with pytest.raises(OptimizerError, match=r"Adam: foreach=True and fused=True cannot both"):
        bai.optim.Adam([bai.zeros(2, requires_grad=True)], foreach=True, fused=True)


def test_the_options_survive_a_state_dict_round_trip():
    _, optimizer = _run("SGD", foreach=False)
    state = optimizer.state_dict()
    fresh = bai.optim.SGD([bai.zeros(s, requires_grad=True) for s in SHAPES], lr=0.01)
    fresh.load_state_dict(state)
    assert fresh.param_groups[0]["foreach"] is False


STEP_OPTIONS = ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam"]
STEP_OPTIONS += ["RAdam", "ASGD", "Rprop"]


@pytest.mark.parametrize("name", STEP_OPTIONS)
def test_capturable_and_differentiable_as_pytorch_spells_them(name):
    """Each optimizer takes the keywords PyTorch's takes and keeps its parameter-group keys;
    differentiable=True, which would change what the step means, is refused."""
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    options = {"differentiable": False}
    if "capturable" in theirs.param_groups[0]:
        options["capturable"] = False
    ours = getattr(bai.optim, name)([bai.zeros(2, requires_grad=True)], lr=0.1, **options)
    assert set(theirs.param_groups[0]) <= set(ours.param_groups[0])
    with pytest.raises(OptimizerError, match=f"{name}: differentiable=True .* is not supported"):
        getattr(bai.optim, name)([bai.zeros(2, requires_grad=True)], differentiable=True)
