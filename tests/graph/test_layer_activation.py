"""The layer-ReLU pass (``graph/passes/layer_activation.py``): which ``conv2d`` -> ``relu`` and
``linear`` -> ``relu`` pairs become one ``conv2d_relu`` or ``linear_relu`` node, and frozen and
compiled graphs with them computing what eager execution computes, with the accelerated kernels
and on the records alone."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.accel import registry
from buildingai.graph import TensorSpec, freeze
from buildingai.graph.passes import fuse_layer_relu, optimize
from buildingai.nn import functional as F


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _names(graph):
    return [node.op.name for node in graph.nodes]


def _cnn():
    bai.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 10),
    )  # fmt: skip


def _mlp(width=32):
    bai.manual_seed(0)
    return nn.Sequential(
        nn.Linear(20, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
        nn.Linear(width, 10),
    )  # fmt: skip


@pytest.fixture(params=["accelerated", "records"])
def acceleration(request):
    with bai.accel.enabled(request.param == "accelerated"):
        yield request.param


def test_each_convolution_read_only_by_a_relu_becomes_conv2d_relu():
    static = freeze(_cnn().eval(), [TensorSpec((None, 1, 12, 12))], optimize=False)
    fused = fuse_layer_relu(static.graph)
    assert _names(static.graph)[:4] == ["conv2d", "relu", "conv2d", "relu"]
    assert _names(fused)[:2] == ["conv2d_relu", "conv2d_relu"]
    assert "conv2d" not in _names(fused) and "relu" not in _names(fused)
    assert "conv2d_relu" in _names(optimize(static.graph))


def test_each_linear_layer_read_only_by_a_relu_becomes_linear_relu():
    static = freeze(_mlp().eval(), [TensorSpec((None, 20))], optimize=False)
    assert _names(static.graph) == ["linear", "relu", "linear", "relu", "linear"]
    assert _names(fuse_layer_relu(static.graph)) == ["linear_relu", "linear_relu", "linear"]
    assert _names(optimize(static.graph)) == ["linear_relu", "linear_relu", "linear"]


def test_a_linear_output_read_elsewhere_or_returned_stays_whole():
    weight = bai.tensor(_x(4, 3))

    def read_twice(x):
        y = F.linear(x, weight)
        return F.relu(y) * y

    def returned(x):
        y = F.linear(x, weight)
        return F.relu(y), y

    for function in (read_twice, returned):
        graph = freeze(function, [TensorSpec((None, 3))], optimize=False).graph
        assert "linear_relu" not in _names(fuse_layer_relu(graph)), function.__name__


def test_a_convolution_output_read_elsewhere_or_returned_stays_whole():
    weight = bai.tensor(_x(4, 2, 3, 3))

    def read_twice(x):
        y = F.conv2d(x, weight)
        return F.relu(y) + y

    def returned(x):
        y = F.conv2d(x, weight)
        return y, F.relu(y)

    for function in (read_twice, returned):
        graph = freeze(function, [TensorSpec((None, 2, 6, 6))], optimize=False).graph
        assert "conv2d_relu" not in _names(fuse_layer_relu(graph)), function.__name__


def test_frozen_graph_with_the_joined_op_equals_eager(acceleration):
    model = _cnn().eval()
    static = freeze(model, [TensorSpec((None, 1, 12, 12))], optimize=True)
    assert _names(static.graph).count("conv2d_relu") == 2
    for batch in (1, 3):
        x = _x(batch, 1, 12, 12, seed=batch)
        x[0, 0, 5, 5] = np.nan  # NaN through the convolution and the ReLU, as eager has it
        with bai.no_grad():
            expected = model(bai.tensor(x)).numpy()
        got = static(x).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [1, 5, 300])
def test_frozen_mlp_with_the_joined_op_equals_eager(acceleration, batch):
    """Batch 300 at width 1024 is a product the accelerated kernel routes (and a ReLU it
    splits across threads); the smaller ones run the record's in-place ReLU."""
    width = 1024 if batch == 300 else 32
    model = _mlp(width).eval()
    static = freeze(model, [TensorSpec((None, 20))], optimize=True)
    assert _names(static.graph).count("linear_relu") == 2
    x = _x(batch, 20, seed=batch)
    x[0, 3] = np.nan  # NaN through the product and the ReLU, as eager has it
    with bai.no_grad():
        expected = model(bai.tensor(x)).numpy()
    got = static(x).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_the_routed_kernel_takes_a_large_joined_layer():
    from buildingai.ops.linalg import LINEAR_RELU

    with bai.accel.enabled(True):
        kernel = bai.accel.kernel("linear_relu.routed")
        assert kernel in LINEAR_RELU.accelerated or kernel.missing
        x, weight = np.ones((300, 20), "float32"), np.ones((1024, 20), "float32")
        assert not registry.too_small(LINEAR_RELU, [x, weight])
        assert registry.too_small(LINEAR_RELU, [x[:1], weight[:32]])  # 640 multiply-adds


# joined op -> (model maker, input shape, targets)
TRAINED = {
    "linear_relu": (_mlp, (6, 20), [1, 0, 3, 9, 2, 2]),
    "conv2d_relu": (_cnn, (4, 1, 12, 12), [1, 0, 3, 9]),
}


@pytest.mark.parametrize("joined", sorted(TRAINED))
def test_compiled_training_steps_with_the_joined_op_equal_eager(acceleration, joined):
    """In a training graph the ReLU's gradient reads the joined op's output: the losses and the
    parameters after two SGD steps as eager's."""
    make_model, shape, targets = TRAINED[joined]
    x, y = bai.tensor(_x(*shape)), bai.tensor(np.array(targets))
    results = []
    for compiled in (False, True):
        model = make_model()
        step = _training_step(model, bai.optim.SGD(model.parameters(), lr=0.1))
        spec = [TensorSpec((None, *shape[1:])), TensorSpec((None,), "int64")]
        run = bai.compile(step, spec) if compiled else step
        losses = [run(x, y).item() for _ in range(2)]
        results.append((losses, [p.numpy().copy() for p in model.parameters()]))
        if compiled:
            assert joined in _names(run.graph)
    (eager_losses, eager_state), (losses, state) = results
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for got, expected in zip(state, eager_state):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _training_step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step
