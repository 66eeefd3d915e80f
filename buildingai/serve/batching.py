"""Dynamic batching: requests that arrive close together run as one stacked model call.

One worker thread owns the model. A request puts its samples ``(n, *shape)`` and a Future on a
queue; the worker takes the oldest request, then keeps taking queued ones while the batch holds
at most ``max_batch`` samples and the oldest has waited less than ``max_latency_ms``, runs the
model once on the concatenated batch and hands each request its rows. It waits for more only
while requests are on their way (``arriving()``: the server is reading or checking their
bodies), so a lone client never pays the latency limit. ``max_batch=1`` runs
every request on its own (batching off). A request larger than ``max_batch`` runs in parts of
``max_batch`` samples, one after another, with other requests' batches between them.

When a stacked call fails, each of its requests is run again on its own, so one bad request
gets the error and the others still get their answers.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from .loading import ServeError

_STOP = object()  # put on the queue by close()


@dataclass
class _Request:
    inputs: np.ndarray  # (n, *shape)
    future: Future
    first_part: bool = True  # False for the later parts of a request split by max_batch
    arrived: float = field(default_factory=time.perf_counter)


@dataclass
class BatchStats:
    """What the worker has done so far (read by ``/health`` and the tests)."""

    requests: int = 0  # a request run in parts (larger than max_batch) counts once
    batches: int = 0
    samples: int = 0
    largest_batch: int = 0  # in requests stacked into one model call
    failures: int = 0  # requests answered with a model error

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Batcher:
    """Runs ``run(batch) -> outputs`` on one worker thread, stacking concurrent requests.

    ``submit(inputs)`` returns a Future of that request's outputs ``(n, ...)``; ``close()``
    stops the worker after the requests already queued.
    """

    def __init__(self, run: Callable[[np.ndarray], np.ndarray], max_batch: int = 64,
                 max_latency_ms: float = 5.0) -> None:  # fmt: skip
        if not isinstance(max_batch, int) or max_batch < 1:
            raise ServeError(f"max_batch must be an integer >= 1, got {max_batch!r}",
                             help="use --max-batch 1 to turn batching off")  # fmt: skip
        if not (isinstance(max_latency_ms, (int, float)) and 0 <= max_latency_ms < float("inf")):
            raise ServeError(f"max_latency_ms must be a finite number >= 0, got {max_latency_ms!r}")
        self.run, self.max_batch, self.max_latency = run, max_batch, max_latency_ms / 1000
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._arriving = 0  # requests announced by arriving() and not yet submitted
        self._queue: queue.Queue = queue.Queue()
        self._held: _Request | object | None = (
            None  # taken from the queue but left for the next batch
        )
        self._thread = threading.Thread(target=self._work, name="buildingai-serve-batcher",
                                         daemon=True)  # fmt: skip
        self._thread.start()

    def submit(self, inputs: np.ndarray) -> Future:
        """A Future of the outputs for ``inputs`` ``(n, *shape)``. A request of more than
        ``max_batch`` samples runs as consecutive parts of at most ``max_batch``, each queued
        when the one before is answered, so requests arriving meanwhile run between its parts."""
        future: Future = Future()
        if not self._thread.is_alive():
            future.set_exception(ServeError("the batching worker has stopped"))
            return future
        if len(inputs) <= self.max_batch:
            self._queue.put(_Request(inputs, future))
            return future
        starts = range(0, len(inputs), self.max_batch)
        parts = [inputs[start : start + self.max_batch] for start in starts]
        self._submit_parts(parts, [], future)
        return future

    def _submit_parts(self, parts: list, answered: list, whole: Future) -> None:
        """Queue ``parts[len(answered)]``; when it is answered, the next; then answer ``whole``
        with the outputs joined (or the first part's error)."""
        if whole.cancelled():
            return  # the client went away: its remaining parts are never run
        part: Future = Future()
        index = len(answered)

        def next_part(done: Future) -> None:
            if done.cancelled():
                whole.cancel()
                return
            if done.exception() is not None:
                if whole.set_running_or_notify_cancel():
                    whole.set_exception(done.exception())
                return
            answered.append(done.result())
            if len(answered) < len(parts):
                self._submit_parts(parts, answered, whole)
            elif whole.set_running_or_notify_cancel():
                whole.set_result(np.concatenate(answered))

        part.add_done_callback(next_part)
        self._queue.put(_Request(parts[index], part, first_part=index == 0))

    @contextlib.contextmanager
    def arriving(self):
        """Announce a request whose body is being read: the worker waits for it (within the
        latency limit) instead of running a batch without it. Submit inside the block."""
        with self._lock:
            self._arriving += 1
        try:
            yield
        finally:
            with self._lock:
                self._arriving -= 1

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout)

    # ----- the worker ------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._run(batch)

    def _take(self, timeout: float | None) -> _Request | object | None:
        """The held-over request, or the next queued one: a ``_Request``, ``_STOP`` from
        ``close()``, or None when ``timeout`` passed first."""
        if self._held is not None:
            request, self._held = self._held, None
            return request
        try:
            return self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return None

    def _next_batch(self) -> list[_Request] | None:
        first = self._take(timeout=None)
        if first is _STOP:
            return None
        batch, samples = [first], len(first.inputs)
        deadline = first.arrived + self.max_latency
        while samples < self.max_batch:
            if self._held is None and self._queue.empty() and not self._arriving:
                break  # nothing else is on its way: waiting would only add latency
            request = self._take(timeout=max(0.0, deadline - time.perf_counter()))
            if request is None:
                break
            if request is _STOP:
                self._held = request  # stop once this batch is answered
                break
            fits = samples + len(request.inputs) <= self.max_batch
            if not fits or request.inputs.shape[1:] != first.inputs.shape[1:]:
                self._held = request  # starts the next batch
                break
            batch.append(request)
            samples += len(request.inputs)
        return batch

    def _run(self, batch: list[_Request]) -> None:
        # a request whose client went away was cancelled: it must not be answered
        batch = [request for request in batch if request.future.set_running_or_notify_cancel()]
        if not batch:
            return
        stats = self.stats
        stats.requests += sum(request.first_part for request in batch)
        stats.batches += 1
        stats.largest_batch = max(stats.largest_batch, len(batch))
        stats.samples += sum(len(request.inputs) for request in batch)
        if len(batch) == 1:
            self._answer(batch[0], batch[0].inputs)
            return
        stacked = np.concatenate([request.inputs for request in batch])
        try:
            outputs = self._call(stacked)
        except Exception:
            for request in batch:  # find the request that fails; answer the others
                self._answer(request, request.inputs)
            return
        start = 0
        for request in batch:
            stop = start + len(request.inputs)
            request.future.set_result(outputs[start:stop])
            start = stop

    def _answer(self, request: _Request, inputs: np.ndarray) -> None:
        try:
            request.future.set_result(self._call(inputs))
        except Exception as error:
            self.stats.failures += 1
            request.future.set_exception(error)

    def _call(self, inputs: np.ndarray) -> np.ndarray:
        outputs = np.asarray(self.run(inputs))
        if outputs.ndim == 0 or len(outputs) != len(inputs):
            raise ServeError(
                f"the model returned shape {outputs.shape} for a batch of {len(inputs)} "
                "samples; serving needs one output row per sample",
                help="serve a model whose output has the batch axis first",
            )
        return outputs
