"""In-place ops refuse an operand that would broadcast their tensor larger, as PyTorch does,
with an error naming the op, both shapes and the out-of-place fix."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError

torch = pytest.importorskip("torch")


def _apply(symbol, a, b):
    if symbol == "+=":
        a += b
    elif symbol == "-=":
        a -= b
    elif symbol == "*=":
        a *= b
    else:
        a /= b
    return a


@pytest.mark.parametrize(
    ("symbol", "name"), [("+=", "add_"), ("-=", "sub_"), ("*=", "mul_"), ("/=", "div_")]
)
@pytest.mark.parametrize(("left", "right"), [((3,), (2, 3)), ((4, 1), (4, 5)), ((), (2,))], ids=str)
@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "recorded"])
def test_broadcasting_larger_raises_like_torch(symbol, name, left, right, requires_grad):
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        _apply(symbol, torch.ones(left), torch.ones(right))
    a = bai.tensor(np.ones(left))
    b = bai.tensor(np.ones(right), requires_grad=requires_grad)
    with pytest.raises(ShapeError) as info:
        _apply(symbol, a, b)
    message = str(info.value)
    expected = np.broadcast_shapes(left, right)
    assert f"[{name}] x {symbol} other" in message
    assert str(left) in message and str(right) in message and str(expected) in message
    assert f"x = x {symbol[0]} other" in message  # the fix
    np.testing.assert_array_equal(a.numpy(), np.ones(left))  # untouched
    assert a.version == 0


def test_method_forms_and_arrays_are_checked_too():
    a = bai.tensor(np.ones(3))
    with pytest.raises(ShapeError, match=r"\[add_\]"):
        a.add_(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"\[mul_\].*do not broadcast"):
        a.mul_(bai.ones(4))
    with pytest.raises(ShapeError, match=r"\[clamp_\] x.clamp_\(min, max\)"):
        a.clamp_(bai.zeros((2, 3)), None)


@pytest.mark.parametrize("right", [(2, 3), (3,), (1, 3), (), "scalar"], ids=str)
def test_broadcasting_that_keeps_the_shape_still_works(right):
    array = np.arange(6.0).reshape(2, 3)
    other = 2.0 if right == "scalar" else np.full(right, 2.0)
    ours = bai.tensor(array.copy())
    theirs = torch.tensor(array.copy())
    ours += other if right == "scalar" else bai.tensor(other)
    theirs += other if right == "scalar" else torch.tensor(other)
    ours *= other if right == "scalar" else bai.tensor(other)
    theirs *= other if right == "scalar" else torch.tensor(other)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
