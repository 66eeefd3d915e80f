"""The export sweep for the activations and ``interpolate``: each frozen and exported alone;
eager == frozen == onnxruntime at two batch sizes. Resize is checked for every mode's
coordinate transform; area mode (adaptive average pooling) exports as AveragePool where its
windows tile the input, else as per-axis MatMuls."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.graph import freeze

from .test_onnx_ops import agree_across_runtimes, floats

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import export_onnx, run_onnxruntime  # noqa: E402

SLOPES = bai.tensor(np.array([0.1, 0.2, 0.3], dtype=np.float32))

CASES = {
    "elu": (lambda x: F.elu(x, alpha=0.5), [floats(3, 4)]),
    "selu": (lambda x: F.selu(x), [floats(3, 4)]),
    "celu": (lambda x: F.celu(x, alpha=2.0), [floats(3, 4)]),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), [floats(3, 4)]),
    "relu6": (lambda x: F.relu6(x), [floats(3, 4, low=-8, high=8)]),
    "hardsigmoid": (lambda x: F.hardsigmoid(x), [floats(3, 4, low=-4, high=4)]),
    "hardswish": (lambda x: F.hardswish(x), [floats(3, 4, low=-4, high=4)]),
    "mish": (lambda x: F.mish(x), [floats(3, 4, low=-5, high=5)]),
    "glu": (lambda x: F.glu(x, dim=1), [floats(4, 3)]),
    "logsigmoid": (lambda x: F.logsigmoid(x), [floats(3, 4, low=-60, high=60)]),
    "softsign": (lambda x: F.softsign(x), [floats(3, 4)]),
    "tanhshrink": (lambda x: F.tanhshrink(x), [floats(3, 4)]),
    "threshold": (lambda x: F.threshold(x, 0.25, -3.0), [floats(3, 4)]),
    "prelu": (lambda x: F.prelu(x, SLOPES), [floats(3, 4)]),
    "prelu_single": (lambda x: F.prelu(x, SLOPES[:1]), [floats(3, 4)]),
    "maximum_binary_max": (lambda x, y: bai.max(x, y), [floats(3, 4), floats(1, 4)]),
    "minimum_binary_min": (lambda x, y: x.min(y), [floats(3, 4), floats(3, 4)]),
}

RESIZE = {
    "nearest_size": ({"size": 7}, (2, 5)),
    "nearest_factor": ({"scale_factor": 2.3}, (2, 4)),
    "nearest_2d_2x": ({"scale_factor": 2.1}, (2, 4, 5)),
    "nearest_3d": ({"size": (3, 5, 2)}, (2, 4, 3, 3)),
    "nearest_exact": ({"size": (5, 3), "mode": "nearest-exact"}, (2, 4, 7)),
    "nearest_exact_factor": ({"scale_factor": 1.7, "mode": "nearest-exact"}, (2, 5)),
    "linear": ({"size": 9, "mode": "linear"}, (2, 5)),
    "linear_one_pixel": ({"size": 1, "mode": "linear"}, (2, 4)),
    "linear_factor": ({"scale_factor": 0.6, "mode": "linear"}, (2, 7)),
    "linear_corners": ({"size": 8, "mode": "linear", "align_corners": True}, (2, 5)),
    "bilinear": ({"size": (7, 3), "mode": "bilinear"}, (2, 4, 5)),
    "bilinear_factor": ({"scale_factor": 1.5, "mode": "bilinear"}, (2, 4, 5)),
    "bilinear_corners": ({"scale_factor": 2, "mode": "bilinear", "align_corners": True}, (2, 3, 4)),
    "bicubic": ({"size": (9, 3), "mode": "bicubic"}, (2, 4, 5)),
    "bicubic_factor": ({"scale_factor": 0.45, "mode": "bicubic"}, (2, 7, 6)),
    "bicubic_corners": ({"size": (6, 6), "mode": "bicubic", "align_corners": True}, (2, 4, 5)),
    "trilinear": ({"size": (5, 3, 4), "mode": "trilinear"}, (1, 3, 4, 2)),
    "trilinear_corners": (
        {"scale_factor": 1.5, "mode": "trilinear", "align_corners": True},
        (1, 4, 3, 5),
    ),
    "area": ({"size": (3, 2), "mode": "area"}, (2, 7, 5)),
    "area_up": ({"size": (5, 7), "mode": "area"}, (2, 3, 4)),
    "area_1d_factor": ({"scale_factor": 0.5, "mode": "area"}, (2, 8)),
    "area_3d": ({"size": (2, 3, 2), "mode": "area"}, (1, 4, 5, 6)),
}

for _name, (_kwargs, _shape) in RESIZE.items():
    CASES[f"interpolate_{_name}"] = (
        lambda x, kwargs=_kwargs: F.interpolate(x, **kwargs),
        [floats(*_shape)],
    )


def _run(function, kinds, opset: int = 17):
    return agree_across_runtimes(function, kinds, opset=opset)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_frozen_onnxruntime_agree(name):
    _run(*CASES[name])


@pytest.mark.parametrize(
    ("mode", "transform"),
    [
        ("nearest", "asymmetric"),
        ("nearest-exact", "half_pixel"),
        ("linear", "half_pixel"),
        ("bicubic", "half_pixel"),
    ],
)
def test_resize_carries_the_coordinate_transform_of_each_mode(mode, transform):
    shape = (2, 4, 5) if mode == "bicubic" else (2, 5)
    model = _run(lambda x: F.interpolate(x, scale_factor=1.5, mode=mode), [floats(*shape)])
    (resize,) = [node for node in model.graph.node if node.op_type == "Resize"]
    attributes = {a.name: a for a in resize.attribute}
    assert attributes["coordinate_transformation_mode"].s.decode() == transform
    if mode == "bicubic":
        assert attributes["cubic_coeff_a"].f == -0.75
    if mode.startswith("nearest"):
        expected = "floor" if mode == "nearest" else "round_prefer_ceil"
        assert attributes["nearest_mode"].s.decode() == expected


def test_area_exports_as_matmuls_and_mish_natively_from_opset_18():
    model = _run(lambda x: F.interpolate(x, size=(3, 2), mode="area"), [floats(2, 7, 5)])
    assert "Resize" not in {node.op_type for node in model.graph.node}
    assert "MatMul" in {node.op_type for node in model.graph.node}
    for opset, native in ((17, False), (18, True)):
        model = _run(lambda x: F.mish(x), [floats(3, low=-5, high=5)], opset=opset)
        assert ("Mish" in {node.op_type for node in model.graph.node}) == native


@pytest.mark.parametrize(
    "function",
    [
        lambda x: F.interpolate(x, size=(2, 3), mode="area"),
        lambda x: F.avg_pool2d(x, 2),
        lambda x: F.avg_pool2d(x, (3, 2)),  # a row left over, dropped as PyTorch drops it
        lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
    ],
    ids=["interpolate", "avg_pool2d", "avg_pool2d_floor", "adaptive_avg_pool2d"],
)
def test_tiling_windows_export_as_average_pooling(function):
    """Average pooling over windows side by side runs as mode "area"; it exports as
    AveragePool (kernel = strides = the window), not as matrices."""
    model = _run(function, [floats(4, 8, 6)])
    kinds = {node.op_type for node in model.graph.node}
    assert "AveragePool" in kinds and "MatMul" not in kinds


def test_a_model_with_the_new_modules_freezes_and_exports():
    model = bai.nn.Sequential(
        bai.nn.Conv2d(3, 4, 3, padding=1),
        bai.nn.PReLU(4),
        bai.nn.Upsample(scale_factor=2, mode="bilinear"),
        bai.nn.Hardswish(),
        bai.nn.GLU(dim=1),
    ).eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype(np.float32)
    eager = model(bai.tensor(x)).numpy()
    static = freeze(model, [bai.TensorSpec((None, 3, 5, 6), "float32")])
    np.testing.assert_array_equal(static(x).numpy(), eager)
    exported = run_onnxruntime(export_onnx(static), x)[0]
    assert exported.shape == eager.shape == (2, 2, 10, 12)
    np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic", "nearest-exact"])
def test_symbolic_spatial_sizes_with_whole_factors_freeze_and_export(mode):
    function = lambda x: F.interpolate(x, scale_factor=2, mode=mode)  # noqa: E731
    static = freeze(function, [bai.TensorSpec((None, 2, None, None), "float32")])
    model = export_onnx(static)
    for shape in ((1, 2, 3, 5), (2, 2, 4, 4)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        eager = function(bai.tensor(x)).numpy()
        assert eager.shape == shape[:2] + (2 * shape[2], 2 * shape[3])
        np.testing.assert_array_equal(static(x).numpy(), eager)
        np.testing.assert_allclose(run_onnxruntime(model, x)[0], eager, rtol=1e-5, atol=1e-5)


def test_symbolic_sizes_that_cannot_stay_symbolic_are_refused_with_the_fix():
    signature = [bai.TensorSpec((None, 2, None, None), "float32")]
    with pytest.raises(bai.BuildingAIError, match=r"scale_factor=1.5 on a symbolic spatial size"):
        freeze(lambda x: F.interpolate(x, scale_factor=1.5), signature)
    static = freeze(lambda x: F.interpolate(x, scale_factor=2, mode="area"), signature)
    with pytest.raises(bai.BuildingAIError, match=r"mode 'area' needs fixed spatial sizes"):
        export_onnx(static)


def test_a_size_computed_from_symbolic_sizes_stays_symbolic_and_exports():
    function = lambda x: F.interpolate(x, size=(x.shape[2] * 3, 4), mode="bilinear")  # noqa: E731
    static = freeze(function, [bai.TensorSpec((None, 2, None, 5), "float32")])
    model = export_onnx(static)
    for shape in ((1, 2, 3, 5), (2, 2, 6, 5)):
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        eager = function(bai.tensor(x)).numpy()
        assert eager.shape == shape[:2] + (3 * shape[2], 4)
        np.testing.assert_array_equal(static(x).numpy(), eager)
        np.testing.assert_allclose(run_onnxruntime(model, x)[0], eager, rtol=1e-5, atol=1e-5)
