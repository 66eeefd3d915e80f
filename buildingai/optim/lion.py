"""Lion (EvoLved Sign Momentum; Chen et al., 2023, "Symbolic Discovery of Optimization
Algorithms"): the update is the sign of an interpolation between momentum and gradient."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter


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
        return {"step": 0, "exp_avg": array_namespace(param.array).zeros_like(param.array)}

    def update(self, param, grad, state, group) -> None:
        """One Lion step on ``param`` (an array, in place): Chen et al. (2023), Algorithm 2.

        c = beta1 * m + (1 - beta1) * g
        param -= lr * (sign(c) + weight_decay * param)
        m = beta2 * m + (1 - beta2) * g
        """
        xp = array_namespace(param)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        m = state["exp_avg"]
        c = beta1 * m + (1 - beta1) * grad
        param -= lr * (xp.sign(c) + group["weight_decay"] * param)
        m[...] = beta2 * m + (1 - beta2) * grad
