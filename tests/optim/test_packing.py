"""Small parameters updated together (accel/packing.py): the same results as one by one, with
per-parameter state that stays each parameter's own."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.packing import PACK_MAX_SIZE, ParameterPack
from buildingai.optim import OptimizerError

pytestmark = pytest.mark.usefixtures("accel_on")  # packing is part of the accelerated step


def _packs(optimizer) -> dict:
    """The packs the accelerated step keeps, by parameter group index."""
    return optimizer._accelerated.get("packs", {})


# every optimizer whose update is element-wise, with options that use all of its state
OPTIMIZERS = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr_decay": 0.1}),
    ("Adadelta", {}),
    ("Lion", {"lr": 0.01, "weight_decay": 0.1}),
]
SHAPES = [(4,), (3, 5), (2, 3, 2), (1,), (0, 2)]


def _run(name, options, shapes, grads_of_step, steps=6, packed=True, dtype=np.float64):
    rng = np.random.default_rng(0)
    params = [bai.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]
    optimizer = getattr(bai.optim, name)(params, **options)
    optimizer.updates_elementwise = packed
    for step in range(steps):
        for position, param in enumerate(params):
            grad = grads_of_step(step, position, param.shape)
            param.grad = None if grad is None else bai.tensor(grad.astype(param.dtype))
        optimizer.step()
    return params, optimizer


def _gradient(step, position, shape):
    return np.random.default_rng(100 * step + position).standard_normal(shape)


@pytest.mark.parametrize("name, options", OPTIMIZERS)
def test_packed_update_equals_one_by_one(name, options):
    packed, optimizer = _run(name, options, SHAPES, _gradient)
    alone, reference = _run(name, options, SHAPES, _gradient, packed=False)
    assert isinstance(_packs(optimizer)[0], ParameterPack)
    for a, b in zip(packed, alone):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # each parameter's state is its own, shaped like it, with the values of the one-by-one path
    for p, q in zip(packed, alone):
        mine, theirs = optimizer.state[p], reference.state[q]
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            if isinstance(value, np.ndarray):
                assert mine[key].shape == p.shape
                np.testing.assert_array_equal(mine[key], value)
            else:
                assert mine[key] == value


def test_parameters_without_a_gradient_on_some_steps():
    """A parameter skipped on odd steps has fewer Adam steps than the others; the pack is
    rebuilt around it and the results still equal the one-by-one ones."""

    def sometimes(step, position, shape):
        return None if position == 1 and step % 2 else _gradient(step, position, shape)

    packed, optimizer = _run("Adam", {"lr": 0.01}, SHAPES, sometimes, steps=7)
    alone, _ = _run("Adam", {"lr": 0.01}, SHAPES, sometimes, steps=7, packed=False)
    for a, b in zip(packed, alone):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert optimizer.state[packed[1]]["step"] == 4 and optimizer.state[packed[0]]["step"] == 7


def test_state_replaced_by_the_user_or_a_checkpoint_is_used():
    params, optimizer = _run("Adam", {"lr": 0.01}, SHAPES[:3], _gradient, steps=2)
    reference, ref_optimizer = _run("Adam", {"lr": 0.01}, SHAPES[:3], _gradient, steps=2)
    for opt in (optimizer, ref_optimizer):
        first = opt.param_groups[0]["params"][0]
        opt.state[first]["exp_avg"] = np.full(first.shape, 0.5)  # a new array, not the view
    optimizer.load_state_dict(optimizer.state_dict())  # fresh arrays for every parameter
    ref_optimizer.updates_elementwise = False
    for opt, group in ((optimizer, params), (ref_optimizer, reference)):
        for position, param in enumerate(group):
            param.grad = bai.tensor(_gradient(9, position, param.shape))
        opt.step()
    for a, b in zip(params, reference):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_state_views_follow_the_updates():
    params, optimizer = _run("SGD", {"lr": 0.1, "momentum": 0.9}, SHAPES[:2], _gradient, steps=1)
    buffer = optimizer.state[params[0]]["momentum_buffer"]  # created lazily, in the pack
    before = buffer.copy()
    for position, param in enumerate(params):
        param.grad = bai.tensor(_gradient(1, position, param.shape))
    optimizer.step()
    assert optimizer.state[params[0]]["momentum_buffer"] is buffer
    assert not np.array_equal(buffer, before)
    saved = optimizer.state_dict()["state"][0]["momentum_buffer"]
    assert saved.shape == params[0].shape and saved is not buffer


def test_mixed_dtypes_and_large_parameters_stay_correct():
    shapes = [(5,), (PACK_MAX_SIZE + 1,), (2, 2), (3,)]
    rng = np.random.default_rng(1)
    dtypes = [np.float32, np.float32, np.float32, np.float64]
    results = []
    for packed in (True, False):
        params = [
            bai.tensor(rng.standard_normal(s).astype(d), requires_grad=True)
            for s, d in zip(shapes, dtypes)
        ]
        for p in params:
            p.grad = bai.tensor(np.ones(p.shape, p.dtype))
        optimizer = bai.optim.Adam(params, lr=0.1)
        optimizer.updates_elementwise = packed
        optimizer.step()
        results.append([p.numpy() for p in params])
        if packed:  # the two small float32 ones; the large and the float64 one alone
            assert _packs(optimizer)[0].params == [params[0], params[2]]
        rng = np.random.default_rng(1)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_packed_parameters_count_an_in_place_change():
    w, b = (bai.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
    loss = (w * w * b).sum()
    optimizer = bai.optim.Adam([w, b], lr=0.1)
    w.grad, b.grad = bai.tensor([1.0, 1.0]), bai.tensor([1.0, 1.0])
    optimizer.step()
    assert isinstance(_packs(optimizer)[0], ParameterPack)
    with pytest.raises(bai.AutogradError, match="modified"):
        loss.backward()


def test_a_misshapen_gradient_is_named():
    params = [bai.tensor(np.zeros(3), requires_grad=True) for _ in range(3)]
    optimizer = bai.optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = bai.tensor(np.ones(3))
    params[2].grad = bai.tensor(np.ones(4))
    with pytest.raises(OptimizerError, match="parameter 2 has shape"):
        optimizer.step()


def test_gradients_of_another_dtype_are_cast():
    params = [bai.tensor(np.zeros(3, np.float32), requires_grad=True) for _ in range(2)]
    optimizer = bai.optim.SGD(params, lr=0.5)
    for p in params:
        p.grad = bai.tensor(np.ones(3, np.float64))
    optimizer.step()
    for p in params:
        assert p.dtype == np.float32
        np.testing.assert_array_equal(p.numpy(), np.full(3, -0.5, np.float32))


def test_optimizers_with_a_non_elementwise_rule_are_not_packed():
    class NormalisedSGD(bai.optim.OptimizerBase):  # divides by the parameter's own norm
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def update(self, param, grad, state, group):
            param -= group["lr"] * grad / np.linalg.norm(grad)

    params = [bai.tensor(np.zeros(2), requires_grad=True) for _ in range(2)]
    params[0].grad, params[1].grad = bai.tensor([3.0, 4.0]), bai.tensor([0.0, 2.0])
    optimizer = NormalisedSGD(params)
    optimizer.step()
    assert not _packs(optimizer)
    np.testing.assert_allclose(params[0].numpy(), [-0.06, -0.08])
    np.testing.assert_allclose(params[1].numpy(), [0.0, -0.1])
