"""``apply``: the only door through which computation happens.

It unwraps Tensors to backend arrays, runs the op's check and forward, wraps the output, records
the graph node when a gradient is needed, and tells the active interceptors. Interceptors
(tracers, profilers, anomaly detectors, activation statistics...) are pushed by the scoped
``intercept`` context manager and cost one truth test when none is active.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..backend import device as _device
from ..errors import BuildingAIError
from ..ops.base import install_dispatcher
from .mode import grad_mode
from .node import Node
from .tensor import Tensor

_interceptors: list = []
# A function (op, inputs, attrs) -> Tensor | None that may take an op over instead of running
# it now: `graph.parallel()` records ops this way and runs independent branches concurrently.
_deferral = None
# Names of the modules being called, innermost last; nn pushes them so errors can say where.
module_path: list[str] = []


class Interceptor:
    """An observer of every op. Subclasses override ``before_op`` and/or ``after_op``."""

    def before_op(self, op, inputs: tuple, attrs: dict) -> None:
        """Called before the op runs (inputs are Tensors or Python scalars)."""

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        """Called with the op's output Tensor."""

    def after_inplace(self, name: str, target: Tensor, result: Tensor | None) -> None:
        """Called after an in-place op (``add_``, ``setitem``...) changed ``target``. ``result``
        is the out-of-place value it adopted (already reported to ``after_op``), or None when
        the change was not computed by an op (``setitem``)."""


def set_deferral(function):
    """Install ``function(op, inputs, attrs) -> Tensor | None`` in front of every op (None
    uninstalls it); returns the previous one so that scopes can nest."""
    global _deferral
    previous, _deferral = _deferral, function
    return previous


@contextlib.contextmanager
def intercept(observer: Interceptor):
    """``with intercept(observer): ...`` shows every op run inside the block to ``observer``."""
    _interceptors.append(observer)
    try:
        yield observer
    finally:
        _interceptors.remove(observer)


def apply(op, *inputs, **attrs) -> Tensor:
    """Run ``op`` on ``inputs`` (Tensors or Python scalars) and return the output Tensor."""
    if _deferral is not None:
        deferred = _deferral(op, inputs, attrs)
        if deferred is not None:
            return deferred
    arrays = []
    needs_grad = False
    for value in inputs:
        if isinstance(value, Tensor):
            arrays.append(value.data)
            if value.requires_grad:
                needs_grad = True
        elif isinstance(value, np.generic):
            # a NumPy scalar acts like a Python scalar (weakly typed), as in PyTorch:
            # float32_tensor * np.float64(2) stays float32
            arrays.append(value.item())
        else:
            arrays.append(value)

    if _interceptors:
        for observer in _interceptors:
            observer.before_op(op, inputs, attrs)

    if needs_grad and grad_mode.enabled and op.differentiable:
        recording = True
        ctx = Node(op, inputs, attrs)
    else:
        # A forward may store values for backward on its context; only a recorded call keeps
        # them. Unrecorded calls share one scratch context, emptied after any forward wrote
        # to it (forwards write there and never read back, so sharing is safe across threads).
        recording = False
        ctx = _SCRATCH
    xp = np if _device._cupy is None else _namespace_of(arrays)
    check = op.check
    try:
        if attrs:
            if check is not None:
                check(*arrays, **attrs)
            data = op.forward(ctx, xp, *arrays, **attrs)
        else:  # calling without **{} saves about 25 ns a call, twice per op
            if check is not None:
                check(*arrays)
            data = op.forward(ctx, xp, *arrays)
    except BuildingAIError as error:
        raise _with_module_path(error) from None
    except (ValueError, TypeError, IndexError) as exc:
        raise _with_module_path(op.describe_failure(exc, arrays, attrs)) from exc
    if not recording and _SCRATCH.__dict__:
        _SCRATCH.__dict__.clear()  # drop what the forward kept: nobody will read it
    if type(data) is not np.ndarray:  # NumPy returns scalars from some 0-d computations
        data = xp.asarray(data)

    out = Tensor.__new__(Tensor)  # the fields of Tensor.__init__, without its input checks
    out.data = data
    out.grad = out._node = out._base = out._hooks = None
    out.requires_grad = False
    if op.view:
        source = inputs[0]
        out._version = source._version
        out._base = source if source._base is None else source._base
    else:
        out._version = [0, None]

    if recording and data.dtype.kind in "fV":
        _record(op, ctx, inputs, out)

    if _interceptors:
        for observer in _interceptors:
            observer.after_op(op, inputs, out, attrs)
    return out


def apply_binary(op, a, b) -> Tensor:
    """``apply(op, a, b)``, with a short path for the commonest calls of all: Tensors, Python
    numbers or NumPy scalars, on the CPU, with no interceptor, deferral, ``check`` or view.

    It saves the general path's input loop and branches: about 0.4 us of the 2 us that a 16x16
    ``a + b`` took, recorded or not (benchmarks/dispatch.py). Anything else, and any failure
    (which the general path then explains), goes through ``apply``.
    """
    if _deferral is not None or _interceptors or _device._cupy is not None or op.check is not None:
        return apply(op, a, b)
    needs_grad = False
    kind = type(a)
    if kind is Tensor:
        needs_grad = a.requires_grad
        left = a.data
    elif kind is float or kind is int:
        left = a
    elif isinstance(a, np.generic):  # weakly typed like a Python scalar, as in apply
        left = a.item()
    else:
        return apply(op, a, b)
    kind = type(b)
    if kind is Tensor:
        needs_grad = needs_grad or b.requires_grad
        right = b.data
    elif kind is float or kind is int:
        right = b
    elif isinstance(b, np.generic):
        right = b.item()
    else:
        return apply(op, a, b)
    recording = needs_grad and grad_mode.enabled and op.differentiable
    ctx = Node(op, (a, b), {}) if recording else _SCRATCH
    try:
        data = op.forward(ctx, np, left, right)
    except Exception:
        return apply(op, a, b)  # runs it again, and raises an error that names the op
    if type(data) is not np.ndarray or op.view:
        return apply(op, a, b)
    if not recording and _SCRATCH.__dict__:
        _SCRATCH.__dict__.clear()
    out = Tensor.__new__(Tensor)  # as in apply: the fields of Tensor.__init__
    out.data = data
    out.grad = out._node = out._base = out._hooks = None
    out.requires_grad = False
    out._version = [0, None]
    if recording and data.dtype.kind in "fV":
        _record(op, ctx, (a, b), out)
    return out


def _record(op, ctx, inputs, out: Tensor) -> None:
    """Make ``out`` the output of the recorded node ``ctx``, and note the versions of what its
    backward will read (the inputs and/or the output), so that an in-place change is caught."""
    out.requires_grad = True
    out._node = ctx
    if op.save_inputs:
        ctx.input_versions = [
            value._version[0] if isinstance(value, Tensor) else None for value in inputs
        ]
    if op.save_output:
        ctx.out_data = out.data
        ctx.out_version = out._version
        ctx.out_version_at = out._version[0]


class _Scratch:
    """The context of an unrecorded call: forward may write to it; nothing reads it later."""


_SCRATCH = _Scratch()


install_dispatcher(apply)


def _namespace_of(arrays: list):
    for array in arrays:
        if hasattr(array, "__array_namespace__") or hasattr(array, "shape"):
            return _device.array_namespace(array)
    return np


def _with_module_path(error: BuildingAIError) -> BuildingAIError:
    if module_path and error.where is None:
        error.where = ".".join(module_path)
    return error
