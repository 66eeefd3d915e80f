"""PyTorch's memory formats, accepted by ``clone`` and ``contiguous``.

BuildingAI keeps every tensor's memory in the row-major order of its shape (NumPy's C order):
``(N, C, H, W)`` is stored as N, then C, then H, then W, and convolutions pick their own working
layout inside the op. So ``channels_last`` (PyTorch's NHWC storage of an NCHW tensor) changes
nothing here: the result is an ordinary row-major copy with the same values and shape.
"""

from __future__ import annotations

from ..errors import ShapeError


class MemoryFormat:
    """One of PyTorch's memory format names (``torch.channels_last``...); see the module."""

    def __init__(self, name: str, rank: int | None = None) -> None:
        self.name, self.rank = name, rank

    def __repr__(self) -> str:
        return f"buildingai.{self.name}"


contiguous_format = MemoryFormat("contiguous_format")
preserve_format = MemoryFormat("preserve_format")
channels_last = MemoryFormat("channels_last", rank=4)
channels_last_3d = MemoryFormat("channels_last_3d", rank=5)


def check_memory_format(op: str, memory_format, ndim: int, allow_preserve: bool) -> None:
    """Refuse what PyTorch refuses: an unknown value, ``preserve_format`` where it has no
    meaning, ``channels_last`` on a tensor that is not 4-D (``channels_last_3d``: 5-D)."""
    if not isinstance(memory_format, MemoryFormat):
        raise TypeError(
            f"[{op}] memory_format must be one of buildingai.contiguous_format, "
            f"preserve_format, channels_last, channels_last_3d; got {memory_format!r}"
        )
    if memory_format is preserve_format and not allow_preserve:
        raise ShapeError(
            f"[{op}] preserve_format is not a layout to make a tensor contiguous in",
            help="pass memory_format=buildingai.contiguous_format (the default)",
        )
    if memory_format.rank is not None and ndim != memory_format.rank:
        raise ShapeError(
            f"[{op}] {memory_format.name} applies to {memory_format.rank}-D tensors, got a "
            f"{ndim}-D tensor",
            help="use it on (N, C, H, W) tensors (channels_last_3d: (N, C, D, H, W)); "
            "either way BuildingAI stores tensors row-major, so the values are unchanged",
        )


__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "preserve_format"]
