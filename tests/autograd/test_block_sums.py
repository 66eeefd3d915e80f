"""A split's gradients copied block by block into its input's sum (``autograd/block_sums.py``):
the sums against PyTorch's wherever pieces are missing, repeated, overlapping or mixed with
other gradients, as hooks and ``grad()`` see them, and the record of what is still unwritten."""

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.autograd import block_sums
from buildingai.ops.index import one_axis_range

X = np.random.default_rng(7).standard_normal((2, 3, 12))


def _weighted(lib, piece, seed):
    """A sum of piece times fixed weights: a gradient of its own for each piece."""
    weights = np.random.default_rng(seed).standard_normal(tuple(piece.shape))
    return (piece * lib.tensor(weights)).sum()


def _weighted_all(lib, pieces):
    return sum(_weighted(lib, piece, seed) for seed, piece in enumerate(pieces))


# each reads h, the split input (a node: its gradient's sum is the walk's own)
PROGRAMS = {
    "every piece": lambda lib, h: _weighted_all(lib, h.split(4, dim=-1)),
    "a piece unused": lambda lib, h: _weighted_all(lib, h.split(4, dim=-1)[::2]),
    "unequal pieces, middle axis": lambda lib, h: _weighted_all(lib, h.split([1, 2], dim=1)),
    "the first axis": lambda lib, h: _weighted_all(lib, h.chunk(2, dim=0)),
    "a piece read twice": lambda lib, h: _weighted_all(lib, [*h.split(4, dim=-1), h[..., :4]]),
    "h read whole too": lambda lib, h: _weighted_all(lib, [h[..., :4], h, h[..., 8:]]),
    "overlapping slices": lambda lib, h: _weighted_all(lib, [h[..., 2:7], h[..., 5:9], h[..., :2]]),
    "pieces along two axes": lambda lib, h: _weighted_all(lib, [h[..., :6], h[:, 1:], h[..., 6:]]),
}


def _split_input_gradients(program):
    """(x's gradient, h's gradient as a hook on h saw it) for h = 1.5 x, BuildingAI's and
    PyTorch's."""
    results = []
    for lib in (bai, torch):
        x = lib.tensor(X, requires_grad=True)
        h = x * 1.5
        seen = []
        h.register_hook(lambda g, seen=seen: seen.append(g.detach().numpy().copy()))
        program(lib, h).backward()
        results.append((x.grad.numpy(), seen[0]))
    return results


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_sums_of_pieces_match_pytorch_and_hooks_see_them_whole(name):
    (ours, ours_seen), (theirs, theirs_seen) = _split_input_gradients(PROGRAMS[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours_seen, theirs_seen, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["every piece", "a piece unused", "a piece read twice"])
def test_grad_of_the_split_input_itself(name):
    results = []
    for lib, grad in ((bai, bai.grad), (torch, torch.autograd.grad)):
        x = lib.tensor(X, requires_grad=True)
        h = x * 1.0
        (g,) = grad(PROGRAMS[name](lib, h), [h])
        results.append(g.detach().numpy())
    np.testing.assert_allclose(*results, rtol=1e-12, atol=1e-12)


def test_a_split_leaf_and_a_recorded_walk_match_pytorch():
    results = []
    for lib, grad in ((bai, bai.grad), (torch, torch.autograd.grad)):
        x = lib.tensor(X, requires_grad=True)  # a leaf split: its sum starts from zeros
        (leaf_grad,) = grad(PROGRAMS["a piece unused"](lib, x), [x])
        (recorded,) = grad(PROGRAMS["a piece unused"](lib, x * 2.0), [x], create_graph=True)
        results.append((leaf_grad.numpy(), recorded.detach().numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_one_axis_range_takes_one_range_and_whole_slices():
    whole = slice(None)
    assert one_axis_range((4, 6), (whole, slice(2, 4), Ellipsis)) == (1, 2, 4)
    assert one_axis_range((4, 6), (slice(1, 3),)) == (0, 1, 3)
    assert one_axis_range((4, 6), (Ellipsis, slice(-2, None))) == (1, 4, 6)
    assert one_axis_range((4, 6), (whole, whole)) is None  # all of it: no block
    assert one_axis_range((4, 6), (slice(0, 4, 2),)) is None  # a step
    assert one_axis_range((4, 6), (1, slice(2, 4))) is None  # an int drops an axis
    assert one_axis_range((4, 6), (slice(1, 2), slice(2, 4))) is None  # two ranges
    assert one_axis_range((4, 6), (None, slice(1, 2))) is None  # a new axis
    assert one_axis_range((4, 6), (slice(3, 3),)) is None  # empty


def test_blocks_are_written_once_and_the_rest_zeroed():
    unwritten = {}
    total = block_sums.start((2, 6), np.float64, (1, 2, 4), np.ones((2, 2)), unwritten, "x")
    assert unwritten == {"x": (1, [(0, 2), (4, 6)])}
    assert block_sums.write(total, (1, 0, 1), np.full((2, 1), 2.0), unwritten, "x")
    assert not block_sums.write(total, (1, 1, 3), np.ones((2, 2)), unwritten, "x")  # written
    assert not block_sums.write(total, (0, 0, 1), np.ones((1, 6)), unwritten, "x")  # other axis
    assert unwritten == {"x": (1, [(1, 2), (4, 6)])}
    block_sums.fill(total, unwritten, "x")
    assert unwritten == {}
    np.testing.assert_array_equal(total, [[2, 0, 1, 1, 0, 0]] * 2)
    assert not block_sums.write(total, (1, 0, 1), np.ones((2, 1)), unwritten, "x")


def test_a_walk_copies_pieces_and_adds_nothing(monkeypatch):
    """Every piece of a split fills its block: no zeros, no sum into one."""
    from buildingai.autograd import engine

    added = []
    monkeypatch.setattr(engine, "add_grad_into", lambda *args: added.append(args))
    x = bai.tensor(X, requires_grad=True)
    PROGRAMS["every piece"](bai, x * 1.5).backward()
    assert added == []
    expected = _split_input_gradients(PROGRAMS["every piece"])[1][0]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_split_sums_on_two_threads_at_once():
    """Two walks with split pieces at once: each keeps its own record of unwritten blocks."""
    from concurrent.futures import ThreadPoolExecutor

    names = ["a piece unused", "pieces along two axes"]
    expected = [_split_input_gradients(PROGRAMS[name])[1][0] for name in names]

    def walk(name):
        x = bai.tensor(X, requires_grad=True)
        PROGRAMS[name](bai, x * 1.5).backward()
        return x.grad.numpy()

    for _ in range(10):
        with ThreadPoolExecutor(2) as pool:
            for got, want in zip(pool.map(walk, names), expected):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


class _OpNames(bai.DispatchMode):
    """An observer that notes the name of every op it sees, gradient sums included."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def after_op(self, op, inputs, output, attrs) -> None:
        self.names.append(op.name)


def _backward_under(context, name):
    """x's gradient for the program ``name``, its backward walk run inside ``context``."""
    x = bai.tensor(X, requires_grad=True)
    loss = PROGRAMS[name](bai, x * 1.5)
    with context:
        loss.backward()
    return x.grad.numpy()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_profile_times_the_walk_as_it_runs_unwatched(name):
    """A TimeTracer leaves the walk's sums to the walk (``sees_gradient_sums`` False): the pieces
    are copied into their blocks, no ``zeros_index_add`` runs, and the gradients are PyTorch's."""
    from buildingai.profile import TimeTracer

    tracer = TimeTracer()
    got = _backward_under(tracer, name)
    names = {event.name for event in tracer.events}
    assert "zeros_index_add" not in names
    assert "add" not in names  # the walk's own sums are no ops
    expected = _split_input_gradients(PROGRAMS[name])[1][0]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_a_mode_that_sees_sums_sees_each_piece_added():
    """An observer left at the default (``sees_gradient_sums`` True) sees every sum as an op:
    each piece's gradient scattered into zeros and the pieces added."""
    mode = _OpNames()
    got = _backward_under(bai.dispatch_mode(mode), "every piece")
    assert mode.names.count("zeros_index_add") == 3
    assert mode.names.count("add") >= 2
    expected = _split_input_gradients(PROGRAMS["every piece"])[1][0]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
