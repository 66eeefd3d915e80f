"""Shared harness: run one of our optimizers and a reference on identical weights and gradients."""

from __future__ import annotations

import numpy as np
import torch

import buildingai as bai

# a scalar, a vector, a matrix, a zero-size tensor, and a long vector, updated through BLAS
# (backend.vector_blas.MIN_SIZE)
SHAPES = [(), (5,), (3, 4), (0, 3), (40000,)]


def make_problem(shapes=SHAPES, steps: int = 50, seed: int = 0):
    """Identical float64 starting weights and a fixed sequence of gradients."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(shape) for shape in shapes]
    grads = [[rng.standard_normal(shape) for shape in shapes] for _ in range(steps)]
    return init, grads


def split_groups(params: list, group_options: list[dict] | None):
    """The params as one plain list, or dealt round-robin into groups with their own options."""
    if not group_options:
        return params
    groups = [dict(options, params=[]) for options in group_options]
    for position, param in enumerate(params):
        groups[position % len(groups)]["params"].append(param)
    return groups


def run_ours(make, init, grads, group_options=None):
    params = [bai.tensor(array.copy(), requires_grad=True) for array in init]
    optimizer = make(split_groups(params, group_options))
    for step_grads in grads:
        for param, grad in zip(params, step_grads):
            param.grad = bai.tensor(grad.copy())
        optimizer.step()
    return [p.numpy() for p in params], optimizer


def run_torch(make, init, grads, group_options=None):
    params = [torch.tensor(array.copy(), requires_grad=True) for array in init]
    optimizer = make(split_groups(params, group_options))
    for step_grads in grads:
        for param, grad in zip(params, step_grads):
            param.grad = torch.tensor(grad.copy())
        optimizer.step()
    return [p.detach().numpy() for p in params], optimizer


def max_difference(ours: list, theirs: list) -> float:
    return max((float(np.max(np.abs(a - b))) if a.size else 0.0) for a, b in zip(ours, theirs))
