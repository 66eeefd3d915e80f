"""Metrics: running averages of loss, accuracy and top-k accuracy over many batches.

A metric is a small accumulator: ``update(outputs, targets)`` per batch, ``compute()`` at the
end, ``reset()`` to start again. It works on host NumPy arrays (metrics need no gradients), so
it never adds nodes to the graph. ``accuracy`` and ``top_k_accuracy`` are the one-batch forms.
"""

from __future__ import annotations

import re

import numpy as np

from ..autograd.tensor import Tensor
from ..errors import ShapeError
from .config import ConfigError


def _host(value) -> np.ndarray:
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def correct_counts(outputs, targets, top_k: int = 1) -> tuple[int, int]:
    """How many rows of ``outputs`` rank their target among the ``top_k`` highest scores, and
    how many rows there are.

    outputs: (N, C) class scores, or (N, C, d1, ...) with targets (N, d1, ...) (per-position
    classes, as in ``cross_entropy``); binary: (N,) or (N, 1) logits with 0/1 targets, a
    positive logit predicting 1. targets: int class indices.
    """
    scores, labels = _host(outputs), _host(targets)
    if scores.ndim == labels.ndim or (scores.ndim == labels.ndim + 1 and scores.shape[1] == 1):
        if top_k != 1:
            raise ShapeError(f"[accuracy] top_k={top_k} needs class scores, got binary logits")
        predicted = scores.reshape(labels.shape) > 0
        return int(np.count_nonzero(predicted == (labels > 0))), labels.size
    if scores.ndim != labels.ndim + 1 or scores.shape[:1] + scores.shape[2:] != labels.shape:
        raise ShapeError(
            f"[accuracy] outputs {scores.shape} do not fit targets {labels.shape}",
            help="outputs are (N, C) or (N, C, d1, ...) class scores for targets (N,) or "
            "(N, d1, ...) class indices",
        )
    classes = scores.shape[1]
    if not 1 <= top_k <= classes:
        raise ShapeError(
            f"[accuracy] top_k={top_k} must be in [1, {classes}] for {classes} classes"
        )
    scores = np.moveaxis(scores, 1, -1).reshape(-1, classes)  # (rows, C)
    labels = labels.reshape(-1)
    if top_k == 1:
        hits = scores.argmax(axis=1) == labels
    else:
        # The target is in the top k when fewer than k classes score strictly higher.
        target_scores = np.take_along_axis(scores, labels[:, None], axis=1)
        hits = (scores > target_scores).sum(axis=1) < top_k
    return int(np.count_nonzero(hits)), labels.size


def accuracy(outputs, targets) -> float:
    """Fraction of rows whose highest score is the target (see ``correct_counts``).

    outputs (N, C) or (N, C, d1, ...) scores, targets (N,) or (N, d1, ...) class indices
    (binary: (N,) or (N, 1) logits with 0/1 targets) -> a Python float.
    """
    correct, total = correct_counts(outputs, targets)
    return correct / total if total else float("nan")


def top_k_accuracy(outputs, targets, k: int = 5) -> float:
    """Fraction of rows whose target is among the ``k`` highest scores.

    outputs (N, C) or (N, C, d1, ...) scores, targets (N,) or (N, d1, ...) class indices ->
    a Python float (see ``correct_counts``).
    """
    correct, total = correct_counts(outputs, targets, top_k=k)
    return correct / total if total else float("nan")


class Metric:
    """Base class: accumulate with ``update``, read with ``compute``, clear with ``reset``."""

    def reset(self) -> None:
        raise NotImplementedError

    def update(self, outputs, targets) -> None:
        raise NotImplementedError

    def compute(self) -> float:
        raise NotImplementedError


class Mean(Metric):
    """A running weighted mean: ``update(value, weight=1)``; used for the loss, weighted by
    the batch size so the result is the mean over items, not over batches.

    ``value`` is one number: a Python number or a 0-d tensor/array (shape ``()``, e.g. a
    loss); ``compute()`` returns a Python float.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total, self.weight = 0.0, 0.0

    def update(self, value, weight: float = 1.0) -> None:  # type: ignore[override]
        self.total += float(_host(value)) * weight
        self.weight += weight

    def compute(self) -> float:
        return self.total / self.weight if self.weight else float("nan")


class Accuracy(Metric):
    """Fraction of items whose target is among the ``top_k`` highest scores, over all updates.

    ``update(outputs, targets)``: outputs (N, C) or (N, C, d1, ...) scores with targets (N,)
    or (N, d1, ...) class indices (binary: (N,) or (N, 1) logits with 0/1 targets), as
    ``correct_counts``; each position counts as one item. ``compute()`` returns a float.
    """

    def __init__(self, top_k: int = 1) -> None:
        self.top_k = top_k
        self.reset()

    def reset(self) -> None:
        self.correct, self.count = 0, 0

    def update(self, outputs, targets) -> None:
        correct, total = correct_counts(outputs, targets, self.top_k)
        self.correct += correct
        self.count += total

    def compute(self) -> float:
        return self.correct / self.count if self.count else float("nan")


_TOP_K = re.compile(r"^top(\d+)_accuracy$")


def metric_from_name(name: str) -> Metric:
    """``"accuracy"`` -> ``Accuracy()``; ``"top5_accuracy"`` -> ``Accuracy(top_k=5)``."""
    if name == "accuracy":
        return Accuracy()
    match = _TOP_K.match(name)
    if match:
        return Accuracy(top_k=int(match.group(1)))
    raise ConfigError(
        f"unknown metric {name!r}",
        help="use 'accuracy' or 'top<k>_accuracy' (e.g. top5_accuracy), or pass Metric "
        "objects to the Trainer",
    )
