"""``getitem.add_columns`` (``accel/index_into.py``): the backward engine's sum of a split's
gradients into its input's, through the registry's ``add_grad_into`` kernels, gives the
record's sums bit for bit, and the blocks it refuses go to the record."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import index_into, registry
from buildingai.ops.index import GETITEM


def _gradient(pieces, shape=(4, 6, 24), seed=0):
    """x's gradient through ``pieces(x)``, a tuple of tensors each weighted by its own
    random array and summed."""
    rng = np.random.default_rng(seed)
    x = bai.Tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    parts = pieces(x)
    loss = sum((part * bai.tensor(rng.standard_normal(part.shape).astype(np.float32))).sum()
               for part in parts)  # fmt: skip
    loss.backward()
    return x.grad.numpy()


# case -> (pieces of x, which of the kernel's calls compute a block: "all", "none" or "some")
CASES = {
    "split along the last axis": (lambda x: x.split(8, dim=2), "all"),
    "chunk along a middle axis": (lambda x: x.chunk(3, dim=1), "all"),
    "uneven split along the first axis": (lambda x: x.split([1, 3], dim=0), "all"),
    "split, one piece used twice": (lambda x: (*x.split(8, dim=2), x[..., 8:16]), "all"),
    "overlapping slices": (lambda x: (x[:, 1:4], x[:, 2:6]), "all"),
    "step-2 slices": (lambda x: (x[:, ::2], x[:, 1::2]), "none"),
    "an integer index beside a slice": (lambda x: (x[0], x[1:]), "some"),
    "a transposed piece's gradient": (
        lambda x: (x.split(8, dim=2)[0].transpose(0, 1) * 2,),
        "some",
    ),
}


@pytest.fixture
def asked(monkeypatch, accel_on):
    """The indices the kernel computed a block for, with blocks of every size asked (the cases'
    are below ``LEAST_ELEMENTS``)."""
    monkeypatch.setattr(index_into, "LEAST_ELEMENTS", 0)
    entry = registry.kernel("getitem.add_columns")
    blocks = []

    def spy(total, grad, attrs, _run=entry.run):
        result = _run(total, grad, attrs)
        blocks.append((attrs["index"], result is not NotImplemented))
        return result

    monkeypatch.setattr(entry, "run", spy)
    return blocks


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_kernel_gives_the_records_sums_bit_for_bit(asked, case):
    pieces, kernel_computes = CASES[case]
    got = _gradient(pieces)
    with registry.enabled(False):
        expected = _gradient(pieces)
    np.testing.assert_array_equal(got, expected)
    taken = [done for _, done in asked]
    assert taken, "the engine never asked the kernel"
    if kernel_computes == "all":
        assert all(taken)
    elif kernel_computes == "none":
        assert not any(taken)


def test_the_kernel_is_the_ops_add_grad_into_kernel(accel_on):
    entry = registry.kernel("getitem.add_columns")
    assert GETITEM.accelerated_into == (entry,) and entry not in GETITEM.accelerated
    with registry.enabled(False):
        assert GETITEM.accelerated_into == ()
    previous = registry.set_enabled("getitem.add_columns", False)
    try:
        assert GETITEM.accelerated_into == ()
    finally:
        registry.set_enabled("getitem.add_columns", previous)
    assert any(row["name"] == entry.name for row in registry.status()["kernels"])


def test_column_block_reads_whole_slices_and_one_range():
    total, grad = np.zeros((2, 3, 10), np.float32), np.ones((2, 3, 4), np.float32)
    rows, block, start = index_into.column_block(total, grad, (Ellipsis, slice(2, 6)))
    assert rows.shape == (2, 3, 10) and block.shape == (2, 3, 4) and start == 2
    middle = np.ones((2, 2, 10), np.float32)
    rows, block, start = index_into.column_block(total, middle, (slice(None), slice(1, 3)))
    assert rows.shape == (1, 2, 30) and block.shape == (1, 2, 20) and start == 10
    first = np.ones((1, 3, 10), np.float32)
    rows, block, start = index_into.column_block(total, first, (slice(1, 2),))
    assert rows.shape == (1, 1, 60) and block.shape == (1, 1, 30) and start == 30
    interleaved = np.ones((2, 3, 3, 4), np.float32)[:, 1]  # rows 4 apart in 12
    assert index_into.column_block(total, interleaved, (Ellipsis, slice(2, 6))) is not None
    refused = [
        (grad, (slice(None), slice(None), slice(2, 10, 2))),  # a step
        (grad, (0, slice(None), slice(2, 6))),  # an integer
        (grad.astype(np.float64), (Ellipsis, slice(2, 6))),  # another dtype
        (np.ones((2, 4, 3), np.float32).transpose(0, 2, 1), (Ellipsis, slice(2, 6))),  # columns
    ]
    for array, index in refused:
        assert index_into.column_block(total, array, index) is None, index


def test_small_blocks_stay_on_numpy_and_large_ones_go_to_the_kernel(accel_on):
    """An LSTM cell's h and c, cut from one (32, 256) array, are summed by NumPy; a GPT's q, k
    and v, cut from one (16, 64, 384) array, by the kernel."""
    entry = registry.kernel("getitem.add_columns")
    small = np.zeros((32, 256), np.float32), np.ones((32, 128), np.float32)
    large = np.zeros((16, 64, 384), np.float32), np.ones((16, 64, 128), np.float32)
    assert not entry.applies(*small, {"index": (slice(None), slice(0, 128))})
    assert entry.applies(*large, {"index": (Ellipsis, slice(128, 256))})
    assert small[1].size < index_into.LEAST_ELEMENTS <= large[1].size


def test_split_gradients_on_two_threads_at_once(monkeypatch, accel_on):
    """Backward passes through the kernel on two threads together give each one's sums."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(index_into, "LEAST_ELEMENTS", 0)
    split = CASES["split along the last axis"][0]
    expected = [_gradient(split, seed=seed) for seed in (1, 2)]
    for _ in range(5):
        with ThreadPoolExecutor(2) as pool:
            got = list(pool.map(lambda seed: _gradient(split, seed=seed), (1, 2)))
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
