"""Normalisation functions and layers against PyTorch in float64: values, input and parameter
gradients, second derivatives, running statistics over several steps, train and eval modes."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.nn.norm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
    RMSNorm,
)
from tests.helpers import check_op, constant

torch = pytest.importorskip("torch")
TF = torch.nn.functional


# ----- functional forms -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "x_shape, normalized",
    [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 1), (1,)), ((0, 5), (5,)), ((6,), (6,))],
    ids=str,
)
def test_layer_norm_matches_pytorch(x_shape, normalized):
    check_op(
        lambda x, w, b: F.layer_norm(x, normalized, w, b),
        x_shape, normalized, normalized,
        torch_fn=lambda x, w, b: TF.layer_norm(x, normalized, w, b),
        gradgrad=True,
    )  # fmt: skip


def test_layer_norm_without_affine_and_with_eps():
    check_op(
        lambda x: F.layer_norm(x, (3, 4), eps=0.1), (2, 3, 4),
        torch_fn=lambda x: TF.layer_norm(x, (3, 4), eps=0.1), gradgrad=True,
    )  # fmt: skip
    check_op(
        lambda x, w: F.layer_norm(x, 4, w), (5, 4), (4,),
        torch_fn=lambda x, w: TF.layer_norm(x, (4,), w),
    )  # fmt: skip


def _torch_layer_norm_composite(x):
    # PyTorch's native layer_norm is exact to second order only; compare higher orders with
    # the formula written out
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)


def test_layer_norm_third_derivative():
    rng = np.random.default_rng(0)
    c, d = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = bai.Tensor(rng.standard_normal((3, 4)), requires_grad=True)
    xt = torch.tensor(x.numpy(), requires_grad=True)
    (g,) = bai.grad((F.layer_norm(x, (4,)) ** 3 * bai.Tensor(c)).sum(), x, create_graph=True)
    (h,) = bai.grad((g * g * bai.Tensor(d)).sum(), x, create_graph=True)
    (k,) = bai.grad((h**2).sum(), x)
    (gt,) = torch.autograd.grad(
        (_torch_layer_norm_composite(xt) ** 3 * torch.tensor(c)).sum(), xt, create_graph=True
    )
    (ht,) = torch.autograd.grad((gt * gt * torch.tensor(d)).sum(), xt, create_graph=True)
    (kt,) = torch.autograd.grad((ht**2).sum(), xt)
    np.testing.assert_allclose(k.numpy(), kt.numpy(), rtol=1e-8)


def test_layer_norm_with_affine_third_derivative():
    """The affine layer norm is one op; beyond first order its backward records the composite
    rules, which must stay exact."""
    rng = np.random.default_rng(3)
    c, d = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    values = [rng.standard_normal(shape) for shape in ((3, 4), (4,), (4,))]
    ours = [bai.Tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]

    def third(grad, layer_norm, tensor, inputs):
        x, w, b = inputs
        (g,) = grad((layer_norm(x, w, b) ** 3 * tensor(c)).sum(), x, create_graph=True)
        h = grad((g * g * tensor(d)).sum(), [x, w, b], create_graph=True)
        return grad(sum((part**2).sum() for part in h), [x, w, b])

    mine = third(bai.grad, lambda x, w, b: F.layer_norm(x, (4,), w, b), bai.Tensor, ours)
    reference = third(
        torch.autograd.grad,
        lambda x, w, b: _torch_layer_norm_composite(x) * w + b,
        torch.tensor,
        theirs,
    )
    for a, b in zip(mine, reference):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8)


@pytest.mark.parametrize(
    "x, layout",
    [
        (np.random.default_rng(4).standard_normal((6, 5, 8)), "rows"),
        (np.random.default_rng(5).standard_normal((8, 5, 6)).transpose(2, 1, 0), "strided"),
    ],
)
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_first_order_kernel_equals_the_recorded_rules(x, layout, with_bias):
    """First-order gradients come from one fused kernel (or, for strided inputs, from array
    operations); with create_graph they come from recorded Tensor rules. Both must agree."""
    rng = np.random.default_rng(6)
    w, b, g = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal(x.shape)
    results = []
    for create_graph in (False, True):
        inputs = [bai.Tensor(x, requires_grad=True), bai.Tensor(w, requires_grad=True)]
        if with_bias:
            inputs.append(bai.Tensor(b, requires_grad=True))
        out = F.layer_norm(inputs[0], (8,), *inputs[1:])
        grads = bai.grad(out, inputs, bai.Tensor(g), create_graph=create_graph)
        assert grads[0].requires_grad == create_graph  # recorded only with create_graph
        results.append([grad.numpy() for grad in grads])
    for fused, recorded in zip(*results):
        np.testing.assert_allclose(fused, recorded, rtol=1e-10, atol=1e-12)


def test_layer_norm_gradients_in_half_precision():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8)).astype(np.float16)
    w, g = rng.standard_normal(8).astype(np.float16), rng.standard_normal((4, 8)).astype(np.float16)
    ours = [bai.Tensor(x, requires_grad=True), bai.Tensor(w, requires_grad=True)]
    grads = bai.grad(F.layer_norm(ours[0], (8,), ours[1]), ours, bai.Tensor(g))
    theirs = [torch.tensor(v.astype(np.float32), requires_grad=True) for v in (x, w)]
    expected = torch.autograd.grad(
        TF.layer_norm(theirs[0], (8,), theirs[1]), theirs, torch.tensor(g.astype(np.float32))
    )
    for mine, reference in zip(grads, expected):
        assert mine.dtype == np.float16
        np.testing.assert_allclose(mine.numpy().astype(np.float32), reference.numpy(), atol=2e-2)


@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("x_shape, normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4))], ids=str)
def test_rms_norm_matches_pytorch(x_shape, normalized, eps):
    check_op(
        lambda x, w: F.rms_norm(x, normalized, w, eps), x_shape, normalized,
        torch_fn=lambda x, w: TF.rms_norm(x, normalized, w, eps), gradgrad=True,
    )  # fmt: skip
    check_op(
        lambda x: F.rms_norm(x, normalized, eps=eps), x_shape,
        torch_fn=lambda x: TF.rms_norm(x, normalized, eps=eps),
    )  # fmt: skip


def test_rms_norm_default_eps_is_the_dtypes():
    x = np.full((2, 3), 1e-5, dtype=np.float32)
    ours = F.rms_norm(bai.Tensor(x), (3,)).numpy()
    np.testing.assert_allclose(ours, TF.rms_norm(torch.tensor(x), (3,)).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "x_shape, groups", [((2, 6, 3), 3), ((2, 4, 2, 2), 2), ((3, 4), 4), ((1, 6, 5), 1)], ids=str
)
def test_group_norm_matches_pytorch(x_shape, groups):
    channels = (x_shape[1],)
    check_op(
        lambda x, w, b: F.group_norm(x, groups, w, b), x_shape, channels, channels,
        torch_fn=lambda x, w, b: TF.group_norm(x, groups, w, b), gradgrad=True,
    )  # fmt: skip


@pytest.mark.parametrize("x_shape", [(5, 3), (4, 3, 2), (2, 3, 2, 2), (2, 3, 1, 2, 2)], ids=str)
def test_batch_norm_training_matches_pytorch(x_shape):
    channels = (x_shape[1],)
    check_op(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x_shape, channels,
        channels, torch_fn=lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        gradgrad=True,
    )  # fmt: skip


def test_batch_norm_eval_uses_running_statistics():
    mean, var = constant([0.5, -1.0, 2.0]), constant([0.5, 2.0, 1.5])
    check_op(
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-3),
        (4, 3, 2), mean, var, (3,), (3,),
        torch_fn=lambda x, m, v, w, b: TF.batch_norm(x, m, v, w, b, training=False, eps=1e-3),
        gradgrad=True,
    )  # fmt: skip


def test_batch_norm_functional_updates_running_statistics_in_place():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3, 4))
    ours_stats = [bai.zeros(3, dtype="float64"), bai.ones(3, dtype="float64")]
    theirs_stats = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)]
    for step in range(3):
        F.batch_norm(bai.Tensor(x + step), *ours_stats, training=True, momentum=0.3)
        TF.batch_norm(torch.tensor(x + step), *theirs_stats, training=True, momentum=0.3)
    for ours, theirs in zip(ours_stats, theirs_stats):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_standardize_keeps_dtype_and_handles_half_precision():
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float16)
    out = F.layer_norm(bai.Tensor(x), (8,))
    assert out.dtype == np.float16
    expected = TF.layer_norm(torch.tensor(x.astype(np.float32)), (8,)).numpy()
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected, atol=2e-3)
    assert F.layer_norm(bai.zeros(2, 3), (3,)).dtype == np.float32


# ----- modules -------------------------------------------------------------------------------------
def _copy_state(source, target) -> None:
    """Copy a module's state dict into the other framework's module."""
    if isinstance(target, torch.nn.Module):
        target.load_state_dict({k: torch.tensor(v.numpy()) for k, v in source.state_dict().items()})
    else:
        target.load_state_dict({k: v.numpy() for k, v in source.state_dict().items()})


def _assert_same_state(ours, theirs) -> None:
    theirs_state = theirs.state_dict()
    ours_state = ours.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key, value in ours_state.items():
        np.testing.assert_allclose(
            value.numpy(), theirs_state[key].numpy(), rtol=1e-12, err_msg=key
        )


def _run_both(ours, theirs, x, seed=0):
    """One forward and backward in each framework; compares outputs and all gradients."""
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x.copy(), requires_grad=True)
    ours_out, theirs_out = ours(ours_x), theirs(theirs_x)
    np.testing.assert_allclose(
        ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-10, atol=1e-12
    )
    upstream = np.random.default_rng(seed).standard_normal(x.shape)
    (ours_out * bai.Tensor(upstream)).sum().backward()
    (theirs_out * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    theirs_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs_params)
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(
            param.grad.numpy(), theirs_params[name].grad.numpy(), rtol=1e-9, atol=1e-12
        )


def _randomise(theirs) -> None:
    """Non-trivial affine parameters, so a mix-up of weight and bias shows."""
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for param in theirs.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=param.dtype))


BATCH_NORMS = [
    ("1d-2D", lambda m: m.BatchNorm1d(3), (6, 3)),
    ("1d-3D", lambda m: m.BatchNorm1d(3, momentum=None), (4, 3, 5)),
    ("2d", lambda m: m.BatchNorm2d(3, momentum=0.3), (4, 3, 2, 2)),
    ("2d-no-affine", lambda m: m.BatchNorm2d(3, affine=False), (2, 3, 2, 3)),
    ("2d-no-bias", lambda m: m.BatchNorm2d(3, bias=False), (2, 3, 2, 1)),
    ("2d-no-tracking", lambda m: m.BatchNorm2d(3, track_running_stats=False), (3, 3, 2, 2)),
    ("3d", lambda m: m.BatchNorm3d(2, momentum=None, eps=1e-3), (2, 2, 2, 2, 2)),
]


class _OurModules:
    BatchNorm1d, BatchNorm2d, BatchNorm3d = BatchNorm1d, BatchNorm2d, BatchNorm3d


@pytest.mark.parametrize("name, make, shape", BATCH_NORMS, ids=[b[0] for b in BATCH_NORMS])
def test_batch_norm_modules_train_and_eval_match_pytorch(name, make, shape):
    ours, theirs = make(_OurModules).to(bai.float64), make(torch.nn).double()
    _randomise(theirs)
    _copy_state(theirs, ours)
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    for step in range(3):  # running statistics follow torch's step by step
        _run_both(ours, theirs, rng.standard_normal(shape) * (step + 1) + step, seed=step)
        _assert_same_state(ours, theirs)
    ours.eval()
    theirs.eval()
    _run_both(ours, theirs, rng.standard_normal(shape), seed=9)
    _assert_same_state(ours, theirs)


def test_batch_norm_state_copies_back_to_pytorch():
    ours, theirs = BatchNorm1d(3).to(bai.float64), torch.nn.BatchNorm1d(3).double()
    x = np.random.default_rng(4).standard_normal((5, 3))
    ours(bai.Tensor(x))
    ours(bai.Tensor(x * 2))
    _copy_state(ours, theirs)
    assert int(theirs.num_batches_tracked) == 2
    _assert_same_state(ours, theirs)
    ours.eval()
    theirs.eval()
    _run_both(ours, theirs, x)


def test_batch_norm_buffers_and_defaults():
    layer = BatchNorm2d(4)
    assert [n for n, _ in layer.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert layer.num_batches_tracked.dtype == np.int64 and layer.num_batches_tracked.shape == ()
    assert layer.running_mean.dtype == np.float32
    assert np.all(layer.running_var.numpy() == 1) and np.all(layer.weight.numpy() == 1)
    layer(bai.ones(2, 4, 3, 3))
    assert int(layer.num_batches_tracked.item()) == 1
    layer.reset_running_stats()
    assert int(layer.num_batches_tracked.item()) == 0
    assert list(BatchNorm1d(3, track_running_stats=False).state_dict()) == ["weight", "bias"]


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda m: m.LayerNorm(5), (3, 5)),
        (lambda m: m.LayerNorm([2, 3], eps=1e-3), (4, 2, 3)),
        (lambda m: m.LayerNorm(4, bias=False), (2, 4)),
        (lambda m: m.LayerNorm(4, elementwise_affine=False), (2, 3, 4)),
        (lambda m: m.GroupNorm(2, 4), (3, 4, 5)),
        (lambda m: m.GroupNorm(3, 6, affine=False), (2, 6, 2, 2)),
        (lambda m: m.GroupNorm(1, 2, bias=False), (2, 2, 3)),
        (lambda m: m.RMSNorm(5), (3, 5)),
        (lambda m: m.RMSNorm([2, 3], eps=1e-4), (2, 2, 3)),
        (lambda m: m.RMSNorm(3, elementwise_affine=False), (4, 3)),
    ],
    ids=lambda v: "" if callable(v) else str(v),
)
def test_per_sample_norm_modules_match_pytorch(make, shape):
    import buildingai.nn.norm as ours_nn

    ours, theirs = make(ours_nn).to(bai.float64), make(torch.nn).double()
    _randomise(theirs)
    _copy_state(theirs, ours)
    assert repr(ours) == repr(theirs)
    _run_both(ours, theirs, np.random.default_rng(2).standard_normal(shape))
    ours.eval()  # no mode dependence
    theirs.eval()
    _run_both(ours, theirs, np.random.default_rng(3).standard_normal(shape))


def test_norm_modules_initialise_like_pytorch():
    for ours, theirs in [
        (LayerNorm(3), torch.nn.LayerNorm(3)),
        (GroupNorm(1, 3), torch.nn.GroupNorm(1, 3)),
    ]:
        _assert_same_state(ours.to(bai.float64), theirs.double())
    assert LayerNorm(3, dtype="float64").weight.dtype == np.float64
    assert RMSNorm(3).weight.shape == (3,)


# ----- errors --------------------------------------------------------------------------------------
def test_layer_norm_shape_errors_name_both_shapes():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[layer_norm\] normalized_shape \(4,\) does not match the last dimensions of "
        r"input \(2, 5\)",
    ):
        F.layer_norm(bai.zeros(2, 5), (4,))
    with pytest.raises(bai.ShapeError, match=r"\[layer_norm\] weight has shape \(3,\) but \(5,\)"):
        F.layer_norm(bai.zeros(2, 5), (5,), bai.ones(3))
    with pytest.raises(bai.ShapeError, match=r"\[rms_norm\] normalized_shape \(3,\).*\(3, 4\)"):
        F.rms_norm(bai.zeros(3, 4), 3)
    with pytest.raises(bai.ShapeError, match=r"\[layer_norm\].*\(in LayerNorm\)"):
        LayerNorm(4)(bai.zeros(2, 5))


def test_batch_norm_errors():
    with pytest.raises(bai.ArgumentError, match=r"more than 1 value per channel.*\(1, 3\)"):
        F.batch_norm(bai.zeros(1, 3), None, None, training=True)
    with pytest.raises(bai.ShapeError, match=r"\[BatchNorm1d\] expected 2D or 3D input, got 4D"):
        BatchNorm1d(3)(bai.zeros(2, 3, 4, 4))
    with pytest.raises(
        bai.ShapeError, match=r"\[BatchNorm2d\] expected 3 channels.*\(2, 4, 2, 2\)"
    ):
        BatchNorm2d(3)(bai.zeros(2, 4, 2, 2))
    with pytest.raises(bai.ShapeError, match=r"\[batch_norm\] running_mean has shape \(2,\)"):
        F.batch_norm(bai.zeros(2, 3), bai.zeros(2), bai.ones(3))
    with pytest.raises(bai.ArgumentError, match="running_mean and running_var are required"):
        F.batch_norm(bai.zeros(2, 3), None, None, training=False)


def test_group_norm_and_dtype_errors():
    with pytest.raises(bai.ShapeError, match=r"\[group_norm\] 6 channels cannot be split into 4"):
        F.group_norm(bai.zeros(2, 6, 3), 4)
    with pytest.raises(ValueError, match="num_channels \\(6\\) must be divisible by num_groups"):
        GroupNorm(4, 6)
    with pytest.raises(bai.DTypeError, match=r"\[standardize\] expects a floating-point tensor"):
        F.layer_norm(bai.Tensor(np.ones((2, 3), dtype=np.int64)), (3,))


def test_standardize_guards_its_saved_input_against_in_place_changes():
    x = bai.Tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    y = x * 1
    out = F.layer_norm(y, (3,))
    with bai.no_grad():
        y.mul_(2)
    with pytest.raises(bai.AutogradError, match=r"\[standardize\] backward needs an input"):
        out.sum().backward()
