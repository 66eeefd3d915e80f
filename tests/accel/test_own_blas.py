"""The BLAS of BuildingAI's own (``accel/own_blas.py``): which library the ``blas.mkl`` switch
picks, that ``enable()`` and ``disable()`` move the products onto it and back, and that a
training-sized linear layer's output and gradients on MKL and on the copy of OpenBLAS equal
float64 NumPy's, cut across threads and whole."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import own_blas, registry
from buildingai.accel.kernels import compiled

pytest.importorskip("numba")


@pytest.fixture
def mkl_switch(accel_on):
    """Yields a function that sets ``blas.mkl`` and enables acceleration again (where the
    switch takes effect); the switch is restored afterwards."""
    previous = registry.kernel("blas.mkl").switched_on

    def switch(flag: bool):
        bai.accel.set_enabled("blas.mkl", flag)
        bai.accel.enable(quiet=True)
        return own_blas.library()

    yield switch
    switch(previous)


def _needs(name: str) -> None:
    found = own_blas.mkl() if name == "mkl" else own_blas.openblas()
    if found is None:
        pytest.skip(f"{name} is not installed: pip install 'buildingai[mkl]'")


def test_the_switch_picks_mkl_or_openblas_and_disable_gives_numpy_its_products(mkl_switch):
    _needs("openblas")
    from buildingai.accel.kernels.compiled import gemm

    assert mkl_switch(False).name == "openblas"
    assert gemm.OWN_BLAS and compiled.own_blas_ready()
    openblas_address = gemm.ADDRESSES[np.dtype(np.float32)]
    if own_blas.mkl() is not None:
        assert mkl_switch(True).name == "mkl"
        assert gemm.ADDRESSES[np.dtype(np.float32)] != openblas_address
    bai.accel.disable()
    assert own_blas.library() is None and not gemm.OWN_BLAS  # NumPy's BLAS again


def test_mkl_is_listed_as_missing_where_its_wheel_is_not_installed(monkeypatch):
    switch = registry.kernel("blas.mkl")
    assert switch.requires[-1] == "mkl"
    assert registry._installed("mkl") == (own_blas.mkl_path() is not None)
    assert not registry._installed("no_such_distribution_here")
    monkeypatch.setattr(switch, "switched_on", True)
    monkeypatch.setitem(switch.__dict__, "missing", ["mkl"])  # as where the wheel is absent
    with bai.accel.enabled(True):
        assert switch.reason() == "mkl not installed (pip install 'buildingai[mkl]')"
        assert not switch.active


def test_mkl_runs_on_its_sequential_layer_and_names_its_symbols():
    _needs("mkl")
    found = own_blas.mkl()
    assert found.routine("sgemm") is not None and found.routine("daxpby") is not None
    assert found.routine("no_such_routine") is None
    found.handle.MKL_Get_Max_Threads.restype = int
    assert found.handle.MKL_Get_Max_Threads() == 1  # sequential: no threads of its own


@pytest.mark.parametrize("name", ["openblas", "mkl"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_linear_layer_and_its_gradients_on_each_library_equal_float64(mkl_switch, name, threads):
    """Shapes of a GPT block's first layer (1024 x 128 -> 384): above the size that goes to the
    own BLAS, cut across two threads at ``threads=2``."""
    _needs(name)
    assert mkl_switch(name == "mkl").name == name
    bai.set_num_threads(threads, gemm=True)
    try:
        rng = np.random.default_rng(3)
        x = rng.standard_normal((1024, 128)).astype(np.float32)
        w = (rng.standard_normal((384, 128)) * 0.1).astype(np.float32)
        g = rng.standard_normal((1024, 384)).astype(np.float32)
        xt, wt = bai.tensor(x, requires_grad=True), bai.tensor(w, requires_grad=True)
        y = bai.nn.functional.linear(xt, wt)
        y.backward(bai.tensor(g))
    finally:
        bai.set_num_threads(None)
    x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    for got, expected in ((y, x64 @ w64.T), (xt.grad, g64 @ w64), (wt.grad, g64.T @ x64)):
        error = np.abs(got.numpy() - expected).max() / np.abs(expected).max()
        assert error < 2e-6, (name, error)
