"""The tables of a trace: per op and per module, time, FLOPs, bytes and achieved GFLOP/s.

FLOPs and bytes come from each op record's ``cost`` on the call's input specs (the same numbers
``Graph.summary`` shows); an op whose record cannot say counts as 0. Time is split three ways:
array time (in the record's ``forward`` or the kernel registered for it), dispatch time (the
rest of the op's call: checks, wrapping, graph recording, dispatch modes) and Python time
outside ops (the user's code, module calls, the optimizer's loops).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BuildingAIError
from ..ops.abstract import ValueSpec, concrete
from .first_calls import one_time_costs

_PHASES = ("forward", "backward", "no_grad")


@dataclass
class Row:
    """Totals of one op name or one module."""

    name: str
    calls: int = 0
    time_ns: int = 0
    array_ns: int = 0
    flops: int = 0
    bytes: int = 0
    backward_ns: int = 0

    @property
    def dispatch_ns(self) -> int:
        return self.time_ns - self.array_ns

    @property
    def gflops_per_s(self) -> float:
        return self.flops / self.time_ns if self.time_ns else 0.0  # FLOP/ns == GFLOP/s

    def add(self, duration: int, array: int, flops: int, moved: int, backward: bool) -> None:
        self.calls += 1
        self.time_ns += duration
        self.array_ns += array
        self.flops += flops
        self.bytes += moved
        if backward:
            self.backward_ns += duration

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "time_ms": self.time_ns / 1e6,
            "array_ms": self.array_ns / 1e6,
            "dispatch_ms": self.dispatch_ns / 1e6,
            "backward_ms": self.backward_ns / 1e6,
            "flops": self.flops,
            "bytes": self.bytes,
            "gflops_per_s": self.gflops_per_s,
        }


@dataclass
class ProfileSummary:
    """``ops`` and ``modules``: name -> ``Row``, slowest first; ``totals``: wall time and its
    split (all in ms), FLOPs, steps and per-step peak memory. ``str()`` is the printed table."""

    ops: dict[str, Row]
    modules: dict[str, Row]
    totals: dict
    top: int = 20
    steps: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "ops": {name: row.as_dict() for name, row in self.ops.items()},
            "modules": {name: row.as_dict() for name, row in self.modules.items()},
            "totals": dict(self.totals),
        }

    def __str__(self) -> str:
        totals = self.totals
        lines = [
            f"traced {totals['wall_ms']:.2f} ms: ops {totals['op_ms']:.2f} ms (array "
            f"{totals['array_ms']:.2f} ms, dispatch {totals['dispatch_ms']:.2f} ms), data wait "
            f"{totals['data_wait_ms']:.2f} ms, Python outside ops {totals['python_ms']:.2f} ms; "
            f"{totals['ops']} ops, {_si(totals['flops'])}FLOP, "
            f"{totals['gflops_per_s']:.2f} GFLOP/s over op time",
            "",
            _table("op", list(self.ops.values())[: self.top]),
            "",
            _table("module", list(self.modules.values())[: self.top]),
        ]
        if totals.get("first_calls_skipped"):
            lines += [
                "",
                f"first calls left out (skip_first_calls=True): "
                f"{totals['first_calls_skipped']} calls, {totals['first_calls_ms']:.2f} ms",
            ]
        elif totals.get("one_time_calls"):
            count = totals["one_time_calls"]
            lines += ["", f"first calls: {count} {'op' if count == 1 else 'ops'} took "
                      f"{totals['one_time_ms']:.2f} ms more on their first call than on later ones "
                      "(one-time costs: imports, kernel compilation, thread start-up, caches), "
                      "counted above; run one warm-up step before tracing, or trace with "
                      "TimeTracer(skip_first_calls=True)"]  # fmt: skip
        peaks = [peak for peak in totals.get("step_peak_bytes", []) if peak is not None]
        if peaks:
            lines += ["", "peak memory per step: " + ", ".join(_si(p) + "B" for p in peaks)]
        return "\n".join(lines)

    __repr__ = __str__


def summarize(tracer, top: int = 20) -> ProfileSummary:
    """The ``ProfileSummary`` of ``tracer``'s events."""
    ops: dict[str, Row] = {}
    modules: dict[str, Row] = {}
    costs: dict = {}
    op_ns = array_ns = wait_ns = flops_total = count = 0
    for event in tracer.events:
        duration = event.duration_ns
        if event.op is None:
            wait_ns += duration
            continue
        count += 1
        flops, moved = _cost(event, costs)
        backward = event.stack[0] == "backward"
        op_ns += duration
        array_ns += event.forward_ns
        flops_total += flops
        row = ops.get(event.name) or ops.setdefault(event.name, Row(event.name))
        row.add(duration, event.forward_ns, flops, moved, backward)
        for name in _module_prefixes(event.stack):
            row = modules.get(name) or modules.setdefault(name, Row(name))
            row.add(duration, event.forward_ns, flops, moved, backward)
    wall_ns = tracer.wall_ns
    skipped_ns = getattr(tracer, "first_calls_ns", 0)
    one_time = one_time_costs(tracer.events)
    totals = {
        "wall_ms": wall_ns / 1e6,
        "op_ms": op_ns / 1e6,
        "array_ms": array_ns / 1e6,
        "dispatch_ms": (op_ns - array_ns) / 1e6,
        "data_wait_ms": wait_ns / 1e6,
        "python_ms": max(wall_ns - op_ns - wait_ns - skipped_ns, 0) / 1e6,
        "ops": count,
        "flops": flops_total,
        "gflops_per_s": flops_total / op_ns if op_ns else 0.0,
        "steps": len(tracer.step_ends_ns),
        "step_peak_bytes": list(tracer.step_peaks),
        "one_time_calls": len(one_time),  # first calls that paid one-time costs
        "one_time_ms": sum(one_time.values()) / 1e6,  # what they took beyond later calls
        "first_calls_skipped": getattr(tracer, "first_calls_skipped", 0),
        "first_calls_ms": skipped_ns / 1e6,
    }
    return ProfileSummary(_slowest_first(ops), _slowest_first(modules), totals, top)


def event_cost(event, cache: dict | None = None) -> tuple[int, int]:
    """``(flops, bytes read + written)`` of one op event from its record's ``cost``."""
    return _cost(event, {} if cache is None else cache)


def _cost(event, cache: dict) -> tuple[int, int]:
    key = (id(event.op), event.specs, _attrs_key(event.attrs))
    try:
        found = cache.get(key)
    except TypeError:  # an unhashable input (a raw array): computed every time
        key, found = None, None
    if found is None:
        specs = [
            ValueSpec(tuple(spec[0]), spec[1]) if _is_array_spec(spec) else spec
            for spec in event.specs
        ]
        try:
            flops, read, written = event.op.cost(*specs, **(event.attrs or {}))
            found = (concrete(flops), concrete(read) + concrete(written))
        except (NotImplementedError, BuildingAIError, TypeError, ValueError):
            found = (0, 0)  # a record that cannot say: counted as no work, not as a failure
        if key is not None:
            cache[key] = found
    return found


def _is_array_spec(spec) -> bool:
    return type(spec) is tuple and len(spec) == 2 and type(spec[0]) is tuple


def _attrs_key(attrs) -> object:
    if not attrs:
        return None
    try:
        key = tuple(sorted(attrs.items()))
        hash(key)
        return key
    except TypeError:  # unhashable attributes (lists, arrays): their text tells calls apart
        return repr(sorted(attrs.items(), key=lambda item: item[0]))


def _module_prefixes(stack: tuple) -> list[str]:
    """The module paths an event belongs to, outermost first: ``Net``, ``Net.fc1``."""
    if stack[0] not in _PHASES:
        return []
    names = [frame for frame in stack[1:] if not frame.startswith(("grad of ", "("))]
    return [".".join(names[: depth + 1]) for depth in range(len(names))]


def _slowest_first(rows: dict) -> dict:
    return dict(sorted(rows.items(), key=lambda item: -item[1].time_ns))


def _table(kind: str, rows: list) -> str:
    width = max([len(kind)] + [len(row.name) for row in rows])
    count = "calls" if kind == "op" else "ops"  # a module row counts the ops run inside it
    header = (
        f"{kind:<{width}}  {count:>7}  {'time ms':>9}  {'array ms':>9}  {'dispatch ms':>11}  "
        f"{'FLOPs':>8}  {'bytes':>8}  {'GFLOP/s':>8}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row.name:<{width}}  {row.calls:>7}  {row.time_ns / 1e6:>9.3f}  "
            f"{row.array_ns / 1e6:>9.3f}  {row.dispatch_ns / 1e6:>11.3f}  {_si(row.flops):>8}  "
            f"{_si(row.bytes):>8}  {row.gflops_per_s:>8.2f}"
        )
    return "\n".join(lines)


def _si(count: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= scale:
            return f"{count / scale:.2f}{unit}"
    return f"{count:.0f}"
