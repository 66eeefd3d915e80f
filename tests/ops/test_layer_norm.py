"""layer_norm's backward runs through dispatch: its gradient ops (``layer_norm_input_grad``,
``layer_norm_weight_grad``, ``sum``) are seen by dispatch modes, and their results equal PyTorch's
in float64, on the row layout and on the general one. First and higher derivatives take the same
gradient records, whose own backward gives second derivatives equal to PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.ops.abstract import ValueSpec
from buildingai.ops.layer_norm import LAYER_NORM_INPUT_GRAD, LAYER_NORM_WEIGHT_GRAD

torch = pytest.importorskip("torch")


class OpNames(DispatchMode):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_op(self, op, inputs, attrs) -> None:
        self.names.append(op.name)


def _inputs(shape, normalized, dtypes=(np.float64, np.float64), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtypes[0])
    w = rng.standard_normal(normalized).astype(dtypes[1])
    b = rng.standard_normal(normalized).astype(dtypes[1])
    return x, w, b


def _torch_grads(x, w, b, normalized, upstream):
    xt, wt, bt = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w, b))
    out = torch.nn.functional.layer_norm(xt, normalized, wt, bt)
    out.backward(upstream(out))
    return [t.grad.numpy() for t in (xt, wt, bt)]


@pytest.mark.parametrize(
    "shape, normalized",
    [((4, 6, 8), (8,)), ((3, 4, 5), (4, 5)), ((5,), (5,))],
    ids=["rows", "two-axes", "one-row"],
)
def test_fused_backward_runs_through_dispatch(shape, normalized):
    x, w, b = _inputs(shape, normalized)
    ours = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.layer_norm(ours[0], normalized, ours[1], ours[2])
    upstream = np.random.default_rng(1).standard_normal(shape)
    recorder = OpNames()
    with dispatch_mode(recorder):
        out.backward(bai.tensor(upstream))
    assert "layer_norm_input_grad" in recorder.names
    assert "layer_norm_weight_grad" in recorder.names
    assert "sum" not in recorder.names  # the bias gradient comes with the weight's
    expected = _torch_grads(x, w, b, normalized, lambda out: torch.tensor(upstream))
    for tensor, reference in zip(ours, expected):
        np.testing.assert_allclose(tensor.grad.numpy(), reference, rtol=1e-10, atol=1e-12)


def test_general_layout_and_mixed_dtypes():
    # the broadcast (non-contiguous) gradient of a mean, and a float32 input with float64
    # parameters: the gradient ops take their general path
    x, w, b = _inputs((3, 4, 6), (6,), dtypes=(np.float32, np.float64))
    ours = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
    recorder = OpNames()
    with dispatch_mode(recorder):
        out = F.layer_norm(ours[0], (6,), ours[1], ours[2])
        (out * out).mean().backward()
    assert {"layer_norm_input_grad", "layer_norm_weight_grad"} <= set(recorder.names)
    expected = _torch_grads(x, w, b, (6,), lambda out: 2 * out.detach() / out.numel())
    for tensor, reference in zip(ours, expected):
        assert tensor.grad.dtype == tensor.dtype
        np.testing.assert_allclose(tensor.grad.numpy(), reference, rtol=2e-5, atol=1e-6)


def test_only_the_gradients_asked_for_are_computed():
    x, w, b = _inputs((4, 6), (6,))
    x_t = bai.tensor(x)  # no gradient for the input
    w_t, b_t = bai.tensor(w, requires_grad=True), bai.tensor(b)
    recorder = OpNames()
    with dispatch_mode(recorder):
        F.layer_norm(x_t, (6,), w_t, b_t).sum().backward()
    assert "layer_norm_weight_grad" in recorder.names
    assert "layer_norm_input_grad" not in recorder.names
    expected = _torch_grads(x, w, b, (6,), lambda out: torch.ones_like(out))
    np.testing.assert_allclose(w_t.grad.numpy(), expected[1], rtol=1e-10, atol=1e-12)


def test_gradient_ops_infer_and_cost():
    f32 = np.dtype(np.float32)
    grad, xhat = ValueSpec((4, 3, 8), f32), ValueSpec((4, 3, 8), f32)
    weight, rstd = ValueSpec((8,), f32), ValueSpec((4, 3, 1), f32)
    attrs = {"axes": (2,), "eps": 1e-5}
    assert LAYER_NORM_INPUT_GRAD.infer(grad, xhat, weight, xhat, rstd, **attrs) == xhat
    assert LAYER_NORM_WEIGHT_GRAD.infer(grad, xhat, xhat, rstd, **attrs) == ValueSpec((8,), f32)
    two_axes = {"axes": (1, 2), "eps": 1e-5}
    assert LAYER_NORM_WEIGHT_GRAD.infer(grad, xhat, xhat, rstd, **two_axes) == ValueSpec(
        (3, 8), f32
    )
    flops, read, written = LAYER_NORM_WEIGHT_GRAD.cost(grad, xhat, xhat, rstd, **attrs)
    assert (flops, read, written) == (2 * 96, 2 * 96 * 4, 8 * 4)
    assert LAYER_NORM_INPUT_GRAD.differentiable and LAYER_NORM_WEIGHT_GRAD.differentiable


@pytest.mark.parametrize(
    "shape, normalized", [((4, 6, 8), (8,)), ((3, 4, 5), (4, 5))], ids=["rows", "two-axes"]
)
def test_second_derivatives_take_the_same_gradient_records(shape, normalized):
    x, w, b = _inputs(shape, normalized, seed=2)
    ours = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
    upstream = np.random.default_rng(3).standard_normal(shape)
    recorder = OpNames()
    out = F.layer_norm(ours[0], normalized, ours[1], ours[2])
    with dispatch_mode(recorder):
        grads = bai.grad((out * bai.tensor(upstream)).sum(), ours, create_graph=True)
    assert {"layer_norm_input_grad", "layer_norm_weight_grad"} <= set(recorder.names)
    assert "standardize_grad" not in recorder.names  # no second, composite first-order rule
    second = bai.grad(sum((g * g).sum() for g in grads[:2]), ours[:2])

    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out_t = torch.nn.functional.layer_norm(theirs[0], normalized, theirs[1], theirs[2])
    grads_t = torch.autograd.grad((out_t * torch.tensor(upstream)).sum(), theirs, create_graph=True)
    for mine, reference in zip(grads, grads_t):
        np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-10, atol=1e-12)
    second_t = torch.autograd.grad(sum((g * g).sum() for g in grads_t[:2]), theirs[:2])
    for mine, reference in zip(second, second_t):
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-9, atol=1e-11)


def test_empty_batch_gives_zero_gradients_as_in_pytorch():
    x, w, b = _inputs((0, 3, 4), (4,))
    ours = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
    recorder = OpNames()
    with dispatch_mode(recorder):
        F.layer_norm(ours[0], (4,), ours[1], ours[2]).sum().backward()
    assert {"layer_norm_input_grad", "layer_norm_weight_grad"} <= set(recorder.names)
    expected = _torch_grads(x, w, b, (4,), lambda out: torch.ones_like(out))
    for tensor, reference in zip(ours, expected):
        assert tensor.grad.shape == reference.shape
        np.testing.assert_array_equal(tensor.grad.numpy(), reference)
