"""Abstract values: what an op's output will be without computing it.

Every op record answers ``infer(*specs, **attrs)`` with the ``ValueSpec`` of its output (shape,
dtype, device) from the specs of its inputs, and ``cost(*specs, **attrs)`` with its FLOPs and
bytes moved. Sizes may be symbolic: a ``DimExpr`` such as ``batch`` or ``2*batch*seq`` stands
for a size known only when the graph runs. Tools that must not run an op (``parallel()``'s lazy
tensors, freeze's symbolic shapes, graph summaries, constant folding, profilers) read these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError


class SymbolicSizeError(ShapeError):
    """A size computed from symbolic sizes in a way ``DimExpr`` cannot express."""


class DimExpr:
    """An integer that depends on symbolic sizes: ``coefficient * prod(symbols) + offset``.

    Arithmetic with ints and other ``DimExpr`` stays symbolic where the result keeps that form
    (``b * 4``, ``b * s``, ``b + 1``, ``(4 * b) // 2``); anything else raises
    ``SymbolicSizeError``, so a size is never guessed.
    """

    __slots__ = ("symbols", "coefficient", "offset")

    def __init__(self, symbols: tuple, coefficient: int = 1, offset: int = 0) -> None:
        self.symbols = tuple(sorted(symbols))
        self.coefficient, self.offset = coefficient, offset

    def evaluate(self, sizes: dict) -> int:
        """The integer this size takes when each symbol has the size ``sizes[symbol]``."""
        product = 1
        for symbol in self.symbols:
            product *= sizes[symbol]
        return self.coefficient * product + self.offset

    # ----- arithmetic that stays in the form c * prod(symbols) + k -------------------------------
    def __add__(self, other):
        if isinstance(other, int):
            return simplify(DimExpr(self.symbols, self.coefficient, self.offset + other))
        if isinstance(other, DimExpr) and other.symbols == self.symbols:
            return simplify(
                DimExpr(
                    self.symbols, self.coefficient + other.coefficient, self.offset + other.offset
                )
            )
        return _unsupported("+", self, other)

    __radd__ = __add__

    def __neg__(self):
        return DimExpr(self.symbols, -self.coefficient, -self.offset)

    def __sub__(self, other):
        if isinstance(other, (int, DimExpr)):
            return self + (-other)
        return _unsupported("-", self, other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, int):
            return simplify(DimExpr(self.symbols, self.coefficient * other, self.offset * other))
        if isinstance(other, DimExpr) and self.offset == 0 and other.offset == 0:
            return DimExpr(self.symbols + other.symbols, self.coefficient * other.coefficient)
        return _unsupported("*", self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, int) and other != 0:
            if self.coefficient % other == 0 and self.offset % other == 0:
                return DimExpr(self.symbols, self.coefficient // other, self.offset // other)
        elif isinstance(other, DimExpr) and self.offset == 0 and other.offset == 0:
            remaining = list(self.symbols)
            for symbol in other.symbols:
                if symbol not in remaining:
                    return _unsupported("//", self, other)
                remaining.remove(symbol)
            if self.coefficient % other.coefficient == 0:
                return simplify(DimExpr(tuple(remaining), self.coefficient // other.coefficient))
        return _unsupported("//", self, other)

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


def simplify(size):
    """A ``DimExpr`` without symbols (or with coefficient 0) as the int it is."""
    if isinstance(size, DimExpr) and (not size.symbols or size.coefficient == 0):
        return size.offset if size.coefficient == 0 else size.coefficient + size.offset
    return size


def _unsupported(symbol: str, left, right):
    raise SymbolicSizeError(
        f"cannot express {left!r} {symbol} {right!r} as c * product(symbols) + k",
        help="compute the size from one symbolic dimension at a time, or fix the size in the "
        "TensorSpec",
    )


Size = int | DimExpr


@dataclass(frozen=True)
class ValueSpec:
    """The abstract value of a tensor: ``shape`` (ints and ``DimExpr``), ``dtype``, ``device``.

    Op records take and return these in ``infer`` and ``cost``. Non-tensor inputs (Python
    scalars, None) are passed to ``infer`` as themselves.
    """

    shape: tuple
    dtype: np.dtype
    device: str = "cpu"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Size:
        return prod(self.shape)

    @property
    def nbytes(self) -> Size:
        return self.numel * self.dtype.itemsize

    def with_shape(self, shape: tuple) -> ValueSpec:
        return ValueSpec(tuple(shape), self.dtype, self.device)

    def with_dtype(self, dtype) -> ValueSpec:
        return ValueSpec(self.shape, np.dtype(dtype), self.device)

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        comma = "," if len(self.shape) == 1 else ""
        return f"ValueSpec(({dims}{comma}), {self.dtype}, {self.device})"


def spec_of(value) -> ValueSpec | object:
    """The ``ValueSpec`` of an array or Tensor (anything with ``shape`` and ``dtype``); other
    values (Python scalars, None) unchanged."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return value
    if type(value).__module__.startswith("cupy"):
        device = f"cuda:{value.device.id}"
    else:
        device = str(getattr(value, "device", "cpu"))  # a Tensor's Device, or NumPy's "cpu"
    return ValueSpec(tuple(shape), np.dtype(value.dtype), device)


def is_spec(value) -> bool:
    return isinstance(value, ValueSpec)


def prod(shape) -> Size:
    """The product of sizes, symbolic where any is."""
    result = 1
    for extent in shape:
        result = extent * result if isinstance(extent, DimExpr) else result * extent
    return simplify(result)


def concrete(size: Size, unit: int = 1) -> int:
    """``size`` as an int, each symbol taken as ``unit`` (for estimates such as FLOP counts)."""
    if isinstance(size, (DimExpr, SizeSum)):
        return sum(c * unit ** len(symbols) for symbols, c in SizeSum.of(size).terms.items())
    return int(size)


def broadcast_shapes(*shapes: tuple) -> tuple:
    """NumPy's broadcast of ``shapes``, with symbolic sizes: a symbol meets 1 or itself.

    Raises ShapeError when two sizes can neither match nor broadcast.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        size: Size = 1
        for shape in shapes:
            offset = axis - (ndim - len(shape))
            if offset < 0:
                continue
            extent = shape[offset]
            if extent == 1 or extent == size:
                continue
            if size == 1:
                size = extent
            else:
                raise ShapeError(
                    f"shapes {', '.join(map(_show, shapes))} cannot be broadcast together",
                    help="each dimension must match or be 1; reshape or unsqueeze an input",
                )
        out.append(size)
    return tuple(out)


def _show(shape) -> str:
    inner = ", ".join(str(d) for d in shape)
    return f"({inner}{',' if len(shape) == 1 else ''})"


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, an int or a sequence; negatives count from the end) as sorted positive
    axes; None means every axis."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else a for a in axis))


def reduced_shape(shape: tuple, axis, keepdims: bool) -> tuple:
    """The shape left after reducing ``shape`` over ``axis``."""
    axes = set(normalize_axes(axis, len(shape)))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class SizeSum:
    """A sum of symbolic sizes with different symbols (``4*m + 4*m*n``): what a count of bytes
    or FLOPs over several inputs comes to. It totals and evaluates; it is never a dimension."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict) -> None:
        self.terms = {symbols: c for symbols, c in terms.items() if c}  # symbols -> coefficient

    @staticmethod
    def of(size) -> SizeSum:
        if isinstance(size, SizeSum):
            return size
        if isinstance(size, DimExpr):
            return SizeSum({size.symbols: size.coefficient, (): size.offset})
        return SizeSum({(): int(size)})

    def __add__(self, other) -> SizeSum:
        terms = dict(self.terms)
        for symbols, coefficient in SizeSum.of(other).terms.items():
            terms[symbols] = terms.get(symbols, 0) + coefficient
        return SizeSum(terms)

    __radd__ = __add__

    def __mul__(self, factor: int) -> SizeSum:
        if not isinstance(factor, int):
            return _unsupported("*", self, factor)
        return SizeSum({symbols: c * factor for symbols, c in self.terms.items()})

    __rmul__ = __mul__

    def evaluate(self, sizes: dict) -> int:
        return sum(c * math.prod(sizes[s] for s in symbols) for symbols, c in self.terms.items())

    def __eq__(self, other) -> bool:
        return isinstance(other, (SizeSum, DimExpr, int)) and self.terms == SizeSum.of(other).terms

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.terms.items())))

    def __repr__(self) -> str:
        parts = [
            "*".join(((str(c),) if c != 1 or not symbols else ()) + symbols)
            for symbols, c in sorted(self.terms.items(), key=lambda item: len(item[0]))
        ]
        return " + ".join(parts) or "0"


def total(sizes) -> Size | SizeSum:
    """The sum of ``sizes``: an int or ``DimExpr`` where it can be, else a ``SizeSum``."""
    result = SizeSum({})
    for size in sizes:
        result = result + size
    terms = result.terms
    symbolic = [symbols for symbols in terms if symbols]
    if not symbolic:
        return terms.get((), 0)
    if len(symbolic) == 1:
        return simplify(DimExpr(symbolic[0], terms[symbolic[0]], terms.get((), 0)))
    return result


def bytes_of(*values) -> Size | SizeSum:
    """Bytes held by the ``ValueSpec`` s among ``values`` (scalars count nothing)."""
    return total(value.nbytes for value in values if isinstance(value, ValueSpec))


def memory_cost(inputs: tuple, outputs, flops_per_element: int = 1) -> tuple:
    """``(flops, bytes_read, bytes_written)`` of an op that reads every input once, writes
    every output once and spends ``flops_per_element`` per output element."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    elements = total(o.numel for o in outputs)
    return (elements * flops_per_element, bytes_of(*inputs), bytes_of(*outputs))


__all__ = [
    "DimExpr",
    "SizeSum",
    "SymbolicSizeError",
    "ValueSpec",
    "broadcast_shapes",
    "bytes_of",
    "concrete",
    "memory_cost",
    "normalize_axes",
    "prod",
    "reduced_shape",
    "simplify",
    "spec_of",
    "total",
]
