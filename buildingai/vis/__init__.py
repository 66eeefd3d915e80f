"""Pictures of what the framework computes: ``plot_computation_graph`` draws a frozen graph or
a model's most recent call (as ``record_runs`` kept it, or replayed from its shapes);
``LiveDashboard`` follows training curves live; ``weight_histogram`` and ``plot_metrics`` draw
parameters and a run's metrics."""

from .dashboard import LiveDashboard
from .graph_plot import DotSource, graph_to_dot, plot_computation_graph
from .histogram import weight_histogram
from .metrics_plot import plot_metrics, read_metrics
from .runs import RunRecorder, last_run, record_call, record_runs

__all__ = [
    "DotSource",
    "LiveDashboard",
    "RunRecorder",
    "graph_to_dot",
    "last_run",
    "plot_computation_graph",
    "plot_metrics",
    "read_metrics",
    "record_call",
    "record_runs",
    "weight_histogram",
]
