"""``Embedding``: a learned lookup table of vectors, indexed by integer ids."""

from __future__ import annotations

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..functions.creation import as_tensor
from . import init
from ._utils import empty_parameter
from .functional.embedding_bag import embedding_bag
from .functional.embedding_lookup import embedding
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    """A table ``weight`` of ``num_embeddings`` vectors of size ``embedding_dim``:
    indices (any shape, integers) -> indices.shape + (embedding_dim,).

    As in PyTorch: ``weight`` starts N(0, 1); the row at ``padding_idx`` starts at zero and
    receives no gradient; ``max_norm`` rescales, in place, each looked-up row whose
    ``norm_type``-norm exceeds it; ``scale_grad_by_freq`` divides each row's gradient by how
    often its index occurs in the batch.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
        generator: Generator | None = None,
    ) -> None:
        super().__init__()
        if sparse:
            raise ArgumentError(
                "[Embedding] sparse gradients are not supported",
                help="use sparse=False: the gradient is a dense (num_embeddings, dim) tensor "
                "whose work scales with the batch, not the vocabulary",
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError(
                    f"[Embedding] padding_idx {padding_idx} is out of range for "
                    f"{num_embeddings} embeddings",
                    help=f"use an index in [{-num_embeddings}, {num_embeddings - 1}], or None",
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            shape = (num_embeddings, embedding_dim)
            self.weight = empty_parameter(shape, dtype, device, requires_grad=not _freeze)
            self.reset_parameters(generator)
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(
                    f"[Embedding] _weight has shape {tuple(_weight.shape)}, expected "
                    f"({num_embeddings}, {embedding_dim})"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self, generator: Generator | None = None) -> None:
        """Draw the weights from N(0, 1) again and zero the padding row."""
        init.normal_(self.weight, generator=generator)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, indices) -> Tensor:
        return embedding(
            indices,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
        )

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (num_embeddings, dim), shared, not
        copied; frozen (no gradient) unless ``freeze=False``. The padding row is kept as
        given."""
        if not isinstance(embeddings, Tensor):
            embeddings = as_tensor(embeddings)
        if embeddings.ndim != 2:
            raise ShapeError(
                f"[Embedding.from_pretrained] embeddings must be 2-D (num_embeddings, dim), got "
                f"shape {tuple(embeddings.shape)}"
            )
        rows, dim = embeddings.shape
        return cls(
            rows,
            dim,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
            _weight=embeddings,
            _freeze=freeze,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        return text


class EmbeddingBag(Embedding):
    """The sum, mean or maximum (``mode``) of each bag of embeddings: input (B, N), or 1-D with
    ``offsets`` (B,) where each bag starts -> (B, embedding_dim) (see
    ``nn.functional.embedding_bag``). The table is an ``Embedding``'s, N(0, 1) at the start."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
            scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype,
        )  # fmt: skip
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None) -> Tensor:  # noqa: A002
        return embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type,
            self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
            self.include_last_offset, self.padding_idx,
        )  # fmt: skip

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag over ``embeddings`` (num_embeddings, dim), shared, not copied;
        frozen unless ``freeze=False``."""
        if not isinstance(embeddings, Tensor):
            embeddings = as_tensor(embeddings)
        bag = cls(
            *embeddings.shape, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
            embeddings, include_last_offset, padding_idx,
        )  # fmt: skip
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


__all__ = ["Embedding", "EmbeddingBag"]
