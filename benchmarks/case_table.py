"""What the one-tensor forward+backward benchmarks share (``activations``, ``softmax_family``):
timing a case's three implementations into a record with its cross-checks, and the command
line that runs every case at each thread count and prints the ratio table."""

from __future__ import annotations

import argparse

from buildingai.backend import retain_freed_memory
from buildingai.backend.threads import get_num_threads, set_num_threads

from .common import accelerate, measure, report, set_threads

# No BLAS runs here, so the suite's 0.15 s pause (for OpenBLAS's spinning threads) is not
# needed; 10 ms lets PyTorch's OpenMP threads stop spinning, while after a pause of 30 ms or more
# BuildingAI's and NumPy's 2-thread GELU measured up to 2x slower on this machine (idle cores
# wake slowly), which would charge the pause to the thread pool.
ELEMENTWISE_SETTLE = 0.01


def timed_record(label, shape, threads, quick, runs: dict, differences: dict) -> dict:
    """Check ``differences`` (each at most 1e-4: float32 round-off), time ``runs`` (buildingai,
    pytorch, numpy: callables) interleaved, and return the record with ratios to PyTorch."""
    for key, value in differences.items():
        if not value <= 1e-4:
            raise AssertionError(f"{label} benchmark: {key} = {value:.3g}")
    timings = measure(
        runs,
        repeats=3 if quick else 7,
        number=2 if quick else 20,
        settle=0.0 if quick else ELEMENTWISE_SETTLE,
    )
    torch_median = timings["pytorch"]["median"]
    return {
        "case": f"{label} fwd+bwd {shape}",
        "threads": threads,
        **timings,
        "ratio": timings["buildingai"]["median"] / torch_median,
        "numpy_ratio": timings["numpy"]["median"] / torch_median,
        **differences,
    }


def main(description: str, cases, bench) -> None:
    """``bench(name, shape, threads, quick)`` for every case at each ``--threads`` count, with
    BuildingAI's element-wise threads, BLAS and PyTorch set alike; prints the ratio table."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--shape", default="32,64,512")
    parser.add_argument("--only", default=",".join(cases))
    parser.add_argument("--quick", action="store_true", help="a tiny correctness run")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    shape = (4, 8, 16) if args.quick else tuple(int(n) for n in args.shape.split(","))
    retain_freed_memory()  # as the suite and Trainer run: for all three implementations alike
    thread_counts = [int(n) for n in args.threads.split(",")]
    records = over_threads(
        thread_counts,
        args.only.split(","),
        lambda name, threads: bench(name, shape, threads, args.quick),
    )
    report(records, args.json)


def over_threads(thread_counts, names, bench_one) -> list[dict]:
    """``bench_one(name, threads)`` for each name at each thread count, with BuildingAI's
    element-wise threads, BLAS and PyTorch set alike (BuildingAI's restored afterwards)."""
    records = []
    previous = get_num_threads()
    try:
        for threads in thread_counts:
            set_threads(threads)
            set_num_threads(threads)
            for name in names:
                records.append(bench_one(name, threads))
                print(f"  {name} at {threads} thread(s): {records[-1]['ratio']:.2f}x", flush=True)
    finally:
        set_num_threads(previous)
    return records
