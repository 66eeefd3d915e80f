"""Sample cases for the first ops (the op families' own test files grow from here)."""

import pytest

import buildingai as bai
from tests.helpers import check_op, positive

BINARY_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),  # broadcasting on both sides
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((), (3,)),
    ((0, 3), (1, 3)),  # zero-size
]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize(
    "fn", [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b], ids=["add", "sub", "mul"]
)
def test_arithmetic(fn, shapes):
    check_op(fn, *shapes, gradgrad=True)


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
def test_div(shapes):
    check_op(lambda a, b: a / b, shapes[0], positive(*shapes[1]), gradgrad=True)


def test_scalars_on_either_side():
    check_op(lambda x: 2.0 - x * 3.0 + 1.0 / (x + 5.0), (3, 2), gradgrad=True)


def test_matmul_batched_broadcast():
    check_op(lambda a, b: a @ b, (2, 1, 3, 4), (5, 4, 2), gradgrad=True)


def test_exp_log_chain():
    check_op(lambda x: x.exp().log(), positive(4, 3), gradgrad=True)


def test_matmul_shape_error():
    with pytest.raises(
        bai.ShapeError, match=r"\[matmul\] cannot multiply \(32, 784\) by \(256, 10\)"
    ):
        bai.zeros(32, 784) @ bai.zeros(256, 10)
