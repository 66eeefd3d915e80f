"""multinomial: shapes, dtype, distinct draws without replacement, zero weights, frequencies
close to the weights, reproducibility from a Generator, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai


def test_shapes_and_dtype_as_torch():
    weights = bai.tensor([[0.2, 0.3, 0.5], [1.0, 1.0, 0.0]])
    assert bai.multinomial(weights, 2).shape == (2, 2)
    assert weights[0].multinomial(4, replacement=True).shape == (4,)
    assert bai.multinomial(weights, 1).dtype == bai.long


def test_without_replacement_draws_distinct_positive_categories():
    generator = bai.Generator(seed=1)
    weights = bai.tensor(np.array([[0.0, 1.0, 2.0, 3.0, 0.0, 4.0]] * 50))
    drawn = bai.multinomial(weights, 4, generator=generator).numpy()
    for row in drawn:
        assert sorted(row) == [1, 2, 3, 5]
    with pytest.raises(bai.BuildingAIError, match=r"cannot draw 5 distinct categories"):
        bai.multinomial(weights, 5)


@pytest.mark.parametrize("replacement", [True, False])
def test_first_draw_frequencies_follow_the_weights(replacement):
    weights = np.array([0.1, 0.0, 0.6, 0.3])
    rows = bai.tensor(np.tile(weights * 7.0, (20000, 1)))  # unnormalised weights
    drawn = bai.multinomial(rows, 1, replacement, generator=bai.Generator(seed=3)).numpy()
    frequencies = np.bincount(drawn[:, 0], minlength=4) / drawn.shape[0]
    np.testing.assert_allclose(frequencies, weights, atol=0.015)
    assert frequencies[1] == 0


def test_with_replacement_repeats_and_never_draws_a_zero_weight():
    drawn = bai.multinomial(bai.tensor([0.0, 1.0, 0.0]), 50, replacement=True).numpy()
    assert (drawn == 1).all()


def test_a_generator_makes_draws_reproducible():
    weights = bai.tensor(np.linspace(0.1, 1.0, 10))
    first = bai.multinomial(weights, 5, generator=bai.Generator(seed=7)).numpy()
    second = bai.multinomial(weights, 5, generator=bai.Generator(seed=7)).numpy()
    np.testing.assert_array_equal(first, second)
    bai.manual_seed(5)
    third = bai.multinomial(weights, 5, replacement=True).numpy()
    bai.manual_seed(5)
    np.testing.assert_array_equal(third, bai.multinomial(weights, 5, replacement=True).numpy())


def test_errors_say_what_is_wrong():
    with pytest.raises(bai.BuildingAIError, match=r"finite and non-negative"):
        bai.multinomial(bai.tensor([0.5, -0.1]), 1)
    with pytest.raises(bai.BuildingAIError, match=r"sums to 0"):
        bai.multinomial(bai.tensor([[0.5, 0.1], [0.0, 0.0]]), 1)
    with pytest.raises(bai.ShapeError, match=r"\(categories,\) or \(rows, categories\)"):
        bai.multinomial(bai.ones(2, 2, 2), 1)
    with pytest.raises(bai.BuildingAIError, match=r"num_samples must be positive"):
        bai.multinomial(bai.ones(3), 0)


def test_many_draws_per_row_with_replacement_follow_each_rows_weights():
    weights = np.array([[0.2, 0.0, 0.5, 0.3], [0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    drawn = bai.multinomial(bai.tensor(weights), 20000, True, generator=bai.Generator(seed=0))
    for row, expected in zip(drawn.numpy(), weights / weights.sum(axis=1, keepdims=True)):
        np.testing.assert_allclose(np.bincount(row, minlength=4) / row.size, expected, atol=0.015)
