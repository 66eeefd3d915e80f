"""Every optimizer against torch.optim: 50 steps from the same float64 weights and gradients."""

import pytest
import torch

import buildingai as bai
from tests.optim._compare import make_problem, max_difference, run_ours, run_torch

pytestmark = pytest.mark.usefixtures("both_ways")

CASES = [
    # (our class, torch class, options)
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "maximize": True, "amsgrad": True}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"centered": True}),
    ("RMSprop", {"momentum": 0.9, "lr": 0.001}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1, "alpha": 0.9}),
    ("RMSprop", {"maximize": True, "eps": 1e-4}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"eps": 1e-5, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8}),
    ("Adadelta", {"weight_decay": 0.1, "eps": 1e-4}),
    ("Adadelta", {"maximize": True}),
]


def _makers(name: str, options: dict):
    ours = getattr(bai.optim, name)
    theirs = getattr(torch.optim, name)
    return (lambda params: ours(params, **options)), (lambda params: theirs(params, **options))


@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_matches_torch(name, options):
    make_ours, make_torch = _makers(name, options)
    init, grads = make_problem()
    ours, _ = run_ours(make_ours, init, grads)
    theirs, _ = run_torch(make_torch, init, grads)
    assert max_difference(ours, theirs) <= 1e-10


GROUP_CASES = [
    ("SGD", {"lr": 0.1}, [{"momentum": 0.9}, {"lr": 0.01, "weight_decay": 0.1}]),
    ("Adam", {"lr": 0.01}, [{"amsgrad": True}, {"lr": 0.001, "betas": (0.5, 0.9)}]),
    ("AdamW", {}, [{"weight_decay": 0.5}, {"lr": 0.1}]),
    ("RMSprop", {}, [{"centered": True}, {"momentum": 0.9, "lr": 0.001}]),
    # torch reads initial_accumulator_value from the constructor only, so it is not varied here
    ("Adagrad", {"initial_accumulator_value": 1.0}, [{"lr_decay": 0.01}, {"lr": 0.5}]),
    ("Adadelta", {}, [{"rho": 0.5}, {"lr": 0.1, "weight_decay": 0.2}]),
]


@pytest.mark.parametrize(
    "name, options, groups", GROUP_CASES, ids=[case[0] for case in GROUP_CASES]
)
def test_param_groups_match_torch(name, options, groups):
    make_ours, make_torch = _makers(name, options)
    init, grads = make_problem(seed=1)
    ours, _ = run_ours(make_ours, init, grads, groups)
    theirs, _ = run_torch(make_torch, init, grads, groups)
    assert max_difference(ours, theirs) <= 1e-10


def test_adagrad_initial_accumulator_per_group():
    """Unlike torch (which reads only the constructor's value), a group's own
    initial_accumulator_value sets the accumulator of that group's parameters."""
    first = bai.tensor([1.0], requires_grad=True)
    second = bai.tensor([1.0], requires_grad=True)
    optimizer = bai.optim.Adagrad(
        [{"params": [first]}, {"params": [second], "initial_accumulator_value": 3.0}]
    )
    first.grad, second.grad = bai.tensor([1.0]), bai.tensor([1.0])
    optimizer.step()
    assert optimizer.state[first]["sum"][0] == 1.0
    assert optimizer.state[second]["sum"][0] == 4.0


def test_skipped_parameters_and_changing_lr_match_torch():
    """Parameters without a gradient are left alone (state and all); lr edits take effect."""
    init, grads = make_problem(shapes=[(4,), (3, 2)], steps=20, seed=2)
    for step, step_grads in enumerate(grads):
        if step % 3 == 0:
            step_grads[1] = None
    results = []
    for module, wrap in ((bai.optim, bai.tensor), (torch.optim, torch.tensor)):
        params = [wrap(a.copy(), requires_grad=True) for a in init]
        optimizer = module.Adam(params, lr=0.05, amsgrad=True)
        for step, step_grads in enumerate(grads):
            for param, grad in zip(params, step_grads):
                param.grad = None if grad is None else wrap(grad.copy())
            optimizer.param_groups[0]["lr"] = 0.05 / (1 + step)
            optimizer.step()
        results.append([p.detach().numpy() for p in params])
    assert max_difference(*results) <= 1e-10


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_blocks_split_across_threads_match_torch(monkeypatch, accel_on, name):
    from buildingai.accel import optimizers as accelerated
    from buildingai.accel import vector_blas

    # small blocks, BLAS for all but the last, shared among three threads
    monkeypatch.setattr(accelerated, "THREADED_MIN_SIZE", 0)
    monkeypatch.setattr(accelerated, "WHOLE_SIZE", 0)
    monkeypatch.setattr(accelerated, "BLOCK_SIZE", 4096)
    monkeypatch.setattr(vector_blas, "MIN_SIZE", 2048)
    bai.optim.set_num_threads(3)
    try:
        options = {"lr": 0.01, "momentum": 0.9} if name != "Adam" else {"lr": 0.01}
        make_ours, make_torch = _makers(name, options)
        init, grads = make_problem(shapes=[(30000,), (2, 3)], steps=5)
        ours, _ = run_ours(make_ours, init, grads)
        theirs, _ = run_torch(make_torch, init, grads)
        assert max_difference(ours, theirs) <= 1e-10
    finally:
        bai.optim.set_num_threads(None)


def test_non_contiguous_parameter():
    """A parameter whose array is a transposed view is updated in place through the view."""
    init, grads = make_problem(shapes=[(3, 4)], steps=10)
    base = init[0].copy().T.copy().T  # a Fortran-ordered copy: not C-contiguous
    param = bai.tensor(base, requires_grad=True)
    param.array = base
    assert not param.array.flags.c_contiguous
    optimizer = bai.optim.Adam([param], lr=0.1)
    for (grad,) in grads:
        param.grad = bai.tensor(grad.copy())
        optimizer.step()
    assert param.array is base
    theirs, _ = run_torch(lambda p: torch.optim.Adam(p, lr=0.1), init, grads)
    assert max_difference([param.numpy()], theirs) <= 1e-10


def test_float32_parameters_keep_float32_state():
    param = bai.tensor([1.0, 2.0], dtype="float32", requires_grad=True)
    optimizer = bai.optim.Adam([param], lr=0.1)
    param.grad = bai.tensor([0.5, -0.5], dtype="float32")
    optimizer.step()
    assert param.dtype == "float32"
    assert optimizer.state[param]["exp_avg"].dtype == "float32"
