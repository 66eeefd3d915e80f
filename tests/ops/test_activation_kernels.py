"""The activations against PyTorch at one and two threads, on the records' reference path and
with their registered kernels (exact GELU's tanh-form Phi for float32, leaky_relu's slopes,
softplus without logaddexp, the threaded sigmoid) on."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import compiled, gelu32
from buildingai.nn import functional as BF
from tests.helpers import torch

F = torch.nn.functional


@pytest.fixture(params=[False, True], ids=["reference", "accelerated"])
def acceleration(request):
    with bai.accel.enabled(request.param):
        yield request.param


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    bai.set_num_threads(request.param)
    yield request.param
    bai.set_num_threads(None)


def _wide_float32():
    """-12..12 densely, tiny magnitudes of both signs, zeros, and enough elements (over 2^19
    touched) that two threads split the work."""
    dense = np.linspace(-12, 12, 600_001)
    tiny = np.geomspace(1e-38, 1e-3, 2001)
    return np.concatenate([dense, tiny, -tiny, [0.0, -0.0, 10.0, -10.0]]).astype(np.float32)


def test_exact_gelu_float32_within_1e_6_of_torch_and_exact(threads, acceleration):
    x = _wide_float32()
    ours = BF.gelu(bai.tensor(x)).numpy()
    assert ours.dtype == np.float32
    theirs = F.gelu(torch.from_numpy(x)).numpy()
    exact = F.gelu(torch.from_numpy(x.astype(np.float64))).numpy()
    assert np.abs(ours - exact).max() <= 6.5e-7
    # PyTorch's float32 erf is itself up to 1.1e-6 off near x = 3.4: within 1e-6 of it wherever
    # it is within 3e-7 of the exact value, and within 1.5e-6 everywhere
    torch_accurate = np.abs(theirs - exact) <= 3e-7
    assert np.abs(ours - theirs)[torch_accurate].max() <= 1e-6
    assert np.abs(ours - theirs).max() <= 1.5e-6
    # relative precision from x = -1 up (further left, 1 + erf cancels, as in PyTorch)
    right = (x >= -1) & (x != 0)
    assert (np.abs(ours - exact)[right] / np.abs(exact[right])).max() <= 2e-6
    tiny = BF.gelu(bai.tensor(np.float32([0.0, -0.0, 1e-30]))).numpy()
    np.testing.assert_array_equal(tiny, np.float32([0.0, -0.0, 5e-31]))
    assert np.signbit(tiny[1])


def test_exact_gelu_float32_gradient_matches_torch_float64(threads, acceleration):
    x = _wide_float32()
    g = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
    ours = bai.tensor(x, requires_grad=True)
    BF.gelu(ours).backward(bai.tensor(g))
    theirs = torch.tensor(x.astype(np.float64), requires_grad=True)
    F.gelu(theirs).backward(torch.from_numpy(g.astype(np.float64)))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=2e-6)


def test_exact_gelu_float32_special_values(acceleration):
    x = np.float32([np.inf, np.nan, 1e30, -1e30, 3e38, -3e38, 20.0, -20.0])
    with np.errstate(all="raise"):
        out = BF.gelu(bai.tensor(x)).numpy()
    # x Phi(x) without overflow: PyTorch gives NaN at inf and inf at 3e38
    expected = np.float32([np.inf, np.nan, 1e30, -0.0, 3e38, -0.0, 20.0, -0.0])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("twins", [False, True], ids=["numpy-kernels", "compiled-twins"])
def test_gelu_kernel_threads_give_the_same_bits(twins, accel_on):
    x = _wide_float32()
    previous = compiled.set_enabled(twins)
    try:
        one = BF.gelu(bai.tensor(x)).numpy()
        bai.set_num_threads(2)
        try:
            threaded = BF.gelu(bai.tensor(x)).numpy()
        finally:
            bai.set_num_threads(None)
    finally:
        compiled.set_enabled(previous)
    assert np.array_equal(one, threaded)
    if not twins:  # the NumPy kernel split across threads is the reference, bit for bit
        out, cdf = np.empty_like(x), np.empty_like(x)
        gelu32.gelu_forward(np, x, out, cdf)
        assert np.array_equal(out, threaded)


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")  # -inf * 0, slope 0
@pytest.mark.parametrize("slope", [0.01, 0.2, 0.0, 1.0, -0.5, 3.0, 1e10, 1 / 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_leaky_relu_is_bitwise_torch(slope, dtype, threads, acceleration):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(300_000) * 100, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    x = x.astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    ours = bai.tensor(x, requires_grad=True)
    out = BF.leaky_relu(ours, slope)
    out.backward(bai.tensor(g))
    theirs = torch.tensor(x, requires_grad=True)
    theirs_out = F.leaky_relu(theirs, slope)
    theirs_out.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(out.numpy(), theirs_out.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_leaky_relu_first_derivative_is_a_constant_in_x(acceleration):
    x = bai.tensor([-2.0, 3.0], requires_grad=True)
    g = bai.tensor([2.0, 5.0], requires_grad=True)
    (first,) = bai.grad(BF.leaky_relu(x, 0.1), [x], grad_outputs=g, create_graph=True)
    np.testing.assert_array_equal(first.numpy(), np.float32([0.2, 5.0]))
    (by_g,) = bai.grad(first.sum(), [g])  # linear in the upstream gradient
    np.testing.assert_array_equal(by_g.numpy(), np.float32([0.1, 1.0]))


@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0), (1.0, 100.0)])
def test_softplus_float32_matches_torch(beta, threshold, threads, acceleration):
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(300_000) * 30, [0.0, 200.0, -200.0, 1e4, -1e4]])
    x = x.astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    ours = bai.tensor(x, requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = BF.softplus(ours, beta=beta, threshold=threshold)
        out.backward(bai.tensor(g))
    # against float64 PyTorch: float32 PyTorch overflows to inf for 88 < x <= threshold = 100
    theirs = torch.tensor(x.astype(np.float64), requires_grad=True)
    theirs_out = F.softplus(theirs, beta=beta, threshold=threshold)
    theirs_out.backward(torch.from_numpy(g.astype(np.float64)))
    np.testing.assert_allclose(out.numpy(), theirs_out.detach().numpy(), rtol=3e-7, atol=1e-37)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-37)
    above = x * np.float32(beta) > threshold
    np.testing.assert_array_equal(out.numpy()[above], x[above])


@pytest.mark.parametrize("name", ["sigmoid", "silu"])
def test_sigmoid_and_silu_threaded_match_torch(name, threads, acceleration):
    x = (np.random.default_rng(3).standard_normal(600_000) * 20).astype(np.float32)
    ours = bai.tensor(x, requires_grad=True)
    out = getattr(BF, name)(ours) if name == "silu" else ours.sigmoid()
    out.sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    theirs_out = getattr(torch.nn.functional, name)(theirs)
    theirs_out.sum().backward()
    np.testing.assert_allclose(out.numpy(), theirs_out.detach().numpy(), rtol=5e-7, atol=1e-37)
    # both gradients take 1 - s, which cancels where s is near 1
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=2e-7)


ONE_BACKWARD = {
    "elu": lambda t: BF.elu(t, 0.7),
    "selu": BF.selu,
    "celu": lambda t: BF.celu(t, 1.5),
    "hardtanh": lambda t: BF.hardtanh(t, -1.0, 1.0),
    "hardsigmoid": BF.hardsigmoid,
    "hardswish": BF.hardswish,
    "threshold": lambda t: BF.threshold(t, 0.5, -1.0),
    "mish": BF.mish,
    "softsign": BF.softsign,
    "logsigmoid": BF.logsigmoid,
    "leaky_relu": lambda t: BF.leaky_relu(t, 0.1),
    "gelu": BF.gelu,
    "silu": BF.silu,
}


@pytest.mark.parametrize("name", sorted(ONE_BACKWARD))
def test_a_recorded_backward_runs_the_same_records_as_a_plain_one(name, monkeypatch):
    """One backward per op: with and without create_graph, the first derivative is computed by
    the same op records (a traced or compiled step records what an eager step runs)."""
    from buildingai.ops import all_ops

    calls = []
    for op in all_ops():
        forward = op.forward

        def spy(*args, _op=op, _forward=forward, **kwargs):
            calls.append(_op.name)
            return _forward(*args, **kwargs)

        monkeypatch.setattr(op, "forward", spy)
    x = bai.tensor(np.linspace(-4, 4, 33), requires_grad=True)
    g = bai.tensor(np.cos(np.arange(33.0)))
    out = ONE_BACKWARD[name](x)
    records = {}
    with bai.accel.enabled(False):
        for create_graph in (False, True):
            calls.clear()
            bai.grad(out, [x], grad_outputs=g, retain_graph=True, create_graph=create_graph)
            records[create_graph] = list(calls)
    assert records[False] and records[False] == records[True]
