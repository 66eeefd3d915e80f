"""Trigonometric and hyperbolic functions, their ``arc*`` aliases, and deg2rad, rad2deg, hypot,
logaddexp, logaddexp2, xlogy and sgn against PyTorch in float64: values, gradients and second
derivatives, special values (zeros, infinities, NaN), dtypes, Tensor methods and their in-place
forms, frozen graphs, fusion and the ONNX export of atan2."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import TensorSpec, freeze
from buildingai.graph.passes.fusion import FusedElementwise, fuse_elementwise

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)

# name -> (the torch function, the (low, high) of values where it is defined and smooth)
ONE_INPUT = {
    "tan": (torch.tan, (-1.2, 1.2)),
    "asin": (torch.asin, (-0.9, 0.9)),
    "arcsin": (torch.arcsin, (-0.9, 0.9)),
    "acos": (torch.acos, (-0.9, 0.9)),
    "arccos": (torch.arccos, (-0.9, 0.9)),
    "atan": (torch.atan, (-3.0, 3.0)),
    "arctan": (torch.arctan, (-3.0, 3.0)),
    "sinh": (torch.sinh, (-3.0, 3.0)),
    "cosh": (torch.cosh, (-3.0, 3.0)),
    "asinh": (torch.asinh, (-3.0, 3.0)),
    "arcsinh": (torch.arcsinh, (-3.0, 3.0)),
    "acosh": (torch.acosh, (1.1, 4.0)),
    "arccosh": (torch.arccosh, (1.1, 4.0)),
    "atanh": (torch.atanh, (-0.9, 0.9)),
    "arctanh": (torch.arctanh, (-0.9, 0.9)),
    "deg2rad": (torch.deg2rad, (-400.0, 400.0)),
    "rad2deg": (torch.rad2deg, (-7.0, 7.0)),
    "sgn": (torch.sgn, (-2.0, 2.0)),
}
TWO_INPUTS = ["atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "xlogy"]


def _uniform(low, high, shape):
    return RNG.uniform(low, high, shape)


def _compare(ours_fn, torch_fn, *arrays, gradgrad=True, rtol=1e-12, atol=1e-14):
    """Values, gradients for a random upstream gradient and (with ``gradgrad``) second
    derivatives of ``ours_fn`` against ``torch_fn``, every array a float64 input."""
    ours_in = [bai.tensor(a, dtype=bai.float64, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    with np.errstate(all="ignore"):
        ours, theirs = ours_fn(*ours_in), torch_fn(*theirs_in)
        assert ours.dtype == np.float64 and tuple(ours.shape) == tuple(theirs.shape)
        _close(ours, theirs, rtol, atol)
        upstream = RNG.standard_normal(tuple(theirs.shape))
        ours_grads = bai.grad(
            ours, ours_in, grad_outputs=bai.tensor(upstream), create_graph=gradgrad
        )
        theirs_grads = torch.autograd.grad(
            theirs, theirs_in, grad_outputs=torch.tensor(upstream), create_graph=gradgrad
        )
        for mine, reference in zip(ours_grads, theirs_grads):
            _close(mine, reference, rtol, atol)
        if not gradgrad:
            return
        weights = [RNG.standard_normal(np.shape(a)) for a in arrays]
        ours_total = sum((g * bai.tensor(w)).sum() for g, w in zip(ours_grads, weights))
        theirs_total = sum((g * torch.tensor(w)).sum() for g, w in zip(theirs_grads, weights))
        if not ours_total.requires_grad:  # a linear or piecewise-constant function
            assert not theirs_total.requires_grad
            return
        ours_second = bai.grad(ours_total, ours_in, allow_unused=True)
        theirs_second = torch.autograd.grad(theirs_total, theirs_in, allow_unused=True)
        for mine, reference in zip(ours_second, theirs_second):
            if reference is None:
                assert mine is None or not np.any(mine.numpy())
            else:
                _close(mine, reference, rtol, atol)


def _close(ours, theirs, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(
        ours.numpy(), theirs.detach().numpy(force=True), rtol=rtol, atol=atol, equal_nan=True
    )


# ----- one input --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_functions_and_methods_against_torch(name):
    reference, (low, high) = ONE_INPUT[name]
    x = _uniform(low, high, (3, 4))
    _compare(getattr(bai, name), reference, x)
    _compare(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x, gradgrad=False)


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_special_values_dtypes_and_shapes(name):
    reference = ONE_INPUT[name][0]
    special = np.array(
        [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -1.5, 1e-300, 800.0, np.inf, -np.inf, np.nan]
    )
    with np.errstate(all="ignore"):
        _close(getattr(bai, name)(bai.tensor(special)), reference(torch.tensor(special)))
        # integers and bools give the default float dtype, except sgn that keeps its dtype
        for values in ([[1, -2, 3]], [True, False]):
            ours, theirs = getattr(bai, name)(bai.tensor(values)), reference(torch.tensor(values))
            assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
            _close(ours, theirs, rtol=1e-6)
    for shape in [(), (0,), (2, 0, 3)]:  # 0-d and empty tensors
        x = _uniform(*ONE_INPUT[name][1], shape)
        assert tuple(getattr(bai, name)(bai.tensor(x)).shape) == shape


def test_float32_and_float16_keep_their_dtype():
    for dtype in ("float32", "float16"):
        x = _uniform(-0.8, 0.8, (5,)).astype(dtype)
        for name in ("tan", "asin", "atanh", "cosh", "deg2rad"):
            ours = getattr(bai, name)(bai.tensor(x))
            theirs = getattr(torch, name)(torch.tensor(x))
            assert ours.dtype == np.dtype(dtype)
            _close(ours, theirs.double(), rtol=2e-3 if dtype == "float16" else 1e-6, atol=1e-6)


def test_pytorch_examples_of_deg2rad_and_rad2deg():
    torch_ = bai  # the examples of PyTorch's documentation, with only the module changed
    a = torch_.tensor([[180.0, -180.0], [360.0, -360.0], [90.0, -90.0]])
    expected = [[3.1416, -3.1416], [6.2832, -6.2832], [1.5708, -1.5708]]
    np.testing.assert_allclose(torch_.deg2rad(a).numpy(), expected, atol=1e-4)
    a = torch_.tensor([[3.142, -3.142], [6.283, -6.283], [1.570, -1.570]])
    expected = [[180.0233, -180.0233], [359.9894, -359.9894], [89.9544, -89.9544]]
    np.testing.assert_allclose(torch_.rad2deg(a).numpy(), expected, atol=1e-4)


def test_sgn_is_sign_for_real_tensors():
    x = np.array([-3.0, -0.0, 0.0, 2.5, np.inf, -np.inf, np.nan])
    _close(bai.sgn(bai.tensor(x)), torch.sgn(torch.tensor(x)), atol=0)
    ints = bai.tensor([-3, 0, 7])
    assert bai.sgn(ints).dtype == np.int64 and bai.sgn(ints).tolist() == [-1, 0, 1]
    flags = bai.tensor([True, False])
    assert bai.sgn(flags).dtype == np.bool_ and flags.sgn().tolist() == [True, False]


# ----- atan2 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["atan2", "arctan2"])
def test_atan2_broadcasts_and_differentiates_like_torch(name):
    y, x = _uniform(-2, 2, (3, 1)), _uniform(-2, 2, (4,))
    _compare(getattr(bai, name), getattr(torch, name), y, x)
    _compare(lambda a, b: getattr(a, name)(b), lambda a, b: getattr(a, name)(b), x, y)


def test_atan2_quadrants_signed_zeros_and_infinities():
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan])
    y, x = values[:, None], values[None, :]  # every pair
    _close(bai.atan2(bai.tensor(y), bai.tensor(x)), torch.atan2(torch.tensor(y), torch.tensor(x)))


def test_atan2_dtypes_and_python_scalars():
    y = bai.tensor([1, -2, 3])
    assert bai.atan2(y, bai.tensor([True, False, True])).dtype == np.float32  # default float
    y64, x32 = bai.tensor([1.0, -2.0], dtype=bai.float64), bai.tensor([0.5, 3.0])
    assert bai.atan2(y64, x32).dtype == np.float64
    assert bai.atan2(x32, bai.tensor(2.0, dtype=bai.float64)).dtype == np.float32  # a 0-d tensor
    # PyTorch takes a tensor ``other`` only; a Python number is its 0-d tensor
    np.testing.assert_allclose(
        bai.atan2(y64, 2.0).numpy(),
        torch.atan2(torch.tensor([1.0, -2.0]).double(), torch.tensor(2.0)).numpy(),
    )


# ----- hypot ------------------------------------------------------------------------------------


def test_pytorch_example_of_hypot():
    torch_ = bai
    a = torch_.hypot(torch_.tensor([4.0]), torch_.tensor([3.0, 4.0, 5.0]))
    np.testing.assert_allclose(a.numpy(), [5.0000, 5.6569, 6.4031], atol=1e-4)


def test_hypot_values_and_derivatives():
    a, b = _uniform(-3, 3, (3, 4)), _uniform(-3, 3, (4,))
    _compare(bai.hypot, torch.hypot, a, b)
    _compare(lambda p, q: p.hypot(q), lambda p, q: p.hypot(q), b, a, gradgrad=False)
    # |a| == |b|: the larger and the smaller are the same, and the gradient still a / hypot
    ties = np.array([1.0, -2.0, 3.0]), np.array([1.0, 2.0, -3.0])
    _compare(bai.hypot, torch.hypot, *ties, gradgrad=False)


def test_hypot_neither_overflows_nor_underflows():
    for dtype, values in (("float64", [1e200, 3e-200, 1.0]), ("float32", [1e20, 3e-30, 1.0])):
        a = np.array(values, dtype=dtype)
        b = np.array([2e200, 4e-200, 0.0] if dtype == "float64" else [2e20, 4e-30, 0.0], dtype)
        ours, theirs = (
            bai.hypot(bai.tensor(a), bai.tensor(b)),
            torch.hypot(torch.tensor(a), torch.tensor(b)),
        )
        assert ours.dtype == np.dtype(dtype) and np.all(np.isfinite(ours.numpy()))
        _close(ours, theirs, rtol=1e-6 if dtype == "float32" else 1e-14, atol=0)


def test_hypot_of_infinities_nan_and_zeros():
    values = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])
    a, b = values[:, None], values[None, :]
    with np.errstate(all="ignore"):  # inf / inf inside, where the answer is +inf
        ours = bai.hypot(bai.tensor(a), bai.tensor(b))
    _close(ours, torch.hypot(torch.tensor(a), torch.tensor(b)), atol=0)


def test_hypot_gradient_at_the_origin_is_zero():
    # PyTorch divides 0 by 0 there (NaN); the composition gives the zero subgradient
    a = bai.tensor([0.0, 3.0], dtype=bai.float64, requires_grad=True)
    b = bai.tensor([0.0, 0.0], dtype=bai.float64, requires_grad=True)
    bai.hypot(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0] and b.grad.tolist() == [0.0, 0.0]


# ----- logaddexp and logaddexp2 -----------------------------------------------------------------


def test_pytorch_examples_of_logaddexp():
    torch_ = bai
    got = torch_.logaddexp(torch_.tensor([-1.0]), torch_.tensor([-1.0, -2, -3]))
    np.testing.assert_allclose(got.numpy(), [-0.3069, -0.6867, -0.8731], atol=1e-4)
    got = torch_.logaddexp(torch_.tensor([-100.0, -200, -300]), torch_.tensor([-1.0, -2, -3]))
    np.testing.assert_allclose(got.numpy(), [-1.0, -2.0, -3.0], atol=1e-4)
    got = torch_.logaddexp(torch_.tensor([1.0, 2000, 30000]), torch_.tensor([-1.0, -2, -3]))
    np.testing.assert_allclose(got.numpy(), [1.1269e00, 2.0000e03, 3.0000e04], rtol=1e-4)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_values_and_derivatives(name):
    a, b = _uniform(-4, 4, (3, 1)), _uniform(-4, 4, (3, 5))
    _compare(getattr(bai, name), getattr(torch, name), a, b)
    _compare(
        lambda p, q: getattr(p, name)(q), lambda p, q: getattr(p, name)(q), b, a, gradgrad=False
    )


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_at_ties_and_far_apart(name):
    # equal inputs: first and second derivatives are smooth there (PyTorch's are 1/2 and 1/4)
    x = _uniform(-3, 3, (6,))
    _compare(getattr(bai, name), getattr(torch, name), x, x.copy())
    # far apart: log1p keeps the small term the sum would lose (PyTorch's second derivatives
    # overflow to NaN there; the composition's stay finite)
    a, b = np.array([0.0, -50.0, 700.0, -745.0, 1e-20]), np.array([-50.0, 0.0, -700.0, 1.0, 0.0])
    _compare(getattr(bai, name), getattr(torch, name), a, b, gradgrad=False, rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_with_infinities_and_nan(name):
    values = np.array([np.inf, -np.inf, 1.0, -2.0, 0.0, np.nan])
    a, b = values[:, None], values[None, :]
    with np.errstate(all="ignore"):  # inf - inf inside, where the answer is the infinity
        ours = getattr(bai, name)(bai.tensor(a), bai.tensor(b))
    _close(ours, getattr(torch, name)(torch.tensor(a), torch.tensor(b)), atol=0)
    # gradients where one input is infinite and the other is not the same infinity
    a, b = np.array([np.inf, -np.inf, np.inf, 1.0]), np.array([1.0, 2.0, -np.inf, -np.inf])
    _compare(getattr(bai, name), getattr(torch, name), a, b, gradgrad=False)


def test_logaddexp_needs_floating_point_inputs():
    ints = bai.tensor([1, 2])
    for function in (bai.logaddexp, bai.logaddexp2, bai.hypot):
        with pytest.raises(bai.DTypeError, match=r"needs floating-point inputs, got int64"):
            function(ints, ints)
    assert bai.logaddexp(ints, bai.tensor([0.5, 1.0])).dtype == np.float32  # a float operand
    assert bai.hypot(bai.tensor([3.0], dtype=bai.float64), bai.tensor([4.0])).dtype == np.float64


# ----- xlogy ------------------------------------------------------------------------------------


def test_pytorch_examples_of_xlogy():
    torch_ = bai  # torch.special.xlogy in PyTorch's documentation, the same function
    x = torch_.zeros(
        5,
    )
    y = torch_.tensor([-1, 0, 1, float("inf"), float("nan")])
    np.testing.assert_array_equal(torch_.xlogy(x, y).numpy(), [0.0, 0.0, 0.0, 0.0, np.nan])
    x = torch_.tensor([1, 2, 3])
    y = torch_.tensor([3, 2, 1])
    np.testing.assert_allclose(torch_.xlogy(x, y).numpy(), [1.0986, 1.3863, 0.0000], atol=1e-4)
    np.testing.assert_allclose(torch_.xlogy(x, 4).numpy(), [1.3863, 2.7726, 4.1589], atol=1e-4)
    np.testing.assert_allclose(torch_.xlogy(2, y).numpy(), [2.1972, 1.3863, 0.0000], atol=1e-4)
    assert torch_.xlogy(x, y).dtype == np.float32


def test_xlogy_values_and_derivatives():
    x, y = _uniform(-2, 2, (3, 4)), _uniform(0.1, 3, (4,))
    _compare(bai.xlogy, torch.xlogy, x, y)
    _compare(lambda p, q: p.xlogy(q), lambda p, q: p.xlogy(q), x, y, gradgrad=False)
    # zeros in x, y > 0: value 0, gradient log(y) in x and x / y = 0 in y
    x[0, :] = 0.0
    _compare(bai.xlogy, torch.xlogy, x, y)


def test_xlogy_zeros_infinities_and_nan():
    x = np.array([0.0, -0.0, 1.0, -2.0, np.inf, np.nan])[:, None]
    y = np.array([0.0, 1.0, -1.0, 2.0, np.inf, np.nan])[None, :]
    with np.errstate(all="ignore"):
        ours = bai.xlogy(bai.tensor(x), bai.tensor(y))
    _close(ours, torch.xlogy(torch.tensor(x), torch.tensor(y)), atol=0)


def test_xlogy_gradient_where_both_are_zero():
    # PyTorch's gradient in y is x / y = 0 / 0 (NaN) there; the composition takes log(1)
    # where x == 0 and y <= 0, so it gives 0; in x both give 0 (PyTorch's note on xlogy at
    # x = 0, y <= 0)
    x = bai.tensor([0.0, 1.0], dtype=bai.float64, requires_grad=True)
    y = bai.tensor([0.0, 0.0], dtype=bai.float64, requires_grad=True)
    with np.errstate(all="ignore"):
        bai.xlogy(x, y).sum().backward()
    assert x.grad.tolist() == [0.0, -math.inf] and y.grad.tolist() == [0.0, math.inf]


def test_xlogy_computes_in_the_promoted_dtype():
    x32, y64 = np.array([1.5, 2.0], "float32"), np.array([3.0, 0.7])
    ours = bai.xlogy(bai.tensor(x32), bai.tensor(y64))
    theirs = torch.xlogy(torch.tensor(x32), torch.tensor(y64))
    assert ours.dtype == np.float64
    _close(ours, theirs, atol=0)
    ours = bai.xlogy(bai.tensor(y64), 3.0)  # log(3) in float64, not float32
    _close(ours, torch.xlogy(torch.tensor(y64), 3.0), atol=0)
    flags = bai.tensor([True, False])
    assert bai.xlogy(flags, flags).tolist() == [0.0, 0.0]


SPECIAL = np.array([0.0, -0.0, 1.0, -2.0, np.inf, -np.inf, np.nan])
# pairs where the compositions give 0 for a gradient PyTorch gives as NaN (0 / 0 or inf / inf)
# or inf (xlogy's x-gradient at x = 0, y = inf: log(inf)): the pairs the values exclude
GRADIENT_EXCEPTIONS = {
    "hypot": lambda a, b: (a == 0) & (b == 0) | np.isinf(a) | np.isinf(b),
    "xlogy": lambda x, y: (x == 0) & ((y == 0) | (y == np.inf)),
    "logaddexp": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
    "logaddexp2": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_EXCEPTIONS))
def test_gradients_at_zeros_infinities_and_nan(name):
    a, b = (values.ravel() for values in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    ours = [bai.tensor(v, dtype=bai.float64, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    with np.errstate(all="ignore"):
        getattr(bai, name)(*ours).sum().backward()
    getattr(torch, name)(*theirs).sum().backward()
    exceptions = GRADIENT_EXCEPTIONS[name](a, b)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(
            mine.grad.numpy()[~exceptions], reference.grad.numpy()[~exceptions], rtol=1e-15, atol=0
        )
        assert np.all(mine.grad.numpy()[exceptions & ~np.isnan(a) & ~np.isnan(b)] == 0)


# ----- Tensor methods and in-place forms --------------------------------------------------------


def test_every_function_is_a_tensor_method_where_torch_has_one():
    for name in [*ONE_INPUT, *TWO_INPUTS]:
        assert hasattr(torch.Tensor, name) and hasattr(bai.Tensor, name), name
        in_place = f"{name}_"
        assert hasattr(bai.Tensor, in_place) == hasattr(torch.Tensor, in_place), in_place


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_in_place_forms(name):
    low, high = ONE_INPUT[name][1]
    values = _uniform(low, high, (2, 3))
    ours, theirs = bai.tensor(values), torch.tensor(values)
    assert getattr(ours, f"{name}_")() is ours
    getattr(theirs, f"{name}_")()
    _close(ours, theirs)
    # inside a recorded graph the tensor takes the function's node: gradients flow through it
    # as through the out-of-place form (PyTorch has no gradient for some in-place forms)
    leaf = bai.tensor(values, requires_grad=True)
    modified = leaf * 1.0
    getattr(modified, f"{name}_")()
    (modified * 2.0).sum().backward()
    reference = torch.tensor(values, requires_grad=True)
    (ONE_INPUT[name][0](reference * 1.0) * 2.0).sum().backward()
    _close(leaf.grad, reference.grad)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "hypot", "xlogy"])
def test_two_input_in_place_forms(name):
    values, other = _uniform(0.2, 2, (2, 3)), _uniform(0.2, 2, (3,))
    ours, theirs = bai.tensor(values), torch.tensor(values)
    assert getattr(ours, f"{name}_")(bai.tensor(other)) is ours
    getattr(theirs, f"{name}_")(torch.tensor(other))
    _close(ours, theirs)
    with pytest.raises(bai.ShapeError, match=rf"\[{name}_\]"):
        getattr(bai.tensor(other), f"{name}_")(bai.tensor(values))  # would grow (3,) to (2, 3)


def test_in_place_forms_refuse_what_torch_refuses():
    with pytest.raises(bai.DTypeError, match=r"\[tan_\]"):
        bai.tensor([1, 2]).tan_()  # a float result does not fit an int64 tensor
    leaf = bai.tensor([0.5], requires_grad=True)
    with pytest.raises(bai.AutogradError, match=r"\[asin_\]"):
        leaf.asin_()
    x = bai.tensor([0.5])
    version = x.version
    x.atanh_()
    assert x.version == version + 1


# ----- graphs -----------------------------------------------------------------------------------


def test_frozen_compositions_match_eager_on_new_inputs():
    def function(a, b):
        return (
            bai.logaddexp(a, b)
            + bai.logaddexp2(b, a)
            + bai.hypot(a, b)
            + bai.xlogy(a, b.abs())
            + bai.atan2(a, b)
            + a.deg2rad().tan()
        )

    frozen = freeze(function, [TensorSpec((None, 3), "float32"), TensorSpec((None, 3), "float32")])
    a = RNG.standard_normal((5, 3)).astype("float32")
    b = RNG.standard_normal((5, 3)).astype("float32")
    a[0, 0], b[0, 0] = 0.0, 0.0  # the zero branches of xlogy and hypot
    a[1, 1] = b[1, 1]  # a tie in logaddexp
    expected = function(bai.tensor(a), bai.tensor(b)).numpy()
    np.testing.assert_allclose(frozen(a, b).numpy(), expected, rtol=1e-6, atol=1e-6)


def test_chains_of_the_new_functions_fuse_into_one_kernel():
    def function(x):
        return (x.sinh().atan() * 0.5).cosh().asinh()

    static = freeze(function, [TensorSpec((None, 4), "float32")])
    fused = fuse_elementwise(static.graph)
    (node,) = fused.nodes
    assert isinstance(node.op, FusedElementwise) and node.op.label == "sinh+atan+mul+cosh+asinh"
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(
        static.__class__(fused)(x).numpy(), function(bai.tensor(x)).numpy()
    )


def test_atan2_exports_to_onnx_in_every_quadrant_and_on_the_axes():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime

    static = freeze(bai.atan2, [TensorSpec((None,), "float32"), TensorSpec((None,), "float32")])
    y = np.array([0.0, 1.0, -1.0, 0.0, 2.5, -3.0, 0.5, -0.5, 1.0, -1.0], "float32")
    x = np.array([0.0, 0.0, 0.0, -1.0, -1.0, -2.0, 3.0, 3.0, 1e-30, -1e-30], "float32")
    exported = run_onnxruntime(export_onnx(static), y, x)[0]
    np.testing.assert_allclose(exported, np.arctan2(y, x), rtol=1e-6, atol=1e-6)
