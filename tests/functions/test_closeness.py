"""``isclose``, ``allclose``, ``equal`` and ``is_tensor`` against PyTorch's."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")
PAIRS = [
    ([1.0, 2.0, 3.0], [1.0, 2.00001, 3.1]),
    ([1.0, INF, -INF, NAN, NAN], [1.0, INF, INF, NAN, 1.0]),
    ([0.0, 1e-9, 1e-7], [0.0, 0.0, 0.0]),
    ([[1.0, 2.0]], [1.0, 2.0 + 1e-6]),  # broadcasting
]


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=range(len(PAIRS)))
@pytest.mark.parametrize(
    "options", [{}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.05}, {"rtol": 0.1}], ids=str
)
def test_isclose_and_allclose_match_pytorch(a, b, options):
    ours = bai.isclose(bai.tensor(a), bai.tensor(b), **options)
    theirs = torch.isclose(*torch.broadcast_tensors(torch.tensor(a), torch.tensor(b)), **options)
    assert ours.numpy().tolist() == theirs.tolist()
    assert bai.tensor(a).allclose(bai.tensor(b), **options) is torch.allclose(
        torch.tensor(a), torch.tensor(b), **options
    )


def test_integers_compare_exactly_or_within_atol():
    a, b = [1, 2, 3], [1, 3, 5]
    assert bai.isclose(bai.tensor(a), bai.tensor(b)).tolist() == [True, False, False]
    assert torch.isclose(torch.tensor(a), torch.tensor(b)).tolist() == [True, False, False]
    within = bai.isclose(bai.tensor(a), bai.tensor(b), rtol=0, atol=1).tolist()
    assert within == torch.isclose(torch.tensor(a), torch.tensor(b), rtol=0, atol=1).tolist()


@pytest.mark.parametrize(
    ("a", "b"),
    [([1, 2], [1.0, 2.0]), ([1, 2], [[1, 2]]), ([1.0, NAN], [1.0, NAN]), ([3], [4]), ([], [])],
    ids=str,
)
def test_equal_matches_pytorch(a, b):
    ours = bai.equal(bai.tensor(np.array(a)), bai.tensor(np.array(b)))
    assert ours is torch.equal(torch.tensor(a), torch.tensor(b))
    assert bai.tensor(np.array(a)).equal(bai.tensor(np.array(b))) is ours


def test_is_tensor():
    assert bai.is_tensor(bai.zeros(1)) and bai.is_tensor(bai.nn.Parameter(bai.zeros(1)))
    assert not bai.is_tensor(np.zeros(1)) and not bai.is_tensor(1.0)
    assert torch.is_tensor(torch.zeros(1)) and not torch.is_tensor(np.zeros(1))
