"""The DataLoader: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a separate process (forked where the platform allows) that
fetches and collates whole batches and returns them through shared memory (see ``_transport``);
only small descriptors travel through the queues. Batches come back in sampler order whichever
worker finishes first. Workers are shut down when the iterator (or, with ``persistent_workers``,
the loader) is garbage collected, when iteration ends or fails, and on ``KeyboardInterrupt``.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from multiprocessing import resource_tracker
from typing import Any

import numpy as np

from ..autograd.state import current_state
from ..backend.random import Generator, resolve_generator
from ._transport import SlotReader, remove_segments
from ._worker import (
    DataLoaderError,
    DataLoaderTimeoutError,
    IterableFetcher,
    MapFetcher,
    RemoteError,
    _Exhausted,
    worker_loop,
)
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, ResumableSampler, Sampler, SequentialSampler

_LIVENESS_POLL_S = 0.25  # how often a waiting main process checks that its workers are alive
_JOIN_GRACE_S = 1.0  # how long shutdown waits for workers to exit before terminating them
_loader_counter = itertools.count()


class DataLoader:
    """Iterate over ``dataset`` in batches of Tensors with the structure of one item.

    Args:
        dataset: a map-style ``Dataset`` (``len`` and ``[i]``) or an ``IterableDataset``.
        batch_size: items per batch; None yields single items (converted to Tensors).
        shuffle: a new random order each epoch (drawn from ``generator``).
        sampler / batch_sampler: custom index orders (exclusive with ``shuffle``; a
            ``batch_sampler`` also replaces ``batch_size`` and ``drop_last``).
        drop_last: drop the last, incomplete batch.
        collate_fn: merges a list of items into a batch (default: ``default_collate``).
        num_workers: worker processes; 0 loads in the main process.
        prefetch: batches in flight per worker (None: 2). With ``num_workers=0``, None or 0
            loads each batch when it is asked for, in the calling thread (reproducible, as in
            PyTorch); an explicit ``prefetch > 0`` starts a background thread that prepares up to
            ``prefetch`` batches ahead. That thread runs the dataset's code concurrently with
            the loop, so its draws from global random streams (``np.random``, ``random``,
            ``buildingai.rand``) interleave with the loop's own in an order that varies from
            run to run: a dataset used that way should draw from its own generator.
        pin_memory: copy batches into page-locked host memory so later GPU copies are faster.
            It needs CuPy and a GPU; on the CPU it is a no-op.
        persistent_workers: keep the workers alive between epochs (they are seeded once).
        timeout: seconds to wait for one batch before raising ``DataLoaderTimeoutError``; 0
            waits forever (dead workers are still detected within a fraction of a second).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after seeding.
        generator: the ``buildingai.Generator`` for shuffling and worker seeds (default one
            when None).

    Worker seeding: the first iteration draws one loader seed from ``generator`` (the only
    draw: later epochs leave that stream alone); epoch ``e``
    (counted by the loader, or set with ``set_epoch``) derives its base seed from
    ``(loader seed, e)``. Worker ``i`` starts with ``base_seed + i`` (its ``WorkerInfo.seed``,
    in effect for ``worker_init_fn``), and before each batch ``b`` of the epoch it reseeds
    Python's ``random``, NumPy's global generator and ``buildingai.manual_seed`` from
    ``(loader seed, e, b)``. A batch's random draws therefore depend neither on the worker that
    loads it nor on the batches loaded before it: augmentations differ between batches and
    epochs, the same seed reproduces the same batches whatever ``num_workers`` is (above 0),
    and an epoch resumed at batch ``b`` (``set_epoch(e, start_batch=b)``, with a
    ``ResumableSampler`` that the loader positions there) gets the same batches as the
    uninterrupted epoch. A ``worker_init_fn`` that
    seeds the global streams itself is overridden at the next batch; seed a generator owned by
    the dataset instead. With ``num_workers=0`` nothing is reseeded: the dataset draws from the
    main process's streams, in order.
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Sampler | Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        drop_last: bool = False,
        collate_fn: Callable[[list], Any] | None = None,
        num_workers: int = 0,
        prefetch: int | None = None,
        pin_memory: bool = False,
        persistent_workers: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        generator: Generator | None = None,
    ) -> None:
        _validate(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers,
            prefetch, persistent_workers, timeout,
        )  # fmt: skip
        self.dataset = dataset
        self.is_iterable = isinstance(dataset, IterableDataset)
        self.num_workers = num_workers
        self.prefetch = prefetch
        self.pin_memory = pin_memory
        self.persistent_workers = persistent_workers
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.drop_last = drop_last
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif batch_size is not None and not self.is_iterable:
            if sampler is None:
                sampler = (
                    RandomSampler(dataset, generator=generator)
                    if shuffle
                    else SequentialSampler(dataset)
                )
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif sampler is None and not self.is_iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.auto_collation = batch_sampler is not None or (self.is_iterable and batch_size)
        if collate_fn is None:
            collate_fn = default_collate if self.auto_collation else default_convert
        self.collate_fn = collate_fn
        self._pool: _WorkerPool | None = None  # persistent workers, created on first iteration
        self._seed: int | None = None  # drawn from ``generator`` on the first iteration
        self._next_epoch = 0
        self._start_batch = 0

    def set_epoch(self, epoch: int, start_batch: int = 0) -> None:
        """Number the next iteration as epoch ``epoch`` (later ones count on from it), whose
        first batch is batch ``start_batch`` of that epoch.

        Worker random seeds derive from these numbers, and a ``ResumableSampler`` is positioned
        by them when each iteration starts, so this one call resumes a run mid-epoch: the same
        batches, with the same random draws. Another sampler keeps its own order; the numbers
        then only seed the workers.
        """
        if epoch < 0 or start_batch < 0:
            raise DataLoaderError(
                f"[DataLoader] set_epoch needs epoch >= 0 and start_batch >= 0, got "
                f"epoch={epoch!r}, start_batch={start_batch!r}",
                help="epochs and batches count from 0",
            )
        self._next_epoch, self._start_batch = int(epoch), int(start_batch)

    def state_dict(self) -> dict:
        """What a resumed run needs to continue this loader's random streams exactly: the loader
        seed (drawn once, on the first iteration) and the number of the next epoch. Save it in a
        checkpoint beside the RNG state; the sampler's own generator state travels separately."""
        return {"seed": self._seed, "next_epoch": self._next_epoch}

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict()``: the next iteration continues where the saved run stopped,
        without drawing a new loader seed (which would shift the random stream it comes from)."""
        self._seed = None if state["seed"] is None else int(state["seed"])
        self._next_epoch = int(state["next_epoch"])
        self._start_batch = 0

    def _epoch_seeds(self) -> tuple[int, int, int]:
        """``(loader seed, epoch, first batch)`` for a new iteration; advances the count."""
        if self._seed is None:  # drawn with or without workers: shuffles then match
            self._seed = int(resolve_generator(self.generator).backend_generator().integers(2**62))
        epoch, start = self._next_epoch, self._start_batch
        self._next_epoch, self._start_batch = epoch + 1, 0
        if isinstance(self.sampler, ResumableSampler):  # its order follows the same numbers
            self.sampler.set_epoch(epoch, start=start * (self.batch_size or 1))
        return self._seed, epoch, start

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    @property
    def _prefetch(self) -> int:
        """Batches in flight: per worker with workers, else those of the background thread."""
        if self.prefetch is not None:
            return self.prefetch
        return 2 if self.num_workers > 0 else 0

    def _config(self) -> dict:
        return {
            "iterable": self.is_iterable,
            "auto_collation": bool(self.auto_collation),
            "collate_fn": self.collate_fn,
            "batch_size": self.batch_size,
            "drop_last": self.drop_last,
            "worker_init_fn": self.worker_init_fn,
        }

    def __iter__(self) -> Iterator[Any]:
        iterator = self._start_iterator()
        # profilers (dispatch modes with a data_wait method) see each wait for a batch
        watchers = [o for o in current_state().modes if hasattr(o, "data_wait")]
        return _WatchedBatches(iterator, watchers) if watchers else iterator

    def _start_iterator(self) -> Iterator[Any]:
        # Counted (and the loader seed drawn) whatever the mode, so epochs number alike.
        seeds = self._epoch_seeds()
        if self.num_workers == 0:
            if self._prefetch > 0:
                return _ThreadIterator(self)
            return _SingleProcessIterator(self)
        base_seed = _derive_seed(*seeds[:2])
        if not self.persistent_workers:
            pool = _WorkerPool(self, base_seed)
            iterator = _MultiProcessIterator(self, pool, seeds)
            weakref.finalize(iterator, pool.shutdown)
            return iterator
        if self._pool is None or self._pool.closed:
            self._pool = _WorkerPool(self, base_seed)
            weakref.finalize(self, self._pool.shutdown)
        return _MultiProcessIterator(self, self._pool, seeds)

    def __len__(self) -> int:
        if self.is_iterable:
            length = len(self.dataset)  # TypeError when the stream has no length
            if self.batch_size is None:
                return length
            return length // self.batch_size if self.drop_last else -(-length // self.batch_size)
        return len(self._index_sampler)

    def shutdown(self) -> None:
        """Stop persistent workers now (they also stop when the loader is garbage collected)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _derive_seed(*numbers: int) -> int:
    """A well-mixed seed in [0, 2**62) that depends only on ``numbers``."""
    state = np.random.SeedSequence([int(n) for n in numbers]).generate_state(1, np.uint64)
    return int(state[0]) >> 2


def _validate(
    dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, prefetch,
    persistent_workers, timeout,
) -> None:  # fmt: skip
    def fail(message: str, help: str) -> None:
        raise DataLoaderError(f"[DataLoader] {message}", help=help)

    if not isinstance(num_workers, int) or num_workers < 0:
        fail(f"num_workers must be an int >= 0, got {num_workers!r}", "use 0 to load in-process")
    if prefetch is not None and (
        not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0
    ):
        fail(f"prefetch must be None or an int >= 0, got {prefetch!r}", "None picks a default")
    if num_workers > 0 and prefetch == 0:
        fail("prefetch=0 with num_workers > 0 leaves the workers idle", "use prefetch >= 1")
    if timeout < 0:
        fail(f"timeout must be >= 0 seconds, got {timeout!r}", "0 waits forever")
    if persistent_workers and num_workers == 0:
        fail("persistent_workers=True needs num_workers > 0", "set num_workers, or drop it")
    if batch_size is not None and (
        not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0
    ):
        fail(f"batch_size must be a positive int or None, got {batch_size!r}", "e.g. 32")
    if isinstance(dataset, IterableDataset):
        if shuffle or sampler is not None or batch_sampler is not None:
            fail(
                "an IterableDataset decides its own order: shuffle, sampler and batch_sampler "
                "do not apply",
                "shuffle inside the dataset's __iter__ (e.g. with a buffer)",
            )
        return
    if sampler is not None and shuffle:
        fail("sampler and shuffle=True are exclusive", "shuffle inside your sampler instead")
    if batch_sampler is not None and (
        batch_size != 1 or shuffle or sampler is not None or drop_last
    ):
        fail(
            "batch_sampler replaces batch_size, shuffle, sampler and drop_last",
            "pass only batch_sampler=..., or those options without it",
        )


# ----- num_workers = 0 ------------------------------------------------------------------------
def _in_process_batches(loader: DataLoader) -> Iterator[Any]:
    if loader.is_iterable:
        fetcher = IterableFetcher(
            loader.dataset, loader.auto_collation, loader.collate_fn, loader.batch_size,
            loader.drop_last,
        )  # fmt: skip
        while True:
            try:
                yield fetcher.fetch()
            except _Exhausted:
                return
    fetcher = MapFetcher(loader.dataset, loader.auto_collation, loader.collate_fn)
    for indices in loader._index_sampler:
        yield fetcher.fetch(indices)


class _WatchedBatches:
    """An epoch's iterator that reports each wait for a batch to ``watchers.data_wait(start_ns,
    end_ns)`` (only made while such a dispatch mode is active)."""

    def __init__(self, batches: Iterator[Any], watchers: list) -> None:
        self._batches = batches
        self._watchers = watchers

    def __iter__(self):
        return self

    def __getattr__(self, name: str):  # anything else is the wrapped iterator's
        return getattr(self._batches, name)

    def __next__(self) -> Any:
        start = time.perf_counter_ns()
        batch = next(self._batches)
        end = time.perf_counter_ns()
        for watcher in self._watchers:
            watcher.data_wait(start, end)
        return batch


class _SingleProcessIterator:
    """Loads each batch when asked, in the calling thread."""

    def __init__(self, loader: DataLoader) -> None:
        self._batches = _in_process_batches(loader)
        self._pin = loader.pin_memory

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        batch = next(self._batches)
        return _pin_batch(batch) if self._pin else batch


def _produce(batches: Iterator[Any], buffer: queue.Queue, stop: threading.Event) -> None:
    """Background thread: fill ``buffer`` with ("ok", batch) / ("error", exc) / ("end", None)."""

    def offer(item) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    try:
        for batch in batches:
            if not offer(("ok", batch)):
                return
    except BaseException as error:  # re-raised in the consuming thread, traceback intact
        offer(("error", error))
        return
    offer(("end", None))


def _stop_thread(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    if thread is not threading.current_thread():
        thread.join(timeout=_JOIN_GRACE_S)


class _ThreadIterator:
    """Prepares up to ``prefetch`` batches ahead in a background thread."""

    def __init__(self, loader: DataLoader) -> None:
        self._buffer: queue.Queue = queue.Queue(maxsize=loader._prefetch)
        self._stop = threading.Event()
        self._timeout = loader.timeout
        self._pin = loader.pin_memory
        self._done = False
        thread = threading.Thread(
            target=_produce,
            args=(_in_process_batches(loader), self._buffer, self._stop),
            name="buildingai-dataloader-prefetch",
            daemon=True,
        )
        thread.start()
        self._finalizer = weakref.finalize(self, _stop_thread, self._stop, thread)

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            kind, value = self._buffer.get(timeout=self._timeout or None)
        except queue.Empty:
            self._finish()
            raise DataLoaderTimeoutError(
                f"[DataLoader] no batch within timeout={self._timeout} s (num_workers=0)",
                help="raise timeout, or check the dataset for a blocking __getitem__",
            ) from None
        except BaseException:
            self._finish()
            raise
        if kind == "ok":
            return _pin_batch(value) if self._pin else value
        self._finish()
        if kind == "error":
            raise value
        raise StopIteration

    def _finish(self) -> None:
        self._done = True
        self._finalizer()


# ----- num_workers > 0 ------------------------------------------------------------------------
def _multiprocessing_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


class _WorkerPool:
    """The worker processes of one loader, their queues and shared-memory segments.

    It holds no reference to the loader or its iterators, so it can be shut down from their
    finalizers. ``shutdown`` is idempotent.
    """

    def __init__(self, loader: DataLoader, base_seed: int) -> None:
        context = _multiprocessing_context()
        self.num_workers = loader.num_workers
        self.prefix = f"bai{os.getpid()}_{next(_loader_counter)}"
        self.reader = SlotReader(pin_memory=loader.pin_memory)
        self.epoch = -1
        self.closed = False
        # One resource tracker for every process, started before forking: segments created by
        # a worker are then still cleaned up at exit if both the worker and we fail to.
        resource_tracker.ensure_running()
        self.result_queue = context.Queue()
        self.index_queues = []
        self.processes = []
        config = loader._config()
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()
            process = context.Process(
                target=worker_loop,
                args=(
                    worker_id,
                    self.num_workers,
                    loader.dataset,
                    index_queue,
                    self.result_queue,
                    config,
                    base_seed + worker_id,
                    self.prefix,
                    os.getpid(),
                ),  # fmt: skip
                name=f"buildingai-dataloader-worker-{worker_id}",
                daemon=True,
            )
            process.start()
            self.index_queues.append(index_queue)
            self.processes.append(process)

    def new_epoch(self) -> int:
        self.epoch += 1
        return self.epoch

    def dead_workers(self) -> list[str]:
        """A description of each worker process that is no longer running."""
        dead = []
        for worker_id, process in enumerate(self.processes):
            if not process.is_alive():
                code = process.exitcode
                how = f"exit code {code}"
                if code is not None and code < 0:
                    import signal

                    try:
                        how = f"killed by signal {signal.Signals(-code).name}"
                    except ValueError:
                        how = f"killed by signal {-code}"
                dead.append(f"worker {worker_id} (pid {process.pid}, {how})")
        return dead

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        for index_queue in self.index_queues:
            with contextlib.suppress(OSError, ValueError):
                index_queue.put(None)
        deadline = time.monotonic() + _JOIN_GRACE_S
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.is_alive():  # stuck in a slow __getitem__: stop it
                process.terminate()
                process.join(_JOIN_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
        for channel in [*self.index_queues, self.result_queue]:
            channel.cancel_join_thread()  # never block on data a dead reader will not take
            channel.close()
        self.reader.close()
        # Workers remove their own segments when they exit normally; this catches killed ones.
        remove_segments(self.prefix)
        for process in self.processes:
            process.close()


class _MultiProcessIterator:
    """One epoch over worker processes; yields batches in sampler order."""

    def __init__(self, loader: DataLoader, pool: _WorkerPool, seeds: tuple[int, int, int]) -> None:
        self._pool = pool
        self._seed, self._seed_epoch, self._first_batch = seeds
        self._epoch = pool.new_epoch()
        self._loader_timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._iterable = loader.is_iterable
        self._indices = None if loader.is_iterable else iter(loader._index_sampler)
        self._sent = 0  # batches requested so far
        self._received = 0  # index of the next batch to yield
        self._sampler_done = False
        self._worker_of: dict[int, int] = {}
        self._ready: dict[int, tuple[str, Any]] = {}
        self._exhausted_workers: set[int] = set()
        self._next_worker = itertools.cycle(range(pool.num_workers))
        self._done = False
        for _ in range(loader._prefetch * pool.num_workers):
            self._request()

    def __iter__(self):
        return self

    @property
    def transfer_stats(self) -> dict[str, int]:
        """Bytes that reached this process so far: ``queue_bytes`` through the result queue
        (pickled descriptors) and ``shared_bytes`` through shared memory, and ``batches``."""
        reader = self._pool.reader
        return {
            "batches": reader.batches,
            "queue_bytes": reader.queue_bytes,
            "shared_bytes": reader.shared_bytes,
        }

    def _request(self) -> None:
        """Send the next batch's task to the next worker (round robin)."""
        if self._sampler_done:
            return
        if self._iterable:
            if len(self._exhausted_workers) == self._pool.num_workers:
                self._sampler_done = True
                return
            worker_id = next(self._next_worker)
            while worker_id in self._exhausted_workers:
                worker_id = next(self._next_worker)
            indices = None
        else:
            indices = next(self._indices, None)
            if indices is None:
                self._sampler_done = True
                return
            worker_id = self._sent % self._pool.num_workers
        # The batch's seed counts batches from the epoch's start, so resuming mid-epoch at
        # ``start_batch`` gives each batch the seed it had in the uninterrupted epoch.
        seed = _derive_seed(self._seed, self._seed_epoch, self._first_batch + self._sent)
        self._pool.index_queues[worker_id].put(("task", self._epoch, self._sent, indices, seed))
        self._worker_of[self._sent] = worker_id
        self._sent += 1

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        if self._pool.epoch != self._epoch:
            raise DataLoaderError(
                "[DataLoader] this iterator was replaced by a newer one over the same "
                "persistent workers",
                help="finish one epoch's loop before starting the next iter(loader)",
            )
        try:
            while True:
                if self._received in self._ready:
                    kind, value = self._ready.pop(self._received)
                    worker_id = self._worker_of.pop(self._received)
                    self._received += 1
                    if kind == "end":
                        self._exhausted_workers.add(worker_id)
                        self._request()
                        continue
                    if kind == "error":
                        raise value.rebuild(self._received - 1)
                    self._request()
                    return value
                if self._received >= self._sent:
                    self._request()
                    if self._received >= self._sent:
                        self._finish()
                        raise StopIteration
                    continue
                self._receive_one()
        except StopIteration:
            raise
        except BaseException:  # worker errors, dead workers, timeouts and KeyboardInterrupt
            self._finish(failed=True)
            raise

    def _receive_one(self) -> None:
        """Wait for one message from the workers; store its batch (copied out of shared memory,
        slot handed back) under its batch index."""
        pool = self._pool
        waited_from = time.monotonic()
        while True:
            wait = _LIVENESS_POLL_S
            if self._loader_timeout:
                remaining = self._loader_timeout - (time.monotonic() - waited_from)
                wait = max(0.0, min(wait, remaining))
            try:
                worker_id, epoch, batch_index, kind, payload = pool.result_queue.get(timeout=wait)
                break
            except queue.Empty:
                pass
            dead = pool.dead_workers()
            if dead:
                raise DataLoaderError(
                    f"[DataLoader] {', '.join(dead)} exited unexpectedly while batch "
                    f"{self._received} was awaited",
                    help="a worker killed by SIGKILL often ran out of memory (check dmesg); "
                    "SIGSEGV points at a crash in native code. Try num_workers=0 to see the "
                    "error in the main process",
                )
            if self._loader_timeout and time.monotonic() - waited_from >= self._loader_timeout:
                worker = self._worker_of.get(self._received)
                raise DataLoaderTimeoutError(
                    f"[DataLoader] timed out after {self._loader_timeout} s waiting for batch "
                    f"{self._received} from worker {worker}",
                    help="raise timeout=..., or look for a slow or blocking __getitem__",
                )
        if kind == "ok":
            slot, batch = pool.reader.read(worker_id, payload)
            pool.index_queues[worker_id].put(("release", slot))
        else:
            batch = payload
        if epoch == -1:  # worker_init_fn failed
            raise payload.rebuild(None)
        if epoch != self._epoch:
            return  # left over from an abandoned epoch of persistent workers
        self._ready[batch_index] = (kind, batch)

    def _finish(self, failed: bool = False) -> None:
        self._done = True
        if failed or not self._persistent:
            self._pool.shutdown()


def _pin_batch(batch: Any) -> Any:
    """Copy every array of a batch into page-locked memory (CuPy); a no-op on the CPU."""
    from ._transport import _pinned_copy, flatten, pinning_available, unflatten

    if not pinning_available():
        return batch
    arrays: list = []
    skeleton = flatten(batch, arrays)
    return unflatten(skeleton, [_pinned_copy(array) for array in arrays])


__all__ = ["DataLoader", "DataLoaderError", "DataLoaderTimeoutError", "RemoteError"]
