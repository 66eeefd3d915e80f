"""``ChainedScheduler``: several schedulers on one optimizer, stepped together, their factors
multiplied, as PyTorch's."""

from __future__ import annotations

from collections.abc import Sequence

from .optimizer import OptimizerBase, OptimizerError
from .schedulers import LRScheduler, ReduceLROnPlateau, _SchedulerOfSchedulers


class ChainedScheduler(_SchedulerOfSchedulers):
    """Step every scheduler in ``schedulers`` on each ``step()``; the learning rate is the base
    rate times each scheduler's factor (its rate over its own base rate), so
    ``ChainedScheduler([ConstantLR(opt, 0.1, total_iters=2), ExponentialLR(opt, 0.9)])`` gives
    ``base_lr * 0.1 * 0.9 ** epoch`` for two epochs, then ``base_lr * 0.9 ** epoch``.

    PyTorch's schedulers each scale the rate the previous one left, which is this product for
    every factor schedule (``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``ConstantLR``,
    ``LinearLR``, ``PolynomialLR``, ``MultiplicativeLR``, ``CosineAnnealingLR`` with
    ``eta_min=0``).
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: OptimizerBase | None = None
    ) -> None:
        if len(schedulers) < 1:
            raise OptimizerError("ChainedScheduler needs at least one scheduler, got none")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        for position, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise OptimizerError(
                    f"ChainedScheduler cannot run ReduceLROnPlateau (scheduler {position}): it "
                    "steps on a metric, not on a schedule",
                    help="step the ReduceLROnPlateau yourself with the metric",
                )
            if not isinstance(scheduler, LRScheduler) or scheduler.optimizer is not optimizer:
                raise OptimizerError(
                    f"ChainedScheduler: scheduler {position} ({type(scheduler).__name__}) does "
                    "not belong to the chain's optimizer",
                    help="make every scheduler of the chain on the same optimizer",
                )
        self.optimizer = optimizer
        self.schedulers = list(schedulers)
        self.base_lrs = list(self.schedulers[0].base_lrs)  # the rates the chain started from
        self.last_epoch = self.schedulers[0].last_epoch
        self.steps_per_epoch, self.batch = None, 0
        self._set_lrs(self._chained())

    def _chained(self) -> list[float]:
        """The base rates times each scheduler's factor at its own position."""
        lrs = list(self.base_lrs)
        for scheduler in self.schedulers:
            for group, (own, base) in enumerate(
                zip(scheduler.lr_at(scheduler.position), scheduler.base_lrs)
            ):
                lrs[group] *= own / base if base != 0 else 0.0
        return lrs

    def lr_at(self, position):
        return self._chained()

    def step(self) -> None:
        """Step every scheduler once, in order, and set the product of their factors."""
        for scheduler in self.schedulers:
            scheduler.step()
        self.last_epoch += 1
        self._set_lrs(self._chained())

    def step_batch(self) -> None:
        """``step_batch()`` of every scheduler, in order, then the product of their factors."""
        for scheduler in self.schedulers:
            scheduler.step_batch()
        self.last_epoch = self.schedulers[0].last_epoch
        self._set_lrs(self._chained())


__all__ = ["ChainedScheduler"]
