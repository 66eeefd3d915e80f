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

``--layer C,O,SIZE,STRIDE,K,PADDING,BATCH`` times one convolution so. ``--resnet18`` times
instead each convolution op of ResNet-18's training step alone (batch
32, 32x32 images: the forward, the input gradient and the weight gradient of its eleven
convolution shapes), BuildingAI's op against PyTorch's ``conv2d`` and
``aten.convolution_backward`` interleaved, the best of ``--repeats`` calls, on the calling
thread's CPU clock at one thread (``--clock thread``, the default there: other work on the
machine does not count) or the wall clock; totals weigh each shape by its calls per step.
"""

from __future__ import annotations

import argparse
import time
import timeit

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


# (in channels, out channels, image size, stride, kernel, calls per step): ResNet-18 at 32x32
RESNET18_LAYERS = [
    (3, 64, 32, 1, 3, 1),
    (64, 64, 32, 1, 3, 4),
    (64, 128, 32, 2, 3, 1),
    (128, 128, 16, 1, 3, 3),
    (64, 128, 32, 2, 1, 1),
    (128, 256, 16, 2, 3, 1),
    (256, 256, 8, 1, 3, 3),
    (128, 256, 16, 2, 1, 1),
    (256, 512, 8, 2, 3, 1),
    (512, 512, 4, 1, 3, 3),
    (256, 512, 8, 2, 1, 1),
]


LAYER_HEADER = ["layer", "forward", "PT", "input grad", "PT", "weight grad", "PT"]


def _best_of(repeats: int, clock):
    def best(call):
        call()
        return min(timeit.Timer(call, timer=clock).repeat(repeats, 1)) * 1e3

    return best


def resnet18_layers(torch, repeats: int, clock) -> None:
    """Print each ResNet-18 convolution op's best time, BuildingAI's and PyTorch's, in ms."""
    best = _best_of(repeats, clock)
    rows, totals = [], np.zeros(6)
    for c, o, size, stride, k, calls in RESNET18_LAYERS:
        times = _layer_times(torch, best, c, o, size, stride, k)
        totals += np.array(times) * calls
        name = f"{c}->{o} {size}x{size} stride {stride} {k}x{k} x{calls}"
        rows.append([name, *(f"{t:.2f}" for t in times)])
    rows.append(["total x calls", *(f"{t:.1f}" for t in totals)])
    print(format_table(LAYER_HEADER, rows))


def one_layer(torch, spec: str, repeats: int, clock) -> None:
    """Print one convolution's op times like ``resnet18_layers``; ``spec``: "C,O,SIZE,STRIDE,
    K,PADDING,BATCH" (e.g. the suite CNN's second layer: 32,64,26,1,3,0,64)."""
    c, o, size, stride, k, padding, batch = (int(part) for part in spec.split(","))
    times = _layer_times(torch, _best_of(repeats, clock), c, o, size, stride, k, padding, batch)
    name = f"{c}->{o} {size}x{size} stride {stride} {k}x{k} padding {padding} batch {batch}"
    print(format_table(LAYER_HEADER, [[name, *(f"{t:.2f}" for t in times)]]))


def _layer_times(torch, best, c, o, size, stride, k, padding=None, batch=32) -> list:
    """Forward, input gradient and weight gradient of one convolution shape (padding k // 2
    unless given), each BuildingAI's op then PyTorch's: ``best(call)`` of each, in ms."""
    import buildingai.nn.functional as F
    from buildingai.ops.conv import conv2d_input_grad, conv2d_weight_grad

    p = k // 2 if padding is None else padding
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, c, size, size)).astype(np.float32)
    w = (rng.standard_normal((o, c, k, k)) * 0.1).astype(np.float32)
    out = (size + 2 * p - k) // stride + 1
    g = rng.standard_normal((batch, o, out, out)).astype(np.float32)
    bx, bw, bg = bai.tensor(x), bai.tensor(w), bai.tensor(g)
    tx, tw, tg = torch.tensor(x), torch.tensor(w), torch.tensor(g)
    attrs = {"stride": (stride, stride), "padding": (p, p), "dilation": (1, 1), "groups": 1}
    options = ([stride] * 2, [p] * 2, [1, 1], False, [0, 0], 1)
    backward = torch.ops.aten.convolution_backward
    return [
        best(lambda: F.conv2d(bx, bw, stride=stride, padding=p)),
        best(lambda: torch.nn.functional.conv2d(tx, tw, stride=stride, padding=p)),
        best(lambda: conv2d_input_grad(bg, bw, x.shape[2:], **attrs)),
        best(lambda: backward(tg, tx, tw, None, *options, [True, False, False])),
        best(lambda: conv2d_weight_grad(bx, bg, w.shape[2:], **attrs)),
        best(lambda: backward(tg, tx, tw, None, *options, [False, True, False])),
    ]


def main(argv: list[str] | None = None) -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tiny size, for a smoke test")
    parser.add_argument("--threads", type=int, default=2, help="threads for every library")
    parser.add_argument(
        "--own-blas-threads", action="store_true", help="leave OpenBLAS on its own threads"
    )
    parser.add_argument(
        "--resnet18", action="store_true", help="each ResNet-18 convolution op alone, ms"
    )
    parser.add_argument(
        "--layer", help="one convolution alone, like --resnet18: C,O,SIZE,STRIDE,K,PADDING,BATCH"
    )
    parser.add_argument("--repeats", type=int, default=5, help="calls per op (--resnet18)")
    parser.add_argument(
        "--clock", choices=("thread", "wall"), help="--resnet18's clock (thread at one thread)"
    )
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    retain_freed_memory()
    set_threads(args.threads)
    bai.set_num_threads(args.threads, gemm=not args.own_blas_threads)
    print(environment())
    print(f"compiled tier: {compiled.status()['detail']}")
    if args.resnet18 or args.layer:
        clock = args.clock or ("thread" if args.threads == 1 else "wall")
        print(f"threads: {args.threads}, clock: {clock}, ms, best of {args.repeats}")
        timer = time.thread_time if clock == "thread" else time.perf_counter
        if args.layer:
            one_layer(torch, args.layer, args.repeats, timer)
        else:
            resnet18_layers(torch, args.repeats, timer)
        return
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
