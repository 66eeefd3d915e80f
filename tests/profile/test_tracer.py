"""TimeTracer on models where the answer is known: a deliberately slow op tops the profile, ops
nest under the module that created them (backward ops too), FLOPs come from the op records'
``cost``, the trace files are valid, and nothing is left installed once tracing stops."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.autograd.dispatch import active_modes, apply
from buildingai.data import DataLoader, Dataset
from buildingai.ops.families import SameDtypeFunction
from buildingai.ops.linalg import LINEAR
from buildingai.profile import TimeTracer
from buildingai.profile.exports import frame_records
from buildingai.profile.flamegraph import frame_tree

SLEEP_S = 0.03


class SlowCopy(SameDtypeFunction):
    """A copy that sleeps: the op that must top the profile."""

    name = "slow_copy"
    save_inputs = False

    def forward(self, ctx, xp, x):
        time.sleep(SLEEP_S)
        return x.copy()

    def backward(self, ctx, grad):
        return (grad,)


SLOW_COPY = SlowCopy()


class Slow(nn.Module):
    def forward(self, x):
        return apply(SLOW_COPY, x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.slow = Slow()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.slow(self.act(self.fc1(x))))


def train_epoch(model, data, optimizer, tracer=None):
    for x, target in data:
        loss = bai.nn.functional.cross_entropy(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if tracer is not None:
            tracer.step()


def batches(count: int = 2):
    rng = np.random.default_rng(0)
    return [
        (
            bai.tensor(rng.standard_normal((8, 16)).astype(np.float32)),
            bai.tensor(rng.integers(0, 4, 8)),
        )
        for _ in range(count)
    ]


@pytest.fixture(scope="module")
def traced():
    bai.manual_seed(0)
    model = Net()
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    data = batches()
    with TimeTracer() as tracer:
        train_epoch(model, data, optimizer, tracer)
    return tracer, model, data


def test_slow_op_tops_the_profile(traced):
    tracer, _, _ = traced
    summary = tracer.summary()
    slowest_op, row = next(iter(summary.ops.items()))
    assert slowest_op == "slow_copy"
    assert row.calls == 2
    assert row.time_ns >= 2 * SLEEP_S * 1e9
    assert row.array_ns >= 2 * SLEEP_S * 1e9  # the sleep is inside the record's forward
    # the module that holds it tops the modules below the root
    modules = [name for name in summary.modules if name != "Net"]
    assert modules[0] == "Net.slow"
    text = str(summary)
    assert "slow_copy" in text and "Net.slow" in text


def test_forward_and_backward_ops_nest_under_their_module(traced):
    tracer, _, _ = traced
    stacks = {(event.stack, event.name) for event in tracer.events}
    assert (("forward", "Net", "fc1"), "linear") in stacks
    assert (("forward", "Net", "slow"), "slow_copy") in stacks
    # the backward of fc1's linear is filed under fc1, below the forward op it differentiates
    backward_fc1 = [
        e for e in tracer.events if e.stack == ("backward", "Net", "fc1", "grad of linear")
    ]
    assert backward_fc1 and {e.name for e in backward_fc1} >= {"matmul"}
    tree = frame_tree(tracer)
    forward = next(child for child in tree["children"] if child["name"] == "forward")
    net = next(child for child in forward["children"] if child["name"] == "Net")
    slow = next(child for child in net["children"] if child["name"] == "slow")
    assert [child["name"] for child in slow["children"]] == ["slow_copy"]
    assert tree["value"] >= tracer.wall_ns - 1  # the root covers the traced time


def test_flops_come_from_the_op_records_cost(traced):
    tracer, _, _ = traced
    summary = tracer.summary()
    linear = summary.ops["linear"]
    # fc1: (8, 16) @ (16, 32) and fc2: (8, 32) @ (32, 4), per step, from LINEAR.cost
    from buildingai.ops.abstract import ValueSpec

    f32 = np.dtype(np.float32)
    expected = 0
    for rows, inner, outer in ((8, 16, 32), (8, 32, 4)):
        flops, _, _ = LINEAR.cost(
            ValueSpec((rows, inner), f32), ValueSpec((outer, inner), f32), ValueSpec((outer,), f32)
        )
        expected += flops
    assert linear.flops == 2 * expected
    assert linear.gflops_per_s > 0
    totals = summary.totals
    assert 0 <= totals["array_ms"] <= totals["op_ms"] <= totals["wall_ms"]
    assert totals["dispatch_ms"] == pytest.approx(totals["op_ms"] - totals["array_ms"])
    assert totals["steps"] == 2
    assert summary.as_dict()["ops"]["linear"]["calls"] == 4


def test_chrome_trace_is_valid_and_nested(traced, tmp_path):
    tracer, _, _ = traced
    path = tracer.export_chrome_trace(tmp_path / "trace.json")
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    assert events and all(event["ph"] == "X" for event in events)
    assert all(event["dur"] >= 0 and event["ts"] >= 0 for event in events)
    slow_span = next(e for e in events if e["name"] == "slow" and e["cat"] == "frame")
    slow_op = next(e for e in events if e["name"] == "slow_copy")
    assert slow_span["ts"] <= slow_op["ts"]
    assert slow_op["ts"] + slow_op["dur"] <= slow_span["ts"] + slow_span["dur"] + 1e-3
    assert slow_op["args"]["module"] == "Net.slow"
    assert [e["name"] for e in events if e["cat"] == "step"] == ["step 0", "step 1"]


def test_speedscope_events_balance(traced, tmp_path):
    tracer, _, _ = traced
    document = json.loads(
        tracer.export_speedscope(tmp_path / "profile.speedscope.json").read_text()
    )
    frames = document["shared"]["frames"]
    (profile,) = document["profiles"]
    open_frames, last = [], -1.0
    for event in profile["events"]:
        assert event["at"] >= last
        last = event["at"]
        if event["type"] == "O":
            open_frames.append(event["frame"])
        else:
            assert open_frames.pop() == event["frame"]
    assert open_frames == []
    assert {"slow_copy", "fc1", "grad of linear"} <= {frame["name"] for frame in frames}


def test_frame_records_nest_properly(traced):
    tracer, _, _ = traced
    depth = 0
    for kind, _, _, _ in frame_records(tracer.events):
        depth += 1 if kind == "O" else -1
        assert depth >= 0
    assert depth == 0


def test_flamegraph_is_self_contained_and_links_the_graph(traced, tmp_path):
    tracer, model, data = traced
    path = tracer.generate_flamegraph(
        tmp_path / "profile.html", graph=model, graph_inputs=data[0][0]
    )
    page = path.read_text()
    assert "<script src" not in page and "<link" not in page and "http://" not in page
    assert "slow_copy" in page and "Net.fc1" in page
    dot = tmp_path / "profile.graph.dot"
    assert dot.is_file() and "digraph" in dot.read_text()
    assert 'href="profile.graph.dot"' in page


def test_nothing_stays_installed_after_tracing(traced):
    assert active_modes() == ()


def test_tracing_patches_no_op_record():
    records = (LINEAR, SLOW_COPY)
    before = [(vars(op).get("forward"), type(op).forward) for op in records]
    with TimeTracer():
        during = [(vars(op).get("forward"), type(op).forward) for op in records]
    assert during == before


def test_dataloader_wait_is_its_own_frame():
    class SlowData(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            time.sleep(0.01)
            return np.full(3, index, dtype=np.float32)

    loader = DataLoader(SlowData(), batch_size=2)
    with TimeTracer() as tracer:
        for batch in loader:
            (batch * 2).sum()
    waits = [event for event in tracer.events if event.stack == ("data wait",)]
    assert len(waits) == 2
    assert all(event.duration_ns >= 2 * 0.01 * 1e9 for event in waits)
    assert tracer.summary().totals["data_wait_ms"] >= 40
    assert "data wait" in [child["name"] for child in frame_tree(tracer)["children"]]
    # outside tracing the loader hands out its own iterator
    assert type(iter(loader)).__name__ != "_WatchedBatches"


def test_user_code_as_the_issue_writes_it(tmp_path):
    from buildingai.profile import TimeTracer

    model, data = Net(), batches(1)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(model, data):
        for x, target in data:
            loss = bai.nn.functional.cross_entropy(model(x), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    with TimeTracer() as tracer:
        train_epoch(model, data)
    tracer.generate_flamegraph(tmp_path / "profile.html")
    print(tracer.summary())
    tracer.export_chrome_trace(tmp_path / "trace.json")
    tracer.export_speedscope(tmp_path / "profile.speedscope.json")
    assert (tmp_path / "profile.html").stat().st_size > 1000
    assert tracer.summary().ops["slow_copy"].calls == 1


def test_a_tracer_is_used_once():
    with TimeTracer() as tracer, pytest.raises(RuntimeError, match="already active"):
        tracer.__enter__()


def test_each_step_records_its_peak_memory_when_the_build_counts_it(traced):
    tracer, _, _ = traced
    from buildingai.profile.tracer import _memory_module

    assert len(tracer.step_peaks) == 2
    if _memory_module() is None:
        assert tracer.step_peaks == [None, None]
    else:
        # each step holds at least its batch of activations: (8, 32) float32 from fc1
        assert all(peak >= 8 * 32 * 4 for peak in tracer.step_peaks)
        assert "peak memory per step" in str(tracer.summary())


def test_the_array_time_of_a_registered_kernel_is_counted(accel_on):
    """Dispatch times the compute step itself, so the work of a kernel from buildingai.accel
    counts as array time as the record's forward does, and no op record is patched to time it."""
    from buildingai.autograd.dispatch import COMPUTE_TIME

    a = bai.tensor(np.ones((256, 256), np.float32))
    with TimeTracer() as tracer:
        a @ a  # above the size where the routed product kernel takes the call
    (event,) = [event for event in tracer.events if event.op is not None]
    assert event.name == "matmul" and 0 < event.forward_ns <= event.duration_ns
    assert COMPUTE_TIME.ns == event.forward_ns
