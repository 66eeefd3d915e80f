"""Optimizers, learning-rate schedulers and gradient clipping."""
