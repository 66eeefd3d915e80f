"""Linear, Bilinear and the activation modules against PyTorch in float64 (values, input
gradients, parameter gradients, second derivatives)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import functions
from buildingai.nn import (
    GELU,
    Bilinear,
    LeakyReLU,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from tests.helpers import check_op

torch = pytest.importorskip("torch")


def _use(module, **tensors):
    """Put plain tensors in place of the module's parameters (the functional, fast-weights
    style: delete the Parameter, then assign the tensor as a plain attribute)."""
    for name, value in tensors.items():
        delattr(module, name)
        setattr(module, name, value)
    return module


def _linear(x, weight, bias=None):
    layer = Linear(weight.shape[1], weight.shape[0], bias=bias is not None, dtype=weight.dtype)
    return _use(layer, weight=weight, **({} if bias is None else {"bias": bias}))(x)


def _bilinear(x1, x2, weight, bias=None):
    out, in1, in2 = weight.shape
    layer = Bilinear(in1, in2, out, bias=bias is not None, dtype=weight.dtype)
    return _use(layer, weight=weight, **({} if bias is None else {"bias": bias}))(x1, x2)


# ----- Linear ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("x_shape", [(5, 3), (2, 4, 3), (3,), (0, 3), (1, 3)])
def test_linear_matches_pytorch(x_shape):
    check_op(_linear, x_shape, (2, 3), (2,), torch_fn=torch.nn.functional.linear, gradgrad=True)


def test_linear_without_bias_and_with_one_feature():
    check_op(_linear, (4, 3), (2, 3), torch_fn=torch.nn.functional.linear, gradgrad=True)
    check_op(_linear, (4, 1), (1, 1), (1,), torch_fn=torch.nn.functional.linear)


def _compare_with_copied_weights(ours, theirs, inputs):
    ours.to(bai.float64)
    theirs.double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    ours_in = [bai.Tensor(x.copy(), requires_grad=True) for x in inputs]
    theirs_in = [torch.tensor(x.copy(), requires_grad=True) for x in inputs]
    ours_out, theirs_out = ours(*ours_in), theirs(*theirs_in)
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-12)
    upstream = np.random.default_rng(5).standard_normal(ours_out.shape)
    (ours_out * bai.Tensor(upstream)).sum().backward()
    (theirs_out * torch.tensor(upstream)).sum().backward()
    for ours_x, theirs_x in zip(ours_in, theirs_in):
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10)
    theirs_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), theirs_params[name].grad.numpy(), rtol=1e-10)


def test_linear_module_with_copied_weights():
    rng = np.random.default_rng(0)
    _compare_with_copied_weights(
        Linear(6, 3), torch.nn.Linear(6, 3), [rng.standard_normal((2, 5, 6))]
    )


def test_linear_layout_dtype_and_repr():
    layer = Linear(4, 3)
    assert layer.weight.shape == (3, 4) and layer.bias.shape == (3,)
    assert layer.weight.dtype == np.float32
    assert Linear(4, 3, dtype="float64").weight.dtype == np.float64
    assert Linear(4, 3, bias=False).bias is None
    assert [n for n, _ in Linear(4, 3, bias=False).named_parameters()] == ["weight"]
    assert repr(Linear(4, 3, bias=False)) == repr(torch.nn.Linear(4, 3, bias=False))


def test_linear_shape_error_is_the_ops_and_names_the_layer():
    with pytest.raises(bai.ShapeError, match=r"\[linear\] input \(2, 5\).*\(in Linear\)"):
        Linear(4, 3)(bai.zeros(2, 5))


# ----- Bilinear --------------------------------------------------------------------------------------
@pytest.mark.parametrize("lead", [(4,), (2, 3), (0,)])
def test_bilinear_matches_pytorch(lead):
    check_op(
        _bilinear, lead + (2,), lead + (3,), (5, 2, 3), (5,),
        torch_fn=torch.nn.functional.bilinear, gradgrad=True,
    )  # fmt: skip


def test_bilinear_without_bias():
    check_op(_bilinear, (4, 2), (4, 3), (1, 2, 3), torch_fn=torch.nn.functional.bilinear)


def test_bilinear_module_with_copied_weights_and_repr():
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((3, 4)), rng.standard_normal((3, 2))]
    _compare_with_copied_weights(Bilinear(4, 2, 5), torch.nn.Bilinear(4, 2, 5), inputs)
    assert repr(Bilinear(4, 2, 5, bias=False)) == repr(torch.nn.Bilinear(4, 2, 5, bias=False))


def test_bilinear_init_and_errors():
    layer = Bilinear(16, 3, 200)
    assert layer.weight.shape == (200, 16, 3)
    assert np.abs(layer.weight.numpy()).max() <= 0.25 and np.abs(layer.bias.numpy()).max() <= 0.25
    with pytest.raises(
        bai.ShapeError, match=r"\[bilinear\] expects x1 \(\*, 16\) and x2 \(\*, 3\)"
    ):
        layer(bai.zeros(4, 16), bai.zeros(5, 3))
    with pytest.raises(ValueError, match="in1_features must be > 0"):
        Bilinear(0, 3, 2)


# ----- activations -----------------------------------------------------------------------------------
ACTIVATIONS = [
    ("relu", lambda: ReLU(), lambda: torch.nn.ReLU()),
    ("leaky_relu", lambda: LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2)),
    ("gelu", lambda: GELU(), lambda: torch.nn.GELU()),
    ("gelu", lambda: GELU("tanh"), lambda: torch.nn.GELU("tanh")),
    ("silu", lambda: SiLU(), lambda: torch.nn.SiLU()),
    ("tanh", lambda: Tanh(), lambda: torch.nn.Tanh()),
    ("sigmoid", lambda: Sigmoid(), lambda: torch.nn.Sigmoid()),
    ("softplus", lambda: Softplus(), lambda: torch.nn.Softplus()),
    ("softplus", lambda: Softplus(beta=2.0, threshold=1.0), lambda: torch.nn.Softplus(2.0, 1.0)),
    ("softmax", lambda: Softmax(dim=1), lambda: torch.nn.Softmax(dim=1)),
    pytest.param(
        "softmax",
        lambda: Softmax(),
        lambda: torch.nn.Softmax(),  # the implicit dimension, 1 on (3, 4), in both
        marks=pytest.mark.filterwarnings("ignore:Implicit dimension choice"),
    ),
    ("log_softmax", lambda: LogSoftmax(dim=0), lambda: torch.nn.LogSoftmax(dim=0)),
]


@pytest.mark.parametrize("function, ours, theirs", ACTIVATIONS)
def test_activation_modules_match_pytorch(function, ours, theirs):
    if not hasattr(functions, function):
        pytest.skip(f"buildingai.{function} is not available yet")
    check_op(ours(), (3, 4), torch_fn=theirs())


@pytest.mark.parametrize("function, ours, theirs", ACTIVATIONS)
def test_activation_reprs_match_pytorch(function, ours, theirs):
    assert repr(ours()) == repr(theirs())


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'fast'"):
        GELU("fast")
