"""``add.threads`` and ``sum_into.threads`` (``accel/sums.py``): large float32 sums cut across
threads give NumPy's bits, take no call on one thread, none of other dtypes, shapes or layouts,
and are asked about no small sum; the backward engine's in-place sums go through
``registry.sum_into``."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import registry, sums
from buildingai.backend import threads

pytest.importorskip("numba")

N = 70_001  # above sums.LEAST_ELEMENTS, odd


@pytest.fixture
def two_threads(monkeypatch, accel_on):
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)  # no BLAS call keeps work on one
    bai.set_num_threads(2)
    yield
    bai.set_num_threads(None)


def _pair(seed=0, shape=(N,), dtype=np.float32):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 1e3).astype(dtype)
    b = (rng.standard_normal(shape) * 1e-3).astype(dtype)  # rounding in every element
    a.reshape(-1)[:4] = [np.inf, -np.inf, np.nan, 3e38]
    b.reshape(-1)[:4] = [-np.inf, 1.0, 1.0, 3e38]  # inf - inf, nan + 1, overflow
    return a, b


def test_a_sum_across_threads_gives_numpy_s_bits(two_threads):
    a, b = _pair(shape=(7, 10_001))
    entry = registry.kernel("add.threads")
    assert entry.applies(np, a, b)
    with np.errstate(all="ignore"):
        got = entry.run(None, np, a, b)
        expected = np.add(a, b)
    assert got is not NotImplemented and got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    with np.errstate(all="ignore"):
        through_the_op = (bai.tensor(a) + bai.tensor(b)).numpy()
    np.testing.assert_array_equal(through_the_op, expected)


def test_on_one_thread_numpy_adds(accel_on):
    a, b = _pair(1)
    bai.set_num_threads(1)
    try:
        assert registry.kernel("add.threads").run(None, np, a, b) is NotImplemented
        total = a.copy()
        assert sums.sum_across_threads(total, b) is NotImplemented
        np.testing.assert_array_equal(total, a)  # nothing written
    finally:
        bai.set_num_threads(None)


def test_only_contiguous_float32_arrays_of_one_shape_apply(accel_on):
    applies = registry.kernel("add.threads").applies
    a, b = _pair(2, shape=(64, 2048))
    assert applies(np, a, b)
    assert not applies(np, a.astype(np.float64), b.astype(np.float64))
    assert not applies(np, a, b[:1])  # a broadcast
    assert not applies(np, a.T, b.T)  # not C-ordered
    assert not applies(np, a, 1.0)


def test_small_sums_never_ask_the_kernel(monkeypatch, accel_on):
    """Below ``LEAST_ELEMENTS`` the dispatch's size test skips the kernel without its test."""
    entry = registry.kernel("add.threads")
    asked = []
    monkeypatch.setattr(entry, "applies", lambda xp, a, b: asked.append(a.shape) or False)
    small = np.ones(sums.LEAST_ELEMENTS - 1, np.float32)
    large = np.ones(sums.LEAST_ELEMENTS, np.float32)
    bai.tensor(small) + bai.tensor(small)
    assert asked == []
    bai.tensor(large) + bai.tensor(large)
    assert asked == [large.shape]


def test_the_engine_sums_gradients_through_the_registered_kernel(monkeypatch, two_threads):
    """x used three times: its gradients meet in place, through ``sum_into.threads``, and the
    result is NumPy's sum of them in the engine's order."""
    entry = registry.kernel("sum_into.threads")
    calls = []

    def spy(total, addend, _run=entry.run):
        result = _run(total, addend)
        calls.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(entry, "run", spy)
    rng = np.random.default_rng(3)
    x = bai.tensor(rng.standard_normal((8, 9000)).astype(np.float32), requires_grad=True)
    weights = [rng.standard_normal((8, 9000)).astype(np.float32) for _ in range(3)]
    hidden = x * 1.0
    loss = sum((hidden * bai.tensor(w)).sum() for w in weights)
    loss.backward()
    assert calls and all(calls)
    expected = weights[2] + weights[1] + weights[0]  # the walk meets them last use first
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert registry.kernel("sum_into.threads") in registry._state["sums"]


def test_switched_off_the_engine_adds_with_numpy(monkeypatch, two_threads):
    entry = registry.kernel("sum_into.threads")
    monkeypatch.setattr(entry, "run", lambda total, addend: pytest.fail("the kernel ran"))
    previous = registry.set_enabled("sum_into.threads", False)
    try:
        total, addend = _pair(4)
        with np.errstate(all="ignore"):
            expected = total + addend
            registry.sum_into(total, addend)
        np.testing.assert_array_equal(total, expected)
    finally:
        registry.set_enabled("sum_into.threads", previous)


def test_sums_on_two_threads_at_once(two_threads):
    from concurrent.futures import ThreadPoolExecutor

    pairs = [_pair(seed, shape=(16, 64, 128)) for seed in (5, 6)]
    with np.errstate(all="ignore"):
        expected = [a + b for a, b in pairs]

    def add(pair):
        with np.errstate(all="ignore"):
            return (bai.tensor(pair[0]) + bai.tensor(pair[1])).numpy()

    for _ in range(5):
        with ThreadPoolExecutor(2) as pool:
            for got, want in zip(pool.map(add, pairs), expected):
                np.testing.assert_array_equal(got, want)
