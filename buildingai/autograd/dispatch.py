"""``apply``: the only door through which computation happens.

It unwraps Tensors to backend arrays, runs the op's check and forward, wraps the output, records
the graph node when a gradient is needed, and tells the active interceptors. Interceptors
(tracers, profilers, anomaly detectors, activation statistics...) are pushed by the scoped
``intercept`` context manager and cost one truth test when none is active.

Everything dispatch reads besides its arguments (grad mode, interceptors, the deferral hook, the
module path) belongs to the calling thread (``state.py``): threads that train, serve or run
``parallel()`` branches never see each other's modes.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..accel.registry import run_accelerated
from ..backend import device as _device
from ..backend.accounting import record as _count_memory
from ..backend.accounting import record_saved as _count_saved
from ..errors import BuildingAIError
from ..ops.base import install_dispatcher
from .node import Node
from .state import MODULE_CALLS, STATE
from .tensor import Tensor

_current_state = STATE.get


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
    """Install ``function(op, inputs, attrs) -> Tensor | None`` in front of every op run on this
    thread (None uninstalls it); returns the previous one so that scopes can nest."""
    state = _current_state()
    STATE.set(state.replace(deferral=function))
    return state.deferral


@contextlib.contextmanager
def intercept(observer: Interceptor):
    """``with intercept(observer): ...`` shows every op run inside the block (on this thread,
    and in the ``parallel()`` branches it starts) to ``observer``."""
    state = _current_state()
    token = STATE.set(state.replace(interceptors=state.interceptors + (observer,)))
    try:
        yield observer
    finally:
        STATE.reset(token)


def active_interceptors() -> tuple:
    """The interceptors observing ops on this thread, outermost first."""
    return _current_state().interceptors


def current_module_path() -> str:
    """The dotted path of the module being called on this thread (``""`` outside any)."""
    return ".".join(MODULE_CALLS.stacks[1])


def __getattr__(name: str):
    # `dispatch.module_path` and `dispatch._interceptors` read as before, for this thread
    if name == "module_path":
        return list(MODULE_CALLS.stacks[1])
    if name == "_interceptors":
        return list(_current_state().interceptors)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def apply(op, *inputs, **attrs) -> Tensor:
    """Run ``op`` on ``inputs`` (Tensors or Python scalars) and return the output Tensor."""
    state = _current_state()
    if state.deferral is not None:
        deferred = state.deferral(op, inputs, attrs)
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

    interceptors = state.interceptors
    if interceptors:
        for observer in interceptors:
            observer.before_op(op, inputs, attrs)

    node = None
    if needs_grad and state.grad_enabled and op.differentiable:
        ctx = node = Node(op, inputs, attrs)
    else:
        ctx = _SCRATCH
    xp = np if _device._cupy is None else _namespace_of(arrays)
    check = op.check
    try:
        if op.accelerated:  # a faster kernel registered in buildingai.accel may take the call
            if check is not None:
                check(*arrays, **attrs)
            data = run_accelerated(op, ctx, xp, arrays, attrs)
        elif attrs:
            if check is not None:
                check(*arrays, **attrs)
            data = op.forward(ctx, xp, *arrays, **attrs)
        else:  # calling without **{} is cheaper, and this runs twice per op
            if check is not None:
                check(*arrays)
            data = op.forward(ctx, xp, *arrays)
    except BuildingAIError as error:
        raise _with_module_path(error) from None
    except (ValueError, TypeError, IndexError) as exc:
        raise _with_module_path(op.describe_failure(exc, arrays, attrs)) from exc
    if type(data) is not np.ndarray:  # NumPy returns scalars from some 0-d computations
        data = xp.asarray(data)

    out = output_tensor(op, data, inputs[0] if inputs else None, node)
    if interceptors:
        for observer in interceptors:
            observer.after_op(op, inputs, out, attrs)
    return out


def apply_binary(op, a, b) -> Tensor:
    """``apply(op, a, b)``, with a short path for the commonest calls of all: Tensors, Python
    numbers or NumPy scalars, on the CPU, with no interceptor, deferral or ``check``.

    It saves the general path's input loop and branches (benchmarks/dispatch.py). Anything else,
    and any failure (which the general path then explains), goes through ``apply``, so
    interceptors see the same ops whichever path runs.
    """
    state = _current_state()
    if state.observed or _device._cupy is not None or op.check is not None or op.accelerated:
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
    node = None
    if needs_grad and state.grad_enabled and op.differentiable:
        ctx = node = Node(op, (a, b), {})
    else:
        ctx = _SCRATCH
    try:
        data = op.forward(ctx, np, left, right)
    except Exception:
        return apply(op, a, b)  # runs it again, and raises an error that names the op
    if type(data) is not np.ndarray:
        return apply(op, a, b)
    return output_tensor(op, data, a, node)


def output_tensor(op, data, source, node: Node | None, out: Tensor | None = None):
    """The Tensor that holds ``data``, the output array of ``op``: the one way every path of
    dispatch builds an op's result.

    ``source`` is the op's first input: a view's output shares its version counter. ``node`` (the
    recorded graph node, or None) makes the output part of the graph. ``out``, when given, is
    filled instead of a new Tensor (a placeholder that already stands for this result).
    """
    if out is None:
        out = _new_tensor(Tensor)  # the fields of Tensor.__init__, without its input checks
    out.data = data
    _count_memory(data, op.name, MODULE_CALLS.stacks[1])  # buildingai.memory.stats()
    if node is not None and len(node.__dict__) > 3:  # the forward kept arrays on its node
        _count_saved(node.__dict__.values(), op.name, MODULE_CALLS.stacks[1])
    out.grad = out._node = out._hooks = out._post_hooks = None
    out.requires_grad = False
    if op.view:
        out._version = source._version
        out._base = source if source._base is None else source._base
    else:
        out._version = [0, None]
        out._base = None
    if node is not None and data.dtype.kind in "fV":
        # the output of the recorded node; note the versions of what its backward will read
        # (the inputs and/or the output), so that an in-place change is caught
        out.requires_grad = True
        out._node = node
        if op.save_inputs:
            node.input_versions = [
                value._version[0] if isinstance(value, Tensor) else None for value in node.inputs
            ]
        if op.save_output:
            node.out_data = data
            node.out_version = out._version
            node.out_version_at = out._version[0]
    return out


_new_tensor = Tensor.__new__


class _Unrecorded:
    """The context of an unrecorded call. A forward may store values for backward on it; no
    backward will run, so they are dropped as they are written: nothing is kept alive between
    calls, and every thread can share the one instance."""

    __slots__ = ()

    def __setattr__(self, name: str, value) -> None:
        pass


_SCRATCH = _Unrecorded()


install_dispatcher(apply)


def _namespace_of(arrays: list):
    for array in arrays:
        if hasattr(array, "__array_namespace__") or hasattr(array, "shape"):
            return _device.array_namespace(array)
    return np


def _with_module_path(error: BuildingAIError) -> BuildingAIError:
    names = MODULE_CALLS.stacks[1]
    if names and error.where is None:
        error.where = ".".join(names)
    return error
