"""Debug mode's ledger: every collective a rank calls (sequence number, op, shape, dtype, call
site), and the check that all ranks call the same one at the same step."""

from __future__ import annotations

import collections
import os
import sys
import zlib

import numpy as np

# what a rank can be waiting in; a probe answer sends the index
OPS = ("barrier", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "gather", "scatter",
       "send", "recv", "ledger check")  # fmt: skip
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Entry(collections.namedtuple("Entry", "seq op shape dtype site")):
    """One collective call: ``seq`` counts the group's collectives, ``site`` is ``file:line``."""

    def describe(self) -> str:
        return f"{self.op}(shape {self.shape}, {self.dtype}) #{self.seq} at {self.site}"

    def signature(self) -> np.ndarray:
        """The entry as int64s that must be equal on every rank (the site may differ)."""
        return np.array([self.seq, zlib.crc32(self.op.encode()), zlib.crc32(str(self.shape).encode()),
                         zlib.crc32(self.dtype.encode())], np.int64)  # fmt: skip


class Ledger:
    """The last ``capacity`` collectives of one rank in one group, oldest first."""

    def __init__(self, capacity: int = 1000) -> None:
        self.entries: collections.deque[Entry] = collections.deque(maxlen=capacity)

    def record(self, entry: Entry) -> None:
        self.entries.append(entry)

    def last_line(self) -> str:
        return self.entries[-1].describe() if self.entries else ""

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def call_site() -> str:
    """``file:line`` of the innermost caller outside the buildingai package (the user's line)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def mismatch_report(entries: list[Entry], ranks: list[int]) -> str:
    """Name the ranks whose call differs from the most common one, with every rank's call."""
    signatures = [tuple(entry.signature()[1:]) for entry in entries]
    common = collections.Counter(signatures).most_common(1)[0][0]
    diverged = [ranks[i] for i, signature in enumerate(signatures) if signature != common]
    if len(diverged) * 2 == len(entries):  # a tie (two ranks): name every rank that differs from 0
        diverged = [ranks[i] for i, s in enumerate(signatures) if s != signatures[0]]
    calls = "; ".join(f"rank {ranks[i]}: {entry.describe()}" for i, entry in enumerate(entries))
    names = ", ".join(str(rank) for rank in diverged)
    return f"rank{'s' if len(diverged) > 1 else ''} {names} diverged. {calls}"
