"""Tracing a whole training step: forward, backward and the optimizer update in one graph.

``trace_training_step`` runs the step once on sample inputs with a ``TrainingTracer``
observing dispatch, as ``freeze`` does for inference, with three differences:

- ``backward()`` runs as in eager execution, each rule's ops through dispatch, so the tracer
  records every gradient op and the graph holds the backward the records define (the graph
  passes run over it too); under ``engine.recording_backward`` a leaf's ``.grad`` is the
  traced gradient tensor itself, not a copy made outside dispatch. The forward's nodes are
  freed as backward passes them, as eagerly: the trace holds no more memory than an eager step.
- Trainable leaves (parameters) are graph inputs bound to the live tensors on every call, not
  constants: the optimizer changes them between calls, and no pass may fold them.
- ``optimizer.step()`` is recorded, not run: an ``OptimizerUpdate`` node hands the traced
  gradients to the optimizer's own ``step()`` when the graph runs, so parameters, optimizer
  state, step hooks and learning-rate schedules behave exactly as in eager execution.
  Gradient clipping called in the step (``clip_grad_norm_``, ``clip_grad_value_``) is deferred
  into that node, before the update, as eager runs it.

The trace changes nothing the user can see: parameters are restored bit for bit (a step that
writes them behind dispatch's back is refused), and the random streams are put back.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..autograd.dispatch import dispatch_mode, run_forward
from ..autograd.engine import recording_backward
from ..autograd.tensor import Tensor, version_counter
from ..backend.device import is_read_only
from ..backend.dtypes import is_floating
from ..backend.random import get_rng_state, set_rng_state
from ..nn.module import Module
from ..ops.abstract import SymbolicSizeError, ValueSpec, bytes_of
from ..ops.base import Op
from ..optim.optimizer import OptimizerBase
from .graph import GraphError, Node
from .symbolic import resolve, where
from .trace import (
    Tracer,
    _in_module,
    _Traced,
    plain,
    sample_sizes,
    set_outputs,
    symbolic,
    traced_inputs,
    tracing_thread,
)


class OptimizerUpdate(Op):
    """Hand the gradients to ``optimizer.step()``: ``params[i].grad = grads[i]``, run the
    deferred pre-update actions (clipping), then the optimizer's own step, in place on the
    live parameters and state. Returns a 0-d int64 token (graph outputs keep the node)."""

    name = "optimizer_step"
    save_inputs = False
    differentiable = False
    effectful = True

    def forward(self, ctx, xp, *grads, optimizer, params, before=()):
        given = set()
        for param, grad in zip(params, grads):
            # clipping and hooks may write .grad in place: each gets memory of its own, also
            # where two parameters have one gradient value (an LSTM's two biases)
            if grad.base is not None or is_read_only(grad) or id(grad) in given:
                grad = grad.copy()
            given.add(id(grad))
            param.grad = Tensor(grad)
        for action in before:
            action()
        optimizer.step()
        return xp.zeros((), dtype=np.int64)

    def infer(self, *grads, optimizer, params, before=()) -> ValueSpec:
        return ValueSpec((), np.dtype(np.int64))

    def cost(self, *grads, optimizer, params, before=()) -> tuple:
        # an element-wise update reading each gradient and rewriting its parameter and state
        moved = bytes_of(*grads) if grads else 0
        return (moved, 2 * moved, moved)

    def to_onnx(self, emit, inputs, output, attrs):
        raise GraphError(
            "[export] a training step's optimizer update has no ONNX form",
            help="export the model (freeze(model, ...)) rather than its training step",
        )


OPTIMIZER_UPDATE = OptimizerUpdate()


class AssignState(Op):
    """Write a tensor's final value back into its live array: a buffer the step changed in
    place (BatchNorm's running statistics) is an input bound to the buffer on every call, and
    this node, at the end of the graph, makes the change stick as in eager execution."""

    name = "assign"
    save_inputs = False
    differentiable = False
    effectful = True

    def forward(self, ctx, xp, value, target):
        if value is not target:
            xp.copyto(target, value, casting="unsafe")
        return xp.zeros((), dtype=np.int64)

    def infer(self, value, target) -> ValueSpec:
        return ValueSpec((), np.dtype(np.int64))

    def cost(self, value, target) -> tuple:
        return (0, bytes_of(value), bytes_of(target))


ASSIGN_STATE = AssignState()


class ContextHolder:
    """Where a forward step of the graph keeps its context (the arrays its backward reads,
    such as softmax probabilities or im2col columns) until the backward nodes read them."""

    def __init__(self, stand_ins: tuple, specs: dict) -> None:
        self.stand_ins = stand_ins  # what forward may read of ctx.inputs (requires_grad)
        self.specs = specs  # key -> ValueSpec of each kept array, as traced
        self.ctx = None


class _RunContext:
    """The context a kept forward step runs with: ``inputs`` stand-ins and ``attrs``."""


class _InputStandIn:
    __slots__ = ("requires_grad",)

    def __init__(self, requires_grad: bool) -> None:
        self.requires_grad = requires_grad


class KeepContext(Op):
    """A forward op whose context later nodes read: runs ``op.forward`` with a fresh context
    and leaves it in ``holder`` (infer, cost and the name are the op's own)."""

    save_inputs = False

    def __init__(self, op: Op, holder: ContextHolder) -> None:
        self.op, self.holder = op, holder
        self.name, self.differentiable = op.name, False
        self.fusion, self.autocast = None, getattr(op, "autocast", "promote")

    @property
    def label(self) -> str:
        return getattr(self.op, "label", self.op.name)

    def forward(self, ctx, xp, *arrays, **attrs):
        context = _RunContext()
        context.inputs, context.attrs = self.holder.stand_ins, attrs
        self.holder.ctx = context
        return run_forward(self.op, context, xp, *arrays, **attrs)

    def infer(self, *specs, **attrs):
        return self.op.infer(*specs, **attrs)

    def cost(self, *specs, **attrs):
        return self.op.cost(*specs, **attrs)


class SavedValue(Op):
    """An array a forward step kept in its context (``holder.ctx.<key>``), read as a value."""

    name = "saved_value"
    save_inputs = False
    differentiable = False

    def forward(self, ctx, xp, anchor, *, holder, key):
        # None where this run's forward kept nothing: an op that chooses its kernel per call
        # (a convolution keeps im2col columns, a direct one none) takes the value as optional
        return getattr(holder.ctx, key, None)

    def infer(self, anchor, *, holder, key):
        return holder.specs[key]

    def cost(self, anchor, *, holder, key):
        return (0, 0, 0)


SAVED_VALUE = SavedValue()


class WithSavedAttributes(Op):
    """``op`` with some attributes taken from kept context arrays, passed as its last inputs
    (``names`` in order), so a backward op's array attribute follows each run's forward."""

    save_inputs = False

    def __init__(self, op: Op, names: tuple) -> None:
        self.op, self.names = op, names
        self.name, self.differentiable, self.fusion = op.name, False, None

    def _split(self, values: tuple, attrs: dict) -> tuple:
        count = len(self.names)
        return values[:-count], dict(attrs, **dict(zip(self.names, values[-count:])))

    def forward(self, ctx, xp, *arrays, **attrs):
        arrays, attrs = self._split(arrays, attrs)
        return run_forward(self.op, ctx, xp, *arrays, **attrs)

    def infer(self, *specs, **attrs):
        specs, attrs = self._split(specs, attrs)
        return self.op.infer(*specs, **attrs)

    def cost(self, *specs, **attrs):
        specs, attrs = self._split(specs, attrs)
        return self.op.cost(*specs, **attrs)


def _kept_arrays(node) -> dict:
    """The arrays a recorded op's forward kept on its context (besides its output)."""
    kept = {}
    for key, value in vars(node).items():
        if key != "out_data" and isinstance(value, np.ndarray):
            kept[key] = value
    return kept


class TrainingTracer(Tracer):
    """A ``Tracer`` that makes trainable leaves graph inputs, keeps the forward contexts that
    backward nodes read, and records optimizer steps."""

    def __init__(self, specs, symbols, sizes, names: dict) -> None:
        super().__init__(specs, symbols, sizes, {})
        self.names = names  # id(parameter) -> a readable name
        self.params: list = []  # (value id, Tensor) of each trainable leaf, in first-read order
        self.saved: list = []  # (Tensor, its array before the trace, the array's copy)
        self.made_symbolic: list = []  # tensors from before the trace, symbolic while it runs
        self.updates = 0
        self.deferred: list = []  # work held for the next optimizer update (clipping)
        self.kept: dict = {}  # id(array) -> (producer value id, holder, key, array)
        self.kept_values: dict = {}  # id(array) -> value id of its SavedValue node
        self.written: dict = {}  # id(tensor) -> (tensor, value id before its first in-place op)
        self.state: list = []  # (value id, Tensor) of live tensors the step changes in place
        self.captured_arrays: dict = {}  # id(array) -> value id, of arrays captured as constants
        self.outside: list = []  # (array, its copy) of each constant: the trace writes none
        self.grads_before: list = []  # (parameter, its .grad when first read), to undo a failed trace

    def before_inplace(self, name: str, target: Tensor) -> None:
        """A buffer or parameter changed in place is written back whole at the end of the
        graph, so writing into a view of one (``buffer[0].add_(1)``) is refused, before
        anything is written; so is writing into an input, which eager execution would change
        for the caller."""
        with self.lock:
            value_id = self.value_of_memory(target)
            kind = None if value_id is None else self.graph.values[value_id].kind
            if target._base is not None:
                owner = target._base
                if id(owner) in self.written or kind in (None, "param", "const", "state", "input"):
                    what = {"param": "a parameter", "input": "an input of the step"}.get(
                        kind, "a buffer or another tensor from outside the step"
                    )
                    raise GraphError(
                        f"[compile] '{name}'{_in_module()} writes into a view (shape "
                        f"{tuple(target.shape)}) of {what} (shape {tuple(owner.shape)}) in "
                        f"place{where()}: a compiled step writes such tensors back whole",
                        help="update the whole tensor (buffer.copy_(buffer.where(mask, values)), "
                        "buffer.mul_(scale) with a scale of ones where it stays), or keep this "
                        "update outside the compiled step",
                    )
            elif kind == "input":
                raise GraphError(
                    f"[compile] '{name}'{_in_module()} writes into an input of the step (shape "
                    f"{tuple(target.shape)}) in place{where()}: the compiled step cannot change "
                    "the caller's tensor as eager execution would",
                    help="use the out-of-place form (x = x + y instead of x.add_(y)) for inputs",
                )

    def after_inplace(self, name: str, target: Tensor, result: Tensor | None) -> None:
        with self.lock:
            if result is None:
                if id(target) in self.ids:
                    raise GraphError(
                        f"[compile] '{name}' writes into a tensor (shape {tuple(target.shape)}) "
                        f"without an op the graph can record{where()}",
                        help="use the out-of-place form (x = x.where(mask, value), "
                        "x = x.index_put(...)) inside a compiled step",
                    )
                return
            value_id = self.ids.get(id(result))
            if value_id is None:
                return
            if id(target) not in self.written:
                # the value it held: read through the tensor itself, or through another
                # tensor over its array (in-place ops compute from such a "previous" copy)
                before = self.ids.get(id(target), self.captured_arrays.get(id(target.array)))
                self.written[id(target)] = (target, before)
            self.ids[id(target)] = value_id
            counter = version_counter(target)
            self.versions[value_id] = (counter, counter[0])
            self.dependent.add(id(target))  # its value now exists only when the graph runs
            self.hold(target)
            # any tensor over this array read from now on (the alias through which the next
            # in-place op reads the previous value, ``buffer.detach()``) holds this value
            self.note_array(target.array, self.arrays, (value_id, self.versions[value_id]))
            self.made_symbolic.append(symbolic(target))

    def write_back(self) -> None:
        """For every live tensor the step changed in place (a buffer, or a parameter changed by
        an op rather than the optimizer): bind it as an input on every call and assign its
        final value at the end of the graph. Restores its array as it was before the trace."""
        graph = self.graph
        assigned = set()
        for target, original in self.written.values():
            if original is None or original in assigned:
                continue  # a second tensor over the same memory (buffer.detach())
            assigned.add(original)
            value = graph.values[original]
            if value.kind == "const":
                target.array[...] = graph.constants.pop(original)  # undo the trace's write
                value.kind = "state"
                self.state.append((original, target))
            elif value.kind != "param":
                continue  # a tensor the step made itself: nothing outlives the call
            final, _ = self.arrays[id(target.array)]  # the last write through any tensor
            token = Tensor(np.zeros((), dtype=np.int64))
            token_id = self.add(token, "op", f"assign_{value.name}", ())
            graph.nodes.append(Node(ASSIGN_STATE, (final, original), {}, token_id, ""))
            graph.outputs.append(token_id)

    def record(self, op, inputs, output, attrs) -> None:
        saved_names = tuple(
            key for key, value in attrs.items()
            if isinstance(value, np.ndarray) and id(value) in self.kept
        )  # fmt: skip
        if saved_names:
            extra = tuple(self.kept_tensor(attrs[key]) for key in saved_names)
            attrs = {k: v for k, v in attrs.items() if k not in saved_names}
            op, inputs = WithSavedAttributes(op, saved_names), tuple(inputs) + extra
        super().record(op, inputs, output, attrs)
        node = output._node
        if node is not None and node.out_data is not None and node.out_data is not output.array:
            node.out_data = output.array  # the marked view: what backward derives from it is marked
        kept = _kept_arrays(node) if node is not None else {}
        if not kept:
            return
        value_id = self.ids[id(output)]
        stand_ins = tuple(
            _InputStandIn(bool(getattr(value, "requires_grad", False))) for value in inputs
        )
        specs = {key: ValueSpec(array.shape, array.dtype) for key, array in kept.items()}
        holder = ContextHolder(stand_ins, specs)
        last = self.graph.nodes[-1]
        self.graph.nodes[-1] = Node(KeepContext(last.op, holder), last.inputs, last.attrs,
                                    last.output, last.module)  # fmt: skip
        for key, array in kept.items():
            self.kept[id(array)] = (value_id, holder, key, array)

    def kept_tensor(self, array) -> Tensor:
        """A Tensor standing for a kept context array, known to the tracer as its value."""
        tensor = Tensor(array)
        self.ids[id(tensor)] = self.kept_value(array)
        self.hold(tensor)
        return tensor

    def kept_value(self, array) -> int:
        """The value id of a ``SavedValue`` node reading a kept context array (made once)."""
        found = self.kept_values.get(id(array))
        if found is not None:
            return found
        anchor, holder, key, _ = self.kept[id(array)]
        tensor = Tensor(array)
        value_id = self.add(tensor, "op", f"{key}_{anchor}", tuple(array.shape))
        attrs = {"holder": holder, "key": key}
        self.graph.nodes.append(Node(SAVED_VALUE, (anchor,), attrs, value_id, ""))
        self.kept_values[id(array)] = value_id
        return value_id

    def capture(self, tensor: Tensor, op) -> int:
        if id(tensor.array) in self.kept:  # ctx.tensor(ctx.probs) in a backward rule
            value_id = self.kept_value(tensor.array)
            self.ids[id(tensor)] = value_id
            self.hold(tensor)
            return value_id
        if tensor.requires_grad and tensor._node is None and is_floating(tensor.dtype):
            self.on_host(tensor)
            name = self.names.get(id(tensor)) or f"param{len(self.params)}"
            value_id = self.add(tensor, "param", name, tuple(tensor.array.shape))
            self.params.append((value_id, tensor))
            self.grads_before.append((tensor, tensor.grad))
            original = tensor.array
            self.saved.append((tensor, original, np.array(original, copy=True)))
            # values computed from parameters behind dispatch's back are caught like inputs'
            tensor.array = original.view(_Traced)
            self.dependent.add(id(tensor))
            self.made_symbolic.append(symbolic(tensor))
            self.note_array(tensor.array, self.arrays, (value_id, self.versions[value_id]))
            return value_id
        value_id = super().capture(tensor, op)
        if id(tensor.array) not in self.captured_arrays:
            self.note_array(tensor.array, self.captured_arrays, value_id)
            if self.graph.values[value_id].kind == "const":
                self.outside.append((tensor.array, self.graph.constants[value_id]))
        return value_id

    def defer(self, action) -> Tensor:
        """What ``engine.defer_to_update`` calls while this tracer traces: keep ``action`` for
        the next recorded optimizer update. Its result's stand-in cannot be read (that raises,
        naming the line): the value exists only when the graph runs."""
        self.deferred.append(action)
        stand_in = symbolic(Tensor(np.full((), np.nan, dtype=np.float32)))
        self.dependent.add(id(stand_in))
        self.hold(stand_in)
        return stand_in

    def record_update(self, optimizer) -> None:
        """Record ``optimizer.step()`` over the parameters that have a traced gradient."""
        params, refs = [], []
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if id(param.grad) not in self.ids:
                    raise GraphError(
                        f"[compile] {type(optimizer).__name__}.step() reads a gradient of a "
                        f"parameter (shape {tuple(param.shape)}) that this step did not compute"
                        f"{where()}",
                        help="call optimizer.zero_grad() at the start of the compiled step, so "
                        "every gradient the update reads comes from this step's backward",
                    )
                params.append(param)
                refs.append(self.ref(param.grad, OPTIMIZER_UPDATE))
        before, self.deferred = tuple(self.deferred), []
        attrs = {"optimizer": optimizer, "params": tuple(params), "before": before}
        token = Tensor(np.zeros((), dtype=np.int64))
        value_id = self.add(token, "op", f"{type(optimizer).__name__.lower()}_step", ())
        self.graph.nodes.append(Node(OPTIMIZER_UPDATE, tuple(refs), attrs, value_id, ""))
        self.graph.outputs.append(value_id)
        self.updates += 1

    def restore(self) -> list:
        """Put every parameter's own array and class back; return the names of those the step wrote
        behind dispatch's back (a trace must change nothing)."""
        for tensor in self.made_symbolic:
            plain(tensor)
        for array, copy in self.outside:  # a failed trace leaves the buffers it wrote as they were
            if not np.array_equal(array, copy, equal_nan=True):
                array[...] = copy
        self.outside = []
        changed = []
        for tensor, original, copy in self.saved:
            tensor.array = original
            if not np.array_equal(original, copy, equal_nan=True):
                original[...] = copy
                if id(tensor) not in self.written:  # an in-place op: the graph assigns it
                    changed.append(self.names.get(id(tensor), f"shape {tuple(original.shape)}"))
        self.put_back()
        return changed

    def restore_grads(self) -> None:
        """Give every parameter the trace read its ``.grad`` back (a trace that failed leaves
        no traced gradient behind for the eager call that runs instead)."""
        for tensor, grad in self.grads_before:
            tensor.grad = grad


class NotATrainingStep(GraphError):
    """The traced function made no ``optimizer.step()`` call: it is not a training step."""


class _TracingThread(threading.local):
    tracer: TrainingTracer | None = None


_TRACING = _TracingThread()


class _RecordOptimizerSteps:
    """While a training step is traced on this thread, ``OptimizerBase._apply`` records an
    ``OptimizerUpdate`` node instead of updating (other threads update as usual)."""

    lock = threading.Lock()
    users = 0
    original = None

    def __init__(self, tracer: TrainingTracer) -> None:
        self.tracer = tracer

    def __enter__(self):
        with _RecordOptimizerSteps.lock:
            if _RecordOptimizerSteps.users == 0:
                original = _RecordOptimizerSteps.original = OptimizerBase._apply

                def _apply(optimizer):
                    tracer = _TRACING.tracer
                    if tracer is None:
                        return original(optimizer)
                    return tracer.record_update(optimizer)

                OptimizerBase._apply = _apply
            _RecordOptimizerSteps.users += 1
        self.previous, _TRACING.tracer = _TRACING.tracer, self.tracer
        return self

    def __exit__(self, *exc_info) -> None:
        _TRACING.tracer = self.previous
        with _RecordOptimizerSteps.lock:
            _RecordOptimizerSteps.users -= 1
            if _RecordOptimizerSteps.users == 0:
                OptimizerBase._apply = _RecordOptimizerSteps.original


def parameter_names(function) -> dict:
    """``{id(parameter): name}`` for the Modules a step function reads (closure cells, globals
    it names, and ``self`` of a bound method), so summaries name parameters as state dicts do."""
    found: dict = {}
    candidates: list = []
    owner = getattr(function, "__self__", None)
    if owner is not None:
        candidates.append(("", owner))
        candidates.extend((f"{key}.", value) for key, value in vars(owner).items())
    code = getattr(function, "__code__", None)
    for cell_name, cell in zip(getattr(code, "co_freevars", ()), function.__closure__ or ()):
        try:
            candidates.append((f"{cell_name}.", cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    globals_ = getattr(function, "__globals__", {})
    for name in getattr(code, "co_names", ()):
        if name in globals_:
            candidates.append((f"{name}.", globals_[name]))
    for prefix, value in candidates:
        if isinstance(value, Module):
            for name, parameter in value.named_parameters():
                found.setdefault(id(parameter), f"{prefix}{name}")
    return found


def trace_training_step(function, specs: list) -> TrainingTracer:
    """Trace one call of ``function`` on sample inputs of ``specs`` into a ``TrainingTracer``'s
    graph: outputs are the call's tensors followed by one token per optimizer update."""
    tracer = TrainingTracer(specs, *sample_sizes(specs), parameter_names(function))
    inputs = traced_inputs(tracer, specs)
    random_state = get_rng_state()
    result = None
    succeeded = False
    try:
        with (
            dispatch_mode(tracer),
            tracing_thread(tracer),
            recording_backward(tracer.defer),
            _RecordOptimizerSteps(tracer),
            np.errstate(all="ignore"),
        ):
            try:
                result = function(*inputs)
            except SymbolicSizeError as error:  # a branch on a symbolic size
                raise GraphError(error.message, help=error.help) from None
            if tracer.deferred:
                raise GraphError(
                    "[compile] gradient clipping ran in the step but no optimizer.step() "
                    "followed it",
                    help="clip between loss.backward() and optimizer.step()",
                )
            refusal = GraphError(
                f"[compile] the traced step returned {type(result).__name__}; a compiled step "
                "returns None, a Tensor, or a tuple/list of Tensors",
                help="return the loss (and any outputs) as tensors; compute other values outside",
            )
            tracer.user_outputs = set_outputs(tracer, result, refusal, allow_none=True)
            tracer.write_back()
            succeeded = tracer.updates > 0
    finally:
        changed = tracer.restore()
        if not succeeded:
            tracer.restore_grads()
        set_rng_state(random_state)
        _release_graph_of(result)
    if changed:
        raise GraphError(
            f"[compile] the step changed parameters outside the ops it ran ({', '.join(changed)}"
            "): a compiled step would not repeat that",
            help="update parameters through optimizer.step() (or tensor ops) inside the step",
        )
    if tracer.updates == 0:
        error = NotATrainingStep(
            "[compile] the traced step made no optimizer.step() call, so the compiled step would "
            "train nothing",
            help="freeze(model, ...) compiles inference; a training step calls loss.backward() "
            "and optimizer.step()",
        )
        error.read_trainable = bool(tracer.params)  # its outputs would need autograd
        raise error
    graph = tracer.graph
    live = tracer.params + tracer.state
    graph.inputs = graph.inputs + [value_id for value_id, _ in live]
    return tracer


def _release_graph_of(result) -> None:
    """Drop the autograd history the traced call built (it held the sample activations)."""
    tensors = [result] if isinstance(result, Tensor) else list(result or ())
    for tensor in tensors:
        if isinstance(tensor, Tensor):
            tensor._node = None


def memory_plan(graph, sizes: dict) -> dict:
    """Bytes of the values alive at each node when the plan runs (slots are freed after their
    last reader), at symbol ``sizes``: ``{"peak": bytes, "peak_node": index, "parameters":
    bytes, "inputs": bytes}``. Parameters and inputs are held by the caller, not the plan."""

    def size_of(value_id) -> int:
        value = graph.values[value_id]
        shape = resolve(value.shape, sizes)
        return int(math.prod(shape)) * np.dtype(value.dtype).itemsize

    last_reader: dict = {}
    for index, node in enumerate(graph.nodes):
        for ref in node.input_ids():
            last_reader[ref] = index
    outside = set(graph.inputs) | set(graph.constants)
    live = 0
    peak, peak_node = 0, -1
    kept = set(graph.outputs)
    frees: dict = {}
    for value_id, index in last_reader.items():
        if value_id not in kept and value_id not in outside:
            frees.setdefault(index, []).append(value_id)
    for index, node in enumerate(graph.nodes):
        if node.output not in outside:
            live += size_of(node.output)
        if live > peak:
            peak, peak_node = live, index
        for value_id in frees.get(index, ()):
            live -= size_of(value_id)
    params = sum(size_of(v) for v in graph.values if graph.values[v].kind == "param")
    user_inputs = sum(size_of(v) for v in graph.inputs if graph.values[v].kind == "input")
    constants = sum(int(np.asarray(a).nbytes) for a in graph.constants.values())
    return {
        "peak": peak,
        "peak_node": peak_node,
        "parameters": params,
        "inputs": user_inputs,
        "constants": constants,
    }
