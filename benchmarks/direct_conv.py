"""The direct convolution twins against im2col + GEMM: forward + backward of one Conv2d (input,
weight and bias gradients), BuildingAI with the compiled tier on (direct twins where
``ops/conv._direct`` sends the call) and off (im2col and BLAS), PyTorch, and a NumPy lower
bound (im2col through ``sliding_window_view`` and one ``tensordot`` per product), interleaved
in one run.

BuildingAI runs in one pool at ``--threads`` (``set_num_threads(threads, gemm=True)``): the
im2col column's GEMMs run as single-threaded BLAS calls on BuildingAI's threads, so no BLAS
thread spins and the twins get ``--threads`` numba threads. With ``--own-blas-threads`` a twin
called within 0.15 s of a GEMM stays on one thread (``threads.blas_spinning``), and the direct
column then mostly measures im2col.

Run: ``python -m benchmarks.direct_conv [--threads 2] [--quick]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import buildingai as bai
from buildingai.accel.kernels import compiled
from buildingai.backend.memory import retain_freed_memory

from .common import accelerate, environment, format_table, measure, set_threads, settle_for
from .layers import conv_steps

SHAPES = [  # (x shape, out channels, padding)
    ((64, 32, 26, 26), 64, 0),  # the cnn step's second convolution
    ((64, 1, 28, 28), 32, 0),  # the cnn step's first convolution
    ((64, 32, 28, 28), 64, 1),
    ((64, 32, 14, 14), 64, 1),
]
QUICK_SHAPES = [((4, 8, 12, 12), 16, 1)]


def _numpy_step(x, w, padding):
    """Forward + backward of a 3x3 convolution in NumPy: im2col and three tensordots."""
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = sliding_window_view(padded, w.shape[2:], axis=(2, 3))  # (N, C, Ho, Wo, kh, kw)
    y = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    grad = np.ones_like(y)
    grad_w = np.tensordot(grad, windows, axes=([0, 2, 3], [0, 2, 3]))
    grad_cols = np.tensordot(grad, w, axes=([1], [0]))  # (N, Ho, Wo, C, kh, kw)
    grad_x = np.zeros_like(padded)
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            grad_x[:, :, i : i + y.shape[2], j : j + y.shape[3]] += grad_cols[..., i, j].transpose(
                0, 3, 1, 2
            )
    return y, grad_w, grad.sum(axis=(0, 2, 3))


def case(torch, x_shape, out_channels, padding, quick):
    run_ours, run_theirs, x, w = conv_steps(torch, x_shape, out_channels, 3, padding)

    def run_im2col():
        previous = compiled.set_enabled(False)
        try:
            run_ours()
        finally:
            compiled.set_enabled(previous)

    timings = measure(
        {
            "direct": run_ours,
            "im2col": run_im2col,
            "pytorch": run_theirs,
            "numpy": lambda: _numpy_step(x, w, padding),
        },
        repeats=3 if quick else 9,
        number=1 if quick else 3,
        settle=settle_for(quick),
    )
    name = f"conv2d {x_shape[1]}->{out_channels} 3x3 pad {padding} on {x_shape}"
    return {"case": name, **timings}


def main(argv: list[str] | None = None) -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tiny size, for a smoke test")
    parser.add_argument("--threads", type=int, default=2, help="threads for every library")
    parser.add_argument(
        "--own-blas-threads", action="store_true", help="leave OpenBLAS on its own threads"
    )
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    retain_freed_memory()
    set_threads(args.threads)
    bai.set_num_threads(args.threads, gemm=not args.own_blas_threads)
    print(environment())
    print(f"compiled tier: {compiled.status()['detail']}")
    rows = []
    for x_shape, out_channels, padding in QUICK_SHAPES if args.quick else SHAPES:
        record = case(torch, x_shape, out_channels, padding, args.quick)
        ms = {
            name: record[name]["median"] * 1e3 for name in ("direct", "im2col", "pytorch", "numpy")
        }
        rows.append(
            [record["case"], *(f"{ms[name]:.2f}" for name in ms)]
            + [f"{ms['direct'] / ms['pytorch']:.2f}", f"{ms['direct'] / ms['numpy']:.2f}"]
        )
    header = [
        "case",
        "direct ms",
        "im2col ms",
        "PyTorch ms",
        "NumPy ms",
        "direct / PT",
        "direct / NP",
    ]
    print(f"threads: {args.threads}")
    print(format_table(header, rows))


if __name__ == "__main__":
    main()
