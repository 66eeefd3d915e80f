"""``F.dropout`` and the channel dropouts take PyTorch's positional arguments (input, p,
training, inplace): the fourth is ``inplace``, and ``inplace=True`` writes into the input."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn


def test_the_fourth_positional_argument_is_inplace_and_writes_into_the_input():
    bai.manual_seed(0)
    x = bai.ones(4, 5) * 1.0  # not a leaf that requires grad
    out = F.dropout(x, 0.5, True, True)
    assert out is x
    values = x.numpy()
    assert set(np.unique(values)) <= {0.0, 2.0} and (values == 0).any()


def test_in_place_dropout_equals_out_of_place_with_the_same_seed_and_gradient():
    for inplace in (False, True):
        bai.manual_seed(3)
        w = bai.ones(3, 4, requires_grad=True)
        hidden = w * 1.5
        out = F.dropout(hidden, p=0.25, training=True, inplace=inplace)
        out.sum().backward()
        if not inplace:
            expected_out, expected_grad = out.numpy(), w.grad.numpy()
    np.testing.assert_array_equal(out.numpy(), expected_out)
    np.testing.assert_array_equal(w.grad.numpy(), expected_grad)


def test_modules_with_inplace_and_channel_dropout_take_the_same_spelling():
    bai.manual_seed(1)
    x = bai.ones(2, 3, 4, 4) + 0.0
    assert nn.Dropout2d(0.5, inplace=True)(x) is x
    y = bai.ones(2, 3, 4, 4) + 0.0
    assert F.dropout2d(y, 0.5, True, True) is y
    assert F.dropout(y, 0.5, False, True) is y  # evaluation: the input, unchanged


def test_a_leaf_that_requires_grad_is_refused_in_place():
    leaf = bai.ones(3, requires_grad=True)
    with pytest.raises(bai.AutogradError):
        F.dropout(leaf, 0.5, True, True)
