"""log2, log10, exp2, trunc (fix), frac, sinc, copysign, heaviside, float_power, fmod, gcd, lcm
and the bit shifts (functions, Tensor methods, in-place forms, the ``<<`` and ``>>`` operators)
against PyTorch: values and dtypes on float32, float64, integer and boolean inputs, special
values, broadcasting, first and second derivatives in float64, the errors PyTorch raises, and
a compiled function."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)

# name -> (the torch function, the (low, high) of values where it is defined and smooth)
ONE_INPUT = {
    "log2": (torch.log2, (0.1, 4.0)),
    "log10": (torch.log10, (0.1, 4.0)),
    "exp2": (torch.exp2, (-3.0, 3.0)),
    "trunc": (torch.trunc, (-4.0, 4.0)),
    "fix": (torch.fix, (-4.0, 4.0)),
    "frac": (torch.frac, (-4.0, 4.0)),
    "sinc": (torch.sinc, (-3.0, 3.0)),
}
TWO_INPUTS = ["copysign", "heaviside", "float_power", "fmod", "gcd", "lcm"]
SHIFTS = ["bitwise_left_shift", "bitwise_right_shift"]
SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.7, -3.7, 1e-300, 1e-170]
    + [800.0, -800.0, 1024.0, np.inf, -np.inf, np.nan]
)


def _uniform(low, high, shape):
    return RNG.uniform(low, high, shape)


def _close(ours, theirs, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(
        ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True
    )


def _same(ours, theirs):
    """Equal values (NaN where NaN), signs of zeros and dtypes."""
    expected = theirs.detach().numpy()
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), expected)
    if expected.dtype.kind == "f":  # the sign of a NaN means nothing: it is not compared
        numbers = ~np.isnan(expected)
        np.testing.assert_array_equal(
            np.signbit(ours.numpy())[numbers], np.signbit(expected)[numbers]
        )


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


def _call(library, name: str, *values):
    """``library.name`` (buildingai's or torch's) of ``values``, arrays made that library's
    tensors and Python numbers passed as they are."""
    operands = (library.tensor(v) if isinstance(v, np.ndarray) else v for v in values)
    return getattr(library, name)(*operands)


def _same_as_torch(name: str, *values) -> None:
    """``name`` of ``values`` (arrays and Python numbers) equals PyTorch's, dtype included."""
    with np.errstate(all="ignore"):
        ours = _call(bai, name, *values)
    _same(ours, _call(torch, name, *values))


def _both_raise(ours_call, theirs_call, error, match):
    """Our call raises ``error`` (its message matching ``match``) where PyTorch's raises."""
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        theirs_call()
    with pytest.raises(error, match=match):
        ours_call()


# ----- one input --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_functions_and_methods_against_torch(name):
    reference, (low, high) = ONE_INPUT[name]
    x = _uniform(low, high, (3, 4))
    _compare(getattr(bai, name), reference, x)
    _compare(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x, gradgrad=False)


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_special_values_in_float64_and_float32(name):
    reference = ONE_INPUT[name][0]
    with np.errstate(all="ignore"):
        _close(getattr(bai, name)(bai.tensor(SPECIAL)), reference(torch.tensor(SPECIAL)), atol=0)
        if name in ("trunc", "fix", "frac"):  # the sign of a zero result too: trunc(-0.5) = -0
            _same(getattr(bai, name)(bai.tensor(SPECIAL)), reference(torch.tensor(SPECIAL)))
        single = SPECIAL.astype(np.float32)
        ours, theirs = getattr(bai, name)(bai.tensor(single)), reference(torch.tensor(single))
    assert ours.dtype == np.float32
    _close(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_integers_and_bools_as_torch(name):
    reference = ONE_INPUT[name][0]
    for values, dtype in (
        ([[1, -2, 3], [0, 8, 100]], "int64"),
        ([1, 2, 7], "int32"),
        ([0, 3, 250], "uint8"),
        ([True, False], "bool"),
    ):
        theirs_input = torch.tensor(np.array(values, dtype))
        try:
            theirs = reference(theirs_input)
        except (RuntimeError, NotImplementedError):  # frac of integers, trunc of bools
            with pytest.raises(bai.DTypeError, match=rf"\[(trunc|frac)\] takes .*{dtype}"):
                getattr(bai, name)(bai.tensor(np.array(values, dtype)))
            continue
        with np.errstate(all="ignore"):
            ours = getattr(bai, name)(bai.tensor(np.array(values, dtype)))
        # integers give the default float dtype (trunc keeps the integer dtype)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (name, dtype)
        _close(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_gradients_at_special_values(name):
    reference = ONE_INPUT[name][0]
    ours_in = bai.tensor(SPECIAL, requires_grad=True)
    theirs_in = torch.tensor(SPECIAL, requires_grad=True)
    with np.errstate(all="ignore"):
        (ours,) = bai.grad(getattr(bai, name)(ours_in).sum(), [ours_in])
    (theirs,) = torch.autograd.grad(reference(theirs_in).sum(), [theirs_in])
    # sinc at 1e-170, where pi x^2 underflows: PyTorch gives 0, the Taylor slope -pi^2 x / 3
    _close(ours, theirs, atol=1e-150)


@pytest.mark.parametrize("name", ["log2", "log10", "exp2", "sinc"])
def test_second_derivatives_at_special_values(name):
    reference = ONE_INPUT[name][0]
    ours_in = bai.tensor(SPECIAL, requires_grad=True)
    theirs_in = torch.tensor(SPECIAL, requires_grad=True)
    with np.errstate(all="ignore"):
        (ours,) = bai.grad(getattr(bai, name)(ours_in).sum(), [ours_in], create_graph=True)
        (ours,) = bai.grad(ours.sum(), [ours_in])
    (theirs,) = torch.autograd.grad(reference(theirs_in).sum(), [theirs_in], create_graph=True)
    (theirs,) = torch.autograd.grad(theirs.sum(), [theirs_in])
    # sinc at 0 and where pi x^2 underflows: PyTorch's is NaN (0 / 0), see the next test
    kept = ~((np.abs(SPECIAL) < 1e-100) if name == "sinc" else np.zeros(SPECIAL.shape, bool))
    np.testing.assert_allclose(
        ours.numpy()[kept], theirs.numpy()[kept], rtol=1e-12, atol=1e-14, equal_nan=True
    )


def test_sinc_is_one_at_zero_with_its_true_curvature():
    x = bai.tensor([0.0, -0.0, 1e-300], dtype=bai.float64, requires_grad=True)
    out = bai.sinc(x)
    assert out.tolist() == [1.0, 1.0, 1.0]
    (slope,) = bai.grad(out.sum(), [x], create_graph=True)
    assert np.all(slope.numpy() == 0) or np.allclose(slope.numpy(), 0, atol=1e-290)
    (curvature,) = bai.grad(slope.sum(), [x])
    # sinc''(0) = -pi^2 / 3 (PyTorch's is NaN); the same as PyTorch's slope differenced at +-h
    np.testing.assert_allclose(curvature.numpy(), -(math.pi**2) / 3, rtol=1e-15)
    h = torch.tensor([1e-4, -1e-4], dtype=torch.float64, requires_grad=True)
    (slopes,) = torch.autograd.grad(torch.sinc(h).sum(), [h])
    difference = float(slopes[0] - slopes[1]) / 2e-4
    np.testing.assert_allclose(curvature.numpy()[0], difference, rtol=1e-7)


def test_fix_is_trunc():
    assert bai.fix is bai.trunc
    x = bai.tensor([2.7, -2.7, -0.2])
    _same(x.fix(), torch.tensor([2.7, -2.7, -0.2]).fix())


def test_frac_keeps_the_sign_and_passes_the_gradient():
    values = np.array([-2.5, 2.5, -0.0, 3.0, -3.0, 1e20, np.inf, np.nan])
    with np.errstate(all="ignore"):
        _same(bai.frac(bai.tensor(values)), torch.frac(torch.tensor(values)))
    x = bai.tensor(values[:4], requires_grad=True)
    bai.frac(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0]


# ----- copysign ---------------------------------------------------------------------------------


SIGNED = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])


def test_copysign_values_and_derivatives():
    a, b = _uniform(-3, 3, (3, 4)), _uniform(-3, 3, (4,))
    _compare(bai.copysign, torch.copysign, a, b)
    _compare(lambda p, q: p.copysign(q), lambda p, q: p.copysign(q), b, a, gradgrad=False)


def test_copysign_signed_zeros_infinities_and_nan():
    _same_as_torch("copysign", SIGNED[:, None], SIGNED[None, :])  # every pair
    a, b = (values.ravel() for values in np.meshgrid(SIGNED, SIGNED, indexing="ij"))
    ours = [bai.tensor(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    with np.errstate(all="ignore"):
        bai.copysign(*ours).sum().backward()
    torch.copysign(*theirs).sum().backward()
    for mine, reference in zip(ours, theirs):  # 0 at a == 0, NaN at infinite a, 0 for b
        _close(mine.grad, reference.grad, atol=0)


def test_copysign_dtypes_and_python_numbers():
    ints, flags = np.array([1, -2, 3]), np.array([True, False, True])
    for a, b in (
        (ints, np.array([-1, 1, -1])),
        (flags, flags),
        (ints, np.array([-1.0, 2.0, -0.0])),
        (np.array([1.5, -2.0], "float32"), np.array([-1.0, 1.0])),
        (np.array([1.5, -2.0], "float32"), np.array(-1.0)),  # a 0-d tensor does not widen
    ):
        _same_as_torch("copysign", a, b)
    for other in (-1.0, 1, -0.0):
        _same_as_torch("copysign", np.array([1.5, -2.0, 0.0], "float32"), other)
    _same_as_torch("copysign", ints, -1.0)


# ----- heaviside --------------------------------------------------------------------------------


def test_heaviside_values_ties_and_nan():
    x = np.array([-1.5, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])
    for values in (np.array([0.5]), np.array([-2.0, 0.0, 0.5, 1.0, 3.0, 4.0, 7.0])):
        _same_as_torch("heaviside", x, values)
    single = x.astype("float32")
    _same(
        bai.tensor(single).heaviside(bai.tensor(np.float32([0.25]))),
        torch.tensor(single).heaviside(torch.tensor(np.float32([0.25]))),
    )
    # broadcast: values (3, 1) against input (7,)
    _same_as_torch("heaviside", x, np.array([[0.0], [0.5], [1.0]]))


def test_heaviside_integers_bools_and_one_dtype():
    for x, values in (
        (np.array([-3, 0, 4]), np.array([7])),
        (np.array([0, 5], "uint8"), np.array([9], "uint8")),
        (np.array([True, False]), np.array([True])),
        (np.array([True, False]), np.array([False])),
    ):
        _same_as_torch("heaviside", x, values)
    x32, v64 = np.array([1.0, 0.0], "float32"), np.array([0.5])
    _both_raise(
        functools.partial(_call, bai, "heaviside", x32, v64),
        functools.partial(_call, torch, "heaviside", x32, v64),
        bai.DTypeError,
        r"\[heaviside\] input and values must have one dtype, got float32 and float64",
    )
    # PyTorch takes a tensor only; a Python number is read as a weak scalar
    assert bai.heaviside(bai.tensor(x32), 0.5).tolist() == [1.0, 0.5]
    assert bai.heaviside(bai.tensor(x32), 0.5).dtype == np.float32


def test_heaviside_has_no_derivative_as_in_torch():
    x = bai.tensor([1.0, 0.0], requires_grad=True)
    out = bai.heaviside(x, bai.tensor([0.5]))
    theirs = torch.heaviside(torch.tensor([1.0, 0.0], requires_grad=True), torch.tensor([0.5]))
    assert out.requires_grad and theirs.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        theirs.sum().backward()
    with pytest.raises(bai.BuildingAIError, match=r"\[heaviside\] has no derivative"):
        out.sum().backward()
    assert not bai.heaviside(x.detach(), bai.tensor([0.5])).requires_grad


# ----- float_power ------------------------------------------------------------------------------


def test_float_power_computes_in_float64():
    ints, single = np.array([1, 2, -3]), np.array([1.5, 2.0, 0.5], "float32")
    for base, exponent in (
        (ints, 2),
        (2, ints),
        (single, 2.5),
        (single, single),
        (ints, single),
        (single, np.array(3)),
    ):
        with np.errstate(invalid="ignore"):  # (-3) ** 2.5 is NaN
            ours = _call(bai, "float_power", base, exponent)
        theirs = _call(torch, "float_power", base, exponent)
        assert ours.dtype == np.float64
        _close(ours, theirs, rtol=1e-15, atol=0)
    assert bai.tensor(single).float_power(2).dtype == np.float64
    assert bai.float_power(2, 3).dtype == np.float64 and bai.float_power(2, 3).item() == 8.0


def test_float_power_derivatives():
    base, exponent = _uniform(0.3, 2.0, (3, 4)), _uniform(-2.0, 2.0, (4,))
    _compare(bai.float_power, torch.float_power, base, exponent)
    _compare(lambda b: bai.float_power(b, 3), lambda b: torch.float_power(b, 3), base)
    # float32 operands get float32 gradients, of the float64 computation
    values = np.array([1.5, 2.0, 0.7], "float32")
    ours = [bai.tensor(values, requires_grad=True) for _ in range(2)]
    theirs = [torch.tensor(values, requires_grad=True) for _ in range(2)]
    bai.float_power(*ours).sum().backward()
    torch.float_power(*theirs).sum().backward()
    for mine, reference in zip(ours, theirs):
        assert mine.grad.dtype == np.float32
        _close(mine.grad, reference.grad, rtol=1e-6, atol=0)


# ----- fmod -------------------------------------------------------------------------------------


def test_fmod_keeps_the_dividends_sign():
    a = np.array([-3.0, 3.0, -3.5, 3.5, -4.0, 0.0, -0.0, 5.0, np.inf, -np.inf, np.nan, 1e300])
    b = np.array([2.0, -2.0, 0.75, -0.75, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.0])
    _same_as_torch("fmod", a[:, None], b[None, :])
    single = a[:-1].astype("float32")
    with np.errstate(all="ignore"):
        _same(bai.tensor(single).fmod(-1.5), torch.tensor(single).fmod(-1.5))


def test_fmod_derivatives():
    a = _uniform(-5.0, 5.0, (3, 4))
    b = _uniform(0.3, 2.0, (4,)) * np.array([1.0, -1.0, 1.0, -1.0])
    _compare(bai.fmod, torch.fmod, a, b)
    _compare(lambda p: p.fmod(1.5), lambda p: p.fmod(1.5), a)
    _compare(lambda p, q: p.fmod(q), lambda p, q: p.fmod(q), b, a, gradgrad=False)


def test_fmod_integers_and_dtypes():
    a, b = np.array([-7, 7, -7, 7, 0]), np.array([3, 3, -3, -3, 5])
    flags, narrow = np.array([True, False]), a.astype("int32")
    for other in (b, -4, 2.5):  # a Python float gives the default float dtype
        _same_as_torch("fmod", a, other)
    for other in (np.array(4), b):  # a 0-d int64 tensor does not widen int32, a 1-d one does
        _same_as_torch("fmod", narrow, other)
    _same_as_torch("fmod", flags, np.array([2, 3]))
    _both_raise(
        functools.partial(_call, bai, "fmod", a, 0),
        functools.partial(_call, torch, "fmod", a, 0),
        bai.BuildingAIError,
        r"\[fmod\] integer division by zero",
    )
    _both_raise(
        functools.partial(_call, bai, "fmod", flags, flags),
        functools.partial(_call, torch, "fmod", flags, flags),
        bai.DTypeError,
        r"\[fmod\] takes numbers, got bool",
    )


# ----- gcd and lcm ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_and_lcm_of_integers(name):
    values = np.array([12, -18, 0, 7, -1, 36, 5])
    _same_as_torch(name, values[:, None], values[None, :])
    for dtype in ("int8", "int16", "int32", "uint8"):
        small = np.array([4, 6, 0, 9, 100], dtype)
        other = np.array([6, 4, 3, 0, 3], dtype)  # lcm(100, 3) wraps in int8, as in PyTorch
        _same(
            getattr(bai.tensor(small), name)(bai.tensor(other)),
            getattr(torch.tensor(small), name)(torch.tensor(other)),
        )
    narrow = np.array([4, 6], "int32")
    _same_as_torch(name, narrow, np.array([6, 9]))  # int32 and int64 meet in int64
    # PyTorch takes a tensor only; a Python int is read as a weak scalar
    assert getattr(bai, name)(bai.tensor(narrow), 6).dtype == np.int32


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_and_lcm_refuse_floats_and_bools(name):
    floats, flags = np.array([4.0, 6.0]), np.array([True, False])
    for a, b, shown in ((floats, floats, "float64"), (flags, flags, "bool and bool")):
        _both_raise(
            functools.partial(_call, bai, name, a, b),
            functools.partial(_call, torch, name, a, b),
            bai.DTypeError,
            rf"\[{name}\] takes integer tensors, got {shown}",
        )
    with pytest.raises(bai.DTypeError, match=r"got int64 and a Python float"):
        getattr(bai, name)(bai.tensor([4, 6]), 2.0)


# ----- bit shifts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIFTS)
def test_shifts_in_and_out_of_range(name):
    a = np.array([-8, -1, 0, 1, 5, 2**62, -(2**63)])[:, None]
    b = np.array([-1, 0, 1, 3, 62, 63, 64, 100])[None, :]
    _same_as_torch(name, a, b)
    for dtype in ("int8", "int16", "int32", "uint8"):
        width = np.dtype(dtype).itemsize * 8
        signed = np.dtype(dtype).kind == "i"
        values = np.array([-100 if signed else 156, -1 if signed else 255, 1, 3, 100], dtype)
        amounts = np.arange(-1 if signed else 0, width + 3, dtype=dtype)  # up to width + 2
        _same_as_torch(name, values[:, None], amounts[None, :])


def test_shift_operators_methods_and_reflections():
    a = np.array([1, -3, 40], "int32")
    ours, theirs = bai.tensor(a), torch.tensor(a)
    _same(ours << 2, theirs << 2)
    _same(ours >> 1, theirs >> 1)
    _same(2 << ours, 2 << theirs)
    _same(-64 >> bai.tensor(np.array([1, 2, 70])), -64 >> torch.tensor([1, 2, 70]))
    _same(ours << bai.tensor(np.array([[1], [2]])), theirs << torch.tensor([[1], [2]]))
    _same(ours.bitwise_left_shift(3), theirs.bitwise_left_shift(3))
    _same(
        ours.bitwise_right_shift(bai.tensor(np.array(1))),
        theirs.bitwise_right_shift(torch.tensor(1)),
    )
    _same_as_torch("bitwise_left_shift", 3, a)
    # a NumPy array on the left: the tensor's reflected operator answers, with a Tensor
    result = np.array([1, 2, 3]) << bai.tensor(np.array([1, 2, 3]))
    assert isinstance(result, bai.Tensor) and result.tolist() == [2, 8, 24]
    assert (np.array([8, 8]) >> bai.tensor(np.array([1, 3]))).tolist() == [4, 1]


def test_shift_dtypes_as_torch():
    small = np.array([3], "int8")
    _same(bai.tensor(small) << bai.tensor(np.array([2])), torch.tensor(small) << torch.tensor([2]))
    _same(bai.tensor(small) << bai.tensor(np.array(2)), torch.tensor(small) << torch.tensor(2))
    _same(bai.tensor(np.array([200], "uint8")) << 1, torch.tensor(np.array([200], "uint8")) << 1)
    _same(bai.tensor([True, False]) >> 1, torch.tensor([True, False]) >> 1)
    _same(bai.tensor([True]) << 1, torch.tensor([True]) << 1)


def test_shift_operators_in_place():
    ours, theirs = bai.tensor([1, 2, -4]), torch.tensor([1, 2, -4])
    alias, version = ours, ours.version
    ours <<= 2
    theirs <<= 2
    assert ours is alias and ours.version == version + 1
    _same(ours, theirs)
    ours >>= bai.tensor([1, 0, 3])
    theirs >>= torch.tensor([1, 0, 3])
    assert ours is alias
    _same(ours, theirs)


def test_shifts_refuse_floats_and_bools():
    floats, ints, flags = np.array([1.5, 2.0]), np.array([1, 2]), np.array([True, False])
    for name in SHIFTS:
        for a, b, shown in (
            (floats, 1, "float64 and a Python int"),
            (ints, 2.0, "int64 and a Python float"),
            (flags, flags, "bool and bool"),
        ):
            _both_raise(
                functools.partial(_call, bai, name, a, b),
                functools.partial(_call, torch, name, a, b),
                bai.DTypeError,
                rf"\[{name}\] takes integer tensors, got {shown}",
            )
    with pytest.raises(bai.DTypeError, match="bitwise_left_shift"):
        bai.tensor(floats) << 1
    with pytest.raises(bai.DTypeError, match="bitwise_right_shift"):
        bai.tensor(ints) >> 1.0


# ----- broadcasting -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*TWO_INPUTS, *SHIFTS])
def test_binary_functions_broadcast(name):
    integers = name in ("gcd", "lcm", *SHIFTS)
    if integers:
        a, b = RNG.integers(-9, 10, (3, 1)), RNG.integers(0, 6, (4,))
    else:
        a, b = _uniform(-3, 3, (3, 1)), _uniform(0.5, 2, (4,))
        a[0, 0] = 0.0  # a tie of heaviside
    with np.errstate(invalid="ignore"):  # float_power of a negative base
        ours = getattr(bai, name)(bai.tensor(a), bai.tensor(b))
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    assert tuple(ours.shape) == (3, 4)
    _close(ours, theirs, rtol=1e-15, atol=0)


# ----- Tensor methods and in-place forms --------------------------------------------------------


def test_every_function_is_a_tensor_method_with_torchs_in_place_forms():
    for name in [*ONE_INPUT, *TWO_INPUTS, *SHIFTS]:
        assert hasattr(torch, name) and hasattr(bai, name), name
        assert hasattr(torch.Tensor, name) and hasattr(bai.Tensor, name), name
        in_place = f"{name}_"
        assert hasattr(bai.Tensor, in_place) == hasattr(torch.Tensor, in_place), in_place
    for operator in (
        "__lshift__",
        "__rlshift__",
        "__ilshift__",
        "__rshift__",
        "__rrshift__",
        "__irshift__",
    ):
        assert hasattr(bai.Tensor, operator), operator


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_one_input_in_place_forms(name):
    low, high = ONE_INPUT[name][1]
    values = _uniform(low, high, (2, 3))
    ours, theirs = bai.tensor(values), torch.tensor(values)
    version = ours.version
    assert getattr(ours, f"{name}_")() is ours
    getattr(theirs, f"{name}_")()
    _close(ours, theirs)
    assert ours.version == version + 1
    # inside a recorded graph the tensor takes the function's node: gradients flow through it
    # as through the out-of-place form
    leaf = bai.tensor(values, requires_grad=True)
    modified = leaf * 1.0
    getattr(modified, f"{name}_")()
    (modified * 2.0).sum().backward()
    reference = torch.tensor(values, requires_grad=True)
    modified = reference * 1.0
    getattr(modified, f"{name}_")()
    (modified * 2.0).sum().backward()
    _close(leaf.grad, reference.grad)


FLOAT_PAIRS = {
    "copysign": (_uniform(-2, 2, (2, 3)), _uniform(-2, 2, (3,))),
    "heaviside": (np.array([[-1.0, 0.0, 2.0], [0.0, 3.0, -0.5]]), np.array([0.5, 0.25, 1.0])),
    "fmod": (_uniform(-5, 5, (2, 3)), _uniform(0.5, 2, (3,))),
    "float_power": (_uniform(0.5, 2, (2, 3)), _uniform(-2, 2, (3,))),
}
INTEGER_PAIRS = {
    "gcd": (np.array([[12, -18, 0], [7, 9, 100]]), np.array([8, 12, 5])),
    "lcm": (np.array([[12, -18, 0], [7, 9, 10]]), np.array([8, 12, 5])),
    "bitwise_left_shift": (np.array([[1, -3, 5], [7, 0, 100]]), np.array([0, 2, 65])),
    "bitwise_right_shift": (np.array([[1, -3, 5], [-7, 0, 100]]), np.array([0, 2, 65])),
}


@pytest.mark.parametrize("name", sorted({**FLOAT_PAIRS, **INTEGER_PAIRS}))
def test_two_input_in_place_forms(name):
    values, other = {**FLOAT_PAIRS, **INTEGER_PAIRS}[name]
    for dtype in ("int32", "int64") if name in INTEGER_PAIRS else ("float64",):
        ours, theirs = bai.tensor(values.astype(dtype)), torch.tensor(values.astype(dtype))
        assert getattr(ours, f"{name}_")(bai.tensor(other)) is ours
        getattr(theirs, f"{name}_")(torch.tensor(other))
        _same(ours, theirs)  # an int32 tensor stays int32, as in PyTorch
    with pytest.raises(bai.ShapeError, match=rf"\[{name}_\]"):
        getattr(bai.tensor(other), f"{name}_")(bai.tensor(values))  # would grow (3,) to (2, 3)


def test_in_place_gradients_of_two_input_forms():
    for name in ("copysign", "fmod", "float_power"):
        values, other = FLOAT_PAIRS[name]
        leaf, reference = (
            bai.tensor(values, requires_grad=True),
            torch.tensor(values, requires_grad=True),
        )
        for x, wrap in ((leaf, bai.tensor), (reference, torch.tensor)):
            modified = x * 1.0
            getattr(modified, f"{name}_")(wrap(other))
            (modified * 2.0).sum().backward()
        _close(leaf.grad, reference.grad)


def test_in_place_forms_refuse_what_torch_refuses():
    ints = np.array([1, 2])
    for name, args in (("log2_", ()), ("sinc_", ()), ("exp2_", ()), ("copysign_", (-1,))):
        # a float result does not fit an int64 tensor
        _both_raise(
            lambda name=name, args=args: getattr(bai.tensor(ints), name)(*args),
            lambda name=name, args=args: getattr(torch.tensor(ints), name)(*args),
            bai.DTypeError,
            rf"\[{name}\] cannot write the result into the int64 tensor",
        )
    _both_raise(
        lambda: bai.tensor(ints).fmod_(1.5),
        lambda: torch.tensor(ints).fmod_(1.5),
        bai.DTypeError,
        r"\[fmod_\] cannot write",
    )
    _both_raise(
        lambda: bai.tensor(ints).frac_(),
        lambda: torch.tensor(ints).frac_(),
        bai.DTypeError,
        r"\[frac\] takes floating-point tensors, got int64",
    )
    single = np.array([1.5, 2.0], "float32")
    _both_raise(
        lambda: bai.tensor(single).float_power_(2),
        lambda: torch.tensor(single).float_power_(2),
        bai.DTypeError,
        r"\[float_power_\] the base has dtype float32, but float_power's result is float64",
    )
    leaf = bai.tensor([0.5], requires_grad=True)
    with pytest.raises(bai.AutogradError, match=r"\[log10_\]"):
        leaf.log10_()
    assert bai.tensor(ints).trunc_().tolist() == [1, 2]  # integers truncate to themselves


# ----- compiled graphs --------------------------------------------------------------------------


def test_compiled_function_matches_eager():
    def floats(a, b):
        return (
            bai.log2(a.abs() + 1.0)
            + bai.log10(b.abs() + 2.0)
            + bai.sinc(a) * bai.exp2(b)
            + bai.fmod(a, 0.75)
            + bai.copysign(b, a).trunc()
            + bai.frac(a * 3.0)
            + bai.heaviside(a, b)
            + bai.float_power(b, 2)
        )

    def integers(x, y):
        return bai.gcd(x, y) + bai.lcm(x, 3) + ((x << 2) >> y)

    a = RNG.standard_normal((5, 3)).astype("float32")
    b = RNG.standard_normal((5, 3)).astype("float32")
    a[0, 0] = 0.0  # sinc's 1 and heaviside's tie
    x, y = RNG.integers(-20, 20, (4, 3)), RNG.integers(0, 5, (4, 3))
    with bai.no_grad():
        for function, inputs in ((floats, (a, b)), (integers, (x, y))):
            compiled = bai.compile(function, fullgraph=True)
            for scale in (1, 2):  # the graph serves new values too
                tensors = [bai.tensor(v * scale) for v in inputs]
                got, expected = compiled(*tensors), function(*tensors)
                assert got.dtype == expected.dtype
                np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
            assert all(line.endswith("-> graph") for line in compiled.cache_info())
