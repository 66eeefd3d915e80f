"""``is_contiguous``, ``get_device``, ``data_ptr``, ``new_empty`` and the dtype methods
``bfloat16()``, ``byte()``, ``char()``, ``short()`` against PyTorch."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "view",
    [lambda x: x, lambda x: x.t(), lambda x: x[:, 1:], lambda x: x[1:], lambda x: x[::2],
     lambda x: x.reshape(4, 3), lambda x: x.transpose(0, 1).contiguous()],
)  # fmt: skip
def test_is_contiguous_matches_pytorch(view):
    data = np.arange(12.0).reshape(3, 4)
    assert view(bai.tensor(data)).is_contiguous() is view(torch.tensor(data)).is_contiguous()


def test_get_device_and_data_ptr():
    x, tx = bai.zeros(3, 4), torch.zeros(3, 4)
    assert x.get_device() == tx.get_device() == -1
    assert x[1:].data_ptr() - x.data_ptr() == tx[1:].data_ptr() - tx.data_ptr() == 16
    assert x.clone().data_ptr() != x.data_ptr()


@pytest.mark.parametrize("size", [((2, 3),), (2, 3)], ids=["tuple", "ints"])
def test_new_empty_matches_pytorch(size):
    ours, theirs = (
        bai.zeros(1, dtype="float64").new_empty(*size),
        torch.zeros(1, dtype=torch.float64).new_empty(*size),
    )
    assert ours.shape == tuple(theirs.shape) == (2, 3)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    assert bai.zeros(1).new_empty(2, dtype=bai.int64).dtype == bai.int64


@pytest.mark.parametrize("method", ["bfloat16", "byte", "char", "short", "half", "long"])
def test_dtype_methods_match_pytorch(method):
    data = np.array([1.5, 2.0, 100.0])
    ours, theirs = getattr(bai.tensor(data), method)(), getattr(torch.tensor(data), method)()
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.numpy().astype(float), theirs.float().numpy())
