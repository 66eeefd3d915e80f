"""PyTorch's ``foreach`` and ``fused`` optimizer arguments, accepted and kept in the parameter
groups. They choose how the accelerated step (``buildingai/accel/optimizers.py``) treats a
group; the textbook step updates each parameter on its own whatever they say."""

from __future__ import annotations

from .optimizer import OptimizerError

LOOP_OPTIONS_DOC = """
    ``foreach`` / ``fused`` (PyTorch's): with acceleration on (``buildingai.accel.enable()``),
    None or True updates the small parameters of a group together, in one element-wise pass
    over flat arrays; ``fused=True`` means the same; ``foreach=False`` updates each parameter of
    this optimizer on its own. With acceleration off every parameter is updated on its own.
    The result is the same either way, to rounding."""


def loop_options(optimizer: str, foreach: bool | None, fused: bool | None) -> dict:
    """The parameter-group entries for ``foreach`` and ``fused``, refusing both True (as
    PyTorch does)."""
    if foreach and fused:
        raise OptimizerError(
            f"{optimizer}: foreach=True and fused=True cannot both be set",
            help="pass one of them; both mean the same update here",
        )
    return {"foreach": foreach, "fused": fused}
