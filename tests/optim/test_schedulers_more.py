"""ConstantLR, PolynomialLR, MultiplicativeLR, CyclicLR and ChainedScheduler against
torch.optim.lr_scheduler: the learning rates (and cycled momentum) over many steps, and a run
saved mid-way through JSON and resumed."""

import warnings

import numpy as np
import pytest
from torch.optim import lr_scheduler as torch_schedulers

from buildingai.optim import OptimizerError
from buildingai.optim import lr_scheduler as schedulers
from tests.optim._schedules import assert_resumes, optimizer_pair

STEPS = 45


def _run(optimizer, scheduler, steps, read_momentum=False):
    """Rates (and momenta) after construction and after each step."""
    key = "betas" if "betas" in optimizer.param_groups[0] else "momentum"
    rows = []
    for position in range(steps + 1):
        if position:
            optimizer.step()  # PyTorch warns when a scheduler steps before its optimizer
            scheduler.step()
        row = list(scheduler.get_last_lr())
        if read_momentum:
            values = [group[key] for group in optimizer.param_groups]
            row += [v[0] if isinstance(v, tuple) else v for v in values]
        rows.append(row)
    return np.array(rows, dtype=float)


CASES = {
    "ConstantLR": (
        lambda o: schedulers.ConstantLR(o, factor=0.25, total_iters=6),
        lambda o: torch_schedulers.ConstantLR(o, factor=0.25, total_iters=6),
    ),
    "ConstantLR defaults": (schedulers.ConstantLR, torch_schedulers.ConstantLR),
    "PolynomialLR": (
        lambda o: schedulers.PolynomialLR(o, total_iters=30, power=2.0),
        lambda o: torch_schedulers.PolynomialLR(o, total_iters=30, power=2.0),
    ),
    "PolynomialLR defaults": (schedulers.PolynomialLR, torch_schedulers.PolynomialLR),
    "MultiplicativeLR": (
        lambda o: schedulers.MultiplicativeLR(o, lambda epoch: 0.95 if epoch % 3 else 0.8),
        lambda o: torch_schedulers.MultiplicativeLR(o, lambda epoch: 0.95 if epoch % 3 else 0.8),
    ),
    "MultiplicativeLR per group": (
        lambda o: schedulers.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - 0.01 * e]),
        lambda o: torch_schedulers.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - 0.01 * e]),
    ),
    "ChainedScheduler": (
        lambda o: schedulers.ChainedScheduler(
            [
                schedulers.ConstantLR(o, factor=0.1, total_iters=4),
                schedulers.ExponentialLR(o, gamma=0.9),
            ]
        ),
        lambda o: torch_schedulers.ChainedScheduler(
            [
                torch_schedulers.ConstantLR(o, factor=0.1, total_iters=4),
                torch_schedulers.ExponentialLR(o, gamma=0.9),
            ]
        ),
    ),  # fmt: skip
    "ChainedScheduler of three": (
        lambda o: schedulers.ChainedScheduler(
            [
                schedulers.LinearLR(o, start_factor=0.2, total_iters=5),
                schedulers.StepLR(o, step_size=7, gamma=0.5),
                schedulers.CosineAnnealingLR(o, T_max=60),
            ],
            optimizer=o,
        ),
        lambda o: torch_schedulers.ChainedScheduler(
            [
                torch_schedulers.LinearLR(o, start_factor=0.2, total_iters=5),
                torch_schedulers.StepLR(o, step_size=7, gamma=0.5),
                torch_schedulers.CosineAnnealingLR(o, T_max=60),
            ],
            optimizer=o,
        ),
    ),  # fmt: skip
    "SequentialLR of the new ones": (
        lambda o: schedulers.SequentialLR(
            o,
            [
                schedulers.ConstantLR(o, 0.5, total_iters=3),
                schedulers.PolynomialLR(o, total_iters=20, power=0.5),
            ],
            milestones=[6],
        ),
        lambda o: torch_schedulers.SequentialLR(
            o,
            [
                torch_schedulers.ConstantLR(o, 0.5, total_iters=3),
                torch_schedulers.PolynomialLR(o, total_iters=20, power=0.5),
            ],
            milestones=[6],
        ),
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(CASES))
def test_rates_match_torch(name):
    make_ours, make_theirs = CASES[name]
    ours, theirs = optimizer_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _run(theirs, make_theirs(theirs), STEPS)
    got = _run(ours, make_ours(ours), STEPS)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert [group["lr"] for group in ours.param_groups] == list(got[-1])


CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    dict(base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=3, step_size_down=5),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4, mode="triangular2"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda c: 0.5**c),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda i: 1 / (1 + i),
         scale_mode="iterations", base_momentum=0.7, max_momentum=0.95),
]  # fmt: skip


@pytest.mark.parametrize("options", CYCLIC, ids=range(len(CYCLIC)))
@pytest.mark.parametrize(("optimizer", "extra"), [("SGD", {"momentum": 0.9}), ("Adam", {})])
def test_cyclic_rates_and_momentum_match_torch(options, optimizer, extra):
    ours, theirs = optimizer_pair(optimizer, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _run(theirs, torch_schedulers.CyclicLR(theirs, **options), STEPS, True)
    got = _run(ours, schedulers.CyclicLR(ours, **options), STEPS, True)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_cyclic_without_momentum_cycling():
    ours, theirs = optimizer_pair()  # plain SGD: no momentum to cycle
    options = dict(base_lr=0.001, max_lr=0.01, step_size_up=2, cycle_momentum=False)
    expected = _run(theirs, torch_schedulers.CyclicLR(theirs, **options), 12)
    np.testing.assert_allclose(_run(ours, schedulers.CyclicLR(ours, **options), 12), expected)


RESUMABLE = {
    "ConstantLR": lambda o: schedulers.ConstantLR(o, factor=0.3, total_iters=20),
    "PolynomialLR": lambda o: schedulers.PolynomialLR(o, total_iters=30, power=1.5),
    "MultiplicativeLR": lambda o: schedulers.MultiplicativeLR(o, lambda e: 0.9 + 0.002 * e),
    "CyclicLR": lambda o: schedulers.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="triangular2", base_momentum=0.8
    ),
    "ChainedScheduler": lambda o: schedulers.ChainedScheduler(
        [schedulers.ConstantLR(o, 0.5, total_iters=20), schedulers.ExponentialLR(o, 0.95)]
    ),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_state_dict_resumes_the_same_rates(name):
    make = RESUMABLE[name]

    def momenta(optimizer):
        return [group["momentum"] for group in optimizer.param_groups]

    assert_resumes(
        make,
        lambda scheduler, position: scheduler.step(),
        lambda scheduler, optimizer: scheduler.get_last_lr() + momenta(optimizer),
    )


def test_multiplicative_asks_for_each_factor_in_torchs_order():
    asked = {"ours": [], "theirs": []}

    def counting(library):
        def factor(epoch):
            asked[library].append(epoch)
            return 0.5

        return factor

    ours, theirs = optimizer_pair()
    scheduler = schedulers.MultiplicativeLR(ours, counting("ours"))
    reference = torch_schedulers.MultiplicativeLR(theirs, counting("theirs"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            scheduler.step()
            reference.step()
    assert asked["ours"] == asked["theirs"] == [1, 1, 2, 2, 3, 3, 4, 4]  # once per group
    assert scheduler.get_last_lr() == reference.get_last_lr() == [0.1 / 16, 0.02 / 16]


def test_errors_name_the_scheduler_and_the_value():
    optimizer, torch_optimizer = optimizer_pair()
    with pytest.raises(ValueError):
        torch_schedulers.ConstantLR(torch_optimizer, factor=1.5)
    with pytest.raises(OptimizerError, match=r"ConstantLR: factor must be in \[0, 1\], got 1.5"):
        schedulers.ConstantLR(optimizer, factor=1.5)
    with pytest.raises(OptimizerError, match="CyclicLR: mode must be one of .* got 'sine'"):
        schedulers.CyclicLR(optimizer, 0.01, 0.1, mode="sine")
    adagrad, torch_adagrad = optimizer_pair("Adagrad")
    with pytest.raises(ValueError, match="momentum"):
        torch_schedulers.CyclicLR(torch_adagrad, 0.01, 0.1)
    with pytest.raises(OptimizerError, match="cycle_momentum=True needs .* Adagrad has neither"):
        schedulers.CyclicLR(adagrad, 0.01, 0.1)
    with pytest.raises(OptimizerError, match="MultiplicativeLR: lr_lambda must be a function"):
        schedulers.MultiplicativeLR(optimizer, 0.9)
    with pytest.raises(OptimizerError, match="ChainedScheduler cannot run ReduceLROnPlateau"):
        schedulers.ChainedScheduler([schedulers.ReduceLROnPlateau(optimizer)])
    other, _ = optimizer_pair()
    with pytest.raises(OptimizerError, match="scheduler 1 .* does not belong"):
        schedulers.ChainedScheduler([schedulers.StepLR(optimizer, 2), schedulers.StepLR(other, 2)])


def test_every_torch_scheduler_has_a_counterpart():
    ours = set(schedulers.__all__)
    theirs = {
        name for name in dir(torch_schedulers)
        if name.endswith(("LR", "Scheduler", "LROnPlateau")) and not name.startswith("_")
    }  # fmt: skip
    assert theirs - ours == set()


LATER = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=12, eta_min=1e-3),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.5, total_iters=4),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=3),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=8, power=2.0),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.8),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 1 / (1 + e)),
    "Chained": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=2), m.ExponentialLR(o, gamma=0.8)]
    ),
}


@pytest.mark.parametrize("name", list(LATER))
def test_a_scheduler_made_after_another_moved_the_rate_continues_as_in_torch(name):
    """PyTorch's chainable schedulers start from the rate they find; LambdaLR from initial_lr.
    (Past T_max, PyTorch's cosine climbs back towards initial_lr instead: 12 steps stay within.)"""
    results = []
    for module, optimizer in zip((schedulers, torch_schedulers), optimizer_pair(momentum=0.9)):
        first = module.StepLR(optimizer, step_size=2, gamma=0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                optimizer.step()
                first.step()
            results.append(_run(optimizer, LATER[name](module, optimizer), 12))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-15)
