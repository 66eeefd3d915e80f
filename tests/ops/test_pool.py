"""Max pooling's backward finds each window's winner with an op (``max_pool2d_choice``), so the
whole gradient runs through dispatch; and pooled sizes on symbolic input sizes."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.ops.abstract import DimExpr, SymbolicSizeError, ValueSpec, spec_of
from buildingai.ops.pool import MAX_POOL2D, MAX_POOL2D_CHOICE

torch = pytest.importorskip("torch")


class OpNames(DispatchMode):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_op(self, op, inputs, attrs) -> None:
        self.names.append(op.name)


@pytest.mark.parametrize(
    "kwargs", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}]
)
def test_backward_finds_the_winners_through_dispatch(kwargs):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5))
    ours = bai.tensor(x, requires_grad=True)
    out = F.max_pool2d(ours, **kwargs)
    recorder = OpNames()
    with dispatch_mode(recorder):
        (out * out).sum().backward()
    assert recorder.names.count("max_pool2d_choice") == 1
    assert "max_pool2d_scatter" in recorder.names
    theirs = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.max_pool2d(theirs, **kwargs) ** 2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_choice_op_is_a_constant_of_the_graph():
    x = bai.tensor(np.random.default_rng(1).standard_normal((1, 2, 4, 4)), requires_grad=True)
    geometry = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)}
    out = MAX_POOL2D(x, ceil_mode=False, **geometry)
    choice = MAX_POOL2D_CHOICE(x, out, **geometry)
    assert choice.dtype == np.int8 and not choice.requires_grad
    assert MAX_POOL2D_CHOICE.infer(spec_of(x), spec_of(out), **geometry) == spec_of(choice)
    big = {**geometry, "kernel": (12, 12)}
    spec = ValueSpec((1, 2, 1, 1), np.dtype(np.float32))
    assert MAX_POOL2D_CHOICE.infer(spec, spec, **big).dtype == np.int32


def test_pooled_sizes_on_symbolic_inputs():
    n, h = DimExpr(("n",)), DimExpr(("h",))
    f32 = np.dtype(np.float32)
    sliding = {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}
    for ceil_mode in (False, True):
        out = MAX_POOL2D.infer(ValueSpec((n, 3, h, 8), f32), **sliding, ceil_mode=ceil_mode)
        assert out.shape == (n, 3, h, 8)
    halving = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)}
    even = ValueSpec((n, 3, 2 * h, 8), f32)  # an even height: the half is exact
    assert MAX_POOL2D.infer(even, **halving, ceil_mode=False).shape == (n, 3, h, 4)
    with pytest.raises(SymbolicSizeError, match=r"\[max_pool2d\]"):
        MAX_POOL2D.infer(ValueSpec((n, 3, h, 8), f32), **halving, ceil_mode=False)
    with pytest.raises(SymbolicSizeError, match=r"\[max_pool2d\].*ceil"):
        MAX_POOL2D.infer(ValueSpec((n, 3, h, 8), f32), **halving, ceil_mode=True)
