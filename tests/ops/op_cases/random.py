"""Cases of the random draws and value checks: effectful records whose shape may follow a
symbolic size (``dropout_mask(x.shape, p)``, ``randn(*x.shape)`` in a traced training step).

A draw has no PyTorch reference value (another generator) and no finite-difference gradient (it
draws again on every call): ``tests/graph/test_random_draws.py`` checks that static graphs draw
what eager execution draws, and the distribution tests check the samples' statistics."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .base import NOT_DIFFERENTIABLE, Draw, Sample, case

DRAWS_CHECKED = ("tests/graph/test_random_draws.py",)
NOT_EXPORTED = "a random draw: exported graphs are inference graphs, which draw nothing"
ZERO_GRADIENT = "a random draw whose gradient is zero by definition, as PyTorch's"


def _bernoulli_mask(d: Draw) -> Sample:
    rest = d.sizes(0, 2)
    p = d.variant((0.0, 0.25, 0.5))
    sample = d.capture("bernoulli_mask", lambda: bai.dropout_mask((d.n, *rest), p))
    sample.symbol_sizes = {"n": d.n}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"], *rest))
    return sample


case(
    "bernoulli_mask",
    _bernoulli_mask,
    dtypes=(np.bool_,),
    no_grad=NOT_DIFFERENTIABLE,
    onnx=NOT_EXPORTED,
    covered_by=("tests/graph/test_compile.py",),
)


def _shaped_draw(name: str, function):
    def make(d: Draw) -> Sample:
        rest = d.sizes(0, 2)
        sample = d.capture(name, lambda: function((d.n, *rest), d.dtype))
        sample.symbol_sizes = {"n": d.n}
        sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"], *rest))
        return sample

    return make


for _name, _function, _dtypes in (
    ("rand", lambda shape, dtype: bai.rand(shape, dtype=dtype), (np.float32, np.float64)),
    ("randn", lambda shape, dtype: bai.randn(shape, dtype=dtype), (np.float32, np.float64)),
    ("randint", lambda shape, dtype: bai.randint(-3, 9, shape, dtype=dtype), (np.int64, np.int32)),
):
    case(_name, _shaped_draw(_name, _function), dtypes=_dtypes, no_grad=NOT_DIFFERENTIABLE,
         onnx=NOT_EXPORTED, covered_by=DRAWS_CHECKED)  # fmt: skip


def _randperm(d: Draw) -> Sample:
    sample = d.capture("randperm", lambda: bai.randperm(d.n, dtype=d.dtype))
    sample.symbol_sizes = {"n": d.n}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"],))
    return sample


case("randperm", _randperm, dtypes=(np.int64,), no_grad=NOT_DIFFERENTIABLE, onnx=NOT_EXPORTED,
     covered_by=DRAWS_CHECKED)  # fmt: skip


def _bernoulli(d: Draw) -> Sample:
    p = d.floats("n", *d.sizes(0, 2), low=0.0, high=1.0)
    return d.capture("bernoulli", lambda: bai.bernoulli(p))


case("bernoulli", _bernoulli, dtypes=(np.float32, np.float64), no_grad=ZERO_GRADIENT,
     onnx=NOT_EXPORTED, covered_by=DRAWS_CHECKED)  # fmt: skip


def _normal(d: Draw) -> Sample:
    rest = d.sizes(0, 2)
    mean = d.floats("n", *rest)
    std = d.floats(*rest, low=0.5, high=2.0)
    return d.capture("normal", lambda: bai.normal(mean, std))


case("normal", _normal, dtypes=(np.float32, np.float64), no_grad=ZERO_GRADIENT,
     onnx=NOT_EXPORTED, covered_by=DRAWS_CHECKED)  # fmt: skip


def _multinomial(d: Draw) -> Sample:
    weights = d.floats("n", 5, low=0.1, high=2.0)  # one row of weights: test_sampling.py
    replacement = d.variant((False, True))
    return d.capture("multinomial", lambda: bai.multinomial(weights, 3, replacement))


case("multinomial", _multinomial, dtypes=(np.float32, np.float64), no_grad=NOT_DIFFERENTIABLE,
     onnx=NOT_EXPORTED, covered_by=DRAWS_CHECKED)  # fmt: skip


def _standard_gamma(d: Draw) -> Sample:
    alpha = d.floats("n", *d.sizes(0, 2), low=0.5, high=4.0)
    return d.capture("standard_gamma", lambda: bai.prob.Gamma(alpha, 1.0).rsample())


case(
    "standard_gamma",
    _standard_gamma,
    dtypes=(np.float32, np.float64),
    no_grad="a random draw: its implicit gradient (standard_gamma_slope) is checked against "
    "PyTorch's _standard_gamma_grad in tests/prob/test_distributions.py",
    onnx=NOT_EXPORTED,
    covered_by=("tests/prob/test_distributions.py",),
)


def _standard_gamma_slope(d: Draw) -> Sample:
    dims = ("n", *d.sizes(0, 2))
    alpha = d.floats(*dims, low=0.5, high=4.0)
    z = d.floats(*dims, low=0.1, high=6.0)
    return d.call("standard_gamma_slope", alpha, z)


def _torch_standard_gamma_slope(alpha, z):
    from .base import torch

    return torch._standard_gamma_grad(alpha, z)


case(
    "standard_gamma_slope",
    _standard_gamma_slope,
    dtypes=(np.float32, np.float64),
    torch=_torch_standard_gamma_slope,
    no_grad=NOT_DIFFERENTIABLE,
    onnx="serves the gradient of standard_gamma: training graphs are not exported",
    rtol=2e-3,  # PyTorch's approximation is good to ~1e-4; the record's series to ~1e-9
    atol=1e-6,
    covered_by=("tests/prob/test_distributions.py",),
)


def _require(d: Draw) -> Sample:
    values = d.floats("n", *d.sizes(0, 2), low=0.5, high=2.0)
    return d.capture("require", lambda: bai.prob.Normal(0.0, values).sample())


case(
    "require",
    _require,
    dtypes=(np.float32, np.float64),
    no_grad=NOT_DIFFERENTIABLE,
    onnx="a check of values (distribution parameters, cov weights), not part of inference",
    covered_by=DRAWS_CHECKED,
)
