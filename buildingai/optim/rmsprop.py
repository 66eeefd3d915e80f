"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, check_hyperparameter, effective_gradient


def rmsprop_update(
    xp,
    param,
    grad,
    square_avg,
    grad_avg,
    momentum_buffer,
    work,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    maximize: bool,
) -> None:
    """One RMSprop step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    s = alpha * s + (1 - alpha) * g * g
    centered (grad_avg given): a = a + (1 - alpha) * (g - a);  rms = sqrt(s - a * a) + eps
    otherwise rms = sqrt(s) + eps
    momentum: buf = momentum * buf + g / rms;  param -= lr * buf
    otherwise param -= lr * g / rms
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    scratch = work[1]
    xp.multiply(g, g, out=scratch)
    scratch *= 1.0 - alpha
    square_avg *= alpha
    square_avg += scratch
    rms = work[1]
    if grad_avg is not None:
        xp.subtract(g, grad_avg, out=scratch)
        scratch *= 1.0 - alpha
        grad_avg += scratch
        xp.multiply(grad_avg, grad_avg, out=rms)
        xp.subtract(square_avg, rms, out=rms)
        xp.sqrt(rms, out=rms)
    else:
        xp.sqrt(square_avg, out=rms)
    rms += eps
    xp.divide(g, rms, out=rms)
    if momentum_buffer is not None:
        momentum_buffer *= momentum
        momentum_buffer += rms
        xp.multiply(momentum_buffer, lr, out=rms)
    else:
        rms *= lr
    param -= rms


class RMSprop(OptimizerBase):
    """RMSprop (PyTorch's ``torch.optim.RMSprop``: same arguments, same math).

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer`` (momentum > 0) and
    ``grad_avg`` (centered).
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
    ) -> None:
        for name, value in (
            ("lr", lr),
            ("alpha", alpha),
            ("eps", eps),
            ("weight_decay", weight_decay),
            ("momentum", momentum),
        ):
            check_hyperparameter("RMSprop", name, value)
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        defaults.update(loop_options("RMSprop", foreach, fused))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.data)
        state = {"step": 0, "square_avg": xp.zeros_like(param.data)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = xp.zeros_like(param.data)
        if group["centered"]:
            state["grad_avg"] = xp.zeros_like(param.data)
        return state

    def update(self, param, grad, state, group) -> None:
        state["step"] += 1
        xp = array_namespace(param)
        # a group may switch momentum or centering on after the first step
        if group["momentum"] > 0 and state.get("momentum_buffer") is None:
            state["momentum_buffer"] = xp.zeros_like(param)
        if group["centered"] and state.get("grad_avg") is None:
            state["grad_avg"] = xp.zeros_like(param)
        self._run_elementwise(
            rmsprop_update,
            (
                param,
                grad,
                state["square_avg"],
                state["grad_avg"] if group["centered"] else None,
                state["momentum_buffer"] if group["momentum"] > 0 else None,
            ),
            2,
            lr=group["lr"],
            alpha=group["alpha"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            momentum=group["momentum"],
            maximize=group["maximize"],
        )
