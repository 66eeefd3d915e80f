"""The process-wide settings PyTorch programs make at their top: set_default_dtype,
set_float32_matmul_precision and use_deterministic_algorithms, as torch's."""

import numpy as np
import pytest

import buildingai as bai
import buildingai as torch  # the spelling a ported program uses


@pytest.fixture
def restored():
    dtype, precision = bai.get_default_dtype(), bai.get_math_precision()
    yield
    bai.set_default_dtype(dtype)
    bai.set_math_precision(precision)
    bai.use_deterministic_algorithms(False)


def test_set_default_dtype_changes_floats_factories_layers_and_promotion(restored):
    torch.set_default_dtype(torch.float64)
    assert torch.get_default_dtype() == torch.float64
    assert torch.tensor([1.0, 2.0]).dtype == np.float64
    assert torch.zeros(2).dtype == np.float64 and torch.randn(2, 3).dtype == np.float64
    assert torch.nn.Linear(3, 2).weight.dtype == np.float64
    assert (torch.tensor([1, 2]) * 0.5).dtype == np.float64  # int * Python float
    torch.set_default_dtype(torch.float32)
    assert torch.tensor([1.0]).dtype == np.float32


def test_set_default_dtype_refuses_integers(restored):
    with pytest.raises(TypeError, match="floating dtype"):
        torch.set_default_dtype(torch.int64)


def test_float32_matmul_precision_names(restored):
    torch.set_float32_matmul_precision("medium")
    assert bai.get_math_precision() == "bf16" and torch.get_float32_matmul_precision() == "medium"
    torch.set_float32_matmul_precision("highest")
    assert bai.get_math_precision() == "fp32"
    with pytest.raises(ValueError, match="'highest', 'high' or 'medium'"):
        torch.set_float32_matmul_precision("low")


def test_deterministic_algorithms_are_recorded(restored):
    assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError):
        torch.use_deterministic_algorithms("yes")
