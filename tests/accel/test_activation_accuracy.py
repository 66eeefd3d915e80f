"""float32 elu, selu, celu, hardsigmoid, hardswish and logsigmoid with acceleration on (their
compiled twins): values and gradients no further from a float64 reference than PyTorch's own
float32 kernels are (at most 1.5 times, in absolute and in relative error)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

N = 70_001  # above the twins' minimum size
CASES = {
    "elu": (lambda t: bai.nn.functional.elu(t), lambda t: torch.nn.functional.elu(t)),
    "selu": (lambda t: bai.nn.functional.selu(t), lambda t: torch.nn.functional.selu(t)),
    "celu": (
        lambda t: bai.nn.functional.celu(t, alpha=0.5),
        lambda t: torch.nn.functional.celu(t, alpha=0.5),
    ),
    "hardsigmoid": (bai.nn.functional.hardsigmoid, torch.nn.functional.hardsigmoid),
    "hardswish": (bai.nn.functional.hardswish, torch.nn.functional.hardswish),
    "logsigmoid": (bai.nn.functional.logsigmoid, torch.nn.functional.logsigmoid),
}


def _inputs():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            -np.logspace(-8, 0, 2000),  # expm1's small arguments: relative precision counts
            np.logspace(-8, 0, 2000),
            rng.standard_normal(N - 4000) * 4,
        ]
    )
    return x, rng.standard_normal(N)


def _errors(values, exact):
    error = np.abs(values.astype(np.float64) - exact)
    relative = error / np.maximum(np.abs(exact), np.finfo(np.float32).tiny)
    return error.max(), relative[np.abs(exact) > 1e-30].max()


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_error_is_within_pytorchs(name):
    ours_fn, torch_fn = CASES[name]
    x, upstream = _inputs()
    x64 = torch.tensor(x, requires_grad=True)
    out64 = torch_fn(x64)
    (grad64,) = torch.autograd.grad(out64, x64, torch.tensor(upstream))
    exact = [out64.detach().numpy(), grad64.numpy()]

    x32 = torch.tensor(x.astype(np.float32), requires_grad=True)
    out32 = torch_fn(x32)
    (grad32,) = torch.autograd.grad(out32, x32, torch.tensor(upstream.astype(np.float32)))
    theirs = [out32.detach().numpy(), grad32.numpy()]

    with bai.accel.enabled(True):
        ours_x = bai.Tensor(x.astype(np.float32), requires_grad=True)
        out = ours_fn(ours_x)
        (grad,) = bai.grad(out, [ours_x], grad_outputs=bai.Tensor(upstream.astype(np.float32)))
    ours = [out.numpy(), grad.numpy()]
    for what, mine, pytorch, reference in zip(("value", "gradient"), ours, theirs, exact):
        (absolute, relative), (their_absolute, their_relative) = (
            _errors(mine, reference),
            _errors(pytorch, reference),
        )
        assert absolute <= 1.5 * their_absolute + 1e-12, (name, what, absolute, their_absolute)
        assert relative <= 1.5 * their_relative + 1e-12, (name, what, relative, their_relative)
