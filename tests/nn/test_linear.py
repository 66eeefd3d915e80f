"""Linear and Bilinear refuse integer and bool inputs, as PyTorch does, instead of letting NumPy
promote them silently (int64 @ float32 -> float64)."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from buildingai.errors import DTypeError

torch = pytest.importorskip("torch")


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
def test_integer_input_to_linear_raises_like_torch(dtype):
    array = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 4)(torch.tensor(array))
    with pytest.raises(DTypeError) as info:
        TwoLayers()(bai.tensor(array))
    message = str(info.value)
    assert "[linear]" in message and f"got {np.dtype(dtype)}" in message
    assert "(in TwoLayers.fc1)" in message  # the module
    assert "x.float()" in message  # the fix


def test_functional_linear_and_bilinear_refuse_integers():
    x = bai.tensor(np.ones((2, 3), dtype=np.int64))
    with pytest.raises(DTypeError, match=r"\[linear\] input must be a floating-point tensor"):
        F.linear(x, bai.ones((4, 3)))
    with pytest.raises(DTypeError, match=r"\[bilinear\].*got int64 .*\(in Bilinear\)"):
        nn.Bilinear(3, 3, 2)(x, x.float())
    with pytest.raises(DTypeError, match=r"\[bilinear\]"):
        F.bilinear(x.float(), x, bai.ones((2, 3, 3)))


def test_converted_input_matches_torch():
    layer = nn.Linear(3, 2, dtype="float64")
    reference = torch.nn.Linear(3, 2, dtype=torch.float64)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.weight.numpy()))
        reference.bias.copy_(torch.tensor(layer.bias.numpy()))
    array = np.arange(6).reshape(2, 3)
    ours = layer(bai.tensor(array).double())
    theirs = reference(torch.tensor(array).double())
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "layer",
    [nn.Conv1d(3, 2, 1), nn.Conv2d(3, 2, 1), nn.LayerNorm(3), nn.RNN(3, 2)],
    ids=["conv1d", "conv2d", "layer_norm", "rnn"],
)
def test_other_float_only_layers_refuse_integers_too(layer):
    shapes = {
        nn.Conv1d: (2, 3, 4),
        nn.Conv2d: (2, 3, 4, 4),
        nn.LayerNorm: (2, 3),
        nn.RNN: (2, 4, 3),
    }
    x = bai.tensor(np.ones(shapes[type(layer)], dtype=np.int64))
    with pytest.raises(DTypeError, match="int64"):
        layer(x)
