"""Rprop: resilient backpropagation, per-coordinate step sizes driven by the sign of the
gradient alone (Riedmiller & Braun, 1993)."""

from __future__ import annotations

from collections.abc import Iterable

from ..backend import array_namespace
from .loop_options import step_options
from .optimizer import OptimizerBase, OptimizerError, check_hyperparameter


class Rprop(OptimizerBase):
    """Rprop (PyTorch's ``torch.optim.Rprop``: same arguments, same math).

    Each coordinate keeps its own step size, starting at ``lr``: it grows by ``etas[1]`` while
    the gradient keeps its sign, shrinks by ``etas[0]`` when the sign flips, and stays within
    ``step_sizes = (min, max)``. A coordinate whose sign flipped does not move that step, and its
    gradient is remembered as 0, so the next step neither grows nor shrinks it. ``lr`` is read
    once, when a parameter's state is created. State per parameter: ``step`` (an int), ``prev``
    (the previous gradient, zeroed where the sign flipped) and ``step_size``: arrays of the
    parameter's shape and dtype.

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
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameter("Rprop", "lr", lr)
        etas = _check_pair("etas", etas, "e.g. etas=(0.5, 1.2)")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise OptimizerError(
                f"Rprop: invalid etas {etas!r}; they must satisfy 0 < etas[0] < 1 < etas[1]",
                help="etas[0] shrinks the step after a sign flip, etas[1] grows it, e.g. "
                "etas=(0.5, 1.2)",
            )
        step_sizes = _check_pair("step_sizes", step_sizes, "e.g. step_sizes=(1e-6, 50)")
        defaults = dict(
            lr=lr,
            etas=etas,
            step_sizes=step_sizes,
            foreach=foreach,
            maximize=maximize,
        )
        defaults.update(step_options("Rprop", differentiable, capturable))
        super().__init__(params, defaults)

    def init_state(self, param, group) -> dict:
        xp = array_namespace(param.array)
        return {
            "step": 0,
            "prev": xp.zeros_like(param.array),
            "step_size": xp.full_like(param.array, group["lr"]),
        }

    def update(self, param, grad, state, group) -> None:
        """One Rprop step on ``param`` (an array, in place): Riedmiller & Braun (1993), the
        variant without weight backtracking.

        s = sign(±grad * prev)
        step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0),
                          step_size_min, step_size_max)
        g = 0 where s < 0, else ±grad
        param -= sign(g) * step_size;  prev = g
        """
        xp = array_namespace(param)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        prev, step_size = state["prev"], state["step_size"]
        sign = xp.sign(grad * prev)
        flipped = sign < 0
        # a NaN sign stays NaN (and so does its step size), as in PyTorch
        factor = xp.where(
            sign > 0, etaplus, xp.where(flipped, etaminus, xp.where(sign == 0, 1, sign))
        )
        step_size[...] = xp.clip(step_size * factor, step_size_min, step_size_max)
        grad = xp.where(flipped, 0, grad)  # a new array: the caller's gradient stays as it is
        param -= xp.sign(grad) * step_size
        prev[...] = grad


def _check_pair(name: str, value, example: str) -> tuple[float, float]:
    """Validate a pair of numbers (``etas``, ``step_sizes``) and return it as a tuple."""
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise OptimizerError(
            f"Rprop: {name} must be a pair of numbers, got {value!r}", help=example
        )
    return (value[0], value[1])
