"""Float32 accuracy of the accelerated kernels (``buildingai/accel``): for each family
(convolutions direct, im2col, grid and depthwise; products; sums; activations; row ops;
resizing; optimizer updates) the float32 result with acceleration on is no further from a
float64 reference than 1.5 times PyTorch's own float32 result is, forward and backward, on
realistic shapes. Each test also checks that the kernel it is about ran.

The error of an array is measured two ways against the reference's scale: the 99.9th
percentile of the absolute error over the largest absolute reference value (the largest errors,
less one outlier's luck), and the mean absolute error over the mean absolute reference value.
The worst single error may be at most twice PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import registry
from buildingai.accel.kernels import compiled

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

BOUND = 1.5  # times PyTorch's float32 error
WORST_BOUND = 2.0  # times PyTorch's largest single error
FLOOR = 1e-9  # relative errors below this count as none (both exact)


def _errors(values, exact) -> tuple[float, float, float]:
    """(near-largest, mean, largest) absolute error of ``values`` against ``exact``, relative
    to the reference's largest and mean absolute values."""
    exact = np.asarray(exact, np.float64)
    error = np.abs(np.asarray(values, np.float64) - exact).ravel()
    peak, typical = np.abs(exact).max(), np.abs(exact).mean()
    if peak == 0:
        return float(error.max()), float(error.mean()), float(error.max())
    return (
        float(np.quantile(error, 0.999)) / peak,
        float(error.mean()) / typical,
        float(error.max()) / peak,
    )


def assert_within_pytorchs(label: str, ours, theirs, exact) -> None:
    """ours (float32) is no further from ``exact`` (float64) than BOUND times theirs."""
    mine, pytorch = _errors(ours, exact), _errors(theirs, exact)
    bounds = (BOUND, BOUND, WORST_BOUND)
    for what, error, their_error, bound in zip(("near-largest", "mean", "largest"), mine,
                                               pytorch, bounds):  # fmt: skip
        assert error <= bound * their_error + FLOOR, (
            f"{label}: {what} relative error {error:.3g} against PyTorch's {their_error:.3g}"
        )


@pytest.fixture
def switched_off():
    """``switched_off(*names)`` turns those kernels off until the test ends."""
    turned = []

    def turn_off(*names):
        for name in names:
            turned.append((name, registry.set_enabled(name, False)))

    yield turn_off
    for name, previous in reversed(turned):
        registry.set_enabled(name, previous)


def _compare(label, ours_fn, torch_fn, inputs, seed=1, grads=True):
    """Run ``torch_fn`` on the float64 and float32 inputs and ``ours_fn`` on the float32 ones,
    with a random upstream gradient; compare the output and every input's gradient."""
    inputs = [np.asarray(a, np.float32) for a in inputs]

    def pytorch(dtype):
        tensors = [torch.tensor(a, dtype=dtype, requires_grad=grads) for a in inputs]
        out = torch_fn(*tensors)
        results = [out.detach().numpy()]
        if grads:
            upstream = torch.tensor(upstream32, dtype=dtype)
            results += [g.numpy() for g in torch.autograd.grad(out, tensors, upstream)]
        return results

    with torch.no_grad():
        shape = tuple(torch_fn(*(torch.tensor(a) for a in inputs)).shape)
    upstream32 = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    exact, theirs = pytorch(torch.float64), pytorch(torch.float32)
    tensors = [bai.tensor(a, requires_grad=grads) for a in inputs]
    out = ours_fn(*tensors)
    ours = [out.numpy()]
    if grads:
        ours += [g.numpy() for g in bai.grad(out, tensors, grad_outputs=bai.tensor(upstream32))]
    names = ["output"] + [f"gradient {i}" for i in range(len(inputs))]
    for name, mine, pytorch_result, reference in zip(names, ours, theirs, exact):
        assert mine.dtype == np.float32, (label, name, mine.dtype)
        assert_within_pytorchs(f"{label} {name}", mine, pytorch_result, reference)


# ----- convolutions -------------------------------------------------------------------------------

DIRECT = ("conv2d.direct", "conv2d_input_grad.direct", "conv2d_weight_grad.direct")
IM2COL = ("conv2d.im2col", "conv2d_input_grad.im2col", "conv2d_weight_grad.im2col")
STRIDED = ("conv2d.strided", "conv2d_input_grad.strided", "conv2d_weight_grad.im2col")
WINOGRAD = ("conv2d.direct", "conv2d_input_grad.direct", "conv2d_weight_grad.winograd")
NO_WINOGRAD = ("conv2d_weight_grad.winograd",)
# (x shape, weight shape, stride, padding, groups, kernels switched off, kernels that must run)
CONV_CASES = {
    "resnet-layer1-8x8-direct": ((8, 64, 8, 8), (64, 64, 3, 3), 1, 1, 1, NO_WINOGRAD, DIRECT),
    "resnet-layer1-16x16-direct": (
        (8, 64, 16, 16),
        (64, 64, 3, 3),
        1,
        1,
        1,
        NO_WINOGRAD,
        DIRECT,
    ),  # fmt: skip
    "resnet-layer2-16x16-winograd": ((8, 128, 16, 16), (128, 128, 3, 3), 1, 1, 1, (), WINOGRAD),
    "resnet-layer4-4x4-winograd": ((16, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1, (), WINOGRAD),
    "resnet-layer1-16x16-im2col": (
        (8, 64, 16, 16),
        (64, 64, 3, 3),
        1,
        1,
        1,
        DIRECT + ("conv2d_input_grad.grid",) + NO_WINOGRAD,
        IM2COL,
    ),  # fmt: skip
    "resnet-layer1-16x16-grid": (
        (8, 64, 16, 16),
        (64, 64, 3, 3),
        1,
        1,
        1,
        ("conv2d_input_grad.direct",),
        ("conv2d.direct", "conv2d_input_grad.grid"),
    ),  # fmt: skip
    "no-padding-direct": ((8, 64, 16, 16), (64, 64, 3, 3), 1, 0, 1, NO_WINOGRAD, DIRECT),
    "no-padding-winograd": ((8, 128, 14, 14), (128, 128, 3, 3), 1, 0, 1, (), WINOGRAD),
    "many-channels-direct": ((8, 256, 8, 8), (256, 256, 3, 3), 1, 1, 1, NO_WINOGRAD, DIRECT),
    "one-by-one-direct": ((8, 64, 16, 16), (128, 64, 1, 1), 1, 0, 1, (), DIRECT),
    "one-by-one-stride-2": ((8, 64, 16, 16), (128, 64, 1, 1), 2, 0, 1, (), STRIDED),
    "three-by-three-stride-2": ((8, 64, 16, 16), (128, 64, 3, 3), 2, 1, 1, (), STRIDED),
    "three-by-three-stride-2-im2col": (
        (8, 64, 16, 16),
        (128, 64, 3, 3),
        2,
        1,
        1,
        STRIDED[:2],
        IM2COL,
    ),  # fmt: skip
    "stem-7x7-stride-2": ((4, 3, 32, 32), (64, 3, 7, 7), 2, 3, 1, (), STRIDED),
    "depthwise": (
        (8, 32, 16, 16),
        (32, 1, 3, 3),
        1,
        1,
        32,
        (),
        ("conv2d.depthwise", "conv2d_input_grad.depthwise", "conv2d_weight_grad.depthwise"),
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_convolution(kernels_run, switched_off, case):
    x_shape, w_shape, stride, padding, groups, off, expected = CONV_CASES[case]
    switched_off(*off)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))
    b = rng.standard_normal(w_shape[0]) * 0.1
    options = {"stride": stride, "padding": padding, "groups": groups}
    _compare(
        case,
        lambda *t: F.conv2d(*t, **options),
        lambda *t: torch.nn.functional.conv2d(*t, **options),
        [x, w, b],
    )
    assert set(expected) <= kernels_run, sorted(kernels_run)


# ----- products -----------------------------------------------------------------------------------

PRODUCT_CASES = {  # GPT-sized: 8 x 128 tokens, width 768
    "tokens-by-mlp-in": ((1024, 768), (768, 3072)),
    "tokens-by-mlp-out": ((1024, 3072), (3072, 768)),
    "attention-scores": ((12, 128, 64), (12, 64, 128)),
    "attention-values": ((12, 128, 128), (12, 128, 64)),
}


@pytest.mark.parametrize("case", sorted(PRODUCT_CASES))
def test_matmul(kernels_run, case):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape) for shape in PRODUCT_CASES[case])
    _compare(case, lambda p, q: p @ q, lambda p, q: p @ q, [a, b])
    assert "matmul.routed" in kernels_run


def test_linear(kernels_run):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 128, 768))
    w = rng.standard_normal((768, 768)) / np.sqrt(768)
    b = rng.standard_normal(768) * 0.1
    _compare("linear", F.linear, torch.nn.functional.linear, [x, w, b])
    assert "linear.routed" in kernels_run
    assert kernels_run & {"sum.rows_and_columns", "sum_to.rows_and_columns"}  # the bias gradient


# ----- sums ---------------------------------------------------------------------------------------

SUM_CASES = {  # (shape, axes): bias gradients, row sums, one long sum
    "tokens-bias-gradient": ((1024, 768), (0,)),
    "many-rows-bias-gradient": ((65536, 64), (0,)),
    "leading-two-axes": ((32, 128, 256), (0, 1)),
    "convolution-bias-gradient": ((32, 64, 16, 16), (0, 2, 3)),
    "rows": ((256, 4096), (1,)),
    "long-vector": ((1 << 20,), (0,)),
}


@pytest.mark.parametrize("case", sorted(SUM_CASES))
def test_sum(kernels_run, case):
    shape, axes = SUM_CASES[case]
    x = np.random.default_rng(0).standard_normal(shape) + 0.5  # a mean, so that sums grow
    _compare(case, lambda t: t.sum(axes), lambda t: t.sum(axes), [x], grads=False)
    assert "sum.rows_and_columns" in kernels_run


# ----- activations --------------------------------------------------------------------------------

ACTIVATIONS = {  # name: (ours, PyTorch's, a kernel that must run)
    "gelu": (F.gelu, torch.nn.functional.gelu, "gelu.float32_polynomial"),
    "gelu-tanh": (
        lambda t: F.gelu(t, approximate="tanh"),
        lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
        "gelu.tanh_fused",
    ),
    "sigmoid": (F.sigmoid, torch.sigmoid, "sigmoid.fused"),
    "silu": (F.silu, torch.nn.functional.silu, "silu.fused"),
    "softplus": (F.softplus, torch.nn.functional.softplus, "softplus.float32"),
    "mish": (F.mish, torch.nn.functional.mish, "mish.fused"),
    "softsign": (F.softsign, torch.nn.functional.softsign, "softsign.fused"),
    "logsigmoid": (F.logsigmoid, torch.nn.functional.logsigmoid, "logsigmoid.fused"),
    "leaky_relu": (F.leaky_relu, torch.nn.functional.leaky_relu, "leaky_relu.fused"),
    "relu": (F.relu, torch.relu, "relu.fused"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(kernels_run, name):
    ours, theirs, kernel = ACTIVATIONS[name]
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-20, 20, 400_001), rng.standard_normal(100_000) * 3])
    _compare(name, ours, theirs, [x])
    assert kernel in kernels_run


# ----- row ops ------------------------------------------------------------------------------------


def test_softmax(kernels_run):
    x = np.random.default_rng(0).standard_normal((4096, 1024)) * 4
    _compare("softmax", lambda t: F.softmax(t, -1), lambda t: torch.softmax(t, -1), [x])
    assert {"softmax.rows", "softmax_grad.rows"} <= kernels_run


def test_log_softmax(kernels_run):
    x = np.random.default_rng(0).standard_normal((4096, 1024)) * 4
    _compare("log_softmax", lambda t: F.log_softmax(t, -1), lambda t: torch.log_softmax(t, -1),
             [x])  # fmt: skip
    assert {"log_softmax.rows", "log_softmax_grad.rows"} <= kernels_run


def test_layer_norm(kernels_run):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 768)) * 2 + 3
    weight, bias = rng.standard_normal(768), rng.standard_normal(768)
    _compare(
        "layer_norm",
        lambda *t: F.layer_norm(t[0], (768,), t[1], t[2]),
        lambda *t: torch.nn.functional.layer_norm(t[0], (768,), t[1], t[2]),
        [x, weight, bias],
    )
    assert {"layer_norm.rows", "layer_norm_input_grad.rows"} <= kernels_run


@pytest.mark.parametrize("causal", [False, True])
def test_attention(kernels_run, causal):
    q, k, v = (np.random.default_rng(seed).standard_normal((16, 4, 64, 32)) for seed in range(3))
    _compare(
        "attention",
        lambda *t: F.scaled_dot_product_attention(*t, is_causal=causal),
        lambda *t: torch.nn.functional.scaled_dot_product_attention(*t, is_causal=causal),
        [q, k, v],
    )
    assert {"attention.items", "attention_grad.items"} <= kernels_run


def test_cross_entropy(kernels_run):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4096, 1000)) * 3
    target = rng.integers(0, 1000, 4096)
    _compare(
        "cross_entropy",
        lambda t: F.cross_entropy(t, bai.tensor(target)),
        lambda t: torch.nn.functional.cross_entropy(t, torch.tensor(target)),
        [logits],
    )
    assert {"cross_entropy.rows", "cross_entropy_grad.rows"} <= kernels_run


# ----- resizing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("passes", [True, False], ids=["compiled passes", "dense products"])
def test_area_interpolation(kernels_run, passes):
    """Float32 images take the compiled passes where numba runs, the dense products without."""
    if passes:
        pytest.importorskip("numba")
    x = np.random.default_rng(0).standard_normal((8, 16, 96, 96))
    previous = compiled.set_enabled(passes)
    try:
        _compare(
            "interpolate area",
            lambda t: F.interpolate(t, size=(7, 7), mode="area"),
            lambda t: torch.nn.functional.interpolate(t, size=(7, 7), mode="area"),
            [x],
        )
    finally:
        compiled.set_enabled(previous)
    kernel = "separable" if passes else "dense"
    assert {f"interpolate.{kernel}", f"interpolate_grad.{kernel}"} <= kernels_run


# ----- optimizer updates --------------------------------------------------------------------------

OPTIMIZERS = {  # name: (ours, PyTorch's, options)
    "sgd-momentum": (bai.optim.SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
    "adam": (bai.optim.Adam, torch.optim.Adam, {"lr": 1e-3}),
    "adamw": (bai.optim.AdamW, torch.optim.AdamW, {"lr": 1e-3, "weight_decay": 0.1}),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps(accel_on, name):
    ours_class, their_class, options = OPTIMIZERS[name]
    rng = np.random.default_rng(0)
    shapes = [(768, 768), (3072,), (64, 64, 3, 3)]  # large, small and middling parameters
    start = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    grads = [[rng.standard_normal(shape) for shape in shapes] for _ in range(5)]

    def pytorch(dtype):
        params = [torch.tensor(p, dtype=dtype, requires_grad=True) for p in start]
        optimizer = their_class(params, **options)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = torch.tensor(np.float32(g), dtype=dtype)
            optimizer.step()
        return [p.detach().numpy() for p in params]

    params = [bai.nn.Parameter(bai.tensor(p)) for p in start]
    optimizer = ours_class(params, **options)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = bai.tensor(np.float32(g))
        optimizer.step()
    # The change each step made, compared: the parameters themselves hide it below their ulp.
    exact, theirs = pytorch(torch.float64), pytorch(torch.float32)
    for i, (mine, pytorch_result, reference) in enumerate(zip(params, theirs, exact)):
        assert_within_pytorchs(
            f"{name} parameter {i}",
            mine.numpy().astype(np.float64) - start[i],
            pytorch_result.astype(np.float64) - start[i],
            reference - start[i],
        )
