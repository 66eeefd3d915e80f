"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options, step_options
from .optimizer import OptimizerBase, OptimizerError, check_hyperparameter


class Adadelta(OptimizerBase):
    """Adadelta (PyTorch's ``torch.optim.Adadelta``: same arguments, same math).

    State per parameter: ``step``, ``square_avg`` and ``acc_delta``.
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameter("Adadelta", "lr", lr)
        check_hyperparameter("Adadelta", "rho", rho)
        if rho > 1.0:
            raise OptimizerError(
                f"Adadelta: invalid rho {rho!r}; it must be in [0, 1]", help="e.g. rho=0.9"
            )
        check_hyperparameter("Adadelta", "eps", eps)
        check_hyperparameter("Adadelta", "weight_decay", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        defaults.update(loop_options("Adadelta", foreach, fused))
        defaults.update(step_options("Adadelta", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "square_avg": xp.zeros_like(param.array),
            "acc_delta": xp.zeros_like(param.array),
        }

    def update(self, param, grad, state, group) -> None:
        """One Adadelta step on ``param`` (an array, in place): Zeiler (2012), Algorithm 1.

        g = ±grad + weight_decay * param
        s = rho * s + (1 - rho) * g²
        delta = sqrt(acc + eps) / sqrt(s + eps) * g
        acc = rho * acc + (1 - rho) * delta²
        param -= lr * delta
        """
        xp = array_namespace(param)
        rho, eps = group["rho"], group["eps"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg[...] = rho * square_avg + (1 - rho) * grad * grad
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * grad
        acc_delta[...] = rho * acc_delta + (1 - rho) * delta * delta
        param -= group["lr"] * delta
