"""The side-by-side benchmark suite: training steps, inference and per-op costs of BuildingAI,
PyTorch eager and hand-written NumPy, measured in the same run (``python -m benchmarks``)."""
