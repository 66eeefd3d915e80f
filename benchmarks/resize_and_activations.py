"""Resize and activation benchmark: forward + backward of ``interpolate`` in each mode (up and
down, a batch of small feature maps and one large image) and of the activations elu, selu,
hardswish, hardsigmoid, mish, logsigmoid and softsign on float32. BuildingAI and PyTorch eager
run in the same process, interleaved; nearest 2x upsampling also has a hand-written NumPy
version (a broadcast copy forward, four strided views added backward). The table gives medians
and ratios to PyTorch.
Outputs and gradients are cross-checked before timing.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.resize_and_activations
[--threads 1,2] [--quick]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import buildingai as bai
from buildingai.backend import retain_freed_memory
from buildingai.nn import functional as BF

from .case_table import over_threads
from .common import accelerate, measure, report

FEATURE_MAPS, IMAGE, ELEMENTS = (8, 32, 32, 32), (1, 3, 512, 512), (32, 64, 512)

RESIZE = {
    # name: (input shape, interpolate keyword arguments)
    "nearest 2x maps": (FEATURE_MAPS, {"scale_factor": 2, "mode": "nearest"}),
    "bilinear 2x maps": (FEATURE_MAPS, {"scale_factor": 2, "mode": "bilinear"}),
    "bicubic 2x maps": (FEATURE_MAPS, {"scale_factor": 2, "mode": "bicubic"}),
    "bilinear 0.5x maps": (FEATURE_MAPS, {"scale_factor": 0.5, "mode": "bilinear"}),
    "area to 7x7 maps": (FEATURE_MAPS, {"size": (7, 7), "mode": "area"}),
    "nearest 2x image": (IMAGE, {"scale_factor": 2, "mode": "nearest"}),
    "bilinear 2x image": (IMAGE, {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    "bicubic 2x image": (IMAGE, {"scale_factor": 2, "mode": "bicubic"}),
    "bilinear 0.5x image": (IMAGE, {"scale_factor": 0.5, "mode": "bilinear"}),
}

ACTIVATIONS = ("elu", "selu", "hardswish", "hardsigmoid", "mish", "logsigmoid", "softsign", "prelu")


def _nearest_2x_lower_bound(x, g):
    """Nearest 2x upsampling and its gradient in plain NumPy: one broadcast copy forward, the
    four strided quarter views of g added backward."""
    n, c, h, w = x.shape
    out = np.empty((n, c, h, 2, w, 2), x.dtype)
    out[...] = x[:, :, :, None, :, None]
    quarters = g.reshape(n, c, h, 2, w, 2)
    dx = np.add(quarters[:, :, :, 0, :, 0], quarters[:, :, :, 0, :, 1])
    dx += quarters[:, :, :, 1, :, 0]
    dx += quarters[:, :, :, 1, :, 1]
    return out.reshape(n, c, 2 * h, 2 * w), dx


def _case(name: str, quick: bool):
    """(shape, our function, PyTorch's function, NumPy version or None) of one case."""
    if name in RESIZE:
        shape, kwargs = RESIZE[name]
        if quick:
            shape = shape[:2] + (6, 6)
        lower = _nearest_2x_lower_bound if name.startswith("nearest 2x") else None
        return (
            shape,
            lambda t: BF.interpolate(t, **kwargs),
            lambda F, t: F.interpolate(t, **kwargs),
            lower,
        )
    shape = (4, 8, 16) if quick else ELEMENTS
    if name == "prelu":  # one slope per channel (dimension 1)
        import torch

        slopes = np.linspace(0.05, 0.5, shape[1], dtype=np.float32)
        ours, theirs = bai.tensor(slopes), torch.tensor(slopes)
        return shape, lambda t: BF.prelu(t, ours), lambda F, t: F.prelu(t, theirs), None
    return shape, getattr(BF, name), lambda F, t: getattr(F, name)(t), None


def bench(name: str, threads: int, quick: bool) -> dict:
    """One case at one thread count: timings, ratios and the largest differences."""
    import torch
    import torch.nn.functional as F

    shape, ours_fn, theirs_fn, lower = _case(name, quick)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    y_theirs = theirs_fn(F, torch.tensor(x)).numpy()
    g = rng.standard_normal(y_theirs.shape).astype(np.float32)
    xb, gb = bai.tensor(x, requires_grad=True), bai.tensor(g)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g)

    def run_ours():
        xb.grad = None
        ours_fn(xb).backward(gb)

    def run_theirs():
        xt.grad = None
        theirs_fn(F, xt).backward(gt)

    candidates = {"buildingai": run_ours, "pytorch": run_theirs}
    run_ours(), run_theirs()
    check = {
        "forward_vs_torch": float(np.abs(ours_fn(bai.tensor(x)).numpy() - y_theirs).max()),
        "grad_vs_torch": float(np.abs(xb.grad.numpy() - xt.grad.numpy()).max()),
    }
    if lower is not None:
        candidates["numpy"] = lambda: lower(x, g)
        out, dx = lower(x, g)
        check["numpy_grad_vs_torch"] = float(np.abs(dx - xt.grad.numpy()).max())
    for key, value in check.items():  # float32 sums of a few terms: a few ulps of the values
        if not value <= 1e-3:
            raise AssertionError(f"resize/activation benchmark: {name} {key} = {value:.3g}")
    timings = measure(
        candidates,
        repeats=3 if quick else 7,
        number=2 if quick else 10,
        settle=0.0 if quick else 0.15,
    )
    torch_median = timings["pytorch"]["median"]
    record = {
        "case": f"{name} fwd+bwd {shape}",
        "threads": threads,
        **timings,
        "ratio": timings["buildingai"]["median"] / torch_median,
        **check,
    }
    if lower is not None:
        record["numpy_ratio"] = timings["numpy"]["median"] / torch_median
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--only", default=",".join((*RESIZE, *ACTIVATIONS)))
    parser.add_argument("--quick", action="store_true", help="a tiny correctness run")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    retain_freed_memory()  # as the suite and Trainer run
    thread_counts = [int(n) for n in args.threads.split(",")]

    def bench_one(name, threads):
        return bench(name, threads, args.quick)

    report(over_threads(thread_counts, args.only.split(","), bench_one), args.json)


if __name__ == "__main__":
    main()
