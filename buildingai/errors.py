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


def dimensions(count: int) -> str:
    """A count of dimensions as errors say it: "1 dimension", "3 dimensions", and for a 0-d
    tensor "no dimensions (a 0-d tensor)" (never "0 dimensions")."""
    if count == 0:
        return "no dimensions (a 0-d tensor)"
    return "1 dimension" if count == 1 else f"{count} dimensions"


def tensor_with_dimensions(count: int) -> str:
    """How errors name a tensor by its rank: "a 0-d tensor", "a tensor with 1 dimension"..."""
    return "a 0-d tensor" if count == 0 else f"a tensor with {dimensions(count)}"
