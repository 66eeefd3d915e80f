"""Adafactor: adaptive steps from a second moment kept as row and column factors, so a matrix
costs O(rows + columns) memory (Shazeer & Stern, 2018)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..backend import array_namespace
from .optimizer import OptimizerBase, OptimizerError, _array_like_param, check_hyperparameter

# the per-parameter state arrays that are not shaped like their parameter
FACTORED_STATES = ("row_var", "col_var")


class Adafactor(OptimizerBase):
    """Adafactor (PyTorch's ``torch.optim.Adafactor``: same arguments, same math).

    The step of a parameter is ``max(eps2, RMS(param)) * min(lr, 1/sqrt(t))`` times the
    gradient over the root of its second moment, scaled down where its RMS passes ``d``. The
    second-moment decay is ``1 - t^beta2_decay``. ``eps = (eps1, eps2)``: ``eps1`` (None: the
    machine epsilon of the parameter's dtype) bounds the second moment from below, ``eps2`` the
    parameter scale. ``weight_decay`` shrinks the weights directly, by ``lr * weight_decay``.

    State per parameter: ``step`` (an int) and, for a parameter of two or more dimensions
    ``(..., R, C)``, ``row_var`` of shape ``(..., R, 1)`` and ``col_var`` of shape ``(..., 1, C)``
    (the second moment's factors over its last two dimensions); for a scalar or a vector,
    ``variance`` of the parameter's shape.

    ``foreach`` (PyTorch's) is kept in the parameter groups and changes nothing: each parameter
    is updated on its own (its step needs its own norms).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_hyperparameter("Adafactor", "lr", lr)
        if isinstance(beta2_decay, bool) or not isinstance(beta2_decay, (int, float)):
            raise OptimizerError(f"Adafactor: beta2_decay must be a number, got {beta2_decay!r}")
        if not beta2_decay <= 0:  # NaN too
            raise OptimizerError(
                f"Adafactor: invalid beta2_decay {beta2_decay!r}; it must be <= 0",
                help="the second-moment decay is 1 - t^beta2_decay, e.g. beta2_decay=-0.8",
            )
        eps = _check_eps(eps)
        check_hyperparameter("Adafactor", "d", d, minimum=1.0)
        check_hyperparameter("Adafactor", "weight_decay", weight_decay)
        defaults = dict(
            lr=lr,
            beta2_decay=beta2_decay,
            eps=eps,
            d=d,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        shape = tuple(param.shape)
        if len(shape) > 1:
            return {
                "step": 0,
                "row_var": xp.zeros(shape[:-1] + (1,), dtype=param.array.dtype),
                "col_var": xp.zeros(shape[:-2] + (1,) + shape[-1:], dtype=param.array.dtype),
            }
        return {"step": 0, "variance": xp.zeros_like(param.array)}

    def update(self, param, grad, state, group) -> None:
        """One Adafactor step on ``param`` (an array, in place): Shazeer & Stern (2018),
        Algorithms 4 and 5, with relative step sizes and update clipping.

        g = ±grad;  beta2_t = 1 - t^beta2_decay;  alpha = max(eps2, RMS(param)) * min(lr, 1/sqrt(t))
        param *= 1 - lr * weight_decay
        2-D and up: R = beta2_t R + (1 - beta2_t) mean(g², -1);  C likewise with mean(g², -2)
                    V = R C / max(mean(R, -2), eps1)
        otherwise:  V = beta2_t V + (1 - beta2_t) g²
        U = g / sqrt(max(V, eps1²));  param -= alpha * U / max(1, RMS(U) / d)
        """
        xp = array_namespace(param)
        lr, weight_decay = group["lr"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype).eps)
        state["step"] += 1
        t = state["step"]
        if param.size == 0:  # no elements to move (and no RMS to take)
            return
        if group["maximize"]:
            grad = -grad
        new_weight = t ** group["beta2_decay"]  # 1 - beta2_t: the weight of this step's g²
        rho_t = min(lr, 1 / t**0.5)
        # the step is relative to the parameter's scale before the weight decay
        alpha = max(eps2, _rms(xp, param)) * rho_t
        if weight_decay:
            param *= 1 - lr * weight_decay
        if "variance" in state:
            variance = state["variance"]
            variance[...] = (1 - new_weight) * variance + new_weight * (grad * grad)
            var_estimate = variance
        else:
            row_var, col_var = state["row_var"], state["col_var"]
            grad_squared = grad * grad
            row_mean = xp.mean(grad_squared, axis=-1, keepdims=True)  # (..., R, 1)
            col_mean = xp.mean(grad_squared, axis=-2, keepdims=True)  # (..., 1, C)
            row_var[...] = (1 - new_weight) * row_var + new_weight * row_mean
            col_var[...] = (1 - new_weight) * col_var + new_weight * col_mean
            # the rank-1 estimate R C / sum(R), with R's sum taken as a mean (C is a mean too)
            row_scale = xp.maximum(xp.mean(row_var, axis=-2, keepdims=True), eps1)  # (..., 1, 1)
            var_estimate = row_var * col_var / row_scale  # (..., R, C)
        # eps1 bounds the root of the second moment, so its square bounds the moment
        update = grad / xp.sqrt(xp.maximum(var_estimate, eps1 * eps1))
        clip = max(1.0, _rms(xp, update) / group["d"])
        param -= alpha / clip * update

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned. ``row_var`` and ``col_var`` are checked
        against their parameter's factored shapes here; the rest loads as for any
        optimizer."""
        saved_states = state_dict.get("state")
        param_of = self._params_by_index(state_dict)
        if param_of is None or saved_states is None:  # the base explains what is wrong
            super().load_state_dict(state_dict)
            return
        factored, rest = {}, {}
        for index, saved_state in saved_states.items():
            param = param_of.get(int(index))
            rest[index] = {k: v for k, v in saved_state.items() if k not in FACTORED_STATES}
            parts = {k: v for k, v in saved_state.items() if k in FACTORED_STATES}
            if parts and param is not None:
                _check_factored(index, parts, tuple(param.shape))
                factored[param] = parts
        super().load_state_dict({**state_dict, "state": rest})
        for param, parts in factored.items():
            for name, value in parts.items():
                self.state[param][name] = _array_like_param(value, param)

    def _params_by_index(self, state_dict: dict[str, Any]) -> dict | None:
        """The parameters by their state-dict index, or None where the groups do not fit."""
        groups = state_dict.get("param_groups")
        if groups is None or len(groups) != len(self.param_groups):
            return None
        param_of = {}
        for saved, group in zip(groups, self.param_groups):
            if len(saved["params"]) != len(group["params"]):
                return None
            for index, param in zip(saved["params"], group["params"]):
                param_of[int(index)] = param
        return param_of


def _rms(xp, array) -> float:
    """The root mean square of ``array``'s elements, as a Python float."""
    return float(xp.sqrt(xp.sum(array * array))) / array.size**0.5


def _check_eps(eps) -> tuple[float | None, float]:
    """Validate ``eps = (eps1 or None, eps2)``."""
    if not isinstance(eps, (tuple, list)) or len(eps) != 2:
        raise OptimizerError(
            f"Adafactor: eps must be a pair (eps1, eps2), got {eps!r}",
            help="e.g. eps=(None, 1e-3); eps1=None takes the machine epsilon of each "
            "parameter's dtype",
        )
    eps1, eps2 = eps
    if eps1 is not None:
        check_hyperparameter("Adafactor", "eps1", eps1)
    check_hyperparameter("Adafactor", "eps2", eps2)
    return (eps1, eps2)


def _check_factored(index, parts: dict, shape: tuple) -> None:
    """Refuse saved ``row_var`` / ``col_var`` that are not the factors of a ``shape``
    parameter."""
    expected = {}
    if len(shape) > 1:
        expected = {"row_var": shape[:-1] + (1,), "col_var": shape[:-2] + (1,) + shape[-1:]}
    for name, value in parts.items():
        found = tuple(getattr(value, "shape", ()))
        if expected.get(name) != found:
            wanted = expected.get(name, "no such state for a parameter of under two dimensions")
            raise OptimizerError(
                f"Adafactor: state '{name}' of parameter {index} has shape {found}, but a "
                f"parameter of shape {shape} needs {wanted}",
                help="load optimizer state saved from the same model, with its parameters in "
                "the same order",
            )
