"""Ops that cut along an axis refuse a 0-d tensor by name, and expand refuses -1 in a new
leading dimension, as PyTorch does (instead of a bare IndexError or a silently wrong size)."""

import pytest

import buildingai as bai
from buildingai.errors import ShapeError


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.narrow(0, 0, 1),
        lambda x: bai.split(x, 1),
        lambda x: bai.chunk(x, 2),
        lambda x: x.unflatten(0, (1, 1)),
        lambda x: x.repeat_interleave(2, dim=0),
    ],
    ids=["narrow", "split", "chunk", "unflatten", "repeat_interleave"],
)
def test_cutting_a_0d_tensor_names_the_op(call):
    with pytest.raises(ShapeError, match=r"needs a tensor with at least 1 dimension, got a 0-d"):
        call(bai.tensor(3.0))


def test_repeat_interleave_without_dim_still_flattens_a_0d_tensor():
    assert bai.tensor(3.0).repeat_interleave(2).numpy().tolist() == [3.0, 3.0]


def test_expand_refuses_minus_one_in_a_new_leading_dimension():
    with pytest.raises(ShapeError, match=r"\[expand\] -1 at axis 0"):
        bai.ones(3).expand(-1, 3)
    assert bai.ones(1, 3).expand(4, -1).shape == (4, 3)
