"""The finite-difference checkers: they accept correct gradients and name the worst element of a
wrong one, for first and second derivatives."""

import re

import numpy as np
import pytest

import buildingai as bai
from buildingai.debug import gradcheck, gradgradcheck
from buildingai.ops.base import Op


def leaf(*shape, seed=0, low=-1.0, high=1.0):
    values = np.random.default_rng(seed).uniform(low, high, size=shape)
    return bai.tensor(values, requires_grad=True)


# ----- ops with deliberately wrong rules --------------------------------------------------------


class WrongSquare(Op):
    """x ** 2 whose backward forgets the factor 2 on one element."""

    name = "wrong_square"

    def forward(self, ctx, xp, x):
        return x * x

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        factor = np.full(x.shape, 2.0)
        factor.reshape(-1)[1] = 1.0  # wrong for input element 1 only
        return (grad * x * bai.tensor(factor),)


class DetachedSquare(Op):
    """x ** 2 with a correct first derivative written with a detached ``2 * x``: the second
    derivative through it is lost (0 instead of 2)."""

    name = "detached_square"

    def forward(self, ctx, xp, x):
        return x * x

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * bai.Tensor(2 * x.data),)


class CorrectCube(Op):
    """x ** 3, backward written with differentiable Tensor operations."""

    name = "correct_cube"

    def forward(self, ctx, xp, x):
        return x * x * x

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * 3.0 * x * x,)


WRONG_SQUARE, DETACHED_SQUARE, CORRECT_CUBE = WrongSquare(), DetachedSquare(), CorrectCube()


# ----- gradcheck --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (lambda x: (x * x).sum(), [(3,)]),
        (lambda x: x.exp() * x.sin(), [(2, 3)]),
        (lambda a, b: a @ b, [(2, 3), (3, 4)]),
        (lambda a, b: (a / (b * b + 1.0)).tanh(), [(3, 1), (1, 4)]),
        (lambda x: x.mean(axis=0), [(4, 2)]),
        (lambda x: bai.apply(CORRECT_CUBE, x), [(5,)]),
        (lambda x: x * 2.0, [(0, 3)]),
    ],
    ids=["square-sum", "exp-sin", "matmul", "broadcast", "mean", "custom-op", "zero-size"],
)
def test_gradcheck_accepts_correct_gradients(fn, shapes):
    inputs = [leaf(*shape, seed=i) for i, shape in enumerate(shapes)]
    assert gradcheck(fn, inputs) is True


def test_gradcheck_multiple_outputs():
    def fn(a, b):
        return a * b, (a + b).exp(), (a - b).sum()

    assert gradcheck(fn, [leaf(2, 3, seed=1), leaf(2, 3, seed=2)]) is True


def test_gradcheck_with_non_differentiable_integer_inputs_mixed_in():
    index = bai.tensor([2, 0, 2])
    scale = 3.0

    def fn(x, index, w, scale):
        return x.getitem(index) * w * scale

    inputs = [leaf(4, 2, seed=1), index, leaf(3, 2, seed=2), scale]
    assert gradcheck(fn, inputs) is True
    # a float input without requires_grad is left alone too
    assert gradcheck(lambda x, c: x * c, [leaf(3), bai.tensor(np.ones(3))]) is True


def test_gradcheck_leaves_the_inputs_unchanged():
    x = leaf(3, 2)
    before = x.numpy()
    gradcheck(lambda t: t.exp(), [x])
    np.testing.assert_array_equal(x.numpy(), before)


def test_gradcheck_names_the_worst_element_of_a_wrong_gradient():
    x = bai.tensor(np.array([0.5, 1.5, -1.0]), requires_grad=True)
    with pytest.raises(bai.GradcheckError) as info:
        gradcheck(lambda t: bai.apply(WRONG_SQUARE, t), [x])
    message = str(info.value)
    assert message.startswith("[gradcheck] Jacobian mismatch for output 0 w.r.t. input 0")
    # element 1 of the output depends on element 1 of the input: d(x1^2)/dx1 = 2 * 1.5 = 3,
    # and the wrong rule gives 1 * 1.5
    assert "(output element 1, input element 1)" in message
    analytic = float(re.search(r"analytic ([-\d.e+]+)", message).group(1))
    numerical = float(re.search(r"numerical ([-\d.e+]+)", message).group(1))
    assert analytic == pytest.approx(1.5)
    assert numerical == pytest.approx(3.0, rel=1e-6)
    assert "difference 1.5 > allowed" in message


def test_gradcheck_names_the_input_position():
    good, bad = leaf(2, seed=1), bai.tensor(np.array([0.3, 0.7]), requires_grad=True)
    with pytest.raises(bai.GradcheckError, match=r"output 1 w\.r\.t\. input 2 at"):
        gradcheck(lambda a, n, b: (a * 2.0, bai.apply(WRONG_SQUARE, b)), [good, 5, bad])


def test_gradcheck_is_an_assertion_error():
    x = bai.tensor(np.array([0.5, 1.5]), requires_grad=True)
    with pytest.raises(AssertionError):
        gradcheck(lambda t: bai.apply(WRONG_SQUARE, t), [x])


def test_gradcheck_tolerances():
    x = bai.tensor(np.array([0.5, 1.5]), requires_grad=True)
    # a loose enough tolerance accepts even a wrong gradient
    assert gradcheck(lambda t: bai.apply(WRONG_SQUARE, t), [x], atol=2.0) is True


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float32_inputs_are_rejected_with_help(dtype):
    x = bai.tensor(np.ones(3), dtype=dtype, requires_grad=True)
    with pytest.raises(
        bai.GradcheckError, match=f"input 0 is {dtype}; finite differences need float64"
    ) as info:
        gradcheck(lambda t: t * 2.0, [x])
    assert "help: convert the inputs with .double()" in str(info.value)
    with pytest.raises(bai.GradcheckError, match="need float64"):
        gradgradcheck(lambda t: t * t, [x])


# ----- gradgradcheck ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (lambda x: x * x * x, [(3,)]),
        (lambda x: x.sin().exp(), [(2, 2)]),
        (lambda a, b: (a @ b).tanh(), [(2, 3), (3, 2)]),
        (lambda x: bai.apply(CORRECT_CUBE, x), [(4,)]),
        (lambda a, b: (a * b, (a / (b * b + 1.0)).sum()), [(2, 1), (1, 3)]),
    ],
    ids=["cube", "exp-sin", "matmul-tanh", "custom-op", "two-outputs"],
)
def test_gradgradcheck_accepts_correct_second_derivatives(fn, shapes):
    inputs = [leaf(*shape, seed=i) for i, shape in enumerate(shapes)]
    assert gradgradcheck(fn, inputs) is True


def test_gradgradcheck_with_integer_inputs_and_explicit_weights():
    index = bai.tensor([1, 1, 0])
    x = leaf(2, 3)
    weights = [bai.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)]
    assert gradgradcheck(lambda t, i: t.getitem(i) ** 3, [x, index], weights) is True


def test_first_order_is_right_but_gradgradcheck_catches_a_detached_backward():
    x = bai.tensor(np.array([0.5, -1.25, 2.0]), requires_grad=True)
    fn = lambda t: bai.apply(DETACHED_SQUARE, t)  # noqa: E731
    assert gradcheck(fn, [x]) is True
    with pytest.raises(bai.GradcheckError) as info:
        gradgradcheck(fn, [x])
    message = str(info.value)
    assert message.startswith("[gradcheck] Jacobian mismatch for output 0 w.r.t. input 0")
    # d(grad_x)/dx = 2 * w, but the detached rule gives 0
    row, column = map(
        int, re.search(r"output element (\d+), input element (\d+)", message).groups()
    )
    assert row == column
    analytic = float(re.search(r"analytic ([-\d.e+]+)", message).group(1))
    numerical = float(re.search(r"numerical ([-\d.e+]+)", message).group(1))
    assert analytic == 0.0
    assert abs(numerical) > 0.1
