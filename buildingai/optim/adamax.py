"""Adamax: Adam with the second moment replaced by an exponentially weighted infinity norm."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import step_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter


class Adamax(OptimizerBase):
    """Adamax (PyTorch's ``torch.optim.Adamax``: same arguments, same math).

    State per parameter: ``step`` (an int), ``exp_avg`` (the first moment) and ``exp_inf`` (the
    infinity norm): arrays of the parameter's shape and dtype.

    ``foreach`` (PyTorch's): with acceleration on, None or True updates a group's small
    parameters together as one flat array, False one by one; the result is the same.
    ``capturable`` is kept in the parameter groups, as PyTorch keeps it, and changes nothing
    (there are no CUDA graphs to capture); ``differentiable=True`` is refused: the step is never
    recorded for autograd.
    """

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_hyperparameter("Adamax", "lr", lr)
        check_hyperparameter("Adamax", "eps", eps)
        betas = check_betas("Adamax", betas)
        check_hyperparameter("Adamax", "weight_decay", weight_decay)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        defaults.update(step_options("Adamax", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "exp_avg": xp.zeros_like(param.array),
            "exp_inf": xp.zeros_like(param.array),
        }

    def update(self, param, grad, state, group) -> None:
        """One Adamax step on ``param`` (an array, in place): Kingma & Ba (2015), Algorithm 2.

        g = ±grad + weight_decay * param
        m = beta1 * m + (1 - beta1) * g;  u = max(beta2 * u, |g| + eps)
        param -= lr / (1 - beta1^t) * m / u
        """
        xp = array_namespace(param)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        m, u = state["exp_avg"], state["exp_inf"]
        m[...] = beta1 * m + (1 - beta1) * grad
        # eps inside the max keeps u > 0 where the gradient has always been 0
        xp.maximum(beta2 * u, xp.abs(grad) + group["eps"], out=u)
        step_size = lr / (1 - beta1 ** state["step"])
        param -= step_size * (m / u)
