"""Shared harness of the scheduler tests: an optimizer pair (ours and torch's) to schedule, and
the check that a run saved mid-way and resumed continues exactly as the run straight through."""

from __future__ import annotations

import json

import numpy as np
import torch

import buildingai as bai


def optimizer_pair(name="SGD", lrs=(0.1, 0.02), **options):
    """One of ours and one of torch's, each with a parameter group per learning rate."""
    ours = getattr(bai.optim, name)(
        [{"params": [bai.tensor([1.0], requires_grad=True)], "lr": lr} for lr in lrs],
        **options,
    )
    theirs = getattr(torch.optim, name)(
        [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs], **options
    )
    return ours, theirs


def json_round_trip(state):
    return json.loads(json.dumps(state))


def assert_resumes(make, advance, read, steps: int = 40, saved_at: int = 17) -> None:
    """Save optimizer and scheduler (``make(optimizer)``) after ``saved_at`` steps, the
    scheduler's state through JSON, load both into fresh ones (built with other rates) and
    continue: every value ``read(scheduler, optimizer)`` gives after ``advance(scheduler,
    position)`` equals the run's straight through ``steps``."""
    optimizer, _ = optimizer_pair(momentum=0.9)
    scheduler = make(optimizer)
    straight = []
    for position in range(steps):
        advance(scheduler, position)
        straight.append(read(scheduler, optimizer))

    optimizer, _ = optimizer_pair(momentum=0.9)
    scheduler = make(optimizer)
    for position in range(saved_at):
        advance(scheduler, position)
    saved_optimizer = optimizer.state_dict()
    saved_scheduler = json_round_trip(scheduler.state_dict())
    optimizer, _ = optimizer_pair(momentum=0.9, lrs=(1.0, 1.0))
    optimizer.load_state_dict(saved_optimizer)
    scheduler = make(optimizer)
    scheduler.load_state_dict(saved_scheduler)
    resumed = straight[:saved_at]
    for position in range(saved_at, steps):
        advance(scheduler, position)
        resumed.append(read(scheduler, optimizer))
    np.testing.assert_allclose(resumed, straight, rtol=0, atol=1e-12)
