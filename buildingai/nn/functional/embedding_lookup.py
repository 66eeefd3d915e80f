"""``F.embedding`` in PyTorch's form: the row lookup (``functions.nn.embedding``) with the
table options ``nn.Embedding`` takes, which the layer passes on to it."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...errors import ArgumentError
from ...functions.creation import as_tensor
from ...functions.nn import embedding as lookup
from .embedding_rows import frequency_scaling, renormalize_rows


def embedding(
    input,  # noqa: A002 - PyTorch's argument name
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) at ``input`` (integer indices, any shape)
    -> input.shape + (dim,).

    As PyTorch's: the row at ``padding_idx`` receives no gradient; with ``max_norm`` each row
    looked up whose ``norm_type``-norm exceeds it is first rescaled to it, in place in
    ``weight``; with ``scale_grad_by_freq`` each row's gradient is divided by how often its
    index occurs in ``input``. Gradients are dense (``sparse=True`` is refused).
    """
    if sparse:
        raise ArgumentError(
            "[embedding] sparse gradients are not supported",
            help="use sparse=False: the gradient is a dense (num_embeddings, dim) tensor "
            "whose work scales with the batch, not the vocabulary",
        )
    indices = input if isinstance(input, Tensor) else as_tensor(input)
    if max_norm is not None:
        renormalize_rows(weight, indices, max_norm, norm_type)
    out = lookup(indices, weight, padding_idx)
    if scale_grad_by_freq and out.requires_grad:
        out.register_hook(frequency_scaling(indices))
    return out


__all__ = ["embedding"]
