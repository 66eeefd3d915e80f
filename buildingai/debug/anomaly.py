"""NaN/Inf provenance: ``detect_anomaly`` stops at the first op, forward or backward, that turns
finite values into NaN or Inf, and names the op, the module, the source line and a likely cause.

It is a dispatch mode, so it costs nothing while off. Like all dispatch
state it belongs to the calling thread: ``detect_anomaly(True)`` switches it on for this thread
(and the ``parallel()`` branches and frozen-graph workers this thread starts, which inherit its
dispatch state) until ``detect_anomaly(False)``; other threads, including ones started later,
never see it; call it in each thread that should be checked. A frozen graph runs its plan
without dispatch, so it is not checked: call the eager function to find the op.
"""

from __future__ import annotations

import linecache
import os
import sys

import numpy as np

from ..autograd.dispatch import DispatchMode
from ..autograd.engine import running_node
from ..autograd.state import STATE, current_state
from ..autograd.state import module_path as _module_path
from ..autograd.tensor import Tensor
from ..backend import dtypes
from ..backend.device import array_namespace
from ..backend.dtypes import is_floating
from ..errors import BuildingAIError
from ..graph.trace import Tracer

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class AnomalyError(BuildingAIError, FloatingPointError):
    """An op produced NaN or Inf from inputs that held none (``detect_anomaly``).

    Attributes:
        op: the name of the op that produced the values.
        phase: ``"forward"`` or ``"backward"``.
        source: the user's source line (for a backward op: the line whose forward op it
            differentiates), or None when unknown.
        cause: the likely cause, or None when no rule recognised the values.
        forward_op: for a backward op, the name of the forward op being differentiated.
    """

    def __init__(self, message: str, *, op: str, phase: str, source, cause, forward_op, help):
        super().__init__(message, help=help)
        self.op, self.phase, self.source, self.cause = op, phase, source, cause
        self.forward_op = forward_op

    def __str__(self) -> str:
        # the module path belongs on the first line, not after the details
        head, _, details = self.message.partition("\n")
        if self.where:
            head += f" (in {self.where})"
        text = head + ("\n" + details if details else "")
        if self.help:
            text += f"\n  help: {self.help}"
        return text


class AnomalyDetector(DispatchMode):
    """The dispatch mode behind ``detect_anomaly``. It keeps no state, so one instance serves all
    threads; while it is active, each recorded node also remembers the line that created it."""

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        data = output.array
        if not _holds_floats(data.dtype):  # integers and booleans cannot hold NaN or Inf
            return
        node = output._node
        if node is not None:
            running = running_node()  # a node recorded by a backward belongs to its forward line
            origin = getattr(running, "anomaly_origin", None) if running is not None else None
            node.anomaly_origin = origin or (_user_frame(), ".".join(_module_path()))
        if array_namespace(data).isfinite(data).all():
            return
        _check(op, inputs, data, attrs)


_DETECTOR = AnomalyDetector()


class detect_anomaly:  # noqa: N801 - used like a function, as torch.autograd.detect_anomaly
    """Stop at the first op whose output holds NaN or Inf while its inputs held none, with an
    ``AnomalyError`` naming the op, the module path, the source line, the input ranges and a
    likely cause. An op whose inputs already hold NaN is never blamed; one that makes NaN out of
    infinite inputs (``inf - inf``, ``0 * inf``) is.

    ``with detect_anomaly(): ...`` checks the block (run ``loss.backward()`` inside it to check
    backward ops too; they are named with the forward line they differentiate).
    ``detect_anomaly(True)`` / ``detect_anomaly(False)`` switch it on or off for this thread now
    (as a context manager, the previous setting returns at the end of the block). Either form
    applies to the calling thread only; see the module docstring.
    """

    def __init__(self, mode: bool | None = None) -> None:
        self.mode = True if mode is None else bool(mode)
        self._token = None
        if mode is not None:  # the switch form acts at once
            self._token = _switch(self.mode)

    def __enter__(self) -> detect_anomaly:
        if self._token is None:
            self._token = _switch(self.mode)
        return self

    def __exit__(self, *exc_info) -> None:
        STATE.reset(self._token)
        self._token = None


def set_detect_anomaly(mode: bool) -> detect_anomaly:
    """``detect_anomaly(mode)``, spelled as PyTorch's ``torch.autograd.set_detect_anomaly``."""
    return detect_anomaly(mode)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on for this thread."""
    return _DETECTOR in current_state().modes


def _switch(on: bool):
    state = current_state()
    others = tuple(mode for mode in state.modes if mode is not _DETECTOR)
    modes = others + (_DETECTOR,) if on else others  # innermost: others see the op first
    return STATE.set(state.replace(modes=modes))


# ----- the report ---------------------------------------------------------------------------


def _check(op, inputs: tuple, data, attrs: dict) -> None:
    """Raise if ``op`` made NaN or Inf (now in ``data``) out of inputs without them."""
    arrays = [_host(value) for value in inputs if _is_array(value)]
    if not arrays:  # factories (``full(nan)``, ``empty``) produce what they were asked for
        return
    numbers = [value for value in inputs if isinstance(value, (int, float, complex))]
    numbers += [value for value in attrs.values() if isinstance(value, (float, complex))]
    floats = [array for array in arrays if _holds_floats(array.dtype)]
    inputs_nan = any(np.isnan(array).any() for array in floats) or any(
        value != value for value in numbers
    )
    inputs_inf = any(np.isinf(array).any() for array in floats) or any(
        not np.isfinite(value) for value in numbers
    )
    output = _host(data)
    output_nan = bool(np.isnan(output).any())
    if inputs_nan or (inputs_inf and not output_nan):
        return  # not the first producer: the values came in with the inputs
    if any(isinstance(observer, Tracer) for observer in current_state().modes):
        return  # freeze() traces with random sample inputs, which may leave an op's domain
    raise _anomaly_error(op, inputs, output, attrs, inputs_inf)


def _anomaly_error(op, inputs: tuple, output: np.ndarray, attrs: dict, inputs_inf: bool):
    """The AnomalyError for ``op``, whose output array is ``output``: the op, where it was
    called (for a backward op: the forward op and its line), the inputs and a likely cause."""
    running = running_node()
    phase = "forward" if running is None else "backward"
    forward_op = None if running is None else running.op.name
    if running is None:
        source, module_path = _user_frame(), ".".join(_module_path())
    else:
        source, module_path = getattr(running, "anomaly_origin", (None, ""))
    cause, help = _likely_cause(op.name, inputs, output, attrs)
    if running is not None and forward_op in _BACKWARD_HINTS:
        # the backward rule is the framework's; the fix is in the user's forward op
        hint, help = _BACKWARD_HINTS[forward_op]
        cause = f"{cause}; {hint}" if cause else hint

    nan_count = int(np.isnan(output).sum())
    inf_count = int(np.isinf(output).sum())
    produced = ", ".join(
        f"{count} {kind}" for count, kind in ((nan_count, "NaN"), (inf_count, "Inf")) if count
    )
    came_from = "infinite inputs" if inputs_inf else "finite inputs"
    if running is None:
        head = f"[{op.name}] produced {produced} (of {output.size} values) from {came_from}"
    else:
        head = (
            f"[{op.name}] in the backward of '{forward_op}' produced {produced} (of "
            f"{output.size} values) from {came_from}"
        )
    lines = [head]
    if running is None:
        lines.append(f"  at {_format_frame(source)}")
    elif source is not None:
        lines.append(f"  differentiating '{forward_op}' created at {_format_frame(source)}")
    else:
        lines.append(
            f"  the forward op '{forward_op}' ran outside detect_anomaly(), so its line is unknown"
        )
    for position, value in enumerate(inputs):
        lines.append(f"  input {position}: {_describe(value)}")
    shown = {key: value for key, value in attrs.items() if _short(value)}
    if shown:
        lines.append("  attributes: " + ", ".join(f"{k}={v!r}" for k, v in shown.items()))
    lines.append(f"  likely cause: {cause or 'no rule matched these values; see the input ranges'}")
    error = AnomalyError(
        "\n".join(lines),
        op=op.name,
        phase=phase,
        source=None if source is None else _format_frame(source),
        cause=cause,
        forward_op=forward_op,
        help=help or _DEFAULT_HELP,
    )
    error.where = module_path or ""  # "" keeps a calling Module from naming itself instead
    return error


_DEFAULT_HELP = (
    "keep the op's input in its domain (clamp it, add an epsilon), or compute in a stable form "
    "(log_softmax, logsumexp, log1p)"
)

_AWAY_FROM_ZERO = "keep the input away from 0: x.clamp(min=eps) or x + eps before the op"

# Forward ops whose derivative is infinite somewhere their value is finite: (cause, help).
_BACKWARD_HINTS = {
    "sqrt": ("the derivative of sqrt is infinite where its input is 0", _AWAY_FROM_ZERO),
    "rsqrt": ("the derivative of rsqrt is infinite where its input is 0", _AWAY_FROM_ZERO),
    "log": ("the derivative of log is infinite where its input is 0", _AWAY_FROM_ZERO),
    "log1p": ("the derivative of log1p is infinite where its input is -1", _AWAY_FROM_ZERO),
    "pow": ("x ** p with p < 1 has an infinite derivative where x is 0", _AWAY_FROM_ZERO),
    "div": ("the derivative of a / b is infinite where b is 0", "add an epsilon to b"),
    "reciprocal": ("the derivative of 1 / x is infinite where x is 0", _AWAY_FROM_ZERO),
    "vector_norm": (
        "the derivative of a norm is undefined at a zero vector",
        "add an epsilon inside: (x.square().sum() + eps).sqrt()",
    ),
    "std": (
        "the derivative of std is infinite where the variance is 0",
        "use (x.var() + eps).sqrt()",
    ),
}


def _likely_cause(name: str, inputs: tuple, output, attrs: dict) -> tuple[str | None, str | None]:
    """(cause, help) from the op and its input values; (None, None) when no rule matches."""
    values = [_host(value) if _is_array(value) else np.asarray(value) for value in inputs]
    first = values[0] if values else None
    second = values[1] if len(values) > 1 else None
    dtype = output.dtype
    limits = _finfo(dtype)
    largest = float(limits.max)
    output_nan = bool(np.isnan(output).any())

    if name == "log" and _min(first) <= 0:
        return (
            f"log of a value <= 0 (smallest input {_min(first):.4g})",
            "clamp the input first: x.clamp(min=eps).log(), or use log_softmax / log1p",
        )
    if name == "log1p" and _min(first) <= -1:
        return f"log1p of a value <= -1 (smallest input {_min(first):.4g})", None
    if name in ("sqrt", "rsqrt") and _min(first) < 0:
        return (
            f"sqrt of a negative value (smallest input {_min(first):.4g})",
            "clamp the input first: x.clamp(min=0).sqrt(), or fix what made it negative",
        )
    if name in ("div", "reciprocal", "rsqrt", "floor_divide", "remainder"):
        divisor, numerator = (first, 1.0) if name in ("reciprocal", "rsqrt") else (second, first)
        # small enough that the quotient overflows, or a true 0 / 0
        small = max(float(limits.tiny), _abs_max(numerator) / largest)
        if divisor is not None and _abs_min(divisor) <= small:
            numerator_zero = name == "div" and output_nan and _abs_min(first) == 0
            kind = "0 / 0" if numerator_zero else "division by ~0"
            return (
                f"{kind} (smallest |divisor| = {_abs_min(divisor):.4g})",
                "add an epsilon to the divisor: a / (b + eps), or mask the zero entries",
            )
    if name in ("exp", "expm1") and _max(first) > np.log(largest):
        return (
            f"exp overflow: largest input {_max(first):.4g} > {np.log(largest):.4g}, the largest "
            f"exponent {dtype} can hold",
            "subtract the maximum first (softmax, logsumexp do), or compute in float64",
        )
    if name == "pow" and first is not None and second is not None:
        if _min(first) < 0 and output_nan and not np.all(np.mod(second, 1) == 0):
            return "a negative base to a fractional power", "clamp the base: x.clamp(min=0) ** p"
        if _abs_min(first) == 0 and _min(second) < 0:
            return "0 to a negative power (division by 0)", None
        if not output_nan:
            return (
                f"pow overflow: |base| up to {_abs_max(first):.4g} to the power "
                f"{_max(second):.4g} exceeds {largest:.4g}, the largest {dtype}",
                "rescale the base, or compute in float64",
            )
    if first is not None and first.size == 0:
        return f"{name} over no elements (an empty input)", "check the shapes that made it empty"
    ignored = attrs.get("ignore_index")
    if name in ("cross_entropy", "nll_loss") and second is not None and np.all(second == ignored):
        return (
            f"every target equals ignore_index ({ignored}), so the mean is over no targets",
            "skip batches without counted targets, or use reduction='sum'",
        )
    correction = attrs.get("correction")
    if name in ("var", "std") and correction is not None and output.size:
        count = first.size // output.size  # elements per reduced value
        if count - correction <= 0:
            return (
                f"{name} of {count} value(s) with correction={correction} divides by "
                f"{count} - {correction} = {count - correction}",
                "reduce over more elements, or pass correction=0",
            )
    normalizing = name in ("softmax", "log_softmax", "cross_entropy", "logsumexp")
    if normalizing and output_nan and first is not None and np.isneginf(first).any():
        return (
            "a row where every value is -inf (fully masked), so the normalizer is 0",
            "leave at least one position unmasked in each row, or mask with a large finite "
            "negative value",
        )
    if output_nan:
        infinite = [value for value in values if _numbers_of(value).size and _has_inf(value)]
        has_zero = any(_abs_min(value) == 0 for value in values if value.size)
        if name in ("sub", "add") and len(infinite) >= 1:
            return "inf - inf", _INF_HELP
        if name in ("mul", "matmul", "linear", "einsum") and infinite and has_zero:
            return "0 * inf", _INF_HELP
        if name == "div" and len(infinite) == 2:
            return "inf / inf", _INF_HELP
        if infinite:
            return "an operation between infinities (inf - inf, 0 * inf or inf / inf)", _INF_HELP
        return None, None
    magnitudes = [_abs_max(value) for value in values if _numbers_of(value).size]
    biggest = max(magnitudes, default=0.0)
    return (
        f"overflow: a result exceeds {largest:.4g}, the largest {dtype} (largest |input| "
        f"{biggest:.4g})",
        "rescale the values (normalise inputs, lower the learning rate), or compute in float64",
    )


_INF_HELP = (
    "the infinite inputs came from outside the checked ops (data, a -inf mask, code run before "
    "detect_anomaly()): use a large finite value instead, or remove the infinity at its source"
)


# ----- helpers ------------------------------------------------------------------------------


def _user_frame():
    """(file, line, function) of the innermost frame outside the buildingai package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name


def _format_frame(frame) -> str:
    if frame is None:
        return "an unknown line"
    filename, lineno, function = frame
    code = linecache.getline(filename, lineno).strip()
    here = os.getcwd() + os.sep
    if filename.startswith(here):
        filename = filename[len(here) :]
    return f"{filename}:{lineno} in {function}: {code}"


def _holds_floats(dtype: np.dtype) -> bool:
    """Whether values of ``dtype`` can be NaN or Inf (floats, bfloat16, complex)."""
    return is_floating(dtype) or dtype.kind == "c"


def _finfo(dtype: np.dtype):
    """The limits of a float dtype (float64's for any other)."""
    if dtype.kind == "f":
        return np.finfo(dtype)
    if is_floating(dtype):  # bfloat16: NumPy does not know it, ml_dtypes does
        return dtypes.ml_dtypes.finfo(dtype)
    return np.finfo(np.float64)


def _has_inf(array: np.ndarray) -> bool:
    return bool(np.isinf(_numbers_of(array)).any())


def _is_array(value) -> bool:
    return isinstance(value, Tensor) or (hasattr(value, "dtype") and hasattr(value, "shape"))


def _host(value) -> np.ndarray:
    """``value`` (a Tensor or a backend array) as a NumPy array: only read on the error path."""
    array = value.array if isinstance(value, Tensor) else value
    return np.asarray(array.get() if hasattr(array, "get") else array)


def _describe(value) -> str:
    if not _is_array(value):
        return repr(value)
    array = _host(value)
    text = f"{array.dtype} {tuple(array.shape)}"
    if array.size == 0 or not (_holds_floats(array.dtype) or array.dtype.kind in "iub"):
        return text + (" (empty)" if array.size == 0 else "")
    if array.dtype.kind == "b":
        return text + f", {int(array.sum())} True"
    text += f", min {_min(array):.4g}, max {_max(array):.4g}"
    if _holds_floats(array.dtype):
        nan_count, inf_count = int(np.isnan(array).sum()), int(np.isinf(array).sum())
        if nan_count or inf_count:
            text += f" ({nan_count} NaN, {inf_count} Inf)"
    return text


def _short(value) -> bool:
    return isinstance(value, (bool, int, float, str)) or (
        isinstance(value, tuple) and len(value) <= 8
    )


def _numbers_of(array) -> np.ndarray:
    """The numbers in ``array`` other than NaN, as floats (complex as magnitudes); empty when
    ``array`` holds no numbers (an optional input passed as None)."""
    array = np.asarray(array)
    if not (_holds_floats(array.dtype) or array.dtype.kind in "biu"):
        return np.empty(0)
    array = np.abs(array) if array.dtype.kind == "c" else array.astype(np.float64)
    return array[~np.isnan(array)]


def _min(array) -> float:
    part = _numbers_of(array)
    return float(part.min()) if part.size else float("nan")


def _max(array) -> float:
    part = _numbers_of(array)
    return float(part.max()) if part.size else float("nan")


def _abs_min(array) -> float:
    part = np.abs(_numbers_of(array))
    return float(part.min()) if part.size else float("nan")


def _abs_max(array) -> float:
    part = np.abs(_numbers_of(array))
    return float(part.max()) if part.size else float("nan")
