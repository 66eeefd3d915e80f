"""What the check before each collective costs: ``all_reduce`` on 2 ranks (loopback MPI) at 4 KiB,
1 MiB and 64 MiB of float32, with the check and with its exchange left out, beside raw mpi4py.

Every collective first all-reduces a 16-byte fingerprint of its call (op, shape, dtype,
arguments) so that ranks that call it differently raise instead of corrupting data. "without
the exchange" replaces that small all-reduce with nothing (the fingerprint is still computed),
in a group of its own. The candidates alternate call by call (the order flips every round), and
the check's cost is the median of the paired differences (with - without): an added cost of
microseconds stays visible beside a payload of milliseconds whose time a shared machine makes
vary by more than that. The overhead is that cost over the median time without the exchange.

    python -m benchmarks.collective_checks [--quick]

The figures go to docs/design_notes/performance.md ("Checking each collective's call").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import environment, format_table  # noqa: E402

SIZES = (4 << 10, 1 << 20, 64 << 20)


def _paired_times(candidates: dict, rounds: int) -> dict:
    """{name: [seconds of each call]}, the candidates called alternately, one call each per
    round, in an order that flips every round (both ranks run the same sequence)."""
    names = list(candidates)
    times: dict = {name: [] for name in names}
    for round_ in range(rounds + 3):
        for name in names if round_ % 2 else reversed(names):
            started = time.perf_counter()
            candidates[name]()
            if round_ >= 3:  # the first rounds warm up
                times[name].append(time.perf_counter() - started)
    return times


def worker(quick: bool) -> dict:
    """Runs on each rank under mpiexec; rank 0's result is printed as one RESULT line."""
    from mpi4py import MPI

    import buildingai as bai
    from buildingai import distributed as dist

    dist.init_process_group(backend="mpi")
    comm = MPI.COMM_WORLD
    checked = dist.new_group([0, 1])
    unchecked = dist.new_group([0, 1])
    unchecked.backend.agree = lambda pair: []  # the pair stays unchanged: it agrees
    rows = []
    for nbytes in SIZES:
        raw = np.ones(nbytes // 4, np.float32)
        ours = bai.tensor(np.ones(nbytes // 4, np.float32))
        candidates = {
            "mpi4py Iallreduce": lambda raw=raw: comm.Iallreduce(MPI.IN_PLACE, raw).Wait(),
            "with the check": lambda ours=ours: dist.all_reduce(ours, group=checked),
            "without the exchange": lambda ours=ours: dist.all_reduce(ours, group=unchecked),
        }
        rounds = max(5, int(min(3000, max(60, 4e9 / nbytes))) // (10 if quick else 1))
        times = {name: np.array(values) for name, values in _paired_times(candidates,
                                                                            rounds).items()}  # fmt: skip
        cost = float(np.median(times["with the check"] - times["without the exchange"]))
        medians = {name: float(np.median(values)) for name, values in times.items()}
        rows.append({"bytes": nbytes, "rounds": rounds, "check": cost, **medians})
    return {"rows": rows}


def run_worker(quick: bool) -> dict:
    from buildingai.distributed.launch import launch_command

    command = launch_command(2, __file__, ["--worker"] + (["--quick"] if quick else []))
    variables = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **variables))  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"the 2-rank job failed:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker(args.quick)
        from buildingai.distributed import get_rank

        if get_rank() == 0:
            print("RESULT " + json.dumps(result), flush=True)
        return
    print(json.dumps(environment(), indent=1))
    table = []
    for row in run_worker(args.quick)["rows"]:
        size = row["bytes"]
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        base = row["without the exchange"]
        table.append([label, row["rounds"], f"{row['mpi4py Iallreduce'] * 1e6:.1f}",
                      f"{base * 1e6:.1f}", f"{row['with the check'] * 1e6:.1f}",
                      f"{row['check'] * 1e6:.1f}", f"{row['check'] / base * 100:.2f}%"])  # fmt: skip
    print("\n## all_reduce, 2 ranks, float32: µs per call (medians)\n")
    print(format_table(["size", "calls", "mpi4py Iallreduce", "without the exchange",
                        "with the check", "check (paired)", "overhead"], table))  # fmt: skip


if __name__ == "__main__":
    main()
