"""``apply``: the only door through which computation happens.

It unwraps Tensors to backend arrays, runs the op's check and forward (or a faster kernel that
``buildingai.accel`` registered for it), wraps the output, and records the graph node when a
gradient is needed.

Everything that watches or rewrites ops is a *dispatch mode* on one ordered stack, pushed by the
scoped ``dispatch_mode`` context manager (PyTorch's ``TorchDispatchMode``). A mode may

- replace or run an op (``__dispatch__``: autocast, ``parallel()``, checkpoint recomputation):
  the topmost such mode sees the op first, and the ops it calls go to the modes below it;
- observe the ops that really run (``before_op`` / ``after_op`` / ``before_inplace`` /
  ``after_inplace``: tracing, profiling, anomaly detection, activation statistics, memory
  scopes, run recording): every observing mode on the stack sees each of them, outermost first.

With no mode on the stack, dispatch pays one truth test for all of this.

Everything dispatch reads besides its arguments (grad mode, the mode stack, the module path)
belongs to the calling thread (``state.py``): threads that train, serve or run ``parallel()``
branches never see each other's modes.
"""

from __future__ import annotations

import contextlib
import threading
from time import perf_counter_ns

import numpy as np

from ..accel.registry import run_accelerated, run_kernels, too_small
from ..backend import accounting as _accounting
from ..backend import device as _device
from ..backend.accounting import record as _count_memory
from ..backend.accounting import record_saved as _count_saved
from ..errors import BuildingAIError
from ..ops.base import install_dispatcher
from .node import Node
from .state import MODULE_CALLS, STATE
from .tensor import UNCHANGED, Tensor, version_counter

_current_state = STATE.get


class DispatchMode:
    """One entry of the dispatch mode stack. Subclasses override what they need:

    - ``__dispatch__(op, inputs, attrs)`` to replace or run an op: return the output Tensor, or
      None to pass the op on unchanged. Ops called inside it go to the modes below this one.
    - ``before_op`` / ``after_op`` / ``before_inplace`` / ``after_inplace`` to watch the ops
      that run.
    - ``sees_gradient_sums = False`` to let a backward walk under the mode sum gradients as it
      does under no mode (in place, no ops), where the mode needs no view of those sums.

    ``with dispatch_mode(mode):`` puts a mode on this thread's stack for a block.
    """

    transforms = False  # overrides __dispatch__ (set for each subclass)
    observes = False  # overrides before_op or after_op (set for each subclass)
    # Whether a backward walk under this mode adds gradients up through dispatch, so that every
    # sum is an op the mode sees. False (a profiler) leaves the walk as it runs unwatched: sums
    # in place and a split's pieces copied into their blocks, none of them an op.
    sees_gradient_sums = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.transforms = cls.__dispatch__ is not DispatchMode.__dispatch__
        cls.observes = (
            cls.before_op is not DispatchMode.before_op or cls.after_op is not DispatchMode.after_op
        )

    def __dispatch__(self, op, inputs: tuple, attrs: dict):
        """Run ``op`` (or something else in its place) and return the output Tensor; None
        passes it on to the modes below and then to the op itself."""
        return None

    def before_op(self, op, inputs: tuple, attrs: dict) -> None:
        """Called before an op runs (inputs are Tensors or Python scalars)."""

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        """Called with the op's output Tensor."""

    def before_inplace(self, name: str, target: Tensor) -> None:
        """Called before an in-place op (``add_``...) changes ``target``: a mode that cannot
        follow the change (a tracer asked to write into memory it must not change) raises here,
        while nothing is written yet."""

    def after_inplace(self, name: str, target: Tensor, result: Tensor | None) -> None:
        """Called after an in-place op (``add_``, ``setitem``...) changed ``target``. ``result``
        is the out-of-place value it adopted (already reported to ``after_op``), or None when
        the change was not computed by an op (``setitem``)."""


class _ComputeTime(threading.local):
    ns: int = 0


# Nanoseconds the last op observed on this thread spent computing its array (the record's
# forward or a registered kernel): what a profiler tells apart from dispatch around it.
COMPUTE_TIME = _ComputeTime()


@contextlib.contextmanager
def dispatch_mode(mode: DispatchMode):
    """``with dispatch_mode(mode): ...`` puts ``mode`` on top of this thread's dispatch mode
    stack for the block (and of the ``parallel()`` branches it starts)."""
    if not isinstance(mode, DispatchMode):
        raise BuildingAIError(
            f"[dispatch_mode] expects a DispatchMode, got {type(mode).__name__}",
            help="subclass buildingai.DispatchMode and override __dispatch__ or after_op",
        )
    state = _current_state()
    token = STATE.set(state.replace(modes=state.modes + (mode,)))
    try:
        yield mode
    finally:
        STATE.reset(token)


def active_modes() -> tuple:
    """The dispatch modes on this thread's stack, outermost first."""
    return _current_state().modes


def _handled(state, op, inputs: tuple, attrs: dict):
    """The output of the topmost mode that replaces or runs ``op``, or None when every mode
    that may handle it passes it on. Each mode's own ops go to the modes below it."""
    index = state.handling
    transformers = state.transformers
    while index:
        index -= 1
        token = STATE.set(state.replace(handling=index))
        try:
            output = transformers[index].__dispatch__(op, inputs, attrs)
        finally:
            STATE.reset(token)
        if output is not None:
            return output
    return None


def apply(op, *inputs, **attrs) -> Tensor:
    """Run ``op`` on ``inputs`` (Tensors or Python scalars) and return the output Tensor."""
    state = _current_state()
    if state.observed and state.handling:  # a mode may replace or run the op
        output = _handled(state, op, inputs, attrs)
        if output is not None:
            return output

    arrays, needs_grad = _unwrap(inputs)
    observers = state.observers
    if observers:
        for observer in observers:
            observer.before_op(op, inputs, attrs)

    if needs_grad and state.grad_enabled and op.differentiable:
        ctx = node = Node(op, inputs, attrs)
    else:
        ctx, node = _SCRATCH, None
    xp = np if _device._cupy is None else _namespace_of(arrays)
    check = op.check
    try:
        if check is not None and not (op.checks_values and _holds_samples(arrays)):
            check(*arrays, **attrs)
        started = perf_counter_ns() if observers else 0
        if op.accelerated:  # a faster kernel registered in buildingai.accel may take the call
            data = run_accelerated(op, ctx, xp, arrays, attrs)
        elif attrs:
            data = op.forward(ctx, xp, *arrays, **attrs)
        else:  # calling without **{} is cheaper
            data = op.forward(ctx, xp, *arrays)
        if observers:
            COMPUTE_TIME.ns = perf_counter_ns() - started
    except BuildingAIError as error:
        raise _with_module_path(error) from None
    except (ValueError, TypeError, IndexError) as exc:
        raise _with_module_path(op.describe_failure(exc, arrays, attrs)) from exc
    if type(data) is not np.ndarray and not isinstance(data, _device.ARRAY_TYPES):
        data = xp.asarray(data)  # NumPy returns scalars from some 0-d computations

    out = output_tensor(op, data, inputs[0] if inputs else None, node)
    if observers:
        for observer in observers:
            observer.after_op(op, inputs, out, attrs)
    return out


def binary_operator(op, rank: int = 0, general=None):
    """The Python operator of binary ``op``: ``x + y`` is ``binary_operator(ADD)(x, y)``, and
    ``buildingai.add``, ``mul``, ``eq``... call theirs. It is exactly ``apply(op, x, y)``, with
    apply's steps for the commonest call of all written out in one function: two CPU tensors,
    or a tensor and a Python (or NumPy) number, that no mode watches. Every other call goes to
    ``apply``. ``op`` has no ``check`` (the short steps skip it).

    ``rank``: the short steps take only two Tensors of at least this rank (``@`` takes 2);
    other calls go to ``general(x, y)`` (``matmul``, which also takes vectors), or to
    ``apply`` when ``general`` is None. ``benchmarks/dispatch.py`` measures what this saves.
    """
    if op.check is not None:
        raise BuildingAIError(f"[binary_operator] '{op.name}' has a check: call apply instead")
    if general is None:

        def general(first, second):
            return apply(op, first, second)

    shares_output = op.view or op.save_output  # output_tensor's extra steps: fixed per op

    def operator(first, second):
        state = _current_state()
        if state.observed or _device._cupy is not None:
            return general(first, second)
        # a Parameter (any subclass: apply unwraps them alike) takes these steps too; the exact
        # type is tested first, the cheapest test for the commonest operand
        first_is_tensor = type(first) is Tensor or isinstance(first, Tensor)
        if first_is_tensor and (type(second) is Tensor or isinstance(second, Tensor)):
            left, right = first.array, second.array
            if rank and (left.ndim < rank or right.ndim < rank):
                return general(first, second)
            needs_grad = first.requires_grad or second.requires_grad
        elif rank:
            return general(first, second)
        elif first_is_tensor:  # a Tensor and a number
            kind = type(second)
            if kind is float or kind is int:
                right = second
            elif isinstance(second, np.generic):  # weakly typed, as a Python number (see _unwrap)
                right = second = second.item()
            else:
                return general(first, second)
            left, needs_grad = first.array, first.requires_grad
        elif (type(first) is float or type(first) is int) and isinstance(second, Tensor):
            left, right, needs_grad = first, second.array, second.requires_grad
        else:
            return general(first, second)
        if needs_grad and state.grad_enabled and op.differentiable:
            ctx = node = _new_node(Node)  # Node.__init__'s three fields, without its frame
            node.op, node.inputs, node.attrs = op, (first, second), {}
        else:
            ctx, node = _SCRATCH, None
        try:
            if op.accelerated:  # run_accelerated's steps, written out
                if op.accelerated_size is not None:  # the op sizes its calls itself
                    small = too_small(op, (left, right))
                else:
                    try:
                        small = left.size * right.size < op.accelerated_from
                    except AttributeError:  # a Python number: too_small's general rule
                        small = too_small(op, (left, right))
                if small:  # smaller than every kernel takes
                    data = op.forward(ctx, np, left, right)
                else:
                    data = run_kernels(op, ctx, np, (left, right), {})
            else:
                data = op.forward(ctx, np, left, right)
        except BuildingAIError as error:
            raise _with_module_path(error) from None
        except (ValueError, TypeError, IndexError) as exc:
            raise _with_module_path(op.describe_failure(exc, [left, right], {})) from exc
        if type(data) is not np.ndarray:  # NumPy returns scalars from some 0-d computations
            data = np.asarray(data)
        if shares_output or _accounting.tracking:
            return output_tensor(op, data, first, node)
        out = _new_tensor(Tensor)  # output_tensor's steps for a new array, written out
        out.array = data
        out.grad = out._hooks = out._post_hooks = out._base = None
        out._version = None  # (made when first shared or changed: version_counter)
        if node is None or data.dtype.kind not in "fV":
            out.requires_grad = False
            out._node = None
            return out
        out.requires_grad = True
        out._node = node
        if op.save_inputs:  # the versions backward will check, as output_tensor notes them
            node.input_versions = [
                (first._version or UNCHANGED)[0] if isinstance(first, Tensor) else None,
                (second._version or UNCHANGED)[0] if isinstance(second, Tensor) else None,
            ]
        return out

    operator.__name__ = op.name
    return operator


def tensor_operator(op, general=None):
    """The function of ``op`` on Tensors: ``tensor_operator(LINEAR)(x, weight, bias)`` is
    exactly ``apply(LINEAR, x, weight, bias)`` (keyword arguments are the op's attributes),
    with apply's steps for a layer's commonest call at inference written out in one function:
    CPU Tensors that no mode watches and that record no gradient. Every other call goes to
    ``general(*inputs, **attrs)``, or to ``apply`` when ``general`` is None.
    ``benchmarks/suite/inference.py`` measures what this saves.
    """
    if general is None:

        def general(*inputs, **attrs):
            return apply(op, *inputs, **attrs)

    check, differentiable, view = op.check, op.differentiable, op.view

    def operator(*inputs, **attrs):
        state = _current_state()
        if state.observed or _device._cupy is not None:
            return general(*inputs, **attrs)
        records = state.grad_enabled and differentiable
        arrays = []
        for value in inputs:
            if not isinstance(value, Tensor) or (records and value.requires_grad):
                return general(*inputs, **attrs)
            arrays.append(value.array)
        try:
            if check is not None:
                check(*arrays, **attrs) if attrs else check(*arrays)
            # a faster kernel may take the call, unless it is smaller than every one of them takes
            if op.accelerated and not (op.accelerated_from and too_small(op, arrays)):
                data = run_kernels(op, _SCRATCH, np, arrays, attrs)  # (its size test passed)
            elif attrs:
                data = op.forward(_SCRATCH, np, *arrays, **attrs)
            else:  # calling without **{} is cheaper
                data = op.forward(_SCRATCH, np, *arrays)
        except BuildingAIError as error:
            raise _with_module_path(error) from None
        except (ValueError, TypeError, IndexError) as exc:
            raise _with_module_path(op.describe_failure(exc, arrays, attrs)) from exc
        if type(data) is not np.ndarray:  # NumPy returns scalars from some 0-d computations
            data = np.asarray(data)
        if view or _accounting.tracking:
            return output_tensor(op, data, inputs[0], None)
        out = _new_tensor(Tensor)  # output_tensor's steps for a new array outside the graph
        out.array = data
        out.grad = out._node = out._hooks = out._post_hooks = out._base = None
        out.requires_grad = False
        out._version = None
        return out

    operator.__name__ = op.name
    return operator


def run_forward(op, ctx, xp, *arrays, **attrs):
    """``op``'s output array from backend arrays, outside the graph and the mode stack: the
    first registered kernel of ``buildingai.accel`` that applies, else the record's forward.

    What ``apply`` computes once it has unwrapped the inputs, and the one entry through which
    executors and graph passes (frozen graphs, compiled steps, constant folding) run an op. Of
    the op's checks it makes those that read values (``Op.checks_values``): a graph's shapes
    and dtypes were checked when it was traced, each run's values were not.
    """
    if op.checks_values:
        op.check(*arrays, **attrs)
    if op.accelerated:
        return run_accelerated(op, ctx, xp, arrays, attrs)
    return op.forward(ctx, xp, *arrays, **attrs)


def _holds_samples(arrays) -> bool:
    """Whether some of ``arrays`` hold the sample values a traced graph runs on in place of its
    inputs (their class says so: ``sample_values``, as ``graph.trace._Traced``): a check of
    values (``Op.checks_values``) waits for the graph's runs, which make it on real ones."""
    return any(getattr(type(array), "sample_values", False) for array in arrays)


def _unwrap(inputs: tuple) -> tuple[list, bool]:
    """The backend arrays (and Python scalars) of ``inputs``, and whether any requires grad."""
    arrays = []
    needs_grad = False
    for value in inputs:
        if isinstance(value, Tensor):
            arrays.append(value.array)
            if value.requires_grad:
                needs_grad = True
        elif isinstance(value, np.generic):
            # a NumPy scalar acts like a Python scalar (weakly typed), as in PyTorch:
            # float32_tensor * np.float64(2) stays float32
            arrays.append(value.item())
        else:
            arrays.append(value)
    return arrays, needs_grad


def output_tensor(op, data, source, node: Node | None, out: Tensor | None = None):
    """The Tensor that holds ``data``, the output array of ``op``: the one way every path of
    dispatch builds an op's result.

    ``source`` is the op's first input: a view's output shares its version counter. ``node`` (the
    recorded graph node, or None) makes the output part of the graph. ``out``, when given, is
    filled instead of a new Tensor (a placeholder that already stands for this result).
    """
    if out is None:
        out = _new_tensor(Tensor)  # the fields of Tensor.__init__, without its input checks
    out.array = data
    if _accounting.tracking:  # buildingai.memory.stats(), only while someone asks for it
        _count_memory(data, op.name, MODULE_CALLS.stacks[1])
        if node is not None and len(node.__dict__) > 3:  # the forward kept arrays on its node
            _count_saved(node.__dict__.values(), op.name, MODULE_CALLS.stacks[1])
    out.grad = out._node = out._hooks = out._post_hooks = None
    out.requires_grad = False
    if op.view:
        out._version = version_counter(source)
        out._base = source if source._base is None else source._base
    else:
        out._version = None  # (made when first shared or changed: version_counter)
        out._base = None
    if node is not None and data.dtype.kind in "fV":
        # the output of the recorded node; note the versions of what its backward will read
        # (the inputs and/or the output), so that an in-place change is caught
        out.requires_grad = True
        out._node = node
        if op.save_inputs:
            versions = node.input_versions = []  # a loop: cheaper than a comprehension's frame
            for value in node.inputs:
                versions.append(
                    (value._version or UNCHANGED)[0] if isinstance(value, Tensor) else None
                )
        if op.save_output:
            node.out_data = data
            node.out_version = version_counter(out)
            node.out_version_at = node.out_version[0]
    return out


_new_tensor = Tensor.__new__
_new_node = Node.__new__


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
