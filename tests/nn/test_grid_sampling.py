"""``affine_grid`` and ``grid_sample`` against PyTorch: every mode, padding mode and
align_corners, 4-D and 5-D, float32 and float64 values, float64 gradients to the input, the grid
and theta, grid points on pixel centres, borders and far outside, a small spatial transformer
trained for a few steps, the errors, and a compiled call."""

import itertools
import warnings

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn
from buildingai.debug import gradcheck, gradgradcheck
from buildingai.errors import ArgumentError, DTypeError, ShapeError

torch = pytest.importorskip("torch")
TF = torch.nn.functional

PADDINGS = ("zeros", "border", "reflection")
CASES_2D = list(itertools.product(("bilinear", "nearest", "bicubic"), PADDINGS, (False, True)))
CASES_3D = list(itertools.product(("bilinear", "nearest"), PADDINGS, (False, True)))


def _special_points(sizes, align_corners: bool) -> np.ndarray:
    """Normalised coordinates (k,) per point: every pixel centre, the midpoints between them
    (ties for 'nearest'), the outer edges -1 and 1, and points far outside, for an input of
    spatial ``sizes`` (listed x first)."""
    per_axis = []
    for size in sizes:
        if align_corners:
            centres = -1 + 2 * np.arange(size) / max(size - 1, 1)
        else:
            centres = (2 * np.arange(size) + 1) / size - 1
        midpoints = (centres[:-1] + centres[1:]) / 2
        per_axis.append(np.concatenate([centres, midpoints, [-1.0, 1.0, -3.0, 2.5]]))
    return np.array(list(itertools.product(*per_axis)))


def _grid(rng, batch: int, out_spatial: tuple, sizes: tuple, align_corners: bool) -> np.ndarray:
    """A grid (N, *out_spatial, k): random points reaching past [-1, 1], with the special points
    of ``_special_points`` (a random choice of them if there are more) written over them."""
    k = len(sizes)
    grid = rng.uniform(-1.6, 1.6, (batch, *out_spatial, k))
    flat = grid.reshape(batch, -1, k)
    special = rng.permutation(_special_points(sizes, align_corners))[: flat.shape[1]]
    flat[:, : len(special)] = special
    return flat.reshape(grid.shape)


def _compare(input_shape, grid_shape, mode, padding_mode, align_corners, seed=0):
    """Values in float32 and float64, and float64 gradients to input and grid, against torch."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(input_shape)
    sizes = tuple(reversed(input_shape[2:]))  # x first, as the grid lists them
    grid = _grid(rng, input_shape[0], grid_shape[1:-1], sizes, align_corners)
    for dtype in (np.float32, np.float64):
        ours = F.grid_sample(
            bai.tensor(x.astype(dtype)), bai.tensor(grid.astype(dtype)), mode, padding_mode,
            align_corners,
        )  # fmt: skip
        theirs = TF.grid_sample(
            torch.tensor(x.astype(dtype)), torch.tensor(grid.astype(dtype)), mode, padding_mode,
            align_corners,
        )  # fmt: skip
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        tolerance = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance)

    x_ours, grid_ours = bai.tensor(x, requires_grad=True), bai.tensor(grid, requires_grad=True)
    x_theirs, grid_theirs = (
        torch.tensor(x, requires_grad=True),
        torch.tensor(grid, requires_grad=True),
    )
    out_ours = F.grid_sample(x_ours, grid_ours, mode, padding_mode, align_corners)
    out_theirs = TF.grid_sample(x_theirs, grid_theirs, mode, padding_mode, align_corners)
    weights = rng.standard_normal(tuple(out_theirs.shape))
    (out_ours * bai.tensor(weights)).sum().backward()
    (out_theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(
        grid_ours.grad.numpy(), grid_theirs.grad.numpy(), rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize(("mode", "padding_mode", "align_corners"), CASES_2D)
def test_grid_sample_2d_matches_pytorch(mode, padding_mode, align_corners):
    _compare((2, 3, 4, 5), (2, 11, 13, 2), mode, padding_mode, align_corners)


@pytest.mark.parametrize(("mode", "padding_mode", "align_corners"), CASES_3D)
def test_grid_sample_3d_matches_pytorch(mode, padding_mode, align_corners):
    _compare((2, 2, 3, 4, 5), (2, 4, 5, 6, 3), mode, padding_mode, align_corners)


@pytest.mark.parametrize(
    ("mode", "padding_mode"), [("bilinear", "reflection"), ("nearest", "zeros")]
)
def test_grid_sample_one_pixel_axes(mode, padding_mode):
    """An input one pixel high or wide: reflection has nothing to mirror between."""
    for align_corners in (False, True):
        _compare((1, 2, 1, 4), (1, 3, 5, 2), mode, padding_mode, align_corners, seed=1)


def test_nearest_gives_the_grid_a_zero_gradient():
    grid = bai.tensor(np.random.default_rng(0).uniform(-1, 1, (1, 3, 3, 2)), requires_grad=True)
    out = F.grid_sample(bai.ones(1, 1, 4, 4, dtype="float64"), grid, "nearest", align_corners=True)
    out.sum().backward()
    assert grid.grad is not None and not grid.grad.numpy().any()


def test_second_derivatives_by_finite_differences():
    rng = np.random.default_rng(3)
    x = bai.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    grid = bai.tensor(rng.uniform(-1.2, 1.2, (1, 2, 3, 2)), requires_grad=True)
    for mode in ("bilinear", "bicubic"):

        def sample(x, grid, mode=mode):
            return F.grid_sample(x, grid, mode, "reflection", align_corners=False)

        assert gradcheck(sample, [x, grid])
        assert gradgradcheck(sample, [x, grid])


# ----- affine_grid -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "align_corners"),
    list(itertools.product([(2, 3, 5, 7), (2, 1, 1, 4), (2, 3, 3, 4, 5)], (False, True))),
)
def test_affine_grid_matches_pytorch(size, align_corners):
    rng = np.random.default_rng(0)
    rank = len(size) - 2
    theta = rng.standard_normal((size[0], rank, rank + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit-size warning, PyTorch's as ours
        for dtype in (np.float32, np.float64):
            ours = F.affine_grid(bai.tensor(theta.astype(dtype)), size, align_corners)
            theirs = TF.affine_grid(torch.tensor(theta.astype(dtype)), size, align_corners)
            tolerance = 1e-6 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance)
            assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        theta_ours = bai.tensor(theta, requires_grad=True)
        theta_theirs = torch.tensor(theta, requires_grad=True)
        weights = rng.standard_normal((size[0], *size[2:], rank))
        (F.affine_grid(theta_ours, size, align_corners) * bai.tensor(weights)).sum().backward()
        (TF.affine_grid(theta_theirs, size, align_corners) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(theta_ours.grad.numpy(), theta_theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_identity_theta_gives_back_the_input(mode, align_corners):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6))
    theta = bai.tensor(np.tile([[1.0, 0, 0], [0, 1, 0]], (2, 1, 1)))
    grid = F.affine_grid(theta, (2, 3, 5, 6), align_corners=align_corners)
    out = F.grid_sample(bai.tensor(x), grid, mode, align_corners=align_corners)
    np.testing.assert_allclose(out.numpy(), x, atol=1e-12)


def test_theta_gradient_through_sampling_matches_pytorch():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 5))
    theta = np.tile([[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]], (2, 1, 1)) + 0.1 * rng.random((2, 2, 3))
    results = []
    for lib, functional in ((bai, F), (torch, TF)):
        theta_tensor = lib.tensor(theta, requires_grad=True)
        grid = functional.affine_grid(theta_tensor, (2, 3, 4, 7), align_corners=False)
        out = functional.grid_sample(
            lib.tensor(x), grid, padding_mode="border", align_corners=False
        )
        (out**2).sum().backward()
        results.append((out.detach().numpy(), theta_tensor.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_align_corners_none_warns_and_means_false():
    x, theta = bai.randn(1, 1, 3, 4, dtype="float64"), bai.randn(1, 2, 3, dtype="float64")
    with pytest.warns(UserWarning, match="align_corners=False"):
        grid = F.affine_grid(theta, (1, 1, 3, 4))
    with pytest.warns(UserWarning, match="align_corners=False"):
        out = F.grid_sample(x, grid)
    expected = F.grid_sample(x, F.affine_grid(theta, (1, 1, 3, 4), False), align_corners=False)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


# ----- a spatial transformer ---------------------------------------------------------------------


class _Transformer:
    """Localisation (Linear -> theta) -> affine_grid -> grid_sample -> Linear classifier, for
    either library, from the same weights."""

    def __init__(self, lib, functional, layers, weights):
        self.lib, self.functional = lib, functional
        self.localisation, self.classifier = layers.Linear(16, 6), layers.Linear(16, 3)
        for layer, (weight, bias) in zip((self.localisation, self.classifier), weights):
            with lib.no_grad():
                layer.weight.copy_(lib.tensor(weight))
                layer.bias.copy_(lib.tensor(bias))

    def parameters(self):
        return [*self.localisation.parameters(), *self.classifier.parameters()]

    def loss(self, x, target):
        theta = self.localisation(x.reshape(x.shape[0], -1)).reshape(-1, 2, 3)
        grid = self.functional.affine_grid(theta, x.shape, align_corners=False)
        moved = self.functional.grid_sample(x, grid, align_corners=False)
        logits = self.classifier(moved.reshape(x.shape[0], -1))
        return self.functional.cross_entropy(logits, target)


def test_spatial_transformer_trains_as_in_pytorch():
    rng = np.random.default_rng(0)
    identity = np.array([1.0, 0, 0, 0, 1, 0])
    weights = [
        (0.05 * rng.standard_normal((6, 16)), identity + 0.05 * rng.standard_normal(6)),
        (0.3 * rng.standard_normal((3, 16)), 0.1 * rng.standard_normal(3)),
    ]
    x, target = rng.standard_normal((5, 1, 4, 4)), rng.integers(0, 3, 5)
    losses = []
    for lib, functional, layers, optim in (
        (bai, F, nn, bai.optim),
        (torch, TF, torch.nn, torch.optim),
    ):
        lib.set_default_dtype(lib.float64)
        try:
            model = _Transformer(lib, functional, layers, weights)
        finally:
            lib.set_default_dtype(lib.float32)
        model_weights = [p for p in model.parameters()]
        optimizer = optim.SGD(model_weights, lr=0.5)
        history = []
        for _ in range(3):
            optimizer.zero_grad()
            loss = model.loss(lib.tensor(x), lib.tensor(target))
            loss.backward()
            optimizer.step()
            history.append(float(loss.item()))
        losses.append(history)
    assert losses[0][0] != losses[0][-1]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)


# ----- errors ------------------------------------------------------------------------------------


def _images(*shape):
    return bai.zeros(*shape)


@pytest.mark.parametrize(
    ("input_shape", "grid_shape", "kwargs", "error", "words"),
    [
        ((1, 1, 4, 4), (1, 2, 2, 2), {"mode": "linear"}, ArgumentError, "mode"),
        ((1, 1, 4, 4), (1, 2, 2, 2), {"padding_mode": "circular"}, ArgumentError, "padding"),
        ((1, 4, 4), (1, 2, 2), {}, ShapeError, "4-D or 5-D"),
        ((1, 1, 4, 4), (1, 2, 2, 2, 2), {}, ShapeError, "same number"),
        ((2, 1, 4, 4), (1, 2, 2, 2), {}, ShapeError, "batch size"),
        ((1, 1, 4, 4), (1, 2, 2, 3), {}, ShapeError, "coordinates"),
        ((1, 1, 0, 4), (1, 2, 2, 2), {}, ShapeError, "non-empty"),
        ((1, 1, 2, 4, 4), (1, 2, 2, 2, 3), {"mode": "bicubic"}, ArgumentError, "bicubic"),
    ],
)
def test_grid_sample_errors(input_shape, grid_shape, kwargs, error, words):
    arguments = dict(kwargs, align_corners=False)
    with pytest.raises(Exception):  # noqa: B017 - PyTorch refuses the same call
        TF.grid_sample(torch.zeros(input_shape), torch.zeros(grid_shape), **arguments)
    with pytest.raises(error, match=words) as caught:
        F.grid_sample(_images(*input_shape), bai.zeros(*grid_shape), **arguments)
    assert "[grid_sample]" in str(caught.value) and caught.value.help


def test_grid_sample_dtype_error():
    with pytest.raises(DTypeError, match="float64"):
        F.grid_sample(
            bai.zeros(1, 1, 2, 2), bai.zeros(1, 2, 2, 2, dtype="float64"), align_corners=True
        )


@pytest.mark.parametrize(
    ("theta_shape", "size", "words"),
    [
        ((1, 2, 3), (1, 1, 4), "4-D sizes"),
        ((1, 2, 3), (1, 1, 2, 3, 4), "3-D affine matrices"),
        ((1, 3, 4), (1, 1, 3, 4), "2-D affine matrices"),
        ((2, 3), (1, 1, 3, 4), "2-D affine matrices"),
        ((1, 2, 3), (1, 1, 0, 4), "positive"),
        ((2, 2, 3), (3, 1, 4, 4), "batch of 3"),
    ],
)
def test_affine_grid_errors(theta_shape, size, words):
    with pytest.raises(Exception):  # noqa: B017 - PyTorch refuses the same call
        TF.affine_grid(torch.zeros(theta_shape), size, align_corners=False)
    with pytest.raises(ShapeError, match=words) as caught:
        F.affine_grid(bai.zeros(*theta_shape), size, align_corners=False)
    assert "[affine_grid]" in str(caught.value) and caught.value.help


def test_affine_grid_needs_a_floating_theta():
    with pytest.raises(ArgumentError, match="floating-point"):
        F.affine_grid(bai.zeros(1, 2, 3, dtype="int64"), (1, 1, 2, 2), align_corners=False)


# ----- tracing -----------------------------------------------------------------------------------


def test_compiled_call_equals_eager():
    def transform(x, theta):
        grid = F.affine_grid(theta, x.shape, align_corners=False)
        return F.grid_sample(x, grid, "bilinear", "reflection", align_corners=False)

    compiled = bai.compile(transform, fullgraph=True)
    rng = np.random.default_rng(0)
    with bai.no_grad():
        for _ in range(2):  # a second call runs the graph traced by the first
            x = bai.tensor(rng.standard_normal((2, 3, 5, 6)))
            theta = bai.tensor(rng.standard_normal((2, 2, 3)))
            np.testing.assert_array_equal(compiled(x, theta).numpy(), transform(x, theta).numpy())
