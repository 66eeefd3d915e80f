"""``rand_like``, ``randn_like``, ``randint_like`` and ``roll``, against PyTorch's signatures and
values."""

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["rand_like", "randn_like"])
def test_float_draws_take_shape_dtype_and_device_from_input(name):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    x, t = bai.zeros(2, 3, dtype=bai.float64), torch.zeros(2, 3, dtype=torch.float64)
    assert ours(x).shape == tuple(theirs(t).shape) == (2, 3)
    assert str(ours(x).dtype) == str(theirs(t).dtype).replace("torch.", "") == "float64"
    assert ours(x, dtype=bai.float32).dtype == bai.float32
    assert ours(x).device == x.device
    assert ours(x, requires_grad=True).requires_grad
    assert ours(x, memory_format=bai.preserve_format).shape == (2, 3)


def test_float_draws_follow_the_generator():
    x = bai.zeros(4, 5)
    first = bai.randn_like(x, generator=bai.Generator(seed=3))
    again = bai.randn_like(x, generator=bai.Generator(seed=3))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    bai.manual_seed(7)
    uniform = bai.rand_like(x).numpy()
    bai.manual_seed(7)
    np.testing.assert_array_equal(uniform, bai.rand_like(x).numpy())
    assert ((uniform >= 0) & (uniform < 1)).all()


def test_randint_like_takes_high_or_low_and_high_and_keeps_input_dtype():
    x, t = bai.zeros(50, 4), torch.zeros(50, 4)
    only_high, theirs = bai.randint_like(x, 5), torch.randint_like(t, 5)
    assert str(only_high.dtype) == str(theirs.dtype).replace("torch.", "") == "float32"
    values = only_high.numpy()
    assert set(np.unique(values)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    between = bai.randint_like(x, 2, 5, dtype=bai.int64).numpy()
    assert between.dtype == np.int64 and between.min() >= 2 and between.max() <= 4
    assert bai.randint_like(bai.zeros(3, dtype=bai.int32), high=9).dtype == bai.int32


@pytest.mark.parametrize(
    ("shape", "shifts", "dims"),
    [((5,), 2, None), ((2, 3, 4), 1, None), ((2, 3, 4), 7, None), ((2, 3, 4), 2, 1),
     ((2, 3, 4), -5, 2), ((2, 3, 4), (1, -1), (0, 2)), ((2, 3, 4), (1, 2), (1, 1)),
     ((3, 4), 0, 1), ((0, 3), 1, 0), ((), 3, None)],
    ids=str,
)  # fmt: skip
def test_roll_matches_pytorch(shape, shifts, dims):
    check_op(lambda x: bai.roll(x, shifts, dims), shape,
             torch_fn=lambda x: torch.roll(x, shifts, dims), gradgrad=True)  # fmt: skip
    check_op(lambda x: x.roll(shifts, dims=dims), shape,
             torch_fn=lambda x: x.roll(shifts, dims=dims), gradcheck=False)  # fmt: skip


def test_roll_errors():
    with pytest.raises(bai.ShapeError, match=r"\[roll\] shifts \(1, 2\) and dims \(0,\)"):
        bai.roll(bai.zeros(2, 3), (1, 2), 0)
    with pytest.raises(bai.ShapeError, match=r"\[roll\] without dims, shifts must be one number"):
        bai.roll(bai.zeros(2, 3), (1, 2))
    with pytest.raises(bai.ShapeError, match=r"\[roll\]"):
        bai.roll(bai.zeros(2, 3), 1, 5)
