"""``weight_histogram``: the distribution of a tensor's values, or of every parameter of a
module, as a matplotlib figure (optional extra ``vis``)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..autograd.tensor import Tensor
from ..nn.module import Module
from ..utils.extras import require


def weight_histogram(
    source,
    path: str | os.PathLike | None = None,
    *,
    bins: int = 50,
    name: str | None = None,
    columns: int = 3,
):
    """Histogram the values of ``source``: a Tensor (one panel), or a Module (one panel per
    parameter, titled with its name). Each panel's title also gives mean, std and count.

    With ``path`` the figure is saved there too; the suffix picks the format (``.png``,
    ``.svg``, ``.pdf``). Returns the matplotlib ``Figure``.
    """
    figure_module = require("matplotlib.figure", "vis", "weight_histogram")
    panels = _panels(source, name)
    if not panels:
        raise ValueError(
            f"[weight_histogram] {type(source).__name__} has no parameters to draw; pass a "
            "tensor, or a module with parameters"
        )
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    figure = figure_module.Figure(figsize=(4 * columns, 3 * rows), layout="constrained")
    for index, (title, values) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1)
        finite = values[np.isfinite(values)]
        axes.hist(finite, bins=bins, color="#4c72b0")
        axes.set_title(
            f"{title} {tuple(values.shape)}\nmean {finite.mean() if finite.size else 0:.3g}, "
            f"std {finite.std() if finite.size else 0:.3g}",
            fontsize=9,
        )
        axes.set_xlabel("value")
        axes.set_ylabel("count")
    if path is not None:
        figure.savefig(Path(path))
    return figure


def _panels(source, name: str | None) -> list[tuple[str, np.ndarray]]:
    if isinstance(source, Module):
        return [(name_, _host(p)) for name_, p in source.named_parameters()]
    if isinstance(source, Tensor):
        return [(name or "tensor", _host(source))]
    if hasattr(source, "shape") and hasattr(source, "dtype"):
        return [(name or "array", np.asarray(source))]
    raise TypeError(
        f"[weight_histogram] expected a Tensor or a Module, got {type(source).__name__}"
    )


def _host(tensor: Tensor) -> np.ndarray:
    data = tensor.array
    return np.asarray(data.get() if hasattr(data, "get") else data, dtype=np.float64)
