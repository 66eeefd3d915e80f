"""``max_unpool1d`` / ``max_unpool2d`` and their layers against PyTorch: values from max
pooling's indices, output_size, unbatched input, the gradient, errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape, kernel, stride, padding", [((2, 3, 6, 8), 2, None, 0),
                                                             ((1, 2, 7, 7), 3, 2, 1),
                                                             ((3, 5, 4), 2, None, 0)])  # fmt: skip
def test_unpool2d_matches_pytorch_with_its_gradient(shape, kernel, stride, padding):
    x = RNG.standard_normal(shape)
    pooled, indices = F.max_pool2d(bai.tensor(x), kernel, stride, padding, return_indices=True)
    t_pooled, t_indices = torch.nn.functional.max_pool2d(
        torch.tensor(x), kernel, stride, padding, return_indices=True
    )
    ours = bai.tensor(pooled.numpy(), requires_grad=True)
    theirs = torch.tensor(t_pooled.numpy(), requires_grad=True)
    out = F.max_unpool2d(ours, indices, kernel, stride, padding, output_size=shape[-2:])
    expected = torch.nn.functional.max_unpool2d(theirs, t_indices, kernel, stride, padding,
                                                output_size=shape[-2:])  # fmt: skip
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    upstream = RNG.standard_normal(shape)
    (out * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_unpool1d_and_the_layers():
    x = RNG.standard_normal((2, 3, 9))
    pooled, indices = F.max_pool1d(bai.tensor(x), 3, return_indices=True)
    t_pooled, t_indices = torch.nn.functional.max_pool1d(torch.tensor(x), 3, return_indices=True)
    layer, reference = nn.MaxUnpool1d(3), torch.nn.MaxUnpool1d(3)
    np.testing.assert_array_equal(layer(pooled, indices).numpy(),
                                  reference(t_pooled, t_indices).numpy())  # fmt: skip
    assert repr(layer) == repr(reference)
    assert repr(nn.MaxUnpool2d(3, 2, 1)) == repr(torch.nn.MaxUnpool2d(3, 2, 1))


def test_pytorchs_example_runs_as_written():
    torch = bai  # noqa: F841 - the example's spelling
    pool = nn.MaxPool2d(2, stride=2, return_indices=True)
    unpool = nn.MaxUnpool2d(2, stride=2)
    input = bai.tensor([[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0],  # noqa: A001
                          [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]]])  # fmt: skip
    output, indices = pool(input)
    np.testing.assert_array_equal(
        unpool(output, indices).numpy(),
        [[[[0, 0, 0, 0], [0, 6, 0, 8], [0, 0, 0, 0], [0, 14, 0, 16]]]],
    )
    # Now using output_size to resolve an ambiguous size for the inverse
    input = bai.tensor([[[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0],  # noqa: A001
                          [11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0]]]])  # fmt: skip
    output, indices = pool(input)
    assert unpool(output, indices, output_size=input.size()).shape == (1, 1, 4, 5)


def test_indices_outside_the_output_are_refused():
    with pytest.raises(Exception, match=r"\[max_unpool2d\] an index .* outside the output plane"):
        F.max_unpool2d(bai.ones(1, 1, 2, 2), bai.tensor(np.full((1, 1, 2, 2), 99)), 2)
