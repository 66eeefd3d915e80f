"""``activation_stats``: what named modules output while a block runs: mean, std, min, max,
the fraction of exact zeros (dead ReLUs) and the fraction of saturated values.

    with activation_stats(model, "layer1", "layer2") as stats:
        train_step(batch)
    print(stats.table())

Each named module gets a forward hook for the block only; statistics accumulate over every call
inside it. Saturated means: for a ``Tanh`` output, |x| >= 0.99 (1% from its bounds); for a
``Sigmoid``, x <= 0.01 or x >= 0.99; for a ``Hardtanh`` (``ReLU6``), at its ``min_val`` /
``max_val``; for any other module, |x| >= ``saturation`` when that is given, else not
measured (None).
"""

from __future__ import annotations

import math

from ..backend.device import array_namespace
from ..nn.module import Module


class _Accumulator:
    """Count, mean and sum of squared deviations over every value a module output in the block,
    merged call by call (Chan's parallel update), so no float64 copy of an output is made."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.count = self.calls = 0
        self.mean = self.deviations = 0.0
        self.low, self.high = math.inf, -math.inf
        self.zeros = 0
        self.saturated: int | None = 0

    def add(self, data, saturated) -> None:
        xp = array_namespace(data)
        size = data.size
        self.calls += 1
        if saturated is None or self.saturated is None:
            self.saturated = None
        elif size:
            self.saturated += int(saturated(data, xp).sum())
        if not size:
            return
        mean = float(data.sum(dtype=xp.float64)) / size
        centred = (data - data.dtype.type(mean)).ravel()
        deviations = float(xp.vdot(centred, centred))
        total = self.count + size
        delta = mean - self.mean
        self.mean += delta * size / total
        self.deviations += deviations + delta * delta * self.count * size / total
        self.count = total
        self.low = min(self.low, float(data.min()))
        self.high = max(self.high, float(data.max()))
        self.zeros += size - int(xp.count_nonzero(data))

    def as_dict(self) -> dict:
        count = max(self.count, 1)
        return {
            "module": self.kind,
            "calls": self.calls,
            "count": self.count,
            "mean": self.mean,
            "std": math.sqrt(self.deviations / count),
            "min": self.low,
            "max": self.high,
            "zeros": self.zeros / count,
            "saturated": None if self.saturated is None else self.saturated / count,
        }


def saturation_rule(module: Module, threshold: float | None):
    """``rule(values, xp) -> bool array`` marking saturated outputs of ``module``, or None."""
    kind = type(module).__name__
    if kind == "Tanh":
        return lambda values, xp: xp.abs(values) >= 0.99
    if kind == "Sigmoid":
        return lambda values, xp: (values <= 0.01) | (values >= 0.99)
    if hasattr(module, "min_val") and hasattr(module, "max_val"):  # Hardtanh, ReLU6
        low, high = module.min_val, module.max_val
        return lambda values, xp: (values <= low) | (values >= high)
    if threshold is not None:
        return lambda values, xp: xp.abs(values) >= threshold
    return None


class ActivationStats:
    """Output statistics of named modules, collected while the block runs. A module's output
    (the first element when it returns a tuple) may have any shape, and may change shape from
    call to call; every floating-point element of every call counts, reduced to scalars.

    Args:
        model: the model holding the modules.
        names: dotted names of the modules to watch (``"layer1"``, ``"encoder.layers.0"``);
            none given watches every module without children.
        saturation: |x| threshold counted as saturated for modules that are not a bounded
            activation (see the module docstring); None leaves it unmeasured for them.
    """

    def __init__(self, model: Module, *names: str, saturation: float | None = None) -> None:
        modules = dict(model.named_modules())
        if not names:
            names = tuple(name for name, module in modules.items() if name and not module._modules)
        missing = [name for name in names if name not in modules]
        if missing:
            known = ", ".join(name for name in modules if name) or "(none)"
            raise KeyError(
                f"[activation_stats] {type(model).__name__} has no module {missing[0]!r}; "
                f"its modules are: {known}"
            )
        self.modules = {name: modules[name] for name in names}
        self.saturation = saturation
        self.stats: dict[str, _Accumulator] = {}
        self._handles: list = []

    def __enter__(self) -> ActivationStats:
        for name, module in self.modules.items():
            accumulator = self.stats.setdefault(name, _Accumulator(type(module).__name__))
            rule = saturation_rule(module, self.saturation)
            self._handles.append(module.register_forward_hook(_hook(accumulator, rule)))
        return self

    def __exit__(self, *exc_info) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def as_dict(self) -> dict[str, dict]:
        """``{module name: {"module", "calls", "count", "mean", "std", "min", "max", "zeros",
        "saturated"}}``; ``zeros`` and ``saturated`` are fractions of all values."""
        return {name: accumulator.as_dict() for name, accumulator in self.stats.items()}

    report = property(as_dict)

    def table(self) -> str:
        """One line per module; zeros and saturated as percentages."""
        rows = self.as_dict()
        width = max([6] + [len(name) for name in rows])
        header = (
            f"{'module':<{width}}  {'type':<10}  {'mean':>9}  {'std':>9}  {'min':>9}  "
            f"{'max':>9}  {'zeros':>7}  {'saturated':>9}"
        )
        lines = [header, "-" * len(header)]
        for name, row in rows.items():
            saturated = "-" if row["saturated"] is None else f"{100 * row['saturated']:.1f}%"
            lines.append(
                f"{name:<{width}}  {row['module']:<10}  {row['mean']:>9.4g}  {row['std']:>9.4g}  "
                f"{row['min']:>9.4g}  {row['max']:>9.4g}  {100 * row['zeros']:>6.1f}%  "
                f"{saturated:>9}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _hook(accumulator: _Accumulator, rule):
    def record_output(module, args, output):
        tensor = output[0] if isinstance(output, (tuple, list)) else output
        data = getattr(tensor, "array", None)
        if data is not None and getattr(data, "dtype", None) is not None and data.dtype.kind == "f":
            accumulator.add(data, rule)

    return record_output


def activation_stats(model: Module, *names: str, saturation: float | None = None):
    """``with activation_stats(model, "layer1", "layer2") as stats: ...``: output statistics of
    the named modules over the block (see ``ActivationStats``). Outputs of any shape, reduced
    over all their elements to one row of scalars per module."""
    return ActivationStats(model, *names, saturation=saturation)
