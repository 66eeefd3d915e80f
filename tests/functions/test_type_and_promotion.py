"""PyTorch's questions about dtypes and its older type spellings, against PyTorch itself:
``x.type()``, ``x.type(dtype)``, ``promote_types``, ``result_type``, ``can_cast``, ``numel``
and ``where(condition)`` with the condition alone."""

import itertools

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.errors import DTypeError

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
if bai.bfloat16 is not None:
    NAMES.append("bfloat16")


def _ours(name):
    return bai.bool_ if name == "bool" else getattr(bai, name)


def _theirs(name):
    return getattr(torch, name)


def _name(dtype) -> str:
    return str(dtype).replace("torch.", "")


@pytest.mark.parametrize("name", NAMES + ["complex64", "complex128"])
def test_type_names_a_tensors_type_as_pytorch(name):
    values = np.array([1, 0, 2])
    ours = bai.tensor(values).to(_ours(name)) if name in NAMES else bai.tensor(values.astype(name))
    theirs = torch.tensor(values).to(_theirs(name))
    assert ours.type() == theirs.type()


@pytest.mark.parametrize("target", ["float64", "int32", "float16", "bool"])
def test_type_casts_to_a_dtype_or_a_type_name(target):
    values = np.array([1.5, -2.5, 0.0], dtype=np.float32)
    ours, theirs = bai.tensor(values), torch.tensor(values)
    for ours_cast, theirs_cast in (
        (ours.type(_ours(target)), theirs.type(_theirs(target))),
        (ours.type(theirs.type(_theirs(target)).type()), theirs.type(_theirs(target))),
    ):
        assert str(ours_cast.dtype) == _name(theirs_cast.dtype)
        np.testing.assert_array_equal(ours_cast.numpy(), theirs_cast.numpy())
    assert ours.type(bai.float32) is ours  # nothing to change: the tensor itself, as PyTorch


def test_type_keeps_the_gradient_path_and_refuses_unknown_names():
    x = bai.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (x.type(bai.float64) * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(DTypeError, match="unknown type name 'torch.FancyTensor'"):
        x.type("torch.FancyTensor")


def test_promote_types_and_can_cast_match_pytorch_for_every_pair():
    for first, second in itertools.product(NAMES, repeat=2):
        ours = bai.promote_types(_ours(first), _ours(second))
        assert str(ours) == _name(torch.promote_types(_theirs(first), _theirs(second)))
        expected = torch.can_cast(_theirs(first), _theirs(second))
        assert bai.can_cast(_ours(first), _ours(second)) is expected, (first, second)


@pytest.mark.parametrize(
    "operands",
    [
        (np.array([1]), 2.5),
        (np.array([1.0], dtype=np.float16), np.array(1.0)),
        (np.array([1], dtype=np.int8), np.array([1], dtype=np.uint8)),
        (np.array(1), True),
        (np.array([True]), 3),
        (2, 3.0),
        (2, 3),
    ],
    ids=str,
)
def test_result_type_matches_pytorch(operands):
    def convert(library, value):
        return library.tensor(value) if isinstance(value, np.ndarray) else value

    ours = bai.result_type(*(convert(bai, v) for v in operands))
    theirs = torch.result_type(*(convert(torch, v) for v in operands))
    assert str(ours) == _name(theirs)


def test_numel_as_a_function():
    assert bai.numel(bai.zeros(3, 4)) == torch.numel(torch.zeros(3, 4)) == 12


def test_where_with_the_condition_alone_gives_the_indices_per_dimension():
    mask = np.array([[1, 0, 2], [0, 3, 0]])
    ours, theirs = bai.where(bai.tensor(mask) > 0), torch.where(torch.tensor(mask) > 0)
    assert isinstance(ours, tuple) and len(ours) == len(theirs) == 2
    for got, want in zip(ours, theirs):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert str(got.dtype) == "int64"
    with pytest.raises(TypeError, match=r"\[where\] takes condition, input and other"):
        bai.where(bai.tensor(mask) > 0, bai.tensor(mask))
