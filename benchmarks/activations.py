"""Activation benchmark: forward + backward of relu, leaky_relu, gelu (exact and tanh), silu,
sigmoid, tanh and softplus on one large float32 tensor. BuildingAI, PyTorch eager and a
hand-written NumPy lower bound (the fewest array passes we know, no dispatch or autograd, cut
across the same threads) run in the same process, interleaved; the table gives medians and
ratios to PyTorch, at 1 and 2 threads (BuildingAI's element-wise threads, BLAS and PyTorch
intra-op threads all set alike). Outputs and gradients are cross-checked before timing. The
process keeps freed memory for reuse (``retain_freed_memory``), as the suite and Trainer do.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.activations
[--threads 1,2] [--shape 32,64,512] [--quick]``.
"""

from __future__ import annotations

import math

import numpy as np

import buildingai as bai
from buildingai.accel.kernels import gelu32
from buildingai.backend.threads import parallel_for
from buildingai.nn import functional as BF

from . import case_table
from .case_table import timed_record

# ----- the NumPy lower bound: forward then backward, in place where possible ---------------------


def _split(kernel, *arrays):
    """Run ``kernel(*parts)`` over row ranges of flat float32 arrays, on the current threads."""
    flat = [a.reshape(-1) for a in arrays]

    def run(start, stop):
        kernel(*(a[start:stop] for a in flat))

    parallel_for(run, len(flat[0]), flat[0].size * len(flat))


def _np_relu(x, g, out, dx):
    np.maximum(x, 0, out=out)
    np.multiply(g, x > 0, out=dx)


def _np_leaky(x, g, out, dx):
    np.greater(x, 0, out=dx, casting="unsafe")  # the slopes
    dx *= 0.99
    dx += 0.01
    np.multiply(x, dx, out=out)
    dx *= g


def _np_sigmoid(x, g, out, dx):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.divide(1, out, out=out)
    np.subtract(1, out, out=dx)
    dx *= out
    dx *= g


def _np_silu_lower(x, g, out, dx):
    np.negative(x, out=dx)
    np.exp(dx, out=dx)
    dx += 1
    np.divide(1, dx, out=dx)  # s
    np.multiply(x, dx, out=out)  # silu
    # silu' g = s (1 + x (1 - s)) g, with out's x s reused: s + x s - x s^2 = s + out (1 - s)
    scratch = np.subtract(1, dx)
    scratch *= out
    dx += scratch
    dx *= g


def _np_tanh(x, g, out, dx):
    np.tanh(x, out=out)
    np.multiply(out, out, out=dx)
    np.subtract(1, dx, out=dx)
    dx *= g


def _np_softplus(x, g, out, dx):
    np.exp(x, out=out)
    np.log1p(out, out=out)
    np.negative(x, out=dx)  # sigmoid(x) for the gradient
    np.exp(dx, out=dx)
    dx += 1
    np.divide(g, dx, out=dx)


def _np_gelu(x, g, out, dx):
    cdf = np.empty_like(x)
    gelu32.gelu_forward(np, x, out, cdf)
    gelu32.gelu_backward(np, g, x, cdf, dx)


def _np_gelu_tanh(x, g, out, dx):
    k = math.sqrt(2 / math.pi)
    np.multiply(x, x, out=dx)
    dx *= -2 * k * 0.044715
    dx -= 2 * k
    dx *= x
    np.exp(dx, out=dx)
    dx += 1
    np.divide(1, dx, out=dx)  # gate = sigmoid(2u)
    np.multiply(x, dx, out=out)
    deriv = np.multiply(x, x)
    deriv *= 6 * k * 0.044715
    deriv += 2 * k
    deriv *= x
    deriv *= 1 - dx
    deriv += 1
    deriv *= dx
    np.multiply(deriv, g, out=dx)


CASES = {
    # name: (BuildingAI function, PyTorch function, NumPy lower bound)
    "relu": (lambda t: t.relu(), lambda F, t: F.relu(t), _np_relu),
    "leaky_relu": (
        lambda t: BF.leaky_relu(t, 0.01),
        lambda F, t: F.leaky_relu(t, 0.01),
        _np_leaky,
    ),
    "gelu": (lambda t: BF.gelu(t), lambda F, t: F.gelu(t), _np_gelu),
    "gelu_tanh": (
        lambda t: BF.gelu(t, approximate="tanh"),
        lambda F, t: F.gelu(t, approximate="tanh"),
        _np_gelu_tanh,
    ),
    "silu": (lambda t: BF.silu(t), lambda F, t: F.silu(t), _np_silu_lower),
    "sigmoid": (lambda t: t.sigmoid(), lambda F, t: F.sigmoid(t), _np_sigmoid),
    "tanh": (lambda t: t.tanh(), lambda F, t: F.tanh(t), _np_tanh),
    "softplus": (lambda t: BF.softplus(t), lambda F, t: F.softplus(t), _np_softplus),
}


def bench(name: str, shape: tuple, threads: int, quick: bool) -> dict:
    """One activation at one thread count: timings, ratios, and the largest differences."""
    import torch
    import torch.nn.functional as F

    ours_fn, theirs_fn, lower = CASES[name]
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    xb, gb = bai.tensor(x, requires_grad=True), bai.tensor(g)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g)
    out, dx = np.empty_like(x), np.empty_like(x)

    def run_ours():
        xb.grad = None
        ours_fn(xb).backward(gb)

    def run_theirs():
        xt.grad = None
        theirs_fn(F, xt).backward(gt)

    def run_numpy():
        _split(lower, x, g, out, dx)

    run_ours(), run_theirs(), run_numpy()
    y_theirs = theirs_fn(F, torch.tensor(x)).numpy()
    differences = {  # a float32 element-wise op: differences are a few ulps
        "forward_vs_torch": float(np.abs(ours_fn(bai.tensor(x)).numpy() - y_theirs).max()),
        "grad_vs_torch": float(np.abs(xb.grad.numpy() - xt.grad.numpy()).max()),
        "numpy_forward_vs_torch": float(np.abs(out - y_theirs).max()),
        "numpy_grad_vs_torch": float(np.abs(dx - xt.grad.numpy()).max()),
    }
    runs = {"buildingai": run_ours, "pytorch": run_theirs, "numpy": run_numpy}
    return timed_record(name, shape, threads, quick, runs, differences)


def main() -> None:
    case_table.main(__doc__.splitlines()[0], CASES, bench)


if __name__ == "__main__":
    main()
