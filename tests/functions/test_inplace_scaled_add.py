"""``add_`` / ``sub_`` with ``alpha``, the hand-written SGD step (``p.data.add_(p.grad,
alpha=-lr)``): one pass of acceleration's BLAS binding where nothing records or watches the
update, the same values as PyTorch's ``add_``, and the array operations wherever the binding
does not take the call."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import vector_blas
from buildingai.errors import AutogradError
from buildingai.functions import inplace

torch = pytest.importorskip("torch")

SIZE = vector_blas.MIN_SIZE * 4 + 1  # large enough for BLAS, odd so no kernel tail is skipped


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(SIZE).astype(np.float32), rng.standard_normal(SIZE).astype(
        np.float32
    )


@pytest.fixture
def taken(monkeypatch):
    """The calls the BLAS binding took."""
    calls = []

    def spy(*arguments):
        took = vector_blas.add_scaled(*arguments)
        if took:
            calls.append(arguments)
        return took

    monkeypatch.setattr(inplace, "add_scaled", spy)
    return calls


@pytest.mark.parametrize("accelerated", [True, False], ids=["accel", "no accel"])
@pytest.mark.parametrize("method", ["add_", "sub_"])
def test_the_update_matches_pytorch(request, taken, accelerated, method):
    request.getfixturevalue("accel_on" if accelerated else "accel_off")
    p, g = _arrays()
    ours, theirs = bai.tensor(p.copy()), torch.tensor(p.copy())
    assert getattr(ours, method)(bai.tensor(g), alpha=-0.37) is ours
    getattr(theirs, method)(torch.tensor(g), alpha=-0.37)
    # one float32 rounding apart at most (BLAS fuses the multiply-add as PyTorch's kernel does)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2.4e-7, atol=1e-7)
    assert bool(taken) == (accelerated and vector_blas.available())


def test_a_hand_written_sgd_step_takes_one_blas_pass(accel_on, taken):
    model = bai.nn.Linear(512, 256)
    model(bai.randn(8, 512)).sum().backward()
    lr = 0.1
    expected = {
        name: p.detach().numpy() - lr * p.grad.numpy() for name, p in model.named_parameters()
    }
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.detach().numpy(), expected[name], rtol=1e-6, atol=1e-7)
    if vector_blas.available():  # the weight (131072 entries) is large enough, the bias is not
        assert [args[2].size for args in taken] == [512 * 256]


def test_the_update_bumps_the_version_and_views_see_it(accel_on):
    x = bai.tensor(np.zeros(SIZE, np.float32))
    view, version = x[:10], x._version[0]
    x.add_(bai.ones(SIZE), alpha=2.0)
    assert x._version[0] == version + 1
    np.testing.assert_array_equal(view.numpy(), np.full(10, 2.0, np.float32))


def test_a_leaf_that_records_is_still_refused(accel_on, taken):
    weight = bai.tensor(np.zeros(SIZE, np.float32), requires_grad=True)
    with pytest.raises(AutogradError, match="add_"):
        weight.add_(bai.ones(SIZE), alpha=0.5)
    with bai.no_grad():
        weight.add_(bai.ones(SIZE), alpha=0.5)
    np.testing.assert_array_equal(weight.detach().numpy(), np.full(SIZE, 0.5, np.float32))


def test_a_recorded_update_keeps_its_gradient(accel_on, taken):
    x = bai.tensor(np.ones(SIZE, np.float32), requires_grad=True)
    y = x * 1.0
    y.add_(x, alpha=3.0)  # recorded: the graph's path, not BLAS
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(SIZE, 4.0, np.float32))
    assert not taken


def test_an_operand_of_another_shape_or_dtype_takes_the_array_path(accel_on, taken):
    x = bai.tensor(np.zeros((4, SIZE), np.float32))
    x.add_(bai.ones(SIZE), alpha=2.0)  # broadcast along the first axis
    x.add_(bai.ones((4, SIZE), dtype="float64"), alpha=1.0 + 1e-9)  # float64 operand
    np.testing.assert_allclose(x.numpy(), np.full((4, SIZE), 3.0, np.float32))
    assert not taken
