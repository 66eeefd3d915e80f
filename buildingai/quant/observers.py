"""Observers: they watch the values a tensor takes during calibration (or QAT) and choose its
uint8 grid (``qparams()`` -> ``(scale, zero_point)``).

- ``MinMaxObserver``: the smallest and largest value ever seen.
- ``MovingAverageMinMaxObserver``: an exponential moving average of each batch's min and max
  (PyTorch's default for QAT), less swayed by one extreme batch.
- ``PercentileObserver``: a histogram of everything seen (re-binned as the range grows, like
  PyTorch's HistogramObserver); the range is cut at the ``percentile`` and
  ``100 - percentile`` points, so rare outliers do not stretch the grid.
"""

from __future__ import annotations

import numpy as np

from .qparams import ACTIVATION_RANGE, affine_qparams


class Observer:
    """Base class: ``observe(array)`` per batch, then ``qparams()``. ``array``: any shape, reduced
    over all its elements to the scalar range [low, high]; ``qparams()`` gives scalars."""

    def __init__(self, qmin: int = ACTIVATION_RANGE[0], qmax: int = ACTIVATION_RANGE[1]) -> None:
        self.qmin, self.qmax = qmin, qmax
        self.low: float | None = None
        self.high: float | None = None

    def observe(self, values) -> None:
        raise NotImplementedError

    def range(self) -> tuple[float, float]:
        """The [low, high] the grid must cover."""
        if self.low is None:
            raise RuntimeError(
                f"{type(self).__name__} has seen no data: run calibration batches through the "
                "prepared model before quant.convert(model)"
            )
        return self.low, self.high

    def qparams(self) -> tuple[np.float32, int]:
        return affine_qparams(*self.range(), self.qmin, self.qmax)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(low={self.low}, high={self.high})"


class MinMaxObserver(Observer):
    """The running minimum and maximum over all elements of each batch (any shape)."""

    def observe(self, values) -> None:
        values = np.asarray(values)
        low, high = float(values.min()), float(values.max())
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)


class MovingAverageMinMaxObserver(Observer):
    """``low += c * (batch_min - low)`` (likewise ``high``), starting at the first batch's; the
    batch min and max are taken over all its elements (any shape)."""

    def __init__(self, averaging_constant: float = 0.01, **kwargs) -> None:
        super().__init__(**kwargs)
        self.averaging_constant = averaging_constant

    def observe(self, values) -> None:
        values = np.asarray(values)
        low, high = float(values.min()), float(values.max())
        if self.low is None:
            self.low, self.high = low, high
            return
        c = self.averaging_constant
        self.low += c * (low - self.low)
        self.high += c * (high - self.high)


class PercentileObserver(Observer):
    """The range between the ``100 - percentile`` and ``percentile`` points of a histogram of
    every value seen (``bins`` bins over the running min..max). Each batch (any shape) is
    flattened to ``(numel,)`` before it is counted; ``counts`` is ``(bins,)``."""

    def __init__(self, percentile: float = 99.99, bins: int = 2048, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 50.0 < percentile <= 100.0:
            raise ValueError(
                f"[PercentileObserver] percentile must be in (50, 100], got {percentile}"
            )
        self.percentile = percentile
        self.bins = bins
        self.counts = np.zeros(bins)
        self.edges: np.ndarray | None = None

    def observe(self, values) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        low, high = float(values.min()), float(values.max())
        if self.edges is None:
            self.edges = np.linspace(low, high if high > low else low + 1e-8, self.bins + 1)
        elif low < self.edges[0] or high > self.edges[-1]:
            # widen the range; the old counts move to the new bins holding their centres
            edges = np.linspace(min(low, self.edges[0]), max(high, self.edges[-1]), self.bins + 1)
            centres = (self.edges[:-1] + self.edges[1:]) / 2
            self.counts = np.histogram(centres, bins=edges, weights=self.counts)[0]
            self.edges = edges
        self.counts += np.histogram(values, bins=self.edges)[0]

    def range(self) -> tuple[float, float]:
        if self.edges is None:
            return super().range()
        cumulative = np.cumsum(self.counts) / self.counts.sum()
        tail = (100.0 - self.percentile) / 100.0
        first = int(np.searchsorted(cumulative, tail, side="left"))
        last = int(np.searchsorted(cumulative, 1.0 - tail, side="left"))
        return float(self.edges[first]), float(self.edges[min(last + 1, self.bins)])
