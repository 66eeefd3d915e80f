"""Max pooling's twins for any window geometry (``compiled/pool_windows.py``) against their NumPy
references (``kernels/pool_windows.py``, the records' own functions): padding, dilation,
overlapping windows, ceil mode's overhang, ties, NaN, inf and windows whose image elements are
all -inf, on phase planes and on grids short enough to scan each window; the same bits at one and two threads and on two Python threads at once; and
``max_pool2d`` through them against PyTorch, values and gradients."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel.kernels import compiled, pool_windows
from buildingai.ops import pool
from tests.helpers import results_at_thread_counts

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("accel_on")

# the twins' names, for the coverage test in test_compiled.py
CASES = {"padded_window_max", "padded_first_max", "padded_scatter"}

# (H, W, kernel, stride, padding, dilation, ceil_mode)
GEOMETRIES = {
    "resnet-stem-3x3-stride-2": (11, 12, (3, 3), (2, 2), (1, 1), (1, 1), False),
    "overlapping-stride-1": (7, 9, (3, 3), (1, 1), (1, 1), (1, 1), False),
    "ceil-overhang": (7, 8, (3, 2), (2, 2), (1, 0), (1, 1), True),
    "dilated-uneven": (13, 10, (2, 3), (3, 2), (1, 1), (2, 2), True),
    "2x2-inside": (8, 8, (2, 2), (2, 2), (0, 0), (1, 1), False),
    "tall-window": (9, 5, (4, 1), (1, 1), (2, 0), (1, 1), False),
    # grids short against the window: each window scanned on the image
    "global-7x7": (7, 7, (7, 7), (7, 7), (0, 0), (1, 1), False),
    # windows of whole rows: one contiguous span each, scanned in lanes
    "global-padded-rows": (5, 6, (7, 6), (7, 6), (1, 0), (1, 1), False),
    "row-bands-left-padding": (9, 4, (3, 6), (3, 6), (0, 1), (1, 1), False),
    "row-bands-overlapping": (10, 3, (4, 3), (2, 3), (1, 0), (1, 1), True),
    "small-map-3x3-stride-2": (8, 8, (3, 3), (2, 2), (1, 1), (1, 1), False),
    "small-map-overlapping": (4, 5, (3, 3), (1, 1), (1, 1), (1, 1), True),
}


def _case(name, seed=0):
    """x with ties, NaN, +-inf and an all -inf corner, the pooled maxima, and the keywords."""
    height, width, kernel, stride, padding, dilation, ceil_mode = GEOMETRIES[name]
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (3, 4, height, width)).astype(np.float32)  # ties: the first wins
    x[0, 0, :3, :3] = -np.inf  # windows whose image elements are all -inf
    x[1, 2, 1, 1] = np.nan
    x[2, 1, 0, :2] = np.nan
    x[2, 3, 2, 1] = np.inf
    out_hw = tuple(
        pool.pool_output_size(
            x.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode
        )  # fmt: skip
        for a in range(2)
    )
    params = {"size": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    return x, out_hw, params


def _both(kernel, inputs, output, params):
    """The twin's result and the reference's, from different fills of the output."""
    expected, got = np.full_like(output, 7), np.full_like(output, 9)
    kernel(np, *inputs, expected, **params)
    assert compiled.run(kernel, [*inputs, got], params)
    return got, expected


def _all_three(name):
    x, out_hw, params = _case(name)
    pooled = np.empty(x.shape[:2] + out_hw, np.float32)
    out, _ = _both(pool_windows.padded_window_max, [x], pooled, params)
    choice = np.empty(out.shape, pool.choice_dtype(np, params["size"]))
    choice, _ = _both(pool_windows.padded_first_max, [x, out], choice, params)
    grad = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    image, _ = _both(pool_windows.padded_scatter, [grad, choice], np.empty_like(x), params)
    return out, choice, image


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_twins_equal_their_references(name):
    """The same selects and the same sums in the same order: the same bits."""
    x, out_hw, params = _case(name)
    out = np.empty(x.shape[:2] + out_hw, np.float32)
    got, expected = _both(pool_windows.padded_window_max, [x], out, params)
    np.testing.assert_array_equal(got, expected)
    choice = np.empty(x.shape[:2] + out_hw, pool.choice_dtype(np, params["size"]))
    got, expected_choice = _both(pool_windows.padded_first_max, [x, expected], choice, params)
    np.testing.assert_array_equal(got, expected_choice)
    grad = np.random.default_rng(1).standard_normal(expected.shape).astype(np.float32)
    grad[0, 1, 0, 0] = np.inf
    got, expected = _both(pool_windows.padded_scatter, [grad, expected_choice], x * 0, params)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["overlapping-stride-1", "small-map-overlapping"])
def test_twins_give_the_same_bits_on_one_and_two_threads(name):
    one, two = results_at_thread_counts(lambda: _all_three(name))
    for on_one, on_two in zip(one, two):
        np.testing.assert_array_equal(on_one, on_two)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_twins_on_two_python_threads_at_once():
    """The twins hold no state: two Python threads run them at once."""
    expected = _all_three("resnet-stem-3x3-stride-2")
    with ThreadPoolExecutor(2) as pool_of_threads:
        for results in pool_of_threads.map(
            lambda _: _all_three("resnet-stem-3x3-stride-2"), range(6)
        ):
            for got, wanted in zip(results, expected):
                np.testing.assert_array_equal(got, wanted)


@pytest.mark.parametrize(
    "options",
    [
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "stride": 1, "padding": 1},
        {"kernel_size": (3, 2), "stride": 2, "padding": (1, 0), "ceil_mode": True},
        {"kernel_size": 2, "stride": 1, "dilation": 2},
    ],
)
def test_max_pool2d_matches_pytorch(options):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((2, 5, 15, 14)).astype(np.float32)
    ours, theirs = bai.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = F.max_pool2d(ours, **options)
    expected = torch.nn.functional.max_pool2d(theirs, **options)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    upstream = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
    (out * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-6)
