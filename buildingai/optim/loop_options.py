"""PyTorch's ``foreach`` and ``fused`` optimizer arguments, mapped to the packed update
(``packing.py``): BuildingAI's one way of updating many parameters in one pass."""

from __future__ import annotations

from .optimizer import OptimizerError

LOOP_OPTIONS_DOC = """
    ``foreach`` / ``fused`` (PyTorch's): None or True updates the small parameters of a group
    together, in one element-wise pass over flat arrays (``buildingai.optim.packing``, on unless
    switched off process-wide); ``fused=True`` means the same packed update, as there is no
    separate fused kernel; ``foreach=False`` updates each parameter of this optimizer on its own.
    The result is the same either way, to rounding."""


def loop_options(optimizer: str, foreach: bool | None, fused: bool | None) -> dict:
    """The parameter-group entries for ``foreach`` and ``fused``, refusing both True (as
    PyTorch does)."""
    if foreach and fused:
        raise OptimizerError(
            f"{optimizer}: foreach=True and fused=True cannot both be set",
            help="pass one of them; both mean the packed update here",
        )
    return {"foreach": foreach, "fused": fused}
