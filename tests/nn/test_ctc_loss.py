"""ctc_loss and CTCLoss against PyTorch: every reduction, padded and concatenated targets,
mixed lengths, infinite losses, unbatched input, gradients, training steps and errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import BuildingAIError
from buildingai.nn.ctc import CTCLoss
from buildingai.nn.functional.ctc import ctc_loss

from ..helpers import torch

TF = torch.nn.functional

# sample 0: a repeated label (needs a blank between its copies); 1: an empty target; 2: an input
# of 3 frames too short for 3 labels with a repeat (needs 4): an infinite loss; 3: shorter input
TARGETS = np.array([[1, 1, 2, 3], [3, 0, 0, 0], [2, 2, 4, 0], [4, 3, 1, 2]])
TARGET_LENGTHS = np.array([3, 0, 3, 4])
INPUT_LENGTHS = np.array([8, 5, 3, 6])


def _log_probs(dtype=np.float64, steps=8, batch=4, classes=5, seed=0) -> np.ndarray:
    logits = np.random.default_rng(seed).standard_normal((steps, batch, classes))
    return (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)


def _both(log_probs, targets, input_lengths, target_lengths, **options):
    """(ours, PyTorch's): the loss and the gradient of its sum in log_probs."""
    ours_in = bai.Tensor(log_probs, requires_grad=True)
    ours = ctc_loss(ours_in, bai.Tensor(targets), input_lengths, target_lengths, **options)
    ours.sum().backward()
    theirs_in = torch.tensor(log_probs, requires_grad=True)
    lengths = [
        torch.as_tensor(v) if isinstance(v, np.ndarray) else v
        for v in (input_lengths, target_lengths)
    ]
    theirs = TF.ctc_loss(theirs_in, torch.as_tensor(targets), *lengths, **options)
    theirs.sum().backward()
    return (ours.numpy(), ours_in.grad.numpy()), (
        theirs.detach().numpy(),
        theirs_in.grad.numpy(),
    )


def _assert_match(ours, theirs, tolerance):
    for mine, reference in zip(ours, theirs):
        assert mine.shape == reference.shape
        np.testing.assert_allclose(mine, reference, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("form", ["padded", "concatenated"])
def test_losses_and_gradients_match_pytorch(reduction, zero_infinity, form):
    targets = TARGETS
    if form == "concatenated":
        targets = np.concatenate([t[:n] for t, n in zip(TARGETS, TARGET_LENGTHS)])
    ours, theirs = _both(
        _log_probs(),
        targets,
        INPUT_LENGTHS,
        TARGET_LENGTHS,
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    _assert_match(ours, theirs, 1e-10)  # nan gradients where the loss is infinite, as PyTorch


def test_too_short_input_is_infinite_and_zero_infinity_zeroes_it_and_its_gradient():
    (losses, _), _ = _both(_log_probs(), TARGETS, INPUT_LENGTHS, TARGET_LENGTHS, reduction="none")
    assert np.isinf(losses[2]) and np.isfinite(losses[[0, 1, 3]]).all()
    (losses, grad), _ = _both(
        _log_probs(), TARGETS, INPUT_LENGTHS, TARGET_LENGTHS, reduction="none", zero_infinity=True
    )
    assert losses[2] == 0 and not grad[:, 2].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_and_list_lengths(dtype):
    ours, theirs = _both(
        _log_probs(dtype),
        TARGETS,
        tuple(int(n) for n in INPUT_LENGTHS),
        [int(n) for n in TARGET_LENGTHS],
        zero_infinity=True,
    )
    assert ours[0].dtype == dtype and ours[1].dtype == dtype
    _assert_match(ours, theirs, 1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_unbatched_input(reduction):
    log_probs = _log_probs()[:, 0]
    ours, theirs = _both(log_probs, TARGETS[0, :3], np.array(8), np.array(3), reduction=reduction)
    _assert_match(ours, theirs, 1e-10)


def test_other_blank_index():
    targets = np.where(TARGETS == 4, 0, TARGETS)  # blank 4: class 0 becomes a label
    ours, theirs = _both(
        _log_probs(), targets, INPUT_LENGTHS, TARGET_LENGTHS, blank=4, zero_infinity=True
    )
    _assert_match(ours, theirs, 1e-10)


def test_gradient_through_log_softmax_matches_finite_differences():
    # the gradient in log_probs is PyTorch's, which folds in log_softmax's part: only through
    # log_softmax is it the derivative
    logits = bai.Tensor(np.random.default_rng(1).standard_normal((4, 2, 3)), requires_grad=True)

    def loss(x):
        return ctc_loss(x.log_softmax(2), bai.Tensor(np.array([[1, 1], [2, 0]])), (4, 3), (2, 1))

    bai.debug.gradcheck(loss, [logits])


def test_three_sgd_steps_match_pytorch():
    steps, batch, features, classes = 10, 3, 6, 5
    rng = np.random.default_rng(2)
    x = rng.standard_normal((steps, batch, features))
    weight, bias = rng.standard_normal((classes, features)) * 0.3, np.zeros(classes)
    targets, input_lengths, target_lengths = TARGETS[:3], (10, 9, 7), (3, 0, 3)
    ours_layer = bai.nn.Linear(features, classes).double()
    theirs_layer = torch.nn.Linear(features, classes).double()
    with torch.no_grad():
        theirs_layer.weight.copy_(torch.tensor(weight))
        theirs_layer.bias.copy_(torch.tensor(bias))
    ours_layer.weight.array[...] = weight
    ours_layer.bias.array[...] = bias
    ours_loss_fn, theirs_loss_fn = CTCLoss(), torch.nn.CTCLoss()
    ours_opt = bai.optim.SGD(ours_layer.parameters(), lr=0.1)
    theirs_opt = torch.optim.SGD(theirs_layer.parameters(), lr=0.1)
    for _ in range(3):
        ours = ours_loss_fn(
            ours_layer(bai.Tensor(x)).log_softmax(2),
            bai.Tensor(targets),
            input_lengths,
            target_lengths,
        )
        theirs = theirs_loss_fn(
            theirs_layer(torch.tensor(x)).log_softmax(2),
            torch.tensor(targets),
            input_lengths,
            target_lengths,
        )
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-10)
        for opt, value in ((ours_opt, ours), (theirs_opt, theirs)):
            opt.zero_grad()
            value.backward()
            opt.step()


def test_no_second_derivative():
    log_probs = bai.Tensor(_log_probs(), requires_grad=True)
    loss = ctc_loss(
        log_probs, bai.Tensor(TARGETS), INPUT_LENGTHS, TARGET_LENGTHS, zero_infinity=True
    )
    (grad,) = bai.grad(loss, [log_probs], create_graph=True)
    with pytest.raises(BuildingAIError, match="no second derivative"):
        grad.sum().backward()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"input_lengths": np.array([9, 5, 3, 6])}, "at most 8"),
        ({"input_lengths": np.array([-1, 5, 3, 6])}, "at least 0"),
        ({"target_lengths": np.array([5, 0, 3, 4])}, "size at least 5"),
        ({"target_lengths": np.array([-1, 0, 3, 4])}, "at least 0"),
        ({"blank": 5}, "blank must be in label range"),
        ({"blank": -1}, "blank must be in label range"),
        ({"input_lengths": np.array([8, 5, 3])}, "input_lengths must be of size batch_size"),
        ({"target_lengths": np.array([3, 0, 3])}, "target_lengths must be of size batch_size"),
        ({"targets": TARGETS[:3]}, "targets"),
        ({"targets": np.arange(5) % 4 + 1}, "size 10 at dimension 0"),
        ({"input_lengths": np.array([8.0, 5, 3, 6])}, "must be integral"),
        ({"reduction": "average"}, "not valid"),
        ({"log_probs": _log_probs()[0, 0]}, "log_probs"),
    ],
)
def test_pytorch_errors(change, message):
    call = {
        "log_probs": _log_probs(),
        "targets": TARGETS,
        "input_lengths": INPUT_LENGTHS,
        "target_lengths": TARGET_LENGTHS,
    } | change
    with pytest.raises(Exception):  # noqa: B017 - PyTorch raises RuntimeError or ValueError
        TF.ctc_loss(*(torch.as_tensor(call.pop(k)) for k in list(call)[:4]), **call)
    call = {
        "log_probs": _log_probs(),
        "targets": TARGETS,
        "input_lengths": INPUT_LENGTHS,
        "target_lengths": TARGET_LENGTHS,
    } | change
    tensors = [
        bai.Tensor(call.pop(k)) for k in ("log_probs", "targets", "input_lengths", "target_lengths")
    ]
    with pytest.raises(BuildingAIError, match=message):
        ctc_loss(*tensors, **call)


def test_label_out_of_range_is_refused():
    # PyTorch reads past the classes silently; the record refuses (ctc_loss checks values)
    targets = np.where(TARGETS == 4, 7, TARGETS)
    with pytest.raises(BuildingAIError, match="target label 7 is out of range"):
        ctc_loss(bai.Tensor(_log_probs()), bai.Tensor(targets), INPUT_LENGTHS, TARGET_LENGTHS)
