"""The binary forms ``max(a, b)`` / ``min(a, b)`` (``maximum`` / ``minimum``) in every spelling
PyTorch has, against PyTorch in float64: broadcasting, ties (the gradient splits in halves),
NaN, dtype promotion and second derivatives."""

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op, constant

torch = pytest.importorskip("torch")

SPELLINGS = [
    ("max(a, b)", lambda lib, a, b: lib.max(a, b), "max"),
    ("max(a, other=b)", lambda lib, a, b: lib.max(a, other=b), "max"),
    ("a.max(b)", lambda lib, a, b: a.max(b), "max"),
    ("maximum(a, b)", lambda lib, a, b: lib.maximum(a, b), "max"),
    ("a.maximum(b)", lambda lib, a, b: a.maximum(b), "max"),
    ("min(a, b)", lambda lib, a, b: lib.min(a, b), "min"),
    ("min(a, other=b)", lambda lib, a, b: lib.min(a, other=b), "min"),
    ("a.min(b)", lambda lib, a, b: a.min(b), "min"),
    ("minimum(a, b)", lambda lib, a, b: lib.minimum(a, b), "min"),
    ("a.minimum(b)", lambda lib, a, b: a.minimum(b), "min"),
]


@pytest.mark.parametrize(("name", "call", "_"), SPELLINGS, ids=[s[0] for s in SPELLINGS])
@pytest.mark.parametrize(
    ("shape_a", "shape_b"), [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1), (1, 3))]
)
def test_spellings_match_torch_with_broadcasting(name, call, _, shape_a, shape_b):
    check_op(
        lambda a, b: call(bai, a, b),
        shape_a,
        shape_b,
        torch_fn=lambda a, b: call(torch, a, b),
        gradgrad=True,
    )


@pytest.mark.parametrize("name", ["max", "min"])
def test_ties_split_the_gradient_in_halves_like_torch(name):
    a = constant(np.array([1.0, 2.0, -3.0, 0.5]), requires_grad=True)
    b = constant(np.array([1.0, 1.0, -3.0, 0.7]), requires_grad=True)
    check_op(
        lambda x, y: getattr(bai, name)(x, y),
        a,
        b,
        torch_fn=lambda x, y: getattr(torch, name)(x, y),
        gradcheck=False,
        gradgrad=True,
    )
    x = bai.tensor(np.array([2.0, 2.0]), requires_grad=True)
    y = bai.tensor(np.array([2.0, 1.0]), requires_grad=True)
    getattr(bai, name)(x, y).sum().backward()
    expected_x = [0.5, 1.0] if name == "max" else [0.5, 0.0]
    np.testing.assert_array_equal(x.grad.numpy(), expected_x)


@pytest.mark.parametrize("name", ["max", "min"])
def test_nan_propagates_and_dtypes_promote_like_torch(name):
    check_op(
        lambda x, y: getattr(bai, name)(x, y),
        constant([np.nan, 1.0, 2.0]),
        constant([0.0, np.nan, 1.0]),
        torch_fn=lambda x, y: getattr(torch, name)(x, y),
    )
    ints = bai.tensor(np.array([1, 5, 3]))
    floats = bai.tensor(np.array([2.5, 0.5, 3.5], dtype=np.float32))
    out = getattr(bai, name)(ints, floats)
    expected = getattr(torch, name)(torch.tensor([1, 5, 3]), torch.tensor([2.5, 0.5, 3.5]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
