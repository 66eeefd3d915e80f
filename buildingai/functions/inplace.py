"""In-place ops (``add_``, ``sub_``, ``mul_``, ``div_``, ``zero_``, ``fill_``, ``clamp_``,
``copy_``, and the shape-changing ``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``), guarded
by version counters.

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

import numpy as np

from ..accel.vector_blas import MIN_SIZE as BLAS_MIN_SIZE
from ..accel.vector_blas import add_scaled
from ..autograd import dispatch
from ..autograd.mode import grad_mode
from ..autograd.tensor import Tensor, bump_version
from ..backend.device import array_namespace
from ..errors import AutogradError, DTypeError, ShapeError
from .creation import zeros
from .elementwise import where
from .shape import squeeze, swapaxes, unsqueeze


def _data(value):
    return value.array if isinstance(value, Tensor) else value


def _records(x: Tensor, others: tuple) -> bool:
    if not grad_mode.enabled:
        return False
    return x.requires_grad or any(isinstance(v, Tensor) and v.requires_grad for v in others)


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


def _in_place(
    x: Tensor, name: str, others: tuple, compute, modify, reads_previous: bool = False
) -> Tensor:
    """Modify ``x`` in place.

    ``modify(array)`` writes into ``x.array`` directly: the path when nothing records or observes.
    Otherwise ``compute(previous)`` builds the out-of-place result through dispatch (so the graph
    and any dispatch mode see it) and ``x`` adopts its value and, when recording, its history.
    ``reads_previous`` says whether the result's backward reads the previous value, which then
    needs a copy of its own.
    """
    recording = _records(x, others)
    if not recording and not dispatch.active_modes():
        try:
            modify(x.array)
        except TypeError as exc:  # NumPy refuses to write e.g. float results into an int array
            raise _cast_error(name, x, exc) from exc
        bump_version(x, name)
        return x

    if recording:
        _refuse_unsafe(x, name)
    for observer in dispatch.active_modes():
        observer.before_inplace(name, x)
    previous = Tensor(x.array.copy() if recording and reads_previous else x.array)
    if recording:
        previous._node, previous.requires_grad = x._node, x.requires_grad
    result = compute(previous)
    if tuple(result.shape) != tuple(x.shape):
        raise ShapeError(
            f"[{name}] the result has shape {tuple(result.shape)} but the tensor modified in place "
            f"has shape {tuple(x.shape)}",
            help="in-place ops cannot change a tensor's shape; use the out-of-place form",
        )
    try:
        array_namespace(x.array).copyto(x.array, result.array, casting="same_kind")
    except TypeError as exc:
        raise _cast_error(name, x, exc) from exc
    bump_version(x, name)
    if recording:
        node = result._node
        x._node = node
        x.requires_grad = result.requires_grad
        if node is not None and node.out_data is not None:
            node.out_data = result.array
            node.out_version, node.out_version_at = x._version, x._version[0]  # (bumped above)
    for observer in dispatch.active_modes():
        observer.after_inplace(name, x, result)
    return x


def updated_by_accel(x: Tensor, name: str, others: tuple, scalar, update) -> bool:
    """Whether ``update(x's array, the others' arrays, scalar)``, a kernel of acceleration's
    that returns False where it does not take the call, wrote the in-place update ``name`` of
    ``x``: tried only where nothing records or watches the update, ``others`` are Tensors of
    x's shape and ``scalar`` is a number. The version counter then moves as for any in-place
    op; False leaves ``x`` as it was, for the op's own path."""
    if type(scalar) not in (int, float):
        return False
    for other in others:
        if not isinstance(other, Tensor) or other.shape != x.shape:
            return False
    if _records(x, others) or dispatch.active_modes():
        return False
    if not update(x.array, tuple(other.array for other in others), scalar):
        return False
    bump_version(x, name)
    return True


def _scaled_in_blas(x: Tensor, other, alpha, name: str) -> bool:
    """``x += alpha * other`` as one pass of acceleration's BLAS binding (``add_scaled``), the
    commonest hand-written update (``p.data.add_(p.grad, alpha=-lr)``); below the binding's
    size, False before any other test (they would cost what they could save)."""
    if x.array.size < BLAS_MIN_SIZE:
        return False
    return updated_by_accel(x, name, (other,), alpha, _add_scaled)


def _add_scaled(array, others: tuple, alpha) -> bool:
    return add_scaled(array_namespace(array), alpha, others[0], array)


def _check_keeps_shape(x: Tensor, name: str, forms: tuple[str, str], *others) -> None:
    """Refuse an operand that would broadcast ``x`` larger: an in-place op keeps ``x``'s shape
    (PyTorch: "output with shape [3] doesn't match the broadcast shape [2, 3]"). ``forms`` are
    the in-place and out-of-place spellings, for the message."""
    in_place, out_of_place = forms
    shape = tuple(x.shape)
    for other in others:
        other_shape = getattr(other, "shape", None)
        if other_shape is None or len(other_shape) == 0:
            continue
        other_shape = tuple(other_shape)
        if other_shape == shape:
            continue
        try:
            result = np.broadcast_shapes(shape, other_shape)
        except ValueError:
            raise ShapeError(
                f"[{name}] {in_place}: shapes {shape} and {other_shape} do not broadcast",
                help="sizes must match or be 1, aligned from the last dimension",
            ) from None
        if result != shape:
            raise ShapeError(
                f"[{name}] {in_place}: the tensor modified in place has shape {shape}, but "
                f"broadcasting it with {other_shape} gives {result}; an in-place op cannot "
                "change its tensor's shape",
                help=f"use the out-of-place form, {out_of_place} (shape {result}), or give an "
                f"operand that broadcasts to {shape}",
            )


def _cast_error(name: str, x: Tensor, exc: Exception) -> DTypeError:
    return DTypeError(
        f"[{name}] cannot write the result into the {x.dtype} tensor in place: {exc}",
        help="convert first (e.g. x = x.astype('float32')) or use the out-of-place form",
    )


def _keep_none_of(previous: Tensor, value, shape: tuple) -> Tensor:
    """``value`` in ``previous``'s shape and dtype, as a function of ``previous`` with a zero
    gradient (the graph of ``fill_``/``copy_``; ``previous * 0`` would turn inf into nan).
    ``shape`` is the modified tensor's: while freezing, it reads in symbolic sizes."""
    # a factory, not a NumPy array, so that a frozen call keeps the shape symbolic
    keep_nothing = zeros(shape, dtype="bool", device=previous.device)
    if isinstance(value, Tensor):
        value = value.expand(shape).astype(previous.dtype)
    return where(keep_nothing, previous, value)


def add_(x: Tensor, other, alpha=1) -> Tensor:
    """``x += alpha * other`` in place."""
    _check_keeps_shape(x, "add_", ("x += other", "x = x + other"), other)
    if alpha != 1 and _scaled_in_blas(x, other, alpha, "add_"):
        return x
    xp = array_namespace(x.array)
    return _in_place(
        x,
        "add_",
        (other,),
        lambda prev: prev + (other if alpha == 1 else other * alpha),
        lambda a: xp.add(a, _scaled_data(other, alpha), out=a, casting="same_kind"),
    )


def sub_(x: Tensor, other, alpha=1) -> Tensor:
    """``x -= alpha * other`` in place."""
    _check_keeps_shape(x, "sub_", ("x -= other", "x = x - other"), other)
    if alpha != 1 and _scaled_in_blas(x, other, -alpha, "sub_"):
        return x
    xp = array_namespace(x.array)
    return _in_place(
        x,
        "sub_",
        (other,),
        lambda prev: prev - (other if alpha == 1 else other * alpha),
        lambda a: xp.subtract(a, _scaled_data(other, alpha), out=a, casting="same_kind"),
    )


def _scaled_data(value, alpha):
    """``value``'s data times ``alpha``, for the array path of ``add_``/``sub_`` (no op to
    dispatch): a NumPy scalar ``alpha`` is taken as a Python number, weakly typed, as dispatch
    takes it, so that a float32 tensor stays float32."""
    data = _data(value)
    if alpha == 1:
        return data
    if isinstance(alpha, np.generic):
        alpha = alpha.item()
    return data * alpha


def mul_(x: Tensor, other) -> Tensor:
    """``x *= other`` in place."""
    _check_keeps_shape(x, "mul_", ("x *= other", "x = x * other"), other)
    xp = array_namespace(x.array)
    return _in_place(
        x,
        "mul_",
        (other,),
        lambda prev: prev * other,
        lambda a: xp.multiply(a, _data(other), out=a, casting="same_kind"),
        reads_previous=True,
    )


def div_(x: Tensor, other) -> Tensor:
    """``x /= other`` in place."""
    _check_keeps_shape(x, "div_", ("x /= other", "x = x / other"), other)
    xp = array_namespace(x.array)
    return _in_place(
        x,
        "div_",
        (other,),
        lambda prev: prev / other,
        lambda a: xp.true_divide(a, _data(other), out=a, casting="same_kind"),
        reads_previous=True,
    )


def fill_(x: Tensor, value) -> Tensor:
    """Set every element to ``value`` (a number or a one-element tensor)."""
    return _fill(x, value, "fill_")


def zero_(x: Tensor) -> Tensor:
    """Set every element to zero."""
    return _fill(x, 0, "zero_")


def _fill(x: Tensor, value, name: str) -> Tensor:
    if isinstance(value, Tensor):
        value = value.reshape(())
    return _in_place(
        x,
        name,
        (value,),
        lambda prev: _keep_none_of(prev, value, x.shape),
        lambda a: a.fill(value.item() if isinstance(value, Tensor) else value),
    )


def copy_(x: Tensor, source) -> Tensor:
    """Copy ``source`` (broadcast to ``x``'s shape, cast to its dtype) into ``x``."""
    xp = array_namespace(x.array)
    value = source if isinstance(source, Tensor) else Tensor(xp.asarray(source))
    return _in_place(
        x,
        "copy_",
        (value,),
        lambda prev: _keep_none_of(prev, value, x.shape),
        lambda a: xp.copyto(a, value.array, casting="unsafe"),
    )


def clamp_(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """Limit every element to ``[min, max]`` in place."""
    from .elementwise import clamp

    _check_keeps_shape(x, "clamp_", ("x.clamp_(min, max)", "x = x.clamp(min, max)"), min, max)
    xp = array_namespace(x.array)
    return _in_place(
        x,
        "clamp_",
        (min, max),
        lambda prev: clamp(prev, min, max),
        lambda a: xp.clip(a, _data(min), _data(max), out=a),
        reads_previous=True,
    )


def _reshaped_in_place(x: Tensor, name: str, compute) -> Tensor:
    """``x`` takes the shape of ``compute(x)``, a view of the same memory: its values stay, so
    a view may change shape (its base is untouched), but a leaf that requires grad may not while
    gradients are recorded, as in PyTorch. When recording, ``x`` takes the view's node."""
    recording = _records(x, ())
    if recording and x._node is None and x.requires_grad:
        raise AutogradError(
            f"[{name}] a leaf tensor that requires grad cannot change its shape in place while "
            "gradients are recorded",
            help="use the out-of-place form, or change it inside `with buildingai.no_grad():`",
        )
    for observer in dispatch.active_modes():
        observer.before_inplace(name, x)
    previous = Tensor(x.array)
    if recording:
        previous._node, previous.requires_grad = x._node, x.requires_grad
    result = compute(previous)
    x.array = result.array
    bump_version(x, name)
    if recording:
        x._node, x.requires_grad = result._node, result.requires_grad
    for observer in dispatch.active_modes():
        observer.after_inplace(name, x, result)
    return x


def squeeze_(x: Tensor, dim=None) -> Tensor:
    """Drop size-1 dimensions (all, or those in ``dim``) of ``x`` itself; returns ``x``.
    x: (*) -> (*) without those dimensions."""
    return _reshaped_in_place(x, "squeeze_", lambda previous: squeeze(previous, dim))


def unsqueeze_(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim`` of ``x`` itself; returns ``x``.
    x: (*) -> (*) with one more dimension."""
    return _reshaped_in_place(x, "unsqueeze_", lambda previous: unsqueeze(previous, dim))


def transpose_(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dimensions ``dim0`` and ``dim1`` of ``x`` itself; returns ``x``.
    x: (..., a, ..., b, ...) -> (..., b, ..., a, ...)."""
    return _reshaped_in_place(x, "transpose_", lambda previous: swapaxes(previous, dim0, dim1))


def t_(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions in place; returns ``x``. x: (a, b) -> (b, a)."""
    # the method, not triangle.t: triangle's module imports this one
    return _reshaped_in_place(x, "t_", lambda previous: previous.t())


__all__: list[str] = []  # in-place ops are Tensor methods only, as in PyTorch

TENSOR_METHODS = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "fill_": fill_, "zero_": zero_,
    "copy_": copy_, "clamp_": clamp_, "clip_": clamp_,
    "__iadd__": add_, "__isub__": sub_, "__imul__": mul_, "__itruediv__": div_,
    "squeeze_": squeeze_, "unsqueeze_": unsqueeze_, "t_": t_, "transpose_": transpose_,
    "swapaxes_": transpose_, "swapdims_": transpose_,
}  # fmt: skip
