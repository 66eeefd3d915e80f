"""Shape contracts: named-dimension annotations checked at run time.

A contract says how tensors flow through a function::

    class Encoder(nn.Module):
        @shapes("x: [batch, seq, dim], mask: [batch, seq] -> [batch, dim]")
        def forward(self, x, mask):
            ...

Each name (``batch``, ``seq``, ``dim``) binds to a size on its first use within one call and must
keep that size everywhere else in the call: in the other arguments, in the outputs, and in any
``check_shape(tensor, "batch dim")`` written inside the function. A dimension is one of:

- a name: binds on first use, e.g. ``batch``;
- an integer: that exact size, e.g. ``[batch, 3, 32, 32]``;
- ``_``: any size, not bound;
- ``...``: any number of dimensions (zero or more), not bound; at most one per shape;
- ``*name``: any number of dimensions, bound as a group (``[*lead, dim] -> [*lead, dim]``).

Several outputs are written as a tuple, ``-> ([batch, dim], [batch])``; ``[]`` is a scalar. An
argument that is None (an optional mask) is not checked.

Checks are off by default and then cost one flag test per call: the decorated function is called
straight through. Turn them on for the whole process with ``enable_shape_checks(True)`` (or the
environment variable ``BUILDINGAI_CHECK_SHAPES=1`` at import), or for a block with
``with shape_checks(): ...``. A violation raises ``ShapeError`` naming the function, the module
path, the argument, the dimension, both sizes and where the name was bound::

    [shapes] Encoder.forward (in Model.encoder): argument 'mask' dim 'seq' is 12 but was bound
    to 10 by argument 'x' (dim 1)
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..autograd.state import module_path
from ..errors import BuildingAIError, ShapeError, dimensions

__all__ = [
    "ShapeContractError",
    "ShapeSpecError",
    "check_shape",
    "enable_shape_checks",
    "shape_checks",
    "shape_checks_enabled",
    "shapes",
]

# The process-wide switch. Set only by the user (enable_shape_checks, shape_checks, or the
# environment variable), read once per decorated call.
_enabled: bool = os.environ.get("BUILDINGAI_CHECK_SHAPES", "").strip().lower() in (
    "1",
    "true",
    "yes",
    "on",
)

# The scopes of the checked calls in progress, innermost last: check_shape binds into the top one.
_scopes: list[_Scope] = []


class ShapeContractError(ShapeError):
    """A tensor that breaks a shape contract. The message already names the module path (right
    after the function), so ``where`` is kept for programs but not printed a second time."""

    def __str__(self) -> str:
        text = self.message
        if self.help:
            text += f"\n  help: {self.help}"
        return text


class ShapeSpecError(BuildingAIError, ValueError):
    """A contract string that cannot be read, or that names an argument the function lacks."""


# ----- switching ------------------------------------------------------------------------------


def enable_shape_checks(enabled: bool = True) -> None:
    """Turn shape-contract checking on (or off) for the whole process."""
    global _enabled
    _enabled = bool(enabled)


def shape_checks_enabled() -> bool:
    """Whether shape contracts are checked right now."""
    return _enabled


@contextlib.contextmanager
def shape_checks(enabled: bool = True) -> Iterator[None]:
    """``with shape_checks(): ...`` checks contracts inside the block only (``enabled=False``
    turns them off inside it); the previous setting returns on exit."""
    global _enabled
    previous = _enabled
    _enabled = bool(enabled)
    try:
        yield
    finally:
        _enabled = previous


# ----- parsed contracts -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Dim:
    """One dimension of a pattern. kind: 'name', 'int', 'any' (``_``), 'ellipsis' (``...``) or
    'group' (``*name``)."""

    kind: str
    value: Any = None

    def __str__(self) -> str:
        if self.kind == "any":
            return "_"
        if self.kind == "ellipsis":
            return "..."
        if self.kind == "group":
            return f"*{self.value}"
        return str(self.value)


@dataclass(frozen=True)
class _Pattern:
    """A parsed shape such as ``[batch, 3, ...]``: the dimensions before and after the variadic
    part (if any), and the variadic part itself."""

    dims: tuple[_Dim, ...]
    head: tuple[_Dim, ...]
    variadic: _Dim | None
    tail: tuple[_Dim, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(str(dim) for dim in self.dims) + "]"


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*$")


def _parse_dim(token: str, text: str) -> _Dim:
    if token == "_":
        return _Dim("any")
    if token == "...":
        return _Dim("ellipsis")
    if token.startswith("*") and _NAME.match(token[1:]):
        return _Dim("group", token[1:])
    if token.isdigit():
        return _Dim("int", int(token))
    if _NAME.match(token):
        return _Dim("name", token)
    raise ShapeSpecError(
        f"[shapes] cannot read the dimension {token!r} in {text!r}",
        help="a dimension is a name (batch), an integer (3), '_' (any size), '...' (any number "
        "of dimensions) or '*name' (a named group of dimensions)",
    )


def _make_pattern(tokens: list[str], text: str) -> _Pattern:
    dims = tuple(_parse_dim(token, text) for token in tokens)
    variadic = [i for i, dim in enumerate(dims) if dim.kind in ("ellipsis", "group")]
    if len(variadic) > 1:
        raise ShapeSpecError(
            f"[shapes] {text!r} has {len(variadic)} variadic parts ('...' or '*name'); at most "
            "one is allowed per shape",
            help="name the dimensions between them, or use '_' for a single unchecked one",
        )
    if variadic:
        split = variadic[0]
        return _Pattern(dims, dims[:split], dims[split], dims[split + 1 :])
    return _Pattern(dims, dims, None, ())


def _parse_bracketed(text: str, whole: str) -> _Pattern:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ShapeSpecError(
            f"[shapes] expected a shape in brackets such as [batch, dim], got {text!r} in {whole!r}"
        )
    inner = text[1:-1].strip()
    tokens = [token.strip() for token in inner.split(",")] if inner else []
    if any(token == "" for token in tokens):
        raise ShapeSpecError(f"[shapes] empty dimension in {text!r} (in {whole!r})")
    return _make_pattern(tokens, text)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for position, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _parse_contract(spec: str) -> tuple[list[tuple[str, _Pattern]], list[_Pattern] | None, bool]:
    """``(inputs, outputs, several_outputs)`` from ``"x: [b, d], m: [b] -> ([b, d], [b])"``.
    ``outputs`` is None when the contract says nothing about them."""
    if not isinstance(spec, str):
        raise ShapeSpecError(
            f"[shapes] the contract must be a string, got {type(spec).__name__}",
            help='write it as @shapes("x: [batch, dim] -> [batch, out]")',
        )
    if spec.count("->") > 1:
        raise ShapeSpecError(f"[shapes] {spec!r} has more than one '->'")
    inputs_text, arrow, outputs_text = spec.partition("->")
    inputs = []
    for part in _split_top_level(inputs_text):
        name, colon, shape_text = part.partition(":")
        name = name.strip()
        if not colon or not _NAME.match(name):
            raise ShapeSpecError(
                f"[shapes] cannot read the argument {part!r} in {spec!r}",
                help="write each argument as 'name: [dim, ...]', separated by commas",
            )
        if any(name == seen for seen, _ in inputs):
            raise ShapeSpecError(f"[shapes] argument '{name}' appears twice in {spec!r}")
        inputs.append((name, _parse_bracketed(shape_text, spec)))
    if not arrow:
        return inputs, None, False
    outputs_text = outputs_text.strip()
    if outputs_text.startswith("(") and outputs_text.endswith(")"):
        parts = _split_top_level(outputs_text[1:-1])
        return inputs, [_parse_bracketed(part, spec) for part in parts], True
    return inputs, [_parse_bracketed(outputs_text, spec)], False


# ----- checking ---------------------------------------------------------------------------------


class _Scope:
    """The bindings of one call: name -> (size, or tuple of sizes for a group; the subject and
    the dims that bound it). The description is formatted only when an error needs it."""

    __slots__ = ("bindings", "function")

    def __init__(self, function: str) -> None:
        self.bindings: dict[str, tuple[Any, str, str | int]] = {}
        self.function = function


def _dims_label(start: int, stop: int) -> str:
    if stop - start == 1:
        return f"dim {start}"
    if stop == start:
        return "no dims"
    return f"dims {start}-{stop - 1}"


def _bound_by(bound: tuple) -> str:
    _, subject, dims = bound
    return f"{subject} ({'dim ' + str(dims) if isinstance(dims, int) else dims})"


def _fail(scope: _Scope, detail: str, help: str | None = None) -> ShapeContractError:
    where = ".".join(module_path()) or None
    located = scope.function + (f" (in {where})" if where else "")
    error = ShapeContractError(f"[shapes] {located}: {detail}", help=help)
    error.where = where
    return error


def _check(scope: _Scope, value: Any, pattern: _Pattern, subject: str) -> None:
    """Check one tensor against ``pattern``, binding new names into ``scope``."""
    shape = getattr(value, "shape", None)
    if shape is None:
        raise _fail(
            scope,
            f"{subject} is of type {type(value).__name__}, not a tensor; the contract "
            f"expects {pattern}",
            help="pass a Tensor (or an array), or remove it from the contract",
        )
    shape = tuple(shape)
    rank, fixed = len(shape), len(pattern.head) + len(pattern.tail)
    if (pattern.variadic is None and rank != fixed) or rank < fixed:
        needs = f"at least {fixed}" if pattern.variadic is not None else str(fixed)
        raise _fail(
            scope,
            f"{subject} has {dimensions(rank)} but the contract {pattern} needs {needs} "
            f"(shape {shape})",
            help="check the layout of the input (a missing batch dimension? unsqueeze(0))",
        )
    tail_start = rank - len(pattern.tail)
    placed = list(enumerate(pattern.head)) + [
        (tail_start + i, dim) for i, dim in enumerate(pattern.tail)
    ]
    bindings = scope.bindings
    for axis, dim in placed:
        size = shape[axis]
        if dim.kind == "name":
            bound = bindings.get(dim.value)
            if bound is None:
                bindings[dim.value] = (size, subject, axis)
            elif bound[0] != size:
                raise _fail(
                    scope,
                    f"{subject} dim '{dim.value}' is {size} but was bound to {bound[0]} by "
                    f"{_bound_by(bound)}; {subject} has shape {shape}, expected {pattern}",
                    help=f"'{dim.value}' must have one size throughout the call",
                )
        elif dim.kind == "int" and size != dim.value:
            raise _fail(
                scope,
                f"{subject} dim {axis} is {size} but the contract requires {dim.value} "
                f"(shape {shape}, expected {pattern})",
            )
    if pattern.variadic is not None and pattern.variadic.kind == "group":
        name = pattern.variadic.value
        sizes = shape[len(pattern.head) : tail_start]
        bound = bindings.get(name)
        if bound is None:
            bindings[name] = (sizes, subject, _dims_label(len(pattern.head), tail_start))
        elif bound[0] != sizes:
            raise _fail(
                scope,
                f"{subject} dims '*{name}' are {sizes} but were bound to {bound[0]} by "
                f"{_bound_by(bound)}; {subject} has shape {shape}, expected {pattern}",
                help=f"'*{name}' must be the same dimensions throughout the call",
            )


def _check_outputs(scope: _Scope, result: Any, outputs: list[_Pattern], several: bool) -> None:
    if not several:
        _check(scope, result, outputs[0], "the output")
        return
    if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
        count = len(result) if isinstance(result, (tuple, list)) else 1
        listed = ", ".join(str(pattern) for pattern in outputs)
        raise _fail(
            scope,
            f"returned {count} value(s) but the contract lists {len(outputs)} outputs ({listed})",
        )
    for position, (value, pattern) in enumerate(zip(result, outputs)):
        if value is not None:
            _check(scope, value, pattern, f"output {position}")


# ----- public face ------------------------------------------------------------------------------


def shapes(spec: str) -> Callable[[Callable], Callable]:
    """Decorate a function (usually a module's ``forward``) with a shape contract.

    ``spec`` is ``"arg: [dims], arg: [dims] -> [dims]"`` (see the module docstring for the
    dimension forms); the output part is optional, and several outputs are a tuple of shapes.
    The contract is read when the function is decorated, so a malformed one fails at import.
    When checks are off the function is called straight through.
    """
    inputs, outputs, several = _parse_contract(spec)

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        parameters = list(signature.parameters.values())
        # Where to find each checked argument: its position (if it can be passed positionally),
        # its name (if it can be passed by keyword) and its default.
        lookups = []
        for name, pattern in inputs:
            if name not in signature.parameters:
                raise ShapeSpecError(
                    f"[shapes] the contract {spec!r} names argument '{name}', but "
                    f"{fn.__qualname__} has no such parameter (it has "
                    f"{', '.join(p.name for p in parameters) or 'none'})",
                    help="use the parameter names of the decorated function",
                )
            parameter = signature.parameters[name]
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise ShapeSpecError(
                    f"[shapes] '{name}' collects several arguments (*{name} or **{name}); a "
                    "contract checks single tensors",
                    help="check them inside the function with check_shape",
                )
            positional = parameter.kind in (
                parameter.POSITIONAL_ONLY,
                parameter.POSITIONAL_OR_KEYWORD,
            )
            position = parameters.index(parameter) if positional else None
            keyword = parameter.kind != parameter.POSITIONAL_ONLY
            default = None if parameter.default is parameter.empty else parameter.default
            lookups.append((name, pattern, position, keyword, default))
        is_method = bool(parameters) and parameters[0].name == "self"

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            if not _enabled:
                return fn(*args, **kwargs)
            owner = f"{type(args[0]).__name__}.{fn.__name__}" if is_method and args else None
            scope = _Scope(owner or fn.__qualname__)
            for name, pattern, position, keyword, default in lookups:
                if position is not None and position < len(args):
                    value = args[position]
                elif keyword and name in kwargs:
                    value = kwargs[name]
                else:
                    value = default
                if value is not None:
                    _check(scope, value, pattern, f"argument '{name}'")
            _scopes.append(scope)
            try:
                result = fn(*args, **kwargs)
            finally:
                _scopes.pop()
            if outputs is not None:
                _check_outputs(scope, result, outputs, several)
            return result

        checked.__shape_contract__ = spec
        return checked

    return decorate


def check_shape(tensor: Any, spec: str, name: str = "tensor") -> Any:
    """Check ``tensor`` against ``spec`` and return it unchanged, so it can wrap an expression.

    ``spec`` lists the dimensions separated by spaces or commas, optionally in brackets:
    ``"batch seq dim"``, ``"[batch, 3, ...]"``. Inside a checked call of a decorated function the
    names bind in that call's scope (``batch`` must agree with the arguments); elsewhere each
    ``check_shape`` has a fresh scope, so only the rank, the literal sizes and repeated names
    within this one spec are checked. ``name`` says which tensor it is in the error message.

    Like the ``@shapes`` contracts it checks only while shape checks are on (off by default:
    ``enable_shape_checks(True)``, ``with shape_checks():`` or ``BUILDINGAI_CHECK_SHAPES=1``),
    so it costs one flag test in production.
    """
    if not _enabled:
        return tensor
    if not isinstance(spec, str):
        raise ShapeSpecError(
            f"[shapes] the shape spec must be a string, got {type(spec).__name__}",
            help='write it as check_shape(x, "batch seq dim")',
        )
    pattern = _inline_pattern(spec)
    scope = _scopes[-1] if _scopes else _Scope("check_shape")
    _check(scope, tensor, pattern, f"tensor '{name}'")
    return tensor


@functools.lru_cache(maxsize=512)
def _inline_pattern(spec: str) -> _Pattern:
    """The pattern of a ``check_shape`` spec, parsed once per distinct string."""
    text = spec.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    tokens = [token for token in re.split(r"[\s,]+", text) if token]
    return _make_pattern(tokens, spec)
