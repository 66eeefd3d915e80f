"""Symbolic sizes: ``coefficient * product(symbols) + offset``.

Freezing traces the call three times with different sample sizes for the symbolic dimensions.
An integer that differs between the traces (a reshape target, a slice bound, an intermediate
shape) is fitted by the simplest such expression that reproduces all three traces; the third
trace verifies the fit, so a size computed some other way (``n // 2``, ``n * n`` with an offset)
is reported instead of being guessed.
"""

from __future__ import annotations

import itertools
import math


class DimExpr:
    """An integer that depends on the symbolic sizes: ``coefficient * prod(symbols) + offset``."""

    __slots__ = ("symbols", "coefficient", "offset")

    def __init__(self, symbols: tuple, coefficient: int = 1, offset: int = 0) -> None:
        self.symbols = tuple(sorted(symbols))
        self.coefficient, self.offset = coefficient, offset

    def evaluate(self, sizes: dict) -> int:
        product = 1
        for symbol in self.symbols:
            product *= sizes[symbol]
        return self.coefficient * product + self.offset

    def _key(self):
        return (self.symbols, self.coefficient, self.offset)

    def __eq__(self, other) -> bool:
        return isinstance(other, DimExpr) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        text = "*".join(self.symbols)
        if self.coefficient != 1:
            text = f"{self.coefficient}*{text}"
        if self.offset:
            text += f"{'+' if self.offset > 0 else '-'}{abs(self.offset)}"
        return text


def fit(values: list, samples: list, symbols: list) -> DimExpr | None:
    """The simplest ``DimExpr`` whose value under ``samples[k]`` is ``values[k]`` for every trace,
    or None when none fits. Products of up to three symbols are tried, fewest first."""
    for count in range(1, min(3, len(symbols)) + 1):
        for chosen in itertools.combinations(symbols, count):
            products = [math.prod(sample[s] for s in chosen) for sample in samples]
            if products[1] == products[0]:
                continue
            coefficient, remainder = divmod(values[1] - values[0], products[1] - products[0])
            if remainder or coefficient == 0:
                continue
            offset = values[0] - coefficient * products[0]
            if all(coefficient * p + offset == v for p, v in zip(products, values)):
                return DimExpr(chosen, coefficient, offset)
    return None


def resolve(value, sizes: dict):
    """``value`` (an attribute: ints, tuples, lists, slices, dicts) with every ``DimExpr``
    replaced by its integer under ``sizes``."""
    if isinstance(value, DimExpr):
        return value.evaluate(sizes)
    if isinstance(value, tuple):
        return tuple(resolve(v, sizes) for v in value)
    if isinstance(value, list):
        return [resolve(v, sizes) for v in value]
    if isinstance(value, slice):
        return slice(
            resolve(value.start, sizes), resolve(value.stop, sizes), resolve(value.step, sizes)
        )
    if isinstance(value, dict):
        return {k: resolve(v, sizes) for k, v in value.items()}
    return value


def is_symbolic(value) -> bool:
    """Whether ``value`` holds a ``DimExpr`` anywhere."""
    if isinstance(value, DimExpr):
        return True
    if isinstance(value, (tuple, list)):
        return any(is_symbolic(v) for v in value)
    if isinstance(value, slice):
        return any(is_symbolic(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, dict):
        return any(is_symbolic(v) for v in value.values())
    return False


def show_dim(extent) -> str:
    return str(extent)


def show_shape(shape: tuple) -> str:
    inner = ", ".join(show_dim(d) for d in shape)
    return f"({inner}{',' if len(shape) == 1 else ''})"
