"""More of nn.utils and nn.init against PyTorch: the weight_norm / spectral_norm hooks and their
removal, get_total_norm / clip_grads_with_norm_ / clip_grad_norm, conv-bn and linear-bn fusion,
skip_init, and nn.init.eye_ / dirac_ / sparse_."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import freeze
from buildingai.nn import init
from buildingai.nn import utils as ours_u
from buildingai.optim.clip import NonFiniteNormError

torch = pytest.importorskip("torch")
torch_u = torch.nn.utils

RNG = np.random.default_rng(1)


def _copy_state(torch_module, our_module) -> None:
    state = {key: value.detach().numpy() for key, value in torch_module.state_dict().items()}
    result = our_module.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


def _close(ours, theirs, atol=1e-12, rtol=1e-10):
    ours = ours.numpy() if isinstance(ours, bai.Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol)


def _layers(kind: str):
    if kind == "linear":
        return torch.nn.Linear(4, 3).double(), bai.nn.Linear(4, 3, dtype="float64"), (5, 4)
    if kind == "conv2d":
        return (
            torch.nn.Conv2d(3, 4, 3).double(),
            bai.nn.Conv2d(3, 4, 3, dtype="float64"),
            (2, 3, 5, 5),
        )
    return (
        torch.nn.ConvTranspose2d(3, 4, 3).double(),
        bai.nn.ConvTranspose2d(3, 4, 3, dtype="float64"),
        (2, 3, 4, 4),
    )


def _forward_backward(theirs, ours, input_shape, atol=1e-12):
    """Same outputs and same gradients for every parameter (by name)."""
    x = RNG.standard_normal(input_shape)
    out_theirs, out_ours = theirs(torch.tensor(x)), ours(bai.tensor(x))
    _close(out_ours, out_theirs, atol=atol)
    upstream = RNG.standard_normal(tuple(out_theirs.shape))
    (out_theirs * torch.tensor(upstream)).sum().backward()
    (out_ours * bai.tensor(upstream)).sum().backward()
    ours_named = dict(ours.named_parameters())
    assert list(ours_named) == [name for name, _ in theirs.named_parameters()]
    for name, param in theirs.named_parameters():
        _close(ours_named[name].grad, param.grad, atol=atol * 10)


# ----- the older weight_norm hook --------------------------------------------------------------
def test_weight_norm_hook_doc_example():
    nn = bai.nn
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        m = ours_u.weight_norm(nn.Linear(20, 40), name="weight")
    assert repr(m) == "Linear(in_features=20, out_features=40, bias=True)"
    assert m.weight_g.size() == (40, 1)
    assert m.weight_v.size() == (40, 20)
    ours_u.remove_weight_norm(m)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize(
    "kind, dim", [("linear", 0), ("linear", None), ("conv2d", 1), ("conv2d", 0)]
)
def test_weight_norm_hook_matches_pytorch(kind, dim):
    theirs, ours, input_shape = _layers(kind)
    _copy_state(theirs, ours)
    torch_u.weight_norm(theirs, dim=dim)
    ours_u.weight_norm(ours, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight_g, theirs.weight_g)
    _close(ours.weight, theirs.weight)  # computed at registration already
    with torch.no_grad():
        theirs.weight_g.mul_(1.5)  # a magnitude of its own
    _copy_state(theirs, ours)
    _forward_backward(theirs, ours, input_shape)
    _close(ours.weight, theirs.weight)
    torch_u.remove_weight_norm(theirs)
    ours_u.remove_weight_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.weight, bai.nn.Parameter)
    _close(ours.weight, theirs.weight)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_weight_norm_hook_errors():
    layer = ours_u.weight_norm(bai.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        ours_u.weight_norm(layer)
    ours_u.remove_weight_norm(layer)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        ours_u.remove_weight_norm(layer)


# ----- the older spectral_norm hook ------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, kwargs",
    [("linear", {}), ("linear", {"n_power_iterations": 2}), ("conv2d", {}), ("convt", {})],
)
def test_spectral_norm_hook_matches_pytorch(kind, kwargs):
    theirs, ours, input_shape = _layers(kind)
    torch_u.spectral_norm(theirs, **kwargs)
    ours_u.spectral_norm(ours, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    if kind == "convt":  # dim 1 by default for a transposed convolution
        assert tuple(ours.weight_u.shape) == (4,)
    _copy_state(theirs, ours)
    for _ in range(3):  # u and v advance on every training call
        for module in (theirs, ours):
            module.zero_grad()
        _forward_backward(theirs, ours, input_shape)
        _close(ours.weight_u, theirs.weight_u)
        _close(ours.weight_v, theirs.weight_v)
        _close(ours.weight, theirs.weight)
    theirs.eval()
    ours.eval()
    _forward_backward(theirs, ours, input_shape)
    torch_u.remove_spectral_norm(theirs)
    ours_u.remove_spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    _close(ours.weight, theirs.weight)


def test_spectral_norm_hook_errors():
    layer = ours_u.spectral_norm(bai.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        ours_u.spectral_norm(layer)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        ours_u.spectral_norm(bai.nn.Linear(3, 4), n_power_iterations=0)
    ours_u.remove_spectral_norm(layer)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        ours_u.remove_spectral_norm(layer)


# ----- gradient norms --------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf, -math.inf, 0.0])
def test_get_total_norm_matches_pytorch(norm_type):
    arrays = [RNG.standard_normal(shape) for shape in [(3, 4), (5,), (), (2, 2, 2)]]
    theirs = torch_u.get_total_norm([torch.tensor(a) for a in arrays], norm_type)
    ours = ours_u.get_total_norm([bai.tensor(a) for a in arrays], norm_type)
    assert ours.shape == () and ours.dtype == bai.float64
    _close(ours, theirs)
    single = ours_u.get_total_norm(bai.tensor(arrays[0]), norm_type)
    _close(single, torch_u.get_total_norm(torch.tensor(arrays[0]), norm_type))


def test_get_total_norm_edge_cases():
    empty = ours_u.get_total_norm([])
    assert empty.item() == 0.0 and empty.dtype == bai.float32
    mixed = ours_u.get_total_norm([bai.ones(3, dtype="float32"), bai.ones(2, dtype="float64")])
    assert mixed.dtype == bai.float64  # promoted, as torch.stack promotes
    np.testing.assert_allclose(mixed.item(), math.sqrt(5))
    infinite = [bai.tensor([1.0, math.inf])]
    assert ours_u.get_total_norm(infinite).item() == math.inf
    with pytest.raises(NonFiniteNormError, match=r"\[get_total_norm\]"):
        ours_u.get_total_norm(infinite, error_if_nonfinite=True)
    with pytest.raises(RuntimeError):  # NonFiniteNormError is a RuntimeError, as torch raises
        ours_u.get_total_norm([bai.tensor([math.nan])], error_if_nonfinite=True)


def _parameters_with_grads(arrays, grads, framework):
    if framework == "torch":
        params = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
        for param, grad in zip(params, grads):
            param.grad = torch.tensor(grad)
    else:
        params = [bai.nn.Parameter(bai.tensor(a)) for a in arrays]
        for param, grad in zip(params, grads):
            param.grad = bai.tensor(grad)
    return params


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grads_with_norm_matches_pytorch(max_norm):
    arrays = [RNG.standard_normal(shape) for shape in [(3, 4), (5,)]]
    grads = [RNG.standard_normal(a.shape) for a in arrays]
    theirs = _parameters_with_grads(arrays, grads, "torch")
    ours = _parameters_with_grads(arrays, grads, "ours")
    theirs_total = torch_u.get_total_norm([p.grad for p in theirs])
    ours_total = ours_u.get_total_norm([p.grad for p in ours])
    torch_u.clip_grads_with_norm_(theirs, max_norm, theirs_total)
    ours_u.clip_grads_with_norm_(ours, max_norm, ours_total)
    for mine, reference in zip(ours, theirs):
        _close(mine.grad, reference.grad)
    # a NaN norm spreads to the gradients, as in PyTorch
    ours_u.clip_grads_with_norm_(ours, 1.0, bai.tensor(math.nan))
    assert np.isnan(ours[0].grad.numpy()).all()
    ours_u.clip_grads_with_norm_([bai.nn.Parameter(bai.ones(2))], 1.0, bai.tensor(3.0))  # no grad


def test_clip_grad_norm_is_deprecated_and_clips_like_the_new_spelling():
    arrays = [RNG.standard_normal((4, 3))]
    grads = [RNG.standard_normal((4, 3)) * 10]
    theirs = _parameters_with_grads(arrays, grads, "torch")
    ours = _parameters_with_grads(arrays, grads, "ours")
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = ours_u.clip_grad_norm(ours, 1.0)
    with pytest.warns(FutureWarning):
        torch_total = torch_u.clip_grad_norm(theirs, 1.0)
    _close(total, torch_total)
    _close(ours[0].grad, theirs[0].grad)


def test_frozen_get_total_norm_matches_eager():
    frozen = freeze(
        lambda g: ours_u.get_total_norm([g, 2 * g], 3.0), [bai.TensorSpec((4, 3), "float32")]
    )
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    eager = ours_u.get_total_norm([bai.tensor(x), bai.tensor(2 * x)], 3.0)
    np.testing.assert_allclose(frozen(x).numpy(), eager.numpy(), rtol=1e-6)


# ----- fusion ----------------------------------------------------------------------------------
def _trained_batch_norm(torch_bn, our_bn, shape):
    """Running statistics of their own (a few training batches), then eval mode, in both."""
    with torch.no_grad():
        torch_bn.weight.copy_(torch.tensor(RNG.uniform(0.5, 2.0, torch_bn.num_features)))
        torch_bn.bias.copy_(torch.tensor(RNG.standard_normal(torch_bn.num_features)))
        for _ in range(3):
            torch_bn(torch.tensor(RNG.standard_normal(shape) * 2 + 1))
    _copy_state(torch_bn, our_bn)
    torch_bn.eval()
    our_bn.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_conv_then_bn(bias, transpose):
    if transpose:
        theirs_conv = torch.nn.ConvTranspose2d(3, 4, 3, bias=bias).double()
        ours_conv = bai.nn.ConvTranspose2d(3, 4, 3, bias=bias, dtype="float64")
    else:
        theirs_conv = torch.nn.Conv2d(3, 4, 3, bias=bias).double()
        ours_conv = bai.nn.Conv2d(3, 4, 3, bias=bias, dtype="float64")
    theirs_bn, ours_bn = torch.nn.BatchNorm2d(4).double(), bai.nn.BatchNorm2d(4, dtype="float64")
    _copy_state(theirs_conv, ours_conv)
    _trained_batch_norm(theirs_bn, ours_bn, (6, 4, 5, 5))
    theirs_conv.eval()
    ours_conv.eval()
    theirs_fused = torch_u.fuse_conv_bn_eval(theirs_conv, theirs_bn, transpose=transpose)
    ours_fused = ours_u.fuse_conv_bn_eval(ours_conv, ours_bn, transpose=transpose)
    assert type(ours_fused) is type(ours_conv) and ours_fused is not ours_conv
    assert isinstance(ours_fused.weight, bai.nn.Parameter)
    assert isinstance(ours_fused.bias, bai.nn.Parameter)
    assert ours_fused.bias.requires_grad == theirs_fused.bias.requires_grad == bias
    _close(ours_fused.weight, theirs_fused.weight)
    _close(ours_fused.bias, theirs_fused.bias)
    x = bai.tensor(RNG.standard_normal((2, 3, 6, 6)))
    _close(ours_fused(x), ours_bn(ours_conv(x)), atol=1e-12)
    if not bias:
        assert ours_conv.bias is None  # the original is left as it was


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("features", [5, 1])
def test_fuse_linear_bn_eval_matches_linear_then_bn(bias, features):
    theirs_fc = torch.nn.Linear(4, features, bias=bias).double()
    ours_fc = bai.nn.Linear(4, features, bias=bias, dtype="float64")
    theirs_bn = torch.nn.BatchNorm1d(features).double()
    ours_bn = bai.nn.BatchNorm1d(features, dtype="float64")
    _copy_state(theirs_fc, ours_fc)
    _trained_batch_norm(theirs_bn, ours_bn, (8, features))
    theirs_fc.eval()
    ours_fc.eval()
    theirs_fused = torch_u.fuse_linear_bn_eval(theirs_fc, theirs_bn)
    ours_fused = ours_u.fuse_linear_bn_eval(ours_fc, ours_bn)
    _close(ours_fused.weight, theirs_fused.weight)
    _close(ours_fused.bias, theirs_fused.bias)
    x = bai.tensor(RNG.standard_normal((3, 4)))
    _close(ours_fused(x), ours_bn(ours_fc(x)))


def test_fusion_weights_functions_and_errors():
    conv_w = bai.tensor(RNG.standard_normal((4, 3, 3, 3)), dtype="float32", requires_grad=True)
    stats = [bai.tensor(RNG.uniform(0.5, 2, 4)) for _ in range(4)]
    weight, bias = ours_u.fuse_conv_bn_weights(conv_w, None, stats[0], stats[1], 1e-5, None, None)
    assert weight.dtype == bai.float32 and bias.dtype == bai.float32  # conv_w's dtype
    assert weight.requires_grad and not bias.requires_grad  # as PyTorch: zero bias is fixed
    theirs = torch_u.fuse_conv_bn_weights(
        torch.tensor(conv_w.numpy()), None, torch.tensor(stats[0].numpy()),
        torch.tensor(stats[1].numpy()), 1e-5, None, None,
    )  # fmt: skip
    _close(weight, theirs[0], atol=1e-6, rtol=1e-6)
    _close(bias, theirs[1], atol=1e-6, rtol=1e-6)
    linear_w = bai.tensor(RNG.standard_normal((4, 2)))
    weight, bias = ours_u.fuse_linear_bn_weights(linear_w, None, *stats[:2], 1e-5, *stats[2:])
    theirs = torch_u.fuse_linear_bn_weights(
        torch.tensor(linear_w.numpy()), None, *(torch.tensor(s.numpy()) for s in stats[:2]),
        1e-5, *(torch.tensor(s.numpy()) for s in stats[2:]),
    )  # fmt: skip
    _close(weight, theirs[0])
    _close(bias, theirs[1])

    conv, bn = bai.nn.Conv2d(3, 4, 3), bai.nn.BatchNorm2d(4)
    with pytest.raises(ValueError, match=r"\[fuse_conv_bn_eval\] fusion is only for eval mode"):
        ours_u.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(ValueError, match="no running statistics"):
        ours_u.fuse_conv_bn_eval(
            conv.eval(), bai.nn.BatchNorm2d(4, track_running_stats=False).eval()
        )
    with pytest.raises(ValueError, match="linear.out_features == bn.num_features"):
        ours_u.fuse_linear_bn_eval(bai.nn.Linear(3, 4).eval(), bai.nn.BatchNorm1d(3).eval())


# ----- skip_init -------------------------------------------------------------------------------
def test_skip_init_doc_example():
    torch = bai  # noqa: F811 - the example as PyTorch documents it
    m = torch.nn.utils.skip_init(torch.nn.Linear, 5, 1)
    assert m.weight.shape == (1, 5)
    m2 = torch.nn.utils.skip_init(torch.nn.Linear, in_features=6, out_features=1)
    assert m2.weight.shape == (1, 6)


def test_skip_init_draws_nothing_and_leaves_later_modules_alone():
    bai.manual_seed(0)
    reference = bai.nn.Linear(4, 4).weight.numpy()
    bai.manual_seed(0)
    skipped = ours_u.skip_init(bai.nn.Linear, 4, 4, dtype="float64")
    assert skipped.weight.dtype == bai.float64 and skipped.weight.requires_grad
    # the generator was not advanced, and fills work again after the call
    np.testing.assert_array_equal(bai.nn.Linear(4, 4).weight.numpy(), reference)
    with pytest.raises(ValueError, match="expected a Module class"):
        ours_u.skip_init(lambda: None)

    class NoDevice(bai.nn.Module):
        def __init__(self, size):
            super().__init__()

    with pytest.raises(ValueError, match="must take a 'device' argument"):
        ours_u.skip_init(NoDevice, 3)


# ----- nn.init: eye_, dirac_, sparse_ ----------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (0, 3)])
def test_eye_matches_pytorch(shape):
    ours = init.eye_(bai.empty(*shape))
    theirs = torch.nn.init.eye_(torch.empty(shape))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match=r"\[eye_\] only tensors with 2 dimensions"):
        init.eye_(bai.empty(2, 3, 4))


def test_eye_keeps_the_parameter_and_its_gradient_flag():
    weight = bai.nn.Parameter(bai.empty(3, 5))
    assert init.eye_(weight) is weight and weight.requires_grad
    x = bai.tensor(RNG.standard_normal((2, 5)), dtype="float32")
    np.testing.assert_array_equal((x @ weight.T).numpy(), x.numpy()[:, :3])


@pytest.mark.parametrize(
    "shape, groups",
    [((3, 16, 5, 5), 1), ((3, 24, 5, 5), 3), ((4, 2, 3), 1), ((6, 4, 3, 4), 2), ((4, 2, 3, 3, 3), 2),
     ((8, 3, 2, 2), 4)],
)  # fmt: skip
def test_dirac_matches_pytorch(shape, groups):
    ours = init.dirac_(bai.empty(*shape, dtype="float64"), groups)
    theirs = torch.nn.init.dirac_(torch.empty(shape, dtype=torch.float64), groups)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_dirac_doc_example_and_identity_convolution():
    torch = bai  # noqa: F811 - PyTorch's example
    nn = bai.nn
    w = torch.empty(3, 16, 5, 5)
    nn.init.dirac_(w)
    w = torch.empty(3, 24, 5, 5)
    nn.init.dirac_(w, 3)
    conv = bai.nn.Conv2d(4, 4, 3, padding=1, bias=False)
    init.dirac_(conv.weight)
    x = bai.randn(2, 4, 5, 5)
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match=r"\[dirac_\] only tensors with 3, 4, or 5"):
        init.dirac_(bai.empty(3, 4))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(bai.empty(4, 2, 3), groups=3)


def test_sparse_zeroes_a_fraction_of_every_column():
    torch = bai  # noqa: F811 - PyTorch's example
    nn = bai.nn
    w = torch.empty(3, 5)
    nn.init.sparse_(w, sparsity=0.1)
    assert ((w.numpy() == 0).sum(axis=0) == 1).all()  # ceil(0.1 * 3) = 1 per column

    big = init.sparse_(bai.empty(200, 300, dtype="float64"), sparsity=0.25, std=0.5)
    values = big.numpy()
    assert ((values == 0).sum(axis=0) == 50).all()
    kept = values[values != 0]
    assert abs(kept.std() - 0.5) < 0.01 and abs(kept.mean()) < 0.01
    first = init.sparse_(bai.empty(6, 4), 0.5, generator=bai.Generator(seed=3))
    second = init.sparse_(bai.empty(6, 4), 0.5, generator=bai.Generator(seed=3))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    with pytest.raises(ValueError, match=r"\[sparse_\] only tensors with 2 dimensions"):
        init.sparse_(bai.empty(3), 0.5)


def test_init_has_every_pytorch_function():
    names = [name for name in dir(torch.nn.init) if not name.startswith("_")]
    functions = [name for name in names if callable(getattr(torch.nn.init, name))]
    functions = [
        name for name in functions if getattr(torch.nn.init, name).__module__ == "torch.nn.init"
    ]
    missing = [name for name in functions if not hasattr(init, name)]
    assert missing == []
    assert init.eye is init.eye_ and init.dirac is init.dirac_ and init.sparse is init.sparse_
