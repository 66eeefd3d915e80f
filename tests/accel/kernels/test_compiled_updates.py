"""The in-place update kernels (``accel/kernels/updates.py``) against the out-of-place formulas
they stand in for, and their compiled twins against them: the same bits, written into the
array they update, on one and two threads."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import compiled, updates

N = 70_001  # odd, and above compiled.MIN_PARALLEL_WORK: two threads split it

# twin name -> (NumPy kernel, operand count, scalar keyword, the formula on Tensors)
CASES = {
    "lerp": (updates.lerp, 1, "weight", lambda x, end, w: x + w * (end - x)),
    "addcmul": (updates.addcmul, 2, "value", lambda x, a, b, v: x + v * a * b),
    "addcdiv": (updates.addcdiv, 2, "value", lambda x, a, b, v: x + v * a / b),
}
SCALARS = [0.1, -0.37, 1e-8, 2.0]


def _arrays(count: int, dtype=np.float32, seed: int = 0) -> list[np.ndarray]:
    """``count`` float arrays: edge values (zeros of both signs, tiny, huge, inf, NaN) first."""
    rng = np.random.default_rng(seed)
    edges = np.array([0.0, -0.0, 1e-30, 1e30, -3e38, np.inf, -np.inf, np.nan], dtype)
    arrays = []
    for index in range(count):
        body = rng.standard_normal(N - edges.size).astype(dtype)
        arrays.append(np.concatenate([np.roll(edges, index), body]))
    return arrays


def _kernel(name, scalar):
    kernel, _, keyword, _ = CASES[name]
    return functools.partial(kernel, **{keyword: scalar})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kernel_rounds_as_its_formula(accel_off, name, scalar, dtype):
    _, operands, _, formula = CASES[name]
    x, *others = _arrays(1 + operands, dtype)
    with np.errstate(all="ignore"):
        expected = formula(*(bai.tensor(a) for a in (x, *others)), scalar).numpy()
        _kernel(name, scalar)(np, x, *others, x)  # in place: x is also the output
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_twin_gives_its_kernels_bits_in_place(accel_on, name, scalar, threads):
    pytest.importorskip("numba")
    _, operands, _, _ = CASES[name]
    x, *others = _arrays(1 + operands)
    expected = x.copy()
    kernel = _kernel(name, scalar)
    with np.errstate(all="ignore"):
        kernel(np, expected, *others, expected)
    bai.set_num_threads(threads)
    try:
        assert compiled.run(kernel, [x, *others, x]), f"{name}: the twin did not run"
    finally:
        bai.set_num_threads(None)
    np.testing.assert_array_equal(x, expected)


def test_one_operand_twice_and_the_updated_array_as_an_operand(accel_on):
    pytest.importorskip("numba")
    x, g = _arrays(2)
    x, g = x[8:], g[8:]  # finite values only
    expected = x + np.float32(0.5) * g * g
    assert compiled.run(_kernel("addcmul", 0.5), [x, g, g, x])  # v.addcmul_(g, g, value=...)
    np.testing.assert_array_equal(x, expected)
    expected = x + np.float32(0.25) * (x - x)
    assert compiled.run(_kernel("lerp", 0.25), [x, x, x])  # x.lerp_(x, w): x again
    np.testing.assert_array_equal(x, expected)
