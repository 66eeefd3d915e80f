"""``GradScaler``: loss scaling for float16 training, step for step as PyTorch's.

float16 gradients underflow to zero below about 6e-8. Multiplying the loss by a large scale
before backward lifts them into range; ``unscale_`` divides the gradients back before they are
clipped or applied, and a step whose gradients hold an inf or NaN (the scale was too large) is
skipped and the scale halved. After ``growth_interval`` good steps in a row the scale doubles.

```python
scaler = GradScaler()
with autocast(dtype="float16"):
    loss = loss_fn(model(x), y)
scaler.scale(loss).backward()
scaler.unscale_(optimizer)            # optional: before clipping
clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)                # skipped when a gradient is inf/NaN
scaler.update()
```

The scale is kept in float32 and updated with PyTorch's arithmetic (``_amp_update_scale_``), so
a run sees the same scales, skips and growth steps as with ``torch.amp.GradScaler``.
"""

from __future__ import annotations

import numpy as np

from ..autograd.mode import no_grad
from ..backend.device import array_namespace
from ..errors import BuildingAIError

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScalerError(BuildingAIError, RuntimeError):
    """A GradScaler call out of order (``step`` twice, ``unscale_`` after ``step``...)."""


class GradScaler:
    """Dynamic loss scaling: ``scale(loss)``, ``unscale_(optimizer)``, ``step(optimizer)``,
    ``update()``. ``enabled=False`` turns every call into a pass-through, so one loop serves
    both precisions. The scale is one scalar: ``scale(loss)`` maps a tensor of any shape
    (usually a scalar loss, ``()``) to the same shape, and ``unscale_`` divides each gradient
    in place, shaped like its parameter."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if growth_factor <= 1.0 or not 0.0 < backoff_factor < 1.0:
            raise BuildingAIError(
                f"[GradScaler] growth_factor must be > 1 and backoff_factor in (0, 1), got "
                f"{growth_factor} and {backoff_factor}",
                help="the defaults are growth_factor=2.0, backoff_factor=0.5",
            )
        self._enabled = enabled
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._scale: np.float32 | None = None  # made on the first scale(), as in PyTorch
        self._growth_tracker = 0
        self._optimizers: dict[int, dict] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs):
        """``outputs`` (a Tensor, or a list/tuple of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(value) for value in outputs)
        return outputs * float(self._scale)

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is
        inf/NaN. Call it before clipping; ``step`` calls it when you did not."""
        if not self._enabled:
            return
        self._require_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise GradScalerError(
                "[GradScaler] unscale_() has already been called on this optimizer since the "
                "last update()",
                help="call unscale_ at most once per optimizer between update() calls",
            )
        if state["stage"] == _STEPPED:
            raise GradScalerError(
                "[GradScaler] unscale_() is being called after step()",
                help="unscale_ (for clipping) goes before scaler.step(optimizer)",
            )
        inverse = np.float32(1.0 / np.float64(self._scale))  # PyTorch: reciprocal in double
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    xp = array_namespace(grad.array)
                    if not bool(xp.isfinite(grad.array).all()):
                        found_inf = True
                    grad.mul_(float(inverse))
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless a gradient is inf/NaN (then the step is skipped and None
        returned); unscales first if ``unscale_`` was not called."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise GradScalerError(
                "[GradScaler] closure use is not supported",
                help="compute the loss, scale it and call backward before scaler.step(optimizer)",
            )
        self._require_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise GradScalerError(
                "[GradScaler] step() has already been called since the last update()",
                help="call scaler.update() once per iteration, after every scaler.step()",
            )
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | None = None) -> None:
        """Back off the scale after a skipped step, grow it after ``growth_interval`` good
        steps (or set ``new_scale``); then get ready for the next iteration."""
        if not self._enabled:
            return
        self._require_scale("update")
        if new_scale is not None:
            self._scale = np.float32(float(new_scale))
        else:
            checked = [state for state in self._optimizers.values() if "found_inf" in state]
            if not checked:
                raise GradScalerError(
                    "[GradScaler] no inf checks were recorded prior to update()",
                    help="call scaler.step(optimizer) (or scaler.unscale_) before update()",
                )
            if any(state["found_inf"] for state in checked):
                self._scale = np.float32(float(self._scale) * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    with np.errstate(over="ignore"):  # an overflow is caught just below
                        grown = np.float32(float(self._scale) * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._optimizers = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict:
        """``{"scale", "growth_factor", "backoff_factor", "growth_interval",
        "_growth_tracker"}`` (PyTorch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            raise GradScalerError(
                "[GradScaler] load_state_dict() should only be called if enabled is True"
            )
        if len(state_dict) == 0:
            raise GradScalerError(
                "[GradScaler] the source state dict is empty, possibly because it was saved "
                "from a disabled GradScaler"
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = np.float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def _state(self, optimizer) -> dict:
        return self._optimizers.setdefault(id(optimizer), {"stage": _READY})

    def _require_scale(self, call: str) -> None:
        if self._scale is None:
            raise GradScalerError(
                f"[GradScaler] {call}() before scale(): there is no scale yet",
                help="scale the loss first: scaler.scale(loss).backward()",
            )
