"""``functional_call``: run a module with parameters (and buffers) given by name, as
``torch.func.functional_call`` does: the module's own tensors are swapped out for the call only."""

from __future__ import annotations

from collections.abc import Mapping

from ..autograd.tensor import Tensor
from ..errors import ArgumentError
from .module import Module, replace_tensors, tensor_entries


def functional_call(module: Module, params: Mapping | tuple, *args, strict: bool = False, **kwargs):
    """``module(*args, **kwargs)`` computed with ``params`` in place of its own tensors.

    Args:
        module: the model to run; it is unchanged afterwards, even when the call raises.
        params: a dict ``{'fc1.weight': tensor, ...}`` (names as ``named_parameters()`` and
            ``named_buffers()`` give them), or a tuple of such dicts. A name left out keeps the
            module's own tensor, unless ``strict=True``.
        args: the inputs. As in PyTorch, a single tuple is taken as the tuple of inputs:
            ``functional_call(model, params, (x,))`` is ``functional_call(model, params, x)``.

    The swap is visible to every thread that uses ``module`` during the call; give each thread
    its own module (``clone()``) to run them at once.
    """
    given = _merged(params)
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    entries = tensor_entries(module)
    unknown = [name for name in given if name not in entries]
    if unknown:
        raise ArgumentError(
            f"[functional_call] {type(module).__name__} has no parameter or buffer named "
            + ", ".join(repr(name) for name in unknown),
            help="use the names of named_parameters() / named_buffers(), e.g. "
            + ", ".join(repr(name) for name in list(entries)[:3]),
        )
    if strict:
        missing = [name for name in entries if name not in given]
        if missing:
            raise ArgumentError(
                "[functional_call] strict=True but no value was given for "
                + ", ".join(repr(name) for name in missing),
                help="pass every parameter and buffer, or strict=False to keep the module's own",
            )
    for name, value in given.items():
        if value is not None and not isinstance(value, Tensor):
            raise ArgumentError(
                f"[functional_call] the value for '{name}' is a {type(value).__name__}, "
                "not a Tensor",
                help="wrap it with buildingai.tensor(...)",
            )
    own = replace_tensors(entries, given)
    try:
        return module(*args, **kwargs)
    finally:
        replace_tensors(entries, own)


def _merged(params) -> dict:
    """``params`` (a mapping, or a tuple of mappings with distinct names) as one dict."""
    groups = params if isinstance(params, (tuple, list)) else (params,)
    merged: dict = {}
    for group in groups:
        if not isinstance(group, Mapping):
            raise ArgumentError(
                f"[functional_call] params must be a dict of name -> Tensor, got "
                f"{type(group).__name__}",
                help="pass dict(model.named_parameters()) with the values you want",
            )
        for name, value in group.items():
            if name in merged:
                raise ArgumentError(f"[functional_call] '{name}' is given twice")
            merged[name] = value
    return merged
