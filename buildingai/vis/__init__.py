"""Pictures of what the framework computes: ``plot_computation_graph`` draws a frozen graph or
a model's most recent call, which ``record_runs`` keeps."""

from .graph_plot import DotSource, graph_to_dot, plot_computation_graph
from .runs import RunRecorder, last_run, record_call, record_runs

__all__ = [
    "DotSource",
    "RunRecorder",
    "graph_to_dot",
    "last_run",
    "plot_computation_graph",
    "record_call",
    "record_runs",
]
