"""What a rank's collective call is (sequence number, op, shape, dtype, its arguments, call site):
the fingerprint every rank compares before a collective moves data, debug mode's ledger of calls,
and the report that names the ranks whose calls differ."""

from __future__ import annotations

import collections
import os
import sys
import zlib

# what a rank can be waiting in; a probe answer sends the index
OPS = ("barrier", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "gather", "scatter",
       "send", "recv")  # fmt: skip
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_FINGERPRINT_BITS = (1 << 62) - 1  # non-negative, and its negation fits an int64 too
_DTYPE_CODES: dict = {}


class Entry(collections.namedtuple("Entry", "seq op shape dtype site detail", defaults=("",))):
    """One collective call: ``seq`` counts the group's collectives, ``site`` is ``file:line``,
    ``detail`` the arguments that must agree too (``op='mean'``, ``src=0``), or ""."""

    def describe(self) -> str:
        arguments = f", {self.detail}" if self.detail else ""
        return f"{self.op}(shape {self.shape}, {self.dtype}{arguments}) #{self.seq} at {self.site}"

    def signature(self) -> tuple:
        """What must be equal on every rank (the site may differ)."""
        return (self.seq, self.op, self.shape, self.dtype, self.detail)


def fingerprint(seq: int, opcode: int, shape: tuple, dtype, detail: str = "") -> int:
    """A 62-bit integer that differs, but for a 2**-62 chance, between two calls that differ in
    sequence number, op, shape, dtype or ``detail``. Hashes of ints and tuples of ints are the
    same in every process (string hashes are not: the dtype and detail go through crc32)."""
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        code = _DTYPE_CODES[dtype] = zlib.crc32(str(dtype).encode())
    extra = zlib.crc32(detail.encode()) if detail else 0
    return hash((seq, opcode, shape, code, extra)) & _FINGERPRINT_BITS


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


def _inside_package(filename: str, known: dict = {}) -> bool:  # noqa: B006 (a cache)
    inside = known.get(filename)
    if inside is None:
        inside = known[filename] = os.path.abspath(filename).startswith(_PACKAGE)
    return inside


def call_site() -> str:
    """``file:line`` of the innermost caller outside the buildingai package (the user's line)."""
    frame = sys._getframe(1)
    while frame is not None and _inside_package(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def mismatch_report(entries: list[Entry], ranks: list[int]) -> str:
    """Name the ranks whose call differs from the most common one, with every rank's call."""
    signatures = [entry.signature() for entry in entries]
    common = collections.Counter(signatures).most_common(1)[0][0]
    diverged = [ranks[i] for i, signature in enumerate(signatures) if signature != common]
    if len(diverged) * 2 == len(entries):  # a tie (two ranks): name every rank that differs from 0
        diverged = [ranks[i] for i, s in enumerate(signatures) if s != signatures[0]]
    calls = "; ".join(f"rank {ranks[i]}: {entry.describe()}" for i, entry in enumerate(entries))
    names = ", ".join(str(rank) for rank in diverged)
    return f"rank{'s' if len(diverged) > 1 else ''} {names} diverged. {calls}"
