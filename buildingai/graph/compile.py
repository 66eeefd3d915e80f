"""``buildingai.compile`` with an input signature: a training step traced once into a static
graph, then run fast (``compiled.py`` is the front door, which also takes PyTorch's form).

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    compiled = buildingai.compile(step, input_signature=[TensorSpec((None, 784), float32),
                                                         TensorSpec((None,), int64)])
    loss = compiled(x, y)   # parameters and optimizer state updated as eager would

The graph holds the forward, the backward the op records define and the optimizer update (see
``graph.training``). The passes (constant folding, common subexpressions, dead code,
element-wise fusion, buffer reuse) run on all of it; the executor runs it with slots freed after
their last reader and fused kernels writing into dying buffers. What the step returns comes back
as tensors; ``param.grad`` holds this step's gradient afterwards, as in eager execution.

Python code in the step runs once, at trace time: a branch on a tensor value is refused with its
file and line (as ``freeze`` does), and anything else the step does in Python (printing,
counting, stepping a scheduler) happens once, not per call. Keep such code outside the step.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import device as _device
from .executor import StaticGraph
from .graph import Graph, GraphError
from .spec import TensorSpec
from .trace import check_signature
from .training import memory_plan, trace_training_step


class _Traced:
    """One traced graph of the step, for one set of input shapes."""

    def __init__(self, tracer, optimize: bool) -> None:
        self.parameters = [tensor for _, tensor in tracer.params]
        self.state = [tensor for _, tensor in tracer.state]  # buffers the step changes in place
        self.user_outputs = tracer.user_outputs
        self.unoptimized = StaticGraph(tracer.graph)
        self.static = self.unoptimized.optimized() if optimize else self.unoptimized
        self.graph = self.static.graph


class CompiledStep:
    """A training step traced into static graphs: call it like the step (``compiled(x, y)``).

    A graph is traced for each distinct set of input shapes the signature allows (a ``None``
    batch size that changes, as the last batch of an epoch does, traces once more), as
    ``jax.jit`` specialises on shapes; every later call with those shapes runs the graph.
    ``parameters`` are the trainable tensors a graph reads and updates, bound to their live
    arrays on every call; ``summary()`` lists nodes, FLOPs and the memory plan of the graph
    the last call ran.
    """

    def __init__(self, function, specs: list, optimize: bool) -> None:
        self.function, self.specs, self.optimize = function, specs, optimize
        self.checker = StaticGraph(Graph(specs=specs))  # checks inputs against the signature
        self.graphs: dict = {}  # input shapes -> _Traced
        self.last: _Traced | None = None

    def __call__(self, *inputs):
        arrays, _ = self.checker.bind(inputs)
        shapes = tuple(tuple(array.shape) for array in arrays)
        traced = self.graphs.get(shapes)
        if traced is None:
            fixed = [
                TensorSpec(shape, spec.dtype, spec.name) for shape, spec in zip(shapes, self.specs)
            ]
            traced = self.graphs[shapes] = _Traced(
                trace_training_step(self.function, fixed), self.optimize
            )
        self.last = traced
        arrays.extend(parameter.array for parameter in traced.parameters)
        arrays.extend(buffer.array for buffer in traced.state)
        xp = np if _device._cupy is None else _device.array_namespace(arrays[0])
        outputs = traced.static.run(arrays, {}, xp)[: traced.user_outputs]
        kind = traced.graph.output_kind
        if kind == "none":
            return None
        tensors = [Tensor(array) for array in outputs]
        if kind == "single":
            return tensors[0]
        return tuple(tensors) if kind == "tuple" else tensors

    @property
    def graph(self) -> Graph:
        """The optimised graph the last call ran."""
        return self._last().graph

    @property
    def parameters(self) -> list:
        return self._last().parameters

    def _last(self) -> _Traced:
        if self.last is None:
            raise GraphError(
                "[compile] the step has not been traced yet: a graph is traced on the first "
                "call, for its input shapes",
                help="call the compiled step once (compiled(x, y)), then read its graph",
            )
        return self.last

    def memory_plan(self) -> dict:
        """Bytes the plan of the last call's graph holds at its peak (and after which node),
        and those of parameters, inputs and constants."""
        return memory_plan(self.graph, {})

    def summary(self) -> str:
        """The node table (op, inputs, output, module, FLOPs, bytes) with the memory plan."""
        traced = self._last()
        plan = self.memory_plan()
        peak = plan["peak_node"]
        at = f" after node #{peak} ({traced.graph.nodes[peak].op.name})" if peak >= 0 else ""
        values = sum(int(np.prod(p.shape)) for p in traced.parameters)
        lines = [
            traced.graph.summary(),
            f"traced {len(traced.unoptimized.graph.nodes)} nodes, {len(traced.graph.nodes)} "
            f"after the passes; {len(traced.parameters)} parameter tensors ({values:,} values); "
            f"{len(self.graphs)} input shape(s) traced",
            f"memory plan: peak {_mb(plan['peak'])} of intermediate values{at}; parameters "
            f"{_mb(plan['parameters'])}, inputs {_mb(plan['inputs'])}, constants "
            f"{_mb(plan['constants'])}; {len(traced.graph.donations)} fused kernels write into "
            "a dying input",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        specs = ", ".join(repr(spec) for spec in self.specs)
        return f"<CompiledStep {getattr(self.function, '__name__', 'step')}({specs})>"


def compile_step(function, input_signature: list, optimize: bool = True) -> CompiledStep:
    """Trace one call of the training step ``function`` into a ``CompiledStep``.

    ``input_signature``: one ``TensorSpec`` per positional input (``None`` or a name for sizes
    that may change between calls, such as the batch). The step calls ``loss.backward()`` and
    ``optimizer.step()`` (any ``OptimizerBase``) and returns None, a Tensor or a tuple of
    Tensors. ``optimize=False`` skips the graph passes (to compare, or to debug a pass).
    """
    return CompiledStep(function, check_signature(input_signature, "compile"), optimize)


def _mb(count: int) -> str:
    return f"{count / 1e6:.2f} MB" if count >= 1e5 else f"{count} B"


__all__ = ["CompiledStep", "compile_step"]
