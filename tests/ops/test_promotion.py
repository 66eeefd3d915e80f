"""Dtype promotion of element-wise ops against ``torch.result_type``: dimensioned tensors, 0-d
tensors and Python scalars of every dtype, in forward and in ``infer`` alike."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import buildingai as bai
from buildingai.ops import elementwise as ew
from buildingai.ops.abstract import spec_of
from buildingai.ops.promotion import result_type

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64"]
DTYPES += ["float16", "bfloat16", "float32", "float64"]


def _numpy_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _torch_dtype(name):
    return getattr(torch, name)


def _operands():
    """(label, ours, theirs) for each dtype as a (2, 3) and a 0-d tensor, and Python scalars."""
    out = []
    for name in DTYPES:
        for shape in ((2, 3), ()):
            values = np.full(shape, 2).astype(_numpy_dtype(name))
            theirs = torch.full(shape, 2).to(_torch_dtype(name))
            out.append((f"{name}{list(shape)}", bai.tensor(values), theirs))
    for scalar in (True, 3, 2.5):
        out.append((repr(scalar), scalar, scalar))
    return out


OPERANDS = _operands()
PAIRS = [
    (a, b)
    for a, b in itertools.product(OPERANDS, repeat=2)
    if isinstance(a[1], bai.Tensor) or isinstance(b[1], bai.Tensor)
]


def _as_numpy_dtype(torch_dtype):
    if torch_dtype == torch.bfloat16:
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(str(torch_dtype).removeprefix("torch."))


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda case: case[0])
def test_result_type_matches_torch(a, b):
    want = _as_numpy_dtype(torch.result_type(a[2], b[2]))
    assert result_type(spec_of(a[1]), spec_of(b[1])) == want


# op, its PyTorch counterpart; each is run over every pair its PyTorch counterpart accepts
BINARY = [
    (ew.ADD, torch.add),
    (ew.SUB, torch.sub),
    (ew.MUL, torch.mul),
    (ew.DIV, torch.true_divide),
    (ew.MAXIMUM, torch.maximum),
    (ew.MINIMUM, torch.minimum),
    (ew.POW, torch.pow),
    (ew.FLOOR_DIVIDE, torch.floor_divide),
    (ew.REMAINDER, torch.remainder),
    (ew.EQ, torch.eq),
    (ew.LT, torch.lt),
    (ew.LOGICAL_AND, torch.logical_and),
    (ew.BITWISE_AND, torch.bitwise_and),
    (ew.BITWISE_XOR, torch.bitwise_xor),
]


@pytest.mark.parametrize("op, torch_fn", BINARY, ids=lambda v: getattr(v, "name", ""))
def test_binary_ops_forward_and_infer_match_torch_dtypes(op, torch_fn):
    checked = 0
    for (label_a, ours_a, theirs_a), (label_b, ours_b, theirs_b) in PAIRS:
        scalars = not (isinstance(ours_a, bai.Tensor) and isinstance(ours_b, bai.Tensor))
        if scalars and torch_fn in (torch.maximum, torch.minimum):
            continue  # PyTorch takes tensors only there
        try:
            expected = torch_fn(theirs_a, theirs_b)
        except (RuntimeError, TypeError):
            continue  # PyTorch refuses the pair (bool subtraction, bitwise on floats...)
        want = _as_numpy_dtype(expected.dtype)
        out = op(ours_a, ours_b)
        assert out.dtype == want, (op.name, label_a, label_b, out.dtype, want)
        inferred = op.infer(spec_of(ours_a), spec_of(ours_b))
        assert inferred.dtype == want and inferred.shape == out.shape, (label_a, label_b)
        checked += 1
    assert checked > 100


def test_zero_dim_float64_does_not_widen_float32():
    x = bai.tensor(np.ones((2, 3), np.float32))
    scalar_tensor = bai.tensor(np.float64(0.1))
    assert (x + scalar_tensor).dtype == np.float32
    assert (x * scalar_tensor).dtype == np.float32
    assert bai.where(x > 0, x, scalar_tensor).dtype == np.float32
    assert x.clamp(scalar_tensor, 1.0).dtype == np.float32
    # comparisons run in the promoted dtype: 0.1 in float32 equals float32(0.1), as in PyTorch
    tenth = bai.tensor(np.full(3, 0.1, np.float32))
    assert bool((tenth == scalar_tensor).all())
    assert bool(torch.eq(torch.full((3,), 0.1), torch.tensor(0.1, dtype=torch.float64)).all())


def test_integer_tensor_meets_zero_dim_integer_and_float():
    x = bai.tensor(np.ones(4, np.int8))
    assert (x + bai.tensor(np.int64(3))).dtype == np.int8
    assert (x + bai.tensor(np.float64(0.5))).dtype == np.float64  # torch.result_type agrees
    assert torch.result_type(torch.ones(4, dtype=torch.int8), torch.tensor(0.5)) == torch.float32


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "bool"])
def test_where_dtype_of_branches(dtype):
    condition = bai.tensor(np.array([True, False, True]))
    x = bai.tensor(np.array([1, 0, 1]).astype(dtype))
    for other in (0.5, 2, bai.tensor(np.float64(0.5)), bai.tensor(np.zeros(3, np.float16))):
        theirs_other = (
            other if not isinstance(other, bai.Tensor) else torch.from_numpy(other.numpy())
        )
        expected = torch.where(
            torch.from_numpy(condition.numpy()), torch.from_numpy(x.numpy()), theirs_other
        )
        out = bai.where(condition, x, other)
        assert out.dtype == _as_numpy_dtype(expected.dtype)
        assert ew.WHERE.infer(*map(spec_of, (condition, x, other))).dtype == out.dtype
