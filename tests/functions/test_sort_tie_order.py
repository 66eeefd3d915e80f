"""The order BuildingAI gives equal values in sort, argsort, topk and kthvalue, as documented
(PyTorch leaves it unspecified unless ``stable=True``): ties keep their input order, ascending
and descending, with or without ``stable=``, through the functions and the tensor methods."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai


def _stable_order(values: np.ndarray, descending: bool) -> np.ndarray:
    """Positions along the last axis sorted by value, equal values by position."""
    positions = np.broadcast_to(np.arange(values.shape[-1]), values.shape)
    keys = -values if descending else values
    return np.lexsort((positions, keys), axis=-1)


@pytest.fixture
def tied():
    # few distinct values, so most elements tie with others; zeros of both signs tie too
    values = np.random.default_rng(0).integers(-2, 3, size=(5, 30)).astype(np.float64)
    values[values == 0] *= np.where(
        np.random.default_rng(1).random((values == 0).sum()) < 0.5, -1, 1
    )
    return values


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("stable", [False, True])
def test_sort_and_argsort_keep_ties_in_input_order(tied, descending, stable):
    expected = _stable_order(tied, descending)
    x = bai.tensor(tied)
    result = bai.sort(x, descending=descending, stable=stable)
    np.testing.assert_array_equal(result.indices.numpy(), expected)
    np.testing.assert_array_equal(x.sort(descending=descending).indices.numpy(), expected)
    np.testing.assert_array_equal(bai.argsort(x, descending=descending).numpy(), expected)
    np.testing.assert_array_equal(result.values.numpy(), np.take_along_axis(tied, expected, -1))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 4, 17, 30])
def test_topk_picks_and_orders_ties_by_position(tied, largest, k):
    expected = _stable_order(tied, descending=largest)[:, :k]
    for result in (bai.topk(bai.tensor(tied), k, largest=largest),
                   bai.tensor(tied).topk(k, largest=largest, sorted=False)):  # fmt: skip
        np.testing.assert_array_equal(result.indices.numpy(), expected)


def test_kthvalue_takes_the_tied_position_of_the_stable_sort():
    x = bai.tensor([[1.0, 0.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    result = bai.kthvalue(x, 2)
    assert result.values.numpy().tolist() == [1.0, 2.0]
    assert result.indices.numpy().tolist() == [0, 1]


def test_ties_along_another_dimension():
    values = np.array([[3.0, 1.0], [1.0, 1.0], [3.0, 1.0]])
    result = bai.sort(bai.tensor(values), dim=0, descending=True)
    np.testing.assert_array_equal(result.indices.numpy(), [[0, 0], [2, 1], [1, 2]])
