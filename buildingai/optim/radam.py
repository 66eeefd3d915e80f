"""RAdam: Adam whose adaptive step is switched on, and rectified, once the variance of the
second-moment estimate is tractable (Liu et al., 2020)."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import step_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter


class RAdam(OptimizerBase):
    """RAdam (PyTorch's ``torch.optim.RAdam``: same arguments, same math).

    While the length of the approximated simple moving average ``rho_t`` is at most 5, the step
    is plain momentum SGD; after that it is Adam's step times the rectification term.
    ``weight_decay`` adds an L2 term to the gradient; ``decoupled_weight_decay=True`` shrinks the
    weights directly instead (RAdamW). State per parameter: ``step`` (an int), ``exp_avg`` and
    ``exp_avg_sq``: arrays of the parameter's shape and dtype.

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
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameter("RAdam", "lr", lr)
        check_hyperparameter("RAdam", "eps", eps)
        betas = check_betas("RAdam", betas)
        check_hyperparameter("RAdam", "weight_decay", weight_decay)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        defaults.update(step_options("RAdam", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "exp_avg": xp.zeros_like(param.array),
            "exp_avg_sq": xp.zeros_like(param.array),
        }

    def update(self, param, grad, state, group) -> None:
        """One RAdam step on ``param`` (an array, in place): Liu et al. (2020), Algorithm 2.

        g = ±grad (+ weight_decay * param, or decoupled: param *= 1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g²;  m̂ = m / (1 - beta1^t)
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    param -= lr * m̂ * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
        otherwise:  param -= lr * m̂
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
        bias_correction1 = 1 - beta1**t
        bias_correction2 = 1 - beta2**t
        m_hat = m / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * (beta2**t) / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            adaptive_lr = bias_correction2**0.5 / (xp.sqrt(v) + group["eps"])
            param -= m_hat * lr * adaptive_lr * rect
        else:  # the variance of the adaptive step is not yet tractable: momentum SGD
            param -= m_hat * lr
