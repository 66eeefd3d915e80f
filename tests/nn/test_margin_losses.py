"""The margin, ranking and likelihood losses (``nn/functional/margin_loss.py``) and their
layers against PyTorch in float64: values for every reduction, gradients of every input, and
PyTorch's own edge cases (targets other than +-1, Stirling's term, variances below eps)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(0)
SIGNS = RNG.choice([-1.0, 1.0], size=(6,))


def _agree(ours_fn, torch_fn, arrays, grad_of, reductions=("none", "mean", "sum"), rtol=1e-10):
    """Each reduction's value, and the gradients of the inputs at positions ``grad_of``."""
    for reduction in reductions:
        ours = [bai.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
        theirs = [torch.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
        out = ours_fn(*ours, reduction=reduction)
        expected = torch_fn(*theirs, reduction=reduction)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=1e-12)
        upstream = np.random.default_rng(1).standard_normal(tuple(expected.shape))
        (out * bai.tensor(upstream)).sum().backward()
        (expected * torch.tensor(upstream)).sum().backward()
        for i in grad_of:
            np.testing.assert_allclose(
                ours[i].grad.numpy(), theirs[i].grad.numpy(), rtol=rtol, atol=1e-12
            )


@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(margin):
    a, b = RNG.standard_normal(6), RNG.standard_normal(6)
    _agree(
        lambda x, y, t, **k: F.margin_ranking_loss(x, y, t, margin=margin, **k),
        lambda x, y, t, **k: TF.margin_ranking_loss(x, y, t, margin=margin, **k),
        [a, b, SIGNS],
        (0, 1),
    )


def test_hinge_embedding_loss_with_targets_other_than_plus_minus_one():
    x = np.abs(RNG.standard_normal((3, 4))) * 1.5
    target = RNG.choice([-1.0, 1.0, 0.0], size=(3, 4))  # 0: both terms, as in PyTorch
    _agree(
        lambda i, t, **k: F.hinge_embedding_loss(i, t, margin=1.2, **k),
        lambda i, t, **k: TF.hinge_embedding_loss(i, t, margin=1.2, **k),
        [x, target],
        (0,),
    )


def test_soft_margin_loss():
    _agree(F.soft_margin_loss, TF.soft_margin_loss, [RNG.standard_normal(6) * 3, SIGNS], (0,))


@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(weighted):
    x = RNG.standard_normal((4, 5)) * 3
    target = RNG.integers(0, 2, (4, 5)).astype(np.float64)
    weight = RNG.uniform(0.5, 2.0, 5) if weighted else None
    _agree(
        lambda i, t, **k: F.multilabel_soft_margin_loss(
            i, t, None if weight is None else bai.tensor(weight), **k
        ),
        lambda i, t, **k: TF.multilabel_soft_margin_loss(
            i, t, None if weight is None else torch.tensor(weight), **k
        ),
        [x, target],
        (0,),
    )


@pytest.mark.parametrize("p, swap, shape", [(2.0, False, (5, 3)), (1.0, True, (5, 3)),
                                            (3.0, True, (4,))])  # fmt: skip
def test_triplet_margin_loss(p, swap, shape):
    arrays = [RNG.standard_normal(shape) for _ in range(3)]
    _agree(
        lambda a, q, n, **k: F.triplet_margin_loss(a, q, n, margin=0.8, p=p, swap=swap, **k),
        lambda a, q, n, **k: TF.triplet_margin_loss(a, q, n, margin=0.8, p=p, swap=swap, **k),
        arrays,
        (0, 1, 2),
    )


@pytest.mark.parametrize("log_input, full", [(True, False), (False, False), (True, True),
                                             (False, True)])  # fmt: skip
def test_poisson_nll_loss_with_stirlings_term(log_input, full):
    rate = RNG.uniform(0.1, 3.0, (3, 4))
    x = np.log(rate) if log_input else rate
    counts = RNG.integers(0, 6, (3, 4)).astype(np.float64)  # 0 and 1: no Stirling term
    _agree(
        lambda i, t, **k: F.poisson_nll_loss(i, t, log_input=log_input, full=full, **k),
        lambda i, t, **k: TF.poisson_nll_loss(i, t, log_input=log_input, full=full, **k),
        [x, counts],
        (0,),
    )


@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss_with_each_variance_shape(var_shape, full):
    mean, target = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    var = RNG.uniform(0.2, 2.0, var_shape)
    var.flat[0] = 1e-9  # below eps: clamped, its gradient as if not (PyTorch's no_grad clamp)
    _agree(
        lambda m, t, v, **k: F.gaussian_nll_loss(m, t, v, full=full, **k),
        lambda m, t, v, **k: TF.gaussian_nll_loss(m, t, v, full=full, **k),
        [mean, target, var],
        (0, 2),
        rtol=1e-9,
    )


def test_the_layers_match_pytorch():
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    labels = RNG.integers(0, 2, (4, 5)).astype(np.float64)
    signs = RNG.choice([-1.0, 1.0], size=(4, 5))
    var = RNG.uniform(0.5, 1.5, (4, 5))
    cases = [
        ("MarginRankingLoss", dict(margin=0.3), (x, y, signs)),
        ("HingeEmbeddingLoss", dict(margin=2.0), (np.abs(x), signs)),
        ("SoftMarginLoss", {}, (x, signs)),
        ("MultiLabelSoftMarginLoss", dict(reduction="sum"), (x, labels)),
        ("TripletMarginLoss", dict(margin=0.5, swap=True), (x, y, labels)),
        ("PoissonNLLLoss", dict(full=True), (x, labels * 3)),
        ("GaussianNLLLoss", dict(full=True), (x, y, var)),
    ]
    for name, kwargs, arrays in cases:
        got = getattr(nn, name)(**kwargs)(*(bai.tensor(a) for a in arrays)).numpy()
        expected = getattr(torch.nn, name)(**kwargs)(*(torch.tensor(a) for a in arrays))
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-10, err_msg=name)


def test_bad_inputs_name_the_loss():
    with pytest.raises(Exception, match=r"\[margin_ranking_loss\].*input1 \(3,\).*target \(4,\)"):
        F.margin_ranking_loss(bai.zeros(3), bai.zeros(3), bai.ones(4))
    with pytest.raises(Exception, match=r"\[gaussian_nll_loss\] var \(2,\) does not fit"):
        F.gaussian_nll_loss(bai.zeros(4, 3), bai.zeros(4, 3), bai.ones(2))
    with pytest.raises(ValueError, match=r"\[gaussian_nll_loss\] var has negative"):
        F.gaussian_nll_loss(bai.zeros(3), bai.zeros(3), -bai.ones(3))
    with pytest.raises(Exception, match=r"\[soft_margin_loss\] reduction 'avg'"):
        F.soft_margin_loss(bai.zeros(3), bai.ones(3), reduction="avg")


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(p, weighted):
    x = RNG.standard_normal((5, 4))
    classes = np.array([0, 3, 1, 1, 2])
    weight = RNG.uniform(0.5, 2.0, 4) if weighted else None
    _agree(
        lambda i, **k: F.multi_margin_loss(
            i, bai.tensor(classes), p=p, margin=0.7,
            weight=None if weight is None else bai.tensor(weight), **k,
        ),
        lambda i, **k: TF.multi_margin_loss(
            i, torch.tensor(classes), p=p, margin=0.7,
            weight=None if weight is None else torch.tensor(weight), **k,
        ),
        [x],
        (0,),
    )  # fmt: skip
    one = F.multi_margin_loss(bai.tensor(x[0]), bai.tensor(classes[0]))  # (C,) and ()
    expected = TF.multi_margin_loss(torch.tensor(x[0]), torch.tensor(classes[0]))
    np.testing.assert_allclose(one.numpy(), expected.numpy(), rtol=1e-12)


def test_multilabel_margin_loss_reads_targets_up_to_the_first_minus_one():
    x = RNG.standard_normal((4, 5))
    targets = np.array([[3, 0, -1, 1, 2], [1, 2, 3, -1, 0], [0, 1, 2, 3, 4], [-1, 1, 2, 3, 4]])
    _agree(
        lambda i, **k: F.multilabel_margin_loss(i, bai.tensor(targets), **k),
        lambda i, **k: TF.multilabel_margin_loss(i, torch.tensor(targets), **k),
        [x],
        (0,),
    )
    one = F.multilabel_margin_loss(bai.tensor(x[0]), bai.tensor(targets[0]))
    expected = TF.multilabel_margin_loss(torch.tensor(x[0]), torch.tensor(targets[0]))
    np.testing.assert_allclose(one.numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss(swap):
    arrays = [RNG.standard_normal((5, 3)) for _ in range(3)]
    _agree(
        lambda a, q, n, **k: F.triplet_margin_with_distance_loss(a, q, n, swap=swap, **k),
        lambda a, q, n, **k: TF.triplet_margin_with_distance_loss(a, q, n, swap=swap, **k),
        arrays,
        (0, 1, 2),
    )
    cosine = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1.0 - F.cosine_similarity(a, b), margin=0.4
    )
    expected = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1.0 - TF.cosine_similarity(a, b), margin=0.4
    )(*(torch.tensor(a) for a in arrays))
    got = cosine(*(bai.tensor(a) for a in arrays))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)
    layer = nn.MultiMarginLoss(p=2)(bai.tensor(arrays[0]), bai.tensor(np.array([0, 1, 2, 0, 1])))
    reference = torch.nn.MultiMarginLoss(p=2)(
        torch.tensor(arrays[0]), torch.tensor(np.array([0, 1, 2, 0, 1]))
    )
    np.testing.assert_allclose(layer.numpy(), reference.numpy(), rtol=1e-12)
