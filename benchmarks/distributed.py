"""Distributed training, measured on this machine with loopback MPI, beside PyTorch (gloo):

1. all-reduce bandwidth against message size, 2 ranks: raw mpi4py (blocking ``Allreduce`` and
   ``Iallreduce`` + ``Wait``, the lower bound), ``buildingai.distributed.all_reduce`` (nonblocking,
   polled against the timeout) and ``torch.distributed.all_reduce`` on gloo;
2. data-parallel MNIST-sized MLP throughput (images/s) at 1, 2 and 4 ranks, the issue's loop (one
   all_reduce per parameter) in BuildingAI and in PyTorch, in the same job;
3. the bucketed helper (all-reduce started from gradient hooks during backward) against the plain
   loop after backward, per training step, 2 ranks.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/distributed.py [--quick]

Each part runs as its own ``mpiexec`` job; rank 0 of each prints one RESULT line, collected here.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import accelerate, environment, format_table, measure  # noqa: E402


# ----- workers: run under mpiexec ------------------------------------------------------------------
def _torch_group(rank: int, size: int, port: int):
    import torch.distributed as torch_dist

    torch_dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                  world_size=size)  # fmt: skip
    return torch_dist


def worker_allreduce(quick: bool, port: int) -> dict:
    import torch
    from mpi4py import MPI

    import buildingai as bai
    from buildingai import distributed as dist

    dist.init_process_group(backend="mpi")
    comm, rank, size = MPI.COMM_WORLD, dist.get_rank(), dist.get_world_size()
    torch_dist = _torch_group(rank, size, port)
    sizes = [2**12, 2**16, 2**20, 2**22, 2**24] + ([] if quick else [2**26])
    rows = []
    for nbytes in sizes:
        raw = np.ones(nbytes // 4, np.float32)
        ours = bai.tensor(np.ones(nbytes // 4, np.float32))
        theirs = torch.ones(nbytes // 4, dtype=torch.float32)

        candidates = {
            "mpi4py Allreduce": lambda raw=raw: comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM),
            "mpi4py Iallreduce": lambda raw=raw: comm.Iallreduce(MPI.IN_PLACE, raw).Wait(),
            "buildingai": lambda ours=ours: dist.all_reduce(ours),
            "pytorch gloo": lambda theirs=theirs: torch_dist.all_reduce(theirs),
        }
        number = int(min(200, max(3, 2e8 / nbytes / (10 if quick else 1))))
        times = measure(candidates, repeats=3 if quick else 7, number=number, settle=0.0)
        rows.append({"bytes": nbytes, **{name: t["median"] for name, t in times.items()}})
    torch_dist.destroy_process_group()
    return {"rows": rows}


def _mlp_step_pair(batch: int, width: int, depth: int):
    """A BuildingAI MLP and an identical PyTorch one, each with one training step function."""
    import torch

    import buildingai as bai
    from buildingai import nn, optim
    from buildingai.distributed import all_reduce
    from buildingai.nn import functional as F

    rng = np.random.default_rng(0)
    images = rng.random((batch, 784), dtype=np.float32)
    labels = rng.integers(0, 10, batch)
    sizes = [784] + [width] * depth + [10]

    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    x, y = bai.tensor(images), bai.tensor(labels)

    torch_layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        torch_layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    torch_model = torch.nn.Sequential(*torch_layers[:-1])
    torch_optimizer = torch.optim.SGD(torch_model.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(images), torch.from_numpy(labels)

    def ours(reduce=True) -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if reduce:
            for param in model.parameters():
                all_reduce(param.grad, op="mean")
        optimizer.step()

    return model, optimizer, x, y, ours, torch_model, torch_optimizer, tx, ty


def worker_mnist(quick: bool, port: int) -> dict:
    import torch

    from buildingai import distributed as dist

    dist.init_process_group(backend="mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch_dist = _torch_group(rank, size, port)
    global_batch = 128
    *_, ours, torch_model, torch_optimizer, tx, ty = _mlp_step_pair(global_batch // size, 256, 1)

    def theirs() -> None:
        torch_optimizer.zero_grad()
        torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
        for param in torch_model.parameters():
            torch_dist.all_reduce(param.grad)
            param.grad /= size
        torch_optimizer.step()

    times = measure({"buildingai": ours, "pytorch": theirs}, repeats=3 if quick else 5,
                    number=10 if quick else 40, settle=0.0)  # fmt: skip
    torch_dist.destroy_process_group()
    return {name: global_batch / t["median"] for name, t in times.items()}


def worker_bucketed(quick: bool, port: int) -> dict:
    from buildingai import distributed as dist
    from buildingai.nn import functional as F

    dist.init_process_group(backend="mpi")
    *_, plain, _, _, _, _ = _mlp_step_pair(64, 1024, 4)
    model, optimizer, x, y, *_ = _mlp_step_pair(64, 1024, 4)  # a twin that reduces from hooks
    reducer = dist.all_reduce_gradients(model, bucket_bytes=2 << 20)

    def bucketed() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        reducer.wait()
        optimizer.step()

    times = measure({"backward only (no communication)": lambda: plain(reduce=False),
                     "plain loop after backward": plain, "bucketed, from hooks": bucketed},
                    repeats=3 if quick else 5, number=5 if quick else 20, settle=0.0)  # fmt: skip
    parameters = sum(p.data.size for p in model.parameters())
    return {"parameters": parameters, **{name: t["median"] for name, t in times.items()}}


WORKERS = {"allreduce": worker_allreduce, "mnist": worker_mnist, "bucketed": worker_bucketed}


# ----- driver ----------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_part(part: str, processes: int, quick: bool, threads: int | None) -> dict:
    from buildingai.distributed.launch import launch_command

    script_args = ["--worker", part, "--port", str(_free_port())] + (["--quick"] if quick else [])
    command = launch_command(processes, __file__, script_args)
    threads = str(threads or max(1, (os.cpu_count() or 1) // processes))
    environment_ = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=threads,
                        OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment_)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{part} on {processes} ranks failed:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    parser.add_argument("--parts", default="allreduce,mnist,bucketed", help="which to run")
    parser.add_argument(
        "--threads-per-rank",
        type=int,
        default=None,
        help="BLAS threads of each rank (default: the cores divided among them)",
    )
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    if args.worker:
        result = WORKERS[args.worker](args.quick, args.port)
        from buildingai.distributed import get_rank

        if get_rank() == 0:
            print("RESULT " + json.dumps(result), flush=True)
        return

    started = time.perf_counter()
    print(json.dumps(environment(), indent=1))
    parts, threads = args.parts.split(","), args.threads_per_rank
    if "allreduce" in parts:
        allreduce_table(args.quick, threads)
    if "mnist" in parts:
        mnist_table(args.quick, threads)
    if "bucketed" in parts:
        bucketed_table(args.quick, threads)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


def allreduce_table(quick: bool, threads: int | None) -> None:
    print("\n## all-reduce, 2 ranks (loopback): GB/s = bytes / time (median)\n")
    rows = []
    for row in run_part("allreduce", 2, quick, threads)["rows"]:
        rate = {
            name: row["bytes"] / seconds / 1e9 for name, seconds in row.items() if name != "bytes"
        }
        rows.append([f"{row['bytes'] / 1024:.0f} KiB", *(f"{rate[n]:.2f}" for n in rate),
                     f"{row['buildingai'] / row['mpi4py Allreduce']:.2f}",
                     f"{row['buildingai'] / row['mpi4py Iallreduce']:.2f}",
                     f"{row['buildingai'] / row['pytorch gloo']:.2f}"])  # fmt: skip
    names = [n for n in row if n != "bytes"]
    print(format_table(["size", *names, "time / Allreduce", "time / Iallreduce", "time / gloo"],
                       rows))  # fmt: skip


def mnist_table(quick: bool, threads: int | None) -> None:
    print("\n## data-parallel MLP 784-256-10, global batch 128: images/s\n")
    rows = []
    for processes in (1, 2, 4):
        result = run_part("mnist", processes, quick, threads)
        rows.append([processes, f"{result['buildingai']:.0f}", f"{result['pytorch']:.0f}",
                     f"{result['buildingai'] / result['pytorch']:.2f}"])  # fmt: skip
    print(format_table(["ranks", "buildingai", "pytorch (gloo)", "buildingai / pytorch"], rows))


def bucketed_table(quick: bool, threads: int | None) -> None:
    print("\n## bucketed helper against the plain loop, 2 ranks, MLP 784-4x1024-10, batch 64\n")
    result = run_part("bucketed", 2, quick, threads)
    base = result["plain loop after backward"]
    rows = [[name, f"{seconds * 1e3:.1f}", f"{seconds / base:.2f}"]
            for name, seconds in result.items() if name != "parameters"]  # fmt: skip
    print(f"{result['parameters']} parameters\n")
    print(format_table(["step", "ms / step", "time / plain loop"], rows))


if __name__ == "__main__":
    main()
