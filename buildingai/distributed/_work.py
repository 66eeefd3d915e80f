"""A started collective (``Work``), and the check every rank makes before data moves: the ranks'
calls must agree in op, shape, dtype and arguments, or every rank raises naming each call.

The check is one small all-reduce per collective, on a communicator of its own: each rank sends
the pair (fingerprint, -fingerprint) and the maximum over the ranks comes back. All fingerprints
are equal exactly when the result is the rank's own pair again, so every rank reaches the same
verdict without a second message. Only then does the payload start, so a tensor of another shape
or dtype never meets MPI: no short read, no bytes reinterpreted, no write past a buffer.

Payloads start in call order (MPI needs the same order of collectives on every rank): an
``async_op`` collective waits in its group's queue until its check completes, which ``wait()`` or
``is_completed()`` notices. A send travels with a small header (dtype, shape, call site) that the
receiver compares with its own tensor before it uses the data.
"""

from __future__ import annotations

import collections

import numpy as np

from ._ledger import OPS, Entry, fingerprint, mismatch_report
from .errors import CollectiveMismatchError

HEADER_BYTES = 1024  # a send's header: "dtype|shape|site", NUL-padded (64 dims fit)


class Work:
    """A started collective. ``wait()`` blocks until it is done (raising at the group's timeout)
    and writes the results into the collective's tensors, in place (each keeps its shape);
    ``is_completed()`` asks without blocking."""

    def __init__(self, group, entry: Entry, detail: str, start, finish, check=None,
                 queue=None) -> None:  # fmt: skip
        self.group, self.entry, self.detail = group, entry, detail
        self.collective, self.seq = entry.op, entry.seq
        self.start, self.finish = start, finish
        self.check = check  # (requests, verify) to complete before the result is used
        self.queue = queue  # the group's queue of collectives whose payload has not started
        self.pendings = None
        self.started = start is None
        self.done = False
        self.keep = None

    def is_completed(self) -> bool:
        if self.done:
            return True
        if not self.started:
            _start_in_order(self, block=False)
            if not self.started:
                return False
        if self.check is not None:
            if not self.group.backend.test(self.check[0]):
                return False
            self._verify()
        return self.pendings is None or self.group.backend.test(self.pendings)

    def wait(self) -> bool:
        if self.done:
            return True
        if not self.started:
            _start_in_order(self, block=True)
        if self.check is not None:
            self._verify()
        self._wait_for(self.pendings)
        self.done, self.keep = True, None
        if self.group.status is not None:
            self.group.status.left()
        if self.finish is not None:
            self.finish()
        return True

    def _wait_for(self, pendings) -> None:
        try:
            self.group.wait(pendings, self.collective, self.seq, OPS.index(self.collective),
                            self.detail)  # fmt: skip
        except BaseException:
            self._abandon()
            raise

    def _verify(self) -> None:
        requests, verify = self.check
        self._wait_for(requests)
        self.check = None
        try:
            verify()
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """MPI may still write into this work's buffers (a receive that matched already, a
        collective another rank completes later): keep them, and the requests, alive for as long
        as the process lives, rather than let their memory be reused."""
        self.group.abandoned.append(self)

    def __repr__(self) -> str:
        state = "done" if self.done else "pending"
        return f"Work({self.collective} #{self.seq}, {self.detail}, {state})"


def _start_in_order(work: Work, block: bool) -> None:
    """Start the payloads queued before ``work`` and ``work``'s own, each once its check passed;
    without ``block``, stop at the first check that has not completed yet."""
    queue = work.queue
    while not work.started:
        head = queue[0]
        waiting = head.check is not None and not head.group.backend.test(head.check[0])
        if waiting and not block:
            return
        queue.popleft()
        if head.check is not None:
            head._verify()  # raises on every rank when the calls differ
        head.pendings, head.start, head.started = head.start(), None, True


def collective(group, entry: Entry, detail: str, start, finish, async_op: bool, keep=None):
    """Check ``entry`` against the other ranks' calls, then run ``start()`` (which posts the
    payload and returns the backend's requests); ``finish()`` writes the results at the end.
    Returns a ``Work`` with ``async_op``, else waits for it and returns None."""
    check = None
    if group.size > 1:
        mine = fingerprint(entry.seq, OPS.index(entry.op), entry.shape, entry.dtype, entry.detail)
        pair = np.array([mine, -mine], np.int64)
        check = (group.backend.agree(pair), lambda: _compare(group, entry, pair, mine))
    queue: collections.deque = group.unstarted
    work = Work(group, entry, detail, start, finish, check, queue)
    work.keep = keep  # a temporary buffer the backend reads until the work is done
    queue.append(work)
    if not async_op:
        work.wait()
        return None
    _start_in_order(work, block=False)  # no other rank is late: start at once
    return work


def _compare(group, entry: Entry, pair: np.ndarray, mine: int) -> None:
    """Every rank holds the same maximum: all agree, or all raise here, together."""
    if pair[0] == mine and pair[1] == -mine:
        return
    entries = [Entry(*fields) for fields in group.backend.allgather_object(tuple(entry))]
    group.broken = f"collective #{entry.seq} differed across ranks"
    ops = {other.op for other in entries}
    what = f"called {entry.op} differently" if len(ops) == 1 else "called different collectives"
    raise CollectiveMismatchError(
        f"[{entry.op}] ranks {what} at step #{entry.seq}: " + mismatch_report(entries, group.ranks),
        help="every rank must call the same collectives, with the same shapes, dtypes and "
        "arguments, in the same order; look at the line of the rank that diverged",
    )


# ----- point to point ------------------------------------------------------------------------------
def header_of(entry: Entry) -> np.ndarray:
    """A send's header: its dtype, shape and call site, as bytes the receiver decodes."""
    head = f"{entry.dtype}|{entry.shape}|".encode()
    site = entry.site.encode("utf-8", "replace")[len(head) - HEADER_BYTES :]  # the end of a path
    header = np.zeros(HEADER_BYTES, np.uint8)
    text = head + site
    header[: len(text)] = np.frombuffer(text, np.uint8)
    return header


def receiving(group, entry: Entry, detail: str, src: int, pendings, header: np.ndarray,
              header_requests, finish, async_op: bool):  # fmt: skip
    """A recv whose payload is posted already: its result is used only after the sender's header
    matched this rank's tensor (the receiver raises otherwise, naming both sides)."""

    def verify() -> None:
        dtype, shape, site = bytes(header).rstrip(b"\0").decode("utf-8", "replace").split("|", 2)
        if (dtype, shape) == (entry.dtype, str(entry.shape)):
            return
        group.broken = f"recv #{entry.seq} got a message of another shape or dtype"
        raise CollectiveMismatchError(
            f"[recv] rank {group.ranks[group.rank]} receives into shape {entry.shape}, "
            f"{entry.dtype} at {entry.site}, but rank {src} sent shape {shape}, {dtype} at {site}",
            help="send and recv tensors of the same shape and dtype (recv the shape first when "
            "it varies)",
        )

    work = Work(group, entry, detail, None, finish, (header_requests, verify))
    work.pendings = pendings
    if async_op:
        return work
    work.wait()
    return None
