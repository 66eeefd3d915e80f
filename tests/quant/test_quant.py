"""int8 quantisation: dynamic, static (calibrated) and quantisation-aware.

Tolerances stated here: on these Gaussian inputs a dynamically quantised model stays within 2%
of the float output's largest magnitude, a statically quantised one (inputs and outputs on
calibrated uint8 grids) within 5% (10% with moving-average ranges). The int8 arithmetic is exact (checked against an int64
reference), onnxruntime's int8 kernels agree with BuildingAI's quantised run to one output
quantum, and fake quantisation matches PyTorch's values and straight-through gradients.
"""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn, quant
from buildingai.quant.qparams import ACTIVATION_RANGE, dynamic_qparams, quantize

torch = pytest.importorskip("torch")


class Net(nn.Module):
    """conv -> relu -> flatten -> fc -> relu -> fc: (N, 1, 6, 6) -> (N, 3)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = nn.Linear(4 * 36, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.conv(x).relu()
        return self.fc2(self.fc1(x.reshape(x.shape[0], -1)).relu())


def _images(batch, seed):
    return np.random.default_rng(seed).standard_normal((batch, 1, 6, 6)).astype("float32")


def _net():
    bai.manual_seed(0)
    return Net().eval()


def _calibrated(model, observer=quant.MinMaxObserver):
    prepared = quant.prepare(model, observer=observer, inplace=False)
    with bai.no_grad():
        for seed in range(6):
            prepared(bai.tensor(_images(16, 100 + seed)))
    return quant.convert(prepared)


def _max_error(model, reference, x):
    with bai.no_grad():
        expected = reference(bai.tensor(x)).numpy()
        got = model(bai.tensor(x)).numpy()
    return np.abs(got - expected).max() / np.abs(expected).max()


def test_dynamic_and_static_stay_close_to_float():
    model, x = _net(), _images(32, 0)
    dynamic = quant.quantize_dynamic(model)
    static = _calibrated(model)
    assert isinstance(dynamic.fc1, quant.QuantizedLinear)
    assert isinstance(static.conv, quant.QuantizedConv2d)
    assert isinstance(model.fc1, nn.Linear)  # the float model is left as it was
    assert _max_error(dynamic, model, x) < 0.02
    assert _max_error(static, model, x) < 0.05
    assert _max_error(_calibrated(model, quant.PercentileObserver), model, x) < 0.05
    # an average of batch ranges is narrower: the extremes of other batches get clamped
    moving = _calibrated(model, quant.MovingAverageMinMaxObserver)
    assert _max_error(moving, model, x) < 0.10


def test_weights_are_int8_per_channel_and_four_times_smaller():
    model = _net()
    dynamic = quant.quantize_dynamic(model)
    weight = dynamic.fc1.weight
    assert weight.dtype == np.int8 and dynamic.fc1.weight_scale.shape == (16,)
    assert np.abs(weight.numpy()).max() == 127  # each row uses the full symmetric range
    float_bytes = sum(t.numpy().nbytes for t in model.state_dict().values())
    int8_bytes = sum(t.numpy().nbytes for t in dynamic.state_dict().values())
    assert int8_bytes < 0.4 * float_bytes


@pytest.mark.parametrize("depth", [64, 3000])  # float32 GEMM path, float64 GEMM path
def test_integer_arithmetic_is_exact(depth):
    bai.manual_seed(1)
    layer = quant.quantize_dynamic(nn.Linear(depth, 5))
    x = np.random.default_rng(2).standard_normal((4, depth)).astype("float32")
    scale, zero_point = dynamic_qparams(np, x)
    codes = quantize(np, x, scale, zero_point, *ACTIVATION_RANGE).astype(np.int64) - zero_point
    sums = codes @ layer.weight.numpy().astype(np.int64).T  # the int32 accumulation, exactly
    expected = sums.astype(np.float32) * (scale * layer.weight_scale.numpy())
    expected += layer.bias.numpy()
    np.testing.assert_array_equal(layer(bai.tensor(x)).numpy(), expected)


def _onnx_agrees(model, x, quantum):
    from buildingai.export import export_onnx, run_onnxruntime

    onnx_model = export_onnx(model, input_signature=[bai.TensorSpec((None, 1, 6, 6))])
    ours = model(bai.tensor(x)).numpy()
    theirs = run_onnxruntime(onnx_model, x)[0]
    assert np.abs(theirs - ours).max() <= quantum * 1.0001
    return onnx_model


def test_static_qdq_onnx_runs_on_int8_kernels_and_equals_buildingai():
    pytest.importorskip("onnxruntime")
    from buildingai.export import check_onnx, float_kernels
    from buildingai.graph import freeze

    static = _calibrated(_net())
    quantum = static.fc2.output_qparams[0]
    onnx_model = _onnx_agrees(static, _images(9, 3), quantum)
    ops = {node.op_type for node in onnx_model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert float_kernels(onnx_model) == []  # QLinearConv and QGemm after fusion
    assert check_onnx(freeze(static, [bai.TensorSpec((None, 1, 6, 6))]), int8=True) == []


def test_dynamic_onnx_equals_buildingai_and_reports_the_float_conv():
    pytest.importorskip("onnxruntime")
    from buildingai.export import check_onnx, float_kernels
    from buildingai.graph import freeze

    dynamic = quant.quantize_dynamic(_net())
    onnx_model = _onnx_agrees(dynamic, _images(9, 4), 1e-5)
    kernels = float_kernels(onnx_model)
    assert len(kernels) == 1 and "Conv" in kernels[0]  # the two Linears are int8
    problems = check_onnx(freeze(dynamic, [bai.TensorSpec((None, 1, 6, 6))]), int8=True)
    assert len(problems) == 1 and "quantized_conv2d" in problems[0] and "in Net.conv" in problems[0]
    assert "quant.prepare" in problems[0]


def test_float_layers_left_in_a_model_are_reported():
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, float_kernels

    partly = quant.quantize_dynamic(_net(), types=(nn.Conv2d,))
    onnx_model = export_onnx(partly, input_signature=[bai.TensorSpec((None, 1, 6, 6))])
    assert len(float_kernels(onnx_model)) == 3


@pytest.mark.parametrize("per_channel", [False, True])
def test_fake_quantize_values_and_straight_through_gradient_match_torch(per_channel):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 6)) * 3).astype("float32")
    if per_channel:
        scale = np.array([0.02, 0.03, 0.05, 0.01], dtype="float32")
        zero_point = np.zeros(4, dtype=np.int8)
        qmin, qmax, axis = -127, 127, 0
    else:
        scale, zero_point = np.float32(0.02), np.uint8(100)
        qmin, qmax, axis = 0, 255, None
    ours = bai.tensor(x, requires_grad=True)
    out = quant.FAKE_QUANTIZE(
        ours, bai.tensor(scale), bai.tensor(zero_point), qmin=qmin, qmax=qmax, axis=axis
    )
    weights = rng.standard_normal(x.shape).astype("float32")
    (out * bai.tensor(weights)).sum().backward()

    theirs = torch.tensor(x, requires_grad=True)
    if per_channel:
        expected = torch.fake_quantize_per_channel_affine(
            theirs, torch.tensor(scale), torch.zeros(4, dtype=torch.int32), 0, qmin, qmax
        )
    else:
        expected = torch.fake_quantize_per_tensor_affine(theirs, 0.02, 100, qmin, qmax)
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    clamped = ours.grad.numpy() == 0
    assert clamped.any() and (~clamped).any()  # both sides of the range are exercised


def test_observers():
    minmax, moving = quant.MinMaxObserver(), quant.MovingAverageMinMaxObserver(0.5)
    for batch in (np.array([-1.0, 2.0]), np.array([0.0, 4.0])):
        minmax.observe(batch)
        moving.observe(batch)
    assert minmax.range() == (-1.0, 4.0)
    assert moving.range() == (-0.5, 3.0)
    scale, zero_point = minmax.qparams()
    assert np.isclose(scale, 5.0 / 255) and zero_point == 51
    percentile = quant.PercentileObserver(percentile=99.0)
    values = np.random.default_rng(0).uniform(-1, 1, 100_000)
    percentile.observe(np.concatenate([values, [50.0]]))  # one outlier
    low, high = percentile.range()
    assert -1.01 < low < -0.95 and 0.95 < high < 1.05
    with pytest.raises(RuntimeError, match="run calibration batches"):
        quant.MinMaxObserver().qparams()


def test_quantisation_aware_training_then_convert():
    model = _net().train()
    qat = quant.prepare_qat(model, inplace=False)
    assert isinstance(qat.fc1, quant.QATLinear) and qat.fc1.weight is not model.fc1.weight
    optimizer = bai.optim.Adam(qat.parameters(), lr=1e-2)
    rng = np.random.default_rng(6)
    target = bai.tensor(rng.integers(0, 3, 32))
    x = bai.tensor(_images(32, 7))
    losses = []
    for _ in range(10):
        loss = nn.functional.cross_entropy(qat(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    qat.eval()
    converted = quant.convert(qat)
    assert isinstance(converted.fc1, quant.QuantizedLinear)
    with bai.no_grad():
        fake, real = qat(x).numpy(), converted(x).numpy()
    # the int8 model computes what training simulated, up to a few output quanta
    assert np.abs(fake - real).max() <= 4 * converted.fc2.output_qparams[0]


def test_lstm_weights_only():
    bai.manual_seed(2)
    model = nn.LSTM(8, 16, batch_first=True).eval()
    dynamic = quant.quantize_dynamic(model)
    assert dynamic.weight_ih_l0_int8.dtype == np.int8 and not list(dynamic.parameters())
    x = bai.tensor(np.random.default_rng(8).standard_normal((2, 5, 8)).astype("float32"))
    with bai.no_grad():
        expected, _ = model(x)
        got, _ = dynamic(x)
    assert np.abs(got.numpy() - expected.numpy()).max() < 0.02


def test_convert_without_prepare_names_the_fix():
    with pytest.raises(quant.QuantizationError, match="quant.prepare"):
        quant.convert(_net())


def test_the_workflow_as_users_write_it():
    model = _net()
    reference = _net()
    dynamic = quant.quantize_dynamic(model)
    calibration_batches = [bai.tensor(_images(16, seed)) for seed in range(3)]
    quant.prepare(model, observer=quant.PercentileObserver)
    with bai.no_grad():
        for images in calibration_batches:
            model(images)
    quant.convert(model)
    assert isinstance(model.fc1, quant.QuantizedLinear) and isinstance(
        dynamic.conv, quant.QuantizedConv2d
    )
    assert _max_error(model, reference, _images(8, 9)) < 0.05


def test_qat_in_place_keeps_the_optimizer_working():
    model = _net().train()
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    quant.prepare_qat(model)
    before = model.fc1.weight.numpy()
    loss = nn.functional.cross_entropy(
        model(bai.tensor(_images(8, 1))), bai.tensor(np.arange(8) % 3)
    )
    loss.backward()
    optimizer.step()
    assert not np.array_equal(model.fc1.weight.numpy(), before)


def test_qat_model_exports_as_qdq_and_matches_onnxruntime():
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime

    qat = quant.prepare_qat(_net().train())
    with bai.no_grad():
        for seed in range(3):
            qat(bai.tensor(_images(8, seed)))  # the observers see a few batches
    qat.eval()
    onnx_model = export_onnx(qat, input_signature=[bai.TensorSpec((None, 1, 6, 6))])
    assert sum(node.op_type == "QuantizeLinear" for node in onnx_model.graph.node) == 9
    x = _images(5, 10)
    with bai.no_grad():
        ours = qat(bai.tensor(x)).numpy()
    quantum = qat.fc2.output_fake_quant.qparams()[0]
    assert np.abs(run_onnxruntime(onnx_model, x)[0] - ours).max() <= quantum * 1.0001


def test_weight_only_lstm_exports_and_is_reported():
    pytest.importorskip("onnxruntime")
    from buildingai.export import check_onnx, export_onnx, float_kernels, run_onnxruntime
    from buildingai.graph import freeze

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, batch_first=True)

        def forward(self, x):  # (N, T, 4) -> (N, T, 8)
            return self.lstm(x)[0]

    bai.manual_seed(3)
    model = quant.quantize_dynamic(Tagger().eval())
    signature = [bai.TensorSpec((None, 5, 4))]
    problems = check_onnx(freeze(model, signature), int8=True)
    assert problems and all("weight-only int8" in line for line in problems)
    onnx_model = export_onnx(model, input_signature=signature)
    x = np.random.default_rng(11).standard_normal((3, 5, 4)).astype("float32")
    with bai.no_grad():
        ours = model(bai.tensor(x)).numpy()
    np.testing.assert_allclose(run_onnxruntime(onnx_model, x)[0], ours, atol=1e-5)
    assert float_kernels(onnx_model)  # the recurrence itself runs in float


def test_attention_projections_stay_float():
    bai.manual_seed(4)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True).eval()
    x = bai.tensor(np.random.default_rng(12).standard_normal((2, 5, 16)).astype("float32"))
    dynamic = quant.quantize_dynamic(layer)
    assert isinstance(dynamic.linear1, quant.QuantizedLinear)
    assert isinstance(dynamic.self_attn.out_proj, nn.Linear)  # attention reads its weight
    with bai.no_grad():
        expected, got = layer(x).numpy(), dynamic(x).numpy()
    assert np.abs(got - expected).max() < 0.05 * np.abs(expected).max()
