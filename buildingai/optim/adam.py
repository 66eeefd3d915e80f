"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay and AMSGrad."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..accel.kernels.compiled import compiled_twin
from ..accel.vector_blas import axpby
from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter, effective_gradient


@compiled_twin(
    "optim.adam",
    params=(
        "lr",
        "beta1",
        "beta2",
        "eps",
        "weight_decay",
        "decoupled_weight_decay",
        "maximize",
        "step_size",
        "bias_correction2_sqrt",
    ),
)
def adam_update(
    xp,
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    work,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled_weight_decay: bool,
    maximize: bool,
    step_size: float,
    bias_correction2_sqrt: float,
) -> None:
    """One Adam step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad (+ weight_decay * param unless decoupled; decoupled: param *= 1 - lr * wd)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g;  v_max = max(v_max, v) with AMSGrad
    param -= step_size * m / (sqrt(v or v_max) / bias_correction2_sqrt + eps)

    with step_size = lr / (1 - beta1**t) and bias_correction2_sqrt = sqrt(1 - beta2**t). The
    scaled sums (m, v and the parameter step) are one ``axpby`` pass each
    (``backend.vector_blas``); float32 parameters take the one-pass compiled twin where it is
    available (``ops/kernels/compiled/optim.py``).
    """
    g = effective_gradient(
        xp,
        param,
        grad,
        work[0],
        work[1],
        weight_decay=0.0 if decoupled_weight_decay else weight_decay,
        maximize=maximize,
    )
    scratch = work[1]
    axpby(xp, 1.0 - beta1, g, beta1, exp_avg, scratch)
    xp.multiply(g, g, out=scratch)
    axpby(xp, 1.0 - beta2, scratch, beta2, exp_avg_sq, scratch)
    second_moment = exp_avg_sq
    if max_exp_avg_sq is not None:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        second_moment = max_exp_avg_sq
    # step_size * m / (sqrt(v) / bc2 + eps) = step_size * bc2 * m / (sqrt(v) + eps * bc2):
    # one pass fewer, the same value to rounding
    denom = scratch
    xp.sqrt(second_moment, out=denom)
    denom += eps * bias_correction2_sqrt
    xp.divide(exp_avg, denom, out=denom)
    decay = 1.0 - lr * weight_decay if decoupled_weight_decay else 1.0
    axpby(xp, -step_size * bias_correction2_sqrt, denom, decay, param, denom)


class Adam(OptimizerBase):
    """Adam (PyTorch's ``torch.optim.Adam``: same arguments, same math).

    ``weight_decay`` adds an L2 term to the gradient; ``decoupled_weight_decay=True`` shrinks
    the weights directly instead (that is AdamW). State per parameter: ``step`` (an int) and
    ``exp_avg``, ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``: arrays of the
    parameter's shape and dtype.
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    updates_elementwise = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        name = type(self).__name__
        check_hyperparameter(name, "lr", lr)
        check_hyperparameter(name, "eps", eps)
        check_hyperparameter(name, "weight_decay", weight_decay)
        betas = check_betas(name, betas)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        defaults.update(loop_options(name, foreach, fused))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.data)
        state = {
            "step": 0,
            "exp_avg": xp.zeros_like(param.data),
            "exp_avg_sq": xp.zeros_like(param.data),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = xp.zeros_like(param.data)
        return state

    def update(self, param, grad, state, group) -> None:
        state["step"] += 1
        step = state["step"]
        beta1, beta2 = group["betas"]
        if group["amsgrad"] and state.get("max_exp_avg_sq") is None:  # amsgrad switched on later
            state["max_exp_avg_sq"] = array_namespace(param).zeros_like(param)
        self._run_elementwise(
            adam_update,
            (
                param,
                grad,
                state["exp_avg"],
                state["exp_avg_sq"],
                state["max_exp_avg_sq"] if group["amsgrad"] else None,
            ),
            2,
            lr=group["lr"],
            beta1=beta1,
            beta2=beta2,
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            decoupled_weight_decay=group["decoupled_weight_decay"],
            maximize=group["maximize"],
            step_size=group["lr"] / (1.0 - beta1**step),
            bias_correction2_sqrt=math.sqrt(1.0 - beta2**step),
        )


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's ``torch.optim.AdamW``): each step shrinks the
    weights by ``lr * weight_decay`` instead of adding an L2 term to the gradient. State as
    ``Adam``'s: ``step`` and moment arrays of each parameter's shape and dtype.
    """

    __doc__ = (__doc__ or "") + LOOP_OPTIONS_DOC

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            foreach=foreach,
            fused=fused,
            decoupled_weight_decay=True,
        )
