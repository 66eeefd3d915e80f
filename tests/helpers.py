"""One harness for op tests: compare an op's values, gradients and second derivatives with
PyTorch in float64, and check the gradients against finite differences.

A case is one line::

    check_op(lambda x, y: x * y, (3, 1), (1, 4))                 # same code for both libraries
    check_op(lambda x: bai.relu(x), (5,), torch_fn=torch.relu)   # different spellings

Each argument after the function describes one input: a shape (random float64 values that require
grad), an ``Arg`` (see below), or any other value passed unchanged to both functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")


@dataclass
class Arg:
    """An input with more control than a bare shape.

    kind: "float" (random uniform in [low, high)), "int" (integers in [low, high), no grad),
    "bool" (random mask), or "array" (``value`` as given).
    """

    shape: tuple = ()
    kind: str = "float"
    low: float = -2.0
    high: float = 2.0
    value: object = None
    requires_grad: bool = True


def positive(*shape, low: float = 0.1, high: float = 2.0) -> Arg:
    """Floats bounded away from zero (for log, sqrt, division...)."""
    return Arg(shape, low=low, high=high)


def integers(*shape, low: int = 0, high: int = 5) -> Arg:
    return Arg(shape, kind="int", low=low, high=high, requires_grad=False)


def mask(*shape) -> Arg:
    return Arg(shape, kind="bool", requires_grad=False)


def constant(value, requires_grad: bool = False) -> Arg:
    return Arg(kind="array", value=np.asarray(value), requires_grad=requires_grad)


def _make(spec, rng):
    """Build (our value, torch value) for one input spec."""
    if isinstance(spec, tuple):
        spec = Arg(spec)
    if not isinstance(spec, Arg):
        return spec, spec
    if spec.kind == "float":
        array = rng.uniform(spec.low, spec.high, size=spec.shape)
        # keep values away from kinks (0 for relu/abs, ties for max) so gradients are defined
        array = np.where(np.abs(array) < 1e-3, 0.25, array)
    elif spec.kind == "int":
        array = rng.integers(spec.low, spec.high, size=spec.shape)
    elif spec.kind == "bool":
        array = rng.random(spec.shape) < 0.5
    else:
        array = spec.value
    grad = spec.requires_grad and array.dtype.kind == "f"
    ours = bai.Tensor(array.copy(), requires_grad=grad)
    theirs = torch.tensor(array.copy(), requires_grad=grad)
    return ours, theirs


def _as_list(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _assert_close(ours, theirs, atol, rtol, what):
    # force: PyTorch returns a lazy ZeroTensor for derivatives that vanish (abs'')
    theirs = theirs.detach().numpy(force=True) if hasattr(theirs, "detach") else np.asarray(theirs)
    ours = ours.numpy() if isinstance(ours, bai.Tensor) else np.asarray(ours)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != torch {theirs.shape}"
    if ours.dtype.kind in "biu" or theirs.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
    else:
        np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol, err_msg=what)


def check_op(
    fn,
    *specs,
    torch_fn=None,
    atol: float = 1e-10,
    rtol: float = 1e-7,
    grad: bool = True,
    gradcheck: bool = True,
    gradgrad: bool = False,
    seed: int = 0,
) -> None:
    """Compare ``fn`` on BuildingAI tensors with ``torch_fn`` (default: ``fn``) on torch tensors.

    Checks forward values; with ``grad``, input gradients for a random upstream gradient; with
    ``gradcheck``, finite differences; with ``gradgrad``, second derivatives against PyTorch and
    finite differences.
    """
    torch_fn = fn if torch_fn is None else torch_fn
    rng = np.random.default_rng(seed)
    pairs = [_make(spec, rng) for spec in specs]
    ours_in = [p[0] for p in pairs]
    theirs_in = [p[1] for p in pairs]

    ours_out = _as_list(fn(*ours_in))
    theirs_out = _as_list(torch_fn(*theirs_in))
    assert len(ours_out) == len(theirs_out)
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        _assert_close(o, t, atol, rtol, f"forward output {k}")
        if isinstance(o, bai.Tensor) and hasattr(t, "dtype"):
            expected = str(t.dtype).replace("torch.", "")
            assert o.dtype.name == expected, f"output {k} dtype {o.dtype} != torch {expected}"

    differentiable = [
        i for i, x in enumerate(ours_in) if isinstance(x, bai.Tensor) and x.requires_grad
    ]
    if not grad or not differentiable:
        return
    weights = [rng.standard_normal(np.shape(t.detach().numpy())) for t in theirs_out]
    used = [k for k, t in enumerate(theirs_out) if getattr(t, "requires_grad", False)]
    if not used:
        return
    ours_grads = bai.grad(
        [ours_out[k] for k in used],
        [ours_in[i] for i in differentiable],
        grad_outputs=[bai.Tensor(weights[k]) for k in used],
        create_graph=gradgrad,
        allow_unused=True,
    )
    theirs_grads = torch.autograd.grad(
        [theirs_out[k] for k in used],
        [theirs_in[i] for i in differentiable],
        grad_outputs=[torch.tensor(weights[k]) for k in used],
        create_graph=gradgrad,
        allow_unused=True,
    )
    for i, o, t in zip(differentiable, ours_grads, theirs_grads):
        if t is None:
            assert o is None or np.all(o.numpy() == 0), f"input {i}: torch has no gradient"
            continue
        assert o is not None, f"input {i}: no gradient, torch has one"
        _assert_close(o, t, atol, rtol, f"gradient of input {i}")

    if gradgrad:
        second_weights = [
            rng.standard_normal(np.shape(t.detach().numpy())) if t is not None else None
            for t in theirs_grads
        ]
        live = [
            j
            for j, (o, t) in enumerate(zip(ours_grads, theirs_grads))
            if t is not None and t.requires_grad and o is not None and o.requires_grad
        ]
        if live:
            ours_second = bai.grad(
                [ours_grads[j] for j in live],
                [ours_in[i] for i in differentiable],
                grad_outputs=[bai.Tensor(second_weights[j]) for j in live],
                allow_unused=True,
            )
            theirs_second = torch.autograd.grad(
                [theirs_grads[j] for j in live],
                [theirs_in[i] for i in differentiable],
                grad_outputs=[torch.tensor(second_weights[j]) for j in live],
                allow_unused=True,
            )
            for i, o, t in zip(differentiable, ours_second, theirs_second):
                if t is None:
                    assert o is None or np.allclose(o.numpy(), 0), f"input {i}: torch has none"
                    continue
                if o is None:  # none recorded: PyTorch's must be zero (a mask's derivative)
                    assert np.allclose(t.numpy(), 0), f"input {i}: no second derivative"
                    continue
                _assert_close(o, t, 1e-8, 1e-6, f"second derivative of input {i}")

    if gradcheck:
        bai.debug.gradcheck(fn, ours_in)
        if gradgrad:
            bai.debug.gradgradcheck(fn, ours_in)


def results_at_thread_counts(compute, counts=(1, 2)) -> list:
    """``compute()``'s result with BuildingAI's thread count set to each of ``counts`` in turn;
    the count it found is set again after."""
    previous = bai.get_num_threads()
    try:
        results = []
        for count in counts:
            bai.set_num_threads(count)
            results.append(compute())
        return results
    finally:
        bai.set_num_threads(previous)
