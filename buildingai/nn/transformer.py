"""Transformer layers with PyTorch's structure: TransformerEncoderLayer / TransformerEncoder,
TransformerDecoderLayer / TransformerDecoder, and the full encoder-decoder Transformer.

Sub-module names (``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1``..
``norm3``, ``dropout``, ``dropout1``.. ``dropout3``, ``layers.0``...) and parameter layouts are
PyTorch's, so state dicts move both ways. ``norm_first=False`` is the original post-norm layer
(``x = norm(x + sublayer(x))``); ``norm_first=True`` the pre-norm one (``x = x +
sublayer(norm(x))``), which trains more stably in deep stacks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from .. import functions
from ..autograd.tensor import Tensor
from ..backend.dtypes import as_dtype, get_default_dtype
from ..errors import ArgumentError, ShapeError
from . import init
from .attention import MultiheadAttention
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm

_ACTIVATIONS = {"relu": functions.relu, "gelu": functions.gelu}


def _activation(activation: str | Callable) -> Callable:
    if isinstance(activation, str):
        function = _ACTIVATIONS.get(activation)
        if function is None:
            raise ArgumentError(
                f"activation should be 'relu' or 'gelu', not {activation!r}",
                help="or pass any callable (a function or a Module) mapping a tensor to a tensor",
            )
        return function
    if not callable(activation):
        raise ArgumentError(f"activation must be a string or a callable, got {activation!r}")
    return activation


class _TransformerLayer(Module):
    """The sublayers the encoder and decoder layers share, on their PyTorch-named parts
    (``self_attn``, ``dropout1``, ``linear1``, ``dropout``, ``linear2``, ``activation``)."""

    def _self_attention(self, x, attn_mask, key_padding_mask, is_causal) -> Tensor:
        """Self-attention over x (L, N, E) (or as laid out for ``self_attn``), then
        ``dropout1``."""
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _feed_forward(self, x: Tensor) -> Tensor:
        """The position-wise network ``linear2(dropout(activation(linear1(x))))``: (*, E) ->
        (*, E); the caller adds its own residual dropout (``dropout2`` in the encoder layer,
        ``dropout3`` in the decoder layer)."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a position-wise feed-forward network, each with a residual
    connection, dropout and layer normalisation.

    src: (S, N, E) ((N, S, E) with ``batch_first``; (S, E) unbatched) -> same shape.
    The feed-forward network is ``linear2(dropout(activation(linear1(x))))`` with hidden size
    ``dim_feedforward``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        options = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **options
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **options)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **options)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """``src_mask`` (S, S) or (N * nhead, S, S) and ``src_key_padding_mask`` (N, S) follow
        ``MultiheadAttention`` (bool True = blocked; float = added); ``is_causal=True`` without
        ``src_mask`` applies a causal mask."""
        x = src
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self.dropout2(self._feed_forward(self.norm2(x)))
        else:
            x = self.norm1(x + self._self_attention(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self.dropout2(self._feed_forward(x)))
        return x


class TransformerDecoderLayer(_TransformerLayer):
    """Masked self-attention over the target, attention to the encoder output (``memory``),
    then a feed-forward network; each with a residual connection, dropout and layer norm.

    tgt: (T, N, E), memory: (S, N, E) ((N, T, E), (N, S, E) with ``batch_first``; unbatched
    (T, E), (S, E)) -> tgt's shape.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        options = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **options
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **options
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **options)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **options)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Masks follow ``MultiheadAttention``: ``tgt_mask`` (T, T), ``memory_mask`` (T, S),
        ``*_key_padding_mask`` (N, T) / (N, S); ``tgt_is_causal=True`` without ``tgt_mask``
        makes the self-attention causal (each position sees itself and earlier ones)."""
        x = tgt
        if self.norm_first:
            x = x + self._self_attention(
                self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal
            )
            x = x + self._cross_attention(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self.dropout3(self._feed_forward(self.norm3(x)))
        else:
            x = self.norm1(
                x + self._self_attention(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            )
            x = self.norm2(
                x
                + self._cross_attention(
                    x, memory, memory_mask, memory_key_padding_mask, memory_is_causal
                )
            )
            x = self.norm3(x + self.dropout3(self._feed_forward(x)))
        return x

    def _cross_attention(self, x, memory, attn_mask, key_padding_mask, is_causal) -> Tensor:
        x = self.multihead_attn(
            x,
            memory,
            memory,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout2(x)


def _clones(layer: Module, count: int) -> ModuleList:
    """``count`` independent deep copies of ``layer`` (each starts with the same weights)."""
    if count < 1:
        raise ArgumentError(f"num_layers must be at least 1, got {count}")
    return ModuleList([copy.deepcopy(layer) for _ in range(count)])


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer``, then ``norm`` (if given; the usual
    final LayerNorm of a pre-norm stack). src -> same shape, as for the layer.

    ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch compatibility; they
    only select PyTorch's inference fast paths and change no result.
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """``mask`` (S, S) and ``src_key_padding_mask`` (N, S) reach every layer;
        ``is_causal=True`` without ``mask`` makes every layer causal."""
        x = src
        for layer in self.layers:
            x = layer(
                x,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` all reading the same ``memory``,
    then ``norm`` (if given). tgt, memory -> tgt's shape."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """The masks reach every layer (see ``TransformerDecoderLayer.forward``)."""
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need", as ``torch.nn.Transformer``:
    an ``encoder`` (TransformerEncoder with a final LayerNorm) and a ``decoder``
    (TransformerDecoder with a final LayerNorm), or ``custom_encoder`` / ``custom_decoder``.

    src: (S, N, E), tgt: (T, N, E) ((N, S, E), (N, T, E) with ``batch_first``) -> (T, N, E).
    Weight matrices start Xavier-uniform, as in PyTorch.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        options = {"device": device, "dtype": dtype}
        layer_options = dict(
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
            **options,
        )
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **layer_options)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **layer_options)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` into memory, then decode ``tgt`` against it (masks as in the layers;
        ``tgt_is_causal=True`` without ``tgt_mask`` is the usual autoregressive decoder)."""
        batched = src.ndim == 3
        batch_axis = 0 if self.batch_first else 1
        if batched and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise ShapeError(
                f"[Transformer] src {tuple(src.shape)} and tgt {tuple(tgt.shape)} must have the "
                f"same batch size (dimension {batch_axis})",
                help="batch_first=True expects (N, S, E); batch_first=False (S, N, E)",
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(
                f"[Transformer] the last dimension of src {tuple(src.shape)} and tgt "
                f"{tuple(tgt.shape)} must be d_model = {self.d_model}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(size: int, device=None, dtype=None) -> Tensor:
        """The float causal mask (size, size): 0 on and below the diagonal, -inf above it."""
        dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
        array = np.triu(np.full((size, size), -np.inf, dtype=dtype), k=1)
        mask = Tensor(array)
        return mask if device is None else mask.to(device)


__all__ = [
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]
