"""The activations PyTorch users reach for: each function and each argument against PyTorch in
float64 (values, gradients, second derivatives, finite differences), the modules, and the
gradient at kinks and NaN following PyTorch's branch."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn
from buildingai.errors import BuildingAIError, ShapeError
from tests.helpers import Arg, check_op, constant

torch = pytest.importorskip("torch")
TF = torch.nn.functional

WIDE = Arg((3, 4), low=-5.0, high=5.0)  # covers both sides of every kink in [-3, 3] and at 6
ABOVE_SIX = Arg((3, 4), low=-8.0, high=8.0)

CASES = [
    ("elu", lambda f: lambda x: f.elu(x), WIDE),
    ("elu alpha", lambda f: lambda x: f.elu(x, alpha=0.3), WIDE),
    ("selu", lambda f: lambda x: f.selu(x), WIDE),
    ("celu", lambda f: lambda x: f.celu(x), WIDE),
    ("celu alpha", lambda f: lambda x: f.celu(x, alpha=2.5), WIDE),
    ("hardtanh", lambda f: lambda x: f.hardtanh(x), WIDE),
    ("hardtanh bounds", lambda f: lambda x: f.hardtanh(x, min_val=-0.5, max_val=2.0), WIDE),
    ("relu6", lambda f: lambda x: f.relu6(x), ABOVE_SIX),
    ("hardsigmoid", lambda f: lambda x: f.hardsigmoid(x), WIDE),
    ("hardswish", lambda f: lambda x: f.hardswish(x), WIDE),
    ("mish", lambda f: lambda x: f.mish(x), WIDE),
    ("glu", lambda f: lambda x: f.glu(x), (3, 4)),
    ("glu dim", lambda f: lambda x: f.glu(x, dim=0), (4, 3)),
    ("logsigmoid", lambda f: lambda x: f.logsigmoid(x), Arg((3, 4), low=-40.0, high=40.0)),
    ("softsign", lambda f: lambda x: f.softsign(x), WIDE),
    ("tanhshrink", lambda f: lambda x: f.tanhshrink(x), WIDE),
    ("threshold", lambda f: lambda x: f.threshold(x, 0.5, -2.0), WIDE),
    ("threshold value 0", lambda f: lambda x: f.threshold(x, threshold=-1.0, value=0.0), WIDE),
]


@pytest.mark.parametrize(("name", "make", "shape"), CASES, ids=[c[0] for c in CASES])
def test_functional_matches_torch(name, make, shape):
    check_op(make(F), shape, torch_fn=make(TF), gradgrad=True)


@pytest.mark.parametrize("weight_shape", [(1,), (3,)])
@pytest.mark.parametrize("x_shape", [(2, 3), (2, 3, 4), (2, 3, 2, 2)])
def test_prelu_matches_torch_with_gradients_for_x_and_weight(x_shape, weight_shape):
    weight = Arg(weight_shape, low=0.05, high=0.5)
    check_op(F.prelu, x_shape, weight, torch_fn=TF.prelu, gradgrad=True)
    check_op(bai.prelu, x_shape, weight, torch_fn=torch.prelu)


def test_top_level_forms_where_torch_has_them():
    check_op(lambda x: bai.selu(x), (5,), torch_fn=torch.selu)
    check_op(lambda x: bai.celu(x, 0.5), (5,), torch_fn=lambda x: torch.celu(x, 0.5))
    check_op(
        lambda x: bai.threshold(x, 0.1, 3.0),
        (5,),
        torch_fn=lambda x: torch.threshold(x, 0.1, 3.0),
    )


MODULES = [
    ("ELU", lambda m: m.ELU(alpha=0.7), ()),
    ("SELU", lambda m: m.SELU(), ()),
    ("CELU", lambda m: m.CELU(alpha=1.5), ()),
    ("Hardtanh", lambda m: m.Hardtanh(-2.0, 0.5), ()),
    ("ReLU6", lambda m: m.ReLU6(), ()),
    ("Hardsigmoid", lambda m: m.Hardsigmoid(), ()),
    ("Hardswish", lambda m: m.Hardswish(), ()),
    ("Mish", lambda m: m.Mish(), ()),
    ("GLU", lambda m: m.GLU(dim=1), ()),
    ("LogSigmoid", lambda m: m.LogSigmoid(), ()),
    ("Softsign", lambda m: m.Softsign(), ()),
    ("Tanhshrink", lambda m: m.Tanhshrink(), ()),
    ("Threshold", lambda m: m.Threshold(0.2, -1.0), ()),
]


@pytest.mark.parametrize(("name", "make", "_"), MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, make, _):
    ours, theirs = make(nn), make(torch.nn)
    check_op(ours, Arg((2, 4, 3), low=-7.0, high=7.0), torch_fn=theirs)
    assert repr(ours).startswith(name)


def test_inplace_is_accepted_and_computes_the_same_values():
    x = bai.tensor(np.linspace(-8, 8, 9))
    expected = TF.relu6(torch.tensor(x.numpy())).numpy()
    np.testing.assert_array_equal(nn.ReLU6(inplace=True)(x).numpy(), expected)
    np.testing.assert_array_equal(
        F.elu(x, inplace=True).numpy(), TF.elu(torch.tensor(x.numpy())).numpy()
    )


@pytest.mark.parametrize("num_parameters", [1, 4])
def test_prelu_module_learns_its_weight_like_torch(num_parameters):
    ours = nn.PReLU(num_parameters, init=0.1)
    theirs = torch.nn.PReLU(num_parameters, init=0.1).double()
    assert [name for name, _ in ours.named_parameters()] == ["weight"]
    assert ours.weight.shape == tuple(theirs.weight.shape)
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    out, expected = ours(bai.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5)
    ours.load_state_dict({"weight": bai.tensor(np.full(num_parameters, 0.3, np.float32))})
    assert np.allclose(ours.weight.numpy(), 0.3)


KINKS = np.array([-6.0, -3.0, -1.0, 0.0, 0.5, 1.0, 3.0, 6.0, np.nan, np.inf, -np.inf])


@pytest.mark.parametrize(
    "name",
    ["elu", "selu", "celu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "softsign"],
)
def test_values_and_gradients_at_kinks_nan_and_inf_follow_torch(name):
    ours = bai.tensor(KINKS.copy(), requires_grad=True)
    theirs = torch.tensor(KINKS.copy(), requires_grad=True)
    with np.errstate(invalid="ignore"):  # inf / inf in softsign, as in PyTorch
        out, expected = getattr(F, name)(ours), getattr(TF, name)(theirs)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
        out.sum().backward()
        expected.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["threshold", "prelu"])
def test_threshold_and_prelu_at_the_kink_and_nan(name):
    x = constant(np.array([-1.0, 0.0, 0.5, np.nan, 2.0, -np.inf, np.inf]), requires_grad=True)
    if name == "threshold":
        check_op(
            lambda t: F.threshold(t, 0.5, 9.0),
            x,
            torch_fn=lambda t: TF.threshold(t, 0.5, 9.0),
            gradcheck=False,
        )
    else:
        slope = constant(np.array([0.25]), requires_grad=True)
        check_op(F.prelu, x, slope, torch_fn=TF.prelu, gradcheck=False)


def test_logsigmoid_is_finite_far_from_zero():
    x = bai.tensor(np.array([-800.0, -40.0, 40.0, 800.0]))
    expected = TF.logsigmoid(torch.tensor(x.numpy())).numpy()
    np.testing.assert_allclose(F.logsigmoid(x).numpy(), expected, rtol=1e-15)


def test_float32_stays_float32_and_integers_give_the_default_float():
    x = bai.tensor(np.linspace(-4, 4, 7, dtype=np.float32))
    for name in (
        "elu",
        "selu",
        "celu",
        "hardsigmoid",
        "hardswish",
        "mish",
        "softsign",
        "logsigmoid",
    ):
        assert getattr(F, name)(x).dtype == np.float32, name
        assert getattr(F, name)(bai.tensor(np.arange(3))).dtype == np.float32, name
    assert F.relu6(bai.tensor(np.arange(-2, 9))).dtype == np.int64  # as torch keeps integers
    np.testing.assert_array_equal(
        F.relu6(bai.tensor(np.arange(-2, 9))).numpy(), np.clip(np.arange(-2, 9), 0, 6)
    )


def test_errors_name_the_function_the_values_and_the_fix():
    with pytest.raises(ShapeError, match=r"\[glu\] dimension -1 of shape \(2, 3\) has odd size 3"):
        F.glu(bai.tensor(np.ones((2, 3))))
    with pytest.raises(ShapeError, match=r"\[prelu\] weight has 3 slopes but x of shape \(2, 4\)"):
        F.prelu(bai.tensor(np.ones((2, 4))), bai.tensor(np.ones(3)))
    with pytest.raises(BuildingAIError, match=r"\[hardtanh\] min_val 2 is greater than max_val 1"):
        F.hardtanh(bai.tensor(np.ones(2)), 2, 1)
    with pytest.raises(BuildingAIError, match=r"\[celu\] alpha must not be 0"):
        F.celu(bai.tensor(np.ones(2)), alpha=0.0)
