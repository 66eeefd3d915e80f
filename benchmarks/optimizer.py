"""Optimizer step time for two float32 models, a 10M-parameter transformer and the suite's small
one (0.5M parameters, where per-tensor overhead weighs most): Adam and SGD(momentum=0.9) against
torch.optim in the same run, interleaved.

Candidates:
- ``buildingai``: the shipped path (small parameters packed into one flat array per group,
  larger ones updated in cache-sized blocks, large ones split across threads).
- ``bai one by one``: the shipped path with every parameter updated on its own
  (``optimizer.updates_elementwise = False``, see ``accel/packing.py``).
- ``bai 1 thread``: the shipped path on one thread.
- ``bai no BLAS``: the shipped path with its scaled sums as NumPy ufuncs instead of OpenBLAS's
  ``axpby`` (``buildingai.accel.vector_blas``).
- ``bai whole-array``: the same update functions over whole arrays, one thread (what a
  straightforward NumPy optimizer does).
- ``flat buffer``: the same update function over one flat buffer holding every parameter,
  gradient and state (the best case for flat buffers: no gathering of gradients counted).
- ``torch default``: ``torch.optim`` with its default implementation (on CPU tensors that is the
  per-tensor loop; ``foreach`` is the default only on GPUs).
- ``torch foreach``: ``torch.optim`` with ``foreach=True``.

Run: ``python -m benchmarks.optimizer [--quick] [--threads N] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

import buildingai as bai
from buildingai.accel import optimizers as optimizer_module
from buildingai.accel import vector_blas

from .common import accelerate, format_table, measure, save_run, settle_for


def layer_shapes(width: int = 512, layers: int = 3, vocab: int = 1000) -> list[tuple[int, ...]]:
    """A small transformer's parameter shapes: embedding, then per layer attention (qkv, out),
    MLP (4x) and two layer norms, then a final norm. Defaults sum to about 10M parameters."""
    shapes: list[tuple[int, ...]] = [(vocab, width)]
    for _ in range(layers):
        shapes += [
            (width,),
            (width,),  # layer norm 1
            (3 * width, width),
            (3 * width,),  # qkv projection
            (width, width),
            (width,),  # attention output
            (width,),
            (width,),  # layer norm 2
            (4 * width, width),
            (4 * width,),  # MLP up
            (width, 4 * width),
            (width,),  # MLP down
        ]
    shapes += [(width,), (width,)]
    return shapes


def _variant(step, block_size: int | None):
    """Run ``step`` on one thread, with blocks of ``block_size`` elements (None: whole arrays)."""

    def run():
        block, threads = optimizer_module.BLOCK_SIZE, optimizer_module.get_num_threads()
        optimizer_module.BLOCK_SIZE = block_size or 1 << 62
        bai.optim.set_num_threads(1)
        try:
            step()
        finally:
            optimizer_module.BLOCK_SIZE = block
            bai.optim.set_num_threads(threads)

    return run


def _without_blas(step):
    """Run ``step`` with ``vector_blas`` off: every scaled sum as three ufunc passes."""

    def run():
        previous = vector_blas.set_enabled(False)
        try:
            step()
        finally:
            vector_blas.set_enabled(previous)

    return run


def _flat_buffer_step(name: str, size: int, options: dict):
    """One update function over flat buffers of ``size`` elements (parameters, gradients and
    state concatenated): the ceiling a flat-buffer layout could reach."""
    rng = np.random.default_rng(1)
    param = rng.standard_normal(size).astype(np.float32)
    grad = rng.standard_normal(size).astype(np.float32)
    flat = bai.tensor(param, requires_grad=True)
    flat.grad = bai.tensor(grad)
    optimizer = getattr(bai.optim, name)([flat], **options)
    return optimizer.step


def _candidates(name: str, options: dict, shapes, torch) -> dict:
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32) * 0.02 for shape in shapes]
    grads = [rng.standard_normal(shape).astype(np.float32) * 0.01 for shape in shapes]

    def our_step(packed=True):
        params = [bai.tensor(w.copy(), requires_grad=True) for w in weights]
        for param, grad in zip(params, grads):
            param.grad = bai.tensor(grad.copy())
        optimizer = getattr(bai.optim, name)(params, **options)
        optimizer.updates_elementwise = packed
        return optimizer.step

    def torch_step(foreach):
        params = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
        for param, grad in zip(params, grads):
            param.grad = torch.tensor(grad.copy())
        return getattr(torch.optim, name)(params, foreach=foreach, **options).step

    size = sum(int(np.prod(shape)) for shape in shapes)
    return {
        "buildingai": our_step(),
        "bai one by one": our_step(packed=False),
        "bai 1 thread": _variant(our_step(), optimizer_module.BLOCK_SIZE),
        "bai no BLAS": _without_blas(our_step()),
        "bai whole-array": _variant(our_step(), None),
        "flat buffer": _flat_buffer_step(name, size, options),
        "torch default": torch_step(None),
        "torch foreach": torch_step(True),
    }


CASES = [("Adam", {"lr": 1e-3}), ("SGD", {"lr": 1e-2, "momentum": 0.9})]
# the benchmark suite's transformer workload: d_model 128, 2 layers, vocabulary 1000
SMALL_MODEL = dict(width=128, layers=2, vocab=1000)


def run(quick: bool = False, threads: int | None = None) -> list[dict]:
    import torch

    if threads:
        torch.set_num_threads(threads)
        bai.optim.set_num_threads(threads)
    if quick:
        models = [layer_shapes(width=16, layers=1, vocab=10)]
    else:
        models = [layer_shapes(), layer_shapes(**SMALL_MODEL)]
    records = []
    for shapes, (name, options) in itertools.product(models, CASES):
        size = sum(int(np.prod(shape)) for shape in shapes)
        candidates = _candidates(name, options, shapes, torch)
        results = measure(
            candidates, repeats=2 if quick else 11, number=1 if quick else 3, warmup=1,
            settle=settle_for(quick),
        )  # fmt: skip
        record = {
            "optimizer": f"{name}({', '.join(f'{k}={v}' for k, v in options.items())})",
            "parameters": size,
            "tensors": len(shapes),
        }
        for candidate, stats in results.items():
            record[candidate] = {k: v * 1e3 for k, v in stats.items()}  # milliseconds
        for reference in ("torch default", "torch foreach"):
            record[f"ratio to {reference}"] = (
                record["buildingai"]["median"] / record[reference]["median"]
            )
        records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    parser.add_argument("--threads", type=int, default=None, help="threads for both libraries")
    parser.add_argument("--json", help="also write the records to this JSON file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    records = run(quick=args.quick, threads=args.threads)
    names = [
        "buildingai",
        "bai one by one",
        "bai 1 thread",
        "bai no BLAS",
        "bai whole-array",
        "flat buffer",
        "torch default",
        "torch foreach",
    ]
    rows = [
        [r["optimizer"], f"{r['parameters']:,} in {r['tensors']}"]
        + [f"{r[n]['median']:.2f}" for n in names]
        + [f"{r['ratio to torch default']:.2f}", f"{r['ratio to torch foreach']:.2f}"]
        for r in records
    ]
    headers = ["optimizer", "parameters"] + [f"{n} ms" for n in names]
    headers += ["ours / torch default", "ours / torch foreach"]
    print(format_table(headers, rows))
    print()
    save_run(records, args.json)


if __name__ == "__main__":
    main()
