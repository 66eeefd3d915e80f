"""Pictures of what the framework computes: ``plot_computation_graph`` draws a frozen graph."""

from .graph_plot import graph_to_dot, plot_computation_graph

__all__ = ["graph_to_dot", "plot_computation_graph"]
