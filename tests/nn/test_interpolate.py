"""``nn.functional.interpolate`` and ``nn.Upsample`` against PyTorch in float64: every mode on
3-D, 4-D and 5-D inputs, up and down, by size and by scale factor, with align_corners and
recompute_scale_factor; gradients, second derivatives and finite differences."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn
from buildingai.errors import BuildingAIError, ShapeError
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")

# (mode, input shape, keyword arguments): up and down, sizes and factors
CASES = [
    ("nearest", (2, 3, 5), {"size": 8}),
    ("nearest", (2, 3, 5), {"size": 3}),
    ("nearest", (1, 2, 4, 5), {"size": (7, 3)}),
    ("nearest", (1, 2, 4, 5), {"scale_factor": 2}),
    ("nearest", (1, 2, 4, 5), {"scale_factor": 2.1}),
    ("nearest", (1, 2, 3, 4, 2), {"scale_factor": (1.5, 0.5, 2.5)}),
    ("nearest-exact", (2, 2, 5), {"scale_factor": 1.7}),
    ("nearest-exact", (1, 2, 6, 5), {"size": (4, 9)}),
    ("nearest-exact", (1, 1, 3, 4, 5), {"size": (5, 2, 3)}),
    ("area", (2, 2, 7), {"size": 3}),
    ("area", (1, 2, 6, 5), {"size": (4, 2)}),
    ("area", (1, 2, 6, 5), {"scale_factor": 0.5}),
    ("area", (1, 1, 4, 5, 6), {"size": (2, 3, 4)}),
    ("area", (1, 2, 3, 4), {"size": (5, 7)}),
    ("linear", (2, 3, 5), {"size": 9}),
    ("linear", (2, 3, 5), {"size": 1}),
    ("linear", (2, 3, 7), {"scale_factor": 0.6}),
    ("bilinear", (1, 2, 4, 5), {"size": (7, 3)}),
    ("bilinear", (1, 2, 4, 5), {"scale_factor": 1.5}),
    ("bilinear", (1, 2, 8, 6), {"scale_factor": (0.5, 0.4)}),
    ("bicubic", (1, 2, 4, 5), {"size": (9, 3)}),
    ("bicubic", (1, 2, 5, 6), {"scale_factor": 2.5}),
    ("bicubic", (1, 2, 7, 6), {"scale_factor": 0.45}),
    ("trilinear", (1, 2, 3, 4, 2), {"size": (5, 3, 4)}),
    ("trilinear", (1, 1, 4, 3, 5), {"scale_factor": 1.5}),
]


# align_corners applies to the interpolating modes only
WITH_CORNERS = [
    (mode, shape, kwargs, corners)
    for mode, shape, kwargs in CASES
    for corners in ((None, False, True) if mode in INTERPOLATING else (None,))
]


@pytest.mark.parametrize(
    ("mode", "shape", "kwargs", "align_corners"),
    WITH_CORNERS,
    ids=[f"{m}-{len(s)}d-{k}-corners={c}" for m, s, k, c in WITH_CORNERS],
)
def test_values_and_derivatives_match_torch(mode, shape, kwargs, align_corners):
    options = dict(kwargs, mode=mode, align_corners=align_corners)
    check_op(
        lambda x: F.interpolate(x, **options),
        shape,
        torch_fn=lambda x: TF.interpolate(x, **options),
        gradgrad=True,
    )


@pytest.mark.parametrize("mode", ["nearest", "linear", "area"])
@pytest.mark.parametrize("factor", [0.7, 1.5, 2.5])
def test_recompute_scale_factor_matches_torch(mode, factor):
    check_op(
        lambda x: F.interpolate(x, scale_factor=factor, mode=mode, recompute_scale_factor=True),
        (2, 2, 7),
        torch_fn=lambda x: TF.interpolate(
            x, scale_factor=factor, mode=mode, recompute_scale_factor=True
        ),
    )


def test_a_scale_factor_sets_the_mapping_unless_recomputed():
    # 5 * 2.3 = 11.5 -> 11 pixels: the factor 2.3 maps coordinates, not 11 / 5
    x = bai.tensor(np.arange(5.0).reshape(1, 1, 5))
    kept = F.interpolate(x, scale_factor=2.3, mode="linear")
    recomputed = F.interpolate(x, scale_factor=2.3, mode="linear", recompute_scale_factor=True)
    assert kept.shape == recomputed.shape == (1, 1, 11)
    assert not np.allclose(kept.numpy(), recomputed.numpy())
    np.testing.assert_allclose(recomputed.numpy(), F.interpolate(x, size=11, mode="linear").numpy())


@pytest.mark.parametrize("factor", [2.1, 1.0001])
def test_nearest_gradient_is_the_transpose_of_the_forward(factor):
    # On 1-D and 3-D inputs whose output is 2x or 1x the input, PyTorch's forward maps output i
    # to floor(i / factor) but its backward to floor(i / 2) (or i): its gradient is not that of
    # its forward. Ours is; the values equal PyTorch's, the gradient agrees with finite
    # differences.
    array = np.random.default_rng(0).standard_normal((1, 2, 4))
    x = bai.tensor(array, requires_grad=True)
    out = F.interpolate(x, scale_factor=factor, mode="nearest")
    expected = TF.interpolate(torch.tensor(array), scale_factor=factor, mode="nearest")
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    bai.debug.gradcheck(lambda t: F.interpolate(t, scale_factor=factor, mode="nearest"), [x])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lower_precision_stays_in_its_dtype(dtype):
    array = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(dtype)
    for mode in ("nearest", "bilinear", "bicubic", "area"):
        out = F.interpolate(bai.tensor(array), scale_factor=2, mode=mode)
        assert out.dtype == dtype
        expected = TF.interpolate(torch.tensor(array.astype(np.float32)), scale_factor=2, mode=mode)
        np.testing.assert_allclose(out.numpy().astype(np.float32), expected.numpy(), atol=5e-3)


UPSAMPLE = [
    ("Upsample nearest", lambda m: m.Upsample(scale_factor=2), (1, 2, 3, 4)),
    ("Upsample bilinear", lambda m: m.Upsample(size=(5, 7), mode="bilinear"), (1, 2, 3, 4)),
    (
        "Upsample bicubic corners",
        lambda m: m.Upsample(scale_factor=1.5, mode="bicubic", align_corners=True),
        (1, 2, 3, 4),
    ),
    ("Upsample linear", lambda m: m.Upsample(scale_factor=3, mode="linear"), (2, 2, 4)),
    ("Upsample trilinear", lambda m: m.Upsample(size=4, mode="trilinear"), (1, 1, 2, 3, 2)),
    (
        "Upsample recompute",
        lambda m: m.Upsample(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        (1, 1, 3, 4),
    ),
    ("UpsamplingNearest2d", lambda m: m.UpsamplingNearest2d(scale_factor=3), (1, 2, 3, 2)),
    ("UpsamplingBilinear2d", lambda m: m.UpsamplingBilinear2d(size=(5, 4)), (1, 2, 3, 2)),
]


@pytest.mark.parametrize(("name", "make", "shape"), UPSAMPLE, ids=[u[0] for u in UPSAMPLE])
def test_upsample_modules_match_torch(name, make, shape):
    check_op(make(nn), shape, torch_fn=make(torch.nn))


def test_upsample_repr_and_upsample_function():
    for kwargs in ({"scale_factor": 2}, {"scale_factor": (2, 3)}, {"size": 3}):
        assert repr(nn.Upsample(**kwargs)) == repr(torch.nn.Upsample(**kwargs))
    assert repr(nn.Upsample(scale_factor=2.0, mode="bilinear")) == (
        "Upsample(scale_factor=2.0, mode='bilinear')"
    )
    x = bai.tensor(np.ones((1, 1, 2, 2)))
    assert F.upsample(x, scale_factor=2).shape == (1, 1, 4, 4)


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's deprecation notices
@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_older_names_match_torch(name):
    check_op(
        lambda x: getattr(F, name)(x, scale_factor=2),
        (1, 2, 3, 4),
        torch_fn=lambda x: getattr(TF, name)(x, scale_factor=2),
    )


def test_errors_name_the_op_the_values_and_the_fix():
    x = bai.tensor(np.ones((1, 2, 4, 4)))
    with pytest.raises(ShapeError, match=r"\[interpolate\] mode 'linear' needs a 3-D input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(ShapeError, match=r"mode 'nearest' needs a 3-D, 4-D or 5-D input"):
        F.interpolate(bai.tensor(np.ones(4)), size=3)
    with pytest.raises(BuildingAIError, match=r"align_corners can only be set"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(BuildingAIError, match=r"exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(BuildingAIError, match=r"exactly one of size and scale_factor"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(BuildingAIError, match=r"unknown mode 'cubic'"):
        F.interpolate(x, size=3, mode="cubic")
    with pytest.raises(ShapeError, match=r"size=\(3, 3, 3\) has 3 entries but the input has 2"):
        F.interpolate(x, size=(3, 3, 3))
    with pytest.raises(ShapeError, match=r"output size \(0, 0\)"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(BuildingAIError, match=r"recompute_scale_factor applies only"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(BuildingAIError, match=r"antialias=True is not supported"):
        F.interpolate(x, size=3, mode="bilinear", antialias=True)


def test_area_to_an_empty_output_is_empty_as_in_torch():
    out = F.interpolate(bai.tensor(np.ones((2, 2, 1, 1))), scale_factor=0.5, mode="area")
    assert out.shape == (2, 2, 0, 0)


def test_nearest_keeps_integer_images_and_weighted_modes_give_floats():
    image = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    for mode in ("nearest", "nearest-exact"):
        out = F.interpolate(bai.tensor(image), scale_factor=1.5, mode=mode)
        expected = TF.interpolate(torch.tensor(image), scale_factor=1.5, mode=mode)
        assert out.dtype == np.uint8
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert F.interpolate(bai.tensor(image), size=5, mode="bilinear").dtype == np.float32


@pytest.mark.parametrize(
    ("mode", "kwargs"),
    [
        ("nearest", {"size": (3, 7)}),
        ("area", {"size": (2, 3)}),
        ("area", {"size": (9, 11)}),
        ("bilinear", {"scale_factor": 1.5}),
        ("bicubic", {"size": (5, 4)}),
    ],
)
def test_nan_and_inf_reach_only_the_outputs_that_read_them(mode, kwargs):
    image = np.random.default_rng(2).standard_normal((1, 1, 6, 7))
    image[0, 0, 1, 2], image[0, 0, 4, 5] = np.nan, np.inf
    with np.errstate(invalid="ignore"):
        out = F.interpolate(bai.tensor(image), mode=mode, **kwargs).numpy()
    expected = TF.interpolate(torch.tensor(image), mode=mode, **kwargs).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12)
