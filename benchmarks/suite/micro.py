"""Micro benchmarks: per-op dispatch overhead (a small element-wise op and a small matmul,
without and with gradient recording, and forward + backward through a chain) from
``benchmarks.dispatch``, and conv2d and attention forward + backward alone from
``benchmarks.layers`` (those two have no NumPy column)."""

from __future__ import annotations

from .. import dispatch, layers
from .harness import thread_limit, use_default_arrangement


def run(quick: bool, threads: list[int | None]) -> list[dict]:
    records = []
    for count in threads:
        with thread_limit(count):
            use_default_arrangement()  # BuildingAI at the limit's count, as PyTorch and BLAS
            for record in dispatch.run(quick=quick, threads=count):
                records.append(
                    {
                        "workload": "micro",
                        "case": f"dispatch: {record['op']}, {record['mode']}",
                        "threads": count,
                        "unit": "µs/op",
                        # dispatch reports microseconds per op; the suite keeps seconds
                        "times": {
                            name: {k: v * 1e-6 for k, v in record[name].items()}
                            for name in ("buildingai", "pytorch", "numpy")
                        },
                        "peak_bytes": {},
                        "notes": [],
                    }
                )
            for record in layers.bench_conv2d(quick) + layers.bench_attention(quick):
                records.append(
                    {
                        "workload": "micro",
                        "case": record["case"] + ", forward+backward",
                        "threads": count,
                        "unit": "ms",
                        "times": {name: record[name] for name in ("buildingai", "pytorch")},
                        "peak_bytes": {},
                        "notes": [],
                    }
                )
    return records
