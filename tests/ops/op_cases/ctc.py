"""Cases of the CTC records: ``ctc_loss`` against PyTorch, and its gradient op."""

from __future__ import annotations

import numpy as np

from buildingai.nn.functional.ctc import ctc_loss

from .base import TF, Draw, Sample, backward_of, case

NO_CTC_ONNX = (
    "ONNX has no CTC loss operator, and the op serves training graphs, which are not exported"
)


def _ctc_inputs(d: Draw, grad: bool = False):
    """log_probs (T, n, C), targets padded (n, S) or concatenated, and the lengths (n,), with
    target lengths from 0 to S and input lengths from S to T."""
    steps, classes, width = d.size(4, 7), d.size(3, 5), d.size(1, 3)
    logits = d.rng.standard_normal((steps, d.n, classes))
    log_probs = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    log_probs = d.tensor(log_probs.astype(d.dtype), {1: "n"}, requires_grad=grad)
    target_lengths = d.rng.integers(0, width + 1, size=d.n)
    input_lengths = d.rng.integers(width, steps + 1, size=d.n)
    labels = d.rng.integers(1, classes, size=(d.n, width))
    if d.variant(("padded", "concatenated")) == "padded":
        targets = d.tensor(labels, {0: "n"})
    else:
        pieces = [labels[n, : target_lengths[n]] for n in range(d.n)]
        targets = d.tensor(np.concatenate(pieces).astype(np.int64), {})
    return (
        log_probs,
        targets,
        d.tensor(input_lengths, {0: "n"}),
        d.tensor(target_lengths, {0: "n"}),
    )


def _ctc_loss(d: Draw) -> Sample:
    log_probs, targets, input_lengths, target_lengths = _ctc_inputs(d)
    reduction = d.choice(("mean", "sum", "none"))
    zero_infinity = d.choice((False, True))
    return d.capture(
        "ctc_loss",
        lambda: ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            reduction=reduction,
            zero_infinity=zero_infinity,
        ),
    )


def _torch_ctc_loss(
    log_probs, targets, input_lengths, target_lengths, *, blank, reduction, zero_infinity
):
    return TF.ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank=blank,
        reduction=reduction,
        zero_infinity=zero_infinity,
    )


case(
    "ctc_loss",
    _ctc_loss,
    dtypes=(np.float32, np.float64),  # PyTorch's CPU ctc_loss has no float16 or bfloat16
    torch=_torch_ctc_loss,
    grad_inputs=(0,),  # targets and lengths are integers
    onnx=NO_CTC_ONNX,
    covered_by=("tests/nn/test_ctc_loss.py",),
)


def _ctc_loss_grad(d: Draw) -> Sample:
    log_probs, targets, input_lengths, target_lengths = _ctc_inputs(d, grad=True)
    reduction = d.choice(("mean", "none"))
    return d.capture(
        "ctc_loss_grad",
        lambda: backward_of(
            lambda t: ctc_loss(t, targets, input_lengths, target_lengths, reduction=reduction),
            log_probs,
        ),
        symbols={(1, 1): "n", (2, 1): "n", (3, 0): "n"}
        | ({(0, 0): "n"} if reduction == "none" else {}),
    )


case(
    "ctc_loss_grad",
    _ctc_loss_grad,
    dtypes=(np.float32, np.float64),
    no_grad="ctc_loss has no second derivative (PyTorch's neither): the record's backward "
    "raises; ctc_loss's case checks this op's values against PyTorch's gradient",
    onnx=NO_CTC_ONNX,
)
