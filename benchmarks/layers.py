"""Layer benchmarks: forward + backward of standard layers, BuildingAI against PyTorch on the
same machine in the same run (interleaved timing, medians).

Each ``bench_*(quick)`` function returns a list of records ``{"case", "buildingai", "pytorch",
"ratio"}`` (timings are ``measure`` dicts in seconds); ``main`` runs every one present.

Run: ``python -m benchmarks.layers [--quick]``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import buildingai as bai

from .common import environment, format_table, measure

# ----- conv2d -----------------------------------------------------------------------------------


def _conv_case(torch, x_shape, out_channels, kernel, padding, quick):
    """Forward + backward of one Conv2d (with bias), ours against torch.nn.functional.conv2d."""
    from buildingai.nn import functional as F

    rng = np.random.default_rng(0)
    in_channels = x_shape[1]
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, in_channels, kernel, kernel)) * 0.1).astype(np.float32)
    b = np.zeros(out_channels, np.float32)
    ours = [bai.Tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]

    def run_ours():
        y = F.conv2d(*ours, padding=padding)
        bai.grad(y, ours, grad_outputs=bai.ones_like(y))

    def run_theirs():
        y = torch.nn.functional.conv2d(*theirs, padding=padding)
        torch.autograd.grad(y, theirs, grad_outputs=torch.ones_like(y))

    timings = measure(
        {"buildingai": run_ours, "pytorch": run_theirs},
        repeats=3 if quick else 5,
        number=1 if quick else 3,
    )
    case = f"conv2d {in_channels}->{out_channels} {kernel}x{kernel} pad {padding} on {x_shape}"
    return {
        "case": case,
        **timings,
        "ratio": timings["buildingai"]["median"] / timings["pytorch"]["median"],
    }


def bench_conv2d(quick: bool = False) -> list[dict]:
    """Conv2d(32->64, 3x3, pad 1) forward+backward on (64, 32, 28, 28), and the two convolutions
    of a small MNIST CNN (1->32 on 28x28, 32->64 on 14x14), against PyTorch."""
    import torch

    if quick:
        shapes = [((2, 4, 8, 8), 8, 3, 1)]
    else:
        shapes = [
            ((64, 32, 28, 28), 64, 3, 1),
            ((64, 1, 28, 28), 32, 3, 1),  # cnn step, first convolution
            ((64, 32, 14, 14), 64, 3, 1),  # cnn step, second convolution (after 2x2 pooling)
        ]
    return [_conv_case(torch, *shape, quick) for shape in shapes]


# ----- runner -----------------------------------------------------------------------------------


def run(quick: bool = False) -> list[dict]:
    """Every ``bench_*`` function in this module, in definition order."""
    records = []
    for name, function in list(globals().items()):
        if name.startswith("bench_") and callable(function):
            records.extend(function(quick))
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--json", action="store_true", help="also print the records as JSON")
    args = parser.parse_args(argv)
    records = run(args.quick)
    rows = [
        [
            r["case"],
            f"{r['buildingai']['median'] * 1e3:.2f}",
            f"{r['pytorch']['median'] * 1e3:.2f}",
            f"{r['ratio']:.2f}",
        ]
        for r in records
    ]
    print(format_table(["case", "buildingai ms", "pytorch ms", "ours / torch"], rows))
    if args.json:
        print(json.dumps({"environment": environment(), "records": records}, indent=2))


if __name__ == "__main__":
    main()
