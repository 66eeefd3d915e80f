"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options, step_options
from .optimizer import OptimizerBase, OptimizerError, check_hyperparameter


class SGD(OptimizerBase):
    """Stochastic gradient descent (PyTorch's ``torch.optim.SGD``: same arguments, same math).

    State per parameter: ``momentum_buffer`` (None until the first step, or when momentum=0).
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameter("SGD", "lr", lr)
        check_hyperparameter("SGD", "momentum", momentum)
        check_hyperparameter("SGD", "weight_decay", weight_decay)
        check_hyperparameter("SGD", "dampening", dampening)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise OptimizerError(
                f"SGD: Nesterov momentum requires momentum > 0 and dampening = 0, got "
                f"momentum={momentum}, dampening={dampening}",
                help="set momentum (e.g. 0.9) and leave dampening at 0",
            )
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        defaults.update(loop_options("SGD", foreach, fused))
        defaults.update(step_options("SGD", differentiable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        return {"momentum_buffer": None}

    def update(self, param, grad, state, group) -> None:
        """One SGD step on ``param`` (an array, in place).

        g = ±grad + weight_decay * param
        buf = g on the first step, then momentum * buf + (1 - dampening) * g
        param -= lr * (g + momentum * buf if nesterov else buf)   (with momentum; else lr * g)
        """
        xp = array_namespace(param)
        lr, momentum = group["lr"], group["momentum"]
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = xp.copy(grad)
            else:
                buf[...] = momentum * buf + (1 - group["dampening"]) * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        param -= lr * grad
