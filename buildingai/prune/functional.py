"""The pruning functions users call, in ``torch.nn.utils.prune`` spelling:
``prune.l1_unstructured(module, "weight", amount=0.5)``, ``prune.remove(module, "weight")``."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..autograd.tensor import Tensor
from .methods import (
    BasePruningMethod,
    CustomFromMask,
    Identity,
    L1Unstructured,
    LnStructured,
    PruningContainer,
    PruningError,
    RandomStructured,
    RandomUnstructured,
    _array,
    _hooks_on,
    compute_nparams_toprune,
    slice_norms,
    validate_pruning_amount,
)


def identity(module, name: str):
    """Give ``module.<name>`` the pruned layout (``_orig`` + ``_mask``) with nothing pruned.

    ``<name>_orig`` and ``<name>_mask`` (all ones) have the tensor's shape, whatever it is."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount, generator=None):
    """Prune ``amount`` (count or fraction) of the entries of ``module.<name>`` at random.

    The tensor may have any shape; ``<name>_mask`` (0/1) has the same shape."""
    RandomUnstructured.apply(module, name, amount, generator=generator)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prune the ``amount`` (count or fraction) entries of ``module.<name>`` with the smallest
    absolute value (of ``importance_scores`` when given, same shape as the tensor)."""
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int, generator=None):
    """Prune ``amount`` whole slices of ``module.<name>`` along ``dim``, chosen at random.

    The tensor has any shape with at least ``dim + 1`` dims; ``amount`` counts indices of
    ``dim`` (of ``shape[dim]``), and ``<name>_mask`` has the tensor's shape."""
    RandomStructured.apply(module, name, amount, dim, generator=generator)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prune the ``amount`` slices along ``dim`` of smallest L``n`` norm: ``dim=0`` of a Conv2d
    weight (out, in, kh, kw) removes output channels, of a Linear weight (out, in) output
    features. For whole attention heads see ``attention_heads``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name: str, mask):
    """Prune ``module.<name>`` where ``mask`` (same shape, 0/1) is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(
    parameters: Iterable, pruning_method, importance_scores: dict | None = None, **kwargs
) -> None:
    """Prune across several tensors at once: ``parameters`` is an iterable of ``(module,
    name)``; the entries are ranked together (``amount`` of all of them), so layers lose
    different fractions. ``pruning_method`` is an unstructured method class such as
    ``prune.L1Unstructured``; ``importance_scores`` maps ``(module, name)`` to scores."""
    parameters = list(parameters)
    if not parameters:
        raise PruningError("[global_unstructured] got no (module, name) pairs to prune")
    importance_scores = importance_scores or {}
    scores, masks = [], []
    for module, name in parameters:
        current = _array(importance_scores.get((module, name), getattr(module, name)))
        mask = module._buffers.get(name + "_mask")
        scores.append(current.reshape(-1))
        masks.append(np.ones(current.size) if mask is None else _array(mask).reshape(-1))
    method = pruning_method(**kwargs)
    method._tensor_name = "global"
    if method.PRUNING_TYPE != "unstructured":
        raise PruningError(
            f"[global_unstructured] needs an unstructured method, got {pruning_method.__name__} "
            f"(PRUNING_TYPE={method.PRUNING_TYPE!r})",
            help="use prune.L1Unstructured or prune.RandomUnstructured",
        )
    container = PruningContainer(method)
    flat_mask = container.compute_mask(np.concatenate(scores), np.concatenate(masks))
    start = 0
    for (module, name), score in zip(parameters, scores):
        piece = flat_mask[start : start + score.size]
        start += score.size
        shape = getattr(module, name).shape
        custom_from_mask(module, name, piece.reshape(tuple(shape)))


def attention_heads(attention, amount, n=2):
    """Prune whole heads of a ``MultiheadAttention``: the ``amount`` heads whose query, key and
    value rows and output-projection columns have the smallest joint L``n`` norm lose all of
    them (``in_proj_weight`` (3E, E) rows, ``in_proj_bias`` entries, ``out_proj.weight`` (E, E)
    columns), so they contribute nothing. Returns the indices of the pruned heads."""
    heads, head_dim = attention.num_heads, attention.head_dim
    if getattr(attention, "in_proj_weight", None) is not None:
        projections = [("in_proj_weight", 3)]
    else:
        projections = [("q_proj_weight", 1), ("k_proj_weight", 1), ("v_proj_weight", 1)]
    # rows of head h in a (blocks*E, ...) projection: h*d .. (h+1)*d within each block
    pieces = []
    for name, blocks in projections:
        rows = _array(getattr(attention, name)).reshape(blocks, heads, head_dim, -1)
        pieces.append(np.moveaxis(rows, 1, 0).reshape(heads, -1))
    columns = _array(attention.out_proj.weight).reshape(-1, heads, head_dim)
    pieces.append(np.moveaxis(columns, 1, 0).reshape(heads, -1))
    norms = slice_norms(np.concatenate(pieces, axis=1), n, 0)
    validate_pruning_amount(amount, heads, "attention_heads")
    pruned = np.sort(np.argsort(norms, kind="stable")[: compute_nparams_toprune(amount, heads)])
    keep = np.ones(heads, dtype=np.float64)
    keep[pruned] = 0
    row_keep = np.repeat(keep, head_dim)  # (E,)
    for name, blocks in projections:
        shape = tuple(getattr(attention, name).shape)
        custom_from_mask(attention, name, np.tile(row_keep, blocks)[:, None] * np.ones(shape))
    if getattr(attention, "in_proj_bias", None) is not None:
        custom_from_mask(attention, "in_proj_bias", np.tile(row_keep, 3))
    out_shape = tuple(attention.out_proj.weight.shape)
    custom_from_mask(attention.out_proj, "weight", np.ones(out_shape) * row_keep[None, :])
    return [int(h) for h in pruned]


def remove(module, name: str):
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` is a Parameter again, holding
    the pruned values (``orig * mask``, the original shape); ``<name>_orig``, ``<name>_mask`` and
    the hook are gone."""
    hooks = _hooks_on(module, name)
    if not hooks:
        raise PruningError(
            f"Parameter '{name}' of module {type(module).__name__} has to be pruned before "
            "pruning can be removed",
            help=f"check with prune.is_pruned(module); pruned tensors: {pruned_names(module)}",
        )
    handle_id, method = hooks[0]
    method.remove(module)
    del module._forward_pre_hooks[handle_id]
    return module


def is_pruned(module) -> bool:
    """Whether ``module`` or any sub-module carries a pruning hook."""
    return any(pruned_names(sub) for sub in module.modules())


def pruned_names(module) -> list[str]:
    """The names of ``module``'s own tensors that are pruned (have a pruning hook)."""
    return [
        hook._tensor_name
        for hook, _, _ in module._forward_pre_hooks.values()
        if isinstance(hook, BasePruningMethod)
    ]


def pruned_tensor(module, name: str) -> Tensor:
    """The tensor ``module`` computes with under ``name``: ``orig * mask`` when pruned (fresh,
    even before the next forward), else the parameter; either way the parameter's shape."""
    if name + "_orig" in module._parameters and name + "_mask" in module._buffers:
        return Tensor(
            _array(module._parameters[name + "_orig"]) * _array(module._buffers[name + "_mask"])
        )
    return getattr(module, name)
