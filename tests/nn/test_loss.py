"""Losses against PyTorch in float64 (values, gradients, second derivatives) for every
reduction, weights, ignored targets, label smoothing and probability targets; stability for
huge logits in float32; module forms; error messages."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
import buildingai.nn.loss as L
from tests.helpers import Arg, check_op, constant

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["mean", "sum", "none"]


def both(name, **kwargs):
    """(ours, theirs): the loss of the same name in each library with the same arguments."""
    return (
        lambda *args, **more: getattr(F, name)(*args, **kwargs, **more),
        lambda *args, **more: getattr(TF, name)(*args, **kwargs, **more),
    )


def probabilities(*shape) -> Arg:
    return Arg(shape, low=0.05, high=0.95)


# ----- regression -------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 3), (5,), (), (2, 0, 3)], ids=str)
def test_mse_and_l1_match_pytorch(shape, reduction):
    ours, theirs = both("mse_loss", reduction=reduction)
    check_op(ours, shape, shape, torch_fn=theirs, gradgrad=True)
    ours, theirs = both("l1_loss", reduction=reduction)
    check_op(ours, shape, shape, torch_fn=theirs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_elementwise_weights(name, reduction):
    ours, theirs = both(name, reduction=reduction)
    weight = constant(np.random.default_rng(7).uniform(0.1, 2.0, (4, 3)))
    check_op(
        lambda x, t, w: ours(x, t, weight=w), (4, 3), (4, 3), weight,
        torch_fn=lambda x, t, w: theirs(x, t, weight=w),
    )  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.5, 3.0])
def test_huber_matches_pytorch(delta, reduction):
    ours, theirs = both("huber_loss", reduction=reduction, delta=delta)
    check_op(ours, (6, 4), (6, 4), torch_fn=theirs, gradgrad=True)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
def test_smooth_l1_matches_pytorch(beta, reduction):
    ours, theirs = both("smooth_l1_loss", reduction=reduction, beta=beta)
    check_op(ours, (6, 4), (6, 4), torch_fn=theirs)


# ----- cross-entropy and NLL -----------------------------------------------------------------------
WEIGHT5 = np.array([0.5, 2.0, 1.0, 0.25, 1.5])
CLASS_CASES = [
    ("2d", (4, 5), [1, 4, 0, 2]),
    ("2d-ignored", (4, 5), [1, -100, 3, -100]),
    ("nd", (2, 5, 3), [[0, 4, -100], [2, 2, 1]]),
    ("4d", (2, 5, 2, 2), [[[0, 1], [2, 3]], [[4, -100], [1, 1]]]),
    ("unbatched", (5,), 3),
    ("empty", (0, 5), np.zeros((0,), dtype=np.int64)),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("name, shape, target", CLASS_CASES, ids=[c[0] for c in CLASS_CASES])
def test_cross_entropy_and_nll_with_class_indices(name, shape, target, weighted, reduction):
    target = constant(np.asarray(target, dtype=np.int64))
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = WEIGHT5
    ours, theirs = _with_weight("cross_entropy", kwargs)
    check_op(ours, shape, target, torch_fn=theirs, gradgrad=reduction == "mean" and name != "empty")
    ours, theirs = _with_weight("nll_loss", kwargs)
    check_op(ours, Arg(shape, low=-3.0, high=-0.1), target, torch_fn=theirs)


def _with_weight(name, kwargs):
    """Like ``both``, turning a NumPy ``weight`` into each library's tensor."""
    weight = kwargs.get("weight")
    ours_kwargs, theirs_kwargs = dict(kwargs), dict(kwargs)
    if weight is not None:
        ours_kwargs["weight"] = bai.Tensor(weight)
        theirs_kwargs["weight"] = torch.tensor(weight)
    return (
        lambda *args: getattr(F, name)(*args, **ours_kwargs),
        lambda *args: getattr(TF, name)(*args, **theirs_kwargs),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("smoothing", [0.1, 1.0])
def test_cross_entropy_label_smoothing(smoothing, weighted, reduction):
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}
    if weighted:
        kwargs["weight"] = WEIGHT5
    ours, theirs = _with_weight("cross_entropy", kwargs)
    for shape, target in [((4, 5), [1, -100, 3, 0]), ((2, 5, 3), [[0, 4, -100], [2, 2, 1]])]:
        target = constant(np.asarray(target, dtype=np.int64))
        check_op(ours, shape, target, torch_fn=theirs, gradgrad=reduction == "mean")


def test_cross_entropy_ignore_index_other_than_default():
    ours, theirs = both("cross_entropy", ignore_index=2, label_smoothing=0.2)
    check_op(ours, (5, 4), constant(np.array([2, 0, 2, 3, 1])), torch_fn=theirs)


def test_cross_entropy_all_targets_ignored_gives_nan_like_pytorch():
    logits = bai.Tensor(np.zeros((2, 3)))
    ours = F.cross_entropy(logits, bai.Tensor(np.array([-100, -100])))
    theirs = TF.cross_entropy(torch.zeros(2, 3, dtype=torch.float64), torch.tensor([-100, -100]))
    assert np.isnan(ours.item()) and np.isnan(theirs.item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3), (5,)], ids=str)
def test_cross_entropy_with_class_probabilities(shape, smoothing, weighted, reduction):
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}
    if weighted:
        kwargs["weight"] = WEIGHT5
    ours, theirs = _with_weight("cross_entropy", kwargs)
    rng = np.random.default_rng(3)
    target = np.moveaxis(
        rng.dirichlet(np.ones(5), shape[:1] + shape[2:]), -1, min(1, len(shape) - 1)
    )
    if len(shape) == 1:
        target = rng.dirichlet(np.ones(5))
    target = constant(target, requires_grad=True)
    check_op(ours, shape, target, torch_fn=theirs, gradgrad=reduction == "mean")


def test_cross_entropy_probabilities_empty_batch_mean_is_nan():
    ours = F.cross_entropy(bai.zeros(0, 3, dtype="float64"), bai.zeros(0, 3, dtype="float64"))
    assert np.isnan(ours.item())


# ----- binary losses -----------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
def test_binary_cross_entropy_matches_pytorch(weighted, reduction):
    weight = constant(np.random.default_rng(1).uniform(0.5, 2.0, (3, 4)))
    if weighted:
        check_op(
            lambda x, t, w: F.binary_cross_entropy(x, t, w, reduction=reduction),
            probabilities(3, 4), Arg((3, 4), low=0.0, high=1.0), weight,
            torch_fn=lambda x, t, w: TF.binary_cross_entropy(x, t, w, reduction=reduction),
            gradgrad=True,
        )  # fmt: skip
    else:
        ours, theirs = both("binary_cross_entropy", reduction=reduction)
        check_op(
            ours,
            probabilities(
                5,
            ),
            Arg((5,), low=0.0, high=1.0),
            torch_fn=theirs,
            gradgrad=True,
        )


def test_binary_cross_entropy_clamps_logs_at_minus_100():
    x = np.array([0.0, 1.0, 0.0, 1.0, 1e-50])
    t = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours = F.binary_cross_entropy(ours_x, bai.Tensor(t), reduction="none")
    theirs = TF.binary_cross_entropy(theirs_x, torch.tensor(t), reduction="none")
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy())
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy())
    assert np.all(np.isfinite(ours_x.grad.numpy()))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3), (3,)], ids=str)
def test_bce_with_logits_matches_pytorch(shape, reduction):
    ours, theirs = both("binary_cross_entropy_with_logits", reduction=reduction)
    target = Arg(shape, low=0.0, high=1.0)
    check_op(ours, Arg(shape, low=-6, high=6), target, torch_fn=theirs, gradgrad=True)
    rng = np.random.default_rng(2)
    pos_weight = constant(rng.uniform(0.5, 3.0, shape[-1:]))
    weight = constant(rng.uniform(0.5, 2.0, shape))
    check_op(
        lambda x, t, w, p: F.binary_cross_entropy_with_logits(
            x, t, w, reduction=reduction, pos_weight=p
        ),
        Arg(shape, low=-6, high=6), target, weight, pos_weight,
        torch_fn=lambda x, t, w, p: TF.binary_cross_entropy_with_logits(
            x, t, w, reduction=reduction, pos_weight=p
        ),
        gradgrad=True,
    )  # fmt: skip


# ----- distributions and embeddings ---------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div_matches_pytorch(reduction):
    rng = np.random.default_rng(4)
    target = rng.dirichlet(np.ones(4), 3)
    target[0, 1] = 0.0  # 0 log 0 = 0
    log_input = Arg((3, 4), low=-3.0, high=-0.1)
    ours, theirs = both("kl_div", reduction=reduction)
    check_op(ours, log_input, constant(target), torch_fn=theirs, gradgrad=True)
    ours, theirs = both("kl_div", reduction=reduction, log_target=True)
    check_op(ours, log_input, Arg((3, 4), low=-3.0, high=-0.1), torch_fn=theirs, gradgrad=True)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.5])
def test_cosine_embedding_loss_matches_pytorch(margin, reduction):
    ours, theirs = both("cosine_embedding_loss", margin=margin, reduction=reduction)
    target = constant(np.array([1, -1, 1, -1, -1]))
    check_op(ours, (5, 3), (5, 3), target, torch_fn=theirs)
    check_op(ours, (4,), (4,), constant(np.array(-1)), torch_fn=theirs)


# ----- stability ---------------------------------------------------------------------------------------
def _float32_pair(values):
    return (
        bai.Tensor(np.asarray(values, dtype=np.float32), requires_grad=True),
        torch.tensor(np.asarray(values, dtype=np.float32), requires_grad=True),
    )


def _compare_float32(ours_in, theirs_in, ours_out, theirs_out):
    assert ours_out.dtype == np.float32
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-6)
    ours_out.sum().backward()
    theirs_out.sum().backward()
    assert np.all(np.isfinite(ours_in.grad.numpy()))
    np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_is_stable_for_huge_logits(smoothing):
    logits = [[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [1e4, 1e4, -1e4]]
    ours_in, theirs_in = _float32_pair(logits)
    target = np.array([1, 2, 2])
    ours = F.cross_entropy(ours_in, bai.Tensor(target), label_smoothing=smoothing)
    theirs = TF.cross_entropy(theirs_in, torch.tensor(target), label_smoothing=smoothing)
    assert np.isfinite(ours.item())
    _compare_float32(ours_in, theirs_in, ours, theirs)


def test_bce_with_logits_is_stable_for_huge_logits():
    ours_in, theirs_in = _float32_pair([1e4, -1e4, 1e4, -1e4, 0.0])
    target = np.array([0.0, 1.0, 1.0, 0.0, 0.5], dtype=np.float32)
    pos_weight = np.float32(2.0)
    ours = F.binary_cross_entropy_with_logits(
        ours_in, bai.Tensor(target), reduction="none", pos_weight=bai.Tensor(pos_weight)
    )
    theirs = TF.binary_cross_entropy_with_logits(
        theirs_in, torch.tensor(target), reduction="none", pos_weight=torch.tensor(pos_weight)
    )
    _compare_float32(ours_in, theirs_in, ours, theirs)


# ----- modules ----------------------------------------------------------------------------------------
MODULES = [
    ("MSELoss", {}, "regression"),
    ("L1Loss", {"reduction": "sum"}, "regression"),
    ("HuberLoss", {"delta": 0.5}, "regression"),
    ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}, "regression"),
    ("CrossEntropyLoss", {"weight": WEIGHT5, "label_smoothing": 0.1}, "classes"),
    ("CrossEntropyLoss", {"ignore_index": 1, "reduction": "sum"}, "classes"),
    ("NLLLoss", {"weight": WEIGHT5, "ignore_index": 0}, "classes"),
    ("BCELoss", {"weight": np.linspace(0.5, 1.5, 5)}, "binary"),
    ("BCEWithLogitsLoss", {"pos_weight": np.linspace(0.5, 3, 5)}, "binary"),
    ("BCEWithLogitsLoss", {"weight": np.linspace(0.5, 1.5, 5), "reduction": "sum"}, "binary"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, "regression"),
]


@pytest.mark.parametrize("name, kwargs, kind", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_match_pytorch(name, kwargs, kind):
    ours = getattr(L, name)(
        **{k: bai.Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    )
    theirs = getattr(torch.nn, name)(
        **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 5))
    if kind == "classes":
        target = np.array([1, 0, 4, 2])
        x = x if name == "CrossEntropyLoss" else np.log(rng.dirichlet(np.ones(5), 4))
    elif kind == "binary":
        target = rng.uniform(0, 1, (4, 5))
        x = 1 / (1 + np.exp(-x)) if name == "BCELoss" else x
    else:
        target = rng.standard_normal((4, 5))
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_out = ours(ours_x, bai.Tensor(target))
    theirs_out = theirs(theirs_x, torch.tensor(target))
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-12)
    ours_out.sum().backward()
    theirs_out.sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10)


def test_loss_module_buffers_move_and_save():
    loss = L.CrossEntropyLoss(weight=bai.Tensor(np.ones(3, dtype=np.float32)))
    assert list(loss.state_dict()) == ["weight"]
    loss.to(bai.float64)
    assert loss.weight.dtype == np.float64
    assert list(L.BCEWithLogitsLoss(pos_weight=bai.ones(2)).state_dict()) == ["pos_weight"]
    assert L.MSELoss(size_average=False).reduction == "sum"
    assert L.MSELoss(reduce=False).reduction == "none"


def test_cosine_embedding_loss_module():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    target = np.array([1, -1, -1])
    ours = L.CosineEmbeddingLoss(margin=0.1)(bai.Tensor(a), bai.Tensor(b), bai.Tensor(target))
    theirs = torch.nn.CosineEmbeddingLoss(margin=0.1)(
        torch.tensor(a), torch.tensor(b), torch.tensor(target)
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


# ----- errors ---------------------------------------------------------------------------------------
def test_shape_mismatch_names_the_loss_and_both_shapes():
    for name in ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "kl_div"]:
        with pytest.raises(
            bai.ShapeError, match=rf"\[{name}\] input \(4, 3\) and target \(4,\) have different"
        ):
            getattr(F, name)(bai.zeros(4, 3), bai.zeros(4))
    with pytest.raises(
        bai.ShapeError,
        match=r"\[binary_cross_entropy_with_logits\] input \(2, 1\) and target \(2,\)",
    ):
        F.binary_cross_entropy_with_logits(bai.zeros(2, 1), bai.zeros(2))
    with pytest.raises(
        bai.ShapeError,
        match=r"\[cross_entropy\] target \(3,\) does not fit input \(4, 5\): class-index "
        r"targets must have shape \(4,\)",
    ):
        F.cross_entropy(bai.zeros(4, 5), bai.Tensor(np.zeros(3, dtype=np.int64)))
    with pytest.raises(bai.ShapeError, match=r"\[mse_loss\].*\(in MSELoss\)"):
        L.MSELoss()(bai.zeros(4, 3), bai.zeros(3, 4))
    with pytest.raises(bai.ShapeError, match=r"\[cosine_embedding_loss\] expects input1"):
        F.cosine_embedding_loss(bai.zeros(3, 2), bai.zeros(3, 2), bai.zeros(2))
    with pytest.raises(bai.ShapeError, match=r"\[mse_loss\] weight \(3,\) and input \(2, 3\)"):
        F.mse_loss(bai.zeros(2, 3), bai.zeros(2, 3), weight=bai.ones(3))


def test_target_class_out_of_range():
    with pytest.raises(
        bai.IndexingError,
        match=r"\[cross_entropy\] target class 5 is out of range for 5 classes \(input \(3, 5\)",
    ):
        F.cross_entropy(bai.zeros(3, 5), bai.Tensor(np.array([0, 5, 1])))
    with pytest.raises(IndexError, match=r"\[nll_loss\] target class -1 is out of range"):
        F.nll_loss(bai.zeros(3, 5), bai.Tensor(np.array([0, -1, 1])))
    with pytest.raises(bai.IndexingError, match=r"target class 3 .*\(in CrossEntropyLoss\)"):
        L.CrossEntropyLoss()(bai.zeros(2, 3, 4), bai.Tensor(np.array([[0, 1, 2, 3], [0, 0, 0, 0]])))


def test_argument_errors():
    with pytest.raises(bai.ArgumentError, match=r"\[mse_loss\] reduction 'avg' is not valid"):
        F.mse_loss(bai.zeros(2), bai.zeros(2), reduction="avg")
    with pytest.raises(bai.ArgumentError, match=r"\[cross_entropy\] ignore_index is not supported"):
        F.cross_entropy(bai.zeros(2, 3), bai.zeros(2, 3), ignore_index=1)
    with pytest.raises(bai.ArgumentError, match=r"label_smoothing must be in \[0, 1\]"):
        F.cross_entropy(bai.zeros(2, 3), bai.Tensor(np.array([0, 1])), label_smoothing=1.5)
    with pytest.raises(
        bai.ArgumentError,
        match=r"\[binary_cross_entropy\] all elements of input should be between 0",
    ):
        F.binary_cross_entropy(bai.Tensor(np.array([0.5, 1.5])), bai.zeros(2))
    with pytest.raises(
        bai.DTypeError, match=r"\[cross_entropy\] class-index targets must be integers"
    ):
        F.cross_entropy(bai.zeros(4, 5), bai.zeros(4))
    with pytest.raises(
        bai.ShapeError, match=r"\[nll_loss\] weight has shape \(2,\) but the input has 5"
    ):
        F.nll_loss(bai.zeros(4, 5), bai.Tensor(np.zeros(4, dtype=np.int64)), weight=bai.ones(2))
