"""Positional encodings added to token embeddings so attention can tell positions apart:
the fixed sinusoidal encoding and a learned table of position embeddings."""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import as_dtype, default_float_dtype
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..functions.nn import dropout as _dropout
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _positions_for(module: Module, x: Tensor, offset: int, table_length: int) -> slice:
    """The rows of the position table that ``x`` needs, with a clear error when they run out.

    x: (L, N, E) or (N, L, E) with ``batch_first``, or (L, E) unbatched.
    """
    name = type(module).__name__
    if x.ndim not in (2, 3) or x.shape[-1] != module.embedding_dim:
        raise ShapeError(
            f"[{name}] expects input (L, N, {module.embedding_dim}) ((N, L, "
            f"{module.embedding_dim}) with batch_first=True) or (L, {module.embedding_dim}), got "
            f"{tuple(x.shape)}"
        )
    length = x.shape[1] if x.ndim == 3 and module.batch_first else x.shape[0]
    if offset < 0 or offset + length > table_length:
        raise ShapeError(
            f"[{name}] positions {offset}..{offset + length - 1} (offset {offset}, sequence "
            f"length {length} of input {tuple(x.shape)}) exceed the table of {table_length} "
            "positions",
            help=f"build the module with max_len >= {offset + length}",
        )
    return slice(offset, offset + length)


def _add_positions(module: Module, x: Tensor, rows: Tensor) -> Tensor:
    """x + rows, with rows (L, E) laid along x's sequence dimension."""
    if x.ndim == 3 and not module.batch_first:
        rows = rows.reshape(rows.shape[0], 1, rows.shape[1])  # (L, 1, E) over (L, N, E)
    return x + rows


class SinusoidalPositionalEncoding(Module):
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
        super().__init__()
        if not 0.0 <= dropout <= 1.0:
            raise ArgumentError(
                f"[SinusoidalPositionalEncoding] dropout must be in [0, 1], got {dropout}"
            )
        self.embedding_dim = d_model
        self.max_len = max_len
        self.dropout = dropout
        self.batch_first = batch_first
        self.base = base
        self.generator = generator
        table = F.sinusoidal_positional_encoding(
            max_len, d_model, base=base, dtype=dtype, device=device
        )
        self.register_buffer("pe", table, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the encodings of positions ``offset .. offset + L - 1`` (``offset`` > 0 when
        decoding one step at a time)."""
        rows = self.pe.getitem(_positions_for(self, x, offset, self.pe.shape[0]))
        if rows.dtype != x.dtype:
            rows = rows.astype(x.dtype)
        out = _add_positions(self, x, rows)
        return _dropout(out, self.dropout, self.training, self.generator)

    def extra_repr(self) -> str:
        text = f"d_model={self.embedding_dim}, max_len={self.max_len}"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.batch_first:
            text += ", batch_first=True"
        return text


class LearnedPositionalEmbedding(Module):
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
        super().__init__()
        if not 0.0 <= dropout <= 1.0:
            raise ArgumentError(
                f"[LearnedPositionalEmbedding] dropout must be in [0, 1], got {dropout}"
            )
        self.max_len = max_len
        self.embedding_dim = d_model
        self.dropout = dropout
        self.batch_first = batch_first
        self.init_std = init_std
        self.generator = generator
        array = np.zeros(
            (max_len, d_model), default_float_dtype if dtype is None else as_dtype(dtype)
        )
        if device is not None:
            array = _device.to_device(array, _device.Device(device))
        self.weight = Parameter(array)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the position embeddings again (from the default generator)."""
        init.normal_(self.weight, 0.0, self.init_std)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the embeddings of positions ``offset .. offset + L - 1``."""
        rows = self.weight.getitem(_positions_for(self, x, offset, self.max_len))
        out = _add_positions(self, x, rows)
        return _dropout(out, self.dropout, self.training, self.generator)

    def extra_repr(self) -> str:
        text = f"max_len={self.max_len}, d_model={self.embedding_dim}"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.batch_first:
            text += ", batch_first=True"
        return text


__all__ = ["SinusoidalPositionalEncoding", "LearnedPositionalEmbedding"]
