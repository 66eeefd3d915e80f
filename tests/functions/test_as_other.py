"""``view_as``, ``reshape_as``, ``expand_as``, ``type_as`` and the device flags ``is_cuda``,
``is_cpu``, ``is_xpu``, against PyTorch."""

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op

torch = pytest.importorskip("torch")


def test_view_as_and_reshape_as_match_pytorch():
    check_op(lambda x, y: x.view_as(y), (2, 6), (3, 4), gradgrad=True)
    check_op(lambda x, y: x.reshape_as(y), (2, 6), (4, 3, 1))


def test_expand_as_matches_pytorch():
    check_op(lambda x, y: x.expand_as(y), (1, 3), (4, 3), gradgrad=True)


def test_type_as_takes_the_dtype_of_the_other_tensor():
    ours = bai.tensor([1, 2]).type_as(bai.zeros(1, dtype=bai.float64))
    theirs = torch.tensor([1, 2]).type_as(torch.zeros(1, dtype=torch.float64))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "") == "float64"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_view_as_refuses_another_element_count():
    with pytest.raises(bai.ShapeError):
        bai.zeros(2, 3).view_as(bai.zeros(4))


def test_device_flags():
    x, t = bai.zeros(2), torch.zeros(2)
    assert (
        (x.is_cuda, x.is_cpu, x.is_xpu) == (t.is_cuda, t.is_cpu, t.is_xpu) == (False, True, False)
    )
