"""``view`` against PyTorch: it works exactly where torch's view works (on the strides) and
raises a ShapeError pointing to ``reshape`` where torch's raises, instead of silently copying."""

import itertools

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError

torch = pytest.importorskip("torch")


def _pair(shape):
    array = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return bai.tensor(array), torch.tensor(array)


def test_transposed_view_raises_naming_shape_strides_and_reshape():
    ours, theirs = _pair((2, 3, 4))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        theirs.transpose(1, 2).view(2, 12)
    with pytest.raises(ShapeError) as info:
        ours.transpose(1, 2).view(2, 12)
    message = str(info.value)
    assert "[view]" in message and "(2, 4, 3)" in message and "strides (12, 1, 4)" in message
    assert "x.reshape(2, 12)" in message and "contiguous().view(2, 12)" in message


def test_attention_head_merge_after_transpose_raises_as_in_torch():
    ours, theirs = _pair((2, 4, 3, 5))  # (B, H, T, D)
    with pytest.raises(RuntimeError):
        theirs.transpose(1, 2).view(2, 3, 20)
    with pytest.raises(ShapeError, match=r"\[view\]"):
        ours.transpose(1, 2).view(2, 3, 20)
    merged = ours.transpose(1, 2).reshape(2, 3, 20)  # the fix the error suggests
    expected = theirs.transpose(1, 2).reshape(2, 3, 20).numpy()
    np.testing.assert_array_equal(merged.numpy(), expected)
    np.testing.assert_array_equal(
        ours.transpose(1, 2).contiguous().view(2, 3, 20).numpy(), expected
    )


@pytest.mark.parametrize(
    ("make", "target"),
    [
        (lambda x: x.transpose(1, 2), (2, 4, 3, 1)),  # only size-1 dimensions added
        (lambda x: x.transpose(0, 1), (3, 2, 2, 2)),  # splits the last, contiguous dimension
        (lambda x: x.transpose(0, 1), (3, 2, 4)),  # nothing merged across the transposition
        (lambda x: x.permute(2, 0, 1), (4, 6)),  # merges dims 1 and 2, still adjacent
        (lambda x: x[:, 1:, :], (2, 8)),  # merges the contiguous trailing dims of a slice
        (lambda x: x[:, :, ::2], (6, 2)),  # strided, but dims 0 and 1 stay mergeable
        (lambda x: x[:1].expand(5, 3, 4), (5, 12)),  # stride-0 dim kept apart
        (lambda x: x.unsqueeze(1).transpose(1, 2), (2, 3, 4)),
    ],
    ids=["unit dims", "split", "transposed as is", "adjacent merge", "slice", "step", "expand",
         "unsqueeze"],
)  # fmt: skip
def test_views_expressible_on_the_strides_still_work_and_share_memory(make, target):
    ours, theirs = _pair((2, 3, 4))
    source = make(ours)
    viewed = source.view(*target)
    expected = make(theirs).view(*target)
    np.testing.assert_array_equal(viewed.numpy(), expected.numpy())
    assert np.shares_memory(viewed.data, ours.data)


def test_view_gradient_matches_torch():
    ours, theirs = _pair((2, 3, 4))
    ours.requires_grad_(True)
    theirs.requires_grad_(True)
    weights = np.random.default_rng(0).standard_normal((3, 2, 4))
    (ours.transpose(0, 1).view(3, 2, 4) * bai.tensor(weights)).sum().backward()
    (theirs.transpose(0, 1).view(3, 2, 4) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())


def _random_view_case(rng):
    """A random chain of view ops on a random tensor, applied to both libraries."""
    shape = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 5)))
    ours, theirs = _pair(shape)
    for _ in range(rng.integers(1, 4)):
        kind = rng.choice(["permute", "slice", "expand", "unsqueeze"])
        if kind == "permute" and ours.ndim > 1:
            order = [int(a) for a in rng.permutation(ours.ndim)]
            ours, theirs = ours.permute(*order), theirs.permute(*order)
        elif kind == "slice":
            axis = int(rng.integers(ours.ndim))
            start, step = int(rng.integers(ours.shape[axis])), int(rng.integers(1, 3))
            index = (slice(None),) * axis + (slice(start, None, step),)
            ours, theirs = ours[index], theirs[index]
        elif kind == "expand":
            ones = [a for a, extent in enumerate(ours.shape) if extent == 1]
            if ones:
                grown = list(ours.shape)
                grown[ones[0]] = 3
                ours, theirs = ours.expand(*grown), theirs.expand(*grown)
        elif kind == "unsqueeze":
            axis = int(rng.integers(ours.ndim + 1))
            ours, theirs = ours.unsqueeze(axis), theirs.unsqueeze(axis)
    return ours, theirs


def _factorizations(count: int, parts: int):
    if parts == 1:
        return [(count,)]
    return [
        (first,) + rest
        for first in range(1, count + 1)
        if count % first == 0
        for rest in _factorizations(count // first, parts - 1)
    ]


def test_view_raises_exactly_where_torch_raises():
    rng = np.random.default_rng(0)
    compared = refused = 0
    for _ in range(400):
        ours, theirs = _random_view_case(rng)
        count = int(np.prod(ours.shape))
        targets = itertools.chain.from_iterable(_factorizations(count, k) for k in (1, 2, 3))
        for target in targets:
            try:
                expected = theirs.view(*target)
            except RuntimeError:
                expected = None
            if expected is None:
                with pytest.raises(ShapeError, match=r"\[view\]"):
                    ours.view(*target)
                refused += 1
            else:
                viewed = ours.view(*target)
                np.testing.assert_array_equal(viewed.numpy(), expected.numpy())
            compared += 1
    assert refused > 100 and compared - refused > 100  # both outcomes were exercised


def test_layouts_that_differ_from_torch_are_not_refused():
    ours, theirs = _pair((2, 3, 4))
    # flip is a copy in torch, so its view always works there; here flip is a view
    np.testing.assert_array_equal(ours.flip(0).view(-1).numpy(), theirs.flip(0).view(-1).numpy())
    # a reduction over a permuted tensor is contiguous in torch, laid out as NumPy's here
    summed = ours.permute(0, 2, 1).sum(dim=1)
    expected = theirs.permute(0, 2, 1).sum(dim=1).view(6)
    np.testing.assert_array_equal(summed.view(6).numpy(), expected.numpy())


def test_bad_element_count_still_reported():
    ours, _ = _pair((2, 3))
    with pytest.raises(ShapeError, match="cannot reshape"):
        ours.view(4, 2)
    assert bai.view(ours, (3, 2)).shape == (3, 2)
