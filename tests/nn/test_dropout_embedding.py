"""Dropout layers (training/eval, channel masks, generators) and Embedding (initialisation,
padding, max_norm, gradient scaling, from_pretrained) against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from buildingai.nn.embedding import Embedding

torch = pytest.importorskip("torch")


# ----- dropout ---------------------------------------------------------------------------------------
def test_dropout_scales_survivors_and_is_identity_in_eval():
    layer = Dropout(0.25)
    x = bai.Tensor(np.ones((200, 50), dtype=np.float32), requires_grad=True)
    out = layer(x)
    values = np.unique(out.numpy())
    np.testing.assert_allclose(values, [0.0, 1 / 0.75])
    assert abs((out.numpy() == 0).mean() - 0.25) < 0.02
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())  # gradient uses the same mask
    layer.eval()
    assert layer(x) is x
    assert repr(layer) == repr(torch.nn.Dropout(0.25))


def test_dropout_draws_from_the_default_or_a_given_generator():
    x = bai.ones(8, 8)
    bai.manual_seed(3)
    first = Dropout(0.5)(x).numpy()
    bai.manual_seed(3)
    np.testing.assert_array_equal(Dropout(0.5)(x).numpy(), first)
    a = Dropout(0.5, generator=bai.Generator(7))(x).numpy()
    b = Dropout(0.5, generator=bai.Generator(7))(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, Dropout(0.5, generator=bai.Generator(8))(x).numpy())


def test_dropout_extremes():
    x = bai.Tensor(np.arange(1.0, 7.0), requires_grad=True)
    assert Dropout(0.0)(x) is x
    out = Dropout(1.0)(x)
    np.testing.assert_array_equal(out.numpy(), np.zeros(6))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))
    assert Dropout(0.5, inplace=True)(bai.ones(3)).shape == (3,)


@pytest.mark.parametrize(
    "layer, shape, mask_shape",
    [
        (Dropout1d, (4, 6, 5), (4, 6, 1)),
        (Dropout1d, (6, 5), (6, 1)),
        (Dropout2d, (4, 6, 3, 3), (4, 6, 1, 1)),
        (Dropout2d, (4, 6, 5), (4, 6, 1)),  # read as (N, C, L), as in PyTorch
        (Dropout3d, (2, 6, 2, 2, 2), (2, 6, 1, 1, 1)),
        (Dropout3d, (6, 2, 2, 2), (6, 1, 1, 1)),
    ],
)
def test_channel_dropout_zeroes_whole_channels(layer, shape, mask_shape):
    x = bai.ones(*shape)
    out = layer(0.5, generator=bai.Generator(1))(x).numpy()
    axes = tuple(i for i, extent in enumerate(mask_shape) if extent == 1)
    channel_max, channel_min = out.max(axis=axes), out.min(axis=axes)
    np.testing.assert_array_equal(channel_max, channel_min)  # each channel all 0 or all 2
    assert set(np.unique(channel_max)) <= {0.0, 2.0} and len(np.unique(channel_max)) == 2
    eval_layer = layer(0.5).eval()
    assert eval_layer(x) is x


def test_dropout_errors():
    with pytest.raises(
        bai.ArgumentError, match=r"\[Dropout\] p must be a probability in \[0, 1\], got 1.5"
    ):
        Dropout(1.5)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[Dropout2d\] expects input \(N, C, H, W\) or \(N, C, L\), got shape \(3, 4\)",
    ):
        Dropout2d()(bai.ones(3, 4))


# ----- embedding ------------------------------------------------------------------------------------
def _pair(num, dim, **kwargs):
    ours = Embedding(num, dim, dtype="float64", **kwargs)
    theirs = torch.nn.Embedding(num, dim, dtype=torch.float64, **kwargs)
    theirs.load_state_dict({"weight": torch.tensor(ours.weight.numpy())})
    return ours, theirs


INDICES = np.array([[1, 2, 1, 0], [4, 3, 1, 1]])


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"padding_idx": 1}, {"padding_idx": -2}, {"scale_grad_by_freq": True, "padding_idx": 0}],
    ids=str,
)
def test_embedding_forward_and_gradient_match_pytorch(kwargs):
    ours, theirs = _pair(5, 3, **kwargs)
    assert repr(ours) == repr(theirs)
    ours_out, theirs_out = ours(bai.Tensor(INDICES)), theirs(torch.tensor(INDICES))
    np.testing.assert_array_equal(ours_out.numpy(), theirs_out.detach().numpy())
    upstream = np.random.default_rng(0).standard_normal(ours_out.shape)
    (ours_out * bai.Tensor(upstream)).sum().backward()
    (theirs_out * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_looked_up_rows_like_pytorch(norm_type):
    bai.manual_seed(0)  # row 5's norm is above 1 (1.57 and 2.51) whatever ran before
    ours, theirs = _pair(6, 4, max_norm=1.0, norm_type=norm_type)
    ours_out, theirs_out = ours(bai.Tensor(INDICES)), theirs(torch.tensor(INDICES))
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-12)
    untouched = 5  # never looked up: keeps its norm above 1
    assert np.linalg.norm(ours.weight.numpy()[untouched], ord=norm_type) > 1.0


@pytest.mark.parametrize(
    "options",
    [
        {"padding_idx": 1},
        {"max_norm": 1.0},
        {"max_norm": 0.5, "norm_type": 1.0},
        {"scale_grad_by_freq": True},
        {"padding_idx": 0, "max_norm": 1.0, "scale_grad_by_freq": True},
    ],
    ids=str,
)
def test_functional_embedding_takes_pytorchs_arguments_and_matches_it(options):
    """``F.embedding(input=..., weight=..., padding_idx, max_norm, norm_type,
    scale_grad_by_freq, sparse)`` as PyTorch spells it: max_norm renormalises the table in place."""
    table = np.random.default_rng(1).standard_normal((6, 4)) * 2
    ours_weight = bai.Tensor(table.copy(), requires_grad=True)
    theirs_weight = torch.tensor(table.copy(), requires_grad=True)
    ours = bai.nn.functional.embedding(input=bai.Tensor(INDICES), weight=ours_weight, **options)
    theirs = torch.nn.functional.embedding(
        input=torch.tensor(INDICES), weight=theirs_weight, **options
    )
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_weight.numpy(), theirs_weight.detach().numpy(), rtol=1e-12)
    upstream = np.random.default_rng(0).standard_normal(ours.shape)
    (ours * bai.Tensor(upstream)).sum().backward()
    (theirs * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_weight.grad.numpy(), theirs_weight.grad.numpy(), rtol=1e-12)


def test_functional_embedding_refuses_sparse_gradients():
    weight = bai.Tensor(np.ones((3, 2)))
    with pytest.raises(bai.errors.ArgumentError, match=r"\[embedding\] sparse gradients"):
        bai.nn.functional.embedding(bai.Tensor(np.array([0])), weight, sparse=True)


def test_embedding_initialisation_and_padding():
    bai.manual_seed(0)
    layer = Embedding(1000, 16, padding_idx=3)
    weight = layer.weight.numpy()
    assert weight.dtype == np.float32 and weight.shape == (1000, 16)
    np.testing.assert_array_equal(weight[3], 0.0)
    rest = np.delete(weight, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1.0) < 0.02
    assert layer.padding_idx == 3 and Embedding(5, 2, padding_idx=-1).padding_idx == 4
    seeded = [Embedding(4, 2, generator=bai.Generator(5)).weight.numpy() for _ in range(2)]
    np.testing.assert_array_equal(*seeded)


def test_embedding_from_pretrained_shares_and_freezes():
    table = bai.Tensor(np.arange(12.0).reshape(4, 3))
    frozen = Embedding.from_pretrained(table, padding_idx=0)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen.weight.numpy()[0], [0.0, 1.0, 2.0])  # kept as given
    np.testing.assert_array_equal(frozen(bai.Tensor(np.array([2]))).numpy(), [[6.0, 7.0, 8.0]])
    trainable = Embedding.from_pretrained(table, freeze=False)
    assert trainable.weight.requires_grad
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table.numpy()), padding_idx=0)
    assert repr(frozen) == repr(theirs)


def test_embedding_state_dict_round_trip_with_pytorch():
    ours, theirs = _pair(7, 2)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    fresh = torch.nn.Embedding(7, 2, dtype=torch.float64)
    fresh.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), ours.weight.numpy())


def test_embedding_errors():
    with pytest.raises(
        bai.ArgumentError, match=r"\[Embedding\] padding_idx 5 is out of range for 5"
    ):
        Embedding(5, 2, padding_idx=5)
    with pytest.raises(
        bai.ArgumentError, match=r"\[Embedding\] sparse gradients are not supported"
    ):
        Embedding(5, 2, sparse=True)
    with pytest.raises(bai.ShapeError, match=r"embeddings must be 2-D.*\(3,\)"):
        Embedding.from_pretrained(bai.ones(3))
    with pytest.raises(
        IndexError, match=r"\[embedding\] index 9 is out of range.*\(in Embedding\)"
    ):
        Embedding(5, 2)(bai.Tensor(np.array([1, 9])))
