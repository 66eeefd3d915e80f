"""OpenBLAS's jobs on numba's threads (``compiled/blas_pool.py``, ``set_num_threads(n,
gemm=True)``): the same products as OpenBLAS's own threads, from two Python threads at once,
a compiled twin with both cores right after a product, and a forked child that still
multiplies."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
from buildingai.backend import threads

pytest.importorskip("numba")
pytest.importorskip("threadpoolctl")
from buildingai.ops.kernels.compiled import blas_pool  # noqa: E402

SHAPES = [  # large enough that OpenBLAS cuts them into jobs
    ((512, 512), (512, 512)),
    ((64, 9216), (9216, 128)),  # the cnn step's linear layer
    ((2048, 128), (128, 384)),
    ((300, 700), (700, 50)),
]


@pytest.fixture
def one_pool():
    reason = blas_pool.install()
    blas_pool.uninstall()
    if reason is not None:
        pytest.skip(reason)
    bai.set_num_threads(2, gemm=True)
    yield
    bai.set_num_threads(None)


def _operands(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32))
            for a, b in SHAPES]  # fmt: skip


def test_products_equal_those_on_openblas_threads():
    operands = _operands()
    expected = [a @ b for a, b in operands]
    bai.set_num_threads(2, gemm=True)
    try:
        got = [a @ b for a, b in operands]
        stack = np.stack([operands[0][0]] * 3)
        batched = (bai.tensor(stack) @ bai.tensor(operands[0][1])).numpy()
    finally:
        bai.set_num_threads(None)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(batched, np.stack([expected[0]] * 3), rtol=1e-5, atol=1e-4)


def test_two_python_threads_multiply_at_once(one_pool):
    operands = _operands(1)
    expected = [a @ b for a, b in operands]

    def products(_):
        return [a @ b for a, b in operands]

    with ThreadPoolExecutor(2) as pool:
        for result in pool.map(products, range(6)):
            for g, e in zip(result, expected):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-4)


def test_a_twin_right_after_a_product_gets_both_cores(one_pool):
    from buildingai.ops.kernels import compiled

    a, b = _operands()[1]
    a @ b
    assert compiled.thread_count(1 << 22) == 2


def _child_product(queue):
    a = np.ones((256, 256), np.float32)
    queue.put(float((a @ a)[0, 0]))


def test_a_forked_child_multiplies_on_openblas_threads(one_pool):
    """OpenMP's threads do not survive fork: the child's OpenBLAS runs its own jobs."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    np.ones((512, 512), np.float32) @ np.ones((512, 512), np.float32)  # threads started
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_product, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == 256.0
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


def test_the_mode_is_refused_with_the_reason_where_it_cannot_run(monkeypatch):
    monkeypatch.setattr(blas_pool, "_setter", lambda: (None, "NumPy's BLAS is not OpenBLAS"))
    with pytest.raises(RuntimeError, match="not OpenBLAS"):
        bai.set_num_threads(2, gemm=True)
    assert not threads.one_pool()
    bai.set_num_threads(None)
