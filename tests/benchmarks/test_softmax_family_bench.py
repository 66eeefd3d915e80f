"""The softmax-family benchmark's NumPy lower bounds compute what BuildingAI computes (its quick
run is in test_case_table.py)."""

import numpy as np

import buildingai as bai
from benchmarks import softmax_family as benchmark


def test_the_numpy_lower_bounds_are_the_same_functions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 9)).astype(np.float32)
    g = rng.standard_normal((6, 9)).astype(np.float32)
    out, dx = np.empty_like(x), np.empty_like(x)
    benchmark._np_log_softmax(x, g, out, dx)
    tensor = bai.tensor(x, requires_grad=True)
    result = bai.nn.functional.log_softmax(tensor, -1)
    result.backward(bai.tensor(g))
    np.testing.assert_allclose(out, result.numpy(), atol=1e-6)
    np.testing.assert_allclose(dx, tensor.grad.numpy(), atol=1e-6)
    target = rng.integers(0, 9, 6)
    loss = benchmark._np_cross_entropy(x, target, dx)
    tensor = bai.tensor(x, requires_grad=True)
    ours = bai.nn.functional.cross_entropy(tensor, bai.tensor(target))
    ours.backward()
    assert abs(loss - ours.item()) <= 1e-6
    np.testing.assert_allclose(dx, tensor.grad.numpy(), atol=1e-7)
