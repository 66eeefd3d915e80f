"""``pad`` with PyTorch's signature: ``F.pad(input, pad, mode="constant", value=None)``."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...functions.shape import pad as _pad


def pad(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    pad,
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """Pad ``input`` by the flat ``pad`` tuple ``(left, right, top, bottom, ...)``, starting
    from the last dimension: ``(N, C, 4, 5)`` with ``(1, 1, 2, 0)`` -> ``(N, C, 6, 7)``.

    ``mode`` is ``"constant"`` (fill with ``value``, 0 when None), ``"reflect"``,
    ``"replicate"`` or ``"circular"``. This is ``buildingai.pad``, which also takes NumPy's
    per-axis pairs.
    """
    return _pad(input, pad, mode, 0.0 if value is None else value)


__all__ = ["pad"]
