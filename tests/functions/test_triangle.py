"""tril, triu and Tensor.t() against PyTorch, and their errors."""

from __future__ import annotations

import pytest

import buildingai as bai

from ..helpers import check_op, constant, torch


@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles_match_torch(name, diagonal):
    check_op(
        lambda x: getattr(bai, name)(x, diagonal),
        (2, 4, 5),
        torch_fn=lambda x: getattr(torch, name)(x, diagonal),
        gradgrad=True,
    )


def test_methods_keyword_and_integer_inputs():
    check_op(lambda x: x.tril(diagonal=1), (3, 3))
    check_op(lambda x: x.triu(), (5, 2))
    check_op(lambda x: x.tril(), constant([[1, 2], [3, 4]]))
    check_op(lambda x: x.triu(-1), constant([[True, True], [True, False]]))


def test_causal_mask_as_model_code_builds_it():
    block_size = 4
    ours = bai.tril(bai.ones(block_size, block_size)).view(1, 1, block_size, block_size)
    theirs = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
    assert ours.dtype == bai.float32
    assert (ours.numpy() == theirs.numpy()).all()


@pytest.mark.parametrize("shape", [(), (4,), (3, 5)])
def test_t_matches_torch(shape):
    check_op(lambda x: x.t(), shape)
    check_op(lambda x: bai.t(x), shape, torch_fn=torch.t)


def test_errors_name_the_op_and_the_shape():
    with pytest.raises(bai.ShapeError, match=r"\[tril\] needs a tensor with at least 2 dim"):
        bai.tril(bai.zeros(3))
    with pytest.raises(TypeError, match=r"\[triu\] diagonal must be an int"):
        bai.triu(bai.zeros(3, 3), 0.5)
    with pytest.raises(
        bai.ShapeError, match=r"\[t\] expects a tensor with at most 2 dim.*\(2, 3, 4\)"
    ):
        bai.zeros(2, 3, 4).t()
