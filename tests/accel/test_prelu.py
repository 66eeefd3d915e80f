"""prelu's registered kernels (``accel/prelu.py``) and their compiled twins
(``kernels/compiled/prelu.py``): the (N, C, S) view of x and its slopes, the kernels against
their records' forwards on edge values in float32 and float64, the twins against their NumPy
kernels at one and two threads, the slopes' gradient's float32 error against PyTorch's, and
the layer against PyTorch with both gradients."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import prelu, registry
from buildingai.accel.kernels import compiled

# the twins compared here (for test_compiled.py's check that every twin has a comparison)
CASES = {"prelu_channels", "prelu_input_grad_channels", "prelu_weight_grad_channels"}

EDGES = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 1e30, -1e30, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize(
    ("x_shape", "weight_shape", "view"),
    [
        ((32, 64, 512), (64, 1), (32, 64, 512)),
        ((8, 3, 5, 7), (3, 1, 1), (8, 3, 35)),
        ((10, 6), (6,), (10, 6, 1)),
        ((4, 5, 6), (), (20, 1, 6)),
        ((4, 5, 6), (1,), (20, 1, 6)),
        ((7,), (), (1, 1, 7)),
        ((2, 3, 4), (1, 3, 1), (2, 3, 4)),  # slopes along axis 1, written with a leading 1
        ((2, 3, 4), (4,), (6, 4, 1)),  # slopes along the last axis
        ((2, 3, 4), (3, 4), None),  # two axes: the record runs
        ((2, 3, 4), (3, 2), None),  # does not broadcast
        ((3,), (1, 3), None),  # longer than x: the output is larger than x
        ((), (), None),
    ],
)
def test_channel_view(x_shape, weight_shape, view):
    assert prelu.channel_view(x_shape, weight_shape) == view


def _x(rng, shape, dtype):
    """Edge values first, then normal draws times 2, in ``shape``."""
    size = int(np.prod(shape))
    values = np.concatenate([EDGES, rng.standard_normal(size) * 2])[:size]
    return values.astype(dtype).reshape(shape)


def _slopes(rng, channels, dtype):
    return rng.uniform(0.05, 0.5, channels).astype(dtype)


SHAPES = [  # (x, slopes as the functional shapes them)
    ((32, 64, 512), (64, 1)),
    ((8, 3, 5, 7), (3, 1, 1)),
    ((300, 6), (6,)),
    ((40, 5, 600), ()),
    ((70_001,), ()),
]


def _inputs(shape, weight_shape, dtype, inf_grads=False):
    rng = np.random.default_rng(0)
    x = _x(rng, shape, dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    if inf_grads:  # where x > 0 a slopes' gradient term is 0, whatever the gradient
        grad.flat[: len(EDGES)] = np.inf
    weight = _slopes(rng, int(np.prod(weight_shape)), dtype).reshape(weight_shape)
    return grad, x, weight


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize(("shape", "weight_shape"), SHAPES)
@pytest.mark.parametrize("inf_grads", [False, True], ids=["finite", "inf grads"])
def test_kernels_match_their_records(shape, weight_shape, dtype, inf_grads, accel_on):
    grad, x, weight = _inputs(shape, weight_shape, dtype, inf_grads)
    for name, inputs in (
        ("prelu.fused", (x, weight)),
        ("prelu_input_grad.fused", (grad, x, weight)),
        ("prelu_weight_grad.fused", (grad, x, weight)),
    ):
        entry = registry.kernel(name)
        assert entry.active and entry.applies(np, *inputs), name
        expected = entry.op.forward(None, np, *inputs)
        got = entry.run(None, np, *inputs)
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        if name == "prelu_weight_grad.fused":  # sums of thousands of terms in another order
            _close_sums(
                got, expected, grad, x, weight.shape, 1e-6 if dtype == np.float32 else 1e-14
            )
        else:  # a select, or products by 1 and by the slope: exact
            np.testing.assert_array_equal(got, expected, err_msg=name)


def _close_sums(got, expected, grad, x, shape, tolerance):
    """Two slopes' gradients agree to ``tolerance`` times the sum of their terms' magnitudes
    (where the terms cancel, float32 sums in another order differ by that much), with NaN and
    infinities in the same places."""
    with np.errstate(all="ignore"):
        terms = np.abs(np.where(x > 0, 0, grad.astype(np.float64) * x))
    view = prelu.channel_view(x.shape, shape)
    scale = terms.reshape(view).sum(axis=(0, 2)).reshape(shape)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    finite = np.isfinite(expected)
    assert np.array_equal(
        got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)]
    )
    assert (np.abs(got - expected)[finite] <= tolerance * scale[finite]).all()


def test_kernels_hand_other_slopes_to_the_record(accel_on):
    x = np.ones((2, 3, 4), np.float32)
    fits = registry.kernel("prelu.fused").applies
    assert fits(np, x, np.ones((3, 1), np.float32)) and fits(np, x, np.asarray(0.25, np.float32))
    assert not fits(np, x, np.ones((3, 4), np.float32))  # along two axes
    assert not fits(np, x.astype(int), np.ones((3, 1), int))  # an integer result
    grad_fits = registry.kernel("prelu_weight_grad.fused").applies
    assert not grad_fits(np, x[:1], x, np.ones((3, 1), np.float32))  # grad broadcasts


# ----- the compiled twins -------------------------------------------------------------------------


def _twin_and_numpy(kernel, arrays, written):
    """The arrays at positions ``written`` after the twin, then after the NumPy kernel, each on
    fresh copies of ``arrays``."""
    results = []
    for twin in (True, False):
        copies = [array.copy() for array in arrays]
        if twin:
            assert compiled.run(kernel, copies), "the twin did not run"
        else:
            kernel(np, *copies)
        results.append([copies[i] for i in written])
    return results


def _twin_cases(view):
    rng = np.random.default_rng(1)
    x = _x(rng, view, np.float32)
    grad = rng.standard_normal(view).astype(np.float32)
    weight = _slopes(rng, view[1], np.float32)
    out, grad_out = np.empty(view, np.float32), np.empty(view, np.float32)
    sums = np.empty(view[1], np.float32)
    return {
        "prelu_channels": (prelu._prelu_channels, [x, weight, out], [2]),
        "prelu_input_grad_channels": (
            prelu._prelu_input_grad_channels,
            [grad, x, weight, grad_out],
            [3],
        ),
        "prelu_weight_grad_channels": (prelu._prelu_weight_grad_channels, [grad, x, sums], [2]),
    }


VIEWS = [(32, 64, 512), (3, 5, 1000), (3000, 6, 1), (70, 1, 1300), (1, 1, 20_000)]


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def threads(request, accel_on):
    pytest.importorskip("numba")
    previous = bai.get_num_threads()
    bai.set_num_threads(request.param)
    yield request.param
    bai.set_num_threads(previous)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_matches_its_numpy_kernel(name, view, threads):
    kernel, arrays, written = _twin_cases(view)[name]
    (twin,), (reference,) = _twin_and_numpy(kernel, arrays, written)
    if name == "prelu_weight_grad_channels":  # float32 lane sums against NumPy's pairwise sums
        _close_sums(twin, reference, arrays[0], arrays[1], (view[1], 1), 1e-6)
    else:
        np.testing.assert_array_equal(twin, reference)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_gives_the_same_bits_on_one_and_two_threads(name, accel_on):
    pytest.importorskip("numba")
    results = []
    previous = bai.get_num_threads()
    try:
        for count in (1, 2):
            bai.set_num_threads(count)
            kernel, arrays, written = _twin_cases((32, 64, 512))[name]
            assert compiled.run(kernel, arrays)
            results.append(arrays[written[0]])
    finally:
        bai.set_num_threads(previous)
    np.testing.assert_array_equal(results[0], results[1])


def test_twins_on_two_python_threads_at_once(accel_on):
    """The twins hold no state: two Python threads run them at once on the same inputs."""
    pytest.importorskip("numba")
    expected = {}
    for name, (kernel, arrays, written) in _twin_cases((32, 64, 512)).items():
        assert compiled.run(kernel, arrays)
        expected[name] = arrays[written[0]].copy()

    def one(_):
        results = {}
        for _ in range(5):
            for name, (kernel, arrays, written) in _twin_cases((32, 64, 512)).items():
                assert compiled.run(kernel, arrays)
                results[name] = arrays[written[0]]
        return results

    with ThreadPoolExecutor(2) as pool:
        for results in pool.map(one, range(4)):
            for name, value in results.items():
                np.testing.assert_array_equal(value, expected[name], err_msg=name)


def test_the_slopes_gradient_is_as_accurate_as_pytorchs(accel_on):
    """float32 sums of 16,384 terms per slope: the error against float64 is at most 1.5x
    PyTorch's own float32 error."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((32, 64, 512)) * 2).astype(np.float32)
    grad = rng.standard_normal(x.shape).astype(np.float32)
    slopes = _slopes(rng, 64, np.float32)
    exact = np.where(x > 0, 0, grad.astype(np.float64) * x).sum(axis=(0, 2))
    ours = bai.tensor(slopes, requires_grad=True)
    bai.nn.functional.prelu(bai.tensor(x), ours).backward(bai.tensor(grad))
    theirs = torch.tensor(slopes, requires_grad=True)
    torch.nn.functional.prelu(torch.tensor(x), theirs).backward(torch.tensor(grad))
    our_error = np.abs(ours.grad.numpy() - exact).max()
    their_error = np.abs(theirs.grad.numpy() - exact).max()
    assert our_error <= 1.5 * their_error + 1e-6 * np.abs(exact).max()


# ----- the layer against PyTorch ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("slopes_learn", [True, False], ids=["slopes learn", "slopes fixed"])
@pytest.mark.parametrize("accelerated", [True, False], ids=["accelerated", "reference"])
def test_prelu_matches_pytorch(dtype, slopes_learn, accelerated):
    """The forward and both gradients against PyTorch: selects and products by the slope are
    exact, so float32 agrees to the products' rounding."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((16, 3, 900)) * 2).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    slopes = np.array([0.1, 0.25, 0.5], dtype)
    with bai.accel.enabled(accelerated):
        ours_x = bai.tensor(x, requires_grad=True)
        ours_w = bai.tensor(slopes, requires_grad=slopes_learn)
        out = bai.nn.functional.prelu(ours_x, ours_w)
        out.backward(bai.tensor(g))
    theirs_x = torch.tensor(x, requires_grad=True)
    theirs_w = torch.tensor(slopes, requires_grad=slopes_learn)
    expected = torch.nn.functional.prelu(theirs_x, theirs_w)
    expected.backward(torch.tensor(g))
    tolerance = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=tolerance)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=tolerance)
    if slopes_learn:  # sums of 14,400 products, added in another order
        np.testing.assert_allclose(
            ours_w.grad.numpy(), theirs_w.grad.numpy(), rtol=5e-5 if dtype == np.float32 else 1e-12
        )
    else:
        assert ours_w.grad is None


def test_second_derivatives_match_with_acceleration_on_and_off():
    """Through both gradient records' own backwards, in x, the slopes and the upstream
    gradient (float64: the kernels' NumPy forms run)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 3, 50)) * 2
    g = rng.standard_normal(x.shape)

    def derivatives(flag):
        with bai.accel.enabled(flag):
            t, w = (
                bai.tensor(x, requires_grad=True),
                bai.tensor([0.1, 0.25, 0.5], requires_grad=True),
            )
            upstream = bai.tensor(g, requires_grad=True)
            out = bai.nn.functional.prelu(t, w)
            first = bai.grad(out, [t, w], grad_outputs=upstream, create_graph=True)
            total = sum((d * d).sum() for d in first)
            again = bai.grad(total, [t, w, upstream], allow_unused=True)
            return [d.numpy() for d in first] + [
                np.zeros(1) if d is None else d.numpy() for d in again
            ]

    for a, b in zip(derivatives(False), derivatives(True)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
