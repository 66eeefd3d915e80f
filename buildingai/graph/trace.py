"""``freeze``: trace one call through dispatch into a static ``Graph``.

The tracer is an ``Interceptor``: it sees every op call (op record, inputs, attributes, output)
and nothing else, so a frozen graph holds exactly the ops eager execution ran.

Symbolic sizes. The call is traced three times, each symbolic dimension taking a different sample
size each time (distinct primes per symbol, so ``batch * seq`` and ``batch`` cannot be confused).
The traces must run the same ops in the same order; every integer that differs between them
(an intermediate shape, a reshape target, a slice bound) is fitted by the simplest expression
``c * product(symbols) + k`` that reproduces all three (``symbolic.fit``). The executor and the
ONNX exporter evaluate those expressions from the actual input sizes. A difference that no such
expression explains, a float that changes with the size, or a constant whose shape changes is
reported at freeze time rather than guessed.

Data dependence. While tracing, reading the value of a tensor that depends on the inputs
(``bool(x)``, ``x.item()``, ``x.tolist()``, ``x.numpy()``, ``int(x)``...) raises a
``GraphError`` naming the file and line: a static graph cannot hold a Python branch on a tensor
value. Every trace gets different random inputs, so a constant computed from input values behind
dispatch's back (an array made with ``.data``) differs between traces and is reported too.
"""

from __future__ import annotations

import os
import traceback

import numpy as np

from ..autograd import dispatch
from ..autograd.dispatch import Interceptor, intercept
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from .graph import Graph, GraphError, Literal, Node
from .ops import FULL
from .spec import TensorSpec
from .symbolic import fit

# Sample sizes of the k-th symbol in the three traces: distinct primes, so that products of
# different symbols differ (2*7 != 3*5...).
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Trace:
    """What one traced call produced. Value ids are local and assigned in order of first
    appearance, so two traces that ran the same code number their values alike."""

    def __init__(self) -> None:
        self.kinds: list = []  # per value: "input" | "param" | "const" | "op"
        self.names: list = []
        self.arrays: list = []  # the array of inputs/params/consts (None for op outputs)
        self.shapes: list = []
        self.dtypes: list = []
        self.nodes: list = []  # (op, refs, attrs, module path)
        self.outputs: list = []
        self.output_kind = "single"


class Tracer(Interceptor):
    """Records every op call into a ``_Trace``."""

    def __init__(self, parameter_names: dict) -> None:
        self.trace = _Trace()
        self.parameter_names = parameter_names  # id(tensor) -> state-dict name
        self.ids: dict = {}  # id(tensor) -> local value id
        self.versions: dict = {}  # local value id -> version when first seen
        self.keep: list = []  # keeps traced tensors alive, so that their id()s stay unique
        self.dependent: set = set()  # ids of tensors whose values depend on the inputs

    def add(self, tensor: Tensor, kind: str, name: str, array=None) -> int:
        trace = self.trace
        local = len(trace.kinds)
        trace.kinds.append(kind)
        trace.names.append(name)
        trace.arrays.append(array)
        trace.shapes.append(tuple(tensor.shape))
        trace.dtypes.append(tensor.dtype)
        self.ids[id(tensor)] = local
        self.versions[local] = (tensor._version, tensor._version[0])
        self.keep.append(tensor)
        return local

    def ref(self, tensor: Tensor, op) -> int:
        local = self.ids.get(id(tensor))
        if local is None:
            name = self.parameter_names.get(id(tensor))
            if name is not None:
                return self.add(tensor, "param", name, tensor.data)
            count = self.trace.kinds.count("const")
            # a copy: the tensor may be changed after the call, the graph must not change
            return self.add(tensor, "const", f"const{count}", tensor.data.copy())
        counter, seen = self.versions[local]
        if counter[0] != seen:
            raise GraphError(
                f"[freeze] '{op.name}' reads a tensor ({self.trace.names[local]}, shape "
                f"{tuple(tensor.shape)}) that was modified in place after it was traced "
                f"(by '{counter[1]}'){_where()}",
                help="a static graph records values, not memory: use the out-of-place form "
                "(x = x + y instead of x += y or x.add_(y)) inside the frozen call",
            )
        return local

    def after_op(self, op, inputs, output, attrs) -> None:
        refs = []
        depends = False
        for value in inputs:
            if isinstance(value, Tensor):
                local = self.ref(value, op)
                refs.append(local)
                depends = depends or id(value) in self.dependent
            else:
                refs.append(Literal(value))
        self.add(output, "op", f"t{len(self.trace.kinds)}")
        if depends:
            self.dependent.add(id(output))
        self.trace.nodes.append((op, tuple(refs), dict(attrs), ".".join(dispatch.module_path)))


# ----- data-dependent control flow -------------------------------------------------------------

_GUARDED = ("__bool__", "item", "tolist", "numpy", "__int__", "__float__", "__index__")


def _where() -> str:
    """' at file:line' of the innermost user frame (outside this package), if any."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f" at {frame.filename}:{frame.lineno} ({frame.line})"
    return ""


class _Guard:
    """While active, reading the value of an input-dependent tensor raises (see module doc).

    The guard swaps a few Tensor methods for the duration of the trace: this is process-wide,
    so freezing while another thread runs tensor code that reads values is not supported.
    """

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.saved: dict = {}

    def __enter__(self):
        dependent = self.tracer.dependent
        for name in _GUARDED:
            original = Tensor.__dict__[name]
            self.saved[name] = original
            setattr(Tensor, name, _guarded(name, original, dependent))
        return self

    def __exit__(self, *exc_info) -> None:
        for name, original in self.saved.items():
            setattr(Tensor, name, original)


def _guarded(name: str, original, dependent: set):
    def method(self, *args, **kwargs):
        if id(self) in dependent:
            shown = f"{name}()" if not name.startswith("__") else f"{name.strip('_')}(tensor)"
            raise GraphError(
                f"[freeze] the traced call reads the value of a tensor that depends on the "
                f"inputs ({shown} on shape {tuple(self.shape)}){_where()}: a static graph cannot "
                "branch on tensor values",
                help="write the choice with tensor ops (x.where(cond, y), clamp, masks), or keep "
                "this part of the code outside the frozen call",
            )
        return original(self, *args, **kwargs)

    method.__name__ = name
    return method


# ----- freezing --------------------------------------------------------------------------------


def _symbol_table(specs: list) -> tuple[dict, list]:
    """symbol -> (input position, axis) of its first appearance, and the symbols in order."""
    table: dict = {}
    for position, spec in enumerate(specs):
        for axis, symbol in enumerate(spec.symbols):
            if symbol is not None and symbol not in table:
                table[symbol] = (position, axis)
    return table, list(table)


def _sample_inputs(specs: list, sizes: dict, seed: int) -> list:
    rng = np.random.default_rng(seed)
    tensors = []
    for spec in specs:
        shape = tuple(
            sizes[symbol] if symbol is not None else extent
            for extent, symbol in zip(spec.shape, spec.symbols)
        )
        if spec.dtype.kind == "f":
            array = rng.standard_normal(shape).astype(spec.dtype)
        elif spec.dtype.kind == "b":
            # random, so that a constant computed from a mask's values differs between traces
            # (and is reported) instead of looking like a fixed all-False array
            array = rng.random(shape) < 0.25
        else:
            array = rng.integers(0, 2, size=shape).astype(spec.dtype)
        tensors.append(Tensor(array))
    return tensors


def _run_trace(function, specs: list, sizes: dict, parameter_names: dict, seed: int) -> _Trace:
    tracer = Tracer(parameter_names)
    inputs = _sample_inputs(specs, sizes, seed)
    for position, (tensor, spec) in enumerate(zip(inputs, specs)):
        tracer.add(tensor, "input", spec.name or f"input{position}", None)
        tracer.dependent.add(id(tensor))
    # random sample inputs may be outside an op's domain (log of a negative): quietly nan
    with no_grad(), intercept(tracer), _Guard(tracer), np.errstate(all="ignore"):
        result = function(*inputs)
    trace = tracer.trace
    if isinstance(result, Tensor):
        results, trace.output_kind = [result], "single"
    elif isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
        results, trace.output_kind = list(result), type(result).__name__
    else:
        raise GraphError(
            f"[freeze] the traced call returned {type(result).__name__}; a frozen graph returns "
            "a Tensor or a tuple/list of Tensors",
            help="return tensors only; compute other values outside the frozen call",
        )
    for tensor in results:
        local = tracer.ids.get(id(tensor))
        if local is None:
            local = tracer.ref(tensor, _OutputMarker)
        trace.outputs.append(local)
    return trace


class _OutputMarker:
    name = "output"


def freeze(
    model_or_function,
    input_signature: list,
    optimize: bool = False,
    train: bool = False,
):
    """Trace one call of a Module (in eval mode) or a function into a ``StaticGraph``.

    ``input_signature``: one ``TensorSpec`` per positional input. Parameters and buffers of a
    Module become constants named by their state-dict keys; other tensors the call reads become
    constants too. ``optimize=True`` runs the graph passes (constant folding, common
    subexpressions, dead code, element-wise fusion, buffer reuse).

    Returns a ``StaticGraph``: call it like the model (``static(x)``); ``static.graph`` is the
    ``Graph``. ``train=True`` (recording a whole training step) is not available yet; see
    docs/design_notes/graph.md.
    """
    from .executor import StaticGraph

    if train:
        raise GraphError(
            "[freeze] train=True is not supported: frozen graphs hold inference (forward) "
            "computations only",
            help="run training steps eagerly; see docs/design_notes/graph.md for what a "
            "training graph would need",
        )
    specs = list(input_signature)
    for position, spec in enumerate(specs):
        if not isinstance(spec, TensorSpec):
            raise GraphError(
                f"[freeze] input_signature[{position}] is {type(spec).__name__}, not a TensorSpec",
                help="describe each input, e.g. TensorSpec((None, 784), 'float32')",
            )
    parameter_names = {}
    function = model_or_function
    if hasattr(model_or_function, "named_parameters") and hasattr(model_or_function, "training"):
        model = model_or_function
        for module_name, module in model.named_modules():
            if module.training:
                raise GraphError(
                    f"[freeze] module '{module_name or type(model).__name__}' is in training "
                    "mode: dropout masks and batch statistics would be frozen into the graph",
                    help="call model.eval() before freezing",
                )
        for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            parameter_names[id(tensor)] = name
    table, symbols = _symbol_table(specs)

    trace_count = 3 if symbols else 2  # two at least: constants must not depend on data
    traces = []
    samples = []
    for k in range(trace_count):
        sizes = {s: _PRIMES[(3 * j + k) % len(_PRIMES)] for j, s in enumerate(symbols)}
        samples.append(sizes)
        traces.append(_run_trace(function, specs, sizes, parameter_names, seed=k))
    graph = _merge(traces, samples, symbols, specs, table)
    static = StaticGraph(graph)
    if optimize:
        static = static.optimized()
    return static


# ----- merging traces into one graph -----------------------------------------------------------


def _merge(traces: list, samples: list, symbols: list, specs: list, table: dict) -> Graph:
    first = traces[0]
    for k, other in enumerate(traces[1:], start=1):
        _same_path(first, other, samples[0], samples[k])
    graph = Graph(specs=specs, symbols=table, output_kind=first.output_kind)
    full_nodes: list = []

    def merged(values, where):
        return _merge_values(values, samples, symbols, where)

    for local, kind in enumerate(first.kinds):
        where = _first_use(first, local)
        shape = merged(
            [t.shapes[local] for t in traces], f"the shape of {first.names[local]}{where}"
        )
        if kind in ("param", "const"):
            arrays = [t.arrays[local] for t in traces]
            fill = _uniform_fill(arrays)
            if (
                kind == "const"
                and fill is not None
                and any(a.shape != arrays[0].shape for a in arrays[1:])
            ):
                # zeros/ones/full of a size that follows the inputs (an RNN's initial state):
                # recorded as a node that makes it, so that its shape stays symbolic
                full_nodes.append(
                    Node(
                        FULL,
                        (),
                        {"shape": shape, "value": fill, "dtype": arrays[0].dtype},
                        local,
                        _module_of_first_use(first, local),
                    )
                )
                graph.values[local] = _value(
                    local, shape, first.dtypes[local], "op", f"fill{local}"
                )
                continue
            if kind == "const" and any(
                a.shape != arrays[0].shape or not _same_array(a, arrays[0]) for a in arrays[1:]
            ):
                reason = (
                    "its shape depends on the symbolic sizes"
                    if any(a.shape != arrays[0].shape for a in arrays[1:])
                    else "its values depend on the input values"
                )
                raise GraphError(
                    f"[freeze] a tensor created outside the traced ops{where} changes between "
                    f"traces: {reason}",
                    help="compute it with tensor ops from the inputs (for example ones_like(x), "
                    "x.new_zeros) so the graph records how it is made, or make the dimension "
                    "fixed in the input signature",
                )
            graph.constants[local] = arrays[0]
        graph.values[local] = _value(local, shape, first.dtypes[local], kind, first.names[local])
    graph.inputs = [local for local, kind in enumerate(first.kinds) if kind == "input"]
    for index, (op, refs, attrs, module) in enumerate(first.nodes):
        where = f" (node {index}, '{op.name}'{' in ' + module if module else ''})"
        refs = tuple(
            Literal(merged([t.nodes[index][1][p].value for t in traces], "an input" + where))
            if isinstance(ref, Literal)
            else ref
            for p, ref in enumerate(refs)
        )
        attrs = merged([t.nodes[index][2] for t in traces], "an attribute" + where)
        output = _output_of(first, index)
        graph.nodes.append(Node(op, refs, attrs, output, module))
    graph.nodes[:0] = full_nodes
    graph.outputs = list(first.outputs)
    return graph


def _uniform_fill(arrays: list):
    """The single value every element of every array holds, or None."""
    first = arrays[0]
    if first.size == 0:
        return None
    value = first.reshape(-1)[0]
    for array in arrays:
        if array.dtype != first.dtype or not bool((array == value).all()):
            return None
    return value.item()


def _module_of_first_use(trace: _Trace, local: int) -> str:
    for _, refs, _, module in trace.nodes:
        if local in refs:
            return module
    return ""


def _value(local, shape, dtype, kind, name):
    from .graph import Value

    return Value(local, tuple(shape), np.dtype(dtype), kind, name)


def _output_of(trace: _Trace, index: int) -> int:
    # op outputs are numbered in node order among the values of kind "op"
    if not hasattr(trace, "_op_ids"):
        trace._op_ids = [local for local, kind in enumerate(trace.kinds) if kind == "op"]
    return trace._op_ids[index]


def _first_use(trace: _Trace, local: int) -> str:
    for index, (op, refs, _, module) in enumerate(trace.nodes):
        if local in refs:
            return (
                f" (first read by '{op.name}' at node {index}{' in ' + module if module else ''})"
            )
    return ""


def _same_path(first: _Trace, other: _Trace, sizes_a: dict, sizes_b: dict) -> None:
    """Both traces ran the same ops on the same values, or raise naming the first difference."""
    for index in range(max(len(first.nodes), len(other.nodes))):
        a = first.nodes[index] if index < len(first.nodes) else None
        b = other.nodes[index] if index < len(other.nodes) else None
        same = (
            a is not None
            and b is not None
            and a[0] is b[0]
            and len(a[1]) == len(b[1])
            and all(
                isinstance(x, Literal) == isinstance(y, Literal)
                and (isinstance(x, Literal) or x == y)
                for x, y in zip(a[1], b[1])
            )
        )
        if not same:
            shown_a = f"'{a[0].name}'{' in ' + a[3] if a[3] else ''}" if a else "the end"
            shown_b = f"'{b[0].name}'{' in ' + b[3] if b[3] else ''}" if b else "the end"
            raise GraphError(
                f"[freeze] the traced call ran different ops for different sizes or values of "
                f"its inputs: at node {index} one trace ran {shown_a}, another {shown_b} "
                f"(symbolic sizes {sizes_a} vs {sizes_b})",
                help="Python control flow on shapes or values cannot be frozen; make the "
                "dimension fixed in the input signature, or express the choice with tensor ops",
            )
    if first.kinds != other.kinds or first.outputs != other.outputs:
        raise GraphError(
            "[freeze] the traced call read different tensors or returned different values "
            f"for symbolic sizes {sizes_a} vs {sizes_b}",
            help="make the dimension fixed in the input signature",
        )


def _same_array(a, b) -> bool:
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(a, b))


def _merge_values(values: list, samples: list, symbols: list, where: str):
    """One value standing for the same attribute/shape in every trace (see module doc)."""
    first = values[0]
    if isinstance(first, bool) or first is None or isinstance(first, (str, np.dtype, type)):
        if any(v != first for v in values[1:]):
            raise _differs(values, where)
        return first
    if isinstance(first, (int, np.integer)) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values
    ):
        if all(v == first for v in values[1:]):
            return first
        expression = fit([int(v) for v in values], samples, symbols) if len(values) > 2 else None
        if expression is None:
            raise _differs(values, where)
        return expression
    if isinstance(first, (tuple, list)) and all(
        type(v) is type(first) and len(v) == len(first) for v in values
    ):
        items = [
            _merge_values([v[i] for v in values], samples, symbols, where)
            for i in range(len(first))
        ]
        return type(first)(items)
    if isinstance(first, slice) and all(isinstance(v, slice) for v in values):
        parts = [
            _merge_values([getattr(v, part) for v in values], samples, symbols, where)
            for part in ("start", "stop", "step")
        ]
        return slice(*parts)
    if isinstance(first, dict) and all(
        isinstance(v, dict) and v.keys() == first.keys() for v in values
    ):
        return {k: _merge_values([v[k] for v in values], samples, symbols, where) for k in first}
    if hasattr(first, "shape") and hasattr(first, "dtype"):
        if all(
            hasattr(v, "shape") and v.shape == first.shape and _same_array(v, first)
            for v in values[1:]
        ):
            return first
        raise GraphError(
            f"[freeze] an array attribute{where.replace('an attribute', '')} changes between "
            "traces (it depends on the symbolic sizes or the input values)",
            help="compute the index with tensor ops, or make the dimension fixed in the input "
            "signature",
        )
    try:
        equal = all(bool(v == first) for v in values[1:])
    except Exception:
        equal = all(v is first for v in values[1:])
    if not equal:
        raise _differs(values, where)
    return first


def _differs(values: list, where: str) -> GraphError:
    return GraphError(
        f"[freeze] {where} takes the values {', '.join(repr(v) for v in values)} in traces with "
        "different symbolic sizes, and no expression c * product(sizes) + k explains them",
        help="make the dimension fixed in the input signature, or compute the value with tensor "
        "ops",
    )
