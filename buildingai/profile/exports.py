"""A trace as files other tools open: Chrome trace events (Perfetto, chrome://tracing) and
speedscope's evented profiles.

Both are built from one stream of open/close records per thread: a frame (phase, module,
``grad of <op>``) opens at the start of the first op under it and closes at the end of the last
consecutive one, so two back-to-back calls of the same module read as one span.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from .summary import event_cost


def frame_records(events: list) -> Iterator[tuple[str, str, int, object]]:
    """``(kind, name, time_ns, event)`` with kind ``"O"`` (open) or ``"C"`` (close), properly
    nested and in time order, for ``events`` of one thread; ``event`` is the op event for a
    leaf, None for a frame above it."""
    opened: list[list] = []  # [name, end_ns] of the frames open now, outermost first
    for event in sorted(events, key=lambda e: e.start_ns):
        stack = event.stack
        keep = 0
        while keep < len(opened) and keep < len(stack) and opened[keep][0] == stack[keep]:
            keep += 1
        while len(opened) > keep:
            name, end = opened.pop()
            yield "C", name, end, None
        for name in stack[keep:]:
            opened.append([name, event.start_ns])
            yield "O", name, event.start_ns, None
        yield "O", event.name, event.start_ns, event
        yield "C", event.name, event.end_ns, event
        for frame in opened:
            frame[1] = max(frame[1], event.end_ns)
    while opened:
        name, end = opened.pop()
        yield "C", name, end, None


def _by_thread(events: list) -> dict[int, list]:
    threads: dict[int, list] = {}
    for event in events:
        threads.setdefault(event.thread, []).append(event)
    return threads


def chrome_trace(tracer) -> dict:
    """The Chrome trace-event document of ``tracer``: an "X" event per op (args: module path,
    FLOPs, bytes, array time), per frame above the ops, and per step (its own track)."""
    origin = tracer.start_ns
    costs: dict = {}
    trace_events = []
    for thread, events in _by_thread(tracer.events).items():
        starts: list[int] = []
        for kind, name, time_ns, event in frame_records(events):
            if kind == "O":
                starts.append(time_ns)
                continue
            start = starts.pop()
            record = {
                "name": name,
                "ph": "X",
                "ts": (start - origin) / 1e3,
                "dur": (time_ns - start) / 1e3,
                "pid": os.getpid(),
                "tid": thread,
                "cat": "frame",
            }
            if event is not None and event.op is not None:
                flops, moved = event_cost(event, costs)
                record["cat"] = event.stack[0]
                record["args"] = {
                    "module": ".".join(event.stack[1:]),
                    "flops": flops,
                    "bytes": moved,
                    "array_us": event.forward_ns / 1e3,
                    "step": event.step,
                }
            elif event is not None:
                record["cat"] = "data"
            trace_events.append(record)
    previous = tracer.start_ns
    for index, (end, peak) in enumerate(zip(tracer.step_ends_ns, tracer.step_peaks)):
        record = {
            "name": f"step {index}",
            "ph": "X",
            "ts": (previous - origin) / 1e3,
            "dur": (end - previous) / 1e3,
            "pid": os.getpid(),
            "tid": "steps",
            "cat": "step",
        }
        if peak is not None:
            record["args"] = {"peak_bytes": peak}
        trace_events.append(record)
        previous = end
    return {"traceEvents": trace_events, "displayTimeUnit": "ms"}


def write_chrome_trace(tracer, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.write_text(json.dumps(chrome_trace(tracer)))
    return path


def speedscope(tracer, name: str = "BuildingAI") -> dict:
    """The speedscope document of ``tracer``: one evented profile per thread, in microseconds."""
    frames: list[dict] = []
    index: dict[str, int] = {}
    profiles = []
    for thread, events in _by_thread(tracer.events).items():
        records = []
        for kind, frame, time_ns, _ in frame_records(events):
            if frame not in index:
                index[frame] = len(frames)
                frames.append({"name": frame})
            records.append(
                {"type": kind, "frame": index[frame], "at": (time_ns - tracer.start_ns) / 1e3}
            )
        profiles.append(
            {
                "type": "evented",
                "name": f"{name} thread {thread}",
                "unit": "microseconds",
                "startValue": records[0]["at"] if records else 0,
                "endValue": records[-1]["at"] if records else 0,
                "events": records,
            }
        )
    return {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "buildingai.profile",
    }


def write_speedscope(tracer, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.write_text(json.dumps(speedscope(tracer)))
    return path
