"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay and AMSGrad."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import LOOP_OPTIONS_DOC, loop_options, step_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter


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
        capturable: bool = False,
        differentiable: bool = False,
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
        defaults.update(step_options(name, differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        state = {
            "step": 0,
            "exp_avg": xp.zeros_like(param.array),
            "exp_avg_sq": xp.zeros_like(param.array),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = xp.zeros_like(param.array)
        return state

    def update(self, param, grad, state, group) -> None:
        """One Adam step on ``param`` (an array, in place): Kingma & Ba (2015), Algorithm 1.

        g = ±grad (+ weight_decay * param, or AdamW: param *= 1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g²  (AMSGrad: max of v)
        param -= lr * m̂ / (sqrt(v̂) + eps),  m̂ = m / (1 - beta1^t),  v̂ = v / (1 - beta2^t)
        """
        xp = array_namespace(param)
        lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
        state["step"] += 1
        t = state["step"]
        if group["maximize"]:
            grad = -grad
        if weight_decay and group["decoupled_weight_decay"]:
            param *= 1 - lr * weight_decay
        elif weight_decay:
            grad = grad + weight_decay * param
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m[...] = beta1 * m + (1 - beta1) * grad
        v[...] = beta2 * v + (1 - beta2) * grad * grad
        if group["amsgrad"]:  # the largest v so far (zeros if amsgrad was switched on later)
            v_max = state.get("max_exp_avg_sq")
            if v_max is None:
                v_max = state["max_exp_avg_sq"] = xp.zeros_like(param)
            v = xp.maximum(v_max, v, out=v_max)
        m_hat = m / (1 - beta1**t)
        v_hat = v / (1 - beta2**t)
        param -= lr * m_hat / (xp.sqrt(v_hat) + group["eps"])


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
        capturable: bool = False,
        differentiable: bool = False,
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
            capturable=capturable,
            differentiable=differentiable,
            decoupled_weight_decay=True,
        )
