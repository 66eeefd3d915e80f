"""Every kernel registered by ``accel/activations.py``, ``accel/elementwise.py`` and
``accel/reductions.py`` against its record's reference forward: the same call through the
kernel (acceleration on) and through ``forward``, on edge values and random data, in float32
(where the compiled twins run) and float64; and the public functions with acceleration on and
off, values and gradients."""

from __future__ import annotations

import types

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import registry
from buildingai.accel.kernels import scalar_loops

N = 70_001  # odd, above the sizes where work is cut across threads and twins take it

EDGES = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 3.0, -3.0, 20.0, -20.0, 100.0, -100.0]
EDGES += [1e30, -1e30, np.inf, -np.inf, np.nan]


def _x(rng, dtype, scale=4.0):
    body = rng.standard_normal(N - len(EDGES)) * scale
    return np.concatenate([EDGES, body]).astype(dtype)


def _grad(rng, dtype):
    return rng.standard_normal(N).astype(dtype)


def _unit(rng, dtype):
    return rng.random(N).astype(dtype)


def _x_again(rng, dtype):
    """``_x`` from a fixed seed: the same values on every call, for a maker that follows."""
    return _x(np.random.default_rng(7), dtype)


def _gelu_tanh_gate(rng, dtype):
    """The gate the tanh GELU's forward keeps, sigmoid(2u), for ``_x_again``'s values: its
    gradient kernel reads x's 1 - gate from x itself, so the two must belong together."""
    x = _x_again(rng, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)
        return (1 / (1 + np.exp(-2 * u))).astype(dtype)


# kernel name -> (input makers, attrs); each call is one the kernel applies to
UNARY = ([_x], {})
GRAD_X = ([_grad, _x], {})
CASES = {
    "relu.fused": UNARY,
    "relu_grad.fused": ([_grad, lambda r, d: np.maximum(_x(r, d), 0)], {}),
    "leaky_relu.fused": ([_x], {"negative_slope": 0.01}),
    "leaky_relu_grad.fused": ([_grad, _x], {"negative_slope": 0.2}),
    "sigmoid.fused": UNARY,
    "sigmoid_grad.fused": ([_grad, _unit], {}),
    "tanh.fused": UNARY,
    "tanh_grad.fused": ([_grad, lambda r, d: (2 * _unit(r, d) - 1).astype(d)], {}),
    "silu.fused": UNARY,
    "silu_grad.fused": ([_grad, _x, _unit], {}),
    "softplus.float32": ([_x], {"beta": 2.0, "threshold": 10.0}),
    "softplus_grad.float32": ([_grad, _x], {"beta": 2.0, "threshold": 10.0}),
    "gelu.tanh_fused": ([_x], {"approximate": "tanh"}),
    "gelu.float32_polynomial": ([_x], {"approximate": "none"}),
    "gelu_grad.tanh_fused": ([_grad, _x_again, _gelu_tanh_gate], {"approximate": "tanh"}),
    "gelu_grad.float32_polynomial": ([_grad, _x, _unit], {"approximate": "none"}),
    "elu.fused": ([_x], {"alpha": 0.5}),
    "selu.fused": UNARY,
    "celu.fused": ([_x], {"alpha": 2.0}),
    "exponential_linear_grad.fused": (
        [_grad, _x],
        {"alpha": 1.5, "scale": 1.05, "input_scale": 0.5},
    ),
    "hardsigmoid.fused": UNARY,
    "hardswish.fused": UNARY,
    "hardswish_grad.fused": GRAD_X,
    "hardsigmoid_grad.fused": GRAD_X,
    "mish.fused": UNARY,
    "mish_grad.fused": GRAD_X,
    "softsign.fused": UNARY,
    "softsign_grad.fused": GRAD_X,
    "logsigmoid.fused": UNARY,
    "logsigmoid_grad.fused": GRAD_X,
    "threshold.fused": ([_x], {"threshold": 0.5, "value": -2.0}),
    "clamp.scalar_rows": ([_x, lambda r, d: 0.25, lambda r, d: None], {}),
    "where.select": ([lambda r, d: r.random(N) < 0.5, _x, _grad], {}),
    "sum.rows_and_columns": (  # leading axes: above COLUMN_SUM_MIN elements
        [lambda r, d: r.standard_normal((128, 30, 37)).astype(d)],
        {"axes": (0, 1), "keepdims": False},
    ),
    "mean.rows_and_columns": (  # trailing axes: rows of 49, a global average pool's
        [lambda r, d: r.standard_normal((64, 30, 7, 7)).astype(d)],
        {"axes": (2, 3), "keepdims": True},
    ),
    "cumsum.rows": (
        [lambda r, d: r.standard_normal((40, 700)).astype(d)],
        {"axis": 1, "exclusive": False, "reverse": True},
    ),
    "sum_to.rows_and_columns": (
        [lambda r, d: r.standard_normal((64, 30, 37)).astype(d)],
        {"shape": (64, 1, 1)},
    ),
}
FLOAT32_ONLY = {"softplus.float32", "softplus_grad.float32"}
FLOAT32_ONLY |= {"gelu.float32_polynomial", "gelu_grad.float32_polynomial"}
FLOAT32_ONLY |= {"where.select", "cumsum.rows"}
NEEDS_NUMBA = {
    "where.select",
    "cumsum.rows",
}  # a compiled select or nothing: the record's where is the fallback
MODULES = {"buildingai.accel.activations", "buildingai.accel.elementwise"}
MODULES |= {"buildingai.accel.reductions"}


def _ours():
    return [
        entry
        for entry in registry.registered()
        if entry.run is not None and entry.run.__module__ in MODULES
    ]


def test_every_kernel_of_these_modules_has_a_case():
    names = {entry.name for entry in _ours()}
    assert names == set(CASES), f"missing: {names - set(CASES)}, stale: {set(CASES) - names}"


def _tolerance(name, dtype) -> float:
    if name.startswith(("sum", "mean")):  # float32 sums of many values, in another order
        return 1e-12 if dtype == np.float64 else 5e-5
    if dtype == np.float64:
        return 1e-13
    # the polynomial Phi against erf; log1p(exp) against logaddexp; twins' exp and FMAs
    return 2e-6 if "gelu" in name or "mish" in name else 1e-6


def _compare(name, reference, got, tolerance):
    reference, got = np.asarray(reference), np.asarray(got)
    assert reference.shape == got.shape and reference.dtype == got.dtype, name
    assert np.array_equal(np.isnan(reference), np.isnan(got)), f"{name}: NaN positions differ"
    infinite = np.isinf(reference)
    assert np.array_equal(reference[infinite], got[infinite]), f"{name}: infinities differ"
    finite = np.isfinite(reference)
    scale = np.maximum(1.0, np.abs(reference[finite]))
    error = (np.abs(got[finite] - reference[finite]) / scale).max(initial=0.0)
    assert error <= tolerance, f"{name}: relative error {error:.3g} > {tolerance:.3g}"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow and inf - inf at the edges
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_the_reference_forward(name, dtype, accel_on):
    if dtype == np.float64 and name in FLOAT32_ONLY:
        pytest.skip("a float32 kernel")
    if name in NEEDS_NUMBA:
        pytest.importorskip("numba")
    entry = registry.kernel(name)
    makers, attrs = CASES[name]
    rng = np.random.default_rng(0)
    inputs = [make(rng, np.dtype(dtype)) for make in makers]
    assert entry.active and entry.applies(np, *inputs, **attrs), f"{name} does not apply"
    reference_ctx, kernel_ctx = types.SimpleNamespace(), types.SimpleNamespace()
    with np.errstate(all="ignore"):
        expected = entry.op.forward(reference_ctx, np, *inputs, **attrs)
        got = entry.run(kernel_ctx, np, *inputs, **attrs)
    assert got is not NotImplemented
    tolerance = _tolerance(name, dtype)
    _compare(name, expected, got, tolerance)
    for kept in ("cache", "sigmoid", "input_shape"):  # what backward reads from the context
        if hasattr(reference_ctx, kept):
            assert hasattr(kernel_ctx, kept), f"{name} does not keep ctx.{kept}"
            if kept != "input_shape":
                _compare(
                    f"{name} ctx.{kept}",
                    getattr(reference_ctx, kept),
                    getattr(kernel_ctx, kept),
                    tolerance,
                )


def test_clamp_takes_the_rows_for_large_arrays_only():
    fits = registry.kernel("clamp.scalar_rows").applies
    large = np.ones(2 * scalar_loops.ROW, np.float32)
    assert fits(np, large, 0.5, None) and fits(np, large, None, 2)
    assert not fits(np, large[:-1], 0.5, None)
    assert not fits(np, large, 0.5, 1.0) and not fits(np, large, large, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (3,), (4, 256), (7, 5, 3)])
def test_the_mean_of_every_element_gives_numpy_s_bits(dtype, shape, accel_on):
    entry = registry.kernel("mean.rows_and_columns")
    x = np.asarray(np.random.default_rng(2).standard_normal(shape) * 100, dtype)
    for keepdims in (False, True):
        assert entry.applies(np, x, axes=None, keepdims=keepdims)
        got = np.asarray(entry.run(types.SimpleNamespace(), np, x, axes=None, keepdims=keepdims))
        expected = np.asarray(np.mean(x, keepdims=keepdims))
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert np.array_equal(got, expected)
    tensor = bai.tensor(x, requires_grad=True)
    tensor.mean().backward()
    np.testing.assert_array_equal(tensor.grad.numpy(), np.full(shape, 1 / max(x.size, 1), dtype))
    assert not entry.applies(np, x[:0] if x.ndim else x.reshape(1)[:0], axes=None, keepdims=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "axes"), [((8, 16, 32), (2,)), ((8, 16, 32), (0, 2)),
                                             ((5, 7), (0,)), ((3,), (0,))], ids=str)  # fmt: skip
def test_a_small_mean_over_axes_gives_numpy_s_bits(dtype, shape, axes, accel_on):
    """Below ``reductions.LEAST_ELEMENTS`` the mean kernel takes np.mean's own two steps (a sum
    and one divide): NumPy's bits, shape and dtype."""
    from buildingai.accel import reductions

    entry = registry.kernel("mean.rows_and_columns")
    x = np.asarray(np.random.default_rng(3).standard_normal(shape) * 100, dtype)
    assert x.size < reductions.LEAST_ELEMENTS
    for keepdims in (False, True):
        got = np.asarray(entry.run(types.SimpleNamespace(), np, x, axes=axes, keepdims=keepdims))
        expected = np.asarray(np.mean(x, axis=axes, keepdims=keepdims))
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("number_side", [1, 2])
def test_where_selects_an_array_against_a_number_exactly(number_side, accel_on):
    pytest.importorskip("numba")
    entry = registry.kernel("where.select")
    rng = np.random.default_rng(1)
    condition, x = rng.random(N) < 0.3, _x(rng, np.float32)
    operands = [condition, x, x]
    operands[number_side] = -0.1  # not a float32 value: rounded to one, as where rounds it
    assert entry.applies(np, *operands)
    got = entry.run(None, np, *operands)
    expected = np.where(*operands)
    assert got.dtype == expected.dtype == np.float32
    assert np.array_equal(got, expected, equal_nan=True)


def test_where_hands_other_operands_to_the_record():
    fits = registry.kernel("where.select").applies
    condition, x = np.ones(N, bool), np.ones(N, np.float32)
    assert fits(np, condition, x, x) and fits(np, condition, 0.0, x)
    assert not fits(np, condition, x.astype(np.float64), x)  # the result would be float64
    assert not fits(np, condition, x[:4], x[:4])  # broadcast
    assert not fits(np, condition.astype(np.float32), x, x)
    assert not fits(np, np.ones((N, 2), bool)[:, 0], x, 0.0)  # strided
    assert not fits(np, condition, 0.0, 1.0)
    assert not fits(np, condition[:8], x[:8], x[:8])  # small: NumPy's where


FUNCTIONS = {
    "relu": lambda t: t.relu(),
    "leaky_relu": lambda t: bai.nn.functional.leaky_relu(t, 0.1),
    "sigmoid": lambda t: t.sigmoid(),
    "silu": lambda t: t.silu(),
    "softplus": lambda t: t.softplus(beta=1.5, threshold=8.0),
    "gelu": lambda t: t.gelu(),
    "gelu_tanh": lambda t: t.gelu(approximate="tanh"),
    "elu": lambda t: bai.elu(t, alpha=0.7),
    "selu": lambda t: bai.selu(t),
    "celu": lambda t: bai.celu(t, alpha=1.5),
    "hardtanh": lambda t: bai.hardtanh(t, -1.0, 2.0),
    "hardsigmoid": lambda t: bai.hardsigmoid(t),
    "hardswish": lambda t: bai.hardswish(t),
    "threshold": lambda t: bai.threshold(t, 0.5, -1.0),
    "mish": lambda t: bai.mish(t),
    "softsign": lambda t: bai.softsign(t),
    "logsigmoid": lambda t: bai.logsigmoid(t),
    "prelu": lambda t: bai.prelu(t, bai.tensor(np.float32([0.25, 0.5, 0.1]))),
    "clamp_low": lambda t: t.clamp(-0.5, None),
    "clamp_high": lambda t: t.clamp(None, 0.5),
    "sum_leading": lambda t: t.sum(0),
    "sum_trailing": lambda t: t.sum((1, 2)),
    "mean_trailing": lambda t: t.mean((1, 2)),
    "mean_leading": lambda t: t.mean(0),
    "where": lambda t: bai.where(t > 0.5, t * 2, t),
    "where_number": lambda t: bai.where(t > 0.5, t, 0.0),
}


def _run(function, x, g, flag):
    with bai.accel.enabled(flag):
        t = bai.tensor(x, requires_grad=True)
        out = function(t)
        out.backward(bai.tensor(g[: out.numel()].reshape(out.shape)))
        return out.numpy(), t.grad.numpy()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_accelerated_function_values_and_gradients_match_the_reference(name):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((600, 3, 40)) * 3).astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    reference = _run(FUNCTIONS[name], x, g, False)
    accelerated = _run(FUNCTIONS[name], x, g, True)
    tolerance = 5e-5 if name.startswith(("sum", "mean")) else 2e-6  # sums of 1,800 values
    for what, a, b in zip(("value", "gradient"), reference, accelerated):
        np.testing.assert_allclose(b, a, rtol=tolerance, atol=tolerance, err_msg=f"{name} {what}")


@pytest.mark.parametrize("name", ["elu", "hardswish", "mish", "softsign", "gelu", "silu"])
def test_second_derivatives_match_with_acceleration_on_and_off(name):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(4000) * 3).astype(np.float64)

    def second(flag):
        with bai.accel.enabled(flag):
            t = bai.tensor(x, requires_grad=True)
            (first,) = bai.grad(FUNCTIONS[name](t).sum(), [t], create_graph=True)
            (again,) = bai.grad((first * first).sum(), [t])
            return first.numpy(), again.numpy()

    for a, b in zip(second(False), second(True)):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
