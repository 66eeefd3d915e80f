"""Three-dimensional pooling functions and layers against PyTorch in float64: values, returned
indices, gradients, second derivatives, ties, unpooling, reprs, errors, and a traced call."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (function name, input shape, positional args, keyword args)
POOL3D_CASES = [
    ("max_pool3d", (2, 2, 4, 6, 5), (2,), {}),
    ("max_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {}),
    ("max_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {"ceil_mode": True}),
    ("max_pool3d", (1, 2, 5, 5, 6), (2, 2, 1), {"ceil_mode": True}),  # a last window dropped
    ("max_pool3d", (2, 2, 5, 7, 6), ((3, 2, 3), (2, 1, 2), (1, 1, 0)), {"dilation": (1, 2, 1)}),
    ("max_pool3d", (1, 2, 7, 6, 6), ((2, 3, 2),), {"stride": (1, 2, 2), "dilation": 2,
                                                   "ceil_mode": True}),
    ("max_pool3d", (2, 5, 4, 6), (2, 1), {}),  # unbatched, overlapping windows
    ("max_pool3d", (1, 2, 3, 4, 5), ((3, 4, 5),), {}),  # one window
    ("max_pool3d", (2, 2, 6, 3, 4), ((2, 1, 1),), {}),  # depth only
    ("max_pool3d", (2, 2, 3, 6, 4), ((1, 2, 2), (1, 2, 1)), {}),  # planes only
    ("max_pool3d", (2, 2, 4, 5, 5), ((2,),), {"stride": (1,)}),  # one-element tuples
    ("avg_pool3d", (2, 2, 4, 6, 5), (2,), {}),
    ("avg_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {}),
    ("avg_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {"count_include_pad": False}),
    ("avg_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {"ceil_mode": True}),
    ("avg_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("avg_pool3d", (2, 2, 5, 7, 6), ((3, 2, 3), (2, 3, 1), (1, 1, 0)), {"divisor_override": 5}),
    ("avg_pool3d", (2, 2, 6, 3, 4), ((3, 1, 1), 2, (1, 0, 0)), {"divisor_override": 2}),
    ("avg_pool3d", (2, 2, 3, 6, 5), ((1, 3, 2), (1, 2, 2), (0, 1, 1)),
     {"count_include_pad": False, "ceil_mode": True}),
    ("avg_pool3d", (2, 5, 4, 6), (2, 1), {}),  # unbatched
    ("avg_pool3d", (1, 2, 3, 4, 5), ((3, 4, 5),), {}),  # one window, the whole volume
    ("adaptive_avg_pool3d", (2, 2, 6, 6, 4), ((2, 3, 2),), {}),  # windows that tile
    ("adaptive_avg_pool3d", (2, 2, 7, 6, 5), ((3, 4, 3),), {}),  # uneven windows
    ("adaptive_avg_pool3d", (2, 2, 7, 6, 5), ((None, 4, None),), {}),
    ("adaptive_avg_pool3d", (2, 2, 7, 6, 5), ((2, None, None),), {}),  # depth only
    ("adaptive_avg_pool3d", (2, 2, 4, 5, 6), (1,), {}),  # global average pooling
    ("adaptive_avg_pool3d", (2, 3, 4, 5), (6,), {}),  # unbatched, upsampling: windows overlap
    ("adaptive_max_pool3d", (2, 2, 6, 6, 4), ((2, 3, 2),), {}),
    ("adaptive_max_pool3d", (2, 2, 7, 6, 5), ((3, 4, 3),), {}),
    ("adaptive_max_pool3d", (2, 2, 7, 6, 5), ((None, 4, 2),), {}),
    ("adaptive_max_pool3d", (2, 2, 7, 6, 5), ((3, None, None),), {}),
    ("adaptive_max_pool3d", (2, 2, 4, 5, 6), (1,), {}),
    ("adaptive_max_pool3d", (2, 3, 4, 5), ((6, 4, 5),), {}),  # unbatched, upsampling
]  # fmt: skip


@pytest.mark.parametrize("name, shape, args, kwargs", POOL3D_CASES, ids=str)
def test_pool3d_matches_pytorch(name, shape, args, kwargs):
    ours, theirs = getattr(F, name), getattr(TF, name)
    check_op(
        lambda x: ours(x, *args, **kwargs),
        shape,
        torch_fn=lambda x: theirs(x, *args, **kwargs),
        gradcheck=False,
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "name, shape, args, kwargs",
    [
        ("max_pool3d", (1, 2, 4, 5, 5), (3, 2, 1), {"ceil_mode": True}),
        ("avg_pool3d", (1, 2, 4, 5, 5), ((3, 2, 3), (2, 3, 1), (1, 1, 0)), {"divisor_override": 5}),
        ("avg_pool3d", (1, 2, 4, 5, 5), (3, 2, 1), {"count_include_pad": False}),
        ("adaptive_avg_pool3d", (1, 2, 5, 4, 5), ((3, 3, 2),), {}),
        ("adaptive_max_pool3d", (1, 2, 5, 4, 5), ((3, 3, 2),), {}),
    ],
    ids=str,
)
def test_pool3d_gradients_match_finite_differences(name, shape, args, kwargs):
    ours, theirs = getattr(F, name), getattr(TF, name)
    check_op(
        lambda x: ours(x, *args, **kwargs),
        shape,
        torch_fn=lambda x: theirs(x, *args, **kwargs),
        gradgrad=True,
    )


MAX_CASES = [case for case in POOL3D_CASES if "max" in case[0]]


@pytest.mark.parametrize("name, shape, args, kwargs", MAX_CASES, ids=str)
def test_max_pool3d_indices_match_pytorch(name, shape, args, kwargs):
    x = np.random.default_rng(0).standard_normal(shape)
    ours_out, ours_indices = getattr(F, name)(bai.Tensor(x), *args, return_indices=True, **kwargs)
    theirs_out, theirs_indices = getattr(TF, name)(
        torch.tensor(x), *args, return_indices=True, **kwargs
    )
    np.testing.assert_array_equal(ours_out.numpy(), theirs_out.numpy())
    np.testing.assert_array_equal(ours_indices.numpy(), theirs_indices.numpy())
    assert ours_indices.dtype == np.int64


TIE_CASES = [
    ("max_pool3d", (2, 2, 6, 6, 6), {"kernel_size": 2}),
    ("max_pool3d", (2, 2, 7, 6, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("max_pool3d", (2, 2, 5, 7, 7), {"kernel_size": (2, 3, 2), "stride": (1, 2, 3),
                                     "dilation": (2, 1, 2), "ceil_mode": True}),
    ("adaptive_max_pool3d", (2, 2, 7, 6, 5), {"output_size": (3, 4, 2)}),
    ("adaptive_max_pool3d", (2, 2, 6, 6, 4), {"output_size": (3, 2, 2)}),
]  # fmt: skip


@pytest.mark.parametrize("name, shape, kwargs", TIE_CASES, ids=str)
def test_max_pool3d_ties_pick_the_first_maximum_as_pytorch(name, shape, kwargs):
    """Values in {-inf, 0, 1, 2}: most windows hold several equal maxima (as after a ReLU),
    some only -inf; one NaN, which wins its windows."""
    rng = np.random.default_rng(3)
    x = rng.integers(-1, 3, shape).astype(np.float64)
    x[x < 0] = -np.inf
    x[0, 0, 1, 2, 3] = np.nan
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    out, indices = getattr(F, name)(ours_x, return_indices=True, **kwargs)
    theirs, theirs_indices = getattr(TF, name)(theirs_x, return_indices=True, **kwargs)
    np.testing.assert_array_equal(out.numpy(), theirs.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), theirs_indices.numpy())
    # whole numbers: overlapping windows add them exactly, in whichever order
    grad = rng.integers(-9, 10, out.shape).astype(np.float64)
    out.backward(bai.Tensor(grad))
    theirs.backward(torch.tensor(grad))
    np.testing.assert_array_equal(ours_x.grad.numpy(), theirs_x.grad.numpy())


@pytest.mark.parametrize(
    "pool, theirs",
    [
        (lambda x: F.max_pool3d(x, 3, 2, 1), lambda x: TF.max_pool3d(x, 3, 2, 1)),
        (lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)),
         lambda x: TF.adaptive_max_pool3d(x, (2, 3, 2))),
    ],
)  # fmt: skip
def test_max_pool3d_second_derivative_through_the_upstream_gradient(pool, theirs):
    """Max pooling's gradient is linear in the upstream gradient: differentiating it again by
    that gradient reads the winners (a gather), as PyTorch's does."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 5, 6, 5))
    ours_x, theirs_x = bai.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, theirs_out = pool(ours_x), theirs(theirs_x)
    upstream = rng.standard_normal(out.shape)
    weight = rng.standard_normal(x.shape)
    ours_up = bai.Tensor(upstream, requires_grad=True)
    theirs_up = torch.tensor(upstream, requires_grad=True)
    (ours_g,) = bai.grad(out, [ours_x], grad_outputs=ours_up, create_graph=True)
    (theirs_g,) = torch.autograd.grad(theirs_out, [theirs_x], theirs_up, create_graph=True)
    (ours_gg,) = bai.grad((ours_g * bai.Tensor(weight)).sum(), [ours_up])
    (theirs_gg,) = torch.autograd.grad((theirs_g * torch.tensor(weight)).sum(), [theirs_up])
    np.testing.assert_array_equal(ours_gg.numpy(), theirs_gg.numpy())


def test_float32_pools_keep_dtype():
    x = bai.randn(2, 3, 4, 6, 6)
    for out in (
        F.max_pool3d(x, 2),
        F.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
        F.avg_pool3d(x, 2, divisor_override=3),
        F.adaptive_avg_pool3d(x, (3, 4, 5)),
        F.adaptive_max_pool3d(x, (3, 4, 5)),
    ):
        assert out.dtype == np.float32


LAYERS = [
    (lambda: nn.MaxPool3d(3, 2, 1), lambda: torch.nn.MaxPool3d(3, 2, 1), (2, 2, 5, 6, 5)),
    (lambda: nn.MaxPool3d((2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(2, 1, 1), ceil_mode=True),
     lambda: torch.nn.MaxPool3d((2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(2, 1, 1),
                                ceil_mode=True), (2, 2, 6, 7, 5)),
    (lambda: nn.AvgPool3d(3, 2, 1, count_include_pad=False),
     lambda: torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False), (2, 2, 5, 6, 5)),
    (lambda: nn.AvgPool3d(2, ceil_mode=True, divisor_override=3),
     lambda: torch.nn.AvgPool3d(2, ceil_mode=True, divisor_override=3), (2, 5, 5, 6)),
    (lambda: nn.AdaptiveAvgPool3d((2, None, 3)),
     lambda: torch.nn.AdaptiveAvgPool3d((2, None, 3)), (2, 2, 5, 6, 7)),
    (lambda: nn.AdaptiveMaxPool3d(3), lambda: torch.nn.AdaptiveMaxPool3d(3), (2, 2, 5, 6, 7)),
]  # fmt: skip


@pytest.mark.parametrize("ours, theirs, shape", LAYERS)
def test_pool3d_layers_match_pytorch(ours, theirs, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x.copy(), requires_grad=True)
    ours_y, theirs_y = ours()(ours_x), theirs()(theirs_x)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), rtol=1e-12)
    ours_y.sum().backward()
    theirs_y.sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)


def test_layers_return_indices_that_unpool_as_pytorch():
    x = np.random.default_rng(2).standard_normal((2, 2, 5, 6, 7))
    out, indices = nn.MaxPool3d(2, return_indices=True)(bai.Tensor(x))
    theirs, theirs_indices = torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(indices.numpy(), theirs_indices.numpy())
    unpooled = nn.MaxUnpool3d(2)(out, indices, output_size=x.shape[2:])
    theirs_unpooled = torch.nn.MaxUnpool3d(2)(theirs, theirs_indices, output_size=x.shape[2:])
    np.testing.assert_array_equal(unpooled.numpy(), theirs_unpooled.numpy())
    # unbatched, with sizes that the default output size recovers
    volume = np.random.default_rng(3).standard_normal((2, 5, 7, 5))
    out, indices = F.max_pool3d(bai.Tensor(volume), 3, 2, 1, return_indices=True)
    theirs, theirs_indices = TF.max_pool3d(torch.tensor(volume), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(
        F.max_unpool3d(out, indices, 3, 2, 1).numpy(),
        TF.max_unpool3d(theirs, theirs_indices, 3, 2, 1).numpy(),
    )
    out, indices = nn.AdaptiveMaxPool3d((2, 3, 4), return_indices=True)(bai.Tensor(x))
    theirs_indices = torch.nn.AdaptiveMaxPool3d((2, 3, 4), return_indices=True)(torch.tensor(x))[1]
    np.testing.assert_array_equal(indices.numpy(), theirs_indices.numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.MaxPool3d(2),
        lambda nn: nn.MaxPool3d((2, 3, 1), (1, 2, 1), 1, 2, True, True),
        lambda nn: nn.AvgPool3d(3, 2, 1, True, False, 4),
        lambda nn: nn.AvgPool3d((1, 2, 3)),
        lambda nn: nn.AdaptiveAvgPool3d((None, 2, 3)),
        lambda nn: nn.AdaptiveAvgPool3d(1),
        lambda nn: nn.AdaptiveMaxPool3d(2, True),
        lambda nn: nn.MaxUnpool3d(2),
        lambda nn: nn.MaxUnpool3d((2, 1, 3), 1, (0, 0, 1)),
    ],
)
def test_pool3d_reprs_match_pytorch(make):
    assert repr(make(nn)) == repr(make(torch.nn))


def test_pool3d_errors():
    volume = bai.zeros(1, 1, 6, 6, 6)
    with pytest.raises(
        bai.ShapeError, match=r"\[max_pool3d\] padding \(2, 2, 2\) must be at most half of kernel"
    ):
        F.max_pool3d(volume, 3, padding=2)
    with pytest.raises(bai.ShapeError, match=r"\[avg_pool3d\] padding \(0, 2, 1\) must be at most"):
        F.avg_pool3d(volume, 3, padding=(0, 2, 1))
    with pytest.raises(
        bai.ShapeError,
        match=r"\[avg_pool3d\] kernel_size \(7, 7, 7\) .*larger than the input \(1, 1, 6, 6, 6\)",
    ):
        F.avg_pool3d(volume, 7)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool3d\] .*output size \(0, 0, 0\)"):
        F.max_pool3d(volume, 4, dilation=2)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool3d\] expected a 5-D input"):
        F.max_pool3d(bai.zeros(6, 6, 6), 2)
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_avg_pool3d\] expected a 5-D input"):
        F.adaptive_avg_pool3d(bai.zeros(1, 1, 1, 6, 6, 6), 2)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool3d\] invalid kernel_size=\(0, 0, 0\)"):
        F.max_pool3d(volume, 0)
    with pytest.raises(bai.ShapeError, match=r"\[avg_pool3d\] invalid .*stride=\(0, 1, 1\)"):
        F.avg_pool3d(volume, 2, (0, 1, 1))
    with pytest.raises(bai.ShapeError, match=r"kernel_size must be an int or a tuple of three"):
        F.max_pool3d(volume, (2, 2))
    with pytest.raises(ValueError, match=r"\[avg_pool3d\] divisor_override must be non-zero"):
        F.avg_pool3d(volume, 2, divisor_override=0)
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_avg_pool3d\] output_size must be 3"):
        F.adaptive_avg_pool3d(volume, (2, 2))
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_max_pool3d\] output_size must be 3"):
        F.adaptive_max_pool3d(volume, (0, 2, 2))
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_max_pool3d\] cannot pool an empty"):
        F.adaptive_max_pool3d(bai.zeros(1, 1, 0, 3, 3), 2)
    with pytest.raises(bai.ShapeError, match=r"\[max_unpool3d\] .*outside the output plane"):
        F.max_unpool3d(bai.ones(1, 1, 1, 1, 1), bai.tensor(np.full((1, 1, 1, 1, 1), 9)), 2)


def test_pooling_compiles_to_the_eager_result():
    """A traced forward graph of 3-D pooling gives eager's values, for two batch sizes."""

    def pool(x):
        return F.max_pool3d(x, 3, 2, 1, ceil_mode=True) + F.avg_pool3d(
            x, (3, 2, 3), 2, 1, ceil_mode=True, count_include_pad=False
        )

    compiled = bai.compile(pool, fullgraph=True)
    rng = np.random.default_rng(5)
    for batch in (2, 3):
        x = bai.tensor(rng.standard_normal((batch, 2, 5, 6, 7)).astype(np.float32))
        with bai.no_grad():
            np.testing.assert_array_equal(compiled(x).numpy(), pool(x).numpy())


def test_pooling_freezes_with_a_symbolic_batch():
    from buildingai.graph import freeze

    def pool(x):
        return F.max_pool3d(x, 2) + F.adaptive_avg_pool3d(F.avg_pool3d(x, 2, 1), (2, 3, 3))

    frozen = freeze(pool, [bai.TensorSpec((None, 2, 5, 6, 7), "float32")])
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 5, 6, 7)).astype(np.float32)
        np.testing.assert_array_equal(frozen(x).numpy(), pool(bai.tensor(x)).numpy())
