"""Sorting benchmark: topk over language-model logits (the sampling step of text generation),
sort of rows, and multinomial sampling. BuildingAI, PyTorch eager and a NumPy lower bound
(argpartition then a sort of the k kept, np.sort, a cumulative-sum search) run interleaved in one
process; the table gives medians and ratios to PyTorch. Results are cross-checked first.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.sorting [--quick]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import buildingai as bai

from .common import accelerate, measure, report, set_threads


def _np_topk(x, k):
    """The k largest along the last axis, sorted: argpartition (O(n)) and a sort of k."""
    part = np.argpartition(-x, k - 1, axis=-1)[:, :k]
    values = np.take_along_axis(x, part, axis=-1)
    order = np.argsort(-values, axis=-1, kind="stable")
    return np.take_along_axis(values, order, axis=-1), np.take_along_axis(part, order, axis=-1)


def _np_multinomial(rng, probs):
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random((probs.shape[0], 1)) * cdf[:, -1:]
    return (cdf <= u).sum(axis=-1, keepdims=True)


def cases(quick: bool) -> dict:
    rows, vocabulary = (2, 50) if quick else (16, 50257)
    k = 5 if quick else 50
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((rows, vocabulary)).astype(np.float32)
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    square = rng.standard_normal((64, 64 if quick else 1024)).astype(np.float32)
    return {
        f"topk k={k} {logits.shape}": (
            lambda lib, x: lib.topk(x, k).values,
            logits,
            lambda x: _np_topk(x, k)[0],
        ),
        f"sort {square.shape}": (
            lambda lib, x: lib.sort(x, dim=-1).values,
            square,
            lambda x: np.sort(x, axis=-1),
        ),
        f"multinomial 1 of {logits.shape}": (
            lambda lib, x: lib.multinomial(x, 1),
            probs,
            lambda x: _np_multinomial(rng, x),
        ),
    }


def bench(name: str, case: tuple, threads: int, quick: bool) -> dict:
    import torch

    function, array, lower = case
    ours, theirs = bai.tensor(array), torch.tensor(array)
    if "multinomial" not in name:  # a draw differs by library; its shape is checked instead
        difference = np.abs(function(bai, ours).numpy() - function(torch, theirs).numpy()).max()
        if not difference == 0:
            raise AssertionError(f"sorting benchmark: {name} differs from PyTorch by {difference}")
        if not np.array_equal(lower(array), function(torch, theirs).numpy()):
            raise AssertionError(f"sorting benchmark: the NumPy bound of {name} is wrong")
    elif function(bai, ours).shape != tuple(function(torch, theirs).shape):
        raise AssertionError(f"sorting benchmark: {name} shapes differ")
    timings = measure(
        {
            "buildingai": lambda: function(bai, ours),
            "pytorch": lambda: function(torch, theirs),
            "numpy": lambda: lower(array),
        },
        repeats=3 if quick else 7,
        number=2 if quick else 20,
        settle=0.0 if quick else 0.01,
    )
    torch_median = timings["pytorch"]["median"]
    return {
        "case": name,
        "threads": threads,
        **timings,
        "ratio": timings["buildingai"]["median"] / torch_median,
        "numpy_ratio": timings["numpy"]["median"] / torch_median,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a tiny correctness run")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    set_threads(args.threads)
    bai.set_num_threads(args.threads)
    records = [bench(n, c, args.threads, args.quick) for n, c in cases(args.quick).items()]
    report(records, args.json)


if __name__ == "__main__":
    main()
