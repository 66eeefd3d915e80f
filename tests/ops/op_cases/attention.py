"""Cases of the attention records (``buildingai/ops/attention.py``): the fused attention against
PyTorch's ``scaled_dot_product_attention`` (values, first and second derivatives), its weights
and its fused gradient captured from its backward."""

from __future__ import annotations

import torch

from buildingai.nn import functional as F

from .base import NO_ONNX_MAPPING, TF, Draw, Sample, backward_of, case, tested_through


def _operands(d: Draw, grad: bool = False):
    """q (n, [H,] L, E), k (n, [H,] S, E), v (n, [H,] S, Ev): L and S apart or equal."""
    heads = d.sizes(0, 1, 1, 3)
    length = d.size(1, 5)
    source = d.choice((length, d.size(1, 5)))
    features, values = d.size(1, 4), d.size(1, 4)
    q = d.floats("n", *heads, length, features, grad=grad)
    k = d.floats("n", *heads, source, features, grad=grad)
    v = d.floats("n", *heads, source, values, grad=grad)
    return q, k, v


def _attention(d: Draw) -> Sample:
    q, k, v = _operands(d)
    causal = d.choice((False, True))
    scale = d.choice((None, 0.7))
    return d.capture(
        "attention", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    )


def _torch_attention(q, k, v, *, scale, causal):
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril() if causal else None
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)


case("attention", _attention, torch=_torch_attention, gradgrad=True, rtol=1e-6)


def _captured_from_backward(name: str):
    """Samples of ``name``, an op the backward of ``attention`` runs."""

    def make(d: Draw) -> Sample:
        q, k, v = _operands(d, grad=True)
        causal = d.choice((False, True))
        attend = lambda *t: F.scaled_dot_product_attention(*t, is_causal=causal)  # noqa: E731
        return d.capture(name, lambda: backward_of(attend, q, k, v))

    return make


case(
    "attention_weights",
    _captured_from_backward("attention_weights"),
    no_grad=tested_through("attention"),  # its first input is the forward's values
    onnx=NO_ONNX_MAPPING,
)
case(
    "attention_grad",
    _captured_from_backward("attention_grad"),
    gradcheck=True,
    gradgrad=True,
    onnx=NO_ONNX_MAPPING,
)
