"""The embedding table's row helpers that ``Embedding``, ``EmbeddingBag`` and
``embedding_bag`` share: ``max_norm``'s in-place renormalisation and ``scale_grad_by_freq``'s
gradient hook."""

from __future__ import annotations

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...backend.device import array_namespace


def renormalize_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Shrink, in place, each row of ``weight`` that ``indices`` look up whose norm exceeds
    ``max_norm`` to that norm (PyTorch's embedding_renorm_: scale by max_norm / (norm +
    1e-7))."""
    xp = array_namespace(weight.array)
    rows = xp.unique(indices.array.reshape(-1))
    if rows.size == 0:
        return
    if rows.min() < 0 or rows.max() >= weight.shape[0]:
        return  # the lookup itself reports the bad index
    selected = weight.array[rows]
    norms = xp.linalg.norm(selected, ord=norm_type, axis=1, keepdims=True)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    with no_grad():
        weight[rows] = (selected * scale).astype(selected.dtype, copy=False)


def frequency_scaling(indices: Tensor):
    """A gradient hook dividing each looked-up row's gradient by its index's batch count."""
    xp = array_namespace(indices.array)
    flat = indices.array.reshape(-1)
    _, inverse, counts = xp.unique(flat, return_inverse=True, return_counts=True)

    def scale(grad: Tensor) -> Tensor:
        per_lookup = (1.0 / counts[inverse.reshape(-1)]).astype(grad.dtype)
        return grad * Tensor(per_lookup.reshape(tuple(indices.shape) + (1,)))

    return scale
