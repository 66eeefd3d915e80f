"""``conj`` and its companions, as PyTorch code calls them on real tensors (``grad.conj()`` in
PyTorch's own optimizer steps): the tensor itself, as in PyTorch."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("method", ["conj", "conj_physical", "resolve_conj"])
def test_a_real_tensor_is_its_own_conjugate_as_in_pytorch(method):
    ours, theirs = bai.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    assert (getattr(ours, method)() is ours) == (getattr(theirs, method)() is theirs) is True
    assert getattr(bai, method)(ours) is ours
    assert not ours.is_conj() and not theirs.is_conj()


def test_gradients_flow_through_conj_of_a_real_tensor():
    x = bai.tensor([1.0, -2.0], requires_grad=True)
    (x.conj() * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0])


def test_a_complex_tensor_is_conjugated():
    values = np.array([1 + 2j, -3 - 0.5j])
    conjugated = bai.tensor(values).conj()
    np.testing.assert_array_equal(conjugated.numpy(), values.conj())
    np.testing.assert_array_equal(conjugated.numpy(), torch.tensor(values).conj().resolve_conj())
