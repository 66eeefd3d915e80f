"""The op graph of one call of a model, recorded as it runs, for pictures without a signature.

``record_runs(model)`` registers a forward pre-hook and a forward hook on ``model``: each call
then runs under a ``RunRecorder`` dispatch mode, and ``last_run(model)`` is the graph of the most
recent call (ops, shapes, dtypes, module paths; no arrays). A model that is not recorded has no
hooks and pays nothing; a recorded one pays an dispatch mode call per op of its calls.
``record_call`` records one call of any function on example inputs.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref

from ..autograd.dispatch import DispatchMode, dispatch_mode
from ..autograd.mode import no_grad
from ..autograd.state import module_path
from ..autograd.tensor import Tensor
from ..graph.graph import Graph, Literal, Node, Value

__all__ = ["RunRecorder", "last_run", "record_call", "record_runs"]


class RunRecorder(DispatchMode):
    """Records the ops of one call into a ``Graph`` of values and nodes, without arrays.

    ``parameter_names``: id(tensor) -> state-dict name, so that parameters show their names.
    """

    def __init__(self, parameter_names: dict | None = None) -> None:
        self.graph = Graph()
        self.parameter_names = parameter_names or {}
        self.ids: dict = {}  # id(tensor) -> value id
        # Holds the tensors seen until the call ends, so that their id()s stay unique.
        self.seen: list = []
        self.recording = True  # False once its call is over: later ops are ignored

    def stop(self) -> None:
        """Ignore every later op and let go of the tensors seen."""
        self.recording = False
        self.ids.clear()
        self.seen.clear()

    def add(self, tensor: Tensor, kind: str, name: str) -> int:
        value_id = len(self.graph.values)
        self.graph.values[value_id] = Value(
            value_id, tuple(tensor.shape), tensor.dtype, kind, name or f"t{value_id}"
        )
        self.ids[id(tensor)] = value_id
        self.seen.append(tensor)
        return value_id

    def add_inputs(self, args: tuple, kwargs: dict) -> None:
        """Name the call's tensor arguments ``input0``, ``input1``... (keywords by name)."""
        for position, value in enumerate(args):
            if isinstance(value, Tensor):
                self.graph.inputs.append(self.add(value, "input", f"input{position}"))
        for name, value in kwargs.items():
            if isinstance(value, Tensor):
                self.graph.inputs.append(self.add(value, "input", name))

    def ref(self, tensor: Tensor) -> int:
        value_id = self.ids.get(id(tensor))
        if value_id is not None:
            return value_id
        name = self.parameter_names.get(id(tensor))
        if name is not None:
            return self.add(tensor, "param", name)
        count = sum(value.kind == "const" for value in self.graph.values.values())
        return self.add(tensor, "const", f"const{count}")

    def after_op(self, op, inputs, output, attrs) -> None:
        if not self.recording:
            return
        refs = tuple(
            self.ref(value) if isinstance(value, Tensor) else Literal(value) for value in inputs
        )
        output_id = self.add(output, "op", "")
        module = ".".join(module_path())
        self.graph.nodes.append(Node(op, refs, dict(attrs), output_id, module))

    def after_inplace(self, name, target, result) -> None:
        if not self.recording:
            return
        if result is not None and id(result) in self.ids:
            self.ids[id(target)] = self.ids[id(result)]  # target now holds result's value
            self.seen.append(target)
        else:
            # written outside the ops (setitem): a later read shows it as a new constant
            self.ids.pop(id(target), None)

    def finish(self, result) -> Graph:
        """The recorded graph, with the tensors of ``result`` (a Tensor, or a tuple, list or
        dict holding Tensors) as its outputs. Forgets the tensors it held."""
        graph = self.graph
        if isinstance(result, Tensor):
            tensors, graph.output_kind = [result], "single"
        elif isinstance(result, dict):
            tensors, graph.output_kind = list(result.values()), "dict"
        elif isinstance(result, (tuple, list)):
            tensors, graph.output_kind = list(result), type(result).__name__
        else:
            tensors = []
        graph.outputs = [self.ref(value) for value in tensors if isinstance(value, Tensor)]
        self.stop()
        return graph


def _parameter_names(module) -> dict:
    if module is None:
        return {}
    named = list(module.named_parameters()) + list(module.named_buffers())
    return {id(tensor): name for name, tensor in named}


def record_call(function, example_inputs: tuple, module=None) -> Graph:
    """The graph of one call ``function(*example_inputs)`` (run without recording gradients).
    ``module``: the Module whose parameters the call reads, to name them."""
    recorder = RunRecorder(_parameter_names(module))
    recorder.add_inputs(tuple(example_inputs), {})
    with no_grad(), dispatch_mode(recorder):
        result = function(*example_inputs)
    return recorder.finish(result)


class _Recording:
    """The recording state of one module: its hooks, its calls in progress (per thread,
    innermost last) and the graph of the last call that finished."""

    def __init__(self) -> None:
        self.calls: dict = {}  # thread id -> [_Call, ...] in progress on that thread
        self.last: Graph | None = None
        self.pre_hook = self.hook = None  # the RemovableHandles

    def active(self) -> list:
        return self.calls.setdefault(threading.get_ident(), [])


class _Call:
    """One recorded call in progress: its recorder, the scope that shows it the ops, and how
    many modules were being called when it started (its own included)."""

    def __init__(self, recorder: RunRecorder, scope: contextlib.ExitStack, depth: int) -> None:
        self.recorder, self.scope, self.depth = recorder, scope, depth

    def abandon(self) -> None:
        """End a call that never reached the forward hook (interrupted by an exception that is
        not an ``Exception``, such as KeyboardInterrupt, or recording removed meanwhile): the
        recorder stops at once, and its scope is closed in a copy of this thread's context,
        because restoring the state that scope saved would undo the scopes entered since."""
        self.recorder.stop()
        with contextlib.suppress(ValueError, RuntimeError):
            contextvars.copy_context().run(self.scope.close)


# module -> _Recording. Weak, so that recording never keeps a model alive; the hooks look their
# module up here, so that a clone (which copies the hooks) records nothing.
_recordings: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hooks_in_place(module, recording: _Recording) -> bool:
    """Whether the pre-hook runs last and the forward hook first, so that no other hook can
    raise between them; if not, move them there (from the next call on)."""
    pre_hooks, hooks = module._forward_pre_hooks, module._forward_hooks
    pre_id, hook_id = recording.pre_hook.id, recording.hook.id
    if next(reversed(pre_hooks)) == pre_id and next(iter(hooks)) == hook_id:
        return True
    pre_hooks[pre_id] = pre_hooks.pop(pre_id)
    entry = hooks.pop(hook_id)
    rest = dict(hooks)
    hooks.clear()
    hooks[hook_id] = entry
    hooks.update(rest)
    return False


def _before_call(module, args: tuple, kwargs: dict) -> None:
    recording = _recordings.get(module)
    if recording is None or not _hooks_in_place(module, recording):
        return
    active = recording.active()
    depth = len(module_path())
    while active and active[-1].depth >= depth:  # calls that can no longer be in progress
        active.pop().abandon()
    recorder = RunRecorder(_parameter_names(module))
    recorder.add_inputs(args, kwargs)
    scope = contextlib.ExitStack()
    scope.enter_context(dispatch_mode(recorder))
    active.append(_Call(recorder, scope, depth))


def _after_call(module, args: tuple, kwargs: dict, output) -> None:
    recording = _recordings.get(module)
    if recording is None:
        return
    active = recording.active()
    depth = len(module_path())
    if not active or active[-1].depth != depth:
        return  # this call was not recorded (see _hooks_in_place)
    call = active.pop()
    if not active:
        del recording.calls[threading.get_ident()]
    call.scope.close()
    if output is None:  # forward raised: this call has no graph
        call.recorder.stop()
    else:
        recording.last = call.recorder.finish(output)


class RunRecording:
    """Returned by ``record_runs``: ``remove()`` (or leaving a ``with`` block) stops recording
    and forgets the last run."""

    def __init__(self, module) -> None:
        self._module = weakref.ref(module)

    def remove(self) -> None:
        module = self._module()
        recording = _recordings.pop(module, None) if module is not None else None
        if recording is not None:
            recording.pre_hook.remove()
            recording.hook.remove()
            for calls in list(recording.calls.values()):
                while calls:
                    calls.pop().abandon()

    def __enter__(self) -> RunRecording:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def record_runs(module) -> RunRecording:
    """Remember the op graph of each call of ``module`` (a Module), so that ``last_run(module)``
    and ``plot_computation_graph(module.forward)`` can show the most recent one.

    Calls go through the module's forward hooks, so ``module(x)`` is recorded and a direct
    ``module.forward(x)`` is not. Each call then pays one dispatch mode call per op; ``remove()``
    on the returned handle stops it. Recording a module that is already recorded returns a
    handle to the same recording.
    """
    if module not in _recordings:
        recording = _Recording()
        recording.pre_hook = module.register_forward_pre_hook(_before_call, with_kwargs=True)
        recording.hook = module.register_forward_hook(
            _after_call, prepend=True, with_kwargs=True, always_call=True
        )
        _recordings[module] = recording
    return RunRecording(module)


def is_recorded(module) -> bool:
    return module in _recordings


def last_run(module) -> Graph | None:
    """The graph of the most recent call of a recorded ``module``, or None (not recorded, or
    not called since ``record_runs``)."""
    recording = _recordings.get(module)
    return None if recording is None else recording.last
