"""The small builder op records use to write their ONNX mapping (``Op.to_onnx``).

``to_onnx(self, emit, inputs, output, attrs)`` receives value names (str) or ``Literal`` s for
Python scalars, the name its result must have, and the node's attributes; it calls ``emit`` to
add ONNX nodes and initializers. The builder knows the dtype and shape of every named value, so
mappings can match dtypes (``emit.operands``) and build shape tensors that depend on symbolic
sizes (``emit.ints``).
"""

from __future__ import annotations

import numpy as np

from ..graph.graph import Literal
from ..ops.abstract import DimExpr


class Emitter:
    """Collects ONNX nodes and initializers for one graph (see module docstring)."""

    def __init__(self, onnx_module, opset: int, symbol_sources: dict) -> None:
        self.onnx = onnx_module
        self.helper = onnx_module.helper
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.dtypes: dict = {}  # value name -> numpy dtype
        self.ranks: dict = {}  # value name -> rank, where known
        self.shapes: dict = {}  # graph value name -> shape (ints and DimExpr)
        self.symbol_sources = symbol_sources  # symbol -> (input name, axis)
        self._counter = 0
        self._constants: dict = {}
        self._symbols: dict = {}

    # ----- names -------------------------------------------------------------------------------
    def fresh(self, hint: str = "tmp") -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def dtype(self, name) -> np.dtype:
        if isinstance(name, Literal):
            return np.asarray(name.value).dtype
        return self.dtypes[name]

    def rank(self, name) -> int | None:
        return self.ranks.get(name)

    # ----- nodes -------------------------------------------------------------------------------
    def node(
        self,
        op_type: str,
        inputs: list,
        output: str | None = None,
        dtype=None,
        rank=None,
        **attributes,
    ) -> str:
        """Add one ONNX node; returns the name of its (first) output. ``dtype`` is the output
        dtype (by default the dtype the graph records for ``output``, else the first input's)."""
        names = [self.tensor(ref) if ref is not None else "" for ref in inputs]
        if output is None:
            output = self.fresh(op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, names, [output], **attributes))
        if dtype is None and output in self.dtypes:
            # a graph value: its traced dtype is exact, while the first input's may not be
            # (the condition of Where), and later mappings cast their operands by it
            dtype = self.dtypes[output]
        if dtype is None:
            known = [self.dtypes[n] for n in names if n in self.dtypes]
            dtype = known[0] if known else None
        if dtype is not None:
            self.dtypes[output] = np.dtype(dtype)
        if rank is not None:
            self.ranks[output] = rank
        return output

    def simple(self, op_type: str, inputs: list, output: str, **attributes) -> str:
        """A node whose operands share one dtype: literals and mismatched operands are cast to
        the dtype of the framework's result (as eager dispatch promotes)."""
        return self.node(
            op_type, self.operands(inputs, self.dtypes.get(output)), output, **attributes
        )

    def operands(self, inputs: list, dtype=None) -> list:
        """Input names with Literals turned into constants and tensors cast to ``dtype`` (by
        default the first tensor operand's dtype)."""
        if dtype is None or np.dtype(dtype).kind == "b":
            tensors = [self.dtypes[r] for r in inputs if not isinstance(r, Literal) and r]
            dtype = tensors[0] if tensors else None
            floats = [d for d in tensors if d.kind == "f"]
            if floats:
                dtype = floats[0]
        out = []
        for ref in inputs:
            if isinstance(ref, Literal):
                out.append(self.constant(np.asarray(ref.value, dtype=dtype)))
            elif dtype is not None and ref in self.dtypes and self.dtypes[ref] != np.dtype(dtype):
                out.append(self.cast(ref, dtype))
            else:
                out.append(ref)
        return out

    def cast(self, name: str, dtype, output: str | None = None) -> str:
        to = self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        return self.node("Cast", [name], output, dtype=dtype, to=to)

    def scalar(self, value, like) -> str:
        """A 0-d constant holding ``value`` in the dtype of the value named ``like``."""
        return self.constant(np.asarray(value, dtype=self.dtype(like)))

    # ----- constants ---------------------------------------------------------------------------
    def tensor(self, ref) -> str:
        """A value name for ``ref`` (a name, or a Literal turned into a constant)."""
        if isinstance(ref, Literal):
            return self.constant(np.asarray(ref.value))
        return ref

    def constant(self, array, name: str | None = None) -> str:
        """An initializer holding ``array`` (deduplicated for small arrays)."""
        array = np.asarray(array)
        key = None
        if array.size <= 16 and name is None:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._constants:
                return self._constants[key]
        name = name or self.fresh("const")
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        self.dtypes[name] = array.dtype
        self.ranks[name] = array.ndim
        if key is not None:
            self._constants[key] = name
        return name

    def ints(self, values) -> str:
        """A 1-D int64 tensor of ``values``; ``DimExpr`` entries are computed from the inputs'
        shapes at run time (so symbolic sizes stay symbolic in the exported model)."""
        values = [int(v) if not isinstance(v, DimExpr) else v for v in values]
        if not any(isinstance(v, DimExpr) for v in values):
            return self.constant(np.asarray(values, dtype=np.int64).reshape(len(values)))
        pieces = []
        run: list = []
        for value in values:
            if isinstance(value, DimExpr):
                if run:
                    pieces.append(self.constant(np.asarray(run, dtype=np.int64)))
                    run = []
                pieces.append(self.dim(value))
            else:
                run.append(value)
        if run:
            pieces.append(self.constant(np.asarray(run, dtype=np.int64)))
        return self.node("Concat", pieces, axis=0) if len(pieces) > 1 else pieces[0]

    def dim(self, expression: DimExpr) -> str:
        """A (1,) int64 tensor holding ``expression`` evaluated on the input sizes."""
        result = None
        for symbol in expression.symbols:
            size = self.symbol(symbol)
            result = size if result is None else self.node("Mul", [result, size])
        if expression.coefficient != 1:
            result = self.node(
                "Mul", [result, self.constant(np.asarray([expression.coefficient], dtype=np.int64))]
            )
        if expression.offset:
            result = self.node(
                "Add", [result, self.constant(np.asarray([expression.offset], dtype=np.int64))]
            )
        return result

    def symbol(self, name: str) -> str:
        if name not in self._symbols:
            source, axis = self.symbol_sources[name]
            self._symbols[name] = self.node(
                "Shape", [source], dtype=np.int64, start=axis, end=axis + 1
            )
        return self._symbols[name]

    # ----- common patterns ---------------------------------------------------------------------
    def reduce(
        self, op_type: str, x: str, axes, keepdims: bool, output: str | None = None, dtype=None
    ) -> str:
        """A Reduce* node over ``axes`` (None: all), with axes as an input where the opset
        wants it (ReduceSum from 13, the others from 18)."""
        as_input = op_type == "ReduceSum" or self.opset >= 18
        keep = int(bool(keepdims))
        if axes is None:
            return self.node(op_type, [x], output, dtype=dtype, keepdims=keep)
        axes = [int(a) for a in axes]
        if not axes:
            return self.node("Identity", [x], output, dtype=dtype)
        if as_input:
            return self.node(op_type, [x, self.ints(axes)], output, dtype=dtype, keepdims=keep)
        return self.node(op_type, [x], output, dtype=dtype, axes=axes, keepdims=keep)

    def unsqueeze(self, x: str, axes, output: str | None = None) -> str:
        return self.node("Unsqueeze", [x, self.ints(axes)], output)

    def squeeze(self, x: str, axes, output: str | None = None) -> str:
        return self.node("Squeeze", [x, self.ints(axes)], output)
