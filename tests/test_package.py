"""The public face of the package: top-level names, dtypes, Tensor methods."""

import numpy as np

import buildingai as bai


def test_subpackages_are_not_shadowed_by_function_families():
    import buildingai.nn as nn_package

    assert bai.nn is nn_package
    assert hasattr(bai.nn, "Module")
    assert bai.optim.__name__ == "buildingai.optim"


def test_dtypes_are_exported_as_numpy_dtypes():
    assert bai.float32 == np.float32
    assert bai.int64 == np.int64
    assert bai.tensor([1.0]).dtype == bai.float32
    assert bai.tensor([1]).dtype == bai.int64
    assert bai.bfloat16.name == "bfloat16"


def test_functions_and_methods_agree():
    x = bai.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(bai.exp(x).numpy(), x.exp().numpy())
    np.testing.assert_allclose(bai.sum(x, axis=1).numpy(), x.sum(dim=1).numpy())
    np.testing.assert_allclose(
        x.sum(axis=0, keepdims=True).numpy(), x.sum(dim=0, keepdim=True).numpy()
    )


def test_size_supports_numpy_and_pytorch_habits():
    x = bai.zeros(2, 3)
    assert x.size == 6
    assert x.size() == (2, 3)
    assert x.size(1) == 3
    assert x.numel() == 6


def test_repr_shows_grad_state():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    assert "requires_grad=True" in repr(x)
    assert "grad_fn=<mul>" in repr(x * 2.0)
    assert "dtype=float64" in repr(bai.tensor(np.zeros(2)))


def test_functional_names_are_functions_not_submodules():
    """A submodule of nn.functional named like a function would hide it (F.linear, F.dropout)."""
    import types

    import buildingai.nn.functional as F

    for name in ["linear", "dropout", "bilinear", "conv2d", "max_pool2d", "layer_norm",
                 "cross_entropy", "scaled_dot_product_attention", "lstm", "relu", "softmax",
                 "embedding", "one_hot", "dropout2d"]:  # fmt: skip
        value = getattr(F, name)
        assert callable(value) and not isinstance(value, types.ModuleType), name
