"""nn.Unfold / nn.Fold and F.unfold / F.fold against PyTorch: values and gradients in float64,
unbatched inputs, PyTorch's own documented examples, errors, and frozen and compiled graphs
(the records themselves are swept by tests/ops/op_cases/linalg.py)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from buildingai.errors import ShapeError

torch = pytest.importorskip("torch")

# (input shape, kernel_size, dilation, padding, stride)
GEOMETRIES = [
    ((2, 3, 7, 8), (2, 3), (1, 2), (1, 0), (2, 1)),
    ((1, 2, 5, 5), 3, 1, 1, 1),
    ((2, 4, 9, 6), 2, 1, 0, 2),  # patches of a vision transformer: stride = kernel
    ((1, 1, 4, 4), (3, 2), 2, 2, (3, 1)),  # padding wider than the dilated kernel reaches
    ((3, 6, 6), 2, 1, 0, 2),  # unbatched
]


def _both(array: np.ndarray):
    return bai.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


@pytest.mark.parametrize("shape, kernel, dilation, padding, stride", GEOMETRIES)
def test_unfold_and_fold_match_pytorch_with_gradients(shape, kernel, dilation, padding, stride):
    rng = np.random.default_rng(0)
    x, tx = _both(rng.standard_normal(shape))
    columns = F.unfold(x, kernel, dilation, padding, stride)
    expected = torch.nn.functional.unfold(tx, kernel, dilation, padding, stride)
    np.testing.assert_allclose(columns.numpy(), expected.detach().numpy(), rtol=0, atol=0)

    upstream = rng.standard_normal(tuple(expected.shape))
    (columns * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)

    size = shape[-2:]
    c, tc = _both(rng.standard_normal(tuple(expected.shape)))
    image = F.fold(c, size, kernel, dilation, padding, stride)
    expected_image = torch.nn.functional.fold(tc, size, kernel, dilation, padding, stride)
    np.testing.assert_allclose(image.numpy(), expected_image.detach().numpy(), rtol=1e-12)
    upstream = rng.standard_normal(shape)
    (image * bai.tensor(upstream)).sum().backward()
    (expected_image * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), tc.grad.numpy(), rtol=0, atol=0)


def test_the_layers_match_pytorch_and_say_what_they_hold():
    rng = np.random.default_rng(1)
    array = rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    unfold = nn.Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)
    reference = torch.nn.Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)
    columns = unfold(bai.tensor(array))
    np.testing.assert_array_equal(columns.numpy(), reference(torch.tensor(array)).numpy())
    fold = nn.Fold(output_size=(6, 7), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)
    folded = torch.nn.Fold((6, 7), (2, 3), (1, 2), 1, 2)(torch.tensor(columns.numpy()))
    np.testing.assert_allclose(fold(columns).numpy(), folded.numpy(), rtol=1e-6)
    assert repr(unfold) == "Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)"
    assert "output_size=(6, 7)" in repr(fold)


def test_pytorchs_unfold_example_runs_as_written():
    """torch.nn.Unfold's documented example, with only the import changed."""
    torch = bai  # noqa: F841 - the example's spelling
    unfold = nn.Unfold(kernel_size=(2, 3))
    input = torch.randn(2, 5, 3, 4)  # noqa: A001 - the example's name
    output = unfold(input)
    # each patch contains 30 values (2x3=6 vectors, each of 5 channels)
    # 4 blocks (2x3 kernels) in total in the 3x4 input
    assert output.size() == (2, 30, 4)

    fold = nn.Fold(output_size=(4, 5), kernel_size=(2, 2))
    input = torch.randn(1, 3 * 2 * 2, 12)  # noqa: A001
    output = fold(input)
    assert output.size() == (1, 3, 4, 5)


def test_pytorchs_convolution_by_unfold_example_runs_as_written():
    """torch.nn.Unfold's documented convolution written as unfold, a product and fold."""
    torch = bai
    inp = torch.randn(1, 3, 10, 12)
    w = torch.randn(2, 3, 4, 5)
    inp_unf = torch.nn.functional.unfold(inp, (4, 5))
    out_unf = inp_unf.transpose(1, 2).matmul(w.view(w.size(0), -1).t()).transpose(1, 2)
    out = torch.nn.functional.fold(out_unf, (7, 8), (1, 1))
    # or equivalently (and avoiding a copy),
    # out = out_unf.view(1, 2, 7, 8)
    assert (torch.nn.functional.conv2d(inp, w) - out).abs().max() < 1e-5


def test_fold_of_unfold_counts_each_pixels_windows():
    """fold(unfold(x)) is x times the number of windows holding each pixel (PyTorch's note)."""
    x = bai.tensor(np.random.default_rng(2).standard_normal((1, 2, 5, 6)))
    geometry = dict(kernel_size=3, padding=1, stride=2)
    counts = F.fold(F.unfold(bai.ones(1, 2, 5, 6, dtype="float64"), **geometry), (5, 6), **geometry)
    folded = F.fold(F.unfold(x, **geometry), (5, 6), **geometry)
    np.testing.assert_allclose(folded.numpy(), (x * counts).numpy(), rtol=1e-12)
    assert counts.numpy().min() >= 1 and counts.numpy().max() == 4


def test_frozen_and_compiled_graphs_agree_with_eager():
    from buildingai.graph import freeze

    def patches_mixed(x):
        columns = F.unfold(x, kernel_size=3, padding=1, stride=2)
        return F.fold(columns * 0.5 + 1.0, (8, 6), kernel_size=3, padding=1, stride=2)

    rng = np.random.default_rng(3)
    frozen = freeze(patches_mixed, [bai.TensorSpec((2, 3, 8, 6), "float32")])
    compiled = bai.compile(patches_mixed)
    for _ in range(2):  # new values each time: nothing of the traced input is kept
        x = rng.standard_normal((2, 3, 8, 6)).astype(np.float32)
        eager = patches_mixed(bai.tensor(x)).numpy()
        np.testing.assert_array_equal(frozen(x).numpy(), eager)
        np.testing.assert_array_equal(compiled(bai.tensor(x)).numpy(), eager)


def test_bad_inputs_name_the_op_and_the_sizes():
    with pytest.raises(ShapeError, match=r"\[unfold\].*4-D.*\(5, 6\)"):
        F.unfold(bai.zeros(5, 6), 2)
    with pytest.raises(ShapeError, match=r"\[unfold\].*holds no window"):
        F.unfold(bai.zeros(1, 1, 2, 2), 3)
    with pytest.raises(ShapeError, match=r"\[fold\].*dimension 1 \(10\).*2 \* 2 = 4"):
        F.fold(bai.zeros(1, 10, 12), (4, 5), 2)
    with pytest.raises(ShapeError, match=r"\[fold\].*11 blocks.*3 \* 4 = 12"):
        F.fold(bai.zeros(1, 12, 11), (4, 5), 2)
    with pytest.raises(ShapeError, match=r"\[fold\].*3-D.*\(12,\)"):
        F.fold(bai.zeros(12), (4, 5), 2)
    with pytest.raises(ShapeError, match=r"\[unfold\].*stride"):
        F.unfold(bai.zeros(1, 1, 4, 4), 2, stride=0)
    with pytest.raises(Exception, match=r"\[unfold\].*floating"):
        F.unfold(bai.tensor(np.zeros((1, 1, 4, 4), np.int64)), 2)


def test_a_model_that_unfolds_and_folds_exports_to_onnx_at_opset_18():
    pytest.importorskip("onnxruntime")
    from buildingai.errors import BuildingAIError
    from buildingai.export import export_onnx
    from buildingai.graph import freeze

    class Patches(nn.Module):
        def __init__(self):
            super().__init__()
            self.unfold = nn.Unfold(kernel_size=2, stride=2)
            self.fold = nn.Fold(output_size=(6, 8), kernel_size=2, stride=2)

        def forward(self, x):
            return self.fold(self.unfold(x).relu())

    static = freeze(Patches().eval(), [bai.TensorSpec((None, 3, 6, 8), "float32")])
    with pytest.raises(BuildingAIError, match=r"\[fold\].*opset 18"):
        export_onnx(static)
    import onnxruntime

    model = export_onnx(static, opset=18)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 8)).astype(np.float32)
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, static(x).numpy(), rtol=1e-6)
