"""A twin's own threshold for splitting across threads (``compiled_twin``'s ``parallel_from``):
max pooling's twin splits from 2^15 elements touched, other twins from ``MIN_PARALLEL_WORK``."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import activations, compiled, pool_flat

pytest.importorskip("numba")


def test_the_threshold_is_the_twins_own_or_the_default():
    assert pool_flat.window_max.compiled_parallel_from == 1 << 15 < compiled.MIN_PARALLEL_WORK
    assert activations.relu.compiled_parallel_from is None
    assert compiled.thread_count(40_000) == 1
    assert compiled.thread_count(40_000, 1 << 15) == compiled.thread_count(1 << 20)


def test_a_twin_run_counts_its_threads_from_its_own_threshold(monkeypatch, accel_on):
    """A 2x2 max pool touching 46,080 elements asks for its threads with its threshold, and
    gives the record's result at one and two threads."""
    asked = []
    use_threads = compiled._use_threads

    def spy(work, parallel_from=None):
        asked.append((work, parallel_from))
        return use_threads(work, parallel_from)

    monkeypatch.setattr(compiled, "_use_threads", spy)
    x = np.random.default_rng(0).standard_normal((1, 64, 24, 24)).astype(np.float32)
    expected = x.reshape(1, 64, 12, 2, 12, 2).max(axis=(3, 5))
    for threads in (1, 2):
        bai.set_num_threads(threads)
        with bai.no_grad():
            got = bai.nn.functional.max_pool2d(bai.tensor(x), 2).numpy()
        np.testing.assert_array_equal(got, expected)
    bai.set_num_threads(None)
    assert (46_080, 1 << 15) in asked


def test_a_threads_only_twin_leaves_one_thread_calls_to_numpy(monkeypatch, accel_on):
    """``tanh``'s twin takes only the calls it splits: on one thread NumPy's own tanh runs
    (``compiled.run`` says False), on two threads of large work the twin; both give tanh."""
    pytest.importorskip("numba")
    assert activations.tanh.compiled_threads_only and not activations.relu.compiled_threads_only
    x = np.random.default_rng(0).standard_normal(1 << 17).astype(np.float32)
    out = np.empty_like(x)
    monkeypatch.setattr(compiled, "get_num_threads", lambda: 1)
    assert not compiled.run(activations.tanh, (x, out))
    monkeypatch.setattr(compiled, "get_num_threads", lambda: 2)
    monkeypatch.setattr(compiled, "blas_spinning", lambda: False)
    monkeypatch.setattr(compiled, "inside_pool", lambda: False)
    assert compiled.thread_count(2 * x.size) == 2
    assert compiled.run(activations.tanh, (x, out))
    np.testing.assert_allclose(out, np.tanh(x), rtol=2e-6, atol=2e-7)
    assert not compiled.run(activations.tanh, (x[:1000], out[:1000]))  # small work: one thread
