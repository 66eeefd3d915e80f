"""Matrix products benchmark: the float32 products of the real training workloads (a GPT block's
layers and their gradients, the LSTM language model's input, recurrent and decoder products)
and of a small recurrent cell (LSTMCell(64, 128) on a batch of 32)
through BuildingAI's ``linear`` and ``matmul``, against PyTorch eager and NumPy's ``a @ b`` (its
OpenBLAS), interleaved in one run, at each thread count, once per BLAS of BuildingAI's own
(``accel/own_blas.py``: MKL where the ``mkl`` extra is installed, and the copy of OpenBLAS).
Each product is checked against a float64 one first. The table gives medians, GFLOP/s and
ratios to PyTorch.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.products
[--threads 1,2] [--blas mkl,openblas] [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import buildingai as bai

from .common import accelerate, format_table, measure, save_run, set_threads, settle_for

# (workload, what, (m, k, n), layout): op(a) is (m, k), op(b) is (k, n). "linear": x (m, k)
# times a weight stored (n, k); "nn": a @ b; "tn": a stored (k, m), transposed (a weight
# gradient, g^T x).
CASES = [
    ("gpt", "attention input layer", (1024, 128, 384), "linear"),
    ("gpt", "MLP up-projection", (1024, 128, 512), "linear"),
    ("gpt", "MLP down-projection", (1024, 512, 128), "linear"),
    ("gpt", "tied output layer", (1024, 128, 65), "linear"),
    ("gpt", "input gradient of the up-projection", (1024, 512, 128), "nn"),
    ("gpt", "weight gradient of the up-projection", (512, 1024, 128), "tn"),
    ("lstm-lm", "input products of a layer", (700, 256, 1024), "linear"),
    ("lstm-lm", "one step's recurrent product", (20, 256, 1024), "linear"),
    ("lstm-lm", "decoder", (700, 256, 10000), "linear"),
    # products too small to cut at two threads: LSTMCell(64, 128) on a batch of 32
    ("cells", "LSTMCell input gates", (32, 64, 512), "linear"),
    ("cells", "LSTMCell hidden gates", (32, 128, 512), "linear"),
    ("cells", "LSTMCell weight gradient", (512, 32, 128), "tn"),
]
QUICK_CASES = [
    ("gpt", "tiny linear", (64, 32, 48), "linear"),
    ("gpt", "tiny tn", (48, 64, 32), "tn"),
]


def _operands(shape, layout, rng):
    """(a, b) float32 arrays as the layout stores them."""
    m, k, n = shape
    a_shape = (k, m) if layout == "tn" else (m, k)
    b_shape = (n, k) if layout == "linear" else (k, n)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = (rng.standard_normal(b_shape) / np.sqrt(k)).astype(np.float32)
    return a, b


def _functions(a, b, layout):
    """(ours, PyTorch's, NumPy's, float64 reference) products of one layout."""
    import torch

    ours_a, ours_b = bai.tensor(a), bai.tensor(b)
    torch_a, torch_b = torch.from_numpy(a), torch.from_numpy(b)
    if layout == "linear":
        b_t = b.T
        return (
            lambda: bai.nn.functional.linear(ours_a, ours_b),
            lambda: torch.nn.functional.linear(torch_a, torch_b),
            lambda: a @ b_t,
            a.astype(np.float64) @ b.T.astype(np.float64),
        )
    if layout == "tn":
        a_t, ours_a_t, torch_a_t = a.T, ours_a.T, torch_a.T
        return (
            lambda: ours_a_t @ ours_b,
            lambda: torch_a_t @ torch_b,
            lambda: a_t @ b,
            a.T.astype(np.float64) @ b.astype(np.float64),
        )
    return (
        lambda: ours_a @ ours_b,
        lambda: torch_a @ torch_b,
        lambda: a @ b,
        a.astype(np.float64) @ b.astype(np.float64),
    )


def _check(name, result, reference) -> None:
    error = np.abs(np.asarray(result) - reference).max() / np.abs(reference).max()
    if not error < 1e-5:
        raise AssertionError(f"products benchmark: {name} is off by {error:.1e} (relative)")


def bench(case, threads: int, blas: str, quick: bool) -> dict:
    workload, what, shape, layout = case
    a, b = _operands(shape, layout, np.random.default_rng(0))
    ours, theirs, lower, reference = _functions(a, b, layout)
    for label, function in (("BuildingAI", lambda: ours().numpy()), ("PyTorch", theirs),
                            ("NumPy", lower)):  # fmt: skip
        _check(f"{label}'s {what}", function(), reference)
    # the float64 check leaves NumPy's BLAS threads spinning: a call timed then, beside them,
    # would set far too few calls a repetition
    time.sleep(settle_for(quick))
    once = max(min(_seconds(ours) for _ in range(3)), 1e-6)
    timings = measure(
        {"buildingai": ours, "pytorch": theirs, "numpy": lower},
        repeats=3 if quick else 7,
        number=1 if quick else max(3, int(0.05 / once)),
        settle=settle_for(quick),
    )
    m, k, n = shape
    return {
        "case": f"{workload}: {what} ({m}x{k} by {k}x{n}, {layout})",
        "threads": threads,
        "blas": blas,
        "flops": 2 * m * k * n,
        **timings,
        "ratio": timings["buildingai"]["median"] / timings["pytorch"]["median"],
        "numpy_ratio": timings["numpy"]["median"] / timings["pytorch"]["median"],
    }


def _seconds(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _use_blas(blas: str) -> bool:
    """Make ``blas`` ("mkl" or "openblas") BuildingAI's own BLAS; False where it is missing."""
    from buildingai.accel import own_blas

    bai.accel.set_enabled("blas.mkl", blas == "mkl")
    bai.accel.enable(quiet=True)
    found = own_blas.library()
    return found is not None and found.name == blas


def table(records: list[dict]) -> str:
    def gflops(record, name):
        return f"{record['flops'] / record[name]['median'] / 1e9:.0f}"

    rows = [
        [
            r["case"], r["threads"], r["blas"], gflops(r, "buildingai"), gflops(r, "pytorch"),
            gflops(r, "numpy"), f"{r['ratio']:.2f}", f"{r['numpy_ratio']:.2f}",
        ]
        for r in records
    ]  # fmt: skip
    headers = ["case", "threads", "own BLAS", "BuildingAI GFLOP/s", "PyTorch GFLOP/s",
               "NumPy GFLOP/s", "BuildingAI / PyTorch", "NumPy / PyTorch"]  # fmt: skip
    return format_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--blas", default="mkl,openblas", help="own BLAS libraries to time")
    parser.add_argument("--quick", action="store_true", help="a tiny correctness run")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    if not accelerate():
        raise SystemExit("products benchmark: acceleration is off (unset BUILDINGAI_ACCEL)")
    records = []
    for blas in args.blas.split(","):
        if not _use_blas(blas):
            print(f"products benchmark: {blas} is not installed; left out")
            continue
        for threads in (int(t) for t in args.threads.split(",")):
            set_threads(threads)
            bai.set_num_threads(threads)
            for case in QUICK_CASES if args.quick else CASES:
                records.append(bench(case, threads, blas, args.quick))
    print(table(records))
    save_run(records, args.json)


if __name__ == "__main__":
    main()
