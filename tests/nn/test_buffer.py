"""``nn.Buffer``: assigned as a module attribute it becomes a buffer, as torch.nn.Buffer does."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn

torch = pytest.importorskip("torch")


def _model(library):
    class Model(library.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = library.nn.Linear(2, 2)
            self.running_mean = library.nn.Buffer(library.zeros(3))
            self.scratch = library.nn.Buffer(library.ones(2), persistent=False)

    return Model()


def test_buffers_register_as_pytorchs_do():
    ours, theirs = _model(bai), _model(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.running_mean = bai.ones(3)  # a plain tensor assigned over a buffer stays a buffer
    assert "running_mean" in ours.state_dict()
    np.testing.assert_array_equal(ours.state_dict()["running_mean"].numpy(), [1, 1, 1])


def test_a_buffer_shares_memory_and_leaves_the_graph():
    source = bai.zeros(3, requires_grad=False)
    buffer = nn.Buffer(source)
    source.array[0] = 5.0
    assert buffer.numpy()[0] == 5.0 and not buffer.requires_grad and buffer.persistent
    assert nn.Buffer().shape == (0,)
    module = nn.Module()
    module.flag = 1
    del module.flag
    module.flag = nn.Buffer(bai.ones(1), persistent=False)
    assert [n for n, _ in module.named_buffers()] == ["flag"] and not module.state_dict()
