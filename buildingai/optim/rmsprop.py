"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options, step_options
from .optimizer import OptimizerBase, check_hyperparameter


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
        capturable: bool = False,
        differentiable: bool = False,
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
        defaults.update(step_options("RMSprop", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        state = {"step": 0, "square_avg": xp.zeros_like(param.array)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = xp.zeros_like(param.array)
        if group["centered"]:
            state["grad_avg"] = xp.zeros_like(param.array)
        return state

    def update(self, param, grad, state, group) -> None:
        """One RMSprop step on ``param`` (an array, in place).

        g = ±grad + weight_decay * param
        s = alpha * s + (1 - alpha) * g²;  centered: a = alpha * a + (1 - alpha) * g
        rms = sqrt(s - a²) (centered) or sqrt(s), plus eps
        param -= lr * g / rms;  with momentum: buf = momentum * buf + g / rms, param -= lr * buf
        """
        xp = array_namespace(param)
        alpha, momentum = group["alpha"], group["momentum"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        square_avg = state["square_avg"]
        square_avg[...] = alpha * square_avg + (1 - alpha) * grad * grad
        if group["centered"]:  # (zeros if centering was switched on after the first step)
            grad_avg = state.get("grad_avg")
            if grad_avg is None:
                grad_avg = state["grad_avg"] = xp.zeros_like(param)
            grad_avg[...] = alpha * grad_avg + (1 - alpha) * grad
            rms = xp.sqrt(square_avg - grad_avg * grad_avg) + group["eps"]
        else:
            rms = xp.sqrt(square_avg) + group["eps"]
        if momentum > 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = xp.zeros_like(param)
            buf[...] = momentum * buf + grad / rms
            param -= group["lr"] * buf
        else:
            param -= group["lr"] * grad / rms
