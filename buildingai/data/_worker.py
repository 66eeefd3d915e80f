"""What runs inside a DataLoader worker process: seeding, ``get_worker_info``, fetching batches,
and reporting errors back to the main process."""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import random
import signal
import traceback
from dataclasses import dataclass
from typing import Any

from ..backend.random import manual_seed
from ..errors import BuildingAIError
from ._transport import SlotWriter

_PARENT_CHECK_S = 1.0  # how often an idle worker checks that the main process still exists


@dataclass(frozen=True)
class WorkerInfo:
    """Inside a worker: its ``id`` (0-based), ``num_workers``, the ``seed`` it was given, and its
    own copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of the current DataLoader worker process; None in the main process.

    Use it in ``IterableDataset.__iter__`` to give each worker its own share of the stream, or in
    ``worker_init_fn`` to configure the worker's copy of the dataset.
    """
    return _worker_info


def seed_worker(seed: int) -> None:
    """Seed every global random stream of this process: Python's ``random``, NumPy's legacy
    global generator (``np.random.*``) and BuildingAI's default generator."""
    random.seed(seed)
    manual_seed(seed)  # also seeds np.random with seed % 2**32


class DataLoaderError(BuildingAIError, RuntimeError):
    """A DataLoader worker died, timed out, or the loader was misused."""


class DataLoaderTimeoutError(DataLoaderError, TimeoutError):
    """No batch arrived within the DataLoader's ``timeout``."""


class DataLoaderWorkerError(DataLoaderError):
    """An exception raised in a worker that cannot be rebuilt with its own type."""


class _Exhausted(Exception):
    """An IterableDataset has no more items for this worker."""


class _RemoteTraceback(Exception):
    """Carries the worker's formatted traceback as the ``__cause__`` of the re-raised error."""

    def __str__(self) -> str:
        return self.args[0]


class RemoteError:
    """An exception caught in a worker, in a form that always crosses the process boundary."""

    def __init__(self, error: BaseException, worker_id: int) -> None:
        self.worker_id = worker_id
        self.type_name = type(error).__qualname__
        self.message = str(error)
        self.traceback = "".join(traceback.format_exception(error))
        try:  # classes pickle by reference; a class defined inside a function does not
            pickle.dumps(type(error))
            self.error_type = type(error)
        except Exception:
            self.error_type = None

    def rebuild(self, batch_index: int | None) -> BaseException:
        """The exception to raise in the main process: the original type, with the original
        message, the worker id and the worker's traceback."""
        where = "in worker_init_fn" if batch_index is None else f"while loading batch {batch_index}"
        message = (
            f"{self.message}\n\n[DataLoader worker {self.worker_id} raised {self.type_name} "
            f"{where}; its traceback is shown above]"
        )
        error: BaseException | None = None
        if self.error_type is not None:
            try:
                error = self.error_type(message)
            except Exception:
                error = None
        if error is None or str(self.worker_id) not in str(error):
            error = DataLoaderWorkerError(f"{self.type_name}: {message}")
        error.worker_id = self.worker_id
        error.__cause__ = _RemoteTraceback(self.traceback)
        return error


class MapFetcher:
    """Fetches batches of a map-style dataset by index."""

    def __init__(self, dataset, auto_collation: bool, collate_fn) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, indices):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            items = getitems(indices) if getitems else [self.dataset[i] for i in indices]
            return self.collate_fn(items)
        return self.collate_fn(self.dataset[indices])


class IterableFetcher:
    """Fetches batches by pulling items from an iterator over an IterableDataset."""

    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last) -> None:
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last

    def fetch(self, indices=None):
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.iterator))
            except StopIteration:
                raise _Exhausted from None
        items = list(itertools.islice(self.iterator, self.batch_size))
        if not items or (self.drop_last and len(items) < self.batch_size):
            raise _Exhausted
        return self.collate_fn(items)


def worker_loop(
    worker_id: int,
    num_workers: int,
    dataset,
    index_queue,
    result_queue,
    config: dict,
    seed: int,
    shm_prefix: str,
    parent_pid: int,
) -> None:
    """The body of a worker process.

    Messages in: ``("task", epoch, batch_index, indices, seed)`` (the global random streams
    are reseeded with ``seed`` before the batch is loaded), ``("release", slot)``, or None to
    stop. Messages out: ``(worker_id, epoch, batch_index, kind, payload)`` with kind ``"ok"``
    (payload: a shared-memory descriptor), ``"end"`` (an IterableDataset ran out) or ``"error"``
    (payload: a ``RemoteError``).

    A worker whose main process has died (its parent pid changed) stops before its next
    message, even with tasks still queued: nobody would read their batches. Its shared-memory
    segments are unlinked on the way out.
    """
    global _worker_info
    # Ctrl-C reaches the whole process group; the main process decides how to shut down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seed_worker(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    writer = SlotWriter(f"{shm_prefix}_w{worker_id}")
    init_error = None
    try:
        if config["worker_init_fn"] is not None:
            config["worker_init_fn"](worker_id)
    except Exception as error:
        init_error = RemoteError(error, worker_id)
        result_queue.put((worker_id, -1, None, "error", init_error))
    fetcher, fetcher_epoch = None, None
    try:
        while True:
            try:
                message = index_queue.get(timeout=_PARENT_CHECK_S)
            except queue.Empty:
                message = ()
            # Checked before every message, not only when idle: an orphan with a full queue
            # would otherwise load every queued batch for nobody first.
            if os.getppid() != parent_pid:
                break
            if message is None:
                break
            if not message:
                continue
            if message[0] == "release":
                writer.release(message[1])
                continue
            _, epoch, batch_index, indices, batch_seed = message
            if init_error is not None:
                continue
            batch = None
            try:
                seed_worker(batch_seed)
                if fetcher is None or (config["iterable"] and epoch != fetcher_epoch):
                    fetcher, fetcher_epoch = _make_fetcher(dataset, config), epoch
                batch = fetcher.fetch(indices)
                reply = (worker_id, epoch, batch_index, "ok", writer.write(batch))
            except _Exhausted:
                reply = (worker_id, epoch, batch_index, "end", None)
            except Exception as error:
                reply = (worker_id, epoch, batch_index, "error", RemoteError(error, worker_id))
            batch = None  # drop the batch before waiting for the next message
            result_queue.put(reply)
    finally:
        writer.close()
        if os.getppid() != parent_pid:
            result_queue.cancel_join_thread()  # nobody will read what is still buffered
        result_queue.close()


def _make_fetcher(dataset, config: dict):
    if config["iterable"]:
        return IterableFetcher(
            dataset,
            config["auto_collation"],
            config["collate_fn"],
            config["batch_size"],
            config["drop_last"],
        )
    return MapFetcher(dataset, config["auto_collation"], config["collate_fn"])
