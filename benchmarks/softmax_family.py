"""Softmax-family benchmark: forward + backward of softmax and log_softmax over the last axis,
layer_norm over the last axis (with weight and bias, whose gradients are computed too) and mean
cross-entropy against class indices (the tensor's rows as logits), on one large float32 tensor.
BuildingAI, PyTorch eager and a hand-written NumPy lower bound (row-wise passes split across the
same threads) run in the same process, interleaved, as in ``benchmarks/activations.py``; the
table gives medians and ratios to PyTorch. Results are cross-checked before timing.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.softmax_family
[--threads 1,2] [--shape 32,64,512] [--quick]``.
"""

from __future__ import annotations

import numpy as np

import buildingai as bai
from buildingai.backend.threads import parallel_for
from buildingai.nn import functional as BF

from . import case_table
from .case_table import timed_record


def _split_rows(kernel, *arrays):
    """``kernel(*parts)`` over row ranges of (rows, n) arrays, on the current threads."""

    def run(start, stop):
        kernel(*(a[start:stop] for a in arrays))

    parallel_for(run, len(arrays[0]), arrays[0].size * len(arrays))


# ----- the NumPy lower bounds: (rows, n) float32 arrays, in place where possible -----------------


def _np_softmax(x, g, out, dx):
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    np.multiply(g, out, out=dx)
    projection = dx.sum(axis=1, keepdims=True)
    np.subtract(g, projection, out=dx)
    dx *= out


def _np_log_softmax(x, g, out, dx):
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=dx)
    out -= np.log(dx.sum(axis=1, keepdims=True))
    np.exp(out, out=dx)
    dx *= g.sum(axis=1, keepdims=True)
    np.subtract(g, dx, out=dx)


def _np_layer_norm(x, g, weight, bias, out, dx, xhat, eps=1e-5):
    """out = xhat * weight + bias; dx; xhat kept for the weight gradient (summed outside)."""
    mean = x.mean(axis=1, keepdims=True)
    np.subtract(x, mean, out=xhat)
    np.multiply(xhat, xhat, out=out)
    rstd = 1 / np.sqrt(out.mean(axis=1, keepdims=True) + eps)
    xhat *= rstd
    np.multiply(xhat, weight, out=out)
    out += bias
    np.multiply(g, weight, out=dx)  # the gradient of xhat
    total = dx.mean(axis=1, keepdims=True)
    projection = np.multiply(dx, xhat).mean(axis=1, keepdims=True)
    dx -= total
    dx -= xhat * projection
    dx *= rstd


def _np_cross_entropy(x, target, dx):
    """Returns the mean loss; dx = (softmax(x) - onehot(target)) / rows."""
    rows = len(x)
    np.subtract(x, x.max(axis=1, keepdims=True), out=dx)
    picked = dx[np.arange(rows), target]
    np.exp(dx, out=dx)
    total = dx.sum(axis=1, keepdims=True)
    loss = float((np.log(total[:, 0]) - picked).mean())
    dx /= total
    dx[np.arange(rows), target] -= 1
    dx /= rows
    return loss


# ----- the cases -------------------------------------------------------------------------------


def _row_case(ours_fn, theirs_fn, lower):
    """An op on x alone (softmax, log_softmax): the three runs and the checks."""

    def setup(torch, x, g):
        xb, gb = bai.tensor(x, requires_grad=True), bai.tensor(g)
        xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g)
        rows = (x.reshape(-1, x.shape[-1]), g.reshape(-1, x.shape[-1]))
        out, dx = np.empty_like(rows[0]), np.empty_like(rows[0])

        def run_ours():
            xb.grad = None
            ours_fn(xb).backward(gb)

        def run_theirs():
            xt.grad = None
            theirs_fn(torch, xt).backward(gt)

        def run_numpy():
            _split_rows(lower, *rows, out, dx)

        def check():
            y = theirs_fn(torch, torch.tensor(x)).numpy().reshape(out.shape)
            grad = xt.grad.numpy().reshape(out.shape)
            return {
                "forward_vs_torch": _diff(ours_fn(bai.tensor(x)).numpy().reshape(out.shape), y),
                "grad_vs_torch": _diff(xb.grad.numpy().reshape(out.shape), grad),
                "numpy_forward_vs_torch": _diff(out, y),
                "numpy_grad_vs_torch": _diff(dx, grad),
            }

        return run_ours, run_theirs, run_numpy, check

    return setup


def _layer_norm(torch, x, g):
    features = x.shape[-1]
    rng = np.random.default_rng(1)
    weight = (1 + 0.1 * rng.standard_normal(features)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(features)).astype(np.float32)
    xb, gb = bai.tensor(x, requires_grad=True), bai.tensor(g)
    wb, bb = bai.tensor(weight, requires_grad=True), bai.tensor(bias, requires_grad=True)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g)
    wt, bt = torch.tensor(weight, requires_grad=True), torch.tensor(bias, requires_grad=True)
    rows = (x.reshape(-1, features), g.reshape(-1, features))
    out, dx, xhat = (np.empty_like(rows[0]) for _ in range(3))
    grads = {}

    def run_ours():
        xb.grad = wb.grad = bb.grad = None
        BF.layer_norm(xb, (features,), wb, bb).backward(gb)

    def run_theirs():
        xt.grad = wt.grad = bt.grad = None
        torch.nn.functional.layer_norm(xt, (features,), wt, bt).backward(gt)

    def run_numpy():
        _split_rows(
            lambda *a: _np_layer_norm(a[0], a[1], weight, bias, *a[2:]), *rows, out, dx, xhat
        )
        grads["weight"] = np.einsum("ij,ij->j", rows[1], xhat)
        grads["bias"] = rows[1].sum(axis=0)

    def check():
        y = torch.nn.functional.layer_norm(torch.tensor(x), (features,), wt, bt).detach().numpy()
        ours = BF.layer_norm(bai.tensor(x), (features,), wb, bb).numpy()
        return {
            "forward_vs_torch": _diff(ours, y),
            "grad_vs_torch": max(
                _diff(xb.grad.numpy(), xt.grad.numpy()),
                _diff(wb.grad.numpy(), wt.grad.numpy()) / len(rows[0]),
            ),
            "numpy_forward_vs_torch": _diff(out, y.reshape(out.shape)),
            "numpy_grad_vs_torch": max(
                _diff(dx, xt.grad.numpy().reshape(dx.shape)),
                _diff(grads["weight"], wt.grad.numpy()) / len(rows[0]),
            ),
        }

    return run_ours, run_theirs, run_numpy, check


def _cross_entropy(torch, x, g):
    logits = x.reshape(-1, x.shape[-1])
    target = np.random.default_rng(2).integers(0, logits.shape[1], len(logits))
    xb, tb = bai.tensor(logits, requires_grad=True), bai.tensor(target)
    xt, tt = torch.tensor(logits, requires_grad=True), torch.tensor(target)
    dx = np.empty_like(logits)
    losses = {}

    def run_ours():
        xb.grad = None
        BF.cross_entropy(xb, tb).backward()

    def run_theirs():
        xt.grad = None
        torch.nn.functional.cross_entropy(xt, tt).backward()

    def run_numpy():
        losses["numpy"] = _np_cross_entropy(logits, target, dx)

    def check():
        theirs = float(torch.nn.functional.cross_entropy(torch.tensor(logits), tt))
        return {
            "forward_vs_torch": abs(
                float(BF.cross_entropy(bai.tensor(logits), tb).item()) - theirs
            ),
            "grad_vs_torch": _diff(xb.grad.numpy(), xt.grad.numpy()),
            "numpy_forward_vs_torch": abs(losses["numpy"] - theirs),
            "numpy_grad_vs_torch": _diff(dx, xt.grad.numpy()),
        }

    return run_ours, run_theirs, run_numpy, check


def _diff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


CASES = {
    "softmax": _row_case(
        lambda t: BF.softmax(t, -1), lambda torch, t: torch.softmax(t, -1), _np_softmax
    ),
    "log_softmax": _row_case(
        lambda t: BF.log_softmax(t, -1), lambda torch, t: torch.log_softmax(t, -1), _np_log_softmax
    ),
    "layer_norm": _layer_norm,
    "cross_entropy": _cross_entropy,
}


def bench(name: str, shape: tuple, threads: int, quick: bool) -> dict:
    """One case at one thread count: timings, ratios, and the largest differences."""
    import torch

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    run_ours, run_theirs, run_numpy, check = CASES[name](torch, x, g)
    run_ours(), run_theirs(), run_numpy()
    runs = {"buildingai": run_ours, "pytorch": run_theirs, "numpy": run_numpy}
    return timed_record(name, shape, threads, quick, runs, check())


def main() -> None:
    case_table.main(__doc__.splitlines()[0], CASES, bench)


if __name__ == "__main__":
    main()
