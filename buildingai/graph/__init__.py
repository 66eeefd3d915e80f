"""Static graphs: ``freeze`` a model or function into a ``Graph`` by tracing dispatch, optimise it
with passes, run it with a fast executor, and run independent branches concurrently."""

from ..ops.abstract import DimExpr
from .compile import CompiledStep
from .compiled import CompiledFunction, CompiledModule, CompileWarning, compile
from .executor import StaticGraph
from .freezing import freeze
from .graph import Graph, GraphError, Literal, Node, Value
from .parallel import parallel
from .spec import TensorSpec

__all__ = [
    "CompileWarning",
    "CompiledFunction",
    "CompiledModule",
    "CompiledStep",
    "DimExpr",
    "Graph",
    "GraphError",
    "Literal",
    "Node",
    "StaticGraph",
    "TensorSpec",
    "Value",
    "compile",
    "freeze",
    "parallel",
]
