"""``Gradients``: what ``grad`` returns, a tuple of gradients that adds and scales as one value.

Meta-learning sums gradients over tasks and averages them before one optimizer step::

    meta_grad = 0
    for task in meta_batch:
        meta_grad += buildingai.grad(task_loss, model.parameters())
    optimizer.apply_gradients(meta_grad / len(meta_batch))

Arithmetic works entry by entry with Tensor ops, so gradients that carry a graph
(``create_graph=True``) stay differentiable. ``None`` (an unused input) acts as zero.
"""

from __future__ import annotations

import numbers

from ..errors import ArgumentError
from .tensor import Tensor


class Gradients(tuple):
    """One gradient (a Tensor, or None for an input the outputs do not use) per input of
    ``grad``. Index, iterate, unpack and ``len`` as a tuple; ``a + b`` and ``a - b`` add two
    ``Gradients`` of the same length entry by entry, ``0 + a`` is ``a`` (so ``sum`` and
    ``total = 0; total += a`` work), and ``a * k``, ``k * a``, ``a / k``, ``-a`` scale by a
    number."""

    __slots__ = ()

    def __add__(self, other) -> Gradients:
        if _is_zero(other):
            return self
        return Gradients(_add(a, b) for a, b in zip(self, self._matching(other, "+")))

    def __radd__(self, other) -> Gradients:
        if _is_zero(other):
            return self
        return Gradients(_add(b, a) for a, b in zip(self, self._matching(other, "+")))

    def __sub__(self, other) -> Gradients:
        if _is_zero(other):
            return self
        return self + (-Gradients(self._matching(other, "-")))

    def __rsub__(self, other) -> Gradients:
        if _is_zero(other):
            return -self
        return Gradients(self._matching(other, "-")) - self

    def __neg__(self) -> Gradients:
        return Gradients(None if g is None else -g for g in self)

    def __mul__(self, factor) -> Gradients:
        _check_number(factor, "*")
        return Gradients(None if g is None else g * factor for g in self)

    __rmul__ = __mul__

    def __truediv__(self, divisor) -> Gradients:
        _check_number(divisor, "/")
        return Gradients(None if g is None else g / divisor for g in self)

    def _matching(self, other, symbol: str) -> tuple:
        """``other`` as a sequence of gradients as long as this one, or a clear error."""
        if not isinstance(other, (tuple, list)):
            raise ArgumentError(
                f"[Gradients {symbol}] cannot combine gradients with {type(other).__name__}",
                help="add or subtract another Gradients (or 0); scale with * or / by a number",
            )
        if len(other) != len(self):
            raise ArgumentError(
                f"[Gradients {symbol}] the two sides have {len(self)} and {len(other)} gradients",
                help="both must come from grad() over the same list of inputs",
            )
        return tuple(other)

    def __repr__(self) -> str:
        return "Gradients(" + ", ".join(_describe(g) for g in self) + ")"


def _add(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _is_zero(value) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool) and value == 0


def _check_number(value, symbol: str) -> None:
    if not isinstance(value, numbers.Number) or isinstance(value, bool):
        raise ArgumentError(
            f"[Gradients {symbol}] scales by a number, got {type(value).__name__}",
            help="write grads * 0.5 or grads / len(batch); combine two Gradients with +",
        )


def _describe(gradient: Tensor | None) -> str:
    if gradient is None:
        return "None"
    return f"Tensor(shape={tuple(gradient.shape)}, dtype={gradient.dtype})"
