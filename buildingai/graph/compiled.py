"""``buildingai.compile``, the front door: with an input signature, a training step compiled as
``compile.py`` describes; without one, PyTorch's ``torch.compile(model)`` and
``torch.compile(fn)``, traced on the first call for each new set of input shapes.

What each call runs, for one signature (the shapes, dtypes and devices of the tensor arguments,
the other arguments' values and whether gradients are recorded):

- a training step (the function calls ``loss.backward()`` and ``optimizer.step()``): a
  ``CompiledStep`` graph, as ``compile(step, input_signature)`` builds;
- a forward computation whose result nobody can differentiate (under ``no_grad()`` or
  ``inference_mode()``, or reading no tensor that requires grad): a frozen graph, as ``freeze``
  traces, whose parameters and buffers are bound to the live tensors on every call, so training
  between calls is seen;
- anything else (a forward whose result ``backward()`` will be called on, a module in training
  mode or with forward hooks, a call that cannot be traced): the eager call, unchanged.

Graphs are kept per signature, up to ``recompile_limit`` of them (8, as PyTorch's); later new
signatures run eagerly, after one warning.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections import OrderedDict

import numpy as np

from ..autograd.dispatch import dispatch_mode
from ..autograd.mode import is_grad_enabled, no_grad
from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import is_floating
from ..backend.random import get_rng_state, set_rng_state
from ..errors import ArgumentError, BuildingAIError
from ..nn.module import Module
from ..ops.abstract import SymbolicSizeError
from .compile import CompiledStep, compile_step
from .executor import StaticGraph
from .graph import GraphError
from .spec import TensorSpec
from .trace import Tracer, _Traced, sample_sizes, set_outputs, traced_inputs, tracing_thread
from .training import NotATrainingStep, parameter_names

RECOMPILE_LIMIT = 8  # graphs kept per compiled function or module, as torch's recompile_limit

# torch.compile's modes: each asks inductor for another trade-off; here they all run the graph
# passes (``optimize=True``).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# torch.compile's backends with a counterpart: "inductor" traces and optimises, "aot_eager"
# traces without the passes, "eager" runs the Python code as it is.
BACKENDS = ("inductor", "aot_eager", "eager")


class CompileWarning(UserWarning):
    """A compiled function or module runs (part of its calls) eagerly; the message says why."""


# ----- the front door ----------------------------------------------------------------------------


def compile(  # noqa: A001 - buildingai.compile, as torch.compile
    model=None,
    input_signature: list | None = None,
    optimize: bool = True,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | None = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
):
    """Compile a training step, a function or a Module.

    ``compile(step, input_signature=[TensorSpec(...), ...])`` traces the training step into a
    ``CompiledStep`` (see ``graph/compile.py``). Without ``input_signature``, as PyTorch's
    ``torch.compile``:

    - ``compile(model)`` for a Module returns a ``CompiledModule``: the model's attributes,
      ``parameters()``, ``train()`` / ``eval()`` and ``__call__`` as before, ``state_dict()`` keys
      prefixed ``_orig_mod.`` as PyTorch's. A call whose result cannot need a gradient (under
      ``no_grad()`` / ``inference_mode()``, or with no parameter or input requiring grad) with
      every sub-module in eval mode and no forward hooks runs a frozen graph, one per input
      signature; every other call — training, where ``loss.backward()`` follows — runs the model
      eagerly, so autograd is exactly eager's.
    - ``compile(fn)`` returns a ``CompiledFunction``: on the first call for each input signature
      the function is traced as a training step if it calls ``optimizer.step()``, else as a
      forward graph when its result needs no gradient, else it runs eagerly.

    Results equal the eager call's. Python code in a traced function runs when a signature is
    traced (up to twice: once to learn whether it is a training step), not on every call.

    PyTorch's keywords, and what they mean here:

    - ``fullgraph=True``: a call that should run a graph but cannot be traced raises the
      tracer's error instead of running eagerly. (Calls that run eagerly by design, such as a
      module's forward while gradients are recorded, still do.)
    - ``dynamic=True``: forward graphs take the batch dimension (dimension 0 of each tensor
      argument of the first one's size) as a symbolic size, so one graph serves every batch
      size; a training step is still traced once per shape. ``None`` or ``False``: one graph per
      shape, so a last, smaller batch traces once more.
    - ``backend``: ``"inductor"`` (PyTorch's default) traces and runs the graph passes;
      ``"aot_eager"`` traces without the passes; ``"eager"`` runs the function as it is.
    - ``mode``: ``"default"``, ``"reduce-overhead"``, ``"max-autotune"``,
      ``"max-autotune-no-cudagraphs"`` are accepted and all run the graph passes: there are no
      kernels to autotune and no CUDA graphs.
    - ``options``: inductor's settings; accepted and not used.
    - ``disable=True`` returns ``model`` itself.

    With ``model=None``, returns a decorator: ``@buildingai.compile(fullgraph=True)``.
    """
    if input_signature is not None:
        if isinstance(model, Module):
            raise ArgumentError(
                "[compile] input_signature compiles a training step function, not a Module",
                help="compile(model) without a signature wraps a model; for a model's training "
                "step use freeze(model, [x_spec, y_spec], train=True, optimizer=optimizer)",
            )
        return compile_step(model, input_signature, optimize)
    settings = _Settings(fullgraph, dynamic, backend, mode, optimize)
    if model is None:
        return functools.partial(
            compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
            options=options, disable=disable, optimize=optimize,
        )  # fmt: skip
    if disable:
        return model
    if isinstance(model, Module):
        return CompiledModule(model, settings)
    if not callable(model):
        raise ArgumentError(
            f"[compile] expects a Module or a function, got {type(model).__name__}",
            help="compile(model), compile(fn), or compile(step, input_signature=[...])",
        )
    return CompiledFunction(model, settings)


class _Settings:
    """torch.compile's keywords, checked once."""

    def __init__(self, fullgraph, dynamic, backend, mode, optimize: bool) -> None:
        if backend is None:
            backend = "inductor"
        if not isinstance(backend, str) or backend not in BACKENDS:
            shown = backend if isinstance(backend, str) else type(backend).__name__
            raise ArgumentError(
                f"[compile] backend {shown!r} has no counterpart here (custom backends receive "
                "PyTorch FX graphs)",
                help=f"use one of {', '.join(map(repr, BACKENDS))}",
            )
        if mode is not None and mode not in MODES:
            raise ArgumentError(
                f"[compile] unknown mode {mode!r}",
                help=f"use one of {', '.join(map(repr, MODES))} (all run the graph passes here)",
            )
        self.fullgraph = bool(fullgraph)
        self.dynamic = bool(dynamic)
        self.backend = backend
        self.mode = mode
        self.optimize = optimize and backend == "inductor"


# ----- signatures -------------------------------------------------------------------------------


class _Unhashable(Exception):
    """An argument that cannot key the cache (an array, a dict): the call runs eagerly."""


def _flatten(value, tensors: list):
    """The cache key part of one argument; its tensors (nested in tuples and lists too) are
    appended to ``tensors``, in order."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return ("tensor",)
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_flatten(item, tensors) for item in value))
    try:
        hash(value)
    except TypeError:
        raise _Unhashable(type(value).__name__) from None
    return ("value", type(value), value)


def _rebuild(part, tensors):
    """The argument ``_flatten`` described, with the next tensors of the iterator ``tensors``."""
    kind = part[0]
    if kind == "tensor":
        return next(tensors)
    if kind == "value":
        return part[2]
    items = [_rebuild(item, tensors) for item in part[1]]
    return tuple(items) if kind == "tuple" else items


class _Call:
    """One call's arguments split into the tensors (graph inputs) and the rest (the key)."""

    def __init__(self, args: tuple, kwargs: dict, dynamic: bool) -> None:
        self.tensors: list = []
        self.structure = (
            tuple(_flatten(arg, self.tensors) for arg in args),
            tuple((name, _flatten(value, self.tensors)) for name, value in kwargs.items()),
        )
        self.batch = None
        if dynamic:
            for tensor in self.tensors:
                if tensor.ndim >= 1:
                    self.batch = tensor.array.shape[0]
                    break

    def shapes(self) -> list:
        """The shape of each tensor argument, with ``None`` for the batch dimension when
        ``dynamic`` made one symbolic."""
        shapes = []
        for tensor in self.tensors:
            shape = tensor.array.shape
            if self.batch is not None and shape and shape[0] == self.batch:
                shape = (None,) + shape[1:]
            shapes.append(shape)
        return shapes

    def specs(self) -> list:
        """A ``TensorSpec`` per tensor argument (its shape, as ``shapes``, and dtype)."""
        return [TensorSpec(shape, t.dtype) for shape, t in zip(self.shapes(), self.tensors)]

    def key(self, grad_enabled: bool) -> tuple:
        """What a graph is specialised on: shapes, dtypes, array types and devices, which tensors
        require grad, the other arguments, and whether gradients are recorded."""
        described = tuple(
            (shape, t.array.dtype.str, type(t.array), getattr(t.array, "device", None),
             t.requires_grad)
            for shape, t in zip(self.shapes(), self.tensors)
        )  # fmt: skip
        return (grad_enabled, self.structure, described)

    def function_of_tensors(self, target):
        """``target`` as a function of the tensor arguments alone (the others fixed)."""
        structure = self.structure
        if not structure[1] and all(part == ("tensor",) for part in structure[0]):
            return target

        def call(*tensors):
            remaining = iter(tensors)
            args = [_rebuild(part, remaining) for part in structure[0]]
            kwargs = {name: _rebuild(part, remaining) for name, part in structure[1]}
            return target(*args, **kwargs)

        call.__name__ = getattr(target, "__name__", "call")
        return call

    def needs_gradient(self) -> bool:
        return any(tensor.requires_grad for tensor in self.tensors)


# ----- forward graphs with live parameters -------------------------------------------------------


class LiveTracer(Tracer):
    """A ``Tracer`` that makes every tensor the call reads from outside (parameters, buffers,
    tensors in closures) a graph input bound to the live tensor on every call, never a copied
    constant: training between calls changes what the graph reads, and no pass folds it."""

    def __init__(self, specs: list, names: dict) -> None:
        super().__init__(specs, *sample_sizes(specs), {})
        self.names = names  # id(tensor) -> state-dict name
        self.live: list = []  # (value id, Tensor) of each tensor read from outside the call

    def before_inplace(self, name: str, target: Tensor) -> None:
        """Every tensor from outside the call is live (a buffer, a tensor in a closure), and a
        forward graph changes none: only a tensor the call made with traced ops (or a view of
        one) may be written in place; anything else is refused before it is written."""
        with self.lock:
            value_id = self.value_of_memory(target)
            kind = None if value_id is None else self.graph.values[value_id].kind
            if kind != "op":
                raise self.refused_write(name, target, "input" if kind == "input" else "const")

    def capture(self, tensor: Tensor, op) -> int:
        array = tensor.array
        if id(array) in self.arrays or isinstance(array, _Traced):
            return super().capture(tensor, op)  # an alias of a traced value, or refused
        name = self.names.get(id(tensor)) or f"captured{len(self.live)}"
        value_id = self.add(tensor, "param", name, tuple(array.shape))
        self.live.append((value_id, tensor))
        return value_id


class ForwardGraph:
    """A frozen forward computation for one signature; ``live`` are the outside tensors it
    reads, bound on every call."""

    def __init__(self, tracer: LiveTracer, optimize: bool) -> None:
        self.live = [tensor for _, tensor in tracer.live]
        self.live_layout = [(tensor.array.shape, tensor.array.dtype) for tensor in self.live]
        graph = tracer.graph
        graph.inputs = graph.inputs + [value_id for value_id, _ in tracer.live]
        static = StaticGraph(graph)
        self.static = static.optimized() if optimize else static
        self.symbol = next(iter(graph.symbols), None)  # "batch" with dynamic=True

    def needs_gradient(self) -> bool:
        """Whether the eager call's result would require grad (it reads a tensor that does)."""
        return any(t.requires_grad and is_floating(t.dtype) for t in self.live)

    def still_fits(self) -> bool:
        """False when an outside tensor was given another shape or dtype (``p.data = ...``)."""
        return all(
            tensor.array.shape == shape and tensor.array.dtype == dtype
            for tensor, (shape, dtype) in zip(self.live, self.live_layout)
        )

    def __call__(self, call: _Call):
        arrays = [tensor.array for tensor in call.tensors]
        arrays.extend(tensor.array for tensor in self.live)
        sizes = {} if self.symbol is None else {self.symbol: call.batch}
        xp = np if _device._cupy is None or not arrays else _device.array_namespace(arrays[0])
        outputs = [Tensor(array) for array in self.static.run(arrays, sizes, xp)]
        kind = self.static.graph.output_kind
        if kind == "single":
            return outputs[0]
        return tuple(outputs) if kind == "tuple" else outputs


def trace_forward(function, specs: list, names: dict, optimize: bool) -> ForwardGraph:
    """Trace one call of ``function`` (of tensor arguments of ``specs``) without recording
    gradients; the random streams are left where they were."""
    tracer = LiveTracer(specs, names)
    inputs = traced_inputs(tracer, specs)
    random_state = get_rng_state()
    try:
        with (
            no_grad(),
            dispatch_mode(tracer),
            tracing_thread(tracer),
            np.errstate(all="ignore"),  # random sample inputs may be outside an op's domain
        ):
            try:
                result = function(*inputs)
            except SymbolicSizeError as error:
                raise GraphError(error.message, help=error.help) from None
            refusal = GraphError(
                f"[compile] the traced call returned {type(result).__name__}; a graph returns a "
                "Tensor or a tuple/list of Tensors"
            )
            set_outputs(tracer, result, refusal)
    finally:
        set_rng_state(random_state)
    return ForwardGraph(tracer, optimize)


# ----- the cache -------------------------------------------------------------------------------


class _Eager:
    """A signature that runs eagerly, and why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Compiled:
    """What ``CompiledFunction`` and ``CompiledModule`` share: the cache of what each signature
    runs, the recompile limit and the warnings."""

    def _setup(self, name: str, settings: _Settings) -> None:
        self._name = name
        self._settings = settings
        self._entries: OrderedDict = OrderedDict()  # signature key -> ForwardGraph, step or _Eager
        self._warned: set = set()
        self.recompile_limit = RECOMPILE_LIMIT

    def cache_info(self) -> list:
        """One line per signature seen: its input shapes and what runs it (``graph``,
        ``training step`` or ``eager: why``)."""
        lines = []
        for key, entry in self._entries.items():
            shapes = ", ".join(f"{shape} {dtype}" for shape, dtype, *_ in key[2])
            if isinstance(entry, ForwardGraph):
                what = "graph"
            elif isinstance(entry, CompiledStep):
                what = "training step"
            else:
                what = f"eager: {entry.reason}"
            lines.append(f"({shapes}) -> {what}")
        return lines

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            # point at the user's line: the first frame outside this file
            level, frame = 1, sys._getframe(0)
            while frame.f_back is not None and frame.f_code.co_filename == __file__:
                frame, level = frame.f_back, level + 1
            warnings.warn(message, CompileWarning, stacklevel=level)

    def _room_for(self) -> bool:
        """Whether a new signature may be traced; warns once when the limit is reached."""
        if len(self._entries) < self.recompile_limit:
            return True
        self._warn(
            "limit",
            f"[compile] {self._name}: the recompile limit ({self.recompile_limit} input "
            f"signatures) is reached; new signatures run eagerly (help: pass dynamic=True for "
            "changing batch sizes, or raise the compiled object's recompile_limit)",
        )
        return False

    def _failed(self, key, error: BuildingAIError, eager_call):
        """Run a signature whose trace failed eagerly, now and from now on (``fullgraph=True``:
        raise instead). An error that is not the tracer's (a shape error, say) is the eager
        call's to raise, as it raises it without compile, and then nothing is cached."""
        if isinstance(error, GraphError):
            result = None
        else:
            result = eager_call()  # raises the user's error, if it is one
        if self._settings.fullgraph:
            raise error
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        self._warn(
            "trace",
            f"[compile] {self._name}: a call could not be traced and runs eagerly: {reason} "
            "(help: fullgraph=True raises instead)",
        )
        self._entries[key] = _Eager(reason)
        return eager_call() if isinstance(error, GraphError) else result


class CompiledFunction(_Compiled):
    """``compile(fn)``: call it as ``fn``. Each new input signature is traced as a training step
    (``CompiledStep``), a forward graph, or runs eagerly (see ``compile``)."""

    def __init__(self, function, settings: _Settings) -> None:
        self._setup(getattr(function, "__name__", "function"), settings)
        self._orig_fn = function
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        function = self._orig_fn
        if self._settings.backend == "eager":
            return function(*args, **kwargs)
        try:
            call = _Call(args, kwargs, self._settings.dynamic)
        except _Unhashable:
            return function(*args, **kwargs)
        grad_enabled = is_grad_enabled()
        key = call.key(grad_enabled)
        entry = self._entries.get(key)
        if entry is None:
            if not self._room_for():
                return function(*args, **kwargs)
            return self._first_call(key, call, grad_enabled, args, kwargs)
        if isinstance(entry, ForwardGraph):
            if entry.still_fits():
                return entry(call)
            del self._entries[key]
            return self._first_call(key, call, grad_enabled, args, kwargs)
        if isinstance(entry, CompiledStep):
            return entry(*call.tensors)
        return function(*args, **kwargs)

    def _first_call(self, key, call: _Call, grad_enabled: bool, args, kwargs):
        function = self._orig_fn
        if grad_enabled and call.needs_gradient():
            self._entries[key] = _Eager("an input requires grad")
            return function(*args, **kwargs)
        target = call.function_of_tensors(function)
        names = parameter_names(function)
        step_error = None
        if grad_enabled:
            step = CompiledStep(target, call.specs(), self._settings.optimize)
            try:
                result = step(*call.tensors)
            except NotATrainingStep as error:
                if error.read_trainable:  # its result is meant for backward()
                    self._entries[key] = _Eager("its result requires grad")
                    return function(*args, **kwargs)
            except BuildingAIError as error:
                step_error = error  # a forward the step tracer refuses may still freeze
            else:
                self._entries[key] = step
                return result
        try:
            graph = trace_forward(target, call.specs(), names, self._settings.optimize)
        except BuildingAIError as error:
            return self._failed(key, step_error or error, lambda: function(*args, **kwargs))
        if grad_enabled and graph.needs_gradient():
            self._entries[key] = _Eager("its result requires grad")
            return function(*args, **kwargs)
        self._entries[key] = graph
        return graph(call)

    def __repr__(self) -> str:
        return f"<CompiledFunction {self._name}>"


class CompiledModule(Module, _Compiled):
    """``compile(model)``: the model, called through frozen graphs where no gradient can be
    needed and eagerly elsewhere (see ``compile``). The model is ``_orig_mod``, a sub-module,
    so ``state_dict()`` keys carry the prefix ``_orig_mod.`` as in PyTorch; ``load_state_dict``
    takes keys with or without it. Other attributes are the model's."""

    def __init__(self, model: Module, settings: _Settings) -> None:
        super().__init__()
        self._orig_mod = model
        self.training = model.training
        self._setup(type(model).__name__, settings)

    def __getattr__(self, name: str):
        try:
            return Module.__getattr__(self, name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        model = self._orig_mod
        reason = self._eager_by_design(args, kwargs)
        if reason is not None:
            return model(*args, **kwargs)
        try:
            call = _Call(args, kwargs, self._settings.dynamic)
        except _Unhashable:
            return model(*args, **kwargs)
        key = call.key(False)
        entry = self._entries.get(key)
        if isinstance(entry, ForwardGraph) and entry.still_fits():
            return entry(call)
        if isinstance(entry, _Eager):
            return model(*args, **kwargs)
        if entry is None and not self._room_for():
            return model(*args, **kwargs)
        names = {}
        for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            names[id(tensor)] = name
        target = call.function_of_tensors(model)
        try:
            graph = trace_forward(target, call.specs(), names, self._settings.optimize)
        except BuildingAIError as error:
            return self._failed(key, error, lambda: model(*args, **kwargs))
        self._entries[key] = graph
        return graph(call)

    def _eager_by_design(self, args: tuple, kwargs: dict) -> str | None:
        """Why this call runs the model eagerly, or None when a frozen graph gives its result."""
        if self._settings.backend == "eager":
            return "backend='eager'"
        for module in self._orig_mod.modules():
            if module.training:
                return "training mode"
            if module._forward_pre_hooks or module._forward_hooks:
                return "forward hooks"
        if is_grad_enabled():
            values = list(args) + list(kwargs.values())
            if any(isinstance(v, Tensor) and v.requires_grad for v in values):
                return "an input requires grad"
            if any(p.requires_grad for p in self._orig_mod.parameters()):
                return "gradients are recorded"
        return None

    def load_state_dict(self, state_dict, strict: bool = True):
        """Load a state dict saved from this compiled module (keys ``_orig_mod.…``) or from the
        model itself (keys without the prefix)."""
        if state_dict and not any(str(key).startswith("_orig_mod.") for key in state_dict):
            return self._orig_mod.load_state_dict(state_dict, strict=strict)
        return super().load_state_dict(state_dict, strict=strict)


__all__ = ["CompileWarning", "CompiledFunction", "CompiledModule", "RECOMPILE_LIMIT", "compile"]
