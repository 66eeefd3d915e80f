"""PyTorch's ``foreach`` and ``fused`` optimizer arguments, accepted and kept in the parameter
groups. They choose how the accelerated step (``buildingai/accel/optimizers.py``) treats a
group; the textbook step updates each parameter on its own whatever they say. And its
``capturable`` and ``differentiable``, kept there too (``step_options``)."""

from __future__ import annotations

from .optimizer import OptimizerError

LOOP_OPTIONS_DOC = """
    ``foreach`` / ``fused`` (PyTorch's): with acceleration on (``buildingai.accel.enable()``),
    None or True updates the small parameters of a group together, in one element-wise pass
    over flat arrays; ``fused=True`` means the same; ``foreach=False`` updates each parameter of
    this optimizer on its own. With acceleration off every parameter is updated on its own.
    The result is the same either way, to rounding. ``capturable`` (where PyTorch takes it) is
    kept and changes nothing (there are no CUDA graphs to capture); ``differentiable=True`` is
    refused: the step is never recorded for autograd."""


def loop_options(optimizer: str, foreach: bool | None, fused: bool | None) -> dict:
    """The parameter-group entries for ``foreach`` and ``fused``, refusing both True (as
    PyTorch does)."""
    if foreach and fused:
        raise OptimizerError(
            f"{optimizer}: foreach=True and fused=True cannot both be set",
            help="pass one of them; both mean the same update here",
        )
    return {"foreach": foreach, "fused": fused}


def step_options(optimizer: str, differentiable: bool, capturable: bool | None = None) -> dict:
    """The parameter-group entries for ``differentiable``, refusing ``differentiable=True`` (a
    step here updates the parameters in place outside autograd, so no gradient could flow
    through it, and a silent False would differ from what the code asks), and for
    ``capturable`` where the optimizer takes it (CUDA graphs: there are none to capture, so it
    changes nothing)."""
    if differentiable:
        raise OptimizerError(
            f"{optimizer}: differentiable=True (gradients through the optimizer step) is not "
            "supported",
            help="write the update with tensor operations on copies of the parameters "
            "(buildingai.nn.functional_call) to differentiate through it",
        )
    options = {"differentiable": False}
    if capturable is not None:
        options["capturable"] = bool(capturable)
    return options
