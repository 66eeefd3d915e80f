"""``Tensor.unfold(dimension, size, step)`` against PyTorch: its documented example, windows on
every axis with gradients, patches by two unfolds, integer tensors, errors, and frozen,
compiled and exported graphs (the records are swept by tests/ops/op_cases/shape.py:
unfold_axis and its adjoint)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError

torch = pytest.importorskip("torch")


def test_pytorchs_example_runs_as_written():
    """torch.Tensor.unfold's documented example, with only the import changed."""
    torch = bai
    x = torch.arange(1.0, 8)
    np.testing.assert_array_equal(x.unfold(0, 2, 1).numpy(), [[1, 2], [2, 3], [3, 4], [4, 5],
                                                             [5, 6], [6, 7]])  # fmt: skip
    np.testing.assert_array_equal(x.unfold(0, 2, 2).numpy(), [[1, 2], [3, 4], [5, 6]])


@pytest.mark.parametrize(
    "dimension, size, step",
    [(1, 3, 2), (1, 4, 1), (-1, 2, 2), (0, 3, 1), (1, 10, 3), (1, 2, 5), (2, 0, 1)],
)
def test_windows_match_pytorch_with_gradients(dimension, size, step):
    rng = np.random.default_rng(0)
    array = rng.standard_normal((3, 10, 4))
    x, tx = bai.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    windows, expected = x.unfold(dimension, size, step), tx.unfold(dimension, size, step)
    np.testing.assert_array_equal(windows.numpy(), expected.detach().numpy())
    upstream = rng.standard_normal(tuple(expected.shape))
    (windows * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_patches_by_two_unfolds_match_pytorch():
    """A vision model's patches: (N, C, H, W) -> (N, C, H / p, W / p, p, p)."""
    array = np.random.default_rng(1).standard_normal((2, 3, 8, 12)).astype(np.float32)
    x, tx = bai.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    patches = x.unfold(2, 4, 4).unfold(3, 4, 4)
    expected = tx.unfold(2, 4, 4).unfold(3, 4, 4)
    assert patches.shape == (2, 3, 2, 3, 4, 4)
    np.testing.assert_array_equal(patches.numpy(), expected.detach().numpy())
    (patches**2).sum().backward()
    (expected**2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_integer_tensors_unfold():
    x = bai.tensor(np.arange(12).reshape(3, 4))
    got = x.unfold(1, 2, 1)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.numpy(), torch.arange(12).reshape(3, 4).unfold(1, 2, 1))


def test_bad_windows_name_the_op_and_the_sizes():
    x = bai.zeros(3, 5)
    with pytest.raises(
        ShapeError, match=r"\[unfold_axis\] windows of size 6 .* dimension 1 of size 5"
    ):
        x.unfold(1, 6, 1)
    with pytest.raises(ShapeError, match=r"\[unfold_axis\].*step 0"):
        x.unfold(1, 2, 0)
    with pytest.raises(ShapeError, match=r"\[unfold\] axis 2 is out of range"):
        x.unfold(2, 2, 1)
    with pytest.raises(ShapeError, match=r"\[unfold\] a 0-d tensor"):
        bai.tensor(1.0).unfold(0, 1, 1)


def test_frozen_compiled_and_exported_graphs_agree_with_eager():
    from buildingai.graph import freeze

    def frames(signal):  # framing a batch of signals, as before a spectrogram
        return signal.unfold(-1, 8, 4).abs().sum(-1)

    rng = np.random.default_rng(2)
    frozen = freeze(frames, [bai.TensorSpec((None, 40), "float32")])
    compiled = bai.compile(frames)
    for _ in range(2):
        x = rng.standard_normal((3, 40)).astype(np.float32)
        eager = frames(bai.tensor(x)).numpy()
        np.testing.assert_array_equal(frozen(x).numpy(), eager)
        np.testing.assert_array_equal(compiled(bai.tensor(x)).numpy(), eager)
    onnxruntime = pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx

    session = onnxruntime.InferenceSession(export_onnx(frozen).SerializeToString())
    x = rng.standard_normal((5, 40)).astype(np.float32)
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, frames(bai.tensor(x)).numpy(), rtol=1e-6)
