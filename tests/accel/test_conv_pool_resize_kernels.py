"""Every kernel registered for the convolution, max-pooling and resize records against the
records' reference: each case runs forward and backward with acceleration off and on, the
results agree to round-off, and every registered kernel computed at least one case."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import convolution, registry, winograd_forward
from buildingai.accel.kernels import compiled, conv_grid
from tests.ops.test_conv import CONV2D_CASES, TRANSPOSE_CASES

CONV_OPS = ("conv2d", "conv2d_input_grad", "conv2d_weight_grad")
POOL_OPS = ("max_pool2d", "max_pool2d_choice", "max_pool2d_scatter", "max_pool2d_gather")
RESIZE_OPS = ("interpolate", "interpolate_grad")


@pytest.fixture
def kernels_ran(monkeypatch):
    """Every kernel takes every call it can (twins whatever the size and thread count); yields
    a function giving the names of the kernels of some ops that computed a call."""
    monkeypatch.setattr(convolution, "DIRECT_MIN_THREADS", 1)
    monkeypatch.setattr(compiled, "MIN_WORK", 0)
    ran = set()
    for entry in registry.registered():
        if entry.op is None:
            continue

        def spy(ctx, xp, *arrays, _run=entry.run, _name=entry.name, **attrs):
            result = _run(ctx, xp, *arrays, **attrs)
            if result is not NotImplemented:
                ran.add(_name)
            return result

        monkeypatch.setattr(entry, "run", spy)

    def names(ops) -> set:
        return {
            entry.name
            for entry in registry.registered()
            if entry.name in ran and entry.op.name in ops
        }

    return names


def _registered(ops) -> set:
    """The kernels of ``ops`` that can run here (their packages are installed)."""
    return {
        entry.name
        for entry in registry.registered()
        if entry.op is not None and entry.op.name in ops and not entry.missing
    }


def _forward_backward(fn, arrays, accel: bool) -> list:
    """[y, *gradients] of sum(y * y) for y = fn(*arrays), with acceleration on or off."""
    with bai.accel.enabled(accel):
        tensors = [bai.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*tensors)
        (y * y).sum().backward()
        return [y.numpy()] + [t.grad.numpy() for t in tensors]


def _agree(fn, arrays, tolerance: float) -> None:
    expected = _forward_backward(fn, arrays, accel=False)
    got = _forward_backward(fn, arrays, accel=True)
    for index, (a, e) in enumerate(zip(got, expected)):
        assert a.dtype == e.dtype and a.shape == e.shape, index
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
        finite = np.isfinite(e)
        np.testing.assert_array_equal(a[~finite], e[~finite])
        scale = max(1.0, float(np.abs(e[finite]).max(initial=0.0)))
        np.testing.assert_allclose(a[finite], e[finite], rtol=0, atol=tolerance * scale)


TOLERANCE = {np.float32: 2e-5, np.float64: 1e-11}


def _every_convolution_kernel_takes_its_cases(monkeypatch) -> None:
    """The cases' images are small: let the direct weight gradient take them too, and the
    Winograd forward (AVX2's routing, on any CPU) the 64-channel layer of ``_convolutions``."""
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MIN_POSITIONS", 0)
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2", 1 << 30)
    monkeypatch.setattr(compiled, "vector_lanes", lambda: 8)
    monkeypatch.setattr(winograd_forward, "LEAST_TILES", 0)


def _convolutions_agree(dtype) -> None:
    """Every convolution case of the op tests, and a Winograd-wide layer, forward and backward,
    accelerated against the records."""
    rng = np.random.default_rng(0)
    for x_shape, w_shape, kwargs in CONV2D_CASES:
        x, w = (rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape))
        b = rng.standard_normal(w_shape[0]).astype(dtype)
        _agree(lambda x, w, b, kw=kwargs: F.conv2d(x, w, b, **kw), (x, w, b), TOLERANCE[dtype])
    for x_shape, w_shape, kwargs in TRANSPOSE_CASES:
        x, w = (rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape))
        _agree(lambda x, w, kw=kwargs: F.conv_transpose2d(x, w, **kw), (x, w), TOLERANCE[dtype])
    # a layer wide enough for the Winograd weight gradient, forward and input gradient
    x, w = (rng.standard_normal(s).astype(dtype) for s in ((4, 64, 8, 8), (64, 64, 3, 3)))
    _agree(lambda x, w: F.conv2d(x, w / 24, padding=1), (x, w), TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_convolution_kernels_agree_with_the_records(kernels_ran, monkeypatch, dtype):
    if dtype is np.float64:  # the grid takes every stride 1
        monkeypatch.setattr(conv_grid, "MAX_WASTE", float("inf"))
    _every_convolution_kernel_takes_its_cases(monkeypatch)
    _convolutions_agree(dtype)
    # the direct, strided and Winograd kernels are float32 only
    float32_only = (".direct", ".strided", ".winograd")
    tiles = {name for name in _registered(CONV_OPS) if name.endswith(float32_only)}
    assert kernels_ran(CONV_OPS) == _registered(CONV_OPS) - (
        tiles if dtype is np.float64 else set()
    )


def test_convolution_kernels_leave_a_lower_math_precision_to_the_records(kernels_ran, monkeypatch):
    """Under set_float32_matmul_precision("medium") the records round their products' float32
    operands to bfloat16 first. The direct, strided, Winograd and depthwise kernels multiply
    in float32, so they leave those calls to the records; im2col and the grid route their
    products through matmul's precision: every result agrees with the records'."""
    _every_convolution_kernel_takes_its_cases(monkeypatch)
    bai.set_float32_matmul_precision("medium")
    try:
        _convolutions_agree(np.float32)
    finally:
        bai.set_float32_matmul_precision("highest")
    in_float32 = (".direct", ".strided", ".winograd", ".depthwise")
    assert not {name for name in kernels_ran(CONV_OPS) if name.endswith(in_float32)}
    assert kernels_ran(CONV_OPS)  # the others took the calls


# (input shape, keyword arguments of max_pool2d)
POOL_CASES = [
    ((2, 3, 8, 8), {"kernel_size": 2}),  # 2x2 windows of stride 2
    ((2, 3, 13, 12), {"kernel_size": 2}),  # an odd height leaves the last row out
    ((2, 3, 9, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 7, 6), {"kernel_size": 3, "stride": 1}),  # overlapping windows
    ((2, 3, 9, 8), {"kernel_size": (3, 2), "stride": (3, 2)}),
    ((2, 3, 9, 9), {"kernel_size": 2, "stride": 2, "dilation": 2}),
    ((2, 3, 7, 7), {"kernel_size": 2, "stride": 2, "ceil_mode": True}),
    ((2, 3, 8, 6), {"kernel_size": 2, "ceil_mode": True}),  # even: no window overhangs
    ((1, 2, 8, 7), {"kernel_size": 2, "ceil_mode": True}),  # an odd width: the last one does
    ((1, 2, 5, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
]


def test_pooling_kernels_agree_with_the_records(kernels_ran):
    """float32 runs the twins, float64 the NumPy kernels after them (``.flat``, ``.offsets``)."""
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        for shape, kwargs in POOL_CASES:
            x = rng.integers(-4, 5, shape).astype(dtype)  # ties: the first maximum wins
            _agree(lambda x, kw=kwargs: F.max_pool2d(x, **kw), (x,), 0.0)
        x = rng.standard_normal((2, 3, 8, 8)).astype(dtype)
        x[0, 0, :2, :2] = -np.inf
        x[1, 2, 3, 3] = np.nan
        x[0, 1, 4, 4] = np.inf
        for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}):
            with np.errstate(invalid="ignore"):
                _agree(lambda x, kw=kwargs: F.max_pool2d(x, **kw), (x,), 0.0)
    assert kernels_ran(POOL_OPS) == _registered(POOL_OPS)


def test_max_pooling_second_derivative_agrees_with_the_records(kernels_ran):
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    results = []
    for accel in (False, True):
        with bai.accel.enabled(accel):
            xt = bai.tensor(x, requires_grad=True)
            (gx,) = bai.grad((F.max_pool2d(xt, 2) ** 3).sum(), [xt], create_graph=True)
            (gxx,) = bai.grad((gx * gx).sum(), [xt])
            results.append(gxx.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


# (input shape, keyword arguments of interpolate)
RESIZE_CASES = [
    ((2, 3, 32, 30), {"size": (2, 3), "mode": "area"}),  # long rows: the compiled passes
    ((2, 3, 32, 8), {"size": (3, 8), "mode": "area"}),  # one axis long, one copied
    ((2, 3, 40), {"size": (3,), "mode": "area"}),  # a sequence, long rows: one product
    ((2, 3, 7, 5), {"size": (1, 1), "mode": "area"}),  # one pixel: a global average
    ((2, 3, 6, 5), {"size": (9, 7), "mode": "bilinear"}),
    ((2, 3, 6, 5), {"scale_factor": 2, "mode": "nearest"}),  # short rows
    ((2, 3, 12, 10), {"scale_factor": 2, "mode": "nearest"}),  # pixels repeated into 2x2 blocks
    ((2, 3, 12, 10), {"size": (36, 20), "mode": "nearest"}),  # 3x2 blocks
    ((2, 3, 12, 10), {"scale_factor": 2, "mode": "nearest-exact"}),
    ((2, 3, 12, 10), {"size": (24, 10), "mode": "nearest"}),  # one axis copied
    ((2, 3, 20, 18), {"size": (31, 9), "mode": "bilinear"}),  # both maps in one pass per row
    ((2, 3, 20, 18), {"scale_factor": 2, "mode": "bicubic"}),
    ((2, 3, 20, 18), {"scale_factor": 0.5, "mode": "bilinear", "align_corners": True}),
    ((2, 3, 20, 18), {"size": (17, 50), "mode": "nearest"}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("size", [None, (21, 16)], ids=["2x", "3x2"])
def test_nearest_upsampling_by_whole_factors_matches_pytorch(size, dtype, accel_on):
    """Values and input gradient against PyTorch's nearest upsampling: copies are exact, and
    each gradient block sums fh * fw values (float32 error of a few ulps, PyTorch's too)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 7, 8)).astype(dtype)
    kwargs = {"size": size} if size else {"scale_factor": 2}
    ours = bai.tensor(x, requires_grad=True)
    y = F.interpolate(ours, mode="nearest", **kwargs)
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(bai.tensor(g))
    theirs = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.interpolate(theirs, mode="nearest", **kwargs)
    expected.backward(torch.tensor(g))
    np.testing.assert_array_equal(y.numpy(), expected.detach().numpy())
    exact = torch.nn.functional.interpolate(
        torch.tensor(x, dtype=torch.float64, requires_grad=True), mode="nearest", **kwargs
    )
    reference = torch.autograd.grad(exact, exact.grad_fn.next_functions[0][0].variable,
                                    torch.tensor(g, dtype=torch.float64))[0].numpy()  # fmt: skip
    ours_error = np.abs(ours.grad.numpy() - reference).max()
    theirs_error = np.abs(theirs.grad.numpy() - reference).max()
    if dtype == np.float64:
        assert ours_error <= 1e-14
    else:  # within 1.5 times PyTorch's own float32 error (at least one float32 ulp of the sum)
        assert ours_error <= max(1.5 * theirs_error, 4e-7 * np.abs(reference).max())


def test_resize_kernels_agree_with_the_records(kernels_ran):
    rng = np.random.default_rng(4)
    for shape, kwargs in RESIZE_CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        _agree(lambda x, kw=kwargs: F.interpolate(x, **kw), (x,), 1e-6)
    x = rng.standard_normal((1, 2, 24, 24)).astype(np.float32)
    x[0, 1, 3, 5] = np.inf  # the gathers keep an inf from spreading NaN along the axis
    _agree(lambda x: F.interpolate(x, size=(2, 2), mode="area"), (x,), 1e-6)
    assert kernels_ran(RESIZE_OPS) == _registered(RESIZE_OPS)


def test_pooling_takes_the_2x2_twins_for_their_windows_and_the_window_twins_elsewhere(
    kernels_ran,
):
    pytest.importorskip("numba")
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32)
    x = bai.tensor(x, requires_grad=True)
    ops = ("max_pool2d", "max_pool2d_choice", "max_pool2d_scatter")
    with bai.accel.enabled(True):
        (F.max_pool2d(x, 3, 2, 1) ** 2).sum().backward()
        assert kernels_ran(POOL_OPS) == {f"{op}.twin_windows" for op in ops}
        (F.max_pool2d(x, 2) ** 2).sum().backward()
    assert kernels_ran(POOL_OPS) >= {f"{op}.twin_2x2" for op in ops}


RESIZE_AGAINST_PYTORCH = [
    {"scale_factor": 2, "mode": "bilinear"},
    {"scale_factor": 0.5, "mode": "bilinear"},
    {"scale_factor": 2, "mode": "bilinear", "align_corners": True},
    {"scale_factor": 2, "mode": "bicubic"},
    {"size": (17, 50), "mode": "nearest"},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kwargs", RESIZE_AGAINST_PYTORCH, ids=lambda kw: str(kw))
def test_resizing_matches_pytorch_with_acceleration_on(kwargs, dtype, accel_on):
    """Values and input gradient against PyTorch's, and the float32 errors against a float64
    computation within 1.5 times PyTorch's own float32 errors (or one float32 ulp)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 8, 24, 20))
    g = rng.standard_normal(tuple(torch.nn.functional.interpolate(torch.tensor(x), **kwargs).shape))

    def ours(dtype):
        t = bai.tensor(x.astype(dtype), requires_grad=True)
        y = F.interpolate(t, **kwargs)
        y.backward(bai.tensor(g.astype(dtype)))
        return y.numpy(), t.grad.numpy()

    def theirs(dtype):
        t = torch.tensor(x.astype(dtype), requires_grad=True)
        y = torch.nn.functional.interpolate(t, **kwargs)
        y.backward(torch.tensor(g.astype(dtype)))
        return y.detach().numpy(), t.grad.numpy()

    exact = theirs(np.float64)
    got, expected = ours(dtype), theirs(dtype)
    for what, a, e, reference in zip(("value", "gradient"), got, expected, exact):
        if dtype == np.float64:
            np.testing.assert_allclose(a, reference, rtol=0, atol=1e-12, err_msg=what)
            continue
        ours_error = np.abs(a - reference).max()
        theirs_error = np.abs(e - reference).max()
        ulp = np.finfo(np.float32).eps * np.abs(reference).max()
        assert ours_error <= max(1.5 * theirs_error, ulp), (what, ours_error, theirs_error)
