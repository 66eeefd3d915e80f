"""``sparsity_report(model)``: how many zeros each layer's tensors hold, as a table and a dict."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .functional import pruned_names, pruned_tensor


@dataclass
class SparsityReport:
    """Zeros per tensor: ``layers`` maps ``'conv1.weight'`` to ``{'zeros', 'total',
    'sparsity', 'pruned'}``; ``zeros`` / ``total`` / ``sparsity`` are over all listed tensors.
    ``total`` is a tensor's element count whatever its shape (``(out, in)`` -> ``out * in``).
    ``str(report)`` is the table."""

    layers: dict = field(default_factory=dict)

    @property
    def zeros(self) -> int:
        return sum(row["zeros"] for row in self.layers.values())

    @property
    def total(self) -> int:
        return sum(row["total"] for row in self.layers.values())

    @property
    def sparsity(self) -> float:
        return self.zeros / self.total if self.total else 0.0

    def to_dict(self) -> dict:
        """``{'layers': {...}, 'zeros': int, 'total': int, 'sparsity': float}``."""
        return {
            "layers": {name: dict(row) for name, row in self.layers.items()},
            "zeros": self.zeros,
            "total": self.total,
            "sparsity": self.sparsity,
        }

    @property
    def table(self) -> str:
        width = max([len("tensor"), *(len(name) for name in self.layers)])
        lines = [f"{'tensor':<{width}}  {'zeros':>10}  {'total':>10}  sparsity  pruned"]
        for name, row in self.layers.items():
            lines.append(
                f"{name:<{width}}  {row['zeros']:>10}  {row['total']:>10}  "
                f"{row['sparsity']:>7.1%}  {'yes' if row['pruned'] else 'no'}"
            )
        lines.append(
            f"{'total':<{width}}  {self.zeros:>10}  {self.total:>10}  {self.sparsity:>7.1%}"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table


def sparsity_report(model, weights_only: bool = True) -> SparsityReport:
    """Zeros in each parameter the model computes with (pruned ones as ``orig * mask``), layer
    by layer; ``weights_only`` lists only tensors whose name ends in ``weight``. Tensors of any
    shape are counted over all their elements."""
    report = SparsityReport()
    for prefix, module in model.named_modules():
        pruned = set(pruned_names(module))
        names = [n for n, p in module._parameters.items() if p is not None]
        names = [n[: -len("_orig")] if n[: -len("_orig")] in pruned else n for n in names]
        for name in names:
            if weights_only and not name.endswith("weight"):
                continue
            values = np.asarray(pruned_tensor(module, name).numpy())
            zeros = int(values.size - np.count_nonzero(values))
            report.layers[f"{prefix}.{name}" if prefix else name] = {
                "zeros": zeros,
                "total": int(values.size),
                "sparsity": zeros / values.size if values.size else 0.0,
                "pruned": name in pruned,
            }
    return report
