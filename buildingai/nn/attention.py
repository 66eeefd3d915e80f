"""``MultiheadAttention``: multi-head attention with PyTorch's parameters, names and layouts, so
state dicts move both ways. The math lives in ``nn.functional.multi_head_attention_forward``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import ArgumentError
from . import functional as F
from . import init
from ._utils import empty_parameter
from .linear import Linear
from .module import Module


class MultiheadAttention(Module):
    """Multi-head attention: ``num_heads`` scaled dot-product attentions over projections of
    query, key and value, concatenated and projected back.

    query: (L, N, E), key: (S, N, kdim), value: (S, N, vdim) -> (L, N, E), with ``batch_first``
    (N, L, E)...; unbatched (L, E)... also works. ``forward`` returns ``(output, weights)``.

    Parameters, as in PyTorch:

    - ``in_proj_weight`` (3E, E): the query, key and value projections stacked; or, when
      ``kdim`` or ``vdim`` differ from ``embed_dim``, ``q_proj_weight`` (E, E), ``k_proj_weight``
      (E, kdim), ``v_proj_weight`` (E, vdim) (and ``in_proj_weight`` is None);
    - ``in_proj_bias`` (3E,) (None without ``bias``);
    - ``out_proj``: a Linear(E, E);
    - ``bias_k``, ``bias_v`` (1, 1, E) with ``add_bias_kv``: a learned key/value pair appended to
      every sequence; ``add_zero_attn`` appends an all-zero pair.

    Initialised as PyTorch does: Xavier-uniform projections, zero biases.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ArgumentError(
                f"[MultiheadAttention] embed_dim and num_heads must be positive, got "
                f"embed_dim={embed_dim}, num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise ArgumentError(
                f"[MultiheadAttention] embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})",
                help="each head gets embed_dim // num_heads features; e.g. "
                f"num_heads={_divisor_near(embed_dim, num_heads)} divides {embed_dim}",
            )
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn

        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty_parameter((3 * embed_dim, embed_dim), dtype, device)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = empty_parameter((embed_dim, embed_dim), dtype, device)
            self.k_proj_weight = empty_parameter((embed_dim, self.kdim), dtype, device)
            self.v_proj_weight = empty_parameter((embed_dim, self.vdim), dtype, device)
        if bias:
            self.in_proj_bias = empty_parameter((3 * embed_dim,), dtype, device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, device=device)
        if add_bias_kv:
            self.bias_k = empty_parameter((1, 1, embed_dim), dtype, device)
            self.bias_v = empty_parameter((1, 1, embed_dim), dtype, device)
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    reset_parameters = _reset_parameters

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
        *,
        generator: Generator | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        - ``key_padding_mask`` (N, S): bool True marks padding keys to ignore (float: added).
        - ``attn_mask`` (L, S) or (N * num_heads, L, S): bool True blocks a position (float:
          added to the scores).
        - ``is_causal``: a causal mask; with ``attn_mask`` given, that mask is taken to be it.
        - ``need_weights``: also return the attention weights, (N, L, S) averaged over heads,
          or (N, num_heads, L, S) with ``average_attn_weights=False``.

        Dropout (``self.dropout``) on the attention weights is active in training mode only,
        drawn from ``generator``.
        """
        return F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
            batch_first=self.batch_first,
            generator=generator,
        )

    def extra_repr(self) -> str:
        text = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if not self._qkv_same_embed_dim:
            text += f", kdim={self.kdim}, vdim={self.vdim}"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bias_k is not None:
            text += ", add_bias_kv=True"
        if self.add_zero_attn:
            text += ", add_zero_attn=True"
        if self.batch_first:
            text += ", batch_first=True"
        return text


def _divisor_near(embed_dim: int, num_heads: int) -> int:
    """The divisor of ``embed_dim`` closest to ``num_heads`` (for the error's suggestion)."""
    divisors = [d for d in range(1, embed_dim + 1) if embed_dim % d == 0]
    return min(divisors, key=lambda d: (abs(d - num_heads), d))


__all__ = ["MultiheadAttention"]
