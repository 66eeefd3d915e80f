"""Element-wise fusion: a chain (or tree) of element-wise ops becomes one generated kernel that
writes its intermediates into buffers it owns (``out=``), instead of allocating one array per op.

The kernel is generated NumPy/CuPy code: one ufunc call per original op, named by the op
record's ``fusion`` attribute (the single backend function its forward calls). Only nodes where that holds
exactly are fused: every tensor operand has the output's floating dtype (so none of the ops'
integer-to-float promotions applies) and scalars are plain Python numbers. A test runs every
table entry against its op record's forward, so the table cannot drift from the ops.

Fewer allocations and better cache reuse make the fused chain faster than the ops one by one
(figures: docs/design_notes/performance.md); it needs no numexpr.
"""

from __future__ import annotations

from ...ops import all_ops
from ...ops.abstract import bytes_of, total
from ...ops.base import Op
from ..graph import Graph, Literal, Node

# op name -> (backend function, extra trailing argument or None), read off the op records'
# ``fusion`` attribute: the record stays the one place that says what an op computes.
_FUSIBLE_RECORDS = {op.name: op for op in all_ops() if op.fusion is not None}
FUSIBLE = {name: op.fusion for name, op in _FUSIBLE_RECORDS.items()}


class FusedElementwise(Op):
    """One generated kernel standing for several element-wise nodes.

    ``steps``: per original node, (op, operands) where an operand is ("in", k) for the k-th
    kernel input, ("tmp", j) for the result of step j, or ("lit", value). The kernel computes the
    last step's result; ``out`` (optional) is a buffer it may write that result into.
    """

    name = "fused_elementwise"
    save_inputs, differentiable = False, False

    def __init__(self, steps: list, full_shape: list, out_step: int | None = None) -> None:
        self.steps = steps
        self.full_shape = full_shape  # per step: whether its result has the kernel's output shape
        self.out_step = out_step  # the step that writes into a donated buffer ``out``, if any
        self.source = _generate(steps, full_shape, out_step)
        namespace: dict = {}
        exec(compile(self.source, f"<fused {self.label}>", "exec"), namespace)
        self.kernel = namespace["kernel"]

    @property
    def label(self) -> str:
        return "+".join(op.name for op, _ in self.steps)

    def forward(self, ctx, xp, *arrays, out=None):
        return self.kernel(xp, arrays, out)

    def _step_operands(self, operands, inputs: tuple, results: list) -> list:
        """A step's operands: kernel inputs, earlier steps' results, or literals."""
        picked = {"in": lambda k: inputs[k], "tmp": lambda j: results[j], "lit": lambda v: v}
        return [picked[kind](value) for kind, value in operands]

    def infer(self, *specs, out=None):
        """The last step's spec, each step inferred by its own record."""
        results: list = []
        for op, operands in self.steps:
            results.append(op.infer(*self._step_operands(operands, specs, results)))
        return results[-1]

    def cost(self, *specs, out=None) -> tuple:
        """The steps' FLOPs; the kernel reads its inputs and writes its output once, since the
        intermediates stay in the kernel's own buffers."""
        results: list = []
        flops = []
        for op, operands in self.steps:
            step_specs = self._step_operands(operands, specs, results)
            results.append(op.infer(*step_specs))
            flops.append(op.cost(*step_specs)[0])
        return total(flops), bytes_of(*specs), results[-1].nbytes

    def to_onnx(self, emit, inputs, output, attrs):
        names = []
        for index, (op, operands) in enumerate(self.steps):
            step_inputs = []
            for kind, value in operands:
                if kind == "in":
                    step_inputs.append(inputs[value])
                elif kind == "tmp":
                    step_inputs.append(names[value])
                else:
                    step_inputs.append(Literal(value))
            target = output if index == len(self.steps) - 1 else emit.fresh(op.name)
            op.to_onnx(emit, step_inputs, target, {})
            names.append(target)


def _generate(steps: list, full_shape: list, out_step: int | None) -> str:
    """Python source of ``kernel(xp, inputs, out)``. A step whose result has the output's shape
    writes into the buffer of an intermediate operand that dies there (each intermediate has
    exactly one reader); step ``out_step`` writes into ``out``, a donated buffer, when given."""
    lines = ["def kernel(xp, inputs, out):"]
    owned: set = set()  # steps whose buffer the kernel owns (fresh arrays it allocated)
    for index, (op, operands) in enumerate(steps):
        function, extra = FUSIBLE[op.name]
        args = []
        reuse = None
        for kind, value in operands:
            if kind == "in":
                args.append(f"inputs[{value}]")
            elif kind == "tmp":
                args.append(f"t{value}")
                if value in owned and full_shape[index] and full_shape[value] and reuse is None:
                    reuse = f"t{value}"
            else:
                args.append(repr(value))
        if extra is not None:
            args.append(repr(extra))
        call = f"xp.{function}({', '.join(args)}"
        if reuse is not None:
            lines.append(f"    t{index} = {call}, out={reuse})")
        elif index == out_step:
            lines.append(f"    t{index} = {call}) if out is None else {call}, out=out)")
        else:
            lines.append(f"    t{index} = {call})")
        owned.add(index)
    lines.append(f"    return t{len(steps) - 1}")
    return "\n".join(lines) + "\n"


def _fusible(graph: Graph, node: Node) -> bool:
    # the record itself, not a subclass or a look-alike with the same name
    if node.op is not _FUSIBLE_RECORDS.get(node.op.name):
        return False
    value = graph.values[node.output]
    dtype = value.dtype
    # a 0-d result: NumPy gives scalars there, which a later step cannot write into (out=)
    if dtype.kind != "f" or len(value.shape) == 0:
        return False
    for ref in node.inputs:
        if isinstance(ref, Literal):
            if type(ref.value) not in (int, float):
                return False
        elif graph.values[ref].dtype != dtype:
            return False
    return True


def fuse_elementwise(graph: Graph) -> Graph:
    """Group connected fusible nodes whose intermediates have one reader and are not outputs;
    each group of two or more becomes one ``FusedElementwise`` node at the group's last node."""
    readers = graph.consumers()
    outputs = set(graph.outputs)
    group_of: dict = {}  # node index -> index of the group's root (last) node
    for index in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[index]
        if not _fusible(graph, node):
            continue
        users = readers.get(node.output, [])
        if (
            len(users) == 1
            and node.output not in outputs
            and users[0] in group_of
            and graph.values[graph.nodes[users[0]].output].dtype == graph.values[node.output].dtype
        ):
            group_of[index] = group_of[users[0]]
        else:
            group_of[index] = index
    members: dict = {}
    for index, root in group_of.items():
        members.setdefault(root, []).append(index)
    out = graph.copy()
    out.donations = {}
    out.nodes = []
    for index, node in enumerate(graph.nodes):
        root = group_of.get(index)
        if root is None or len(members[root]) < 2:
            out.nodes.append(node)
        elif root == index:
            out.nodes.append(_fuse(graph, sorted(members[root])))
    return out


def _fuse(graph: Graph, indices: list) -> Node:
    inputs: list = []
    step_of = {graph.nodes[i].output: position for position, i in enumerate(indices)}
    steps = []
    root = graph.nodes[indices[-1]]
    root_shape = graph.values[root.output].shape
    full_shape = []
    for i in indices:
        node = graph.nodes[i]
        operands = []
        for ref in node.inputs:
            if isinstance(ref, Literal):
                operands.append(("lit", ref.value))
            elif ref in step_of:
                operands.append(("tmp", step_of[ref]))
            else:
                if ref not in inputs:
                    inputs.append(ref)
                operands.append(("in", inputs.index(ref)))
        steps.append((node.op, operands))
        full_shape.append(graph.values[node.output].shape == root_shape)
    op = FusedElementwise(steps, full_shape)
    return Node(op, tuple(inputs), {}, root.output, root.module)
