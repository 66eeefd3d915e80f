"""Adagrad: per-coordinate step sizes shrinking with the sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options, step_options
from .optimizer import OptimizerBase, check_hyperparameter


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
        differentiable: bool = False,
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
        defaults.update(step_options("Adagrad", differentiable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "sum": xp.full_like(param.array, group["initial_accumulator_value"]),
        }

    def update(self, param, grad, state, group) -> None:
        """One Adagrad step on ``param`` (an array, in place).

        g = ±grad + weight_decay * param
        sum += g²
        param -= lr_t * g / (sqrt(sum) + eps),  lr_t = lr / (1 + (t - 1) * lr_decay)
        """
        xp = array_namespace(param)
        state["step"] += 1
        lr_t = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        state_sum = state["sum"]
        state_sum += grad * grad
        param -= lr_t * grad / (xp.sqrt(state_sum) + group["eps"])
