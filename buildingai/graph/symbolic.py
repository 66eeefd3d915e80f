"""Symbolic sizes while freezing: ``DimExpr`` (from ``ops.abstract``) and the symbolic int.

Freezing traces the call once, each symbolic dimension of the input signature taking a sample
size. Python code in the traced call sees ``x.shape`` entries that are ``SymbolicInt`` s: ints
with the sample value that also carry their ``DimExpr``. Arithmetic keeps the expression where
``c * product(symbols) + k`` can express the result (``n - 1``, ``2 * n``, ``b * s``); otherwise
the result is a ``DerivedInt`` / ``DerivedFloat`` (the sample value, marked with where it was
computed), which freeze refuses if it reaches an op. Comparisons are answered when every
positive size gives the same answer (``n > 0``, ``n + 1 != n``); otherwise one in user code is
refused, since a static graph cannot hold a Python branch on a size, and one in BuildingAI's own
argument checks takes the sample's answer (the op records' ``infer`` checks every shape anyway).
"""

from __future__ import annotations

import numbers
import operator
import os
import sys
import threading
import traceback

from ..ops.abstract import DimExpr, SymbolicSizeError, simplify


class _Tracing(threading.local):
    """Whether this thread is tracing: outside a trace a symbolic int that escaped it (kept in
    a cache or a module attribute) compares as the plain int it is."""

    active = False


tracing = _Tracing()

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def where() -> str:
    """' at file:line (code)' of the innermost frame outside this package, if any."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f" at {frame.filename}:{frame.lineno} ({frame.line})"
    return ""


def _refuse(description: str):
    raise SymbolicSizeError(
        f"[freeze] the traced call compares sizes that depend on the symbolic dimensions "
        f"({description}){where()}: a static graph cannot branch on a symbolic size",
        help="make the dimension fixed in the input signature, or express the choice with "
        "tensor ops",
    )


class SymbolicInt(int):
    """An int (the sample size) that also carries the ``DimExpr`` it stands for."""

    def __new__(cls, value: int, expression: DimExpr):
        number = super().__new__(cls, value)
        number.expression = expression
        return number

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    # ----- arithmetic: symbolic where expressible, derived where not ---------------------------
    def __add__(self, other):
        return _combine(self, other, operator.add, "+")

    def __radd__(self, other):
        return _combine(other, self, operator.add, "+")

    def __sub__(self, other):
        return _combine(self, other, operator.sub, "-")

    def __rsub__(self, other):
        return _combine(other, self, operator.sub, "-")

    def __mul__(self, other):
        return _combine(self, other, operator.mul, "*")

    def __rmul__(self, other):
        return _combine(other, self, operator.mul, "*")

    def __floordiv__(self, other):
        return _combine(self, other, operator.floordiv, "//")

    def __rfloordiv__(self, other):
        return _combine(other, self, operator.floordiv, "//")

    def __neg__(self):
        return symbolic_int(-int(self), -self.expression)

    def __pos__(self):
        return self

    def __abs__(self):
        return _derived(abs(int(self)), f"abs({self.expression!r})")

    # ----- comparisons: answered only when every positive size agrees ------------------------
    def __eq__(self, other):
        return _compare(self, other, "==")

    def __ne__(self, other):
        return _compare(self, other, "!=")

    def __lt__(self, other):
        return _compare(self, other, "<")

    def __le__(self, other):
        return _compare(self, other, "<=")

    def __gt__(self, other):
        return _compare(self, other, ">")

    def __ge__(self, other):
        return _compare(self, other, ">=")

    __hash__ = int.__hash__


class _Derived:
    """Mixin of a number computed from symbolic sizes in a way ``DimExpr`` cannot express: it
    behaves as its sample value and remembers ``origin`` (the expression and where)."""

    origin: str

    def __repr__(self) -> str:
        return self._plain().__repr__()

    def __str__(self) -> str:
        return self._plain().__str__()

    def _plain(self):
        return int(self) if isinstance(self, int) else float(self)

    def __eq__(self, other):
        return _compare(self, other, "==")

    def __ne__(self, other):
        return _compare(self, other, "!=")

    def __lt__(self, other):
        return _compare(self, other, "<")

    def __le__(self, other):
        return _compare(self, other, "<=")

    def __gt__(self, other):
        return _compare(self, other, ">")

    def __ge__(self, other):
        return _compare(self, other, ">=")

    def __hash__(self):
        return hash(self._plain())


class DerivedInt(_Derived, int):
    """An int computed from symbolic sizes that no ``DimExpr`` expresses (``n // 2``, ``n % 3``)."""


class DerivedFloat(_Derived, float):
    """A float computed from symbolic sizes (``1 / n``)."""


def _arithmetic(symbol: str, function):
    def forward(self, other):
        if not _is_number(other):
            return NotImplemented  # a Tensor: its reflected method records the op
        return _derived(function(self._plain(), plain(other)), f"({self.origin}) {symbol} {other}")

    def backward(self, other):
        if not _is_number(other):
            return NotImplemented
        return _derived(function(plain(other), self._plain()), f"{other} {symbol} ({self.origin})")

    return forward, backward


_OPERATORS = {
    "add": ("+", operator.add),
    "sub": ("-", operator.sub),
    "mul": ("*", operator.mul),
    "truediv": ("/", operator.truediv),
    "floordiv": ("//", operator.floordiv),
    "mod": ("%", operator.mod),
    "pow": ("**", operator.pow),
}
for _name, (_symbol, _function) in _OPERATORS.items():
    _forward, _backward = _arithmetic(_symbol, _function)
    for _class in (DerivedInt, DerivedFloat):
        setattr(_class, f"__{_name}__", _forward)
        setattr(_class, f"__r{_name}__", _backward)
    if _name in ("truediv", "mod", "pow"):  # never expressible: the result of a symbolic size
        setattr(SymbolicInt, f"__{_name}__", _forward)
        setattr(SymbolicInt, f"__r{_name}__", _backward)
for _class in (DerivedInt, DerivedFloat):
    _class.__neg__ = lambda self: _derived(-self._plain(), f"-({self.origin})")
    _class.__abs__ = lambda self: _derived(abs(self._plain()), f"abs({self.origin})")
SymbolicInt._plain = lambda self: int(self)
SymbolicInt.origin = property(lambda self: repr(self.expression))


def _derived(value, origin: str):
    """``value`` marked as computed from symbolic sizes (``origin`` says how)."""
    if isinstance(value, bool):
        return value
    number = DerivedInt(value) if isinstance(value, int) else DerivedFloat(value)
    number.origin = origin + where()
    return number


def expression_of(value):
    """The ``DimExpr`` (or int) a number stands for; None for a ``Derived`` number or a
    non-integer."""
    if isinstance(value, SymbolicInt):
        return value.expression
    if isinstance(value, _Derived):
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return None


def plain(value):
    """``value`` as a plain Python number (its sample value for symbolic and derived ones)."""
    if isinstance(value, (SymbolicInt, _Derived)):
        return value._plain()
    return value


def symbolic_int(value: int, expression) -> int:
    """``value`` carrying ``expression``; a plain int when the expression has no symbols."""
    expression = simplify(expression)
    if isinstance(expression, DimExpr):
        return SymbolicInt(value, expression)
    return int(value)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Number) and not hasattr(value, "shape")


def _combine(left, right, function, symbol: str):
    if not (_is_number(left) and _is_number(right)):
        return NotImplemented  # a Tensor: its reflected method records the op
    value = function(plain(left), plain(right))
    if isinstance(left, _Derived) or isinstance(right, _Derived):
        return _derived(value, f"{left} {symbol} {right}")
    a, b = expression_of(left), expression_of(right)
    if a is None or b is None:  # a float, or something else that is not a size
        return _derived(value, f"{_show(left)} {symbol} {_show(right)}")
    try:
        expression = function(a, b)
    except SymbolicSizeError:
        return _derived(value, f"{_show(left)} {symbol} {_show(right)}")
    return symbolic_int(value, expression)


def _show(value) -> str:
    return repr(value.expression) if isinstance(value, SymbolicInt) else repr(plain(value))


def _compare(left, right, symbol: str) -> bool:
    a, b = expression_of(left), expression_of(right)
    if a is None or b is None:
        if not _is_number(right) or isinstance(right, bool):
            return NotImplemented  # compared with a non-number: let Python decide (False for ==)
        if not tracing.active or _from_library():
            return _COMPARE[symbol](plain(left), plain(right))
        return _refuse(f"{_origin(left)} {symbol} {_origin(right)}")
    answer = decide(a, b, symbol)
    if answer is None:
        if not tracing.active or _from_library():
            return _COMPARE[symbol](plain(left), plain(right))
        return _refuse(f"{_show(left)} {symbol} {_show(right)}")
    return answer


def _from_library() -> bool:
    """Whether the comparison being answered was written in BuildingAI's own code: argument
    checks there take the sample's answer (the op records' infer still checks every shape);
    user code may not branch on a symbolic size."""
    try:
        caller = sys._getframe(3)  # _from_library <- _compare <- __eq__ & co. <- the caller
    except ValueError:  # compared from the top of the stack (a dict lookup made by C code)
        return False
    return caller.f_globals.get("__name__", "").startswith("buildingai.")


def _origin(value) -> str:
    if isinstance(value, _Derived):
        return f"({value.origin})"
    return _show(value)


_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def decide(a, b, symbol: str) -> bool | None:
    """The answer of ``a <symbol> b`` (ints or ``DimExpr``) if it is the same for every size of
    at least 1 each symbol may take, else None. Different symbols are taken to be different
    sizes, so ``batch == seq`` is False."""
    compare = _COMPARE[symbol]
    if not isinstance(a, DimExpr) and not isinstance(b, DimExpr):
        return compare(a, b)
    if isinstance(a, DimExpr) and isinstance(b, DimExpr) and a.symbols != b.symbols:
        if symbol in ("==", "!="):
            return symbol == "!="
        return None
    try:
        difference = simplify(a - b)
    except SymbolicSizeError:
        return None
    if not isinstance(difference, DimExpr):
        return compare(difference, 0)
    # difference = c * product(symbols) + k with each symbol >= 1: it ranges over
    # [c + k, infinity) when c > 0 and (-infinity, c + k] when c < 0
    bound = difference.coefficient + difference.offset
    if difference.coefficient > 0:
        low, high = bound, None
    else:
        low, high = None, bound
    if symbol == "==":
        return False if (low is not None and low > 0) or (high is not None and high < 0) else None
    if symbol == "!=":
        return True if (low is not None and low > 0) or (high is not None and high < 0) else None
    if symbol in (">", ">="):
        strict = symbol == ">"
        if low is not None and (low > 0 or (not strict and low >= 0)):
            return True
        if high is not None and (high < 0 or (strict and high <= 0)):
            return False
        return None
    strict = symbol == "<"
    if high is not None and (high < 0 or (not strict and high <= 0)):
        return True
    if low is not None and (low > 0 or (strict and low >= 0)):
        return False
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


__all__ = [
    "DerivedFloat",
    "DerivedInt",
    "DimExpr",
    "SymbolicInt",
    "decide",
    "expression_of",
    "is_symbolic",
    "plain",
    "resolve",
    "show_shape",
    "symbolic_int",
]
