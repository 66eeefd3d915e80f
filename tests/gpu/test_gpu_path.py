"""The GPU path, on a machine with CuPy and a CUDA GPU (skipped cleanly elsewhere): every op
record's forward through CuPy against its NumPy run, layer and training-step parity between
``cuda`` and ``cpu``, optimizer state on the device, a compiled step on the GPU, and TF32.

``benchmarks/gpu_check.sh`` runs this file and the GPU benchmarks in one go."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import TensorSpec, nn

pytestmark = pytest.mark.skipif(not bai.cuda_is_available(), reason="needs CuPy and a CUDA GPU")


def _cupy():
    from buildingai.backend.device import cupy_module

    return cupy_module()


def _on_gpu(value):
    if isinstance(value, np.ndarray):
        return _cupy().asarray(value)
    if isinstance(value, dict):
        return {k: _on_gpu(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_on_gpu(v) for v in value)
    return value


def _host(value):
    return value.get() if hasattr(value, "get") else np.asarray(value)


def _records():
    from tests.ops.test_op_records import RECORDS

    return RECORDS


@pytest.mark.parametrize("name", _records() if bai.cuda_is_available() else [])
def test_every_record_runs_on_the_gpu_as_on_the_cpu(name):
    from tests.ops.test_op_records import OPS, _draw

    class Context:
        inputs = ()

    op = OPS[name]
    for seed in range(3):
        sample = _draw(name, seed, np.float32 if np.float32 in _dtypes(name) else None)
        expected = op.forward(Context(), np, *sample.inputs, **sample.attrs)
        got = op.forward(Context(), _cupy(), *_on_gpu(sample.inputs), **_on_gpu(sample.attrs))
        if getattr(op, "effectful", False):  # a random draw: same shape and dtype only
            assert _host(got).shape == np.shape(expected)
            continue
        np.testing.assert_allclose(_host(got), np.asarray(expected), rtol=2e-4, atol=1e-5,
                                   err_msg=f"{name}, seed {seed}")  # fmt: skip


@pytest.mark.parametrize("accelerated", [False, True], ids=["record", "accel"])
@pytest.mark.parametrize("name", _records() if bai.cuda_is_available() else [])
def test_every_record_differentiates_on_the_gpu_as_on_the_cpu(name, accelerated):
    """Each record through dispatch on ``cuda`` tensors, then its backward: values and input
    gradients equal the CPU's (random draws: shapes only)."""
    from tests.ops.op_cases import CASES, OPS
    from tests.ops.test_op_records import _draw, _grad_positions

    op, case = OPS[name], CASES[name]
    for seed in range(2):
        sample = _draw(name, seed, np.float32 if np.float32 in case.dtypes else None)
        grads = _grad_positions(op, case, sample)
        results = {}
        for device in ("cpu", "cuda"):
            with bai.accel.enabled(accelerated), np.errstate(all="ignore"):
                inputs = [  # leaves on the device: .to() of a leaf would be a graph node
                    bai.Tensor(v.copy()).to(device).requires_grad_(i in grads)
                    if isinstance(v, np.ndarray)
                    else v
                    for i, v in enumerate(sample.inputs)
                ]
                out = op(*inputs, **sample.attrs)
                outputs = list(out) if isinstance(out, (tuple, list)) else [out]
                values = [o.to("cpu").numpy() for o in outputs if isinstance(o, bai.Tensor)]
                floating = [o for o in outputs if isinstance(o, bai.Tensor) and o.requires_grad]
                if floating:
                    rng = np.random.default_rng(seed)
                    seeds = [
                        bai.tensor(rng.standard_normal(o.shape).astype(o.dtype.name)).to(device)
                        for o in floating
                    ]
                    bai.backward(floating, seeds)
                    given = [inputs[i].grad for i in grads]
                    values += [g.to("cpu").numpy() for g in given if g is not None]
            results[device] = values
        assert len(results["cuda"]) == len(results["cpu"]), f"{name}, seed {seed}"
        for index, (got, want) in enumerate(zip(results["cuda"], results["cpu"])):
            label = f"{name}, seed {seed}, result {index}"
            if getattr(op, "effectful", False):
                assert got.shape == want.shape, label
                continue
            tolerance = 1e-3 if got.dtype in (np.float32, np.float16) else 1e-9
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=label)


def _dtypes(name):
    from tests.ops.op_cases import CASES

    return CASES[name].dtypes


def _mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10))


def _cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 4 * 4, 10),
    )  # fmt: skip


def _transformer():
    return nn.Sequential(
        nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True),
        nn.Flatten(), nn.Linear(16 * 6, 10),
    )  # fmt: skip


MODELS = {
    "mlp": (_mlp, (8, 32)),
    "cnn": (_cnn, (8, 3, 8, 8)),
    "transformer": (_transformer, (8, 6, 16)),
}


def _train(name: str, device: str, steps: int = 3, compiled: bool = False, adam: bool = True):
    make, shape = MODELS[name]
    bai.manual_seed(0)
    model = make().to(device)
    if adam:
        optimizer = bai.optim.Adam(model.parameters(), lr=1e-3)
    else:  # an update linear in the gradient: float32 round-off stays round-off
        optimizer = bai.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal(shape).astype(np.float32)).to(device)
    y = bai.tensor(rng.integers(0, 10, shape[0])).to(device)

    def step(inputs, targets):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    run = step
    if compiled:
        run = bai.compile(step, [TensorSpec((None, *shape[1:])), TensorSpec((None,), "int64")])
    losses = [run(x, y).item() for _ in range(steps)]
    return losses, model, optimizer


@pytest.mark.parametrize("accelerated", [False, True], ids=["record", "accel"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_on_the_gpu_matches_the_cpu(name, accelerated):
    # SGD, not Adam: Adam scales a gradient that is zero but for round-off (a bias before
    # batch norm, attention's key bias) up to a full step, whose sign the round-off picks
    with bai.accel.enabled(accelerated):  # accelerated: the CUDA twins take their ops
        cpu_losses, cpu_model, _ = _train(name, "cpu", adam=False)
        gpu_losses, gpu_model, optimizer = _train(name, "cuda", adam=False)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for (key, a), b in zip(cpu_model.state_dict().items(), gpu_model.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-4, err_msg=key)
    for state in optimizer.state.values():  # the optimizer's momenta live on the device
        for value in state.values():
            if hasattr(value, "shape") and getattr(value, "ndim", 0):
                assert type(value).__module__.startswith("cupy"), type(value)


@pytest.mark.parametrize("accelerated", [False, True], ids=["record", "accel"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_compiled_step_on_the_gpu_matches_eager(name, accelerated):
    with bai.accel.enabled(accelerated):
        eager, *_ = _train(name, "cuda")
        compiled, *_ = _train(name, "cuda", compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("optimize", [False, True], ids=["plain", "optimized"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_frozen_model_on_the_gpu_matches_eager(name, optimize):
    make, shape = MODELS[name]
    bai.manual_seed(0)
    model = make().to("cuda").eval()
    x = bai.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    x = x.to("cuda")
    static = bai.freeze(model, [TensorSpec((None, *shape[1:]))], optimize=optimize)
    got = static(x)
    assert type(got.array).__module__.startswith("cupy")
    with bai.no_grad():
        np.testing.assert_allclose(got.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_tf32_math_precision_switches_cupys_matmul_mode():
    a = bai.randn(256, 256).to("cuda")
    exact = (a @ a).numpy()
    with bai.math_precision("tf32"):
        fast = (a @ a).numpy()
    error = np.linalg.norm(fast - exact) / np.linalg.norm(exact)
    assert 0 < error < 2e-3, error  # TF32 keeps 10 of float32's 23 mantissa bits: not exact


def test_pinned_batches_reach_the_gpu():
    from buildingai.data import DataLoader, TensorDataset

    data = TensorDataset(bai.arange(64, dtype="float32").reshape(16, 4))
    loader = DataLoader(data, batch_size=4, pin_memory=True)
    (batch,) = next(iter(loader))
    np.testing.assert_array_equal(
        batch.to("cuda").numpy(), np.arange(16, dtype=np.float32).reshape(4, 4)
    )
