"""The error hierarchy. Every error a user can cause says what went wrong, with the values
involved, and how to fix it (a ``help:`` line where a fix exists)."""

from __future__ import annotations


class BuildingAIError(Exception):
    """Base class of every error BuildingAI raises on purpose."""

    def __init__(self, message: str, *, help: str | None = None) -> None:
        self.message = message
        self.help = help
        self.where: str | None = None  # the module path, filled in by dispatch when known
        super().__init__(message)

    def __str__(self) -> str:
        text = self.message
        if self.where:
            text += f" (in {self.where})"
        if self.help:
            text += f"\n  help: {self.help}"
        return text


class ShapeError(BuildingAIError, ValueError):
    """Shapes that do not fit together: broadcasting, matmul, reshape, contracts."""


class IndexingError(BuildingAIError, IndexError):
    """An index that does not fit the tensor: out of range, mismatched mask, too many indices."""


class ArgumentError(BuildingAIError, ValueError):
    """An argument outside its allowed range (a probability above 1, a negative size...)."""


class DTypeError(BuildingAIError, TypeError):
    """An unsupported or mismatched dtype."""


class DeviceError(BuildingAIError, RuntimeError):
    """A missing device, or tensors on different devices used together."""


class AutogradError(BuildingAIError, RuntimeError):
    """Misuse of the gradient machinery: freed graphs, in-place changes to saved tensors."""


class CheckpointError(BuildingAIError, RuntimeError):
    """A checkpoint that cannot be written or read."""


class GradcheckError(BuildingAIError, AssertionError):
    """Analytic and numerical gradients disagree."""


class SignatureError(ShapeError, DTypeError):
    """An input that breaks a frozen graph's signature (here: its dtype). It is both a ShapeError,
    like the rank and dimension checks of the same signature, and a DTypeError."""
