"""The tracer marks first calls that paid one-time costs (or leaves them out when asked), and
names a Sequential's children by index and class: ``0 (Linear)``."""

from __future__ import annotations

import time

import buildingai as bai
from buildingai import nn
from buildingai.autograd.dispatch import apply
from buildingai.ops.families import SameDtypeFunction
from buildingai.profile import TimeTracer
from buildingai.profile.first_calls import one_time_costs
from buildingai.profile.flamegraph import frame_tree

START_UP_S = 0.03


class StartsSlowly(SameDtypeFunction):
    """A copy whose first call sleeps, as a first call that compiles a kernel does."""

    name = "starts_slowly"
    save_inputs = False

    def __init__(self) -> None:
        self.started = False

    def forward(self, ctx, xp, x):
        if not self.started:
            self.started = True
            time.sleep(START_UP_S)
        return x.copy()

    def backward(self, ctx, grad):
        return (grad,)


def names(tree: dict) -> set[str]:
    found = {tree["name"]}
    for child in tree["children"]:
        found |= names(child)
    return found


X = bai.ones(4, 4)  # made outside the traces, which then hold only the op's own calls


def run_steps(op, tracer, steps: int = 3) -> None:
    for _ in range(steps):
        apply(op, X)
        tracer.step()


def test_a_first_call_that_pays_start_up_is_marked_and_said():
    with TimeTracer() as tracer:
        run_steps(StartsSlowly(), tracer)
    first = [event.first_call for event in tracer.events]
    assert first == [True, False, False]
    flagged = one_time_costs(tracer.events)
    assert list(flagged) == [0] and flagged[0] >= 0.8 * START_UP_S * 1e9
    summary = tracer.summary()
    assert summary.totals["one_time_calls"] == 1
    assert "first calls: 1 op took" in str(summary)
    assert "TimeTracer(skip_first_calls=True)" in str(summary)
    assert "starts_slowly (first call)" in names(frame_tree(tracer))


def test_warm_calls_are_not_flagged():
    op = StartsSlowly()
    apply(op, X)  # the warm-up step pays the start-up outside the trace
    with TimeTracer() as tracer:
        run_steps(op, tracer)
    assert tracer.events[0].first_call  # still the first call this trace saw ...
    assert one_time_costs(tracer.events) == {}  # ... but no slower than the later ones
    assert "first calls:" not in str(tracer.summary())
    assert not any(name.endswith("(first call)") for name in names(frame_tree(tracer)))


def test_skip_first_calls_leaves_them_out_and_says_so():
    with TimeTracer(skip_first_calls=True) as tracer:
        run_steps(StartsSlowly(), tracer)
    assert len(tracer.events) == 2 and not any(event.first_call for event in tracer.events)
    assert tracer.first_calls_skipped == 1 and tracer.first_calls_ns >= 0.8 * START_UP_S * 1e9
    summary = tracer.summary()
    assert summary.ops["starts_slowly"].calls == 2
    assert summary.ops["starts_slowly"].time_ns < START_UP_S * 1e9 / 2
    assert summary.totals["python_ms"] < START_UP_S * 1e3  # not counted as Python time either
    assert "first calls left out (skip_first_calls=True): 1 calls" in str(summary)


def test_a_first_call_is_counted_per_dtype_and_rank():
    op = StartsSlowly()
    op.started = True
    inputs = (bai.ones(3), bai.ones(3, 3), bai.ones(3, dtype=bai.float64), bai.ones(5))
    with TimeTracer() as tracer:
        for x in inputs:
            apply(op, x)
    assert [event.first_call for event in tracer.events] == [True, True, True, False]


def test_sequential_children_read_index_and_class():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 2)))
    with TimeTracer() as tracer:
        model(bai.ones(2, 4)).sum().backward()
    stacks = {event.stack for event in tracer.events}
    assert ("forward", "Sequential", "0 (Linear)") in stacks
    assert ("forward", "Sequential", "1 (ReLU)") in stacks
    assert ("forward", "Sequential", "2 (Sequential)", "0 (Linear)") in stacks
    assert ("backward", "Sequential", "0 (Linear)", "grad of linear") in stacks
    frames = names(frame_tree(tracer))
    assert {"0 (Linear)", "1 (ReLU)", "2 (Sequential)"} <= frames and "0" not in frames
    assert "Sequential.2 (Sequential).0 (Linear)" in tracer.summary().modules


def test_named_children_keep_their_attribute_names():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc1(x)

    with TimeTracer() as tracer:
        Net()(bai.ones(2, 4))
    assert ("forward", "Net", "fc1") in {event.stack for event in tracer.events}
