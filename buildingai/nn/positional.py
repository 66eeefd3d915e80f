"""Positional encodings added to token embeddings so attention can tell positions apart:
the fixed sinusoidal encoding and a learned table of position embeddings."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..functions.nn import dropout as _dropout
from . import functional as F
from . import init
from ._utils import empty_parameter
from .module import Module


class _PositionalLayer(Module):
    """What both layers share: their settings, the rows of the position table that ``x``
    needs, and adding those rows along x's sequence dimension followed by dropout.

    x: (L, N, E) or (N, L, E) with ``batch_first``, or (L, E) unbatched.
    """

    def __init__(
        self, max_len: int, d_model: int, dropout: float, batch_first: bool, generator
    ) -> None:
        super().__init__()
        if not 0.0 <= dropout <= 1.0:
            raise ArgumentError(f"[{type(self).__name__}] dropout must be in [0, 1], got {dropout}")
        self.max_len = max_len
        self.embedding_dim = d_model
        self.dropout = dropout
        self.batch_first = batch_first
        self.generator = generator

    def _positions(self, x: Tensor, offset: int, table_length: int) -> slice:
        """The rows of the position table that ``x`` needs, with a clear error when they run
        out."""
        name = type(self).__name__
        if x.ndim not in (2, 3) or x.shape[-1] != self.embedding_dim:
            raise ShapeError(
                f"[{name}] expects input (L, N, {self.embedding_dim}) ((N, L, "
                f"{self.embedding_dim}) with batch_first=True) or (L, {self.embedding_dim}), got "
                f"{tuple(x.shape)}"
            )
        length = x.shape[1] if x.ndim == 3 and self.batch_first else x.shape[0]
        if offset < 0 or offset + length > table_length:
            raise ShapeError(
                f"[{name}] positions {offset}..{offset + length - 1} (offset {offset}, sequence "
                f"length {length} of input {tuple(x.shape)}) exceed the table of {table_length} "
                "positions",
                help=f"build the module with max_len >= {offset + length}",
            )
        return slice(offset, offset + length)

    def _add_positions(self, x: Tensor, rows: Tensor) -> Tensor:
        """dropout(x + rows), with rows (L, E) laid along x's sequence dimension."""
        if x.ndim == 3 and not self.batch_first:
            rows = rows.reshape(rows.shape[0], 1, rows.shape[1])  # (L, 1, E) over (L, N, E)
        return _dropout(x + rows, self.dropout, self.training, generator=self.generator)

    def _options_repr(self) -> str:
        """The ``extra_repr`` tail: the settings that differ from their defaults."""
        text = ""
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.batch_first:
            text += ", batch_first=True"
        return text


class SinusoidalPositionalEncoding(_PositionalLayer):
    """Add the fixed sinusoidal encoding of "Attention Is All You Need" (see
    ``nn.functional.sinusoidal_positional_encoding``), then dropout.

    x: (L, N, E) ((N, L, E) with ``batch_first``; (L, E) unbatched) -> same shape. The table
    of ``max_len`` positions is a non-persistent buffer ``pe`` (L, E): it moves with ``to()``
    but is not saved in state dicts, as it is recomputed at construction.
    """

    def __init__(
        self,
        d_model: int,
        max_len: int = 5000,
        dropout: float = 0.0,
        batch_first: bool = False,
        base: float = 10000.0,
        device=None,
        dtype=None,
        generator: Generator | None = None,
    ) -> None:
        super().__init__(max_len, d_model, dropout, batch_first, generator)
        self.base = base
        table = F.sinusoidal_positional_encoding(
            max_len, d_model, base=base, dtype=dtype, device=device
        )
        self.register_buffer("pe", table, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the encodings of positions ``offset .. offset + L - 1`` (``offset`` > 0 when
        decoding one step at a time)."""
        rows = self.pe.getitem(self._positions(x, offset, self.pe.shape[0]))
        if rows.dtype != x.dtype:
            rows = rows.astype(x.dtype)
        return self._add_positions(x, rows)

    def extra_repr(self) -> str:
        return f"d_model={self.embedding_dim}, max_len={self.max_len}" + self._options_repr()


class LearnedPositionalEmbedding(_PositionalLayer):
    """Add a learned embedding per position (as in BERT and GPT-2), then dropout.

    x: (L, N, E) ((N, L, E) with ``batch_first``; (L, E) unbatched) -> same shape. ``weight``
    is (max_len, E), laid out like ``nn.Embedding(max_len, E).weight``, drawn from
    N(0, ``init_std``^2) (0.02, as GPT-2 and BERT).
    """

    def __init__(
        self,
        max_len: int,
        d_model: int,
        dropout: float = 0.0,
        batch_first: bool = False,
        init_std: float = 0.02,
        device=None,
        dtype=None,
        generator: Generator | None = None,
    ) -> None:
        super().__init__(max_len, d_model, dropout, batch_first, generator)
        self.init_std = init_std
        self.weight = empty_parameter((max_len, d_model), dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the position embeddings again (from the default generator)."""
        init.normal_(self.weight, 0.0, self.init_std)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the embeddings of positions ``offset .. offset + L - 1``."""
        rows = self.weight.getitem(self._positions(x, offset, self.max_len))
        return self._add_positions(x, rows)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.embedding_dim}" + self._options_repr()


__all__ = ["SinusoidalPositionalEncoding", "LearnedPositionalEmbedding"]
