"""Adamax, NAdam, RAdam, ASGD, Rprop and Adafactor against torch.optim: float64 parameters
compared after every step, state dicts that line up (both ways), checkpoints mid-run, parameter
groups, a small model trained by a loop written for PyTorch, and the argument checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import buildingai as bai
from buildingai.optim import OptimizerError
from tests.optim._compare import split_groups

torch = pytest.importorskip("torch")

NAMES = ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"]
# a scalar, a vector, a matrix, a 3-D array (Adafactor factors its last two dimensions) and an
# empty one (Adafactor in PyTorch divides by its size: see test_adafactor_empty_parameter)
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0, 3)]
STEPS = 12
# state that PyTorch keeps as 0-d tensors and these optimizers as Python numbers
SCALAR_STATES = {"step", "mu_product", "eta", "mu"}

CASES = [
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-3, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"momentum_decay": 0.02, "betas": (0.8, 0.9), "maximize": True}),
    ("RAdam", {}),  # rectified from step 6 on
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"betas": (0.9, 0.6)}),  # rho_inf = 4: never rectified
    ("RAdam", {"betas": (0.5, 0.8), "eps": 1e-4, "maximize": True}),  # rectified from step 4
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5}),  # averaging from step 6
    ("ASGD", {"weight_decay": 0.1, "t0": 0, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}),
    ("Rprop", {"maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.5}),  # min(lr, 1/sqrt(t)) switches to 1/sqrt(t) at step 5
    ("Adafactor", {"weight_decay": 0.1, "maximize": True}),
    ("Adafactor", {"eps": (1e-2, 1e-1), "d": 2.0, "beta2_decay": -0.5}),
]
GROUP_CASES = [
    ("Adamax", {"lr": 0.01}, [{"betas": (0.5, 0.9)}, {"lr": 0.1, "weight_decay": 0.2}]),
    ("NAdam", {}, [{"momentum_decay": 0.1}, {"weight_decay": 0.1, "decoupled_weight_decay": True}]),
    ("RAdam", {}, [{"betas": (0.5, 0.8)}, {"lr": 0.1, "weight_decay": 0.1}]),
    ("ASGD", {"t0": 3}, [{"lambd": 0.1}, {"lr": 0.1, "alpha": 1.0, "t0": 6}]),
    ("Rprop", {}, [{"etas": (0.2, 2.0)}, {"lr": 0.5, "step_sizes": (0.1, 1.0)}]),
    ("Adafactor", {}, [{"lr": 0.5, "d": 3.0}, {"beta2_decay": -0.3, "weight_decay": 0.1}]),
]


@pytest.fixture(autouse=True)
def torch_scalars_in_float64():
    """PyTorch keeps NAdam's mu_product and ASGD's eta and mu as tensors of the default dtype
    (float32 unless set); these optimizers keep them as Python floats, so compare with float64
    ones."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


# ----- the harness ----------------------------------------------------------------------------
def _shapes_for(name: str) -> list:
    return [s for s in SHAPES if name != "Adafactor" or 0 not in s]


def _gradients(shapes, steps: int, seed: int) -> list:
    """Per step, one gradient per shape: normal values with some exact zeros (Rprop's "no
    change" case, Adamax's eps), and no gradient for the second parameter every fourth step."""
    rng = np.random.default_rng(seed)
    steps_grads = []
    for step in range(steps):
        grads = []
        for position, shape in enumerate(shapes):
            if position == 1 and step % 4 == 3:
                grads.append(None)
                continue
            grad = rng.standard_normal(shape)
            grad[rng.random(shape) < 0.15] = 0.0
            grads.append(grad)
        steps_grads.append(grads)
    return steps_grads


class Twin:
    """The same optimizer in BuildingAI and in PyTorch, on the same float64 weights."""

    def __init__(self, name, options, init, group_options=None):
        self.ours = [bai.tensor(a.copy(), requires_grad=True) for a in init]
        self.theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
        self.ours_optimizer = getattr(bai.optim, name)(
            split_groups(self.ours, group_options), **options
        )
        self.theirs_optimizer = getattr(torch.optim, name)(
            split_groups(self.theirs, group_options), **options
        )

    def step(self, grads) -> None:
        for ours, theirs, grad in zip(self.ours, self.theirs, grads):
            ours.grad = None if grad is None else bai.tensor(grad.copy())
            theirs.grad = None if grad is None else torch.tensor(grad.copy())
        self.ours_optimizer.step()
        self.theirs_optimizer.step()

    def assert_close(self, message="") -> None:
        for position, (ours, theirs) in enumerate(zip(self.ours, self.theirs)):
            np.testing.assert_allclose(
                ours.numpy(),
                theirs.detach().numpy(),
                rtol=1e-12,
                atol=1e-13,
                err_msg=f"parameter {position} {message}",
            )


def _assert_state_dicts_match(ours: dict, theirs: dict) -> None:
    """Our state dict has PyTorch's layout: the same group entries and values, and per
    parameter the same state names in the same order, with the same values."""
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for mine, reference in zip(ours["param_groups"], theirs["param_groups"]):
        assert sorted(mine) == sorted(reference)
        for key, value in reference.items():
            assert mine[key] == value, key
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for index, reference in theirs["state"].items():
        mine = ours["state"][index]
        assert list(mine) == list(reference), index
        for key, value in reference.items():
            value = value.numpy()
            if key in SCALAR_STATES:
                assert not hasattr(mine[key], "shape"), key  # plain numbers here
                np.testing.assert_allclose(mine[key], value, rtol=1e-12, err_msg=key)
            else:
                assert mine[key].shape == value.shape and mine[key].dtype == value.dtype
                np.testing.assert_allclose(mine[key], value, rtol=1e-12, atol=1e-13, err_msg=key)


def _torch_state_as_plain_data(state_dict: dict) -> dict:
    """A PyTorch optimizer state dict with NumPy arrays and Python numbers for tensors."""
    state = {
        index: {
            key: value.item() if key in SCALAR_STATES else value.numpy().copy()
            for key, value in param_state.items()
        }
        for index, param_state in state_dict["state"].items()
    }
    groups = [dict(group) for group in state_dict["param_groups"]]
    return {"state": state, "param_groups": groups}


def _our_state_as_torch_data(state_dict: dict) -> dict:
    """Our state dict with tensors for arrays, for PyTorch's ``load_state_dict``."""
    state = {
        index: {
            key: torch.tensor(value) if hasattr(value, "shape") else value
            for key, value in param_state.items()
        }
        for index, param_state in state_dict["state"].items()
    }
    groups = [dict(group) for group in state_dict["param_groups"]]
    return {"state": state, "param_groups": groups}


# ----- every step against PyTorch -------------------------------------------------------------
@pytest.mark.usefixtures("both_ways")
@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_every_step_matches_torch(name, options):
    shapes = _shapes_for(name)
    rng = np.random.default_rng(0)
    twin = Twin(name, options, [rng.standard_normal(s) for s in shapes])
    for step, grads in enumerate(_gradients(shapes, STEPS, seed=1)):
        twin.step(grads)
        twin.assert_close(f"after step {step + 1}")
    _assert_state_dicts_match(twin.ours_optimizer.state_dict(), twin.theirs_optimizer.state_dict())


@pytest.mark.usefixtures("both_ways")
@pytest.mark.parametrize(
    "name, options, groups", GROUP_CASES, ids=[case[0] for case in GROUP_CASES]
)
def test_param_groups_with_their_own_options_match_torch(name, options, groups):
    shapes = _shapes_for(name)
    rng = np.random.default_rng(2)
    twin = Twin(name, options, [rng.standard_normal(s) for s in shapes], groups)
    for step, grads in enumerate(_gradients(shapes, STEPS, seed=3)):
        twin.step(grads)
        twin.assert_close(f"after step {step + 1}")
    _assert_state_dicts_match(twin.ours_optimizer.state_dict(), twin.theirs_optimizer.state_dict())


@pytest.mark.parametrize("name, options", CASES[::3], ids=[f"{n}-{o}" for n, o in CASES[::3]])
def test_lr_changed_between_steps_matches_torch(name, options):
    """A scheduler's lr edits take effect as in PyTorch (ASGD's eta, Rprop's step sizes and
    Adafactor's relative step read lr the way PyTorch's do)."""
    shapes = _shapes_for(name)
    rng = np.random.default_rng(4)
    twin = Twin(name, options, [rng.standard_normal(s) for s in shapes])
    for step, grads in enumerate(_gradients(shapes, STEPS, seed=5)):
        for optimizer in (twin.ours_optimizer, twin.theirs_optimizer):
            optimizer.param_groups[0]["lr"] = 0.05 / (1 + step)
        twin.step(grads)
        twin.assert_close(f"after step {step + 1}")


# ----- checkpoints ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_a_checkpoint_saved_mid_run_continues_identically(name, options):
    shapes = _shapes_for(name)
    rng = np.random.default_rng(6)
    twin = Twin(name, options, [rng.standard_normal(s) for s in shapes])
    grads = _gradients(shapes, STEPS, seed=7)
    for step_grads in grads[: STEPS // 2]:
        twin.step(step_grads)
    saved = twin.ours_optimizer.state_dict()
    # a fresh model and optimizer, as after a restart, continue the run
    twin.ours = [bai.tensor(p.numpy().copy(), requires_grad=True) for p in twin.ours]
    twin.ours_optimizer = getattr(bai.optim, name)(twin.ours, **options)
    twin.ours_optimizer.load_state_dict(saved)
    for step, step_grads in enumerate(grads[STEPS // 2 :]):
        twin.step(step_grads)
        twin.assert_close(f"after step {STEPS // 2 + step + 1}")


@pytest.mark.parametrize("name, options", CASES[1::3], ids=[f"{n}-{o}" for n, o in CASES[1::3]])
def test_state_dicts_load_across_frameworks(name, options):
    """PyTorch's state dict (as arrays and numbers) loads here and continues PyTorch's run, and
    ours loads into PyTorch: the names and layout line up."""
    shapes = _shapes_for(name)
    rng = np.random.default_rng(8)
    init = [rng.standard_normal(s) for s in shapes]
    grads = _gradients(shapes, STEPS, seed=9)
    # PyTorch's checkpoint into ours
    twin = Twin(name, options, init)
    for step_grads in grads[: STEPS // 2]:
        twin.theirs_optimizer.zero_grad()
        for param, grad in zip(twin.theirs, step_grads):
            param.grad = None if grad is None else torch.tensor(grad.copy())
        twin.theirs_optimizer.step()
    for ours, theirs in zip(twin.ours, twin.theirs):
        ours.array[...] = theirs.detach().numpy()
    twin.ours_optimizer.load_state_dict(
        _torch_state_as_plain_data(twin.theirs_optimizer.state_dict())
    )
    for step_grads in grads[STEPS // 2 :]:
        twin.step(step_grads)
        twin.assert_close("after loading PyTorch's state")
    # ours into PyTorch
    fresh = Twin(name, options, [p.numpy() for p in twin.ours])
    fresh.theirs_optimizer.load_state_dict(
        _our_state_as_torch_data(twin.ours_optimizer.state_dict())
    )
    fresh.ours_optimizer = twin.ours_optimizer
    fresh.ours = twin.ours
    for step_grads in grads[: STEPS // 2]:
        fresh.step(step_grads)
        fresh.assert_close("after loading our state into PyTorch")


# ----- a training loop written for PyTorch ----------------------------------------------------
def _train(library, name, weights, inputs, targets, steps=8):
    """A small MLP trained by a loop that reads the same in both libraries."""
    model = library.nn.Sequential(
        library.nn.Linear(4, 8), library.nn.Tanh(), library.nn.Linear(8, 3)
    ).double()
    with library.no_grad():
        for param, value in zip(model.parameters(), weights):
            param.copy_(library.tensor(value))
    optimizer = getattr(library.optim, name)(model.parameters())
    x, y = library.tensor(inputs), library.tensor(targets)
    history = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        history.append([p.detach().numpy().copy() for p in model.parameters()])
    return history


@pytest.mark.parametrize("name", NAMES)
def test_a_small_model_trains_as_in_torch(name):
    rng = np.random.default_rng(10)
    weights = [rng.standard_normal(s) * 0.5 for s in [(8, 4), (8,), (3, 8), (3,)]]
    inputs, targets = rng.standard_normal((16, 4)), rng.standard_normal((16, 3))
    ours = _train(bai, name, weights, inputs, targets)
    theirs = _train(torch, name, weights, inputs, targets)
    for step, (mine, reference) in enumerate(zip(ours, theirs)):
        for a, b in zip(mine, reference):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"step {step + 1}")


# ----- signatures, options and argument checks ------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_signature_is_torchs(name):
    ours = inspect.signature(getattr(bai.optim, name)).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    assert list(ours) == list(theirs)
    for key, parameter in theirs.items():
        assert ours[key].kind == parameter.kind, key
        assert ours[key].default == parameter.default, key


@pytest.mark.parametrize("name", [n for n in NAMES if n != "Adafactor"])
def test_capturable_is_kept_and_changes_nothing(name):
    """(differentiable=True is refused: ``test_foreach_fused.py``.)"""
    rng = np.random.default_rng(11)
    init = [rng.standard_normal(s) for s in [(3,), (2, 2)]]
    results = []
    for options in ({}, {"capturable": True, "differentiable": False, "foreach": False}):
        params = [bai.tensor(a.copy(), requires_grad=True) for a in init]
        optimizer = getattr(bai.optim, name)(params, **options)
        for step in range(3):
            for param in params:
                param.grad = bai.tensor(np.full(param.shape, 0.5 - step))
            optimizer.step()
        for key, value in options.items():
            assert optimizer.param_groups[0][key] is value
        results.append([p.numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_reachable_as_torch_optim(name):
    import buildingai as torch_like

    assert getattr(torch_like.optim, name) is getattr(bai.optim, name)
    assert name in bai.optim.__all__


BAD_ARGUMENTS = [
    ("Adamax", {"lr": -1.0}, "lr"),
    ("Adamax", {"eps": -1.0}, "eps"),
    ("Adamax", {"betas": (1.0, 0.9)}, "beta1"),
    ("Adamax", {"weight_decay": -0.1}, "weight_decay"),
    ("NAdam", {"momentum_decay": -1.0}, "momentum_decay"),
    ("NAdam", {"betas": (0.9, 1.5)}, "beta2"),
    ("RAdam", {"lr": -0.1}, "lr"),
    ("RAdam", {"weight_decay": -1.0}, "weight_decay"),
    ("ASGD", {"lr": -0.1}, "lr"),
    ("ASGD", {"weight_decay": -1.0}, "weight_decay"),
    ("Rprop", {"lr": -0.1}, "lr"),
    ("Rprop", {"etas": (1.5, 2.0)}, "etas"),
    ("Rprop", {"etas": (0.5, 0.9)}, "etas"),
    ("Adafactor", {"lr": -1.0}, "lr"),
    ("Adafactor", {"beta2_decay": 0.5}, "beta2_decay"),
    ("Adafactor", {"eps": (-1.0, 1e-3)}, "eps1"),
    ("Adafactor", {"eps": (None, -1.0)}, "eps2"),
    ("Adafactor", {"d": 0.5}, "d"),
    ("Adafactor", {"weight_decay": -1.0}, "weight_decay"),
]


@pytest.mark.parametrize("name, options, what", BAD_ARGUMENTS, ids=str)
def test_bad_arguments_are_refused_as_in_torch(name, options, what):
    with pytest.raises(ValueError):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **options)
    with pytest.raises(OptimizerError, match=rf"^{name}: .*{what}") as info:
        getattr(bai.optim, name)([bai.zeros(2, requires_grad=True)], **options)
    assert isinstance(info.value, ValueError)


def test_malformed_pairs_are_refused():
    param = bai.zeros(2, requires_grad=True)
    with pytest.raises(OptimizerError, match=r"Rprop: step_sizes must be a pair"):
        bai.optim.Rprop([param], step_sizes=1e-3)
    with pytest.raises(OptimizerError, match=r"Adafactor: eps must be a pair"):
        bai.optim.Adafactor([param], eps=1e-3)


# ----- behaviour of each rule -----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_float32_parameters_keep_float32_state(name):
    param = bai.tensor(np.ones((2, 3)), dtype="float32", requires_grad=True)
    optimizer = getattr(bai.optim, name)([param])
    for step in range(3):
        param.grad = bai.tensor(np.full((2, 3), 1.0 - step), dtype="float32")
        optimizer.step()
    assert param.dtype == "float32"
    for key, value in optimizer.state[param].items():
        if hasattr(value, "dtype"):
            assert value.dtype == np.float32, key


def test_rprop_forgets_the_gradient_after_a_sign_change():
    """A flipped sign shrinks the step and skips the move; the next step neither grows nor
    shrinks the step size and moves by it; the caller's gradient is left as it was."""
    param = bai.tensor(np.array([1.0]), requires_grad=True)
    optimizer = bai.optim.Rprop([param], lr=0.1)
    moves = []
    for grad in (1.0, 1.0, -1.0, -1.0):
        param.grad = bai.tensor([grad])
        before = param.numpy().copy()
        optimizer.step()
        moves.append(float((param.numpy() - before)[0]))
        assert param.grad.numpy()[0] == grad
    np.testing.assert_allclose(moves, [-0.1, -0.12, 0.0, 0.06])
    assert optimizer.state[param]["prev"][0] == -1.0
    np.testing.assert_allclose(optimizer.state[param]["step_size"], [0.06])


def test_asgd_ax_is_the_average_of_the_iterates():
    """With t0=0, ax averages the iterates from the second step on (PyTorch's indexing)."""
    param = bai.tensor(np.zeros(3), requires_grad=True)
    optimizer = bai.optim.ASGD([param], lr=0.1, t0=0)
    iterates = []
    rng = np.random.default_rng(12)
    for _ in range(6):
        param.grad = bai.tensor(rng.standard_normal(3))
        optimizer.step()
        iterates.append(param.numpy().copy())
    np.testing.assert_allclose(optimizer.state[param]["ax"], np.mean(iterates[1:], axis=0))


def test_adafactor_keeps_factored_second_moments():
    params = [
        bai.tensor(np.ones(s), requires_grad=True) for s in [(), (5,), (3, 4), (2, 3, 4), (1, 6)]
    ]
    optimizer = bai.optim.Adafactor(params)
    for param in params:
        param.grad = bai.tensor(np.ones(param.shape))
    optimizer.step()
    shapes = [
        {name: getattr(value, "shape", None) for name, value in optimizer.state[p].items()}
        for p in params
    ]
    assert shapes == [
        {"step": None, "variance": ()},
        {"step": None, "variance": (5,)},
        {"step": None, "row_var": (3, 1), "col_var": (1, 4)},
        {"step": None, "row_var": (2, 3, 1), "col_var": (2, 1, 4)},
        {"step": None, "row_var": (1, 1), "col_var": (1, 6)},
    ]


def test_adafactor_refuses_factors_of_another_shape():
    param = bai.tensor(np.ones((3, 4)), requires_grad=True)
    optimizer = bai.optim.Adafactor([param])
    param.grad = bai.tensor(np.ones((3, 4)))
    optimizer.step()
    saved = optimizer.state_dict()
    saved["state"][0]["col_var"] = np.zeros((1, 5))
    with pytest.raises(OptimizerError, match=r"'col_var' of parameter 0 has shape \(1, 5\)"):
        bai.optim.Adafactor([bai.tensor(np.ones((3, 4)), requires_grad=True)]).load_state_dict(
            saved
        )
    vector = bai.tensor(np.ones(4), requires_grad=True)
    saved["state"][0]["col_var"] = np.zeros((1, 4))
    with pytest.raises(OptimizerError, match=r"'row_var' of parameter 0 has shape \(3, 1\)"):
        bai.optim.Adafactor([vector]).load_state_dict(saved)


def test_adafactor_empty_parameter_is_left_alone():
    """PyTorch's Adafactor divides by the element count of an empty parameter
    (ZeroDivisionError); here it has nothing to update, and the step is counted."""
    empty = bai.tensor(np.zeros((0, 3)), requires_grad=True)
    other = bai.tensor(np.ones(3), requires_grad=True)
    optimizer = bai.optim.Adafactor([empty, other])
    empty.grad, other.grad = bai.tensor(np.zeros((0, 3))), bai.tensor(np.ones(3))
    optimizer.step()
    assert empty.shape == (0, 3) and optimizer.state[empty]["step"] == 1
    assert optimizer.state[empty]["row_var"].shape == (0, 1)
    assert np.all(other.numpy() < 1.0)
