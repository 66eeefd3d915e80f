"""One backward per op: a compiled training step (which records its backward) and an eager one
call the same gradient records for layer normalisation, the LSTM recurrence and cross-entropy,
and give the same parameters after a step."""

from __future__ import annotations

import numpy as np

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from buildingai import TensorSpec
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode


class _Names(DispatchMode):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_op(self, op, inputs, attrs) -> None:
        self.names.append(op.name)


class _Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.norm = nn.LayerNorm(6)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(self.norm(out[:, -1]))


def _step_and_model():
    bai.manual_seed(0)
    model = _Recurrent()
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step, model


GRADIENT_RECORDS = {
    "layer_norm_input_grad",
    "layer_norm_weight_grad",
    "lstm_activations",
    "cross_entropy_grad",
}


def test_compiled_and_eager_steps_call_the_same_gradient_records():
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.random((5, 3, 4)).astype(np.float32))
    y = bai.tensor(np.array([0, 1, 2, 0, 1]))

    eager_step, eager_model = _step_and_model()
    recorder = _Names()
    with dispatch_mode(recorder):
        eager_step(x, y)

    step, model = _step_and_model()
    compiled = bai.compile(step, [TensorSpec((None, 3, 4)), TensorSpec((None,), "int64")])
    compiled(x, y)
    (traced,) = compiled.graphs.values()
    traced_names = {node.op.name for node in traced.unoptimized.graph.nodes}

    assert set(recorder.names) >= GRADIENT_RECORDS
    assert traced_names >= GRADIENT_RECORDS
    # neither runs a second, composite rule for the same gradients
    assert "standardize_grad" not in set(recorder.names) | traced_names
    computed = set(recorder.names) - {"optimizer_step"}
    assert computed <= traced_names, computed - traced_names
    for (name, got), (_, want) in zip(model.state_dict().items(), eager_model.state_dict().items()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
