"""Learning-rate schedulers: each sets ``group["lr"]`` of an optimizer's parameter groups.

Every schedule here is a closed-form function of its position, so schedules compose (warm-up
then cosine), resume from a checkpoint exactly, and can be read off without stepping.

Counting. ``step()`` advances the schedule by one unit (an epoch, for schedules whose lengths
are given in epochs). ``step_batch()`` is for per-batch stepping:

- with ``steps_per_epoch=N`` given to the scheduler, each call advances ``1/N`` of an epoch, so an
  epoch-based schedule (``StepLR(step_size=30)``, ``CosineAnnealingLR(T_max=100)``) moves smoothly
  inside each epoch and reaches the same values at epoch boundaries;
- without it, each call advances one unit, i.e. the schedule's lengths count batches.

Call one of them in a training loop, not both. ``OneCycleLR`` is defined in batches
(``total_steps``): ``step()`` and ``step_batch()`` both advance it by one batch.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from .optimizer import OptimizerBase, OptimizerError


def _require_group_lrs(scheduler: str, optimizer: OptimizerBase) -> None:
    """Schedulers set ``group["lr"]``: refuse an optimizer whose groups have none (one written
    with its own ``self.lr``) by name, rather than with a bare KeyError."""
    for position, group in enumerate(optimizer.param_groups):
        if "lr" not in group:
            raise OptimizerError(
                f"{scheduler}: parameter group {position} of {type(optimizer).__name__} has no "
                "'lr', so there is no learning rate to schedule",
                help="read the rate from self.param_groups[i]['lr'] in step() and pass lr to "
                "the base class (super().__init__(params, {'lr': lr}))",
            )


class LRScheduler:
    """Base class: subclasses define ``lr_at(position)``, the learning rate of every parameter
    group at a (possibly fractional) position of the schedule.

    Attributes:
        last_epoch: whole units stepped so far (0 right after construction, as in PyTorch).
        base_lrs: each group's learning rate when the schedule started (``group["initial_lr"]``).
    """

    def __init__(
        self,
        optimizer: OptimizerBase,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if not isinstance(optimizer, OptimizerBase):
            raise OptimizerError(
                f"{type(self).__name__} needs an optimizer, got {type(optimizer).__name__}"
            )
        if steps_per_epoch is not None and (
            not isinstance(steps_per_epoch, int) or steps_per_epoch < 1
        ):
            raise OptimizerError(
                f"{type(self).__name__}: steps_per_epoch must be a positive int, got "
                f"{steps_per_epoch!r}"
            )
        _require_group_lrs(type(self).__name__, optimizer)
        self.optimizer = optimizer
        self.steps_per_epoch = steps_per_epoch
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for position, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise OptimizerError(
                        f"{type(self).__name__}: resuming at last_epoch={last_epoch} needs "
                        f"'initial_lr' in parameter group {position}",
                        help="load the scheduler with load_state_dict(), or start at last_epoch=-1",
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        if last_epoch == -1 and self.starts_from_current_rate:
            self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.batch = 0  # batches into the current epoch (step_batch with steps_per_epoch)
        self.step()

    # ----- what subclasses provide ------------------------------------------------------------
    # True for the schedules PyTorch computes from the rate the previous step left (its
    # "chainable" form): made on an optimizer whose rate another scheduler has already moved,
    # they start from the rates they find there, as PyTorch's do; the others start from
    # ``initial_lr``. ``SequentialLR`` starts each of its schedulers from ``initial_lr``.
    starts_from_current_rate: bool = False

    def lr_at(self, position: float) -> list[float]:
        """The learning rate of each parameter group at ``position`` (units stepped)."""
        raise NotImplementedError

    # ----- stepping ---------------------------------------------------------------------------
    @property
    def position(self) -> float:
        """Where the schedule is: whole units plus the fraction of the current epoch."""
        if self.batch:
            return self.last_epoch + self.batch / self.steps_per_epoch
        return self.last_epoch

    def step(self) -> None:
        """Advance one unit (an epoch) and set the learning rates."""
        self.last_epoch += 1
        self.batch = 0
        self._set_lrs(self.lr_at(self.last_epoch))

    def step_batch(self) -> None:
        """Advance one batch: ``1/steps_per_epoch`` of an epoch, or one unit when the scheduler
        was made without ``steps_per_epoch``."""
        if self.steps_per_epoch is None:
            self.step()
            return
        self.batch += 1
        if self.batch == self.steps_per_epoch:
            self.step()
            return
        self._set_lrs(self.lr_at(self.position))

    def _set_lrs(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the latest step set, one per parameter group."""
        return list(self._last_lr)

    # ----- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The scheduler's numbers (positions, base rates, settings) as plain JSON-able data;
        functions (LambdaLR's lambdas) and the optimizer are not included."""
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in vars(self).items()
            if name != "optimizer" and not callable(value) and name not in self._not_saved
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned. The optimizer's learning rates are left alone:
        they come back with the optimizer's own state dict."""
        for name, value in state_dict.items():
            if name in self._not_saved:
                continue
            setattr(self, name, value)

    _not_saved: tuple[str, ...] = ()

    def _per_group(self, name: str, value) -> list:
        """Broadcast one value to every parameter group, or check a list has one per group."""
        groups = len(self.optimizer.param_groups)
        if isinstance(value, (list, tuple)):
            if len(value) != groups:
                raise OptimizerError(
                    f"{type(self).__name__}: expected {groups} values of {name} (one per "
                    f"parameter group), got {len(value)}"
                )
            return list(value)
        return [value] * groups


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(position)``; one function, or one per parameter group."""

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
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        return [base * fn(position) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` units."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        step_size: int,
        gamma: float = 0.1,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if step_size < 1:
            raise OptimizerError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        return [base * self.gamma ** (position // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone (a repeated milestone counts
    as many times as it appears)."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        passed = bisect_right(self.milestones, position)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = base_lr * gamma ** position``."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        gamma: float,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        return [base * self.gamma**position for base in self.base_lrs]


def _cosine(start: float, end: float, fraction: float) -> float:
    """From ``start`` (fraction 0) to ``end`` (fraction 1) along half a cosine."""
    return end + (start - end) * (1.0 + math.cos(math.pi * fraction)) / 2.0


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``: down to
    ``eta_min`` in ``T_max`` units (and, like PyTorch, back up again after that)."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        T_max: int,  # noqa: N803 - PyTorch's name
        eta_min: float = 0.0,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if T_max <= 0:
            raise OptimizerError(f"CosineAnnealingLR: T_max must be > 0, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        return [_cosine(base, self.eta_min, position / self.T_max) for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every cycle (SGDR): the first cycle lasts ``T_0`` units, each
    next one ``T_mult`` times longer."""

    def __init__(
        self,
        optimizer: OptimizerBase,
        T_0: int,  # noqa: N803 - PyTorch's names
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise OptimizerError(
                f"CosineAnnealingWarmRestarts: T_0 must be a positive int, got {T_0}"
            )
        if not isinstance(T_mult, int) or T_mult < 1:
            raise OptimizerError(
                f"CosineAnnealingWarmRestarts: T_mult must be an int >= 1, got {T_mult}"
            )
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def cycle(self, position: float) -> tuple[float, int]:
        """``(T_cur, T_i)``: how far into the current cycle, and the cycle's length."""
        if self.T_mult == 1:
            return position % self.T_0, self.T_0
        start, length = 0, self.T_0  # counted with integers, so no log() rounding at restarts
        while position >= start + length:
            start, length = start + length, length * self.T_mult
        return position - start, length

    def lr_at(self, position):
        t_cur, t_i = self.cycle(position)
        return [_cosine(base, self.eta_min, t_cur / t_i) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor moving linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` units, then holding."""

    starts_from_current_rate = True

    def __init__(
        self,
        optimizer: OptimizerBase,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if not 0 < start_factor <= 1:
            raise OptimizerError(
                f"LinearLR: start_factor must be in (0, 1], got {start_factor}",
                help="a factor of 0 would make the first steps do nothing; use e.g. 1e-3",
            )
        if not 0 <= end_factor <= 1:
            raise OptimizerError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def factor(self, position: float) -> float:
        if self.total_iters <= 0:
            return self.end_factor
        done = min(position, self.total_iters) / self.total_iters
        return self.start_factor + (self.end_factor - self.start_factor) * done

    def lr_at(self, position):
        factor = self.factor(position)
        return [base * factor for base in self.base_lrs]


class _SchedulerOfSchedulers(LRScheduler):
    """A schedule made of the schedulers in ``self.schedulers``: its state dict holds theirs,
    under ``"schedulers"``, so each resumes where it was."""

    _not_saved = ("schedulers",)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["schedulers"] = [scheduler.state_dict() for scheduler in self.schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for scheduler, saved in zip(self.schedulers, state_dict.get("schedulers", [])):
            scheduler.load_state_dict(saved)


class SequentialLR(_SchedulerOfSchedulers):
    """Run ``schedulers`` one after another, switching at ``milestones``; each one starts from
    its own position 0 when its turn comes (as ``torch.optim.lr_scheduler.SequentialLR``)."""

    def __init__(
        self,
        optimizer: OptimizerBase,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if len(milestones) != len(schedulers) - 1:
            raise OptimizerError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} "
                f"milestones, got {len(milestones)}"
            )
        for position, scheduler in enumerate(schedulers):
            if scheduler.optimizer is not optimizer:
                raise OptimizerError(
                    f"SequentialLR: scheduler {position} belongs to a different optimizer"
                )
            if isinstance(scheduler, ReduceLROnPlateau):
                raise OptimizerError("SequentialLR cannot run ReduceLROnPlateau (no schedule)")
        self.schedulers = list(schedulers)
        self.milestones = list(milestones)
        for scheduler in self.schedulers:  # each runs from the start rates, not from the last's
            if scheduler.starts_from_current_rate:
                scheduler.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        super().__init__(optimizer, last_epoch, steps_per_epoch=steps_per_epoch)

    def lr_at(self, position):
        index = bisect_right(self.milestones, position)
        offset = self.milestones[index - 1] if index > 0 else 0
        return self.schedulers[index].lr_at(position - offset)


class WarmupLR(SequentialLR):
    """Linear warm-up from ``start_factor * lr`` to ``lr`` over ``warmup_steps`` units, then
    ``after`` (another scheduler on the same optimizer, starting at its position 0), or a
    constant rate if ``after`` is None. The same as
    ``SequentialLR([LinearLR(opt, start_factor, 1.0, warmup_steps), after], [warmup_steps])``.

        cosine = CosineAnnealingLR(optimizer, T_max=90)
        schedule = WarmupLR(optimizer, warmup_steps=10, after=cosine)
    """

    def __init__(
        self,
        optimizer: OptimizerBase,
        warmup_steps: int,
        after: LRScheduler | None = None,
        start_factor: float = 1.0 / 3,
        last_epoch: int = -1,
        *,
        steps_per_epoch: int | None = None,
    ) -> None:
        if not isinstance(warmup_steps, int) or warmup_steps < 1:
            raise OptimizerError(f"WarmupLR: warmup_steps must be an int >= 1, got {warmup_steps}")
        warmup = LinearLR(optimizer, start_factor, 1.0, warmup_steps)
        after = after if after is not None else LambdaLR(optimizer, lambda _: 1.0)
        super().__init__(
            optimizer,
            [warmup, after],
            [warmup_steps],
            last_epoch,
            steps_per_epoch=steps_per_epoch,
        )


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): the learning rate rises from ``max_lr / div_factor``
    to ``max_lr`` over the first ``pct_start`` of ``total_steps`` batches, then anneals to
    ``max_lr / (div_factor * final_div_factor)``; momentum (or Adam's beta1) moves the other
    way between ``max_momentum`` and ``base_momentum``. Positions count batches."""

    def __init__(
        self,
        optimizer: OptimizerBase,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise OptimizerError(
                    "OneCycleLR needs total_steps, or both epochs and steps_per_epoch"
                )
            total_steps = epochs * steps_per_epoch
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise OptimizerError(
                f"OneCycleLR: total_steps must be a positive int, got {total_steps}"
            )
        if not 0 <= pct_start <= 1:
            raise OptimizerError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise OptimizerError(
                f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        self.total_steps = total_steps
        self.anneal_strategy = anneal_strategy
        self.cycle_momentum = cycle_momentum
        groups = optimizer.param_groups
        max_lrs = self._per_group("max_lr", max_lr)
        if last_epoch == -1:
            for group, peak in zip(groups, max_lrs):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        if three_phase:
            ends = [pct_start * total_steps - 1, 2 * pct_start * total_steps - 2, total_steps - 1]
            self.phases = [
                (ends[0], "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (ends[1], "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (ends[2], "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            ends = [pct_start * total_steps - 1, total_steps - 1]
            self.phases = [
                (ends[0], "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (ends[1], "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self.use_beta1 = False
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise OptimizerError(
                    "OneCycleLR: cycle_momentum=True needs an optimizer with momentum or betas",
                    help="pass cycle_momentum=False",
                )
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for group, low, high in zip(
                    groups,
                    self._per_group("base_momentum", base_momentum),
                    self._per_group("max_momentum", max_momentum),
                ):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def _anneal(self, start: float, end: float, fraction: float) -> float:
        if self.anneal_strategy == "cos":
            return _cosine(start, end, fraction)
        return (end - start) * fraction + start

    def _phase(self, position: float) -> tuple:
        if position > self.total_steps:
            raise OptimizerError(
                f"OneCycleLR was stepped {position} times, past its total_steps={self.total_steps}",
                help="make total_steps (or epochs * steps_per_epoch) cover every batch",
            )
        start = 0.0
        for index, phase in enumerate(self.phases):
            end = phase[0]
            if position <= end or index == len(self.phases) - 1:
                return phase, (position - start) / (end - start)
            start = end
        raise AssertionError("unreachable")

    def lr_at(self, position):
        (_, lr_from, lr_to, _, _), fraction = self._phase(position)
        return [
            self._anneal(group[lr_from], group[lr_to], fraction)
            for group in self.optimizer.param_groups
        ]

    def _set_lrs(self, lrs: list[float]) -> None:
        super()._set_lrs(lrs)
        if self.cycle_momentum:
            (_, _, _, m_from, m_to), fraction = self._phase(self.position)
            for group in self.optimizer.param_groups:
                self._set_momentum(group, self._anneal(group[m_from], group[m_to], fraction))

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["phases"] = [list(phase) for phase in self.phases]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.phases = [tuple(phase) for phase in self.phases]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` once a metric has not improved for more than
    ``patience`` checks; ``step(metric)`` once per validation (``step_batch(metric)`` is the
    same: each call is one check)."""

    def __init__(
        self,
        optimizer: OptimizerBase,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise OptimizerError(
                f"ReduceLROnPlateau: factor must be < 1.0, got {factor}",
                help="the learning rate is multiplied by factor, e.g. factor=0.1",
            )
        if mode not in ("min", "max"):
            raise OptimizerError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise OptimizerError(
                f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}"
            )
        _require_group_lrs("ReduceLROnPlateau", optimizer)
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.min_lrs = self._per_group("min_lr", min_lr)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def is_better(self, current: float, best: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return current < best * (1.0 - self.threshold)
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best * (self.threshold + 1.0)
        return current > best + self.threshold

    def step(self, metrics: float) -> None:  # type: ignore[override]
        """Record one value of the watched metric; reduce the rates if it has plateaued."""
        current = float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def step_batch(self, metrics: float) -> None:  # type: ignore[override]
        self.step(metrics)
