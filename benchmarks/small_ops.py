"""Small calls: where a compiled twin starts to pay, and small ops against PyTorch.

1. Each compiled twin of the element-wise and row kernels (``accel/kernels/activations*.py``,
   ``gelu32.py``, ``select.py``, ``accel/rows.py``) against its NumPy kernel, through
   ``compiled.run`` as the ops call it, on 16 to 4096 elements; with the smallest call the twin
   takes now (``compiled.min_work``). A twin marked ``ANY_SIZE`` should win at every size; one
   left at ``MIN_WORK`` loses below it (one NumPy pass, where NumPy's call is the cheaper one).
2. Small ops forward + backward (``(f(x) * g).sum().backward()``; the losses backward from
   themselves) against PyTorch: BuildingAI as it runs, BuildingAI with the twins switched off
   (``compiled.set_enabled(False)``: the NumPy kernels at every size) and PyTorch eager.

Everything runs on one thread (small calls never split across threads), timed in this thread's
CPU time (``time.thread_time``), interleaved; medians of 7 repetitions.

Run: ``python -m benchmarks.small_ops [--only twins,ops] [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import time

import numpy as np

import buildingai as bai
from buildingai.accel.kernels import compiled

from .common import accelerate, format_table, measure, save_run, set_threads

SIZES = (16, 256, 1024, 4096)  # elements of each array of an element-wise call
ROW_SHAPES = ((1, 16), (16, 16), (8, 128), (32, 128))  # the row kernels' (rows, n)
MODULES = {  # where the kernels of the two families are written
    f"buildingai.accel.{module}"
    for module in (
        "kernels.activations",
        "kernels.activations_fused",
        "kernels.gelu32",
        "kernels.select",
        "rows",
    )
}
NOT_ROWS_SHAPED = {"rows.column_dot_and_sum"}  # its output is (2, n): not a row kernel's call
# keyword parameters of the kernels, at ordinary values
PARAMS = {
    "slope": 0.01,
    "beta": 1.0,
    "threshold": 20.0,
    "alpha": 1.0,
    "scale": 1.0,
    "input_scale": 1.0,
    "one_sixth": 1 / 6,
    "value": 0.5,
    "eps": 1e-5,
    "ignore_index": -100,
}
PER_ROW = {"peak", "log_total", "rstd", "coefficient"}  # (rows, 1) arrays of the row kernels
PER_SAMPLE = {"losses", "coefficients"}  # (rows,) arrays of cross-entropy's kernels


# ----- 1. twins against their NumPy kernels -----------------------------------------------------


def _twins() -> list:
    """(twin name, NumPy kernel) of the families above, in registration order."""
    return [
        (name, kernel)
        for kernel, (name, _) in compiled.REGISTRY.items()
        if kernel.__module__ in MODULES and name not in NOT_ROWS_SHAPED
    ]


def _call(kernel, shape: tuple, rng):
    """(the kernel bound to its keyword parameters, its arrays) for one call of ``shape``:
    rows kernels (rows, n) with per-row arrays (rows, 1), element-wise ones flat."""
    arrays, keywords = [], {}
    for parameter in list(inspect.signature(kernel).parameters.values())[1:]:  # after xp
        name = parameter.name
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            if name in PARAMS:
                keywords[name] = PARAMS[name]
            elif name == "shift":
                keywords[name] = np.float32(3.0)
            else:  # layer norm's weight and bias
                keywords[name] = np.ones(shape[-1], np.float32)
        elif name == "condition":
            arrays.append(rng.random(shape) < 0.5)
        elif name in ("target", "index"):  # a class of each row: (rows,) or (rows, 1)
            classes = (shape[0],) if name == "target" else (shape[0], 1)
            arrays.append(rng.integers(0, shape[-1], classes))
        elif name == "total":  # cross-entropy's sum of the losses
            arrays.append(np.zeros(1, np.float32))
        elif name == "skipped":  # and its counts of rows ignored and rows out of range
            arrays.append(np.zeros(2, np.int64))
        elif name in PER_SAMPLE:
            arrays.append(rng.standard_normal(shape[0]).astype(np.float32))
        else:
            rows = (shape[0], 1) if name in PER_ROW else shape
            values = rng.standard_normal(rows).astype(np.float32)
            arrays.append(-np.abs(values) if name == "out" else values)  # log-probabilities
    return (functools.partial(kernel, **keywords) if keywords else kernel), arrays


@contextlib.contextmanager
def _taking_any_size(kernel):
    """The twin of ``kernel`` takes every call inside the block, on one thread as well."""
    previous = kernel.compiled_min_work, kernel.compiled_threads_only
    kernel.compiled_min_work, kernel.compiled_threads_only = compiled.ANY_SIZE, False
    try:
        yield
    finally:
        kernel.compiled_min_work, kernel.compiled_threads_only = previous


def bench_twins(quick: bool) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for name, kernel in _twins():
        row_kernel = name.startswith("rows.")
        for shape in ROW_SHAPES if row_kernel else [(size,) for size in SIZES]:
            bound, arrays = _call(kernel, shape, rng)

            def numpy_kernel(bound=bound, arrays=arrays):
                bound(np, *arrays)

            def twin(bound=bound, arrays=arrays):
                compiled.run(bound, arrays)

            with np.errstate(all="ignore"), _taking_any_size(kernel):
                if not compiled.run(bound, arrays):
                    raise RuntimeError(f"small_ops: the twin {name} did not run")
                timings = measure(
                    {"numpy": numpy_kernel, "twin": twin},
                    repeats=2 if quick else 7,
                    number=5 if quick else 200,
                    settle=0.0,
                    clock=time.thread_time,
                )
            records.append(
                {
                    "kernel": name,
                    "elements": int(np.prod(shape)),
                    "shape": shape,
                    "min_work": kernel.compiled_min_work,
                    **timings,
                    "ratio": timings["twin"]["median"] / timings["numpy"]["median"],
                }
            )
    return records


def twins_table(records: list[dict]) -> str:
    rows = [
        [
            r["kernel"],
            "x".join(map(str, r["shape"])),
            f"{r['numpy']['median'] * 1e6:.2f}",
            f"{r['twin']['median'] * 1e6:.2f}",
            f"{r['ratio']:.2f}",
            "any size" if r["min_work"] == compiled.ANY_SIZE else f"{r['min_work']} elements",
        ]
        for r in records
    ]
    headers = ["twin", "call", "NumPy kernel µs", "twin µs", "twin / NumPy", "twin takes from"]
    return format_table(headers, rows)


# ----- 2. small ops against PyTorch ---------------------------------------------------------------

OPS = {
    "softmax": [(1, 10), (128, 10), (16, 128)],
    "log_softmax": [(1, 10), (128, 10), (16, 128)],
    "layer_norm": [(1, 128), (16, 128)],
    "cross_entropy": [(1, 10), (128, 10)],
    "gelu": [(1, 512), (4, 256)],
    "silu": [(4, 256)],
    "sigmoid": [(4, 256)],
    "elu": [(4, 256)],
    "hardswish": [(4, 256)],
    "softplus": [(4, 256)],
}


def _step(library, functional, name: str, shape: tuple, rng):
    """(one forward + backward of ``name`` on a float32 input of ``shape`` in ``library``, the
    input, whose ``grad`` each call adds to)."""
    x = library.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    if name == "cross_entropy":
        target = library.tensor(np.arange(shape[0]) % shape[1])
        return (lambda: functional.cross_entropy(x, target).backward()), x
    g = library.tensor(rng.standard_normal(shape).astype(np.float32))
    if name == "layer_norm":
        width = shape[-1]
        weight = library.tensor(np.ones(width, np.float32), requires_grad=True)
        bias = library.tensor(np.zeros(width, np.float32), requires_grad=True)
        return (lambda: (functional.layer_norm(x, (width,), weight, bias) * g).sum().backward()), x
    function = getattr(functional, name)
    keywords = {"dim": -1} if name in ("softmax", "log_softmax") else {}
    return (lambda: (function(x, **keywords) * g).sum().backward()), x


def _without_twins(step):
    def run():
        previous = compiled.set_enabled(False)
        try:
            step()
        finally:
            compiled.set_enabled(previous)

    return run


def bench_ops(quick: bool) -> list[dict]:
    import torch
    import torch.nn.functional as torch_functional

    from buildingai.nn import functional

    records = []
    for name, shapes in OPS.items():
        for shape in shapes:
            ours, _ = _step(bai, functional, name, shape, np.random.default_rng(0))
            theirs, _ = _step(torch, torch_functional, name, shape, np.random.default_rng(0))
            timings = measure(
                {"buildingai": ours, "numpy kernels": _without_twins(ours), "pytorch": theirs},
                repeats=2 if quick else 7,
                number=3 if quick else 100,
                settle=0.0,
                clock=time.thread_time,
            )
            torch_median = timings["pytorch"]["median"]
            records.append(
                {
                    "case": f"{name} fwd+bwd {shape}",
                    **timings,
                    "ratio": timings["buildingai"]["median"] / torch_median,
                    "numpy_kernels_ratio": timings["numpy kernels"]["median"] / torch_median,
                }
            )
    return records


def ops_table(records: list[dict]) -> str:
    def us(record, key):
        return f"{record[key]['median'] * 1e6:.1f}"

    rows = [
        [
            r["case"],
            us(r, "buildingai"),
            us(r, "numpy kernels"),
            us(r, "pytorch"),
            f"{r['ratio']:.2f}",
            f"{r['numpy_kernels_ratio']:.2f}",
        ]
        for r in records
    ]
    headers = [
        "case",
        "BuildingAI µs",
        "NumPy kernels µs",
        "PyTorch µs",
        "BuildingAI / PyTorch",
        "NumPy kernels / PyTorch",
    ]
    return format_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="twins,ops", help="twins, ops or both")
    parser.add_argument("--quick", action="store_true", help="a short correctness run")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    if not accelerate() or not compiled.available():
        raise SystemExit("small_ops: needs acceleration and numba (pip install numba)")
    set_threads(1)
    bai.set_num_threads(1)
    parts = args.only.split(",")
    records = []
    if "twins" in parts:
        twins = bench_twins(args.quick)
        print(twins_table(twins))
        records += twins
    if "ops" in parts:
        ops = bench_ops(args.quick)
        print(ops_table(ops))
        records += ops
    save_run(records, args.json)


if __name__ == "__main__":
    main()
