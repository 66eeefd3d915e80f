"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Iterable

from ..accel.vector_blas import axpby
from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, OptimizerError, check_hyperparameter, effective_gradient


def sgd_update(
    xp,
    param,
    grad,
    momentum_buffer,
    work,
    *,
    lr: float,
    momentum: float,
    dampening: float,
    nesterov: bool,
    weight_decay: float,
    maximize: bool,
    first_step: bool,
) -> None:
    """One SGD step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    buf = g on the first step, else momentum * buf + (1 - dampening) * g
    d = g + momentum * buf (Nesterov) or buf (momentum) or g (plain)
    param -= lr * d
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    direction = g
    if momentum:
        if first_step:
            xp.copyto(momentum_buffer, g)
        else:
            axpby(xp, 1.0 - dampening, g, momentum, momentum_buffer, work[1])
        if nesterov:
            xp.multiply(momentum_buffer, momentum, out=work[1])
            xp.add(g, work[1], out=work[1])
            direction = work[1]
        else:
            direction = momentum_buffer
    # the fallback's scratch: whichever work array the direction is not (g is spent by now)
    axpby(xp, -lr, direction, 1.0, param, work[0] if direction is work[1] else work[1])


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
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        return {"momentum_buffer": None}

    def update(self, param, grad, state, group) -> None:
        first_step = False
        if group["momentum"] and state.get("momentum_buffer") is None:
            state["momentum_buffer"] = array_namespace(param).empty_like(param)
            first_step = True
        self._run_elementwise(
            sgd_update,
            (param, grad, state.get("momentum_buffer")),
            2,
            lr=group["lr"],
            momentum=group["momentum"],
            dampening=group["dampening"],
            nesterov=group["nesterov"],
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
            first_step=first_step,
        )
