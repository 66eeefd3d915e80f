"""Inputs for the row kernels that have CUDA twins (``compiled/cuda_rows.py``), shared by the
CPU check of their plans and the GPU test of the kernels themselves."""

from __future__ import annotations

import numpy as np

from buildingai.accel.kernels.compiled import cuda_rows

ROWS, WIDTH = 7, 129


def arrays_for(name, rng):
    """The arrays of the kernel ``name`` in its order (outputs filled with noise, to be
    overwritten): logits with a row of -inf and a NaN for the softmax family, probability rows
    for the softmax gradient, log-probabilities for log_softmax's, positive rstd."""
    plan = cuda_rows.TWINS[name]
    wide = {"x", "out", "grad", "g", "xhat", "result", "probs"}
    arrays = []
    for array in plan.arrays:
        shape = (ROWS, WIDTH) if array in wide else (ROWS, 1)
        value = (rng.standard_normal(shape) * 3).astype(np.float32)
        if array == "rstd":
            value = np.abs(value) + np.float32(0.1)
        arrays.append(value)
    if plan.arrays[0] == "x" and ("softmax" in name or "cross_entropy" in name):
        arrays[0][1] = -np.inf
        arrays[0][2, 5] = np.nan
    if name == "rows.log_softmax_grad_rows":  # out is a log-probability: exp(out) <= 1
        arrays[1] = -np.abs(arrays[1])
    if name == "rows.softmax_grad_rows":  # out is a probability row
        arrays[1] = np.exp(arrays[1]) / np.exp(arrays[1]).sum(axis=1, keepdims=True)
    return arrays


def keywords_for(name, rng):
    """The keyword parameters of the kernel ``name``: weight and bias rows, eps, a zero shift."""
    params = cuda_rows.TWINS[name].params
    keywords = {}
    if "weight" in params:
        keywords["weight"] = rng.standard_normal(WIDTH).astype(np.float32)
    if "bias" in params:
        keywords["bias"] = rng.standard_normal(WIDTH).astype(np.float32)
    if "eps" in params:
        keywords["eps"] = 1e-5
    if "shift" in params:
        keywords["shift"] = np.float32(0.0)
    return keywords
