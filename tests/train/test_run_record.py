"""The run record (run_dir/run.json) lists the accelerations in force, and each switch does what
the record says."""

import json

import numpy as np
import pytest

import buildingai as bai
from buildingai.train import Config, Trainer
from buildingai.train.run_record import accelerations

pytest.importorskip("safetensors")


@pytest.fixture
def switches_restored():
    names = ("blas.vector", "optim.packed_updates")
    previous = {name: bai.accel.set_enabled(name, True) for name in names}
    yield
    for name, setting in previous.items():
        bai.accel.set_enabled(name, setting)


def fit_and_read_record(run_dir, **settings) -> dict:
    config = Config(
        epochs=1, batch_size=16, run_dir=str(run_dir), progress=False,
        data=dict(train=dict(type="Spirals", n=32, seed=0), eval=None),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3), **settings,
    )  # fmt: skip
    Trainer.from_config(config, verbose=False).fit()
    sessions = json.loads((run_dir / "run.json").read_text())["sessions"]
    assert len(sessions) == 1 and sessions[0]["step"] == 0
    assert sessions[0]["buildingai"] == bai.__version__
    return sessions[0]["accelerations"]


def test_the_run_record_lists_every_registered_kernel_and_why_it_is_off(
    tmp_path, switches_restored
):
    record = fit_and_read_record(tmp_path / "on")  # the Trainer's config turns acceleration on
    assert record["accel"]["active"] is True
    assert record["optim.packed_updates"]["active"] is True
    assert record["retain_freed_memory"]["active"] is True  # from_config applied it
    assert record == accelerations()
    names = {entry["name"] for entry in bai.accel.status()["kernels"]}
    assert names <= set(record) and "conv2d.direct" in names and "matmul.routed" in names

    bai.accel.set_enabled("optim.packed_updates", False)
    record = fit_and_read_record(tmp_path / "one off")
    assert record["optim.packed_updates"]["active"] is False
    assert "switched off" in record["optim.packed_updates"]["detail"]
    assert "set_enabled('optim.packed_updates'" in record["optim.packed_updates"]["switch"]

    record = fit_and_read_record(tmp_path / "all off", accel=False)
    assert record["accel"]["active"] is False
    kernels = {name: state for name, state in record.items() if "." in name}
    assert not any(state["active"] for state in kernels.values())
    assert {state["detail"] for state in kernels.values()} == {"acceleration off"}


def test_packing_switch_updates_each_parameter_on_its_own(accel_on, switches_restored):
    def adam_states():
        params = [bai.tensor(np.ones(shape), requires_grad=True) for shape in [(3,), (2, 2)]]
        optimizer = bai.optim.Adam(params, lr=0.1)
        for param in params:
            param.grad = bai.tensor(np.full(param.shape, 0.5))
        optimizer.step()
        return [optimizer.state[param]["exp_avg"] for param in params], params

    (first, second), packed_params = adam_states()
    assert first.base is not None and first.base is second.base  # views of one flat array
    bai.accel.set_enabled("optim.packed_updates", False)
    (first, second), single_params = adam_states()
    assert not np.shares_memory(first, second)
    for packed, single in zip(packed_params, single_params):
        np.testing.assert_array_equal(packed.numpy(), single.numpy())  # the same arithmetic


def test_the_run_record_says_who_runs_the_products(tmp_path, accel_on):
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
