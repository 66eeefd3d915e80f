"""PyTorch's other names (``greater``, ``multiply``, ``divide``...) and the in-place forms
(``lt_``, ``logical_and_``, ``cumsum_``, ``squeeze_``, ``transpose_``...) against PyTorch:
which forms exist, values, dtypes, shapes, float64 gradients, in-place semantics and refusals."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import AutogradError, BuildingAIError, DTypeError, ShapeError

torch = pytest.importorskip("torch")

MIXED = np.array([[-1.5, 0.0, 2.5], [0.7, -0.2, 3.5]])
OTHER = np.array([[1.0, -2.0, 2.5], [2.0, 1.5, -1.0]])
POSITIVE = np.array([[0.5, 1.0, 2.0], [3.0, 0.25, 4.0]])
INTS = np.array([[5, -7, 0], [3, 8, -2]])
INT_OTHER = np.array([[2, 3, 1], [3, -5, 4]])

NAMES = [
    "absolute", "negative", "positive", "multiply", "divide", "subtract", "true_divide",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "swapdims", "swapaxes",
    "absolute_", "negative_", "multiply_", "divide_", "subtract_", "true_divide_", "greater_",
    "greater_equal_", "less_", "less_equal_", "not_equal_", "eq_", "ne_", "lt_", "le_", "gt_",
    "ge_", "logical_and_", "logical_or_", "logical_xor_", "logical_not_", "bitwise_and_",
    "bitwise_or_", "bitwise_xor_", "bitwise_not_", "remainder_", "floor_divide_",
    "nan_to_num_", "cumsum_", "cumprod_", "lgamma_", "digamma_", "polygamma_", "squeeze_",
    "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_the_same_forms_as_pytorch(name):
    assert hasattr(bai, name) == hasattr(torch, name)
    assert hasattr(bai.Tensor, name) == hasattr(torch.Tensor, name)


def _same(ours, theirs, tolerance=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(
        ours.numpy(), theirs.detach().numpy(), rtol=tolerance, atol=tolerance
    )


def _tolerance(name):
    # BuildingAI's lgamma family is a series accurate to about 1e-9, not to the last bit
    return 1e-8 if name.startswith(("lgamma", "digamma", "polygamma")) else 1e-12


# ----- the out-of-place aliases -----------------------------------------------------------------

ALIASES = {
    "absolute": lambda lib, x, y: lib.absolute(x),
    "negative": lambda lib, x, y: lib.negative(x),
    "positive": lambda lib, x, y: lib.positive(x),
    "multiply": lambda lib, x, y: lib.multiply(x, y),
    "divide": lambda lib, x, y: lib.divide(x, y),
    "divide floor": lambda lib, x, y: lib.divide(x, y, rounding_mode="floor"),
    "divide trunc": lambda lib, x, y: lib.divide(x, y, rounding_mode="trunc"),
    "subtract": lambda lib, x, y: lib.subtract(x, y, alpha=2),
    "true_divide": lambda lib, x, y: lib.true_divide(x, y),
    "greater": lambda lib, x, y: lib.greater(x, y),
    "greater_equal": lambda lib, x, y: lib.greater_equal(x, y),
    "less": lambda lib, x, y: lib.less(x, y),
    "less_equal": lambda lib, x, y: lib.less_equal(x, y),
    "not_equal": lambda lib, x, y: lib.not_equal(x, y),
    "swapdims": lambda lib, x, y: lib.swapdims(x, 0, 1),
}
METHOD_ALIASES = {
    "absolute": lambda x, y: x.absolute(),
    "negative": lambda x, y: x.negative(),
    "positive": lambda x, y: x.positive(),
    "multiply": lambda x, y: x.multiply(y),
    "divide": lambda x, y: x.divide(y, rounding_mode="floor"),
    "subtract": lambda x, y: x.subtract(y, alpha=-1),
    "true_divide": lambda x, y: x.true_divide(y),
    "greater": lambda x, y: x.greater(y),
    "greater_equal": lambda x, y: x.greater_equal(y),
    "less": lambda x, y: x.less(y),
    "less_equal": lambda x, y: x.less_equal(y),
    "not_equal": lambda x, y: x.not_equal(y),
    "swapdims": lambda x, y: x.swapdims(1, 0),
}


@pytest.mark.parametrize("data", [(MIXED, OTHER), (INTS, INT_OTHER)], ids=["float", "int"])
@pytest.mark.parametrize("name", list(ALIASES))
def test_aliases_match_pytorch(name, data):
    a, b = data
    ours = ALIASES[name](bai, bai.tensor(a), bai.tensor(b))
    theirs = ALIASES[name](torch, torch.tensor(a), torch.tensor(b))
    _same(ours, theirs)


@pytest.mark.parametrize("name", list(METHOD_ALIASES))
def test_method_aliases_match_pytorch(name):
    for a, b in [(MIXED, OTHER), (INTS, INT_OTHER)]:
        ours = METHOD_ALIASES[name](bai.tensor(a), bai.tensor(b))
        theirs = METHOD_ALIASES[name](torch.tensor(a), torch.tensor(b))
        _same(ours, theirs)


@pytest.mark.parametrize(
    "name", ["absolute", "negative", "positive", "multiply", "divide", "subtract", "swapdims"]
)
def test_alias_gradients_match_pytorch(name):
    x, y = bai.tensor(MIXED, requires_grad=True), bai.tensor(OTHER, requires_grad=True)
    tx, ty = torch.tensor(MIXED, requires_grad=True), torch.tensor(OTHER, requires_grad=True)
    (
        ALIASES[name](bai, x, y) * bai.tensor(POSITIVE.T if name == "swapdims" else POSITIVE)
    ).sum().backward()
    (
        ALIASES[name](torch, tx, ty) * torch.tensor(POSITIVE.T if name == "swapdims" else POSITIVE)
    ).sum().backward()
    _same(x.grad, tx.grad)
    if ty.grad is not None:
        _same(y.grad, ty.grad)


def test_positive_is_the_tensor_itself_and_refuses_booleans():
    x = bai.tensor(MIXED)
    assert bai.positive(x) is x and x.positive() is x
    with pytest.raises(DTypeError, match="positive"):
        bai.positive(bai.tensor([True, False]))
    with pytest.raises(RuntimeError):
        torch.positive(torch.tensor([True, False]))


# ----- in-place forms that keep the shape --------------------------------------------------------

TRUTH = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
         "not_equal", "logical_and", "logical_or", "logical_xor"]  # fmt: skip

IN_PLACE = {f"{name}_": (lambda n: lambda lib, x: getattr(x, f"{n}_")(lib.tensor(OTHER)))(name)
            for name in TRUTH}  # fmt: skip
IN_PLACE.update({
    "lt_ scalar": lambda lib, x: x.lt_(0.7),
    "eq_ broadcast row": lambda lib, x: x.eq_(lib.tensor(OTHER[0])),
    "logical_not_": lambda lib, x: x.logical_not_(),
    "absolute_": lambda lib, x: x.absolute_(),
    "negative_": lambda lib, x: x.negative_(),
    "negative_ function": lambda lib, x: lib.negative_(x),
    "multiply_": lambda lib, x: x.multiply_(lib.tensor(OTHER)),
    "divide_": lambda lib, x: x.divide_(lib.tensor(OTHER)),
    "divide_ floor": lambda lib, x: x.divide_(lib.tensor(OTHER), rounding_mode="floor"),
    "divide_ trunc": lambda lib, x: x.divide_(2.0, rounding_mode="trunc"),
    "subtract_": lambda lib, x: x.subtract_(lib.tensor(OTHER), alpha=0.5),
    "true_divide_": lambda lib, x: x.true_divide_(lib.tensor(OTHER)),
    "remainder_": lambda lib, x: x.remainder_(lib.tensor(OTHER)),
    "floor_divide_": lambda lib, x: x.floor_divide_(lib.tensor(OTHER)),
    "nan_to_num_": lambda lib, x: x.nan_to_num_(nan=1.5, posinf=9.0),
    "nan_to_num_ function": lambda lib, x: lib.nan_to_num_(x, neginf=-4.0),
    "cumsum_": lambda lib, x: x.cumsum_(1),
    "cumprod_": lambda lib, x: x.cumprod_(dim=0),
    "lgamma_": lambda lib, x: x.lgamma_(),
    "digamma_": lambda lib, x: x.digamma_(),
    "polygamma_": lambda lib, x: x.polygamma_(2),
})  # fmt: skip
NOT_DIFFERENTIABLE = {"floor_divide_", "logical_and_", "logical_or_", "logical_xor_",
                      "logical_not_"}  # fmt: skip
SPECIAL_VALUES = np.array([[np.nan, np.inf, -np.inf], [0.7, -0.0, 2.5]])


def _data(name):
    if name.startswith(("lgamma", "digamma", "polygamma")):
        return POSITIVE
    if name.startswith("nan_to_num"):
        return SPECIAL_VALUES
    return MIXED


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_in_place_values_match_pytorch(name):
    ours, theirs = bai.tensor(_data(name)), torch.tensor(_data(name))
    assert IN_PLACE[name](bai, ours) is ours
    assert IN_PLACE[name](torch, theirs) is theirs
    _same(ours, theirs, _tolerance(name))
    assert ours.version == theirs._version == 1


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # inf * weight in nan_to_num_'s
@pytest.mark.parametrize("name", [n for n in IN_PLACE if n not in NOT_DIFFERENTIABLE])
def test_in_place_gradients_match_pytorch(name):
    x, tx = (
        bai.tensor(_data(name), requires_grad=True),
        torch.tensor(_data(name), requires_grad=True),
    )
    y, ty = x * 1.5, tx * 1.5
    assert IN_PLACE[name](bai, y) is y
    IN_PLACE[name](torch, ty)
    assert y.requires_grad == ty.requires_grad
    (y * bai.tensor(POSITIVE)).sum().backward()
    (ty * torch.tensor(POSITIVE)).sum().backward()
    _same(x.grad, tx.grad, _tolerance(name))


@pytest.mark.parametrize("name", ["lt_", "eq_", "logical_and_", "logical_xor_", "ge_"])
@pytest.mark.parametrize(
    "data", [(INTS, INT_OTHER), (INTS > 0, INT_OTHER > 2)], ids=["int", "bool"]
)
def test_truth_in_place_keeps_the_dtype(name, data):
    a, b = data
    ours, theirs = bai.tensor(a), torch.tensor(a)
    getattr(ours, name)(bai.tensor(b))
    getattr(theirs, name)(torch.tensor(b))
    _same(ours, theirs)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.bitwise_and_(lib.tensor(INT_OTHER)),
        lambda lib, x: x.bitwise_or_(3),
        lambda lib, x: x.bitwise_xor_(lib.tensor(INT_OTHER)),
        lambda lib, x: x.bitwise_not_(),
        lambda lib, x: x.remainder_(lib.tensor(INT_OTHER)),
        lambda lib, x: x.floor_divide_(lib.tensor(INT_OTHER)),
        lambda lib, x: x.divide_(lib.tensor(INT_OTHER), rounding_mode="floor"),
        lambda lib, x: x.cumsum_(0),
        lambda lib, x: x.cumprod_(1),
        lambda lib, x: x.absolute_(),
        lambda lib, x: x.multiply_(lib.tensor(INT_OTHER)),
        lambda lib, x: x.subtract_(lib.tensor(INT_OTHER), alpha=3),
    ],
)
def test_integer_in_place_match_pytorch(call):
    ours, theirs = bai.tensor(INTS), torch.tensor(INTS)
    assert call(bai, ours) is ours
    call(torch, theirs)
    _same(ours, theirs)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.true_divide_(2),
        lambda lib, x: x.divide_(2),
        lambda lib, x: x.lgamma_(),
        lambda lib, x: x.digamma_(),
        lambda lib, x: x.polygamma_(1),
        lambda lib, x: x.cumsum_(0, dtype=lib.float64),
    ],
)
def test_results_that_need_another_dtype_are_refused(call):
    with pytest.raises(RuntimeError):
        call(torch, torch.tensor(INTS))
    with pytest.raises(DTypeError):
        call(bai, bai.tensor(INTS))


def test_in_place_refuses_a_leaf_that_requires_grad_and_a_larger_broadcast():
    for call in (lambda x: x.lt_(0.0), lambda x: x.absolute_(), lambda x: x.cumsum_(0)):
        with pytest.raises(AutogradError):
            call(bai.tensor(MIXED, requires_grad=True))
        with pytest.raises(RuntimeError):
            call(torch.tensor(MIXED, requires_grad=True))
    with pytest.raises(ShapeError):
        bai.tensor(OTHER[0]).lt_(bai.tensor(OTHER))
    with pytest.raises(RuntimeError):
        torch.tensor(OTHER[0]).lt_(torch.tensor(OTHER))


def test_a_comparison_after_which_the_tensor_still_requires_grad_gives_zero_gradient():
    x = bai.tensor(MIXED, requires_grad=True)
    y = x * 2
    y.gt_(0.0)
    assert y.requires_grad and y.dtype == np.float64
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(MIXED))


# ----- in-place forms that change the shape ------------------------------------------------------

RESHAPES = {
    "squeeze_": lambda x: x.squeeze_(),
    "squeeze_ dim": lambda x: x.squeeze_(1),
    "squeeze_ dims": lambda x: x.squeeze_((0, 1)),
    "squeeze_ size 2": lambda x: x.squeeze_(0),
    "unsqueeze_": lambda x: x.unsqueeze_(-1),
    "unsqueeze_ front": lambda x: x.unsqueeze_(0),
    "transpose_": lambda x: x.transpose_(0, 2),
    "swapaxes_": lambda x: x.swapaxes_(2, 1),
    "swapdims_": lambda x: x.swapdims_(-1, 0),
}
SHAPED = np.arange(6.0).reshape(2, 1, 3) - 2.5


@pytest.mark.parametrize("name", list(RESHAPES))
def test_shape_changing_in_place_match_pytorch(name):
    ours, theirs = bai.tensor(SHAPED), torch.tensor(SHAPED)
    assert RESHAPES[name](ours) is ours
    RESHAPES[name](theirs)
    _same(ours, theirs)
    assert ours.version == theirs._version == 1


@pytest.mark.parametrize("shape", [(2, 3), (3,), ()])
def test_t_in_place_matches_pytorch(shape):
    data = np.arange(float(np.prod(shape))).reshape(shape)
    ours, theirs = bai.tensor(data), torch.tensor(data)
    assert ours.t_() is ours
    theirs.t_()
    _same(ours, theirs)


@pytest.mark.parametrize("name", list(RESHAPES))
def test_shape_changing_in_place_gradients_match_pytorch(name):
    x, tx = bai.tensor(SHAPED, requires_grad=True), torch.tensor(SHAPED, requires_grad=True)
    y, ty = x * 1.0, tx * 1.0
    RESHAPES[name](y)
    RESHAPES[name](ty)
    weights = np.arange(1.0, 7.0).reshape(tuple(ty.shape))
    (y * bai.tensor(weights)).sum().backward()
    (ty * torch.tensor(weights)).sum().backward()
    _same(x.grad, tx.grad)


def test_shape_changing_in_place_refuses_a_leaf_that_requires_grad():
    for call in (lambda x: x.squeeze_(), lambda x: x.unsqueeze_(0), lambda x: x.transpose_(0, 1)):
        with pytest.raises(AutogradError, match="leaf"):
            call(bai.tensor(SHAPED, requires_grad=True))
        with pytest.raises(RuntimeError, match="leaf"):
            call(torch.tensor(SHAPED, requires_grad=True))
    leaf = bai.tensor(SHAPED, requires_grad=True)
    with bai.no_grad():
        leaf.squeeze_()
    assert leaf.shape == (2, 3) and leaf.is_leaf and leaf.requires_grad


def test_a_view_changes_its_own_shape_only():
    ours, theirs = bai.tensor(SHAPED), torch.tensor(SHAPED)
    view, their_view = ours.reshape(6), theirs.view(6)
    view.unsqueeze_(0)
    their_view.unsqueeze_(0)
    assert view.shape == tuple(their_view.shape) == (1, 6)
    assert ours.shape == tuple(theirs.shape) == (2, 1, 3)
    view[0, 0] = 100.0  # still the same memory
    assert ours[0, 0, 0].item() == 100.0


def test_shape_changing_in_place_refusals_match_pytorch():
    for call in (lambda x: x.t_(), lambda x: x.squeeze_(5), lambda x: x.unsqueeze_(4),
                 lambda x: x.transpose_(0, 3)):  # fmt: skip
        with pytest.raises((IndexError, RuntimeError)):
            call(torch.tensor(SHAPED))
        x = bai.tensor(SHAPED)
        with pytest.raises(BuildingAIError):
            call(x)
        assert x.shape == (2, 1, 3) and x.version == 0


def test_a_graph_that_saved_the_tensor_notices_the_change():
    x = bai.tensor(MIXED, requires_grad=True)
    y = x * 1.0
    z = y.sin()  # saves y
    y.t_()
    with pytest.raises(AutogradError):
        z.sum().backward()
