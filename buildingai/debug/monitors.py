"""``gradient_monitor``: per-parameter gradient norms and NaN/Inf counts, with warnings when
gradients explode or vanish.

    @gradient_monitor                                   # finds the parameters itself
    def train_step(batch): ...

    @gradient_monitor(model, explode=1e3, vanish=1e-7)  # watches model.parameters()
    def forward(x): ...

    with gradient_monitor(model) as monitor:            # watches the backward passes in the block
        loss.backward()
    print(monitor.table())

The monitor reads each parameter's gradient as backward delivers it, through a gradient hook
on the parameter (``Tensor.register_hook``), so it sees exactly what each backward pass adds,
not what ``.grad`` accumulated. Without a model it finds the parameters from the ops of the
decorated function's first call (or of the block): every leaf that requires grad and enters an
op is watched, named by the module that used it (``fc1.weight``). A decorated function keeps its
hooks after it returns, so a forward function's monitor sees the backward run later;
``monitor.remove()`` detaches them. A context monitor detaches on exit.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings

from ..autograd.dispatch import DispatchMode, dispatch_mode
from ..autograd.state import MODULE_CALLS
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..nn.module import Module


class GradientWarning(UserWarning):
    """A gradient exploded, vanished, or held NaN/Inf (``gradient_monitor``)."""


class _LeafFinder(DispatchMode):
    """Watches every leaf that requires grad and enters an op, named by the module using it."""

    def __init__(self, monitor: GradientMonitor) -> None:
        self.monitor = monitor
        self.unnamed = 0

    def before_op(self, op, inputs: tuple, attrs: dict) -> None:
        for value in inputs:
            if (
                isinstance(value, Tensor)
                and value.requires_grad
                and value._node is None
                and id(value) not in self.monitor._handles
            ):
                name = _parameter_name(value)
                if name is None:  # a leaf tensor held by no module being called
                    name = f"leaf{self.unnamed}"
                    self.unnamed += 1
                self.monitor.watch(value, name)


def _parameter_name(leaf: Tensor) -> str | None:
    """``path.attr`` of ``leaf`` in the innermost module being called that holds it."""
    modules, names = MODULE_CALLS.stacks
    for depth in range(len(modules) - 1, -1, -1):
        for attribute, parameter in modules[depth]._parameters.items():
            if parameter is leaf:
                return ".".join(names[1 : depth + 1] + [attribute])
    return None


class GradientMonitor:
    """Gradient statistics of the watched parameters, one row per parameter, from the most
    recent backward pass that reached it. Each gradient is shaped like its parameter (any
    shape) and is flattened to ``(numel,)``: its row holds scalars (L2 norm over all elements,
    largest |value|, NaN/Inf counts, ``numel``).

    Args:
        model: the Module whose parameters to watch; None finds them from the ops run.
        explode: warn when a gradient's L2 norm exceeds this.
        vanish: warn when a gradient's L2 norm is below this.
        warn: emit a ``GradientWarning`` the first time each parameter explodes, vanishes or
            holds NaN/Inf (the messages are also kept in ``.warnings``; the report's ``status``
            shows every pass).
    """

    def __init__(
        self,
        model: Module | None = None,
        *,
        explode: float = 1e3,
        vanish: float = 1e-7,
        warn: bool = True,
    ) -> None:
        if model is not None and not isinstance(model, Module):
            raise TypeError(
                f"[gradient_monitor] expected a Module, got {type(model).__name__}; pass the "
                "model whose parameters to watch, or decorate a function with @gradient_monitor"
            )
        self.model = model
        self.explode = explode
        self.vanish = vanish
        self.warn = warn
        self.report: dict[str, dict] = {}
        self.warnings: list[str] = []
        self._warned: set[tuple[str, str]] = set()
        self._handles: dict[int, object] = {}
        self._found = False

    # ----- watching -----------------------------------------------------------------------
    def watch(self, parameter: Tensor, name: str) -> None:
        """Read ``parameter``'s gradient, under ``name``, on every backward pass from now on."""
        if id(parameter) in self._handles:
            return
        self._handles[id(parameter)] = parameter.register_hook(
            functools.partial(self._record, name, parameter.numel())
        )

    def remove(self) -> None:
        """Stop reading gradients (the report stays)."""
        for handle in self._handles.values():
            handle.remove()
        self._handles.clear()
        self._found = False

    def _watch_model(self) -> None:
        for name, parameter in self.model.named_parameters():
            if parameter.requires_grad:
                self.watch(parameter, name)

    def _record(self, name: str, numel: int, gradient: Tensor) -> None:
        data = gradient.array.ravel()
        xp = array_namespace(data)
        squares = float(xp.vdot(data, data)) if data.size else 0.0  # one pass, no temporary
        nan = inf = 0
        values = data
        if not math.isfinite(squares):  # NaN/Inf, or float32 squares overflowing: count, redo
            finite = xp.isfinite(data)
            nan = int(xp.isnan(data).sum())
            inf = int(data.size - finite.sum()) - nan
            values = data[finite].astype(xp.float64)
            squares = float(xp.vdot(values, values)) if values.size else 0.0
        norm = math.sqrt(squares)
        max_abs = max(abs(float(values.max())), abs(float(values.min()))) if values.size else 0.0
        previous = self.report.get(name)
        self.report[name] = {
            "norm": norm,
            "max_norm": norm if previous is None else max(norm, previous["max_norm"]),
            "max_abs": max_abs,
            "nan": nan,
            "inf": inf,
            "numel": numel,
            "passes": 1 if previous is None else previous["passes"] + 1,
            "status": self._status(norm, nan, inf),
        }
        status = self.report[name]["status"]
        if status != "ok" and (name, status) not in self._warned:
            self._warned.add((name, status))  # once per parameter and kind: no flood of lines
            self._warn(name, status, norm, nan, inf)
        return None

    def _status(self, norm: float, nan: int, inf: int) -> str:
        if nan or inf:
            return "nan/inf"
        if norm > self.explode:
            return "exploding"
        if norm < self.vanish:
            return "vanishing"
        return "ok"

    def _warn(self, name: str, status: str, norm: float, nan: int, inf: int) -> None:
        if status == "nan/inf":
            message = (
                f"[gradient_monitor] gradient of '{name}' holds {nan} NaN and {inf} Inf values; "
                "run the step under buildingai.debug.detect_anomaly() to find the op"
            )
        elif status == "exploding":
            message = (
                f"[gradient_monitor] exploding gradient in '{name}': norm {norm:.4g} > "
                f"explode={self.explode:g}; lower the learning rate or clip gradients "
                "(buildingai.nn.utils.clip_grad_norm_)"
            )
        else:
            message = (
                f"[gradient_monitor] vanishing gradient in '{name}': norm {norm:.3g} < "
                f"vanish={self.vanish:g}; check for saturated activations or dead ReLUs "
                "(buildingai.debug.activation_stats) and the initialization"
            )
        self.warnings.append(message)
        if self.warn:
            warnings.warn(message, GradientWarning, stacklevel=_user_stacklevel())

    # ----- the two forms ------------------------------------------------------------------
    def __enter__(self) -> GradientMonitor:
        self._scope = None
        if self.model is not None:
            self._watch_model()
        else:
            self._scope = dispatch_mode(_LeafFinder(self))
            self._scope.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc_info)
        self.remove()

    def __call__(self, function):
        """Decorate ``function``: parameters are found on its first call and watched from then
        on (the report is ``function.monitor``)."""

        @functools.wraps(function)
        def monitored(*args, **kwargs):
            if self._found:
                return function(*args, **kwargs)
            self._found = True
            if self.model is not None:
                self._watch_model()
                return function(*args, **kwargs)
            with dispatch_mode(_LeafFinder(self)):
                return function(*args, **kwargs)

        monitored.monitor = self
        return monitored

    # ----- results ------------------------------------------------------------------------
    def as_dict(self) -> dict[str, dict]:
        """``{parameter name: {"norm", "max_norm", "max_abs", "nan", "inf", "numel", "passes",
        "status"}}``."""
        return {name: dict(row) for name, row in self.report.items()}

    @property
    def total_norm(self) -> float:
        """The L2 norm of all watched gradients together (the most recent pass of each)."""
        return math.sqrt(sum(row["norm"] ** 2 for row in self.report.values()))

    def table(self) -> str:
        """One line per parameter: norm, largest |value|, NaN/Inf counts and status."""
        width = max([9] + [len(name) for name in self.report])
        header = (
            f"{'parameter':<{width}}  {'norm':>10}  {'max norm':>10}  {'max |g|':>10}  "
            f"{'NaN':>5}  {'Inf':>5}  status"
        )
        lines = [header, "-" * len(header)]
        for name, row in self.report.items():
            lines.append(
                f"{name:<{width}}  {row['norm']:>10.4g}  {row['max_norm']:>10.4g}  "
                f"{row['max_abs']:>10.4g}  {row['nan']:>5}  {row['inf']:>5}  {row['status']}"
            )
        lines.append(f"total norm {self.total_norm:.4g}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the innermost frame outside buildingai (the
    user's ``loss.backward()`` line), not at the hook that noticed it."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def gradient_monitor(target=None, *, explode: float = 1e3, vanish: float = 1e-7, warn: bool = True):
    """Monitor gradients: ``@gradient_monitor`` on a function, ``@gradient_monitor(model,
    explode=1e3, vanish=1e-7)``, or ``with gradient_monitor(model) as monitor:``.

    ``target`` is the model to watch (a Module), the function being decorated (the bare
    form), or None (find the parameters from the ops run). Returns a ``GradientMonitor``
    (a context manager and a decorator), or the decorated function for the bare form.
    Gradients of any shape (their parameter's) are reduced over all elements to scalars.
    """
    if target is not None and not isinstance(target, Module) and callable(target):
        return GradientMonitor(None, explode=explode, vanish=vanish, warn=warn)(target)
    return GradientMonitor(target, explode=explode, vanish=vanish, warn=warn)
