"""ASGD: stochastic gradient descent with a decaying step size and a running (Polyak-Ruppert)
average of the iterates (Polyak & Juditsky, 1992)."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import step_options
from .optimizer import OptimizerBase, check_hyperparameter


class ASGD(OptimizerBase):
    """Averaged SGD (PyTorch's ``torch.optim.ASGD``: same arguments, same math).

    The parameters follow SGD with step size ``eta_t = lr / (1 + lambd * lr * t)^alpha`` and a
    decay ``param *= 1 - lambd * eta``; from step ``t0`` on, ``ax`` averages the iterates (before
    it, ``ax`` is the latest iterate). ``ax`` is the averaged model: copy it into the parameters
    to evaluate it. State per parameter: ``step`` (an int), ``eta`` and ``mu`` (the averaging
    weight, floats) and ``ax`` (an array of the parameter's shape and dtype).

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
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_hyperparameter("ASGD", "lr", lr)
        check_hyperparameter("ASGD", "weight_decay", weight_decay)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        defaults.update(step_options("ASGD", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        return {
            "step": 0,
            "eta": float(group["lr"]),
            "mu": 1.0,
            "ax": array_namespace(param.array).zeros_like(param.array),
        }

    def update(self, param, grad, state, group) -> None:
        """One ASGD step on ``param`` (an array, in place).

        g = ±grad + weight_decay * param
        param = param * (1 - lambd * eta) - eta * g
        ax = param while mu == 1, else ax += mu * (param - ax)
        eta = lr / (1 + lambd * lr * t)^alpha;  mu = 1 / max(1, t - t0)
        """
        lr, lambd, eta = group["lr"], group["lambd"], state["eta"]
        state["step"] += 1
        t = state["step"]
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        param *= 1 - lambd * eta
        param -= eta * grad
        ax = state["ax"]
        if state["mu"] != 1:
            ax += (param - ax) * state["mu"]
        else:  # before t0 the "average" is the latest iterate
            ax[...] = param
        # the next step's size and averaging weight
        state["eta"] = lr / ((1 + lambd * lr * t) ** group["alpha"])
        state["mu"] = 1 / max(1, t - group["t0"])
