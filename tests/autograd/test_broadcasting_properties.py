"""Property tests: gradients through broadcasting are the broadcast gradient summed back."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import buildingai as bai


@st.composite
def broadcastable_pair(draw):
    """Two shapes that broadcast together, with size-1 and missing dimensions on either side."""
    full = draw(st.lists(st.integers(1, 4), min_size=0, max_size=4))
    left, right = [], []
    for extent in full:
        choice = draw(st.sampled_from(["both", "left1", "right1"]))
        left.append(1 if choice == "left1" else extent)
        right.append(1 if choice == "right1" else extent)
    drop_left = draw(st.integers(0, len(left)))
    drop_right = draw(st.integers(0, len(right)))
    return tuple(left[drop_left:]), tuple(right[drop_right:]), tuple(full)


def reduce_to(array: np.ndarray, shape: tuple) -> np.ndarray:
    lead = array.ndim - len(shape)
    array = array.sum(axis=tuple(range(lead))) if lead else array
    axes = tuple(i for i, extent in enumerate(shape) if extent == 1 and array.shape[i] != 1)
    return array.sum(axis=axes, keepdims=True) if axes else array


@settings(max_examples=60, deadline=None)
@given(broadcastable_pair(), st.sampled_from(["add", "sub", "mul", "div"]))
def test_broadcast_gradients_sum_back(shapes, op):
    left_shape, right_shape, _ = shapes
    rng = np.random.default_rng(0)
    a0 = rng.uniform(0.5, 2.0, size=left_shape)
    b0 = rng.uniform(0.5, 2.0, size=right_shape)
    a = bai.tensor(a0, requires_grad=True)
    b = bai.tensor(b0, requires_grad=True)
    out = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    upstream = rng.standard_normal(out.shape)
    out.backward(bai.tensor(upstream))

    a_full, b_full = np.broadcast_arrays(a0, b0)
    local_a = {"add": 1.0, "sub": 1.0, "mul": b_full, "div": 1.0 / b_full}[op]
    local_b = {"add": 1.0, "sub": -1.0, "mul": a_full, "div": -a_full / b_full**2}[op]
    np.testing.assert_allclose(a.grad.numpy(), reduce_to(upstream * local_a, left_shape))
    np.testing.assert_allclose(b.grad.numpy(), reduce_to(upstream * local_b, right_shape))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
