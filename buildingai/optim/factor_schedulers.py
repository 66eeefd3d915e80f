"""Schedulers that scale the base learning rate by a factor: ``ConstantLR`` (a reduced rate
for the first steps), ``PolynomialLR`` (decay to zero along a power curve) and
``MultiplicativeLR`` (a running product of a function's factors), as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .optimizer import OptimizerBase, OptimizerError
from .schedulers import LRScheduler


class ConstantLR(LRScheduler):
    """``lr = base_lr * factor`` for the first ``total_iters`` units, then ``base_lr``."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if not 0 <= factor <= 1:
            raise OptimizerError(
                f"ConstantLR: factor must be in [0, 1], got {factor}",
                help="the learning rate is multiplied by factor during the first total_iters",
            )
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        factor = self.factor if position < self.total_iters else 1.0
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = base_lr * (1 - min(position, total_iters) / total_iters) ** power``: down to
    zero in ``total_iters`` units, then zero."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if total_iters <= 0:
            raise OptimizerError(f"PolynomialLR: total_iters must be > 0, got {total_iters}")
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        remaining = 1.0 - min(self.total_iters, position) / self.total_iters
        return [base * remaining**self.power for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """``lr = base_lr * lr_lambda(1) * lr_lambda(2) * ... * lr_lambda(epoch)``: each step
    multiplies the rate by the function's factor for that epoch (one function, or one per
    parameter group). A fractional position (``step_batch`` with ``steps_per_epoch``) keeps the
    rate of the last whole epoch.

    The running products are kept (and saved by ``state_dict``), so each factor is asked for
    once, in order, as PyTorch does; the functions themselves are not saved.
    """

    starts_from_current_rate = True

    _not_saved = ("lr_lambdas",)

    def __init__(
        self,
        optimizer: OptimizerBase,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = self._per_group("lr_lambda", lr_lambda)
        for function in self.lr_lambdas:
            if not callable(function):
                raise OptimizerError(
                    f"MultiplicativeLR: lr_lambda must be a function of the epoch, got "
                    f"{type(function).__name__}",
                    help="e.g. MultiplicativeLR(optimizer, lambda epoch: 0.95)",
                )
        self.products = [[1.0] * len(self.lr_lambdas)]  # products[e]: one per group at epoch e
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        epoch = math.floor(position)
        while len(self.products) <= epoch:
            done = len(self.products)
            self.products.append(
                [
                    product * function(done)
                    for product, function in zip(self.products[-1], self.lr_lambdas)
                ]
            )
        return [base * product for base, product in zip(self.base_lrs, self.products[epoch])]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.products = [list(row) for row in self.products]


__all__ = ["ConstantLR", "MultiplicativeLR", "PolynomialLR"]
