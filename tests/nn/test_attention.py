"""Scaled dot-product attention and MultiheadAttention against PyTorch in float64: values, input
gradients, parameter gradients (weights copied both ways through state dicts) and second
derivatives; every error path."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.nn.attention import MultiheadAttention
from tests.helpers import Arg, check_op, constant

torch = pytest.importorskip("torch")
TF = torch.nn.functional


# ----- module comparison harness ---------------------------------------------------------------------
def _ours(value):
    return bai.Tensor(value) if isinstance(value, np.ndarray) else value


def _theirs(value):
    return torch.tensor(value) if isinstance(value, np.ndarray) else value


def _as_list(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def compare_modules(
    ours,
    theirs,
    inputs: list[np.ndarray],
    kwargs: dict | None = None,
    *,
    weights_from: str = "torch",
    train: bool = False,
    seed: int = 0,
) -> None:
    """Copy weights between ``ours`` and ``theirs`` (``weights_from``: "torch" or "ours"), run
    both on the same inputs (numpy arrays; masks in ``kwargs`` too), and compare outputs,
    input gradients and parameter gradients in float64."""
    kwargs = kwargs or {}
    ours.to(bai.float64)
    theirs.double()
    if weights_from == "torch":
        result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    else:
        result = theirs.load_state_dict(
            {k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()}
        )
    assert not result.missing_keys and not result.unexpected_keys
    ours.train(train)
    theirs.train(train)

    ours_in = [bai.Tensor(x.copy(), requires_grad=True) for x in inputs]
    theirs_in = [torch.tensor(x.copy(), requires_grad=True) for x in inputs]
    ours_out = _as_list(ours(*ours_in, **{k: _ours(v) for k, v in kwargs.items()}))
    theirs_out = _as_list(theirs(*theirs_in, **{k: _theirs(v) for k, v in kwargs.items()}))
    assert len(ours_out) == len(theirs_out)
    rng = np.random.default_rng(seed)
    ours_loss, theirs_loss = 0.0, 0.0
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        if t is None:
            assert o is None, f"output {k}: torch returns None"
            continue
        np.testing.assert_allclose(
            o.numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=f"output {k}"
        )
        upstream = rng.standard_normal(tuple(o.shape))
        ours_loss = ours_loss + (o * bai.Tensor(upstream)).sum()
        theirs_loss = theirs_loss + (t * torch.tensor(upstream)).sum()
    ours_loss.backward()
    theirs_loss.backward()
    for i, (o, t) in enumerate(zip(ours_in, theirs_in)):
        np.testing.assert_allclose(
            o.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"input {i} grad"
        )
    theirs_params = dict(theirs.named_parameters())
    ours_params = dict(ours.named_parameters())
    assert set(ours_params) == set(theirs_params)
    for name, param in ours_params.items():
        np.testing.assert_allclose(
            param.grad.numpy(),
            theirs_params[name].grad.numpy(),
            rtol=1e-9,
            atol=1e-12,
            err_msg=f"gradient of {name}",
        )


# ----- scaled_dot_product_attention ----------------------------------------------------------------
def _sdpa(**options):
    def ours(q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)

    def theirs(q, k, v, mask=None):
        return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)

    return ours, theirs


SDPA_SHAPES = [
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)),  # (N, H, L, E) with Ev != E, S != L
    ((4, 5), (6, 5), (6, 3)),  # no batch dimensions
    ((2, 1, 4, 5), (3, 6, 5), (1, 6, 5)),  # batch dimensions broadcast
    ((1, 1, 5), (1, 1, 5), (1, 1, 2)),  # L = S = 1
    ((0, 4, 5), (0, 6, 5), (0, 6, 5)),  # zero-size batch
]


@pytest.mark.parametrize("shapes", SDPA_SHAPES, ids=str)
def test_sdpa_matches_pytorch(shapes):
    ours, theirs = _sdpa()
    check_op(ours, *shapes, torch_fn=theirs)


def test_sdpa_second_derivatives():
    ours, theirs = _sdpa()
    check_op(ours, (2, 3, 2), (2, 4, 2), (2, 4, 3), torch_fn=theirs, gradgrad=True)


def test_sdpa_scale_and_causal_second_derivatives():
    ours, theirs = _sdpa(is_causal=True, scale=0.3)
    check_op(ours, (1, 3, 2), (1, 3, 2), (1, 3, 2), torch_fn=theirs, gradgrad=True)


@pytest.mark.parametrize("length,source", [(4, 4), (3, 5), (5, 3)])
def test_sdpa_causal(length, source):
    """Top-left aligned causal mask, for square and rectangular score matrices."""
    ours, theirs = _sdpa(is_causal=True)
    check_op(ours, (2, length, 4), (2, source, 4), (2, source, 3), torch_fn=theirs)


def test_sdpa_scale():
    ours, theirs = _sdpa(scale=0.7)
    check_op(ours, (2, 3, 4), (2, 5, 4), (2, 5, 4), torch_fn=theirs)


def _bool_mask(shape, seed=1):
    mask = np.random.default_rng(seed).random(shape) < 0.6
    mask[..., 0] = True  # every query keeps a key (fully blocked rows are tested apart)
    return mask


@pytest.mark.parametrize("mask_shape", [(4, 6), (2, 1, 4, 6), (1, 6), (3, 4, 1)], ids=str)
def test_sdpa_bool_mask(mask_shape):
    ours, theirs = _sdpa()
    mask = constant(_bool_mask(mask_shape))
    check_op(ours, (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), mask, torch_fn=theirs)


def test_sdpa_float_mask_with_gradient_and_second_derivatives():
    """A float mask is added to the scores, so it can be a learned bias with a gradient."""
    ours, theirs = _sdpa()
    check_op(ours, (2, 3, 2), (2, 4, 2), (2, 4, 2), (3, 4), torch_fn=theirs, gradgrad=True)


def test_sdpa_float_mask_with_minus_inf():
    additive = np.where(_bool_mask((2, 1, 4, 6)), 0.0, -np.inf)
    ours, theirs = _sdpa()
    check_op(ours, (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), constant(additive), torch_fn=theirs)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_rows_give_zeros_not_nan(kind):
    mask = _bool_mask((4, 6))
    mask[1] = False  # query 1 may attend to nothing
    value = mask if kind == "bool" else np.where(mask, 0.0, -np.inf)
    ours, theirs = _sdpa()
    check_op(ours, (2, 4, 3), (2, 6, 3), (2, 6, 3), constant(value), torch_fn=theirs)
    q, k, v = (bai.randn(2, n, 3, dtype=bai.float64) for n in (4, 6, 6))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bai.Tensor(value))
    assert np.all(out.numpy()[:, 1] == 0)


def test_sdpa_float32_mask_on_float64_inputs_keeps_the_input_dtype():
    q = bai.randn(2, 3, 4, dtype=bai.float64)
    mask = bai.zeros(3, 3, dtype=bai.float32)
    assert F.scaled_dot_product_attention(q, q, q, attn_mask=mask).dtype == bai.float64


def test_sdpa_float32_stays_float32_and_is_stable_for_large_logits():
    q = bai.Tensor(np.full((1, 2, 4), 1e4, dtype=np.float32))
    k = bai.Tensor(np.random.default_rng(0).standard_normal((1, 3, 4)).astype(np.float32) * 1e3)
    v = bai.randn(1, 3, 2)
    out = F.scaled_dot_product_attention(q, k, v)
    assert out.dtype == bai.float32
    assert np.all(np.isfinite(out.numpy()))


def test_sdpa_grouped_query_attention():
    def ours(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    def theirs(q, k, v):
        # the math kernel: PyTorch's fused CPU kernel has no second derivative
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            return TF.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    check_op(ours, (2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 3), torch_fn=theirs)
    check_op(ours, (1, 2, 2, 2), (1, 1, 3, 2), (1, 1, 3, 2), torch_fn=theirs, gradgrad=True)


def test_sdpa_dropout_is_reproducible_and_scales_survivors():
    q, k, v = (bai.randn(2, 5, 4, dtype=bai.float64) for _ in range(3))
    first = F.attention(q, k, v, dropout_p=0.5, generator=bai.Generator(3))
    second = F.attention(q, k, v, dropout_p=0.5, generator=bai.Generator(3))
    np.testing.assert_array_equal(first[0].numpy(), second[0].numpy())
    clean = F.attention(q, k, v)[1].numpy()
    dropped = first[1].numpy()
    kept = dropped != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(dropped[kept], 2 * clean[kept], rtol=1e-12)
    np.testing.assert_allclose(first[0].numpy(), dropped @ v.numpy(), rtol=1e-12)
    all_dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(all_dropped.numpy() == 0)


def test_sdpa_with_dropout_zero_in_train_style_call_matches():
    ours, theirs = _sdpa(dropout_p=0.0)
    check_op(ours, (2, 3, 4), (2, 5, 4), (2, 5, 4), torch_fn=theirs)


def test_attention_returns_the_weights():
    q, k, v = bai.randn(2, 3, 4), bai.randn(2, 5, 4), bai.randn(2, 5, 6)
    out, weights = F.attention(q, k, v, is_causal=True)
    assert weights.shape == (2, 3, 5)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-6)
    assert np.all(np.triu(weights.numpy()[0], k=1) == 0)
    np.testing.assert_allclose(out.numpy(), weights.numpy() @ v.numpy(), rtol=1e-5)


# ----- errors --------------------------------------------------------------------------------
def test_sdpa_errors_name_the_shapes():
    q, k, v = bai.zeros(2, 3, 4), bai.zeros(2, 5, 4), bai.zeros(2, 5, 6)
    with pytest.raises(
        bai.ShapeError,
        match=r"attn_mask of shape \(4, 5\) does not broadcast to "
        r"the attention scores of shape \(2, 3, 5\)",
    ):
        F.scaled_dot_product_attention(q, k, v, attn_mask=bai.ones(4, 5, dtype=bai.bool_))
    with pytest.raises(
        bai.ShapeError,
        match=r"share the embedding size E .* query \(2, 3, 4\), "
        r"key \(2, 5, 3\)",
    ):
        F.scaled_dot_product_attention(q, bai.zeros(2, 5, 3), v)
    with pytest.raises(bai.ShapeError, match=r"same sequence length S .* value \(2, 4, 6\)"):
        F.scaled_dot_product_attention(q, k, bai.zeros(2, 4, 6))
    with pytest.raises(bai.ShapeError, match=r"at least 2-D"):
        F.scaled_dot_product_attention(bai.zeros(4), bai.zeros(4), bai.zeros(4))
    with pytest.raises(
        bai.DTypeError, match=r"attn_mask must be bool or floating point, got int64"
    ):
        F.scaled_dot_product_attention(q, k, v, attn_mask=bai.zeros(3, 5, dtype=bai.int64))
    with pytest.raises(bai.DTypeError, match=r"floating-point inputs"):
        F.scaled_dot_product_attention(q, k, v.astype(bai.int64))
    with pytest.raises(bai.ArgumentError, match=r"both attn_mask \(3, 5\) and is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=bai.zeros(3, 5), is_causal=True)
    with pytest.raises(
        bai.ArgumentError,
        match=r"dropout_p must be a probability in \[0, 1\], "
        r"got 1.5",
    ):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(bai.ShapeError, match=r"3 query heads must be a multiple of the 2"):
        F.scaled_dot_product_attention(
            bai.zeros(1, 3, 2, 4), bai.zeros(1, 2, 2, 4), bai.zeros(1, 2, 2, 4), enable_gqa=True
        )
    with pytest.raises(bai.ShapeError, match=r"enable_gqa needs a head dimension"):
        F.scaled_dot_product_attention(
            bai.zeros(2, 4), bai.zeros(2, 4), bai.zeros(2, 4), enable_gqa=True
        )


# ----- MultiheadAttention --------------------------------------------------------------------
def _mha_inputs(batch_first, length=4, source=5, batch=3, embed=8, kdim=None, vdim=None, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((length, batch, embed))
    k = rng.standard_normal((source, batch, kdim or embed))
    v = rng.standard_normal((source, batch, vdim or embed))
    if batch_first:
        q, k, v = (x.transpose(1, 0, 2).copy() for x in (q, k, v))
    return [q, k, v]


def _padding_mask(batch=3, source=5):
    mask = np.zeros((batch, source), dtype=bool)
    mask[0, 3:] = True
    mask[2, 1] = True
    return mask


def _blocking_mask(shape, seed=2):
    mask = np.random.default_rng(seed).random(shape) < 0.4
    mask[..., 0] = False  # keep key 0 for every query: no row is fully blocked
    return mask


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("weights_from", ["torch", "ours"])
def test_mha_matches_pytorch(batch_first, need_weights, weights_from):
    bai.manual_seed(0)
    torch.manual_seed(0)
    ours = MultiheadAttention(8, 2, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    compare_modules(
        ours,
        theirs,
        _mha_inputs(batch_first),
        {"need_weights": need_weights},
        weights_from=weights_from,
    )


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_mha_key_padding_and_attention_masks(batch_first, kind):
    padding, blocking = _padding_mask(), _blocking_mask((4, 5))
    if kind == "float":
        padding = np.where(padding, -np.inf, 0.0)
        blocking = np.where(blocking, -np.inf, np.random.default_rng(3).standard_normal((4, 5)))
    for need_weights in (True, False):
        compare_modules(
            MultiheadAttention(8, 2, batch_first=batch_first),
            torch.nn.MultiheadAttention(8, 2, batch_first=batch_first),
            _mha_inputs(batch_first),
            {"key_padding_mask": padding, "attn_mask": blocking, "need_weights": need_weights},
        )


def test_mha_per_head_attention_mask_and_mixed_mask_types():
    per_head = _blocking_mask((3 * 2, 4, 5))
    compare_modules(
        MultiheadAttention(8, 2),
        torch.nn.MultiheadAttention(8, 2),
        _mha_inputs(False),
        {"attn_mask": per_head, "average_attn_weights": False},
    )
    float_padding = np.where(_padding_mask(), -1e9, 0.5)
    with pytest.warns(UserWarning):  # torch warns about mixing mask types; we accept it quietly
        compare_modules(
            MultiheadAttention(8, 2),
            torch.nn.MultiheadAttention(8, 2),
            _mha_inputs(False),
            {"attn_mask": _blocking_mask((4, 5)), "key_padding_mask": float_padding},
        )


def test_mha_head_weights_not_averaged():
    compare_modules(
        MultiheadAttention(8, 4, batch_first=True),
        torch.nn.MultiheadAttention(8, 4, batch_first=True),
        _mha_inputs(True),
        {"average_attn_weights": False, "key_padding_mask": _padding_mask()},
    )


def test_mha_causal_self_attention():
    """is_causal with the causal mask given (PyTorch's hint), and without it (built here)."""
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    x = _mha_inputs(True, source=4)[0]
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    ours = MultiheadAttention(8, 2, batch_first=True)
    for need_weights in (True, False):
        compare_modules(
            ours, theirs, [x, x, x],
            {"attn_mask": causal, "is_causal": True, "need_weights": need_weights},
        )  # fmt: skip
    ours_out = ours(bai.Tensor(x), bai.Tensor(x), bai.Tensor(x), is_causal=True)[0]
    theirs_out = theirs(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(causal))[0]
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-9)


def test_mha_self_attention_with_one_tensor_for_query_key_value():
    x = _mha_inputs(False)[0]
    ours, theirs = MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)

    class SelfAttention(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x, x, x)

    class OurSelfAttention(bai.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x, x, x)

    compare_modules(OurSelfAttention(ours), SelfAttention(theirs), [x])


@pytest.mark.parametrize("weights_from", ["torch", "ours"])
def test_mha_kdim_vdim_use_separate_projections(weights_from):
    ours = MultiheadAttention(8, 2, kdim=3, vdim=5)
    theirs = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    assert ours.in_proj_weight is None
    assert set(ours.state_dict()) == set(theirs.state_dict())
    compare_modules(
        ours,
        theirs,
        _mha_inputs(False, kdim=3, vdim=5),
        {"key_padding_mask": _padding_mask()},
        weights_from=weights_from,
    )


def test_mha_without_bias_and_with_bias_kv_and_zero_attn():
    compare_modules(
        MultiheadAttention(8, 2, bias=False),
        torch.nn.MultiheadAttention(8, 2, bias=False),
        _mha_inputs(False),
    )
    compare_modules(
        MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True),
        torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True),
        _mha_inputs(True),
        {"key_padding_mask": _padding_mask(), "attn_mask": _blocking_mask((4, 5))},
    )


def test_mha_unbatched_inputs():
    q, k, v = (x[:, 0] for x in _mha_inputs(False))
    compare_modules(
        MultiheadAttention(8, 2),
        torch.nn.MultiheadAttention(8, 2),
        [q.copy(), k.copy(), v.copy()],
        {"key_padding_mask": _padding_mask()[0], "attn_mask": _blocking_mask((2, 4, 5))},
    )


def test_mha_train_mode_with_zero_dropout_matches():
    compare_modules(
        MultiheadAttention(8, 2, dropout=0.0),
        torch.nn.MultiheadAttention(8, 2, dropout=0.0),
        _mha_inputs(False),
        {"key_padding_mask": _padding_mask()},
        train=True,
    )


def test_mha_dropout_only_in_training():
    mha = MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    q = bai.Tensor(_mha_inputs(True)[0])
    mha.eval()
    first, second = mha(q, q, q)[1], mha(q, q, q)[1]
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    mha.train()
    dropped = mha(q, q, q, average_attn_weights=False, generator=bai.Generator(0))[1].numpy()
    assert np.any(dropped == 0)


def test_mha_parameter_layout_and_initialisation():
    mha = MultiheadAttention(8, 2, add_bias_kv=True)
    theirs = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    ours_shapes = {k: tuple(v.shape) for k, v in mha.state_dict().items()}
    assert ours_shapes == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert np.all(mha.in_proj_bias.numpy() == 0) and np.all(mha.out_proj.bias.numpy() == 0)
    bound = np.sqrt(6 / (8 + 24))  # Xavier-uniform over the stacked (24, 8) matrix
    assert np.abs(mha.in_proj_weight.numpy()).max() <= bound
    assert "embed_dim=8, num_heads=2" in repr(mha)


def test_mha_second_derivatives():
    mha = MultiheadAttention(4, 2).to(bai.float64)
    torch_mha = torch.nn.MultiheadAttention(4, 2).double()
    mha.load_state_dict({k: v.numpy() for k, v in torch_mha.state_dict().items()})
    mask = _blocking_mask((2, 3))
    check_op(
        lambda q, k: mha(q, k, k, attn_mask=bai.Tensor(mask))[0],
        (2, 1, 4),
        (3, 1, 4),
        torch_fn=lambda q, k: torch_mha(q, k, k, attn_mask=torch.tensor(mask))[0],
        gradgrad=True,
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_packed_self_attention_second_derivatives(need_weights):
    """One tensor as query, key and value: the stacked projection is one product split in
    three (PyTorch's packed path); values, gradients and second derivatives as PyTorch's."""
    mha = MultiheadAttention(4, 2, batch_first=True).to(bai.float64)
    torch_mha = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    mha.load_state_dict({k: v.numpy() for k, v in torch_mha.state_dict().items()})
    check_op(
        lambda x: mha(x, x, x, need_weights=need_weights)[0],
        (2, 3, 4),
        # (PyTorch's fused path for need_weights=False has no second derivative; the output
        # is the same either way)
        torch_fn=lambda x: torch_mha(x, x, x, need_weights=True)[0],
        gradgrad=True,
    )


@pytest.mark.parametrize("batched", [True, False])
def test_mha_attention_over_one_memory_tensor_second_derivatives(batched):
    """Key and value one tensor (a decoder attending to its memory): the key and value
    projections are one product split in two; batched and unbatched, against PyTorch."""
    mha = MultiheadAttention(4, 2).to(bai.float64)
    torch_mha = torch.nn.MultiheadAttention(4, 2).double()
    mha.load_state_dict({k: v.numpy() for k, v in torch_mha.state_dict().items()})
    query, memory = ((3, 2, 4), (5, 2, 4)) if batched else ((3, 4), (5, 4))
    check_op(
        lambda q, m: mha(q, m, m)[0],
        query,
        memory,
        torch_fn=lambda q, m: torch_mha(q, m, m)[0],
        gradgrad=True,
    )


def test_mha_unbatched_self_attention_matches_pytorch():
    mha = MultiheadAttention(4, 2).to(bai.float64)
    torch_mha = torch.nn.MultiheadAttention(4, 2).double()
    mha.load_state_dict({k: v.numpy() for k, v in torch_mha.state_dict().items()})
    check_op(
        lambda x: mha(x, x, x)[0], (3, 4), torch_fn=lambda x: torch_mha(x, x, x)[0], gradgrad=True
    )


def test_mha_errors():
    with pytest.raises(
        bai.ArgumentError,
        match=r"embed_dim \(10\) must be divisible by "
        r"num_heads \(3\)",
    ):
        MultiheadAttention(10, 3)
    mha = MultiheadAttention(8, 2)
    q, k, v = (bai.Tensor(x) for x in _mha_inputs(False))
    with pytest.raises(
        bai.ShapeError,
        match=r"attn_mask of shape \(5, 4\) fits neither \(L, S\) "
        r"= \(4, 5\) nor \(N \* num_heads, L, S\) = \(6, 4, 5\)",
    ):
        mha(q, k, v, attn_mask=bai.zeros(5, 4, dtype=bai.bool_))
    with pytest.raises(
        bai.ShapeError,
        match=r"key_padding_mask of shape \(5, 3\) does not match "
        r"\(N, S\) = \(3, 5\)",
    ):
        mha(q, k, v, key_padding_mask=bai.zeros(5, 3, dtype=bai.bool_))
    with pytest.raises(bai.DTypeError, match=r"key_padding_mask must be bool or floating point"):
        mha(q, k, v, key_padding_mask=bai.zeros(3, 5, dtype=bai.int64))
    with pytest.raises(bai.ShapeError, match=r"last dimension must be embed_dim = 8"):
        mha(bai.zeros(4, 3, 6), k, v)
    with pytest.raises(bai.ShapeError, match=r"same sequence length and batch size"):
        mha(q, k, bai.zeros(6, 3, 8))
    with pytest.raises(bai.ShapeError, match=r"3-D batched or 2-D unbatched"):
        mha(q, bai.zeros(5, 8), v)
    with pytest.raises(bai.ShapeError, match=r"in MultiheadAttention"):
        mha(q, k, v, attn_mask=bai.zeros(2, 2))
    with pytest.raises(bai.ArgumentError, match=r"static_k / static_v are not supported"):
        F.multi_head_attention_forward(
            q, k, v, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
            mha.out_proj.weight, mha.out_proj.bias, static_k=k,
        )  # fmt: skip


def test_mha_functional_form_matches_module():
    mha = MultiheadAttention(8, 2).eval()
    q, k, v = (bai.Tensor(x) for x in _mha_inputs(False))
    expected = mha(q, k, v)[0].numpy()
    out, _ = F.multi_head_attention_forward(
        q, k, v, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
        mha.out_proj.weight, mha.out_proj.bias, training=False,
    )  # fmt: skip
    np.testing.assert_array_equal(out.numpy(), expected)


def test_float_mask_arg_spec_is_differentiable():
    """A float mask given as a plain shape gets a gradient, as a learned bias would."""
    ours, theirs = _sdpa()
    check_op(ours, (1, 2, 3), (1, 4, 3), (1, 4, 3), Arg((2, 4)), torch_fn=theirs)
