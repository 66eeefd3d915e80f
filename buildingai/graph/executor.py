"""Run a static graph fast: a flat plan of op-record forwards over a list of array slots.

No Tensor is made per node and no autograd state is kept: each step runs its op through
``dispatch.run_forward`` (the record's ``forward``, or the kernel ``buildingai.accel`` registered
for it: what eager execution runs, so results agree by construction) and stores the array in its
slot. Slots are released right after their last
reader ran, so NumPy's allocator can hand the memory to the next op; a fused element-wise kernel
may even write into a dying input buffer (see ``passes.buffer_reuse``).
"""

from __future__ import annotations

import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from ..autograd.dispatch import run_forward
from ..autograd.state import inherit, run_inherited
from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..errors import BuildingAIError, ShapeError, SignatureError, dimensions
from .graph import Graph, GraphError, Literal
from .passes import optimize
from .symbolic import is_symbolic, resolve


class _Scratch:
    """The context of a plan step: forward may store values on it; nothing reads them."""


class Step:
    """One node of the plan (see ``compile_plan``)."""

    __slots__ = ("op", "args", "attrs", "symbolic", "out", "free", "donate", "node")

    def __init__(self, op, args, attrs, symbolic, out, free, donate, node) -> None:
        self.op, self.args, self.attrs, self.symbolic = op, args, attrs, symbolic
        self.out, self.free, self.donate, self.node = out, free, donate, node


class Plan:
    """Slots and steps for one graph: ``slots`` starts as constants and literals; inputs fill
    ``input_slots``; each step reads ``args`` slots and writes ``out``."""

    def __init__(self, graph: Graph) -> None:
        slot_of: dict = {}
        initial: list = []

        def slot(value_id):
            if value_id not in slot_of:
                slot_of[value_id] = len(initial)
                initial.append(graph.constants.get(value_id))
            return slot_of[value_id]

        for value_id in graph.inputs:
            slot(value_id)
        literal_slots: dict = {}
        steps = []
        last_reader: dict = {}
        for index, node in enumerate(graph.nodes):
            for ref in node.input_ids():
                last_reader[ref] = index
        kept = set(graph.outputs) | set(graph.constants)
        frees: dict = {}
        for value_id, index in last_reader.items():
            if value_id not in kept:
                frees.setdefault(index, []).append(value_id)
        for index, node in enumerate(graph.nodes):
            args = []
            for ref in node.inputs:
                if isinstance(ref, Literal):
                    key = (type(ref.value), ref.value)
                    if key not in literal_slots:
                        literal_slots[key] = len(initial)
                        initial.append(ref.value)
                    args.append(literal_slots[key])
                else:
                    args.append(slot(ref))
            donated = graph.donations.get(index)
            steps.append(
                Step(
                    node.op,
                    tuple(args),
                    node.attrs,
                    is_symbolic(node.attrs),
                    slot(node.output),
                    tuple(slot(v) for v in frees.get(index, ()) if v != donated),
                    None if donated is None else slot(donated),
                    node,
                )
            )
        self.initial = initial
        self.steps = steps
        self.input_slots = [slot_of[v] for v in graph.inputs]
        self.output_slots = [slot(v) for v in graph.outputs]
        self._fixed = [step.attrs for step in steps]  # every step's, where none is symbolic
        self._resolved: dict = {} if any(step.symbolic for step in steps) else None
        self._placed: dict = {}  # GPU -> (initial slots, fixed attributes) with arrays there

    def initial_for(self, xp) -> list:
        """The starting slots, with constant arrays on the device ``xp`` computes on: a graph is
        traced on the host, and runs where its inputs live (constants are copied there once)."""
        return self.initial if xp is np else self._on_device(xp)[0]

    def attrs_for(self, sizes: dict, xp) -> list:
        """``attrs_at(sizes)`` with array attributes (an index, a mask) on ``xp``'s device."""
        if xp is np:
            return self.attrs_at(sizes)
        if self._resolved is None:
            return self._on_device(xp)[1]
        device = f"cuda:{xp.cuda.Device().id}"
        return [_placed(attrs, xp, device) for attrs in self.attrs_at(sizes)]

    def _on_device(self, xp) -> tuple:
        index = xp.cuda.Device().id
        placed = self._placed.get(index)
        if placed is None:
            device = f"cuda:{index}"
            initial = [_placed(value, xp, device) for value in self.initial]
            fixed = [_placed(attrs, xp, device) for attrs in self._fixed]
            placed = self._placed[index] = (initial, fixed)
        return placed

    def attrs_at(self, sizes: dict) -> list:
        """Every step's attributes with its symbolic sizes resolved under ``sizes``, worked
        out once per set of sizes (a serving graph sees a few batch sizes again and again)."""
        if self._resolved is None:
            return self._fixed
        key = tuple(sizes.items())
        resolved = self._resolved.get(key)
        if resolved is None:
            resolved = [resolve(s.attrs, sizes) if s.symbolic else s.attrs for s in self.steps]
            if len(self._resolved) < _RESOLVED_SIZES:
                self._resolved[key] = resolved
        return resolved


# Sets of symbol sizes whose resolved attributes a plan keeps.
_RESOLVED_SIZES = 64


def _placed(value, xp, device: str):
    """``value`` moved to ``device``, the GPU ``xp`` computes on: a host array is copied there,
    so is a tuple or list of them (an index); in a node's attribute dict, a factory's
    ``device="cpu"`` (the host the trace ran on) names ``device``. Anything else as it is."""
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if isinstance(value, (tuple, list)):
        placed = [_placed(item, xp, device) for item in value]
        changed = any(new is not old for new, old in zip(placed, value))
        return type(value)(placed) if changed else value
    if isinstance(value, dict):
        placed = {key: _placed(item, xp, device) for key, item in value.items()}
        if placed.get("device") == "cpu":
            placed["device"] = device
        changed = any(placed[key] is not item for key, item in value.items())
        return placed if changed else value
    return value


class StaticGraph:
    """A frozen, runnable graph: ``static(*inputs)`` returns what the traced call returned.

    ``static.graph`` is the ``Graph`` (print it for a summary); ``static.optimized()`` returns
    the graph after the optimisation passes; ``workers > 1`` runs independent branches
    concurrently on a thread pool (NumPy releases the GIL inside its kernels).
    """

    def __init__(self, graph: Graph, workers: int = 1) -> None:
        self.graph = graph
        self.workers = workers
        self.plan = Plan(graph)
        self._expected = [_expected_input(spec) for spec in graph.specs]

    # ----- calling ---------------------------------------------------------------------------
    def __call__(self, *inputs):
        arrays, sizes = self.bind(inputs)
        xp = np if _device._cupy is None else _namespace(arrays)
        if self.workers > 1:
            outputs = run_concurrently(self, arrays, sizes, xp)
        else:
            outputs = self.run(arrays, sizes, xp)
        tensors = [Tensor(array) for array in outputs]
        if self.graph.output_kind == "single":
            return tensors[0]
        return tuple(tensors) if self.graph.output_kind == "tuple" else tensors

    def run(self, arrays: list, sizes: dict, xp) -> list:
        """Execute the plan on backend arrays (already checked by ``bind``)."""
        plan = self.plan
        slots = list(plan.initial_for(xp))
        for position, array in zip(plan.input_slots, arrays):
            slots[position] = array
        scratch = _Scratch()
        result = None
        for step, attrs in zip(plan.steps, plan.attrs_for(sizes, xp)):
            args = [slots[i] for i in step.args]
            if step.donate is not None:
                result = None  # the previous step's result may be the donated buffer
                attrs = dict(attrs, out=_donated(slots, step.donate))
            result = _run_step(step, scratch, xp, args, attrs)
            slots[step.out] = result
            for index in step.free:
                slots[index] = None
        return [slots[index] for index in plan.output_slots]

    def bind(self, inputs: tuple) -> tuple[list, dict]:
        """Check the inputs against the signature; return their arrays and the symbol sizes."""
        bound = self._bind_fitting(inputs)
        return bound if bound is not None else self._bind_explained(inputs)

    def _bind_fitting(self, inputs: tuple) -> tuple[list, dict] | None:
        """``bind``'s result where every input is an array that fits the signature, else None
        (``_bind_explained`` then names what does not fit): the check every call makes, with
        each spec's expectations worked out once (``_expected_input``)."""
        expected = self._expected
        if len(inputs) != len(expected):
            return None
        arrays = []
        sizes: dict = {}
        for value, (ndim, dtype, fixed, symbolic) in zip(inputs, expected):
            array = value.array if isinstance(value, Tensor) else value
            if (
                not isinstance(array, _device.ARRAY_TYPES)
                or array.ndim != ndim
                or array.dtype != dtype
            ):
                return None
            shape = array.shape
            for axis, extent in fixed:
                if shape[axis] != extent:
                    return None
            for axis, symbol in symbolic:
                if sizes.setdefault(symbol, shape[axis]) != shape[axis]:
                    return None
            arrays.append(array)
        return arrays, sizes

    def _bind_explained(self, inputs: tuple) -> tuple[list, dict]:
        """``bind`` input by input, raising an error that names what does not fit (and taking
        values that are not arrays yet, such as nested lists)."""
        specs = self.graph.specs
        if len(inputs) != len(specs):
            raise GraphError(
                f"[frozen graph] expected {len(specs)} inputs ({', '.join(map(repr, specs))}), "
                f"got {len(inputs)}"
            )
        arrays = []
        sizes: dict = {}
        bound_at: dict = {}
        for position, (value, spec) in enumerate(zip(inputs, specs)):
            array = value.array if isinstance(value, Tensor) else value
            if not isinstance(array, _device.ARRAY_TYPES):
                array = np.asarray(array)
            name = spec.name or f"input {position}"
            if array.ndim != len(spec.shape):
                raise ShapeError(
                    f"[frozen graph] {name} has {dimensions(array.ndim)} {tuple(array.shape)}, "
                    f"but the signature {spec!r} has {len(spec.shape)}",
                    help="reshape the input, or freeze again with another signature",
                )
            if array.dtype != spec.dtype:
                raise SignatureError(
                    f"[frozen graph] {name} has dtype {array.dtype}, but the signature {spec!r} "
                    f"expects {spec.dtype}",
                    help=f"convert it first, e.g. x.astype('{spec.dtype}')",
                )
            for axis, (extent, symbol) in enumerate(zip(spec.shape, spec.symbols)):
                actual = array.shape[axis]
                if symbol is None:
                    if actual != extent:
                        raise ShapeError(
                            f"[frozen graph] {name} has size {actual} in dimension {axis} "
                            f"(shape {tuple(array.shape)}), but the signature {spec!r} fixes "
                            f"it to {extent}",
                            help="only symbolic dimensions (None or a name) may change size",
                        )
                elif sizes.setdefault(symbol, actual) != actual:
                    raise ShapeError(
                        f"[frozen graph] {name} has size {actual} in dimension {axis}, but the "
                        f"symbolic size '{symbol}' is {sizes[symbol]} (from {bound_at[symbol]})",
                        help="inputs that share a symbolic dimension must agree on its size",
                    )
                else:
                    bound_at.setdefault(symbol, f"{name}, dimension {axis}")
            arrays.append(array)
        return arrays, sizes

    # ----- views -------------------------------------------------------------------------------
    def optimized(self) -> StaticGraph:
        """The same computation after the optimisation passes (see ``passes.optimize``)."""
        return StaticGraph(optimize(self.graph), workers=self.workers)

    def with_workers(self, workers: int) -> StaticGraph:
        """The same graph, running independent branches on ``workers`` threads."""
        return StaticGraph(self.graph, workers=workers)

    def summary(self) -> str:
        return self.graph.summary()

    def __str__(self) -> str:
        return self.graph.summary()

    def __repr__(self) -> str:
        return f"<StaticGraph {self.graph!r}>"


def _run_step(step: Step, scratch, xp, args: list, attrs: dict):
    """One step's output array (None for an absent saved value), failures named by node."""
    try:
        result = run_forward(step.op, scratch, xp, *args, **attrs)
    except BuildingAIError:
        raise
    except (ValueError, TypeError, IndexError) as exc:
        node = step.node
        raise GraphError(
            f"[{node.op.name}] failed while running the frozen graph"
            f"{' in ' + node.module if node.module else ''}: {exc}"
        ) from exc
    if result is not None and not isinstance(result, _device.ARRAY_TYPES):
        result = xp.asarray(result)  # a NumPy scalar from a 0-d computation
    return result


def run_concurrently(static: StaticGraph, arrays: list, sizes: dict, xp) -> list:
    """Execute ``static``'s plan with each step submitted as soon as its inputs exist, on
    ``static.workers`` threads (NumPy releases the GIL inside its kernels)."""
    plan = static.plan
    slots = list(plan.initial_for(xp))
    attrs_of = plan.attrs_for(sizes, xp)
    for position, array in zip(plan.input_slots, arrays):
        slots[position] = array
    producer = {step.out: index for index, step in enumerate(plan.steps)}
    waiting = []
    dependents: list = [[] for _ in plan.steps]
    for index, step in enumerate(plan.steps):
        needs = {producer[a] for a in step.args if a in producer}
        waiting.append(len(needs))
        for need in needs:
            dependents[need].append(index)

    def run(index):
        step = plan.steps[index]
        attrs = attrs_of[index]
        slots[step.out] = _run_step(step, _Scratch(), xp, [slots[i] for i in step.args], attrs)
        return index

    with ThreadPoolExecutor(max_workers=static.workers) as pool:
        # the workers run with the caller's dispatch state (grad mode, modes, module path)
        inherited = inherit()
        running = {
            pool.submit(run_inherited, inherited, run, i)
            for i, count in enumerate(waiting)
            if count == 0
        }
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                finished = future.result()  # re-raises an op's error here
                for index in dependents[finished]:
                    waiting[index] -= 1
                    if waiting[index] == 0:
                        running.add(pool.submit(run_inherited, inherited, run, index))
    return [slots[index] for index in plan.output_slots]


def _expected_input(spec) -> tuple:
    """(rank, dtype, ((axis, extent) fixed), ((axis, symbol) symbolic)) of a TensorSpec: what
    ``StaticGraph.bind`` checks an input against."""
    fixed = tuple((axis, extent) for axis, (extent, symbol) in
                  enumerate(zip(spec.shape, spec.symbols)) if symbol is None)  # fmt: skip
    symbolic = tuple((axis, symbol) for axis, symbol in enumerate(spec.symbols) if symbol)
    return len(spec.shape), spec.dtype, fixed, symbolic


def _donated(slots: list, index: int):
    """The array in ``slots[index]`` if nothing else can see its memory, else None.

    The reference count tells: the step's argument list, the local name and getrefcount's own
    argument hold it; any more (a view's ``base``, a caller's variable) means another value
    shares the memory.
    """
    array = slots[index]
    slots[index] = None
    if (
        type(array) is np.ndarray
        and array.base is None
        and array.flags.writeable
        and sys.getrefcount(array) == 3
    ):
        return array
    return None


def _namespace(arrays: list):
    for array in arrays:
        return _device.array_namespace(array)
    return np
