"""The batching worker: concurrent requests stack into one model call, within the size and
latency limits; a failing request gets its error without taking its batch-mates down."""

import threading
import time

import numpy as np
import pytest

from buildingai.serve import Batcher, ServeError

TIMEOUT = 10


class Recorder:
    """A model that doubles its input and remembers every batch size it was called with."""

    def __init__(self, delay: float = 0.0, fail_on: float | None = None) -> None:
        self.sizes: list[int] = []
        self.delay, self.fail_on = delay, fail_on
        self.started = threading.Event()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.started.set()
        self.sizes.append(len(batch))
        time.sleep(self.delay)
        if self.fail_on is not None and (batch == self.fail_on).any():
            raise RuntimeError(f"cannot take {self.fail_on}")
        return batch * 2


def rows(start: int, count: int = 1) -> np.ndarray:
    return np.arange(start, start + count, dtype=np.float32)[:, None].repeat(3, axis=1)


def test_requests_queued_while_the_model_runs_form_one_batch():
    model = Recorder(delay=0.2)
    batcher = Batcher(model, max_batch=64, max_latency_ms=0)
    try:
        first = batcher.submit(rows(0))
        assert model.started.wait(TIMEOUT)  # the worker is busy with the first request
        futures = [batcher.submit(rows(k, 2)) for k in range(1, 9)]
        np.testing.assert_array_equal(first.result(TIMEOUT), rows(0) * 2)
        for k, future in enumerate(futures, start=1):
            np.testing.assert_array_equal(future.result(TIMEOUT), rows(k, 2) * 2)
        assert model.sizes == [1, 16]  # the eight waiting requests in one stacked call
        assert batcher.stats.largest_batch == 8 and batcher.stats.samples == 17
        assert batcher.stats.batches == 2 and batcher.stats.requests == 9
    finally:
        batcher.close()


def test_max_batch_bounds_the_samples_per_call_and_a_large_request_runs_in_parts():
    model = Recorder(delay=0.1)
    batcher = Batcher(model, max_batch=4, max_latency_ms=0)
    try:
        blocker = batcher.submit(rows(0))
        assert model.started.wait(TIMEOUT)
        futures = [batcher.submit(rows(k, size)) for k, size in [(1, 3), (2, 1), (3, 2), (4, 9)]]
        blocker.result(TIMEOUT)
        for (k, size), future in zip([(1, 3), (2, 1), (3, 2), (4, 9)], futures):
            np.testing.assert_array_equal(future.result(TIMEOUT), rows(k, size) * 2)
        assert model.sizes == [1, 4, 2, 4, 4, 1]  # 9 samples: parts of 4, 4 and 1
        assert batcher.stats.requests == 5 and batcher.stats.samples == 16
    finally:
        batcher.close()


class Gate:
    """Doubles its input; its first call waits until ``release`` is set (at most TIMEOUT)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.sizes.append(len(batch))
        if len(self.sizes) == 1:
            self.entered.set()
            assert self.release.wait(TIMEOUT)
        return batch * 2


def test_requests_run_between_the_parts_of_a_large_one():
    model = Gate()
    batcher = Batcher(model, max_batch=2, max_latency_ms=0)
    try:
        large = batcher.submit(rows(0, 6))
        assert model.entered.wait(TIMEOUT)  # its first part is running
        small = batcher.submit(rows(10))
        model.release.set()
        np.testing.assert_array_equal(large.result(TIMEOUT), rows(0, 6) * 2)
        np.testing.assert_array_equal(small.result(TIMEOUT), rows(10) * 2)
        # the small request, queued while the first part ran, runs before the second part
        assert model.sizes == [2, 1, 2, 2]
    finally:
        batcher.close()


def test_a_failing_part_fails_the_whole_request():
    model = Recorder(fail_on=5)
    batcher = Batcher(model, max_batch=2, max_latency_ms=0)
    try:
        with pytest.raises(RuntimeError, match="cannot take 5"):
            batcher.submit(rows(0, 8)).result(TIMEOUT)
        assert model.sizes == [2, 2, 2]  # the part holding 5 fails; later parts never run
        np.testing.assert_array_equal(batcher.submit(rows(0, 3)).result(TIMEOUT), rows(0, 3) * 2)
    finally:
        batcher.close()


def test_max_batch_one_turns_batching_off():
    model = Recorder(delay=0.05)
    batcher = Batcher(model, max_batch=1, max_latency_ms=50)
    try:
        futures = [batcher.submit(rows(k)) for k in range(5)]
        for k, future in enumerate(futures):
            np.testing.assert_array_equal(future.result(TIMEOUT), rows(k) * 2)
        assert model.sizes == [1] * 5
    finally:
        batcher.close()


def test_the_worker_waits_for_a_request_on_its_way_within_the_latency_limit():
    model = Recorder()
    batcher = Batcher(model, max_batch=8, max_latency_ms=2000)
    try:
        with batcher.arriving():  # the server is reading this request's body
            first = batcher.submit(rows(0))
            with batcher.arriving():
                time.sleep(0.05)  # well inside the 2 s the first request may wait
                second = batcher.submit(rows(1))
        first.result(TIMEOUT), second.result(TIMEOUT)
        assert model.sizes == [2]
    finally:
        batcher.close()


def test_a_lone_request_does_not_wait_for_the_latency_limit():
    model = Recorder()
    batcher = Batcher(model, max_batch=8, max_latency_ms=60_000)
    try:
        np.testing.assert_array_equal(batcher.submit(rows(0)).result(TIMEOUT), rows(0) * 2)
    finally:
        batcher.close()


def test_a_failing_request_gets_the_error_and_its_batch_mates_their_answers():
    model = Recorder(delay=0.1, fail_on=13.0)
    batcher = Batcher(model, max_batch=64, max_latency_ms=0)
    try:
        blocker = batcher.submit(rows(0))
        assert model.started.wait(TIMEOUT)
        futures = [batcher.submit(rows(k)) for k in (11, 12, 13, 14)]
        blocker.result(TIMEOUT)
        for k, future in zip((11, 12, 14), futures[:2] + futures[3:]):
            np.testing.assert_array_equal(future.result(TIMEOUT), rows(k) * 2)
        with pytest.raises(RuntimeError, match="cannot take 13"):
            futures[2].result(TIMEOUT)
        assert batcher.stats.failures == 1
        # the worker lives on
        np.testing.assert_array_equal(batcher.submit(rows(5)).result(TIMEOUT), rows(5) * 2)
    finally:
        batcher.close()


def test_a_model_without_a_batch_axis_is_an_error_for_the_request():
    batcher = Batcher(lambda batch: batch.sum(), max_batch=4)
    try:
        with pytest.raises(ServeError, match="one output row per sample"):
            batcher.submit(rows(0, 2)).result(TIMEOUT)
    finally:
        batcher.close()


def test_cancelled_requests_are_skipped_and_close_stops_the_worker():
    model = Recorder(delay=0.1)
    batcher = Batcher(model, max_batch=64, max_latency_ms=0)
    blocker = batcher.submit(rows(0))
    assert model.started.wait(TIMEOUT)
    gone, kept = batcher.submit(rows(1)), batcher.submit(rows(2))
    assert gone.cancel()  # its client disconnected
    np.testing.assert_array_equal(kept.result(TIMEOUT), rows(2) * 2)
    blocker.result(TIMEOUT)
    assert model.sizes == [1, 1]
    batcher.close()
    assert not batcher._thread.is_alive()
    with pytest.raises(ServeError, match="stopped"):
        batcher.submit(rows(3)).result(TIMEOUT)


@pytest.mark.parametrize("settings, message", [
    (dict(max_batch=0), "max_batch must be an integer >= 1, got 0"),
    (dict(max_batch=2.5), "max_batch must be an integer >= 1, got 2.5"),
    (dict(max_latency_ms=-1), "max_latency_ms must be a finite number >= 0, got -1"),
    (dict(max_latency_ms=float("inf")), "max_latency_ms must be a finite number >= 0, got inf"),
])  # fmt: skip
def test_settings_out_of_range_are_refused(settings, message):
    with pytest.raises(ServeError, match=message.replace(".", r"\.")):
        Batcher(lambda batch: batch, **settings)
