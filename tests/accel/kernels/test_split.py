"""split.py's layout helpers: which arrays have row or flat views, and what those views are."""

import threading

import numpy as np
import pytest

from buildingai.accel.kernels.split import flat_or_none, trailing_rows
from buildingai.backend import threads


def test_trailing_rows_views_the_last_axis_as_rows():
    x = np.arange(24.0).reshape(2, 3, 4)
    kept = np.zeros((2, 3, 1))
    rows = trailing_rows((2,), x, kept)
    assert [view.shape for view in rows] == [(6, 4), (6, 1)]
    assert np.shares_memory(rows[0], x) and np.shares_memory(rows[1], kept)
    assert trailing_rows((-1,), x, kept)[0].shape == (6, 4)  # a negative axis names it too


@pytest.mark.parametrize("axes", [(1, 2), (2, 1), (-2, -1)])
def test_trailing_rows_of_several_axes_in_any_order(axes):
    x = np.ones((2, 3, 4))
    assert trailing_rows(axes, x)[0].shape == (2, 12)


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1)])
def test_axes_that_are_not_the_trailing_ones_have_no_rows(axes):
    assert trailing_rows(axes, np.ones((2, 3, 4))) is None


def test_arrays_that_do_not_line_up_have_no_rows():
    x = np.ones((2, 3, 4))
    assert trailing_rows((2,), x, np.ones((3, 2, 1))) is None  # other leading dimensions
    assert trailing_rows((2,), x, np.ones((2, 3, 4))[:, :, ::2]) is None  # not contiguous
    assert trailing_rows((2,), x, [[0.0]]) is None  # not an array of x's kind
    assert trailing_rows((0,), np.float32(1.0)) is None  # a 0-d array has no axis
    assert trailing_rows((1,), np.ones((0, 4))) is None  # no rows


def test_a_single_row_is_a_row():
    assert trailing_rows((1,), np.ones((1, 5)))[0].shape == (1, 5)
    assert trailing_rows((0,), np.ones(5))[0].shape == (1, 5)


def test_flat_views_only_of_contiguous_numpy_arrays():
    a, b = np.ones((2, 3)), np.zeros((2, 3))
    flat = flat_or_none(a, b)
    assert [view.shape for view in flat] == [(6,), (6,)] and np.shares_memory(flat[1], b)
    assert flat_or_none(a, b.T) is None


def test_a_thread_that_never_ran_pool_work_is_not_inside_the_pool():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(threads.inside_pool()))
    thread.start()
    thread.join()
    assert seen == [False]
