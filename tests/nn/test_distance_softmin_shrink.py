"""normalize, cosine_similarity, pairwise_distance, softmin, the implicit dimension of softmax,
hardshrink, softshrink, the in-place functional spellings (relu_...), broadcast_tensors and
their layers, against PyTorch in float64: values, gradients and second derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _agree(ours_fn, torch_fn, *arrays, second=True, rtol=1e-10):
    """Values, first and (with ``second``) second derivatives of ``fn(*arrays)`` against
    PyTorch's, through a random upstream gradient."""
    ours = [bai.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours_fn(*ours), torch_fn(*theirs)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=1e-12)
    upstream = np.random.default_rng(9).standard_normal(tuple(expected.shape))
    grads = bai.autograd.grad((out * bai.tensor(upstream)).sum(), ours, create_graph=second)
    torch_grads = torch.autograd.grad(
        (expected * torch.tensor(upstream)).sum(), theirs, create_graph=second
    )
    for got, want in zip(grads, torch_grads):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=rtol, atol=1e-10)
    if second:
        total = sum((g * g).sum() for g in grads)
        torch_total = sum((g * g).sum() for g in torch_grads)
        torch_second = torch.autograd.grad(torch_total, theirs, allow_unused=True)
        if not total.requires_grad:  # a piecewise-linear first derivative: the second is 0
            assert all(g is None or not g.any() for g in torch_second)
            return
        for got, want in zip(bai.autograd.grad(total, ours), torch_second):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-8, atol=1e-8)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("p, dim", [(2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1)])
def test_normalize_matches_pytorch(p, dim):
    x = RNG.standard_normal((4, 5))
    _agree(lambda t: F.normalize(t, p=p, dim=dim), lambda t: TF.normalize(t, p=p, dim=dim), x,
           second=p != float("inf"))  # fmt: skip


def test_normalize_leaves_a_zero_vector_zero_with_pytorchs_gradient():
    x = np.zeros((2, 3))
    x[1] = [3.0, 4.0, 0.0]
    _agree(F.normalize, TF.normalize, x, second=False)


@pytest.mark.parametrize(
    "shapes, dim", [(((4, 5), (4, 5)), 1), (((3, 1, 6), (4, 6)), -1), (((6,), (6,)), 0)]
)
def test_cosine_similarity_matches_pytorch_with_broadcasting(shapes, dim):
    a, b = (RNG.standard_normal(shape) for shape in shapes)
    _agree(
        lambda x, y: F.cosine_similarity(x, y, dim=dim),
        lambda x, y: TF.cosine_similarity(x, y, dim=dim),
        a,
        b,
    )


def test_cosine_similarity_of_tiny_and_zero_vectors_has_pytorchs_gradient():
    """PyTorch clamps the norms to eps outside autograd: the derivative still runs through
    the norm (a zero vector's gradient is y / (eps * |y|))."""
    a = np.array([[1e-9, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    b = np.array([[1.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0.5, 1.0, 2.0]])
    _agree(F.cosine_similarity, TF.cosine_similarity, a, b, second=False, rtol=1e-9)


@pytest.mark.parametrize("p, keepdim", [(2.0, False), (1.0, True), (3.0, False), (0.5, False)])
def test_pairwise_distance_matches_pytorch(p, keepdim):
    a, b = RNG.standard_normal((5, 4)), RNG.standard_normal((1, 4))
    _agree(
        lambda x, y: F.pairwise_distance(x, y, p=p, keepdim=keepdim),
        lambda x, y: TF.pairwise_distance(x, y, p=p, keepdim=keepdim),
        a,
        b,
    )
    _agree(F.pairwise_distance, TF.pairwise_distance, a[0], b[0])  # 1-D: a scalar


def test_softmin_matches_pytorch():
    x = RNG.standard_normal((3, 4, 5))
    for dim in (0, 1, -1):
        _agree(
            lambda t, dim=dim: F.softmin(t, dim=dim), lambda t, dim=dim: TF.softmin(t, dim=dim), x
        )
    layer = nn.Softmin(dim=1)
    np.testing.assert_allclose(
        layer(bai.tensor(x)).numpy(), torch.nn.Softmin(dim=1)(torch.tensor(x)).numpy()
    )


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 5)])
def test_softmax_without_dim_takes_pytorchs_implicit_dimension_and_warns(shape):
    """A 3-D or 4-D input without dim= is normalised over dimension 0 or 1 in PyTorch (with a
    deprecation warning); the same call here gives the same values and the same warning."""
    x = RNG.standard_normal(shape)
    for ours, theirs in (
        (F.softmax, TF.softmax),
        (F.log_softmax, TF.log_softmax),
        (F.softmin, TF.softmin),
        (lambda t: nn.Softmax()(t), lambda t: torch.nn.Softmax()(t)),
        (lambda t: nn.LogSoftmax()(t), lambda t: torch.nn.LogSoftmax()(t)),
    ):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            got = ours(bai.tensor(x)).numpy()
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            expected = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_softmax_keeps_axis_and_dtype_spellings():
    x = bai.tensor(RNG.standard_normal((2, 3)).astype(np.float32))
    np.testing.assert_array_equal(F.softmax(x, axis=0).numpy(), F.softmax(x, dim=0).numpy())
    assert F.log_softmax(x, dim=1, dtype="float64").dtype == np.float64
    assert bai.softmax(bai.ones(2, 3, 4)).numpy()[0, 0].sum() == pytest.approx(1.0)  # last axis


def test_softmax2d_normalises_each_pixels_channels():
    x = RNG.standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(
        nn.Softmax2d()(bai.tensor(x)).numpy(), torch.nn.Softmax2d()(torch.tensor(x)).numpy()
    )
    with pytest.raises(Exception, match=r"\[Softmax2d\].*\(4, 5\)"):
        nn.Softmax2d()(bai.ones(4, 5))


@pytest.mark.parametrize("lambd", [0.5, 1.2])
def test_shrinkage_matches_pytorch_including_the_band_edges(lambd):
    x = np.concatenate([RNG.standard_normal(20) * 2, [lambd, -lambd, 0.0]])
    for ours, theirs in ((F.hardshrink, TF.hardshrink), (F.softshrink, TF.softshrink)):
        _agree(lambda t, f=ours: f(t, lambd), lambda t, f=theirs: f(t, lambd), x, second=False)
    assert repr(nn.Hardshrink(lambd)) == f"Hardshrink({lambd})"
    np.testing.assert_array_equal(
        nn.Softshrink(lambd)(bai.tensor(x)).numpy(),
        torch.nn.Softshrink(lambd)(torch.tensor(x)).numpy(),
    )


@pytest.mark.parametrize(
    "name, args",
    [("relu_", ()), ("elu_", (0.7,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
     ("selu_", ()), ("celu_", (1.3,)), ("threshold_", (0.1, -3.0)), ("rrelu_", ())],
)  # fmt: skip
def test_in_place_functional_spellings_write_into_their_input(name, args):
    x = RNG.standard_normal((3, 4))
    ours, theirs = bai.tensor(x), torch.tensor(x)
    assert getattr(F, name)(ours, *args) is ours
    getattr(TF, name)(theirs, *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_distance_layers_match_pytorch():
    a, b = RNG.standard_normal((4, 6)), RNG.standard_normal((4, 6))
    pairs = (
        (nn.CosineSimilarity(dim=1, eps=1e-6), torch.nn.CosineSimilarity(dim=1, eps=1e-6)),
        (nn.PairwiseDistance(p=1.0, keepdim=True), torch.nn.PairwiseDistance(p=1.0, keepdim=True)),
    )
    for ours, theirs in pairs:
        got = ours(bai.tensor(a), bai.tensor(b)).numpy()
        np.testing.assert_allclose(got, theirs(torch.tensor(a), torch.tensor(b)).numpy())
    assert repr(pairs[1][0]) == "PairwiseDistance(p=1.0, eps=1e-06, keepdim=True)"


def test_broadcast_tensors_and_shapes_match_pytorch():
    shapes = [(3, 1), (4,), (2, 1, 1)]
    assert bai.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes)) == (2, 3, 4)
    tensors = bai.broadcast_tensors(*(bai.ones(*s) for s in shapes))
    assert [tuple(t.shape) for t in tensors] == [(2, 3, 4)] * 3
    with pytest.raises(Exception, match=r"\[broadcast_shapes\].*\(3,\), \(4,\)"):
        bai.broadcast_shapes((3,), (4,))
