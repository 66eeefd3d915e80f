"""``nll_loss`` (and cross-entropy's composite path, which shares it) traced: the target is an
input of the ``nll_loss`` op, so compiled steps and frozen graphs pick each call's classes and
agree with eager execution and with PyTorch."""

import numpy as np
import pytest
import torch

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import TensorSpec, float32, float64, int64, nn

STEPS = 4
CLASSES = 5
WEIGHT = np.array([0.5, 1.0, 2.0, 0.7, 1.3])

# keyword arguments of nn.NLLLoss; a target of 2 is ignored where ignore_index is 2
VARIANTS = {
    "mean": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weight": {"weight": WEIGHT},
    "ignore_index": {"ignore_index": 2},
    "weight_ignore_index_sum": {"weight": WEIGHT, "ignore_index": 2, "reduction": "sum"},
}


def _criterion(kwargs: dict, dtype=np.float32) -> nn.NLLLoss:
    weight = kwargs.get("weight")
    options = dict(kwargs, weight=None if weight is None else bai.tensor(weight.astype(dtype)))
    return nn.NLLLoss(**options)


def _batches(count: int, size: int = 8, features: int = 6, dtype=np.float32):
    rng = np.random.default_rng(3)
    for _ in range(count):
        x = rng.standard_normal((size, features)).astype(dtype)
        yield bai.tensor(x), bai.tensor(rng.integers(0, CLASSES, size))


def _train(kwargs: dict, compiled_step: bool):
    """Losses and final parameters of STEPS SGD steps on a Linear + LogSoftmax model."""
    bai.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, CLASSES), nn.LogSoftmax(dim=1))
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = _criterion(kwargs)

    def step(x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        total = loss.sum() if loss.ndim else loss  # reduction="none": per-sample losses
        total.backward()
        optimizer.step()
        return loss

    if compiled_step:
        step = bai.compile(step, [TensorSpec((None, 6), float32), TensorSpec((None,), int64)])
    losses = [step(x, y).numpy().copy() for x, y in _batches(STEPS)]
    return losses, [p.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiled_nll_loss_steps_match_eager(variant):
    eager, compiled = _train(VARIANTS[variant], False), _train(VARIANTS[variant], True)
    for ours, expected in zip(compiled[0] + compiled[1], eager[0] + eager[1]):
        np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7)
    assert len({float(np.sum(loss)) for loss in eager[0]}) == STEPS  # each step's own targets


def test_a_frozen_function_picks_each_calls_targets():
    """The graph traced on the first batch reads the targets of every later call."""
    model = nn.Sequential(nn.Linear(6, CLASSES), nn.LogSoftmax(dim=1))
    loss_of = bai.freeze(
        lambda x, y: F.nll_loss(model(x), y, reduction="none"),
        [TensorSpec((None, 6), float32), TensorSpec((None,), int64)],
    )
    for x, y in _batches(3):
        expected = F.nll_loss(model(x), y, reduction="none")
        np.testing.assert_array_equal(loss_of(x, y).numpy(), expected.numpy())


@pytest.mark.parametrize("options", [{"label_smoothing": 0.1}, {"label_smoothing": 0.2,
                                                                 "weight": WEIGHT}])  # fmt: skip
def test_compiled_cross_entropy_with_label_smoothing_matches_eager(options):
    def run(compiled_step: bool):
        bai.manual_seed(0)
        model = nn.Linear(6, CLASSES)
        optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
        weight = options.get("weight")
        kwargs = dict(options, weight=None if weight is None else bai.tensor(weight, "float32"))

        def step(x, y):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, ignore_index=2, **kwargs)
            loss.backward()
            optimizer.step()
            return loss

        if compiled_step:
            step = bai.compile(step, [TensorSpec((None, 6), float32), TensorSpec((None,), int64)])
        return [step(x, y).item() for x, y in _batches(STEPS)]

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


class _Scored(nn.Module):
    """A classifier and its NLL loss in one call: (x, y) -> the loss."""

    def __init__(self, kwargs: dict) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 7), nn.Tanh(), nn.Linear(7, CLASSES))
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.criterion = _criterion(kwargs, np.float64)

    def forward(self, x, y):
        return self.criterion(self.log_softmax(self.body(x)), y)


def _torch_scored(ours: _Scored, kwargs: dict):
    body = torch.nn.Sequential(
        torch.nn.Linear(6, 7), torch.nn.Tanh(), torch.nn.Linear(7, CLASSES)
    ).double()
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.body.state_dict().items()}
    body.load_state_dict(state)
    weight = kwargs.get("weight")
    options = dict(kwargs, weight=None if weight is None else torch.from_numpy(weight))
    criterion = torch.nn.NLLLoss(**options)
    return lambda x, y: criterion(torch.log_softmax(body(x), dim=1), y)


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_frozen_nll_loss_matches_eager_and_pytorch_in_float64(variant, optimize):
    kwargs = VARIANTS[variant]
    bai.manual_seed(1)
    ours = _Scored(kwargs).to(dtype=float64).eval()
    theirs = _torch_scored(ours, kwargs)
    frozen = bai.freeze(
        ours, [TensorSpec((None, 6), float64), TensorSpec((None,), int64)], optimize=optimize
    )
    for size in (8, 8, 3):  # new targets each call, and another batch size
        (x, y), = _batches(1, size=size, dtype=np.float64)  # fmt: skip
        expected = theirs(torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())).detach().numpy()
        np.testing.assert_allclose(frozen(x, y).numpy(), expected, rtol=1e-12, atol=1e-14)
        with bai.no_grad():
            np.testing.assert_allclose(ours(x, y).numpy(), expected, rtol=1e-12, atol=1e-14)


def test_nll_loss_with_learnable_class_weights_matches_its_formula_in_pytorch():
    """PyTorch's nll_loss gives no gradient in the weights: the reference is the weighted mean
    written with PyTorch ops."""
    rng = np.random.default_rng(0)
    log_probs = np.log(rng.dirichlet(np.ones(CLASSES), size=6))
    target = np.array([0, 2, 1, 2, 4, 3])
    ours_x = bai.Tensor(log_probs, requires_grad=True)
    ours_w = bai.Tensor(WEIGHT, requires_grad=True)
    theirs_x = torch.tensor(log_probs, requires_grad=True)
    theirs_w = torch.tensor(WEIGHT, requires_grad=True)
    ours = F.nll_loss(ours_x, bai.tensor(target), weight=ours_w, ignore_index=2)
    counted = torch.from_numpy(target != 2)
    t = torch.from_numpy(target)
    picked_weight = theirs_w[t] * counted
    theirs = -(theirs_x[torch.arange(6), t] * picked_weight).sum() / picked_weight.sum()
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_w.grad.numpy(), theirs_w.grad.numpy(), rtol=1e-12)


def test_an_ignored_target_at_a_log_probability_of_zero_counts_nothing():
    log_probs = bai.tensor(np.array([[-np.inf, -0.5], [-0.2, -1.0]]))
    target = bai.tensor(np.array([1, 0]))
    for ignore_index, expected in ((1, 0.2), (0, 0.5)):
        loss = F.nll_loss(log_probs, target, ignore_index=ignore_index)
        theirs = torch.nn.functional.nll_loss(
            torch.from_numpy(log_probs.numpy()), torch.from_numpy(target.numpy()),
            ignore_index=ignore_index,
        )  # fmt: skip
        assert loss.item() == pytest.approx(expected) == theirs.item()
