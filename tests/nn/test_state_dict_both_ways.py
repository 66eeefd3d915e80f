"""Weights made by BuildingAI load into the PyTorch twin of each layer (and the reverse is tested
in each layer's own file): same outputs, input gradients and parameter gradients in float64."""

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai import nn

T = torch.nn


def first(output):
    return output[0] if isinstance(output, tuple) else output


CASES = {
    "Linear": (lambda: nn.Linear(5, 3), lambda: T.Linear(5, 3), [(4, 5)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), lambda: T.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    "Conv1d": (
        lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1),
        lambda: T.Conv1d(3, 4, 3, stride=2, padding=1),
        [(2, 3, 9)],
    ),
    "Conv2d groups dilation": (
        lambda: nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2),
        lambda: T.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2),
        [(2, 4, 7, 6)],
    ),
    "Conv2d same": (
        lambda: nn.Conv2d(3, 5, (3, 2), padding="same"),
        lambda: T.Conv2d(3, 5, (3, 2), padding="same"),
        [(2, 3, 6, 5)],
    ),
    "Conv2d depthwise": (
        lambda: nn.Conv2d(3, 3, 3, groups=3, bias=False),
        lambda: T.Conv2d(3, 3, 3, groups=3, bias=False),
        [(2, 3, 6, 6)],
    ),
    "ConvTranspose2d": (
        lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
        lambda: T.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
        [(2, 4, 4, 5)],
    ),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), lambda: T.BatchNorm2d(3), [(4, 3, 5, 5)]),
    "LayerNorm": (lambda: nn.LayerNorm(6), lambda: T.LayerNorm(6), [(3, 4, 6)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: T.GroupNorm(2, 4), [(3, 4, 5)]),
    "RMSNorm": (lambda: nn.RMSNorm(6), lambda: T.RMSNorm(6), [(3, 6)]),
    "LSTM": (
        lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True),
        lambda: T.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True),
        [(2, 6, 4)],
    ),
    "GRU": (lambda: nn.GRU(4, 5), lambda: T.GRU(4, 5), [(6, 2, 4)]),
    "MultiheadAttention": (
        lambda: nn.MultiheadAttention(8, 2, batch_first=True),
        lambda: T.MultiheadAttention(8, 2, batch_first=True),
        [(2, 5, 8), (2, 5, 8), (2, 5, 8)],
    ),
    "TransformerEncoderLayer": (
        lambda: nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, batch_first=True, norm_first=True, activation="gelu"
        ),
        lambda: T.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, batch_first=True, norm_first=True, activation="gelu"
        ),
        [(2, 5, 8)],
    ),
    "Embedding": (
        lambda: nn.Embedding(10, 4, padding_idx=0),
        lambda: T.Embedding(10, 4, padding_idx=0),
        "indices",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_our_weights_load_into_pytorch(name, mode):
    ours_factory, theirs_factory, shapes = CASES[name]
    bai.manual_seed(1)
    torch.manual_seed(1)
    ours = ours_factory().to(bai.float64)
    theirs = theirs_factory().double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    getattr(ours, mode)()
    getattr(theirs, mode)()

    rng = np.random.default_rng(0)
    if shapes == "indices":
        values = [rng.integers(0, 10, size=(3, 4))]
        ours_in = [bai.tensor(v) for v in values]
        theirs_in = [torch.tensor(v) for v in values]
    else:
        values = [rng.standard_normal(shape) for shape in shapes]
        ours_in = [bai.tensor(v, requires_grad=True) for v in values]
        theirs_in = [torch.tensor(v, requires_grad=True) for v in values]
    ours_out, theirs_out = first(ours(*ours_in)), first(theirs(*theirs_in))
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), atol=1e-10)

    weight = rng.standard_normal(tuple(ours_out.shape))
    ours_out.backward(bai.tensor(weight))
    theirs_out.backward(torch.tensor(weight))
    for a, b in zip(ours_in, theirs_in):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-10)
    theirs_params = dict(theirs.named_parameters())
    for key, param in ours.named_parameters():
        expected = theirs_params[key].grad
        if expected is None:
            assert param.grad is None or not np.any(param.grad.numpy()), key
            continue
        np.testing.assert_allclose(param.grad.numpy(), expected.numpy(), atol=1e-10, err_msg=key)
    for key, buffer in ours.named_buffers():  # running statistics after a training step
        np.testing.assert_allclose(
            buffer.numpy(), dict(theirs.named_buffers())[key].numpy(), atol=1e-12, err_msg=key
        )
