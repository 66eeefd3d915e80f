"""The run record (run_dir/run.json) lists the accelerations in force, and each switch does what
the record says."""

import json

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import vector_blas
from buildingai.optim import packing
from buildingai.train import Config, Trainer
from buildingai.train.run_record import accelerations

pytest.importorskip("safetensors")


@pytest.fixture
def switches_restored():
    blas, packed = vector_blas.set_enabled(True), packing.set_enabled(True)
    yield
    vector_blas.set_enabled(blas)
    packing.set_enabled(packed)


def fit_and_read_record(run_dir) -> dict:
    config = Config(
        epochs=1, batch_size=16, run_dir=str(run_dir), progress=False,
        data=dict(train=dict(type="Spirals", n=32, seed=0), eval=None),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
    )  # fmt: skip
    Trainer.from_config(config, verbose=False).fit()
    sessions = json.loads((run_dir / "run.json").read_text())["sessions"]
    assert len(sessions) == 1 and sessions[0]["step"] == 0
    assert sessions[0]["buildingai"] == bai.__version__
    return sessions[0]["accelerations"]


def test_the_run_record_lists_which_accelerations_are_active(tmp_path, switches_restored):
    record = fit_and_read_record(tmp_path / "on")
    assert record["packed_updates"]["active"] is True
    assert record["vector_blas"]["active"] is vector_blas.available()
    assert record["retain_freed_memory"]["active"] is True  # from_config applied it
    assert record == accelerations()

    vector_blas.set_enabled(False)
    packing.set_enabled(False)
    record = fit_and_read_record(tmp_path / "off")
    assert record["vector_blas"]["active"] is False and record["packed_updates"]["active"] is False
    assert "switched off" in record["vector_blas"]["detail"]
    assert "set_enabled" in record["packed_updates"]["switch"]


def test_packing_switch_updates_each_parameter_on_its_own(switches_restored):
    def adam_states():
        params = [bai.tensor(np.ones(shape), requires_grad=True) for shape in [(3,), (2, 2)]]
        optimizer = bai.optim.Adam(params, lr=0.1)
        for param in params:
            param.grad = bai.tensor(np.full(param.shape, 0.5))
        optimizer.step()
        return [optimizer.state[param]["exp_avg"] for param in params], params

    (first, second), packed_params = adam_states()
    assert first.base is not None and first.base is second.base  # views of one flat array
    packing.set_enabled(False)
    (first, second), single_params = adam_states()
    assert not np.shares_memory(first, second)
    for packed, single in zip(packed_params, single_params):
        np.testing.assert_array_equal(packed.numpy(), single.numpy())  # the same arithmetic


def test_the_run_record_says_who_runs_the_products(tmp_path):
    pytest.importorskip("threadpoolctl")
    pytest.importorskip("numba")
    from buildingai.train.run_record import session_record

    bai.set_num_threads(2, gemm=False)
    try:
        assert session_record(0)["one_pool"] is False
    finally:
        bai.set_num_threads(None)
    bai.set_num_threads(2, gemm=True)
    try:
        record = session_record(0)
    finally:
        bai.set_num_threads(None)
    assert record["one_pool"] is True and record["intra_op_threads"] == 2
    from buildingai.accel.kernels import compiled

    assert record["own_blas"] is compiled.own_blas_ready()  # NumPy's BLAS left alone where true
