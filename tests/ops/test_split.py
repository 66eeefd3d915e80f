"""Ops that cut large inputs across threads (their kernels registered in ``buildingai.accel``,
on here) give PyTorch's values and derivatives when the cut happens: the threshold is lowered to
zero, so every call below runs split on 3 threads."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import split
from buildingai.backend import threads
from tests.helpers import check_op, torch

F = torch.nn.functional


pytestmark = pytest.mark.usefixtures("three_threads", "accel_on")  # tests/conftest.py


def test_the_split_path_is_taken(monkeypatch, numpy_kernels):
    calls = []
    original = threads.parallel_for
    monkeypatch.setattr(
        split, "parallel_for", lambda k, n, w=None: calls.append(n) or original(k, n, w)
    )
    bai.nn.functional.gelu(bai.ones(7, 5), approximate="tanh")
    bai.softmax(bai.ones(7, 5), -1)
    bai.nn.functional.layer_norm(bai.ones(7, 5), (5,))
    assert calls == [35, 7, 7]  # flat elements; rows; rows


def test_gelu_tanh():
    check_op(
        lambda x: bai.nn.functional.gelu(x, approximate="tanh"),
        (6, 7),
        torch_fn=lambda x: F.gelu(x, approximate="tanh"),
        gradgrad=True,
    )


@pytest.mark.parametrize("shape, axis", [((6, 5), -1), ((4, 3, 5), 2), ((4, 3, 5), 1)], ids=str)
def test_softmax(shape, axis):
    check_op(
        lambda x: bai.softmax(x, axis), shape, torch_fn=lambda x: torch.softmax(x, axis),
        gradgrad=True,
    )  # fmt: skip


@pytest.mark.parametrize("normalized", [(5,), (3, 5)], ids=str)
def test_layer_norm(normalized):
    def ours(x, w, b):
        return bai.nn.functional.layer_norm(x, normalized, w, b, eps=1e-5)

    def theirs(x, w, b):
        return F.layer_norm(x, normalized, w, b, eps=1e-5)

    check_op(ours, (4, 3, 5), normalized, normalized, torch_fn=theirs, gradgrad=True)


def test_float32_split_equals_unsplit():
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    results = {}
    for count in (3, 1):
        bai.set_num_threads(count)
        t = bai.tensor(x, requires_grad=True)
        out = bai.nn.functional.gelu(t, approximate="tanh").softmax(-1)
        out = bai.nn.functional.layer_norm(out, (33,))
        (out * bai.tensor(x)).sum().backward()
        results[count] = (out.numpy(), t.grad.numpy())
    np.testing.assert_array_equal(results[3][0], results[1][0])
    np.testing.assert_array_equal(results[3][1], results[1][1])
