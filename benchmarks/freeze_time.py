"""Freeze time: how long ``freeze`` takes on the graph tests' TransformerClassifier (token
embedding, a 2-layer encoder with a padding mask, mean pool) with symbolic batch and sequence
sizes.

The code under test is the ``buildingai`` package found under ``--root`` (default: this
repository), so the same script measures two checkouts of the code, one run each:

    python benchmarks/freeze_time.py                        # this tree
    python benchmarks/freeze_time.py --root /path/to/other  # another checkout
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from .common import accelerate

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose code is measured")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print one JSON record")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    sys.path.insert(0, str(Path(args.root).resolve()))

    from buildingai.graph import TensorSpec, freeze
    from tests.graph.models import TransformerClassifier

    model = TransformerClassifier().eval()
    signature = [TensorSpec((None, "seq"), "int64"), TensorSpec((None, "seq"), "bool")]
    static = freeze(model, signature)  # warm-up: imports, caches, first-call costs
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        freeze(model, signature)
        times.append(time.perf_counter() - start)
    record = {
        "benchmark": "freeze_time",
        "root": str(Path(args.root).resolve()),
        "nodes": len(static.graph.nodes),
        "repeats": args.repeats,
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
        "max_ms": max(times) * 1e3,
    }
    if args.json:
        print(json.dumps(record))
        return
    print(
        f"freeze(TransformerClassifier) from {record['root']}: {record['nodes']} nodes, "
        f"median {record['median_ms']:.2f} ms (min {record['min_ms']:.2f}, max "
        f"{record['max_ms']:.2f}) over {args.repeats} runs"
    )


if __name__ == "__main__":
    main()
