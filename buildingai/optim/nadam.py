"""NAdam: Adam with Nesterov momentum and a momentum schedule (Dozat, 2016)."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import step_options
from .optimizer import OptimizerBase, check_betas, check_hyperparameter


class NAdam(OptimizerBase):
    """NAdam (PyTorch's ``torch.optim.NAdam``: same arguments, same math).

    ``weight_decay`` adds an L2 term to the gradient; ``decoupled_weight_decay=True`` shrinks the
    weights directly instead (NAdamW). ``momentum_decay`` sets how fast the momentum schedule
    ``mu_t = beta1 * (1 - 0.96^(t * momentum_decay) / 2)`` rises to ``beta1``. State per
    parameter: ``step`` (an int), ``mu_product`` (the product of the ``mu_t`` so far, a float),
    ``exp_avg`` and ``exp_avg_sq``: arrays of the parameter's shape and dtype.

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
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameter("NAdam", "lr", lr)
        check_hyperparameter("NAdam", "eps", eps)
        betas = check_betas("NAdam", betas)
        check_hyperparameter("NAdam", "weight_decay", weight_decay)
        check_hyperparameter("NAdam", "momentum_decay", momentum_decay)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
        )
        defaults.update(step_options("NAdam", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "mu_product": 1.0,
            "exp_avg": xp.zeros_like(param.array),
            "exp_avg_sq": xp.zeros_like(param.array),
        }

    def update(self, param, grad, state, group) -> None:
        """One NAdam step on ``param`` (an array, in place): Dozat (2016), Algorithm 2.

        g = ±grad (+ weight_decay * param, or decoupled: param *= 1 - lr * weight_decay)
        mu_t = beta1 * (1 - 0.96^(t * momentum_decay) / 2);  prod_t = mu_1 * ... * mu_t
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g²
        denom = sqrt(v / (1 - beta2^t)) + eps
        param -= lr * ((1 - mu_t) / (1 - prod_t) * g + mu_{t+1} / (1 - prod_{t+1}) * m) / denom
        """
        xp = array_namespace(param)
        lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
        momentum_decay = group["momentum_decay"]
        state["step"] += 1
        t = state["step"]
        if group["maximize"]:
            grad = -grad
        if weight_decay and group["decoupled_weight_decay"]:
            param *= 1 - lr * weight_decay
        elif weight_decay:
            grad = grad + weight_decay * param
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        mu_product_next = mu_product * mu_next
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m[...] = beta1 * m + (1 - beta1) * grad
        v[...] = beta2 * v + (1 - beta2) * grad * grad
        denom = xp.sqrt(v / (1 - beta2**t)) + group["eps"]
        # the Nesterov look-ahead: this step's gradient, then the momentum of the next step
        param -= lr * (1.0 - mu) / (1.0 - mu_product) * (grad / denom)
        param -= lr * mu_next / (1.0 - mu_product_next) * (m / denom)
