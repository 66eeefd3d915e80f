"""``CyclicLR``: the learning rate goes back and forth between ``base_lr`` and ``max_lr``
(Smith, "Cyclical Learning Rates for Training Neural Networks"), as PyTorch's; momentum (or
Adam's beta1) moves the other way. Positions count batches."""

from __future__ import annotations

import math
from collections.abc import Callable

from .optimizer import OptimizerBase, OptimizerError
from .schedulers import LRScheduler

_MODES = ("triangular", "triangular2", "exp_range")


class CyclicLR(LRScheduler):
    """Each cycle rises from ``base_lr`` to ``max_lr`` in ``step_size_up`` steps and falls back
    in ``step_size_down`` (default: the same). The height of each cycle is scaled by
    ``mode``: ``"triangular"`` keeps it, ``"triangular2"`` halves it every cycle,
    ``"exp_range"`` multiplies it by ``gamma ** step``; or by ``scale_fn(cycle)`` (or
    ``scale_fn(step)`` with ``scale_mode="iterations"``). Call ``step()`` after every batch.

    With ``cycle_momentum`` (the default) the optimizer's momentum (or beta1) goes from
    ``max_momentum`` at ``base_lr`` to ``base_momentum`` at ``max_lr``.
    """

    _not_saved = ("scale_fn",)

    def __init__(
        self,
        optimizer: OptimizerBase,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if scale_fn is None and mode not in _MODES:
            raise OptimizerError(
                f"CyclicLR: mode must be one of {', '.join(_MODES)}, got {mode!r}",
                help="or pass scale_fn=, a function of the cycle (or step) number",
            )
        if scale_mode not in ("cycle", "iterations"):
            raise OptimizerError(
                f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}"
            )
        step_size_up = float(step_size_up)
        step_size_down = step_size_up if step_size_down is None else float(step_size_down)
        if step_size_up <= 0 or step_size_down < 0:
            raise OptimizerError(
                f"CyclicLR: step_size_up must be > 0 and step_size_down >= 0, got "
                f"{step_size_up} and {step_size_down}"
            )
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        self.max_lrs = self._per_group("max_lr", max_lr)
        self.mode, self.gamma, self.scale_fn = mode, gamma, scale_fn
        # the built-in modes fix their scale mode, as PyTorch's do
        self.scale_mode = {"triangular": "cycle", "triangular2": "cycle"}.get(mode, "iterations")
        if scale_fn is not None:
            self.scale_mode = scale_mode
        if last_epoch == -1:
            for group, lower in zip(optimizer.param_groups, self._per_group("base_lr", base_lr)):
                group["lr"] = group["initial_lr"] = lower
        self.cycle_momentum = cycle_momentum
        self.use_beta1 = False
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise OptimizerError(
                    f"CyclicLR: cycle_momentum=True needs an optimizer with momentum or betas; "
                    f"{type(optimizer).__name__} has neither",
                    help="pass cycle_momentum=False",
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = self._per_group("base_momentum", base_momentum)
            self.max_momentums = self._per_group("max_momentum", max_momentum)
        super().__init__(optimizer, last_epoch)

    def _scale(self, cycle: int, position: float) -> float:
        argument = cycle if self.scale_mode == "cycle" else position
        if self.scale_fn is not None:
            return self.scale_fn(argument)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (argument - 1))
        return self.gamma**argument

    def _height(self, position: float) -> float:
        """How far up the current cycle, scaled: 0 at ``base_lr``, up to 1 at ``max_lr``."""
        cycle = math.floor(1 + position / self.total_size)
        x = 1.0 + position / self.total_size - cycle
        if x <= self.step_ratio:
            rise = x / self.step_ratio
        else:
            rise = (x - 1) / (self.step_ratio - 1)
        return rise * self._scale(cycle, position)

    def lr_at(self, position):
        height = self._height(position)
        return [low + (high - low) * height for low, high in zip(self.base_lrs, self.max_lrs)]

    def _set_lrs(self, lrs: list[float]) -> None:
        super()._set_lrs(lrs)
        if not self.cycle_momentum:
            return
        height = self._height(self.position)
        for group, low, high in zip(
            self.optimizer.param_groups, self.base_momentums, self.max_momentums
        ):
            momentum = high - (high - low) * height
            if self.use_beta1:
                group["betas"] = (momentum, *group["betas"][1:])
            else:
                group["momentum"] = momentum


__all__ = ["CyclicLR"]
