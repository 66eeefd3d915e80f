"""``autocast``: run each op in the dtype its record asks for, inside a block.

```python
with autocast(dtype="bfloat16"):
    logits = model(x)                      # linear / matmul / conv in bfloat16
    loss = F.cross_entropy(logits, y)      # losses, softmax, norms, reductions in float32
loss.backward()                            # parameters get float32 gradients
```

Each op record says how it runs under autocast (``Op.autocast``, listed by ``autocast.policy()``):

- ``"low"``: floating inputs (float64 excepted) are cast to the autocast dtype: matmul, linear,
  einsum, conv, whose products gain most and lose least;
- ``"float32"``: float16 / bfloat16 inputs are cast to float32: softmax, log_softmax, norms,
  losses, reductions, exp/log/pow, whose sums and exponentials lose most in low precision;
- ``"promote"`` (every other op): floating inputs of different dtypes are cast to the widest.

The casts are ``cast`` ops run through dispatch, so they are recorded: the gradient of a float32
parameter used in a bfloat16 product comes back to it in float32, and tracers and profilers see
them. Autocast is a dispatch mode of the calling thread (``dispatch_mode``), so other threads
run as they would without it.
``autocast(enabled=False)`` inside an autocast block runs the ops of its own block as written, and
``checkpoint`` recomputes a segment in backward under the autocast its forward ran in.
"""

from __future__ import annotations

import numpy as np

from ..autograd import dispatch
from ..autograd.dispatch import DispatchMode
from ..autograd.state import current_state
from ..autograd.tensor import Tensor
from ..backend.dtypes import as_dtype, is_floating
from ..errors import ArgumentError
from ..ops import all_ops
from ..ops.cast import CAST

_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)
RULES = ("low", "float32", "promote")


class PolicyTable(dict):
    """``{op name: rule}`` for every op record; ``str()`` groups the names by rule."""

    def __str__(self) -> str:
        meaning = {
            "low": "cast to the autocast dtype",
            "float32": "cast float16/bfloat16 inputs to float32",
            "promote": "mixed floating inputs cast to the widest",
        }
        lines = []
        for rule in RULES:
            names = [name for name, value in self.items() if value == rule]
            lines.append(f"{rule} ({meaning[rule]}): {len(names)} ops")
            lines.extend(f"  {name}" for name in names)
        return "\n".join(lines)


def active_autocast() -> autocast | None:
    """The autocast in force on this thread (the innermost one, when it is enabled), or None."""
    for mode in reversed(current_state().modes):
        if isinstance(mode, autocast):
            return mode if mode.enabled else None
    return None


class autocast(DispatchMode):  # noqa: N801 - named as users write it (torch.autocast)
    """``with autocast(dtype="bfloat16"):`` (or ``"float16"``) runs the ops inside the block in
    the dtype their records ask for, on this thread. ``enabled=False`` makes it a no-op. The
    casts change dtypes only: every input keeps its shape, and each op's output has the shape
    it has without autocast."""

    def __init__(self, dtype="bfloat16", enabled: bool = True) -> None:
        self.dtype = as_dtype(dtype)
        if self.dtype.itemsize != 2 or not is_floating(self.dtype):
            raise ArgumentError(
                f"[autocast] dtype must be 'bfloat16' or 'float16', got {self.dtype}",
                help="autocast lowers matmul/conv to a 16-bit float; for float32 leave it off",
            )
        self.enabled = enabled
        self._scopes: list = []

    @staticmethod
    def policy() -> PolicyTable:
        """The rule of every op record: ``print(autocast.policy())`` shows the table."""
        return PolicyTable((op.name, op.autocast) for op in all_ops())

    def __enter__(self) -> autocast:
        scope = dispatch.dispatch_mode(self)  # a disabled one too: it hides the ones outside
        scope.__enter__()
        self._scopes.append(scope)
        return self

    def __exit__(self, *exc_info) -> None:
        self._scopes.pop().__exit__(*exc_info)

    def __dispatch__(self, op, inputs: tuple, attrs: dict):
        """Run ``op`` on inputs cast by its rule; None (run it as is) when nothing needs a cast,
        or when an autocast inside this one decides instead."""
        if not self.enabled or active_autocast() is not self:
            return None
        target = _target_dtype(op.autocast, inputs, self.dtype)
        if target is None:
            return None
        cast = []
        for value in inputs:
            if _casts(value, op.autocast, target):
                value = dispatch.apply(CAST, value, dtype=target)
            cast.append(value)
        return dispatch.apply(op, *cast, **attrs)  # the modes below this one run it


def _floating_dtypes(inputs: tuple) -> list:
    return [
        value.array.dtype
        for value in inputs
        if isinstance(value, Tensor) and is_floating(value.array.dtype)
    ]


def _target_dtype(rule: str, inputs: tuple, low: np.dtype):
    """The dtype ``rule`` casts some input to, or None when every input already fits."""
    dtypes = _floating_dtypes(inputs)
    if rule == "low":
        return low if any(d != low and d != _FLOAT64 for d in dtypes) else None
    if rule == "float32":
        return _FLOAT32 if any(d.itemsize == 2 for d in dtypes) else None
    if len(set(dtypes)) < 2:
        return None
    widest = max(dtypes, key=lambda d: d.itemsize)
    if widest.itemsize == 2:  # float16 meets bfloat16
        return _FLOAT32
    return widest


def _casts(value, rule: str, target: np.dtype) -> bool:
    if not isinstance(value, Tensor) or not is_floating(value.array.dtype):
        return False
    dtype = value.array.dtype
    if dtype == target:
        return False
    if rule == "low":
        return dtype != _FLOAT64
    if rule == "float32":
        return dtype.itemsize == 2
    return True
