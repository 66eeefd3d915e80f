"""Transformer encoder/decoder layers, stacks, the full Transformer and positional encodings
against PyTorch in float64, with weights copied both ways through state dicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.nn.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from buildingai.nn.transformer import (
    Transformer,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tests.nn.test_attention import compare_modules

torch = pytest.importorskip("torch")
LayerNorm = pytest.importorskip("buildingai.nn.norm").LayerNorm

# PyTorch's note that its nested-tensor inference fast path is off for these configurations
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")

D_MODEL, NHEAD, FEEDFORWARD = 8, 2, 16


def _sequence(length, batch_first, batch=3, seed=0):
    x = np.random.default_rng(seed).standard_normal((length, batch, D_MODEL))
    return x.transpose(1, 0, 2).copy() if batch_first else x


def _padding(batch=3, length=5):
    mask = np.zeros((batch, length), dtype=bool)
    mask[0, -2:] = True
    mask[1, 2] = True
    return mask


def _causal(length):
    return np.triu(np.ones((length, length), dtype=bool), k=1)


def _layer_options(**options):
    return dict(dim_feedforward=FEEDFORWARD, dropout=0.0, **options)


# ----- encoder layer -------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_matches_pytorch(norm_first, activation, batch_first):
    options = _layer_options(activation=activation, norm_first=norm_first, batch_first=batch_first)
    compare_modules(
        TransformerEncoderLayer(D_MODEL, NHEAD, **options),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **options),
        [_sequence(5, batch_first)],
        {"src_key_padding_mask": _padding(), "src_mask": _causal(5)},
    )


@pytest.mark.parametrize("weights_from", ["torch", "ours"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_encoder_layer_weights_both_ways_and_modes(weights_from, train):
    compare_modules(
        TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options()),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options()),
        [_sequence(4, False)],
        weights_from=weights_from,
        train=train,
    )


def test_encoder_layer_callable_activation_and_no_bias():
    options = _layer_options(activation=bai.nn.GELU(approximate="tanh"), bias=False)
    theirs = _layer_options(activation=torch.nn.GELU(approximate="tanh"), bias=False)
    compare_modules(
        TransformerEncoderLayer(D_MODEL, NHEAD, **options),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **theirs),
        [_sequence(4, True)],
    )


def test_encoder_layer_causal_flag_without_mask():
    ours = TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options(batch_first=True)).to(
        bai.float64
    )
    theirs = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options(batch_first=True))
    theirs.double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = _sequence(5, True)
    got = ours(bai.Tensor(x), is_causal=True)
    want = theirs(torch.tensor(x), src_mask=torch.tensor(_causal(5)), is_causal=True)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9)


def test_encoder_layer_unbatched():
    compare_modules(
        TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options(norm_first=True)),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **_layer_options(norm_first=True)),
        [_sequence(4, False)[:, 0].copy()],
        {"src_mask": _causal(4)},
    )


def test_encoder_layer_state_dict_keys_and_repr():
    ours = TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FEEDFORWARD)
    theirs = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FEEDFORWARD)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [name for name, _ in ours.named_children()] == [
        name for name, _ in theirs.named_children()
    ]
    assert "(self_attn): MultiheadAttention" in repr(ours)


# ----- decoder layer ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_matches_pytorch(norm_first, activation, batch_first):
    options = _layer_options(activation=activation, norm_first=norm_first, batch_first=batch_first)
    memory_mask = np.zeros((4, 5), dtype=bool)
    memory_mask[1, 3:] = True
    compare_modules(
        TransformerDecoderLayer(D_MODEL, NHEAD, **options),
        torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, **options),
        [_sequence(4, batch_first), _sequence(5, batch_first, seed=1)],
        {
            "tgt_mask": _causal(4),
            "memory_mask": memory_mask,
            "tgt_key_padding_mask": _padding(length=4),
            "memory_key_padding_mask": _padding(length=5),
        },
    )


@pytest.mark.parametrize("weights_from", ["torch", "ours"])
def test_decoder_layer_weights_both_ways_in_train_mode(weights_from):
    compare_modules(
        TransformerDecoderLayer(D_MODEL, NHEAD, **_layer_options(norm_first=True)),
        torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, **_layer_options(norm_first=True)),
        [_sequence(3, False), _sequence(5, False, seed=1)],
        {"tgt_mask": np.where(_causal(3), -np.inf, 0.0), "tgt_is_causal": True},
        weights_from=weights_from,
        train=True,
    )


def test_decoder_layer_causal_flag_without_mask():
    ours = TransformerDecoderLayer(D_MODEL, NHEAD, **_layer_options()).to(bai.float64)
    theirs = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, **_layer_options()).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    tgt, memory = _sequence(4, False), _sequence(6, False, seed=1)
    got = ours(bai.Tensor(tgt), bai.Tensor(memory), tgt_is_causal=True)
    want = theirs(
        torch.tensor(tgt), torch.tensor(memory), tgt_mask=torch.tensor(_causal(4)),
        tgt_is_causal=True,
    )  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9)


# ----- stacks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("weights_from", ["torch", "ours"])
def test_encoder_stack_with_final_norm(norm_first, weights_from):
    def build(library, norm):
        layer = library.TransformerEncoderLayer(
            D_MODEL, NHEAD, **_layer_options(norm_first=norm_first, batch_first=True)
        )
        return library.TransformerEncoder(layer, 2, norm=norm(D_MODEL))

    ours = build(bai.nn.transformer, LayerNorm)
    theirs = build(torch.nn, torch.nn.LayerNorm)
    theirs.enable_nested_tensor = False
    assert list(ours.state_dict()) == list(theirs.state_dict())
    compare_modules(
        ours,
        theirs,
        [_sequence(5, True)],
        {"src_key_padding_mask": _padding(), "mask": _causal(5)},
        weights_from=weights_from,
    )


def test_encoder_stack_layers_are_independent_copies():
    layer = TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FEEDFORWARD)
    stack = TransformerEncoder(layer, 2)
    first, second = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight
    assert first is not second
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert stack.layers[0].linear1.weight is not layer.linear1.weight


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_stack_with_final_norm(norm_first):
    def build(library, norm):
        layer = library.TransformerDecoderLayer(
            D_MODEL, NHEAD, **_layer_options(norm_first=norm_first, activation="gelu")
        )
        return library.TransformerDecoder(layer, 2, norm=norm(D_MODEL))

    compare_modules(
        build(bai.nn.transformer, LayerNorm),
        build(torch.nn, torch.nn.LayerNorm),
        [_sequence(4, False), _sequence(5, False, seed=1)],
        {"tgt_mask": _causal(4), "memory_key_padding_mask": _padding()},
    )


@pytest.mark.parametrize("batch_first", [False, True])
def test_full_transformer(batch_first):
    options = dict(
        d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=2, num_decoder_layers=2,
        dim_feedforward=FEEDFORWARD, dropout=0.0, batch_first=batch_first,
    )  # fmt: skip
    theirs = torch.nn.Transformer(**options)
    compare_modules(
        Transformer(**options),
        theirs,
        [_sequence(5, batch_first), _sequence(4, batch_first, seed=1)],
        {
            "tgt_mask": theirs.generate_square_subsequent_mask(4).numpy().astype(np.float64),
            "src_key_padding_mask": _padding(),
            "memory_key_padding_mask": _padding(),
        },
    )


def test_square_subsequent_mask_matches_pytorch():
    ours = Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(
        ours, torch.nn.Transformer.generate_square_subsequent_mask(4).numpy()
    )


def test_transformer_second_derivatives_through_a_layer():
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, activation="gelu")
    layer.to(bai.float64)
    x = bai.Tensor(np.random.default_rng(0).standard_normal((3, 1, 4)), requires_grad=True)
    bai.debug.gradgradcheck(lambda x: layer(x, is_causal=True), [x])


# ----- errors ------------------------------------------------------------------------------------
def test_transformer_errors():
    with pytest.raises(
        bai.ArgumentError,
        match=r"activation should be 'relu' or 'gelu', not "
        r"'swish'",
    ):
        TransformerEncoderLayer(D_MODEL, NHEAD, activation="swish")
    with pytest.raises(
        bai.ArgumentError,
        match=r"embed_dim \(8\) must be divisible by "
        r"num_heads \(3\)",
    ):
        TransformerDecoderLayer(D_MODEL, 3)
    with pytest.raises(bai.ArgumentError, match=r"num_layers must be at least 1, got 0"):
        TransformerEncoder(TransformerEncoderLayer(D_MODEL, NHEAD), 0)
    model = Transformer(D_MODEL, NHEAD, 1, 1, FEEDFORWARD)
    with pytest.raises(
        bai.ShapeError,
        match=r"src \(5, 3, 8\) and tgt \(4, 2, 8\) must have the "
        r"same batch size",
    ):
        model(bai.zeros(5, 3, 8), bai.zeros(4, 2, 8))
    with pytest.raises(bai.ShapeError, match=r"must be d_model = 8"):
        model(bai.zeros(5, 3, 6), bai.zeros(4, 3, 6))
    layer = TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FEEDFORWARD)
    with pytest.raises(
        bai.ShapeError,
        match=r"attn_mask of shape \(4, 4\) fits neither .*"
        r"in TransformerEncoderLayer.self_attn",
    ):
        layer(bai.zeros(5, 3, 8), src_mask=bai.zeros(4, 4))


# ----- positional encodings ----------------------------------------------------------------------
def test_sinusoidal_encoding_values():
    table = F.sinusoidal_positional_encoding(6, 5, dtype=bai.float64).numpy()
    position, i = 3, 1
    np.testing.assert_allclose(table[position, 2 * i], math.sin(position / 10000 ** (2 * i / 5)))
    np.testing.assert_allclose(
        table[position, 2 * i + 1], math.cos(position / 10000 ** (2 * i / 5))
    )
    assert table.shape == (6, 5)
    shifted = F.sinusoidal_positional_encoding(2, 5, offset=4, dtype=bai.float64).numpy()
    np.testing.assert_allclose(shifted, table[4:6], rtol=1e-12)
    assert F.sinusoidal_positional_encoding(3, 4).dtype == bai.float32


@pytest.mark.parametrize("batch_first", [False, True])
def test_sinusoidal_module_adds_the_table(batch_first):
    module = SinusoidalPositionalEncoding(D_MODEL, max_len=10, batch_first=batch_first)
    x = bai.Tensor(_sequence(4, batch_first).astype(np.float32), requires_grad=True)
    out = module(x, offset=2)
    table = F.sinusoidal_positional_encoding(10, D_MODEL).numpy()[2:6]
    expected = x.numpy() + (table[None] if batch_first else table[:, None])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(x.shape))
    assert "pe" not in module.state_dict()
    assert module(bai.zeros(4, D_MODEL)).shape == (4, D_MODEL)


def test_learned_positional_embedding_gradients():
    module = LearnedPositionalEmbedding(6, D_MODEL, batch_first=True).to(bai.float64)
    assert module.weight.shape == (6, D_MODEL)
    assert list(module.state_dict()) == ["weight"]
    x = bai.Tensor(_sequence(3, True), requires_grad=True)
    out = module(x, offset=1)
    np.testing.assert_allclose(out.numpy(), x.numpy() + module.weight.numpy()[None, 1:4])
    out.sum().backward()
    expected = np.zeros((6, D_MODEL))
    expected[1:4] = 3  # three sequences in the batch
    np.testing.assert_allclose(module.weight.grad.numpy(), expected)


def test_positional_dropout_only_in_training():
    module = SinusoidalPositionalEncoding(D_MODEL, max_len=8, dropout=0.5)
    x = bai.ones(4, 2, D_MODEL)
    module.eval()
    np.testing.assert_array_equal(module(x).numpy(), module(x).numpy())
    module.train()
    assert np.any(module(x).numpy() == 0)


def test_positional_errors():
    module = SinusoidalPositionalEncoding(D_MODEL, max_len=4)
    with pytest.raises(bai.ShapeError, match=r"positions 2..5 .* exceed the table of 4 positions"):
        module(bai.zeros(4, 1, D_MODEL), offset=2)
    with pytest.raises(bai.ShapeError, match=r"expects input \(L, N, 8\)"):
        module(bai.zeros(4, 1, 6))
    learned = LearnedPositionalEmbedding(3, D_MODEL, batch_first=True)
    with pytest.raises(bai.ShapeError, match=r"build the module with max_len >= 5"):
        learned(bai.zeros(2, 5, D_MODEL))
