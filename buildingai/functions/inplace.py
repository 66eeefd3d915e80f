"""In-place ops (``add_``, ``sub_``, ``mul_``, ``div_``, ``zero_``, ``fill_``, ``clamp_``,
``copy_``), guarded by version counters.

Every in-place op bumps the tensor's version counter (shared with its views). The backward engine
compares the versions of the tensors a node saved with the versions recorded when the node was
made, and raises an error naming both ops on a mismatch: a modified tensor never yields a silently
wrong gradient.

When the graph is being recorded and the tensor is part of it, the op is recorded like its
out-of-place form: the tensor takes the new node as its history, and the node reads the tensor's
previous value through a private alias (a copy when the op's backward needs that value).
Modifying a leaf that requires grad is refused unless recording is off (``no_grad``), which is how
optimizers update parameters.
"""

from __future__ import annotations

from ..autograd.mode import grad_mode
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import AutogradError, ShapeError


def _data(value):
    return value.data if isinstance(value, Tensor) else value


def _records(x: Tensor, others: tuple) -> bool:
    if not grad_mode.enabled:
        return False
    return x.requires_grad or any(isinstance(v, Tensor) and v.requires_grad for v in others)


def _bump(x: Tensor, name: str) -> None:
    version = x._version
    version[0] += 1
    version[1] = name


def _refuse_unsafe(x: Tensor, name: str) -> None:
    if x._node is None and x.requires_grad:
        raise AutogradError(
            f"[{name}] a leaf tensor that requires grad cannot be modified in place while "
            "gradients are recorded",
            help="update parameters inside `with buildingai.no_grad():`, or use the out-of-place "
            "form",
        )
    base = x._base
    if base is not None and base.requires_grad:
        raise AutogradError(
            f"[{name}] this tensor is a view of another tensor that requires grad; modifying it "
            "in place would change the other tensor behind the graph's back",
            help="use the out-of-place form, or clone() the view before modifying it",
        )


def _in_place(x: Tensor, name: str, others: tuple, compute, modify) -> Tensor:
    """Run ``modify(array)`` on ``x.data`` directly, or, when recording, ``compute(previous)``
    (the out-of-place result) and adopt its value and history."""
    if not _records(x, others):
        modify(x.data)
        _bump(x, name)
        return x

    _refuse_unsafe(x, name)
    previous = Tensor(x.data.copy())  # the value before the op, for the new node to read
    previous._node, previous.requires_grad = x._node, x.requires_grad
    result = compute(previous)
    if tuple(result.shape) != tuple(x.shape):
        raise ShapeError(
            f"[{name}] the result has shape {tuple(result.shape)} but the tensor modified in place "
            f"has shape {tuple(x.shape)}",
            help="in-place ops cannot change a tensor's shape; use the out-of-place form",
        )
    array_namespace(x.data).copyto(x.data, result.data, casting="same_kind")
    _bump(x, name)
    node = result._node
    x._node = node
    x.requires_grad = result.requires_grad
    if node is not None and node.out_data is not None:
        node.out_data = x.data.copy() if result.data is x.data else result.data
        node.out_version, node.out_version_at = x._version, x._version[0]
    return x


def add_(x: Tensor, other, alpha=1) -> Tensor:
    """``x += alpha * other`` in place."""
    if alpha != 1:
        other = other * alpha
    xp = array_namespace(x.data)
    return _in_place(x, "add_", (other,), lambda prev: prev + other,
                     lambda a: xp.add(a, _data(other), out=a, casting="same_kind"))


def sub_(x: Tensor, other, alpha=1) -> Tensor:
    """``x -= alpha * other`` in place."""
    if alpha != 1:
        other = other * alpha
    xp = array_namespace(x.data)
    return _in_place(x, "sub_", (other,), lambda prev: prev - other,
                     lambda a: xp.subtract(a, _data(other), out=a, casting="same_kind"))


def mul_(x: Tensor, other) -> Tensor:
    """``x *= other`` in place."""
    xp = array_namespace(x.data)
    return _in_place(x, "mul_", (other,), lambda prev: prev * other,
                     lambda a: xp.multiply(a, _data(other), out=a, casting="same_kind"))


def div_(x: Tensor, other) -> Tensor:
    """``x /= other`` in place."""
    xp = array_namespace(x.data)
    return _in_place(x, "div_", (other,), lambda prev: prev / other,
                     lambda a: xp.true_divide(a, _data(other), out=a, casting="same_kind"))


def fill_(x: Tensor, value) -> Tensor:
    """Set every element to ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        return copy_(x, value.reshape(()))

    def compute(prev):
        return Tensor(array_namespace(x.data).full(x.shape, value, dtype=x.dtype))

    return _in_place(x, "fill_", (), compute, lambda a: a.fill(value))


def zero_(x: Tensor) -> Tensor:
    """Set every element to zero."""
    return fill_(x, 0)


def copy_(x: Tensor, source) -> Tensor:
    """Copy ``source`` (broadcast to ``x``'s shape, cast to its dtype) into ``x``."""
    xp = array_namespace(x.data)

    def compute(prev):
        value = source if isinstance(source, Tensor) else Tensor(xp.asarray(source))
        return value.expand(x.shape).astype(x.dtype) * 1

    return _in_place(x, "copy_", (source,), compute,
                     lambda a: xp.copyto(a, _data(source), casting="unsafe"))


def clamp_(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """Limit every element to ``[min, max]`` in place."""
    from .elementwise import clamp

    xp = array_namespace(x.data)
    return _in_place(x, "clamp_", (min, max), lambda prev: clamp(prev, min, max),
                     lambda a: xp.clip(a, _data(min), _data(max), out=a))


__all__: list[str] = []  # in-place ops are Tensor methods only, as in PyTorch

TENSOR_METHODS = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "fill_": fill_, "zero_": zero_,
    "copy_": copy_, "clamp_": clamp_, "clip_": clamp_,
    "__iadd__": add_, "__isub__": sub_, "__imul__": mul_, "__itruediv__": div_,
}  # fmt: skip
