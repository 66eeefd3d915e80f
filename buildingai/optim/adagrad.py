"""Adagrad: per-coordinate step sizes shrinking with the sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, check_hyperparameter, effective_gradient


def adagrad_update(
    xp,
    param,
    grad,
    state_sum,
    work,
    *,
    clr: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Adagrad step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    sum += g * g
    param -= clr * g / (sqrt(sum) + eps),  clr = lr / (1 + (t - 1) * lr_decay)
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    scratch = work[1]
    xp.multiply(g, g, out=scratch)
    state_sum += scratch
    xp.sqrt(state_sum, out=scratch)
    scratch += eps
    xp.divide(g, scratch, out=scratch)
    scratch *= clr
    param -= scratch


class Adagrad(OptimizerBase):
    """Adagrad (PyTorch's ``torch.optim.Adagrad``: same arguments, same math).

    State per parameter: ``step`` and ``sum`` (starting at ``initial_accumulator_value``).
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
    ) -> None:
        for name, value in (
            ("lr", lr),
            ("lr_decay", lr_decay),
            ("weight_decay", weight_decay),
            ("initial_accumulator_value", initial_accumulator_value),
            ("eps", eps),
        ):
            check_hyperparameter("Adagrad", name, value)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
            maximize=maximize,
        )
        defaults.update(loop_options("Adagrad", foreach, fused))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.data)
        return {
            "step": 0,
            "sum": xp.full_like(param.data, group["initial_accumulator_value"]),
        }

    def update(self, param, grad, state, group) -> None:
        state["step"] += 1
        self._run_elementwise(
            adagrad_update,
            (param, grad, state["sum"]),
            2,
            clr=group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"]),
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )
