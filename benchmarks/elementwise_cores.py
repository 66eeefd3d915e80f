"""Element-wise work on every core: the ways to run a chain of element-wise ops side by side, in
one run, against PyTorch eager at the same thread count.

Chains (float32, one large tensor): the tanh-GELU forward with its gate (about 9 passes in NumPy),
``relu`` forward+backward (a max, a compare and a product), and a short fused chain
``a * b + c``. Options:

- ``numpy 1 thread``: one ufunc call per op, on the calling thread;
- ``numpy split``: the same ufunc calls on row ranges across BuildingAI's thread pool
  (``ops/kernels/split.py``, what BuildingAI runs today);
- ``numexpr``: the chain compiled to numexpr's virtual machine, on its own threads (if
  installed);
- ``numba``: the chain as a ``@njit(parallel=True)`` loop (if installed; compile time excluded);
- ``compiled twins``: BuildingAI's own numba kernels (``ops/kernels/compiled``), with their
  vectorised ``exp``.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.elementwise_cores
[--threads 2] [--size 4194304]``.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from buildingai.backend.threads import get_num_threads, parallel_for, set_num_threads

from .common import accelerate, environment, format_table, measure

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# ----- NumPy forms: the reference each other option is checked against -------------------------


def np_gelu_tanh(x, out, gate):
    """out = 0.5 x (1 + tanh(k (x + 0.044715 x^3))); gate = the tanh (kept for backward)."""
    np.multiply(x, x, out=gate)
    gate *= 0.044715
    gate += 1.0
    gate *= x
    gate *= SQRT_2_OVER_PI
    np.tanh(gate, out=gate)
    np.add(gate, 1.0, out=out)
    out *= x
    out *= 0.5


def np_relu_both(x, g, out, dx):
    np.maximum(x, 0, out=out)
    np.multiply(g, x > 0, out=dx)


def np_fma(a, b, c, out):
    np.multiply(a, b, out=out)
    out += c


def split(kernel, *arrays):
    flat = [array.reshape(-1) for array in arrays]

    def run(start, stop):
        kernel(*(array[start:stop] for array in flat))

    parallel_for(run, len(flat[0]), flat[0].size * len(flat))


# ----- numexpr and numba forms ----------------------------------------------------------------


def numexpr_forms():
    try:
        import numexpr
    except ImportError:
        return None
    k = np.float32(SQRT_2_OVER_PI)

    def gelu(x, out, gate):
        numexpr.evaluate("tanh(k * x * (1 + 0.044715 * x * x))", local_dict={"k": k, "x": x},
                         out=gate, casting="same_kind")  # fmt: skip
        numexpr.evaluate("0.5 * x * (1 + gate)", out=out, casting="same_kind")

    def relu(x, g, out, dx):
        numexpr.evaluate("where(x > 0, x, 0)", out=out, casting="same_kind")
        numexpr.evaluate("where(x > 0, g, 0)", out=dx, casting="same_kind")

    def fma(a, b, c, out):
        numexpr.evaluate("a * b + c", out=out, casting="same_kind")

    return {"gelu": gelu, "relu": relu, "fma": fma, "set_threads": numexpr.set_num_threads}


def numba_forms():
    try:
        import numba
    except ImportError:
        return None
    k = np.float32(SQRT_2_OVER_PI)

    @numba.njit(parallel=True, fastmath=False, cache=False)
    def gelu_kernel(x, out, gate):
        for i in numba.prange(x.size):
            v = x[i]
            t = np.tanh(k * v * (np.float32(1.0) + np.float32(0.044715) * v * v))
            gate[i] = t
            out[i] = np.float32(0.5) * v * (np.float32(1.0) + t)

    @numba.njit(parallel=True)
    def relu_kernel(x, g, out, dx):
        for i in numba.prange(x.size):
            v = x[i]
            positive = v > 0
            out[i] = v if positive else np.float32(0.0)
            dx[i] = g[i] if positive else np.float32(0.0)

    @numba.njit(parallel=True)
    def fma_kernel(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = a[i] * b[i] + c[i]

    def flat(kernel):
        return lambda *arrays: kernel(*(array.reshape(-1) for array in arrays))

    return {
        "gelu": flat(gelu_kernel),
        "relu": flat(relu_kernel),
        "fma": flat(fma_kernel),
        "set_threads": numba.set_num_threads,
    }


def twin_forms():
    """BuildingAI's compiled twins (``ops/kernels/compiled``), called directly: the tanh-GELU
    forward (its gate is sigmoid(2u), so only ``out`` is compared) and relu forward + backward.
    The short fused chain has no twin."""
    from buildingai.accel.kernels import compiled

    if not compiled.available():
        return None
    from buildingai.accel.kernels.compiled import activations

    def relu(x, g, out, dx):
        activations.relu(x, out)
        activations.relu_grad(g, out, dx)

    def flat(kernel):
        return lambda *arrays: kernel(*(array.reshape(-1) for array in arrays))

    return {
        "gelu": flat(activations.gelu_tanh),
        "relu": flat(relu),
        "set_threads": compiled._state["numba"].set_num_threads,
    }


# ----- the run --------------------------------------------------------------------------------


def arrays_for(size: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size).astype(np.float32)
    return {
        "gelu": (x, np.empty_like(x), np.empty_like(x)),
        "relu": (
            x,
            rng.standard_normal(size).astype(np.float32),
            np.empty_like(x),
            np.empty_like(x),
        ),  # fmt: skip
        "fma": (
            x,
            rng.standard_normal(size).astype(np.float32),
            rng.standard_normal(size).astype(np.float32),
            np.empty_like(x),
        ),  # fmt: skip
    }


NUMPY = {"gelu": np_gelu_tanh, "relu": np_relu_both, "fma": np_fma}
OUTPUTS = {"gelu": 2, "relu": 2, "fma": 1}  # trailing arrays each form writes
COMPARED = {"gelu": 1, "relu": 2, "fma": 1}  # of those, how many (first ones) are compared


def torch_forms(threads: int):
    import torch

    torch.set_num_threads(threads)

    def gelu(x):
        return torch.nn.functional.gelu(x, approximate="tanh")

    def relu(x, g):
        y = torch.relu(x)
        return y, torch.ops.aten.threshold_backward(g, y, 0)

    def fma(a, b, c):
        return torch.addcmul(c, a, b)

    return {"gelu": gelu, "relu": relu, "fma": fma}


def check(name: str, form, arrays: tuple) -> None:
    """A form must write what the NumPy reference writes (float32 round-off)."""
    count = OUTPUTS[name]
    expected = [np.empty_like(a) for a in arrays[-count:]]
    NUMPY[name](*arrays[:-count], *expected)
    got = [np.zeros_like(a) for a in arrays[-count:]]
    form(*arrays[:-count], *got)
    for e, g in list(zip(expected, got))[: COMPARED[name]]:
        np.testing.assert_allclose(g, e, rtol=2e-6, atol=2e-6)


def _split_form(kernel):
    return lambda *arrays: split(kernel, *arrays)


def _bound(function, arguments):
    return lambda: function(*arguments)


def run(size: int, threads: int) -> list[dict]:
    import torch

    previous = get_num_threads()
    set_num_threads(threads)
    options = {
        "numpy 1 thread": dict(NUMPY),
        "numpy split": {name: _split_form(kernel) for name, kernel in NUMPY.items()},
    }
    candidates_of = (
        ("numexpr", numexpr_forms()),
        ("numba", numba_forms()),
        ("compiled twins", twin_forms()),
    )
    for label, forms in candidates_of:
        if forms is not None:
            forms.pop("set_threads")(threads)
            options[label] = forms
    theirs = torch_forms(threads)
    records = []
    try:
        for name in ("gelu", "relu", "fma"):
            arrays = arrays_for(size)[name]
            count = OUTPUTS[name]
            tensors = [torch.from_numpy(a) for a in arrays[:-count]]
            candidates = {}
            for label, forms in options.items():
                form = forms.get(name)
                if form is None:
                    continue
                check(name, form, arrays)  # also compiles numba's kernels
                candidates[label] = _bound(form, arrays)
            candidates["pytorch"] = _bound(theirs[name], tensors)
            times = measure(candidates, repeats=9, number=5, warmup=2, settle=0.01)
            records.append({"chain": name, "threads": threads, "size": size, "times": times})
    finally:
        set_num_threads(previous)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="2")
    parser.add_argument("--size", type=int, default=1 << 22)
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    info = environment()
    print(json.dumps({k: info[k] for k in ("blas", "cpu") if k in info}, default=str))
    rows, labels = [], None
    for threads in [int(t) for t in args.threads.split(",")]:
        for record in run(args.size, threads):
            times = record["times"]
            labels = labels or list(times)
            reference = times["pytorch"]["median"]
            rows.append([record["chain"], threads] + [
                f"{times[label]['median'] * 1e3:.2f} ({times[label]['median'] / reference:.2f}x)"
                if label in times else "—"
                for label in labels
            ])  # fmt: skip
    print(format_table(["chain", "threads"] + [f"{label} ms (/PT)" for label in labels], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
