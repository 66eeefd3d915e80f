"""Strong and weak scaling of a data-parallel GPT training step at 1, 2 and 4 ranks.

The model is the suite's nanoGPT (``suite/gpt_model.py`` on BuildingAI: 4 layers, width 128,
context 64, vocabulary 65, AdamW, clipping at 1.0). Each step: forward and backward on this
rank's share of the batch, the gradients all-reduced in buckets during backward
(``all_reduce_gradients``), clipping by the global norm, the AdamW update.

* strong scaling: the global batch stays 16 sequences, split over the ranks (16, 8, 4 each);
* weak scaling: every rank keeps 8 sequences, so the global batch grows with the ranks.

Each configuration is its own ``buildingai launch -n N`` job with one BLAS thread per rank; a
step's time is the slowest rank's wall time (a barrier before each step), the median of the
measured steps. Tokens/s counts the global batch.

    python benchmarks/distributed_scaling.py [--steps 6] [--ranks 1 2 4]
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

GLOBAL_BATCH, PER_RANK_BATCH, WARMUP = 16, 8, 2


def rank_job(per_rank: int, steps: int) -> None:
    """Under the launcher: time ``steps`` data-parallel steps; rank 0 prints one RESULT line."""
    import buildingai as bai
    from benchmarks.suite import gpt
    from benchmarks.suite.from_source import load
    from buildingai import distributed as dist

    dist.init_process_group(timeout=120)
    rank, size = dist.get_rank(), dist.get_world_size()
    source = load(gpt.SOURCE, "buildingai")
    config = gpt.SIZES["full"]
    bai.manual_seed(0)
    model = source.GPT(gpt._model_config(source, config))
    dist.broadcast_parameters(model, src=0)
    optimizer = model.configure_optimizers(gpt.WEIGHT_DECAY, gpt.LR, gpt.BETAS, "cpu")
    reducer = dist.all_reduce_gradients(model)
    tokens, targets = gpt.batch(dict(config, batch=per_rank), seed=1 + rank)
    tokens, targets = bai.tensor(tokens), bai.tensor(targets)
    times = []
    for step in range(WARMUP + steps):
        dist.barrier()
        started = time.perf_counter()
        optimizer.zero_grad()
        _, loss = model(tokens, targets)
        loss.backward()
        reducer.wait()
        bai.nn.utils.clip_grad_norm_(model.parameters(), gpt.GRAD_CLIP)
        optimizer.step()
        elapsed = bai.tensor(np.array([time.perf_counter() - started]))
        dist.all_reduce(elapsed, op="max")  # the step ends when its slowest rank ends
        if step >= WARMUP:
            times.append(float(elapsed.numpy()[0]))
    if rank == 0:
        result = {"ranks": size, "per_rank": per_rank, "step_s": float(np.median(times)),
                  "tokens": per_rank * size * config["block_size"]}  # fmt: skip
        print("RESULT " + json.dumps(result), flush=True)


def launch(ranks: int, per_rank: int, steps: int) -> dict:
    environment = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "buildingai", "launch", "-n", str(ranks), "--timeout",
               "600", __file__, "--job", str(per_rank), "--steps", str(steps)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=700)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise SystemExit(f"{ranks} ranks failed (exit {done.returncode}):\n{done.stderr[-2000:]}")


def table(kind: str, results: list[dict]) -> str:
    base = results[0]
    rows = [f"| {kind} | ranks | sequences per rank | global batch | ms per step | tokens/s | "
            "speed-up | efficiency |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for result in results:
        rate = result["tokens"] / result["step_s"]
        base_rate = base["tokens"] / base["step_s"]
        speedup = rate / base_rate
        rows.append(f"| | {result['ranks']} | {result['per_rank']} | "
                    f"{result['per_rank'] * result['ranks']} | {1000 * result['step_s']:.0f} | "
                    f"{rate:,.0f} | {speedup:.2f}x | {speedup / result['ranks']:.0%} |")  # fmt: skip
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=6, help="measured steps per configuration")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    if args.job is not None:
        rank_job(args.job, args.steps)
        return
    print(f"{os.cpu_count()} CPUs; one BLAS thread per rank; {args.steps} measured steps")
    strong = [launch(n, GLOBAL_BATCH // n, args.steps) for n in args.ranks]
    print(table("strong (global batch 16)", strong))
    weak = [launch(n, PER_RANK_BATCH, args.steps) for n in args.ranks]
    print(table("weak (8 per rank)", weak))


if __name__ == "__main__":
    main()
