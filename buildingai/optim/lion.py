"""Lion (EvoLved Sign Momentum; Chen et al., 2023, "Symbolic Discovery of Optimization
Algorithms"): the update is the sign of an interpolation between momentum and gradient."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter, effective_gradient


def lion_update(
    xp,
    param,
    grad,
    exp_avg,
    work,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Lion step on arrays of one shape, in place (``work``: two scratch arrays).

    c = beta1 * m + (1 - beta1) * g
    param -= lr * (sign(c) + weight_decay * param)   (decoupled weight decay)
    m = beta2 * m + (1 - beta2) * g
    """
    g = effective_gradient(xp, param, grad, work[0], work[1], weight_decay=0.0, maximize=maximize)
    if weight_decay:
        param *= 1.0 - lr * weight_decay
    direction = work[1]
    xp.subtract(g, exp_avg, out=direction)  # c = m + (1 - beta1) (g - m)
    direction *= 1.0 - beta1
    direction += exp_avg
    xp.sign(direction, out=direction)
    direction *= lr
    param -= direction
    scratch = work[1]
    xp.subtract(g, exp_avg, out=scratch)  # m = m + (1 - beta2) (g - m)
    scratch *= 1.0 - beta2
    exp_avg += scratch


class Lion(OptimizerBase):
    """Lion: ``param -= lr * (sign(beta1 m + (1 - beta1) g) + weight_decay * param)``, then
    ``m = beta2 m + (1 - beta2) g``. Every coordinate moves by exactly ``lr``, so Lion wants a
    learning rate 3-10x smaller than AdamW's and a weight decay 3-10x larger.

    State per parameter: ``step`` and ``exp_avg`` (the momentum ``m``).
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
    ) -> None:
        check_hyperparameter("Lion", "lr", lr)
        check_hyperparameter("Lion", "weight_decay", weight_decay)
        betas = check_betas("Lion", betas)
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize)
        defaults.update(loop_options("Lion", foreach, fused))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        return {"step": 0, "exp_avg": array_namespace(param.data).zeros_like(param.data)}

    def update(self, param, grad, state, group) -> None:
        state["step"] += 1
        beta1, beta2 = group["betas"]
        self._run_elementwise(
            lion_update,
            (param, grad, state["exp_avg"]),
            2,
            lr=group["lr"],
            beta1=beta1,
            beta2=beta2,
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )
