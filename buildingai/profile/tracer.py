"""``TimeTracer``: wall time of every op, attributed to the module that created it.

    with TimeTracer() as tracer:
        train_epoch(model, data)
    print(tracer.summary())
    tracer.generate_flamegraph("profile.html")

It is a dispatch mode, active only inside its block: with no tracer there is
nothing to pay. Each op becomes an ``OpEvent`` whose frame stack is its phase and module path:
``forward > Net > encoder > layers.0 > fc1 > linear``; a backward op is filed under the module
whose forward op it differentiates (``backward > Net > ... > grad of linear > matmul``), found from
the graph node the engine is running (``engine.running_node()``), which the tracer tagged with
its module path when the forward op ran. Ops outside any module with recording off (optimizer
steps, evaluation) are filed under ``no_grad``; a DataLoader's wait for its next batch is its own
``data wait`` frame. A frozen graph runs its plan without dispatch, so its ops are not seen
(its time shows as Python outside ops): trace the eager function to see them. The backward walk
runs as it does untraced (``sees_gradient_sums`` False): the gradient sums it makes in place and
a split's pieces it copies into their blocks are no ops, and their time is the engine's own; as
in an untraced step, their arrays are not among the tensors ``buildingai.memory`` counts (the
step peaks here).

A child of a ``Sequential`` or ``ModuleList`` is named by its index and class, ``0 (Linear)``.
The first call of each op (per op and input dtypes and ranks) is marked ``first_call``: in a
fresh process it pays one-time costs (imports, compiling a kernel, starting threads, filling
caches), and the summary says how much more than the later calls those first calls took. Run a
warm-up step before tracing, or ``TimeTracer(skip_first_calls=True)`` to leave them out.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from time import perf_counter_ns
from typing import NamedTuple

from ..autograd.dispatch import COMPUTE_TIME, DispatchMode, dispatch_mode
from ..autograd.engine import running_node
from ..autograd.state import MODULE_CALLS, current_state, module_path
from ..autograd.tensor import Tensor
from .exports import write_chrome_trace, write_speedscope
from .flamegraph import write_flamegraph
from .summary import summarize

DATA_WAIT = "data wait"


class OpEvent(NamedTuple):
    """One op (or one wait for a batch) as the tracer saw it.

    Attributes:
        name: the op's name (``"next batch"`` for a DataLoader wait).
        stack: the frames above it, outermost first: phase, module names, ``grad of <op>``.
        start_ns / end_ns: ``perf_counter_ns`` at dispatch's ``before_op`` and ``after_op``.
        forward_ns: the part spent computing the array (the op record's ``forward``, or the
            kernel ``buildingai.accel`` registered for it).
        step: the number of ``tracer.step()`` calls before it.
        thread: the id of the thread that ran it.
        op: the op record (None for a wait), and ``specs`` / ``attrs`` of the call, from which
            ``cost`` gives its FLOPs and bytes.
        first_call: the first call of this op with these input dtypes and ranks in the trace
            (``first_calls.one_time_costs`` says whether it paid one-time costs).
    """

    name: str
    stack: tuple
    start_ns: int
    end_ns: int
    forward_ns: int
    step: int
    thread: int
    op: object = None
    specs: tuple = ()
    attrs: dict | None = None
    first_call: bool = False

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def frames(self) -> tuple:
        """The whole stack, this event's own name last."""
        return self.stack + (self.name,)


_new_event = tuple.__new__


class _Pending(threading.local):
    """Start times of the ops running on this thread (ops may nest inside a forward)."""

    def __init__(self) -> None:
        self.starts: list[int] = []


class TimeTracer(DispatchMode):
    """Record every op run inside ``with TimeTracer() as tracer:`` on this thread (and the
    ``parallel()`` branches it starts), with its module, phase and timings.

    ``tracer.step()`` marks the end of a training step: later events carry the next step
    number, and the step's peak memory is recorded when ``buildingai.memory`` is available
    (the tracer resets that peak counter when it starts and at each step).

    Args:
        skip_first_calls: leave the first call of each op (per input dtypes and ranks) out of
            the events: in a fresh process it pays one-time costs. Their time is kept apart
            (``first_calls_ns``, ``first_calls_skipped``) and said by the summary. By default
            they are recorded and marked (``OpEvent.first_call``), and the summary says how
            much more than later calls they took.
    """

    # the backward runs as it does unwatched: its in-place sums and block copies are no ops, and
    # their time is the engine's own (outside the ops), as in a step nobody profiles
    sees_gradient_sums = False

    def __init__(self, *, skip_first_calls: bool = False) -> None:
        self.skip_first_calls = skip_first_calls
        self.first_calls_ns = 0  # time of the first calls left out (skip_first_calls=True)
        self.first_calls_skipped = 0
        self.events: list[OpEvent] = []
        self.step_count = 0
        self.step_ends_ns: list[int] = []
        self.step_peaks: list[int | None] = []
        self.start_ns = self.end_ns = 0
        self._pending = _Pending()
        self._lock = threading.Lock()
        self._scope = None
        self._memory = None
        self._seen_calls: set = set()  # (op name, input dtypes and ranks) already traced
        self._labelled_paths: dict[tuple, tuple] = {}

    # ----- the block ----------------------------------------------------------------------
    def __enter__(self) -> TimeTracer:
        if self._scope is not None:
            raise RuntimeError("[TimeTracer] this tracer is already active; use a new one")
        self._memory = _memory_module()
        if self._memory is not None:
            self._memory.start_tracking()  # each step's peak; off again when the block ends
            self._memory.reset_peak()
        self._scope = dispatch_mode(self)
        self._scope.__enter__()
        self.start_ns = perf_counter_ns()
        return self

    def __exit__(self, *exc_info) -> None:
        self.end_ns = perf_counter_ns()
        scope, self._scope = self._scope, None
        scope.__exit__(*exc_info)
        unfinished = self.events and (
            not self.step_ends_ns or self.events[-1].start_ns > self.step_ends_ns[-1]
        )
        if unfinished:  # ops after the last step() form one more step
            self._close_step(self.end_ns)
        if self._memory is not None:
            self._memory.stop_tracking()

    def step(self) -> None:
        """Mark the end of one training step (and record its peak memory)."""
        self._close_step(perf_counter_ns())
        self.step_count += 1

    def _close_step(self, now: int) -> None:
        self.step_ends_ns.append(now)
        peak = None
        if self._memory is not None:
            peak = int(self._memory.stats()["peak"])
            self._memory.reset_peak()
        self.step_peaks.append(peak)

    # ----- the dispatch mode ----------------------------------------------------------------
    def before_op(self, op, inputs: tuple, attrs: dict) -> None:
        COMPUTE_TIME.ns = 0
        self._pending.starts.append(perf_counter_ns())

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        end = perf_counter_ns()
        starts = self._pending.starts
        if not starts:  # the tracer began while this op was already running
            return
        start = starts.pop()
        specs = tuple(
            [(v.array.shape, v.array.dtype) if isinstance(v, Tensor) else v for v in inputs]
        )
        call = (op.name,) + tuple(
            [(v.array.dtype, v.array.ndim) for v in inputs if isinstance(v, Tensor)]
        )
        first_call = call not in self._seen_calls
        if first_call:
            self._seen_calls.add(call)
        running = running_node()
        if running is None:
            path = self._labelled(module_path())
            if path or current_state().grad_enabled:
                stack = ("forward",) + path
            else:
                stack = ("no_grad",)
        else:
            path = getattr(running, "profile_path", None)
            origin = ("(forward not traced)",) if path is None else path
            stack = ("backward",) + origin + ("grad of " + running.op.name,)
        node = output._node
        if node is not None:  # backward ops learn their module from the forward op's node
            node.profile_path = path
        if first_call and self.skip_first_calls:
            self.first_calls_ns += end - start
            self.first_calls_skipped += 1
            return
        # tuple.__new__ builds the named tuple without its Python-level __new__: this runs per op
        self.events.append(
            _new_event(
                OpEvent,
                (
                    op.name,
                    stack,
                    start,
                    end,
                    COMPUTE_TIME.ns,
                    self.step_count,
                    threading.get_ident(),
                    op,
                    specs,
                    attrs,
                    first_call,
                ),
            )
        )

    def _labelled(self, path: tuple) -> tuple:
        """``path`` with each index-named module given its class: ``("Net", "0 (Linear)")``
        for the first child of a Sequential. Computed once per path."""
        labelled = self._labelled_paths.get(path)
        if labelled is None:
            names = list(path)
            modules = MODULE_CALLS.stacks[0]  # the modules being called, aligned at the end
            offset = len(names) - len(modules)
            for index, module in enumerate(modules):
                if index + offset >= 0 and names[index + offset].isdigit():
                    names[index + offset] += f" ({type(module).__name__})"
            labelled = self._labelled_paths[path] = tuple(names)
        return labelled

    def data_wait(self, start_ns: int, end_ns: int) -> None:
        """Called by a DataLoader iterator after waiting ``start_ns``..``end_ns`` for a batch."""
        self.events.append(
            OpEvent("next batch", (DATA_WAIT,), start_ns, end_ns, 0, self.step_count,
                    threading.get_ident())
        )  # fmt: skip

    # ----- results ------------------------------------------------------------------------
    @property
    def wall_ns(self) -> int:
        """The traced block's wall time (up to now while it runs)."""
        end = self.end_ns if self._scope is None else perf_counter_ns()
        return end - self.start_ns

    def summary(self, top: int = 20):
        """Per op and per module: calls, wall time, FLOPs and bytes (from the op records'
        ``cost``), achieved GFLOP/s, and dispatch time beside array time; ``str()`` of it is
        a table, ``.ops`` / ``.modules`` / ``.totals`` hold the numbers."""
        return summarize(self, top=top)

    def generate_flamegraph(
        self, path: str | os.PathLike, *, title: str = "BuildingAI profile", graph=None,
        graph_inputs=None,
    ):  # fmt: skip
        """Write one self-contained interactive HTML file (an icicle chart: click a frame to
        zoom, hover for numbers, search by name) of module -> op time. ``graph`` (a model or
        function, with ``graph_inputs`` as for ``plot_computation_graph``'s ``example_inputs``)
        adds its computation graph: the DOT file beside the page, linked and shown in it."""
        return write_flamegraph(self, path, title=title, graph=graph, graph_inputs=graph_inputs)

    def export_chrome_trace(self, path: str | os.PathLike):
        """Write the trace as Chrome trace-event JSON (Perfetto, chrome://tracing): one
        complete ("X") event per op, per module span and per step."""
        return write_chrome_trace(self, path)

    def export_speedscope(self, path: str | os.PathLike):
        """Write the trace in speedscope's JSON format (an evented profile per thread)."""
        return write_speedscope(self, path)


@functools.cache
def _memory_module():
    """``buildingai.memory`` when this build has it (peak memory per step), else None; looked
    up once, since a failed import searches the disk each time."""
    try:
        return importlib.import_module("buildingai.memory")
    except ImportError:
        return None
