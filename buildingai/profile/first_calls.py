"""Which first calls of a trace paid one-time costs.

In a fresh process the first call of an op pays for things no later call pays for: a lazy
import, compiling a kernel for a dtype and rank, starting a thread pool, filling a cache. A
trace of the first steps then shows that start-up, not the steady state. The tracer marks the
first call of each op with the same input dtypes and ranks (``OpEvent.first_call``); a first
call *paid one-time costs* when it took at least ``FACTOR`` times, and ``MIN_EXCESS_NS`` more
than, the median of that op's later calls with the same dtypes and ranks. An op called once in
the trace has nothing to compare with and is never flagged.
"""

from __future__ import annotations

from statistics import median

FACTOR = 3.0
MIN_EXCESS_NS = 100_000  # the least extra time of a first call that counts as a start-up cost


def call_key(event) -> tuple:
    """The op's name and its array inputs' dtypes and ranks: what the tracer counts calls by."""
    arrays = [
        (spec[1], len(spec[0]))
        for spec in event.specs
        if type(spec) is tuple and len(spec) == 2 and type(spec[0]) is tuple
    ]
    return (event.name, *arrays)


def one_time_costs(events) -> dict[int, int]:
    """``{index of a first-call event: ns it took beyond its later calls' median}`` for the
    first calls that paid one-time costs."""
    later: dict[tuple, list[int]] = {}
    firsts: dict[tuple, int] = {}
    for index, event in enumerate(events):
        if event.op is None:
            continue
        key = call_key(event)
        if event.first_call:
            firsts[key] = index
        else:
            later.setdefault(key, []).append(event.duration_ns)
    flagged = {}
    for key, index in firsts.items():
        if key not in later:
            continue
        typical = median(later[key])
        duration = events[index].duration_ns
        if duration >= FACTOR * typical and duration - typical >= MIN_EXCESS_NS:
            flagged[index] = int(duration - typical)
    return flagged
