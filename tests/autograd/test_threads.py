"""Dispatch state is per thread: grad mode, interceptors and the module path of one thread never
change what another thread records, observes or reports."""

import sys
import threading

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
from buildingai.autograd.state import module_path
from buildingai.graph import TensorSpec, freeze, parallel

STEPS = 12
TIMEOUT = 60  # seconds; every wait in this file is bounded


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every few bytecodes, so that shared state would be hit within a step."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def _run_threads(targets: list) -> None:
    """Start one thread per callable, join them (bounded), and re-raise the first error."""
    errors = []

    def guarded(target):
        try:
            target()
        except BaseException as error:  # noqa: BLE001 - reported to the test thread below
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a thread did not finish in time"
    if errors:
        raise errors[0]


def _model(seed: int) -> nn.Module:
    bai.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype=bai.float64)


def _data(seed: int):
    rng = np.random.default_rng(seed)
    return bai.tensor(rng.standard_normal((8, 6))), bai.tensor(rng.standard_normal((8, 3)))


def _train(model: nn.Module, seed: int) -> list:
    """A few SGD steps; returns the losses (the parameters change in place)."""
    x, y = _data(seed)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(STEPS):
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        for name, parameter in model.named_parameters():
            assert parameter.grad is not None, f"{name} got no gradient"
        optimizer.step()
        losses.append(loss.item())
    return losses


def _weights(model: nn.Module) -> dict:
    return {name: p.numpy() for name, p in model.named_parameters()}


def test_four_threads_training_separate_models_match_sequential_runs_bit_for_bit():
    seeds = [0, 1, 2, 3]
    sequential = {}
    for seed in seeds:
        model = _model(seed)
        sequential[seed] = (_train(model, seed), _weights(model))

    models = {seed: _model(seed) for seed in seeds}
    concurrent = {}

    def trainer(seed):
        return lambda: concurrent.__setitem__(seed, _train(models[seed], seed))

    _run_threads([trainer(seed) for seed in seeds])
    for seed in seeds:
        assert concurrent[seed] == sequential[seed][0]
        for name, value in _weights(models[seed]).items():
            np.testing.assert_array_equal(value, sequential[seed][1][name])


def test_a_no_grad_thread_beside_a_training_thread_changes_nothing():
    reference = _model(5)
    expected = _train(reference, 5)

    trained, served = _model(5), _model(6)
    x, _ = _data(6)
    with bai.no_grad():
        expected_output = served(x).numpy()
    outputs = []
    losses = []
    trained_all = threading.Event()

    def serve():
        for _ in range(100 * STEPS):  # until the training thread is done, at most this often
            with bai.no_grad():
                out = served(x)
            assert not out.requires_grad
            outputs.append(out.numpy())
            if trained_all.is_set():
                break

    def train():
        try:
            losses.extend(_train(trained, 5))
        finally:
            trained_all.set()

    _run_threads([serve, train])
    assert losses == expected
    for name, value in _weights(trained).items():
        np.testing.assert_array_equal(value, _weights(reference)[name])
    for output in outputs:
        np.testing.assert_array_equal(output, expected_output)
    assert bai.is_grad_enabled()


def test_grad_mode_is_back_on_after_threads_used_no_grad_in_interleaved_order():
    # A enters, B enters, A leaves, B leaves: with one process-wide flag, B would restore the
    # "off" it saw when it entered, leaving recording off for everybody.
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    after = {}

    def thread_a():
        with bai.no_grad():
            a_in.set()
            assert b_in.wait(TIMEOUT)
        a_out.set()
        after["a"] = bai.is_grad_enabled()

    def thread_b():
        assert a_in.wait(TIMEOUT)
        with bai.no_grad():
            b_in.set()
            assert a_out.wait(TIMEOUT)
        after["b"] = bai.is_grad_enabled()

    _run_threads([thread_a, thread_b])
    assert after == {"a": True, "b": True}
    assert bai.is_grad_enabled()
    x = bai.ones(2, requires_grad=True)
    assert (x * 2.0).requires_grad


def test_a_no_grad_block_on_one_thread_does_not_stop_recording_on_another():
    inside, checked = threading.Event(), threading.Event()
    seen = {}

    def quiet():
        with bai.no_grad():
            inside.set()
            assert checked.wait(TIMEOUT)

    def recorder():
        assert inside.wait(TIMEOUT)
        x = bai.ones(2, requires_grad=True)
        seen["enabled"] = bai.is_grad_enabled()
        seen["recorded"] = (x * 2.0).requires_grad
        checked.set()

    _run_threads([quiet, recorder])
    assert seen == {"enabled": True, "recorded": True}


def test_eight_threads_serving_a_frozen_and_an_eager_model_give_correct_outputs():
    model = _model(7).eval()
    static = freeze(model, [TensorSpec((4, 6), "float64")])
    inputs = [np.random.default_rng(seed).standard_normal((4, 6)) for seed in range(8)]
    with bai.no_grad():
        expected = [model(bai.tensor(x)).numpy() for x in inputs]
    results: dict = {}

    def server(index):
        def serve():
            for _ in range(STEPS):
                frozen = static(inputs[index]).numpy()
                with bai.no_grad():
                    eager = model(bai.tensor(inputs[index]))
                assert not eager.requires_grad
                results.setdefault(index, []).append((frozen, eager.numpy()))

        return serve

    _run_threads([server(index) for index in range(8)])
    for index in range(8):
        assert len(results[index]) == STEPS
        for frozen, eager in results[index]:
            np.testing.assert_allclose(frozen, expected[index], rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(eager, expected[index])


class _Meeting(nn.Module):
    """Waits inside its forward until every thread is inside its own module, then runs a
    matmul whose shapes do not fit."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def forward(self, x):
        self.barrier.wait(TIMEOUT)
        return x @ bai.ones(5, 2)


class Encoder(nn.Module):
    def __init__(self, barrier):
        super().__init__()
        self.attention = _Meeting(barrier)

    def forward(self, x):
        return self.attention(x)


class Decoder(nn.Module):
    def __init__(self, barrier):
        super().__init__()
        self.projection = _Meeting(barrier)

    def forward(self, x):
        return self.projection(x)


def test_an_error_in_one_thread_names_that_threads_module():
    barrier = threading.Barrier(2)
    models = {"Encoder.attention": Encoder(barrier), "Decoder.projection": Decoder(barrier)}
    messages = {}

    def caller(path):
        def call():
            with pytest.raises(bai.ShapeError) as caught:
                models[path](bai.ones(3, 4))
            messages[path] = str(caught.value)

        return call

    _run_threads([caller(path) for path in models])
    for path, message in messages.items():
        assert f"(in {path})" in message, message
    assert module_path() == ()


def test_modes_belong_to_the_thread_that_pushed_them():
    seen_here, other_started, other_done = [], threading.Event(), threading.Event()

    class Watch(bai.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            seen_here.append(op.name)

    def other():
        other_started.wait(TIMEOUT)
        for _ in range(STEPS):
            bai.ones(2).exp()
        other_done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with bai.dispatch_mode(Watch()):
        other_started.set()
        assert other_done.wait(TIMEOUT)
        bai.ones(2) * 3.0
    thread.join(TIMEOUT)
    assert "exp" not in seen_here and "mul" in seen_here


def test_parallel_branches_inherit_grad_mode_modes_and_module_path():
    seen = []

    class Watch(bai.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            seen.append((op.name, threading.get_ident()))

    x = bai.tensor(np.random.default_rng(0).standard_normal((16, 16)), requires_grad=True)
    with bai.dispatch_mode(Watch()), bai.no_grad(), parallel(workers=2):
        a = (x @ x).tanh()
        b = (x @ x).sin()
    assert not a.requires_grad and not b.requires_grad
    assert [name for name, _ in seen].count("matmul") == 2
    assert any(thread != threading.get_ident() for _, thread in seen)

    class Branches(nn.Module):
        def forward(self, x):
            with parallel(workers=2):
                good = x @ x
                bad = x @ bai.ones(3, 3)
            return good, bad

    with pytest.raises(bai.ShapeError, match=r"\(in Branches\)"):
        Branches()(bai.ones(4, 4))


def test_unrecorded_forwards_that_write_their_context_are_safe_across_threads():
    # layer_norm and gelu(tanh) store values for backward on the context of an unrecorded call
    # too; that shared context must never mix one thread's values into another's.
    rng = np.random.default_rng(1)
    inputs = [bai.tensor(rng.standard_normal((32, 64))) for _ in range(4)]
    ops = [
        lambda x: bai.nn.functional.layer_norm(x, (64,)),
        lambda x: bai.nn.functional.gelu(x, approximate="tanh"),
        lambda x: x.sum(axis=1),
    ]
    expected = [[op(x).numpy() for op in ops] for x in inputs]
    mismatches = []

    def worker(index):
        def run():
            for _ in range(STEPS):
                for position, op in enumerate(ops):
                    if not np.array_equal(op(inputs[index]).numpy(), expected[index][position]):
                        mismatches.append((index, position))

        return run

    _run_threads([worker(index) for index in range(4)])
    assert mismatches == []


def test_one_no_grad_instance_shared_by_threads_and_reentered():
    quiet = bai.no_grad()
    entered = threading.Barrier(2)
    seen = []

    def worker():
        with quiet:
            entered.wait(TIMEOUT)
            with quiet:
                seen.append(bai.is_grad_enabled())
            seen.append(bai.is_grad_enabled())
        seen.append(bai.is_grad_enabled())

    _run_threads([worker, worker])
    assert sorted(seen) == [False, False, False, False, True, True]
    assert bai.is_grad_enabled()


def test_asyncio_tasks_each_see_their_own_grad_mode():
    import asyncio

    async def quiet(inside: asyncio.Event, checked: asyncio.Event):
        with bai.no_grad():
            inside.set()
            await asyncio.wait_for(checked.wait(), TIMEOUT)
            return bai.is_grad_enabled()

    async def recorder(inside: asyncio.Event, checked: asyncio.Event):
        await asyncio.wait_for(inside.wait(), TIMEOUT)
        recorded = (bai.ones(2, requires_grad=True) * 2.0).requires_grad
        checked.set()
        return recorded

    async def main():
        inside, checked = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(quiet(inside, checked), recorder(inside, checked))

    assert asyncio.run(main()) == [False, True]
    assert bai.is_grad_enabled()
