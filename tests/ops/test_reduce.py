"""Reductions and scans against PyTorch: values, gradients, second derivatives, finite
differences, both argument spellings, zero-size tensors, ties, zeros and error messages."""

import functools
import math
import warnings

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op, constant, positive

torch = pytest.importorskip("torch")

# (shape, axis): scalar, vector, matrix, 3-D, negative and tuple axes, zero-size dimensions
CASES = [
    ((), None),
    ((5,), None),
    ((5,), 0),
    ((5,), -1),
    ((3, 4), None),
    ((3, 4), 1),
    ((3, 4), -2),
    ((3, 4), (0, 1)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), (-1, 0)),
    ((2, 3, 4), 1),
    ((3, 1), 1),
    ((0, 3), 1),
    ((2, 0, 4), (0, 2)),
]
NONEMPTY = [(shape, axis) for shape, axis in CASES if 0 not in shape]


def _dims(x, axis):
    """PyTorch's spelling of ``axis`` (it wants a tuple for "all axes" in some reductions)."""
    return tuple(range(x.ndim)) if axis is None else axis


def _ours(name, axis, keepdims, **kwargs):
    """Call the method with NumPy's spelling for keepdims=False and PyTorch's otherwise."""
    if keepdims:
        return lambda x: getattr(x, name)(dim=axis, keepdim=True, **kwargs)
    return lambda x: getattr(x, name)(axis=axis, keepdims=False, **kwargs)


def _numpy_spelling(x, *, name, axis, keepdims):
    return getattr(x, name)(axis=axis, keepdims=keepdims)


def _torch_prod(x, axis, keepdim):
    """torch.prod reduces one dimension at a time."""
    if axis is None:
        out = x.prod()
        return out.reshape((1,) * x.ndim) if keepdim else out
    axes = sorted((a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)), reverse=True)
    for a in axes:
        x = x.prod(a, keepdim=keepdim)
    return x


def _reduced(shape, axis):
    if axis is None:
        return math.prod(shape)
    axes = (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in axes)


# ----- sum, mean, logsumexp, prod, amax/amin over the whole table -------------------------------
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "logsumexp"])
def test_smooth_reductions(name, case, keepdims):
    shape, axis = case
    check_op(
        _ours(name, axis, keepdims),
        shape,
        torch_fn=lambda x: getattr(torch, name)(x, dim=_dims(x, axis), keepdim=keepdims),
        gradgrad=True,
    )


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_prod(case, keepdims):
    shape, axis = case
    check_op(
        _ours("prod", axis, keepdims),
        shape,
        torch_fn=lambda x: _torch_prod(x, axis, keepdims),
        gradgrad=True,
    )


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", NONEMPTY, ids=str)
@pytest.mark.parametrize("name", ["amax", "amin", "max", "min"])
def test_extrema(name, case, keepdims):
    shape, axis = case
    torch_name = {"max": "amax", "min": "amin"}.get(name, name)
    ours = _ours(name, axis, keepdims)
    if name in ("max", "min"):  # with dim= they return (values, indices): tests/functions
        ours = functools.partial(_numpy_spelling, name=name, axis=axis, keepdims=keepdims)
    check_op(
        ours,
        shape,
        torch_fn=lambda x: getattr(torch, torch_name)(x, dim=_dims(x, axis), keepdim=keepdims),
        gradgrad=name == "amax",
    )


# ----- var and std ------------------------------------------------------------------------------
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", [c for c in NONEMPTY if _reduced(*c) > 2], ids=str)
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std(name, case, keepdims):
    shape, axis = case
    check_op(
        _ours(name, axis, keepdims),
        shape,
        torch_fn=lambda x: getattr(torch, name)(x, dim=_dims(x, axis), keepdim=keepdims),
        gradgrad=True,
    )


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize(
    "ours, theirs",
    [
        (dict(correction=0), dict(correction=0)),
        (dict(ddof=0), dict(correction=0)),
        (dict(ddof=2), dict(correction=2)),
        (dict(unbiased=False), dict(unbiased=False)),
        (dict(unbiased=True), dict(unbiased=True)),
        (dict(correction=1.5), dict(correction=1.5)),
    ],
    ids=str,
)
def test_var_std_corrections(name, ours, theirs):
    check_op(
        lambda x: getattr(x, name)(axis=(0, 2), **ours),
        (2, 3, 4),
        torch_fn=lambda x: getattr(torch, name)(x, dim=(0, 2), **theirs),
        gradgrad=True,
    )


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_torch_positional_overloads(name):
    x = np.random.default_rng(1).standard_normal((3, 4))
    ours, theirs = bai.tensor(x), torch.tensor(x)
    pairs = [
        (getattr(ours, name)(1, False, True), getattr(theirs, name)(1, False, True)),
        (getattr(ours, name)(False), getattr(theirs, name)(False)),
        (getattr(ours, name)(), getattr(theirs, name)()),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    # NumPy's default is ddof=0; ours (PyTorch's) is correction=1
    np.testing.assert_allclose(getattr(ours, name)(ddof=0).numpy(), getattr(np, name)(x))


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_without_degrees_of_freedom_is_nan(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(bai.tensor([2.0]), name)()
        empty = getattr(bai.zeros(0, 3), name)(axis=0)
    assert np.isnan(ours.item())
    assert empty.shape == (3,) and np.isnan(empty.numpy()).all()


# ----- both spellings, and PyTorch-only / NumPy-only habits -------------------------------------
# (max and min are left out: with dim= they return (values, indices), as in PyTorch)
@pytest.mark.parametrize(
    "name",
    ["sum", "mean", "var", "std", "amax", "amin", "prod", "logsumexp",
     "all", "any", "count_nonzero", "norm"],
)  # fmt: skip
def test_both_spellings_agree(name):
    x = bai.tensor(np.random.default_rng(2).standard_normal((2, 3, 4)))
    numpy_style = getattr(x, name)(axis=(0, -1), keepdims=True)
    torch_style = getattr(x, name)(dim=(0, -1), keepdim=True)
    if name == "norm":  # its second positional argument is ord
        function_style = bai.norm(x, 2, (0, -1), keepdims=True)
    else:
        function_style = getattr(bai, name)(x, (0, -1), keepdims=True)
    assert numpy_style.shape == (1, 3, 1)
    np.testing.assert_array_equal(numpy_style.numpy(), torch_style.numpy())
    np.testing.assert_array_equal(numpy_style.numpy(), function_style.numpy())


def test_conflicting_spellings_raise():
    x = bai.zeros(2, 3)
    with pytest.raises(TypeError, match="got both axis=0 and dim=1"):
        x.sum(axis=0, dim=1)
    with pytest.raises(TypeError, match="got both keepdims=True and keepdim=False"):
        x.mean(axis=0, keepdims=True, keepdim=False)
    with pytest.raises(TypeError, match=r"\[var\] got both unbiased=True and correction=0"):
        x.var(unbiased=True, correction=0)
    with pytest.raises(TypeError, match="got both correction=0 and ddof=1"):
        x.std(correction=0, ddof=1)


# ----- ties, zeros, stability -------------------------------------------------------------------
TIES = [[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, 2.0], [-1.0, 4.0, -1.0, 4.0]]


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)], ids=str)
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_ties_share_the_gradient_like_torch_amax(name, axis):
    check_op(
        lambda x: getattr(x, name)(axis=axis),
        constant(TIES, requires_grad=True),
        torch_fn=lambda x: getattr(torch, name)(x, dim=_dims(x, axis)),
        gradgrad=True,
        gradcheck=False,  # ties are kinks: finite differences see one-sided slopes
    )


def test_max_gradient_splits_evenly_among_ties():
    x = bai.tensor([1.0, 3.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1 / 3, 1 / 3, 1 / 3])


ZEROS = {
    "one zero": [[2.0, 0.0, 3.0, -1.5], [1.0, 2.0, 0.5, 4.0]],
    "two zeros": [[2.0, 0.0, 3.0, 0.0], [0.0, 2.0, 0.5, 4.0]],
    "three zeros": [[0.0, 0.0, 3.0, 0.0], [1.5, 2.0, 0.5, 4.0]],
    "all zero": [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
}


@pytest.mark.parametrize("axis", [None, 1, 0, (0, 1)], ids=str)
@pytest.mark.parametrize("values", list(ZEROS.values()), ids=list(ZEROS))
def test_prod_with_zeros(values, axis):
    check_op(
        lambda x: x.prod(axis=axis),
        constant(values, requires_grad=True),
        torch_fn=lambda x: _torch_prod(x, axis, False),
        gradgrad=True,
    )


def test_logsumexp_is_stable_in_float32():
    values = np.array([[1e4, -1e4, 1e4 - 1.0], [-1e4, -1e4, -1e4 + 2.0]], dtype=np.float32)
    x = bai.tensor(values, requires_grad=True)
    out = x.logsumexp(axis=1)
    expected = torch.logsumexp(torch.tensor(values), dim=1)
    assert out.dtype == np.float32 and np.isfinite(out.numpy()).all()
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    out.sum().backward()
    softmax = torch.softmax(torch.tensor(values), dim=1).numpy()
    np.testing.assert_allclose(x.grad.numpy(), softmax, rtol=1e-5, atol=1e-7)


def test_logsumexp_infinities_and_empty():
    x = bai.tensor([[-math.inf, -math.inf], [math.inf, 1.0], [-math.inf, 0.0]])
    np.testing.assert_array_equal(x.logsumexp(axis=1).numpy(), [-math.inf, math.inf, 0.0])
    empty = bai.zeros(0, 3).logsumexp(axis=0, keepdims=True)
    assert empty.shape == (1, 3) and (empty.numpy() == -math.inf).all()


# ----- scans ------------------------------------------------------------------------------------
SCAN_CASES = [((), 0), ((5,), 0), ((5,), -1), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2),
              ((0, 3), 0), ((2, 0), 1)]  # fmt: skip


def _torch_scan(function, x, dim, exclusive, reverse):
    if reverse:
        x = x.flip(dim) if x.ndim else x
    out = function(x, dim=dim)
    if exclusive:
        out = out - x if function is torch.cumsum else out / x
    return (out.flip(dim) if x.ndim else out) if reverse else out


@pytest.mark.parametrize("mode", ["plain", "reverse", "exclusive", "both"])
@pytest.mark.parametrize("case", SCAN_CASES, ids=str)
def test_cumsum(case, mode):
    shape, axis = case
    exclusive, reverse = mode in ("exclusive", "both"), mode in ("reverse", "both")
    check_op(
        lambda x: x.cumsum(axis, exclusive=exclusive, reverse=reverse),
        shape,
        torch_fn=lambda x: _torch_scan(torch.cumsum, x, axis, exclusive, reverse),
        gradgrad=True,
    )


@pytest.mark.parametrize("mode", ["plain", "reverse", "exclusive", "both"])
@pytest.mark.parametrize("case", SCAN_CASES, ids=str)
def test_cumprod(case, mode):
    shape, axis = case
    exclusive, reverse = mode in ("exclusive", "both"), mode in ("reverse", "both")
    check_op(
        lambda x: x.cumprod(dim=axis, exclusive=exclusive, reverse=reverse),
        positive(*shape, low=0.5),  # torch's side computes the exclusive scan by dividing
        torch_fn=lambda x: _torch_scan(torch.cumprod, x, axis, exclusive, reverse),
        gradgrad=True,
    )


ZERO_ROWS = {
    "one zero": [[2.0, 0.0, 3.0, -1.5, 0.5]],
    "two zeros": [[1.0, 0.0, 3.0, 0.0, 2.0]],
    "leading zeros": [[0.0, 0.0, 3.0, 0.0, 2.0]],
    "three zeros": [[1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 2.0]],
    "all zero": [[0.0, 0.0, 0.0, 0.0]],
}


def _torch_exclusive_cumprod(x):
    """The exclusive product is the inclusive product of [1, x0, x1, ...] (no division)."""
    return torch.cat([torch.ones(x.shape[0], 1, dtype=x.dtype), x[:, :-1]], 1).cumprod(1)


@pytest.mark.parametrize("mode", ["plain", "reverse", "exclusive", "both"])
@pytest.mark.parametrize("values", list(ZERO_ROWS.values()), ids=list(ZERO_ROWS))
def test_cumprod_with_zeros(values, mode):
    """First and second derivatives are exact however many zeros a row holds."""
    exclusive, reverse = mode in ("exclusive", "both"), mode in ("reverse", "both")

    def theirs(x):
        x = x.flip(1) if reverse else x
        out = _torch_exclusive_cumprod(x) if exclusive else x.cumprod(1)
        return out.flip(1) if reverse else out

    check_op(
        lambda x: x.cumprod(1, exclusive=exclusive, reverse=reverse),
        constant(values, requires_grad=True),
        torch_fn=theirs,
        gradgrad=True,
    )


def test_scan_with_no_axis_flattens_like_numpy():
    x = np.arange(6.0).reshape(2, 3) + 1
    np.testing.assert_array_equal(bai.tensor(x).cumsum().numpy(), np.cumsum(x))
    np.testing.assert_array_equal(bai.tensor(x).cumprod().numpy(), np.cumprod(x))


# ----- argmax, all, any, count_nonzero ----------------------------------------------------------
ARG_CASES = [((), None), ((), 0), ((5,), None), ((5,), -1), ((3, 4), 1), ((3, 4), -2),
             ((2, 3, 4), 2), ((2, 3, 4), None), ((3, 0), 0)]  # fmt: skip


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", ARG_CASES, ids=str)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, case, keepdims):
    shape, axis = case
    check_op(
        _ours(name, axis, keepdims),
        shape,
        torch_fn=lambda x: getattr(torch, name)(x, dim=axis, keepdim=keepdims),
    )


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_takes_the_first_tie(name):
    x = bai.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    assert getattr(x, name)(axis=1).dtype == np.int64
    expected = [1, 0] if name == "argmax" else [0, 0]
    np.testing.assert_array_equal(getattr(x, name)(axis=1).numpy(), expected)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("name", ["all", "any", "count_nonzero"])
def test_predicates_and_counts(name, case, keepdims):
    shape, axis = case
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2, size=shape) * rng.standard_normal(shape)
    ours = _ours(name, axis, keepdims)(bai.tensor(values))
    reference = getattr(np, name)(values, axis=axis, keepdims=keepdims)
    assert ours.dtype == (np.bool_ if name != "count_nonzero" else np.int64)
    np.testing.assert_array_equal(ours.numpy(), reference)
    if name != "count_nonzero":  # torch's count_nonzero has no keepdim
        theirs = getattr(torch, name)(torch.tensor(values), dim=_dims(values, axis),
                                      keepdim=keepdims)  # fmt: skip
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_predicates_have_no_gradient():
    x = bai.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
    for result in (x.all(), x.any(axis=1), x.count_nonzero(), x.argmax(), x.argmin(dim=0)):
        assert not result.requires_grad


# ----- norm -------------------------------------------------------------------------------------
NORM_ORDS = [2, 1, 3, 1.5, 0.5, math.inf, -math.inf, 0, -1]


@pytest.mark.parametrize("case", [((5,), None), ((3, 4), 1), ((2, 3, 4), (0, 2))], ids=str)
@pytest.mark.parametrize("ord", NORM_ORDS, ids=str)
def test_norm(ord, case):
    shape, axis = case
    check_op(
        lambda x: x.norm(ord, axis=axis),
        shape,
        torch_fn=lambda x: torch.linalg.vector_norm(x, ord, dim=axis),
        gradgrad=not math.isinf(ord) and ord != 0,
    )


def test_norm_spellings_and_keepdims():
    check_op(
        lambda x: bai.norm(x, p=3, dim=-1, keepdim=True),
        (3, 4),
        torch_fn=lambda x: torch.norm(x, p=3, dim=-1, keepdim=True),
        gradgrad=True,
    )
    check_op(lambda x: x.norm("fro"), (3, 4), torch_fn=lambda x: torch.norm(x, "fro"))


def test_norm_of_zero_vector_has_zero_gradient():
    x = bai.zeros(2, 3, dtype="float64", requires_grad=True)
    x.norm(axis=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


# ----- zero-size reductions ---------------------------------------------------------------------
def test_empty_reductions_follow_numpy():
    empty = bai.zeros(0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(empty.sum(axis=0).numpy(), [0.0, 0.0, 0.0])
        assert empty.sum().item() == 0.0
        assert np.isnan(empty.mean().item())
        assert empty.prod().item() == 1.0
        assert empty.all().item() and not empty.any().item()
        assert empty.count_nonzero().item() == 0
        assert empty.max(axis=1).shape == (0,)


def test_empty_mean_gradient_is_empty():
    x = bai.zeros(0, 3, dtype="float64", requires_grad=True)
    x.mean(axis=0).sum().backward()
    assert x.grad.shape == (0, 3)


# ----- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["max", "amax", "min", "argmax", "argmin"])
def test_extremum_of_empty_raises(name):
    op = {"amax": "max"}.get(name, name)  # amax and max are one op
    what = "maximum" if "max" in name else "minimum"
    with pytest.raises(bai.ShapeError, match=rf"\[{op}\] cannot take the {what} over axis 0"):
        getattr(bai.zeros(0, 3), name)(axis=0)
    with pytest.raises(bai.ShapeError, match=r"empty tensor shaped \(2, 0\)"):
        getattr(bai.zeros(2, 0), name)()


def test_norm_inf_of_empty_raises():
    with pytest.raises(bai.ShapeError, match=r"\[vector_norm\] cannot take the inf-norm"):
        bai.zeros(0).norm(math.inf)


@pytest.mark.parametrize(
    "name", ["sum", "mean", "var", "std", "amax", "prod", "logsumexp", "all", "count_nonzero"]
)
def test_axis_out_of_range(name):
    x = bai.zeros(3, 4)
    with pytest.raises(
        bai.ShapeError, match=rf"\[{name}\] axis 2 is out of range for a tensor with 2 dimensions"
    ):
        getattr(x, name)(axis=2)
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] axis -3 is out of range"):
        getattr(x, name)(dim=(0, -3))
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] repeated axis in \(1, -1\)"):
        getattr(x, name)(axis=(1, -1))


@pytest.mark.parametrize("name", ["argmax", "argmin", "cumsum", "cumprod"])
def test_single_axis_ops_reject_tuples_and_bad_axes(name):
    x = bai.zeros(3, 4)
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] .* one axis"):
        getattr(x, name)(axis=(0, 1))
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] axis -3 is out of range"):
        getattr(x, name)(-3)


def test_max_of_two_tensors_is_maximum_and_a_tensor_dim_points_to_it():
    a, b = bai.tensor([1.0, 5.0, -2.0]), bai.tensor([3.0, 0.0, -1.0])
    np.testing.assert_array_equal(a.max(b).numpy(), bai.maximum(a, b).numpy())  # torch.max(a, b)
    with pytest.raises(TypeError, match=r"\[min\] .* use minimum\(a, b\)"):
        bai.zeros(3).min(dim=bai.zeros(3))


def test_norm_rejects_orders_it_does_not_know():
    with pytest.raises(ValueError, match=r"\[norm\] unsupported p 'spectral'"):
        bai.zeros(3, 3).norm("spectral")


def test_float32_stays_float32():
    values = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    x = bai.tensor(values, requires_grad=True)
    for name in ["sum", "mean", "var", "std", "max", "prod", "logsumexp", "norm"]:
        out = getattr(x, name)(axis=1)
        assert out.dtype == np.float32, name
        (grad,) = bai.grad(out.sum(), x)
        assert grad.dtype == np.float32, name
    assert x.cumsum(0).dtype == np.float32 and x.cumprod(1).dtype == np.float32


def test_integer_inputs():
    x = bai.tensor(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32))
    assert x.sum().dtype == np.int64 and x.sum().item() == 21
    assert x.prod(axis=1).numpy().tolist() == [6, 120]
    assert x.max(axis=0).numpy().tolist() == [4, 5, 6]
    assert x.cumsum(1).numpy().tolist() == [[1, 3, 6], [4, 9, 15]]
    assert x.mean().item() == 3.5
