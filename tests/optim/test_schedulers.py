"""Learning-rate schedulers against torch.optim.lr_scheduler."""

import json
import math
import warnings

import numpy as np
import pytest
from torch.optim import lr_scheduler as torch_schedulers

import buildingai as bai
from buildingai.optim import OptimizerError, schedulers
from tests.optim._schedules import assert_resumes, optimizer_pair

EPOCHS = 40


def _sequence(scheduler, steps, step=lambda s: s.step()):
    lrs = [scheduler.get_last_lr()]
    for _ in range(steps):
        step(scheduler)
        lrs.append(scheduler.get_last_lr())
    return np.array(lrs)


CASES = {
    "LambdaLR": (
        lambda o: schedulers.LambdaLR(o, lambda epoch: 0.95**epoch + 0.01 * epoch),
        lambda o: torch_schedulers.LambdaLR(o, lambda epoch: 0.95**epoch + 0.01 * epoch),
    ),
    "LambdaLR-per-group": (
        lambda o: schedulers.LambdaLR(o, [lambda e: 1 / (1 + e), lambda e: 0.9**e]),
        lambda o: torch_schedulers.LambdaLR(o, [lambda e: 1 / (1 + e), lambda e: 0.9**e]),
    ),
    "StepLR": (
        lambda o: schedulers.StepLR(o, step_size=7, gamma=0.5),
        lambda o: torch_schedulers.StepLR(o, step_size=7, gamma=0.5),
    ),
    "MultiStepLR": (
        lambda o: schedulers.MultiStepLR(o, milestones=[25, 5, 12, 12], gamma=0.3),
        lambda o: torch_schedulers.MultiStepLR(o, milestones=[25, 5, 12, 12], gamma=0.3),
    ),
    "ExponentialLR": (
        lambda o: schedulers.ExponentialLR(o, gamma=0.93),
        lambda o: torch_schedulers.ExponentialLR(o, gamma=0.93),
    ),
    "CosineAnnealingLR": (
        lambda o: schedulers.CosineAnnealingLR(o, T_max=15, eta_min=1e-3),
        lambda o: torch_schedulers.CosineAnnealingLR(o, T_max=15, eta_min=1e-3),
    ),
    "CosineAnnealingWarmRestarts": (
        lambda o: schedulers.CosineAnnealingWarmRestarts(o, T_0=6, eta_min=1e-3),
        lambda o: torch_schedulers.CosineAnnealingWarmRestarts(o, T_0=6, eta_min=1e-3),
    ),
    "CosineAnnealingWarmRestarts-Tmult": (
        lambda o: schedulers.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
        lambda o: torch_schedulers.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    ),
    "LinearLR": (
        lambda o: schedulers.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=12),
        lambda o: torch_schedulers.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=12),
    ),
    "LinearLR-defaults": (
        lambda o: schedulers.LinearLR(o),
        lambda o: torch_schedulers.LinearLR(o),
    ),
    "WarmupLR-cosine": (
        lambda o: schedulers.WarmupLR(
            o, 5, after=schedulers.CosineAnnealingLR(o, T_max=30), start_factor=0.01
        ),
        lambda o: torch_schedulers.SequentialLR(
            o,
            [
                torch_schedulers.LinearLR(o, start_factor=0.01, total_iters=5),
                torch_schedulers.CosineAnnealingLR(o, T_max=30),
            ],
            milestones=[5],
        ),
    ),
    "WarmupLR-constant": (
        lambda o: schedulers.WarmupLR(o, 8),
        lambda o: torch_schedulers.LinearLR(o, total_iters=8),
    ),
    "SequentialLR-three": (
        lambda o: schedulers.SequentialLR(
            o,
            [
                schedulers.LinearLR(o, 0.5, total_iters=3),
                schedulers.StepLR(o, 4, 0.5),
                schedulers.ExponentialLR(o, 0.9),
            ],
            milestones=[3, 20],
        ),
        lambda o: torch_schedulers.SequentialLR(
            o,
            [
                torch_schedulers.LinearLR(o, 0.5, total_iters=3),
                torch_schedulers.StepLR(o, 4, 0.5),
                torch_schedulers.ExponentialLR(o, 0.9),
            ],
            milestones=[3, 20],
        ),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_epoch_sequence_matches_torch(name):
    make_ours, make_theirs = CASES[name]
    ours, theirs = optimizer_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _sequence(make_theirs(theirs), EPOCHS)
    got = _sequence(make_ours(ours), EPOCHS)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert [g["lr"] for g in ours.param_groups] == list(got[-1])


@pytest.mark.parametrize(
    "name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR"]
)
def test_step_batch_moves_through_fractional_epochs(name):
    """step_batch() with steps_per_epoch=N equals torch's closed form at epoch + i / N."""
    make_theirs = CASES[name][1]
    batches = 4
    ours, theirs = optimizer_pair()
    scheduler = _with_steps_per_epoch(name, ours, batches)
    reference = make_theirs(theirs)
    got, expected = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in range(12):
            for batch in range(batches):
                reference.step(epoch + (batch + 1) / batches)  # torch's closed-form path
                expected.append(reference.get_last_lr())
                scheduler.step_batch()
                got.append(scheduler.get_last_lr())
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert scheduler.last_epoch == 12 and scheduler.batch == 0


def _with_steps_per_epoch(name, optimizer, batches):
    options = {
        "StepLR": dict(step_size=7, gamma=0.5),
        "MultiStepLR": dict(milestones=[25, 5, 12, 12], gamma=0.3),
        "ExponentialLR": dict(gamma=0.93),
        "CosineAnnealingLR": dict(T_max=15, eta_min=1e-3),
        "LinearLR": dict(start_factor=0.1, end_factor=0.8, total_iters=12),
    }[name]
    return getattr(schedulers, name)(optimizer, **options, steps_per_epoch=batches)


def test_warm_restarts_per_batch_match_torch():
    """The SGDR recipe: torch's scheduler.step(epoch + i / iters) after every batch."""
    ours, theirs = optimizer_pair()
    scheduler = schedulers.CosineAnnealingWarmRestarts(ours, T_0=2, T_mult=2, steps_per_epoch=5)
    reference = torch_schedulers.CosineAnnealingWarmRestarts(theirs, T_0=2, T_mult=2)
    for epoch in range(13):
        for batch in range(5):
            reference.step(epoch + (batch + 1) / 5)
            scheduler.step_batch()
            np.testing.assert_allclose(
                scheduler.get_last_lr(), reference.get_last_lr(), rtol=0, atol=1e-12
            )


def test_step_batch_without_steps_per_epoch_counts_batches():
    ours, _ = optimizer_pair()
    scheduler = schedulers.StepLR(ours, step_size=3, gamma=0.1)
    for _ in range(3):
        scheduler.step_batch()
    assert scheduler.last_epoch == 3
    np.testing.assert_allclose(scheduler.get_last_lr(), [0.01, 0.002])


@pytest.mark.parametrize(
    "options",
    [
        dict(max_lr=0.5, total_steps=50),
        dict(max_lr=[0.5, 0.2], epochs=5, steps_per_epoch=9, anneal_strategy="linear"),
        dict(max_lr=0.3, total_steps=60, three_phase=True, pct_start=0.2, div_factor=10.0),
        dict(max_lr=0.3, total_steps=40, cycle_momentum=False, final_div_factor=100.0),
    ],
    ids=["cos", "linear-epochs", "three-phase", "no-momentum"],
)
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_one_cycle_matches_torch(options, optimizer):
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    ours, theirs = optimizer_pair(optimizer, **extra)
    scheduler = schedulers.OneCycleLR(ours, **options)
    reference = torch_schedulers.OneCycleLR(theirs, **options)
    total = options.get("total_steps") or options["epochs"] * options["steps_per_epoch"]
    key = "momentum" if optimizer == "SGD" else "betas"
    for step in range(total):
        np.testing.assert_allclose(
            scheduler.get_last_lr(), reference.get_last_lr(), rtol=0, atol=1e-12
        )
        for group, ref_group in zip(ours.param_groups, theirs.param_groups):
            np.testing.assert_allclose(group[key], ref_group[key], rtol=0, atol=1e-12)
        theirs.step()
        reference.step()
        if step % 2:
            scheduler.step()
        else:
            scheduler.step_batch()  # the same for OneCycleLR: its schedule counts batches
    with pytest.raises(OptimizerError, match="past its total_steps"):
        scheduler.step()


def test_one_cycle_errors():
    ours, _ = optimizer_pair("Adagrad")
    with pytest.raises(OptimizerError, match="needs total_steps, or both epochs"):
        schedulers.OneCycleLR(ours, max_lr=0.1)
    with pytest.raises(OptimizerError, match="needs an optimizer with momentum or betas"):
        schedulers.OneCycleLR(ours, max_lr=0.1, total_steps=10)
    with pytest.raises(OptimizerError, match="expected 2 values of max_lr"):
        schedulers.OneCycleLR(ours, max_lr=[0.1], total_steps=10, cycle_momentum=False)


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(mode="max", factor=0.5, patience=2, threshold=0.1, threshold_mode="abs"),
        dict(patience=1, cooldown=3, min_lr=[0.05, 0.001], factor=0.3),
        dict(mode="min", patience=0, threshold_mode="rel", threshold=0.01, eps=1e-3),
    ],
    ids=str,
)
def test_reduce_on_plateau_matches_torch(options):
    rng = np.random.default_rng(0)
    metrics = np.concatenate([np.linspace(1.0, 0.5, 8), 0.5 + 0.01 * rng.random(40)])
    if options.get("mode") == "max":
        metrics = -metrics
    ours, theirs = optimizer_pair()
    scheduler = schedulers.ReduceLROnPlateau(ours, **options)
    reference = torch_schedulers.ReduceLROnPlateau(theirs, **options)
    for position, metric in enumerate(metrics):
        reference.step(float(metric))
        if position % 2:
            scheduler.step(metric)
        else:
            scheduler.step_batch(bai.tensor(metric))
        np.testing.assert_allclose(scheduler.get_last_lr(), reference.get_last_lr(), atol=1e-12)
    assert scheduler.get_last_lr() != [0.1, 0.02]  # the case really reduced


def test_reduce_on_plateau_errors():
    ours, _ = optimizer_pair()
    with pytest.raises(OptimizerError, match="factor must be < 1.0"):
        schedulers.ReduceLROnPlateau(ours, factor=1.5)
    with pytest.raises(OptimizerError, match="mode must be 'min' or 'max'"):
        schedulers.ReduceLROnPlateau(ours, mode="up")
    with pytest.raises(OptimizerError, match="expected 2 values of min_lr"):
        schedulers.ReduceLROnPlateau(ours, min_lr=[0.1, 0.2, 0.3])


RESUMABLE = {
    "StepLR": lambda o: schedulers.StepLR(o, 5, 0.5, steps_per_epoch=3),
    "CosineAnnealingWarmRestarts": lambda o: schedulers.CosineAnnealingWarmRestarts(
        o, 4, 2, steps_per_epoch=3
    ),
    "WarmupLR": lambda o: schedulers.WarmupLR(o, 6, after=schedulers.CosineAnnealingLR(o, 30)),
    "OneCycleLR": lambda o: schedulers.OneCycleLR(o, max_lr=0.4, total_steps=60),
    "LambdaLR": lambda o: schedulers.LambdaLR(o, lambda e: 1 / (1 + e)),
    "ReduceLROnPlateau": lambda o: schedulers.ReduceLROnPlateau(o, patience=1, cooldown=1),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_state_dict_round_trip(name):
    """Save optimizer and scheduler mid-run (through JSON), load into fresh ones, continue."""
    make = RESUMABLE[name]
    metrics = [1.0, 0.9, 0.95, 0.97, 0.99, 0.98, 0.985, 0.99] * 5

    def advance(scheduler, position):
        if isinstance(scheduler, schedulers.ReduceLROnPlateau):
            scheduler.step(metrics[position])
        else:
            scheduler.step_batch()

    assert_resumes(make, advance, lambda scheduler, optimizer: scheduler.get_last_lr())


def test_state_dict_is_plain_data():
    optimizer, _ = optimizer_pair()
    scheduler = schedulers.StepLR(optimizer, 3)
    state = scheduler.state_dict()
    assert "optimizer" not in state
    assert state["last_epoch"] == 0 and state["base_lrs"] == [0.1, 0.02]
    json.dumps(state)
    lambda_state = schedulers.LambdaLR(optimizer, lambda e: 1.0).state_dict()
    assert "lr_lambdas" not in lambda_state


def test_scheduler_errors():
    optimizer, _ = optimizer_pair()
    with pytest.raises(OptimizerError, match="StepLR needs an optimizer, got list"):
        schedulers.StepLR([], 3)
    with pytest.raises(OptimizerError, match="step_size must be >= 1"):
        schedulers.StepLR(optimizer, 0)
    with pytest.raises(OptimizerError, match="T_max must be > 0"):
        schedulers.CosineAnnealingLR(optimizer, 0)
    with pytest.raises(OptimizerError, match="T_mult must be an int >= 1"):
        schedulers.CosineAnnealingWarmRestarts(optimizer, 3, T_mult=0)
    with pytest.raises(OptimizerError, match=r"start_factor must be in \(0, 1\]"):
        schedulers.LinearLR(optimizer, start_factor=0.0)
    with pytest.raises(OptimizerError, match="steps_per_epoch must be a positive int"):
        schedulers.StepLR(optimizer, 3, steps_per_epoch=0)
    with pytest.raises(OptimizerError, match="2 schedulers need 1 milestones, got 2"):
        schedulers.SequentialLR(
            optimizer, [schedulers.StepLR(optimizer, 3), schedulers.StepLR(optimizer, 3)], [1, 2]
        )
    fresh, _ = optimizer_pair()
    with pytest.raises(OptimizerError, match="needs 'initial_lr' in parameter group 0"):
        schedulers.StepLR(fresh, 3, last_epoch=5)
    with pytest.raises(OptimizerError, match="warmup_steps must be an int >= 1"):
        schedulers.WarmupLR(optimizer, 0)


def test_resume_with_last_epoch():
    optimizer, _ = optimizer_pair()
    schedulers.CosineAnnealingLR(optimizer, T_max=10)
    resumed = schedulers.CosineAnnealingLR(optimizer, T_max=10, last_epoch=4)
    expected = [0.5 * lr * (1 + math.cos(math.pi * 5 / 10)) for lr in (0.1, 0.02)]
    np.testing.assert_allclose(resumed.get_last_lr(), expected, atol=1e-15)
