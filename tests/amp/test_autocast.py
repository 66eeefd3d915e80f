"""autocast: the per-op policy kept on the op records, values and gradients against
torch.autocast("cpu", dtype=torch.bfloat16), and an MNIST MLP trained under bfloat16."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn, optim
from buildingai.amp import autocast
from buildingai.nn import functional as F
from buildingai.ops import all_ops
from buildingai.ops.base import Op

torch = pytest.importorskip("torch")
BF16 = bai.bfloat16


def test_policy_table_is_read_from_the_op_records():
    policy = autocast.policy()
    assert set(policy) == {op.name for op in all_ops()}
    for name in ("matmul", "linear", "conv2d", "einsum"):
        assert policy[name] == "low"
    for name in ("softmax", "log_softmax", "layer_norm", "cross_entropy", "sum", "mean", "exp"):
        assert policy[name] == "float32"
    assert policy["add"] == policy["relu"] == policy["argmax"] == "promote"
    assert Op.autocast == "promote"  # a new record needs nothing to take part
    text = str(policy)
    assert "low (cast to the autocast dtype): " in text and "  softmax" in text


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    weight = rng.standard_normal((4, 16)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    labels = rng.integers(0, 4, 8)
    return x, weight, bias, labels


def test_linear_and_cross_entropy_match_torch_autocast():
    x, w, b, labels = _data()
    torch_w = torch.tensor(w, requires_grad=True)
    torch_b = torch.tensor(b, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch_out = torch.nn.functional.linear(torch.tensor(x), torch_w, torch_b)
        torch_loss = torch.nn.functional.cross_entropy(torch_out, torch.tensor(labels))
    torch_loss.backward()

    weight = bai.Tensor(w, requires_grad=True)
    bias = bai.Tensor(b, requires_grad=True)
    with autocast(dtype="bfloat16"):
        out = F.linear(bai.Tensor(x), weight, bias)
        loss = F.cross_entropy(out, bai.Tensor(labels))
    loss.backward()

    assert out.dtype == BF16 and loss.dtype == np.float32
    np.testing.assert_array_equal(out.numpy().astype(np.float32), torch_out.float().detach())
    assert loss.item() == pytest.approx(torch_loss.item(), rel=1e-6)
    assert weight.grad.dtype == np.float32 and bias.grad.dtype == np.float32  # the param's dtype
    np.testing.assert_allclose(weight.grad.numpy(), torch_w.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bias.grad.numpy(), torch_b.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_matmul_and_conv_match_torch_autocast():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 4)).astype(np.float32)
    image = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    kernel = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch_product = torch.tensor(a) @ torch.tensor(b)
        torch_conv = torch.nn.functional.conv2d(torch.tensor(image), torch.tensor(kernel))
    with autocast(dtype="bfloat16"):
        product = bai.Tensor(a) @ bai.Tensor(b)
        conv = F.conv2d(bai.Tensor(image), bai.Tensor(kernel))
    assert product.dtype == conv.dtype == BF16
    np.testing.assert_array_equal(product.numpy().astype(np.float32), torch_product.float())
    # one bfloat16 rounding of a float32 sum: equal up to the summation order's last bit
    np.testing.assert_allclose(
        conv.numpy().astype(np.float32), torch_conv.float(), rtol=2**-7, atol=1e-6
    )


def test_float32_ops_widen_low_precision_inputs_and_promote_mixes():
    x = bai.Tensor(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    with autocast(dtype="bfloat16"):
        low = x @ bai.Tensor(np.eye(4, dtype=np.float32))  # bfloat16
        assert low.dtype == BF16
        assert F.softmax(low, axis=-1).dtype == np.float32
        assert low.sum().dtype == np.float32 and low.exp().dtype == np.float32
        assert (low + x).dtype == np.float32  # promote: the widest input
        assert low.relu().dtype == BF16  # one input: its own dtype
    assert (x @ x.T).dtype == np.float32  # outside the block nothing changes


def test_autocast_is_per_thread_and_float16():
    x = bai.Tensor(np.ones((2, 2), np.float32))
    seen = {}

    def other_thread():
        seen["dtype"] = (x @ x).dtype

    with autocast(dtype="float16"):
        assert (x @ x).dtype == np.float16
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join(timeout=10)
    assert seen["dtype"] == np.float32
    with autocast(dtype="bfloat16", enabled=False):
        assert (x @ x).dtype == np.float32
    with pytest.raises(ValueError, match="bfloat16' or 'float16"):
        autocast(dtype="float32")


def _mnist_split():
    from buildingai.data.datasets import MNIST
    from buildingai.data.sources import DatasetUnavailableError

    try:
        data = MNIST("test", download=False)  # the examples' MNIST, from the local cache
    except DatasetUnavailableError:
        pytest.skip("MNIST is not in the local cache (run examples/mnist_mlp.py once)")
    images = (data.images.reshape(len(data.images), -1) / 255.0).astype(np.float32)
    labels = data.labels.astype(np.int64)
    return (images[:8000], labels[:8000]), (images[8000:], labels[8000:])


def _train_mlp(train, test, low_precision: bool) -> float:
    bai.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = optim.Adam(model.parameters(), lr=2e-3)
    images, labels = train
    order = np.random.default_rng(0).permutation(len(images))
    for _epoch in range(2):
        for start in range(0, len(images), 100):
            batch = order[start : start + 100]
            with autocast(dtype="bfloat16", enabled=low_precision):
                loss = F.cross_entropy(model(bai.Tensor(images[batch])), bai.Tensor(labels[batch]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with bai.no_grad(), autocast(dtype="bfloat16", enabled=low_precision):
        predicted = model(bai.Tensor(test[0])).argmax(axis=1).numpy()
    return float((predicted == test[1]).mean() * 100)


@pytest.mark.slow
def test_mnist_mlp_under_bfloat16_reaches_float32_accuracy():
    train, test = _mnist_split()
    full = _train_mlp(train, test, low_precision=False)
    mixed = _train_mlp(train, test, low_precision=True)
    assert full > 90
    assert abs(mixed - full) <= 0.5, (mixed, full)


def test_disabled_autocast_inside_autocast_runs_ops_as_written():
    x = bai.Tensor(np.ones((2, 2), np.float32))
    with autocast(dtype="bfloat16"):
        with autocast(dtype="bfloat16", enabled=False):
            assert (x @ x).dtype == np.float32
        assert (x @ x).dtype == BF16


def test_checkpoint_recomputes_under_the_forwards_autocast():
    from buildingai.checkpoint import checkpoint

    bai.manual_seed(0)
    block = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    x = bai.Tensor(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))

    def gradients(run):
        block.zero_grad()
        with autocast(dtype="bfloat16"):
            out = run(x)
        (out.astype("float32") ** 2).sum().backward()  # backward outside the block
        return [p.grad.numpy() for p in block.parameters()]

    for plain, checkpointed in zip(gradients(block), gradients(lambda h: checkpoint(block, h))):
        np.testing.assert_array_equal(checkpointed, plain)


def test_an_inner_autocast_replaces_the_outer_one():
    x = bai.Tensor(np.ones((2, 2), np.float32))
    with autocast(dtype="bfloat16"):
        with autocast(dtype="float16"):
            assert (x @ x).dtype == np.float16
        assert (x @ x).dtype == BF16
    assert (x @ x).dtype == np.float32
