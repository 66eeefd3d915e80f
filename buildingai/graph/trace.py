"""``freeze``: trace one call through dispatch into a static ``Graph``.

The tracer is a ``DispatchMode``: it sees every op call (op record, inputs, attributes, output)
and nothing else, so a frozen graph holds exactly the ops eager execution ran.

Symbolic sizes. The call runs once, on sample inputs in which each symbolic dimension of the
signature takes a sample size. Each value's symbolic shape comes from the op record's abstract
evaluation (``op.infer``) on the symbolic shapes of its inputs, and is checked against the shape
the op really produced. Python code in the call sees ``x.shape`` entries that are symbolic ints
(``symbolic.SymbolicInt``): the sample size, carrying its ``DimExpr``, so that a reshape target,
a view or a slice bound computed from them (``x.reshape(x.shape[0], -1)``, ``x[:, : n - 1]``)
becomes a symbolic attribute of the node. A size no ``DimExpr`` expresses (``n // 2`` of an odd
sample, ``1 / n``) and a comparison whose answer depends on the sizes (``if n > 2``) are
refused, naming the file and line, rather than frozen for one size.

Constants. Factories (``zeros``, ``ones``, ``full``, ``arange``, ``eye``, ``linspace`` and the
``*_like`` forms) are ops, so ``zeros(x.shape[0], 16)`` or ``arange(x.shape[1])`` is a node whose
size attributes stay symbolic. A tensor the call reads that no traced op made (built from NumPy
data, or before the call) is a constant of the shape it has: its shape is never guessed.

Data dependence. While tracing, reading the value of a tensor that depends on the inputs
(``bool(x)``, ``x.item()``, ``x.tolist()``, ``x.numpy()``, ``int(x)``...) raises a
``GraphError`` naming the file and line: a static graph cannot hold a Python branch on a tensor
value. Arrays computed from the inputs' values behind dispatch's back (with ``.array``) carry a
mark (``_Traced``, a NumPy subclass that survives NumPy operations), so a constant or an index
made from them is refused too.

The tracer is a dispatch mode that makes the trace's inputs and every op output a
``SymbolicTensor``: their shapes read in symbolic sizes and reading their values is refused. Only
those tensors, and only on the tracing thread, behave differently: the Tensor class is never
changed, and another thread running eager code meanwhile sees plain tensors.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..autograd.dispatch import DispatchMode, dispatch_mode
from ..autograd.mode import no_grad
from ..autograd.state import module_path
from ..autograd.tensor import Tensor, _Size, version_counter
from ..backend import device as _device
from ..errors import BuildingAIError
from ..ops.abstract import DimExpr, SymbolicSizeError, ValueSpec
from . import symbolic as symbolic_sizes
from .graph import Graph, GraphError, Literal, Node, Value
from .spec import TensorSpec
from .symbolic import (
    DerivedFloat,
    DerivedInt,
    SymbolicInt,
    is_symbolic,
    resolve,
    show_shape,
    symbolic_int,
    where,
)

# Sample sizes of the symbols, in order of first appearance: distinct primes above the sizes
# layers commonly fix, so that checking op.infer against forward tells symbols and fixed sizes
# apart.
_SAMPLE_SIZES = (13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)


class _Traced(np.ndarray):
    """A NumPy array whose values depend on the traced call's inputs. NumPy operations keep the
    subclass, so an array computed from it outside dispatch keeps the mark; so do the NumPy
    functions that would return plain arrays (``nonzero``, ``unique``, ``concatenate``,
    ``searchsorted``...), through ``__array_function__``."""

    sample_values = True  # dispatch makes no value check (Op.checks_values) on these

    def __array_function__(self, func, types, args, kwargs):
        return _marked(super().__array_function__(func, types, args, kwargs))


def _marked(value):
    """``value`` with every plain array in it (or in its tuple or list) viewed as ``_Traced``."""
    if type(value) is np.ndarray:
        return value.view(_Traced)
    if type(value) in (tuple, list):
        return type(value)(_marked(item) for item in value)
    return value


class _TracingThread(threading.local):
    tracer = None  # the Tracer recording on this thread, if any


_tracing = _TracingThread()


class Tracer(DispatchMode):
    """Records every op call of the tracing thread into a ``Graph`` with symbolic shapes."""

    def __init__(self, specs: list, symbols: dict, sizes: dict, parameter_names: dict) -> None:
        self.graph = Graph(specs=specs, symbols=symbols)
        self.sizes = sizes  # symbol -> sample size
        self.parameter_names = parameter_names  # id(tensor) -> state-dict name
        self.lock = threading.Lock()
        self.ids: dict = {}  # id(tensor) -> value id
        self.devices: dict = {}  # value id -> device string
        self.versions: dict = {}  # value id -> (version counter, version when first seen)
        self.dependent: set = set()  # ids of tensors whose values depend on the inputs
        # id(array) -> (value id, (version counter, version then)): the value each array the
        # graph knows holds, so that any tensor over that memory reads it (in-place ops read
        # the previous value through a fresh tensor over the array they write)
        self.arrays: dict = {}
        # The tables above are keyed by id(): a tensor or array freed during the call gives
        # its id up for reuse, so its entries go with it (``hold``). Keeping every traced
        # tensor alive instead would hold every intermediate array of the call at once.
        self.watched: dict = {}  # id -> weak reference whose callback forgets that id
        # A trace runs on the host: a GPU tensor the call reads holds a host copy meanwhile
        self.moved: list = []  # (tensor, its device array), given back by ``put_back``
        self.host_copies: dict = {}  # id(device array) -> its one host copy

    # ----- values -------------------------------------------------------------------------------
    def add(self, tensor: Tensor, kind: str, name: str, shape: tuple, array=None) -> int:
        value_id = len(self.graph.values)  # ids are assigned in order while tracing
        self.graph.values[value_id] = Value(
            value_id, tuple(shape), tensor.dtype, kind, name or f"t{value_id}"
        )
        if array is not None:
            self.graph.constants[value_id] = array
        self.ids[id(tensor)] = value_id
        self.devices[value_id] = str(tensor.device)
        counter = version_counter(tensor)
        self.versions[value_id] = (counter, counter[0])
        self.hold(tensor)
        self.note_array(tensor.array, self.arrays, (value_id, self.versions[value_id]))
        return value_id

    def hold(self, tensor: Tensor) -> None:
        """Forget ``tensor``'s id in ``ids`` and ``dependent`` when it is freed, before another
        object can take the id over."""
        self._watch(tensor, (self.ids, self.dependent))

    def note_array(self, array, table: dict, entry) -> None:
        """``table[id(array)] = entry``, the entry dropped when ``array`` is freed."""
        table[id(array)] = entry
        self._watch(array, (table,))

    def _watch(self, thing, tables: tuple) -> None:
        """Drop ``id(thing)`` from each of ``tables`` (dicts or sets) when ``thing`` is freed."""
        key = id(thing)
        watch = self.watched.get(key)
        if watch is None:
            forget: dict = {}  # id(table) -> table
            watched = self.watched

            def freed(_, key=key):  # runs as ``thing`` is freed, on any thread
                watched.pop(key, None)
                for table in forget.values():
                    if isinstance(table, set):
                        table.discard(key)
                    else:
                        table.pop(key, None)

            watch = watched[key] = (weakref.ref(thing, freed), forget)
        watch[1].update((id(table), table) for table in tables)

    def ref(self, tensor: Tensor, op) -> int:
        value_id = self.ids.get(id(tensor))
        if value_id is None:
            return self.capture(tensor, op)
        counter, seen = self.versions[value_id]
        if counter[0] != seen:
            # written since through another tensor over the same array (buffer.detach().add_(y)):
            # the array's latest value, unless that too was changed behind the graph's back
            value_id, version = self.arrays.get(id(tensor.array), (value_id, (counter, seen)))
            self.check_unchanged(value_id, version, tensor, op)
            self.ids[id(tensor)] = value_id
        return value_id

    def check_unchanged(self, value_id: int, version: tuple, tensor: Tensor, op) -> None:
        """Refuse to read ``value_id`` through ``tensor`` when its memory was modified in place
        since (through a view, say) by an op that did not make it hold a new value."""
        counter, seen = version
        if counter[0] != seen:
            raise GraphError(
                f"[freeze] '{op.name}' reads a tensor ({self.graph.values[value_id].name}, shape "
                f"{tuple(tensor.array.shape)}) that was modified in place after it was traced "
                f"(by '{counter[1]}'){where()}",
                help="a static graph records values, not memory: use the out-of-place form "
                "(x = x + y instead of x += y or x.add_(y)) inside the frozen call",
            )

    def value_of_memory(self, tensor: Tensor) -> int | None:
        """The value id the memory ``tensor`` writes into holds (its base's, for a view), or
        None when the graph has not read that memory."""
        owner = tensor if tensor._base is None else tensor._base
        value_id = self.ids.get(id(owner))
        if value_id is None:
            value_id, _ = self.arrays.get(id(owner.array), (None, None))
        return value_id

    def __dispatch__(self, op, inputs: tuple, attrs: dict):
        """Pass every op on; first, a GPU tensor it reads gets a host copy (``on_host``)."""
        if _device._cupy is not None:
            for value in inputs:
                if isinstance(value, Tensor):
                    self.on_host(value)
        return None

    def on_host(self, tensor: Tensor) -> None:
        """Give a GPU tensor the call reads a host copy of its array until ``put_back``: the
        trace records ops, not devices, and runs on the host; the graph then runs where its
        inputs live and places its constants there (``executor.Plan.initial_for``)."""
        array = tensor.array
        if _device._cupy is None or isinstance(array, np.ndarray):
            return
        host = self.host_copies.get(id(array))
        if host is None:  # one copy per array, so tensors over one array stay aliases
            host = self.host_copies[id(array)] = _device.to_device(array, _device.CPU)
        self.moved.append((tensor, array))
        tensor.array = host

    def put_back(self) -> None:
        """Give every tensor ``on_host`` moved its device array back."""
        for tensor, array in reversed(self.moved):
            tensor.array = array
        self.moved.clear()
        self.host_copies.clear()

    def capture(self, tensor: Tensor, op) -> int:
        """A tensor the call read that no traced op made: a parameter or a constant, of the
        shape it has (a size that follows the inputs comes from a factory op instead)."""
        name = self.parameter_names.get(id(tensor))
        self.on_host(tensor)
        array = tensor.array
        shape = tuple(array.shape)
        if name is not None:
            return self.add(tensor, "param", name, shape, array)
        alias, version = self.arrays.get(id(array), (None, None))
        if alias is not None:  # Tensor(x.array): another tensor over an array the graph read
            self.check_unchanged(alias, version, tensor, op)
            self.ids[id(tensor)] = alias
            self.hold(tensor)
            return alias
        if isinstance(array, _Traced):
            reader = f" (first read by '{op.name}'{_in_module()}){where()}"
            raise GraphError(
                f"[freeze] a tensor created outside the traced ops{reader} holds values computed "
                "from the inputs behind dispatch's back: its values depend on the input values",
                help="compute it with tensor ops from the inputs so that the graph records how it "
                "is made, instead of from .array",
            )
        count = sum(1 for v in self.graph.values.values() if v.kind == "const")
        # a copy: the tensor may be changed after the call, the graph must not change
        return self.add(tensor, "const", f"const{count}", shape, np.array(array, copy=True))

    # ----- ops ----------------------------------------------------------------------------------
    def after_op(self, op, inputs, output, attrs) -> None:
        # parallel() branches of the call report from pool threads: one op at a time
        with self.lock:
            self.record(op, inputs, output, attrs)

    def before_inplace(self, name: str, target: Tensor) -> None:
        """A frozen graph changes nothing outside itself, so writing in place into a
        parameter, a buffer, a constant or an input (or into a view of one) is refused before
        anything is written. Memory the graph has not read yet and that is no known parameter
        or buffer (a lazy layer initialising its parameters) is captured, as it is then, when
        an op reads it."""
        with self.lock:
            value_id = self.value_of_memory(target)
            owner = target if target._base is None else target._base
            kind = None if value_id is None else self.graph.values[value_id].kind
            if self.is_named(owner):
                kind = "param"
            if kind in ("param", "const", "input"):
                raise self.refused_write(name, target, kind)

    def is_named(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` is a parameter or buffer of the traced model."""
        return id(tensor) in self.parameter_names

    def refused_write(self, name: str, target: Tensor, kind: str | None) -> GraphError:
        what = {"param": "a parameter or buffer", "const": "a tensor from outside the call",
                "input": "an input of the call"}.get(kind, "a traced tensor")  # fmt: skip
        if target._base is not None:
            what = f"a view of {what}"
        return GraphError(
            f"[freeze] '{name}'{_in_module()} writes into {what} (shape "
            f"{tuple(target.shape)}) in place{where()}: a frozen graph computes its "
            "outputs and changes nothing else",
            help="use the out-of-place form (y = x.relu() instead of x.relu_(), "
            "inplace=False) for that tensor",
        )

    def after_inplace(self, name: str, target: Tensor, result: Tensor | None) -> None:
        """``x.relu_()`` or ``F.relu(x, inplace=True)`` inside the call: ``x`` now holds
        ``result``'s value, so the ops that read ``x`` (or its memory, through any tensor)
        afterwards read that node."""
        with self.lock:
            value_id = self.ids.get(id(target))
            if value_id is None:
                value_id, _ = self.arrays.get(id(target.array), (None, None))
            if value_id is None:
                # not read by the graph yet (a lazy layer initialising its parameters): the
                # graph captures it, as it is then, when an op reads it
                return
            if result is None:
                raise self.refused_write(name, target, self.graph.values[value_id].kind)
            result_id = self.ids.get(id(result))
            if result_id is None:
                return
            self.ids[id(target)] = result_id
            counter = version_counter(target)
            self.versions[result_id] = (counter, counter[0])
            self.hold(target)
            # the next in-place op reads the previous value through another tensor over this
            # array (``x.mul_(a).add_(b)``): that tensor must read this value, not an older one
            self.note_array(target.array, self.arrays, (result_id, self.versions[result_id]))
            if id(result) in self.dependent:
                self.dependent.add(id(target))

    def record(self, op, inputs, output, attrs) -> None:
        refs = []
        specs = []
        depends = False
        for value in inputs:
            if isinstance(value, Tensor):
                value_id = self.ref(value, op)
                refs.append(value_id)
                specs.append(self.spec(value_id))
                # a tensor over an input's memory (x.detach(), x.data) depends on it too
                depends = depends or id(value) in self.dependent or type(value.array) is _Traced
            else:
                refs.append(Literal(_literal(value, op)))
                specs.append(value)
        symbolic_attrs = {key: _attribute(item, op, key) for key, item in attrs.items()}
        shape = self.infer(op, specs, symbolic_attrs, output)
        if depends:
            self.dependent.add(id(output))
            data = output.array
            if type(data) is np.ndarray:
                output.array = data.view(_Traced)
        value_id = self.add(symbolic(output), "op", "", shape)
        self.graph.nodes.append(Node(op, tuple(refs), symbolic_attrs, value_id, _module_path()))

    def spec(self, value_id: int) -> ValueSpec:
        value = self.graph.values[value_id]
        return ValueSpec(value.shape, value.dtype, self.devices[value_id])

    def infer(self, op, specs: list, attrs: dict, output: Tensor) -> tuple:
        """The symbolic shape of ``output`` from ``op.infer``, checked against the real one."""
        actual = tuple(output.array.shape)
        symbolic = any(isinstance(s, ValueSpec) and is_symbolic(s.shape) for s in specs)
        symbolic = symbolic or is_symbolic(attrs)
        try:
            inferred = op.infer(*specs, **attrs)
        except NotImplementedError:
            if not symbolic:
                return actual
            raise GraphError(
                f"[freeze] op '{op.name}'{_in_module()} has no abstract evaluation (infer), so "
                f"its output shape cannot follow the symbolic sizes of inputs "
                f"{', '.join(map(repr, specs))}{where()}",
                help="make the dimensions fixed in the input signature (or give the op record "
                "an infer method)",
            ) from None
        except SymbolicSizeError as error:
            raise GraphError(
                f"[freeze] the output shape of '{op.name}'{_in_module()} cannot be expressed in "
                f"the symbolic sizes (inputs {', '.join(map(repr, specs))}): {error.message}"
                f"{where()}",
                help="make the dimension fixed in the input signature",
            ) from None
        except BuildingAIError as error:
            if symbolic and self.infers_at_sample_sizes(op, specs, attrs):
                raise self.fixed_meets_symbolic(op, specs, error) from None
            raise _disagrees(op, specs, attrs, f"infer raised: {error.message}") from None
        if isinstance(inferred, tuple):
            if len(inferred) != 1:
                raise _disagrees(op, specs, attrs, f"infer gives {len(inferred)} outputs, not 1")
            inferred = inferred[0]
        concrete = resolve(inferred.shape, self.sizes)
        if concrete != actual or inferred.dtype != output.dtype:
            raise _disagrees(
                op,
                specs,
                attrs,
                f"infer gives {show_shape(inferred.shape)} {inferred.dtype} = {concrete} at "
                f"sizes {self.sizes}, but forward returned {actual} {output.dtype}",
            )
        return tuple(inferred.shape)

    def infers_at_sample_sizes(self, op, specs: list, attrs: dict) -> bool:
        """Whether ``op.infer`` accepts the inputs with every symbol at its sample size."""
        concrete = [
            s.with_shape(resolve(s.shape, self.sizes)) if isinstance(s, ValueSpec) else s
            for s in specs
        ]
        try:
            op.infer(*concrete, **resolve(attrs, self.sizes))
        except (BuildingAIError, NotImplementedError):
            return False
        return True

    def fixed_meets_symbolic(self, op, specs: list, error: BuildingAIError) -> GraphError:
        """The error for shapes that agree only at the sample sizes: a fixed size (a constant
        made from NumPy data, a size computed outside the trace) where a symbolic one is needed."""
        return GraphError(
            f"[freeze] '{op.name}'{_in_module()} gets inputs "
            f"{', '.join(repr(s) for s in specs if isinstance(s, ValueSpec))} that fit together "
            f"only at this trace's sample sizes {self.sizes} ({error.message}): a fixed size "
            f"stands where a symbolic one is needed, so the graph would work for one size only"
            f"{where()}",
            help="make that tensor with ops sized from the inputs (bai.zeros(x.shape[0], ...), "
            "bai.arange(x.shape[1]), ones_like(x)) rather than from NumPy data or sizes read "
            "before the call, or fix the dimension in the input signature",
        )


def _disagrees(op, specs, attrs, detail: str) -> GraphError:
    return GraphError(
        f"[freeze] internal error: the abstract evaluation of '{op.name}'{_in_module()} "
        f"disagrees with its forward on inputs {', '.join(map(repr, specs))} and attributes "
        f"{attrs}: {detail}",
        help="this is a bug in the op record's infer: please report it with this message",
    )


def _module_path() -> str:
    return ".".join(module_path())


def _in_module() -> str:
    path = _module_path()
    return f" in {path}" if path else ""


def _literal(value, op):
    """A Python input of an op, refused when it was computed from symbolic sizes."""
    if isinstance(value, SymbolicInt):
        raise GraphError(
            f"[freeze] '{op.name}'{_in_module()} gets the Python number {int(value)}, which is "
            f"the symbolic size {value.expression!r} of this trace{where()}: the graph would "
            "hold it as a constant",
            help="make the number a tensor op of the input (for example x.mean instead of "
            "x.sum() / x.shape[0]), or make the dimension fixed in the input signature",
        )
    if isinstance(value, (DerivedInt, DerivedFloat)):
        raise _underived(value, op, "an input")
    return value


def _attribute(value, op, key: str):
    """An attribute with symbolic ints as ``DimExpr`` (recursively), refusing derived numbers
    and arrays computed from the input values."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or kind is str or value is None:
        return value
    if isinstance(value, SymbolicInt):
        return value.expression
    if isinstance(value, (DerivedInt, DerivedFloat)):
        raise _underived(value, op, f"attribute '{key}'")
    if kind is tuple or kind is list:
        return kind(_attribute(item, op, key) for item in value)
    if kind is slice:
        return slice(
            _attribute(value.start, op, key),
            _attribute(value.stop, op, key),
            _attribute(value.step, op, key),
        )
    if kind is dict:
        return {k: _attribute(item, op, key) for k, item in value.items()}
    if isinstance(value, _Traced):
        raise GraphError(
            f"[freeze] attribute '{key}' of '{op.name}'{_in_module()} is an array computed from "
            f"the input values behind dispatch's back{where()}",
            help="compute the index with tensor ops (a tensor index is traced), or keep this "
            "part outside the frozen call",
        )
    return value


def _underived(value, op, what: str) -> GraphError:
    return GraphError(
        f"[freeze] {what} of '{op.name}'{_in_module()} is {value}, computed from the symbolic "
        f"sizes as {value.origin}, and no expression c * product(sizes) + k gives it for every "
        "size",
        help="make the dimension fixed in the input signature, or compute the value with tensor "
        "ops",
    )


# ----- the tensors of a trace ----------------------------------------------------------------

_GUARDED = (
    "__bool__", "item", "tolist", "numpy", "__array__", "__int__", "__float__", "__index__",
)  # fmt: skip


class SymbolicTensor(Tensor):
    """A tensor of a traced call: the trace's inputs and every output of a traced op.

    Its ``shape``, ``size()`` and ``numel()`` read in the trace's symbolic sizes, and reading its
    values (``bool``, ``item``, ``numpy``...) is refused when they depend on the inputs. Other
    tensors (parameters, constants, every tensor of another thread) stay plain ``Tensor`` s: the
    Tensor class itself is never changed. Outside the trace that made it, a symbolic tensor acts
    as a plain one.
    """

    __slots__ = ()  # the layout of Tensor, so that an op's output can become one in place

    @property
    def shape(self):
        tracer = _tracing.tracer
        actual = self.array.shape
        value_id = None if tracer is None else tracer.ids.get(id(self))
        if value_id is None:
            return actual
        return tuple(
            symbolic_int(size, extent) if isinstance(extent, DimExpr) else size
            for size, extent in zip(actual, tracer.graph.values[value_id].shape)
        )

    @property
    def size(self):
        return _Size(self.shape)

    def numel(self):
        count = 1
        for extent in self.shape:
            count = extent * count
        return count

    # a detached view holds the same values: reading them stays refused (``_guarded``), where a
    # plain tensor over them would hand the trace's sample values to the caller as constants
    def detach(self) -> Tensor:
        return symbolic(Tensor.detach(self))

    data = property(lambda self: symbolic(Tensor.data.fget(self)), Tensor.data.fset)


def _guarded(name: str):
    original = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        tracer = _tracing.tracer
        if tracer is not None and (id(self) in tracer.dependent or type(self.array) is _Traced):
            shown = f"{name}()" if not name.startswith("__") else f"{name.strip('_')}(tensor)"
            raise GraphError(
                f"[freeze] the traced call reads the value of a tensor that depends on the "
                f"inputs ({shown} on shape {tuple(self.array.shape)}){where()}: a static graph "
                "cannot branch on tensor values",
                help="write the choice with tensor ops (x.where(cond, y), clamp, masks), or keep "
                "this part of the code outside the frozen call",
            )
        return original(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = original.__doc__
    return method


for _name in _GUARDED:
    setattr(SymbolicTensor, _name, _guarded(_name))


# each tensor class and its symbolic twin (``SymbolicParameter`` for ``Parameter``...), both ways
_SYMBOLIC: dict[type, type] = {Tensor: SymbolicTensor}
_PLAIN: dict[type, type] = {SymbolicTensor: Tensor}


def symbolic(tensor: Tensor) -> Tensor:
    """Make ``tensor`` symbolic in place: its class becomes the symbolic twin of its own (a
    subclass of both, with the same layout), so a ``Parameter`` stays a ``Parameter``."""
    kind = type(tensor)
    if kind in _PLAIN:
        return tensor
    twin = _SYMBOLIC.get(kind)
    if twin is None:
        attributes = {"__slots__": (), "__module__": __name__, "__doc__": SymbolicTensor.__doc__}
        twin = _SYMBOLIC.setdefault(
            kind, type(f"Symbolic{kind.__name__}", (SymbolicTensor, kind), attributes)
        )
        _PLAIN[twin] = kind
    tensor.__class__ = twin
    return tensor


def plain(tensor: Tensor) -> Tensor:
    """Give a tensor made symbolic by ``symbolic`` its own class back."""
    kind = _PLAIN.get(type(tensor))
    if kind is not None:
        tensor.__class__ = kind
    return tensor


class tracing_thread:  # noqa: N801 - a context manager, used as a function call
    """Make ``tracer`` this thread's trace for the block: symbolic tensors read their sizes from
    it, and symbolic ints (``graph/symbolic.py``) refuse to be branched on."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.previous = None

    def __enter__(self):
        self.previous = _tracing.tracer, symbolic_sizes.tracing.active
        _tracing.tracer, symbolic_sizes.tracing.active = self.tracer, True
        return self

    def __exit__(self, *exc_info) -> None:
        _tracing.tracer, symbolic_sizes.tracing.active = self.previous


# ----- freezing --------------------------------------------------------------------------------


def _symbol_table(specs: list) -> dict:
    """symbol -> (input position, axis) of its first appearance."""
    table: dict = {}
    for position, spec in enumerate(specs):
        for axis, symbol in enumerate(spec.symbols):
            if symbol is not None and symbol not in table:
                table[symbol] = (position, axis)
    return table


def _sample_inputs(specs: list, sizes: dict) -> list:
    rng = np.random.default_rng(0)
    tensors = []
    for spec in specs:
        shape = tuple(
            sizes[symbol] if symbol is not None else extent
            for extent, symbol in zip(spec.shape, spec.symbols)
        )
        if spec.dtype.kind == "f":
            array = rng.standard_normal(shape).astype(spec.dtype)
        elif spec.dtype.kind == "b":
            array = rng.random(shape) < 0.25
        else:
            array = rng.integers(0, 2, size=shape).astype(spec.dtype)
        tensors.append(symbolic(Tensor(array.view(_Traced))))
    return tensors


def sample_sizes(specs: list) -> tuple[dict, dict]:
    """The symbol table of ``specs`` and the sample size each symbol takes while tracing."""
    symbols = _symbol_table(specs)
    sizes = {
        symbol: _SAMPLE_SIZES[index % len(_SAMPLE_SIZES)] for index, symbol in enumerate(symbols)
    }
    return symbols, sizes


def traced_inputs(tracer: Tracer, specs: list) -> list:
    """Sample inputs for ``specs``, registered with ``tracer`` as the graph's inputs (their
    values depend on nothing the tracer knows, so reading them is refused)."""
    inputs = _sample_inputs(specs, tracer.sizes)
    for position, (tensor, spec) in enumerate(zip(inputs, specs)):
        shape = tuple(
            DimExpr((symbol,)) if symbol is not None else extent
            for extent, symbol in zip(spec.shape, spec.symbols)
        )
        tracer.add(tensor, "input", spec.name or f"input{position}", shape)
        tracer.dependent.add(id(tensor))
        if type(tensor.array) is np.ndarray:  # marked, so a tensor over it (detach()) is too
            tensor.array = tensor.array.view(_Traced)
    tracer.graph.inputs = [tracer.ids[id(tensor)] for tensor in inputs]
    return inputs


def set_outputs(tracer: Tracer, result, refusal: GraphError, allow_none: bool = False) -> int:
    """Make the tensors the traced call returned the graph's first outputs (before any already
    there) and set ``output_kind``; raise ``refusal`` for anything else. Returns their count."""
    graph = tracer.graph
    if result is None and allow_none:
        results, graph.output_kind = [], "none"
    elif isinstance(result, Tensor):
        results, graph.output_kind = [result], "single"
    elif isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
        results, graph.output_kind = list(result), type(result).__name__
    else:
        raise refusal
    graph.outputs = [tracer.ref(tensor, _OutputMarker) for tensor in results] + graph.outputs
    return len(results)


def check_signature(input_signature, who: str) -> list:
    """``input_signature`` as a list, each entry checked to be a ``TensorSpec``."""
    specs = list(input_signature)
    for position, spec in enumerate(specs):
        if not isinstance(spec, TensorSpec):
            raise GraphError(
                f"[{who}] input_signature[{position}] is {type(spec).__name__}, not a TensorSpec",
                help="describe each input, e.g. TensorSpec((None, 784), 'float32')",
            )
    return specs


def trace_call(function, specs: list, parameter_names: dict) -> Tracer:
    tracer = Tracer(specs, *sample_sizes(specs), parameter_names)
    inputs = traced_inputs(tracer, specs)
    # random sample inputs may be outside an op's domain (log of a negative): quietly nan
    with no_grad(), dispatch_mode(tracer), tracing_thread(tracer), np.errstate(all="ignore"):
        try:
            try:
                result = function(*inputs)
            except SymbolicSizeError as error:  # a branch on a symbolic size
                raise GraphError(error.message, help=error.help) from None
            refusal = GraphError(
                f"[freeze] the traced call returned {type(result).__name__}; a frozen graph "
                "returns a Tensor or a tuple/list of Tensors",
                help="return tensors only; compute other values outside the frozen call",
            )
            set_outputs(tracer, result, refusal)
        finally:
            tracer.put_back()
    return tracer


class _OutputMarker:
    name = "output"
