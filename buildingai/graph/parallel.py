"""Run independent branches of eager code concurrently: ``with parallel(): ...`` (frozen graphs
run theirs with ``StaticGraph(..., workers=n)``, in ``executor.py``).

NumPy releases the GIL inside its kernels (BLAS calls, ufunc loops), so two branches that spend
their time in large kernels overlap on two cores even from Python threads.

Eager deferral. Inside ``with parallel():`` a dispatch mode (``_Recording``) takes every op, records
it and returns a ``LazyTensor`` instead of running it. On exit the recorded ops run on a thread
pool, each as soon as its inputs are ready, each through ``apply`` (so autograd records them as
usual and backward works). Reading a lazy tensor's values inside the block runs what it needs first,
on the calling thread. A lazy tensor knows its shape and dtype without running, from the op record's
abstract evaluation (``op.infer``); an op whose record cannot say runs at once (after what its
inputs need).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from ..autograd import dispatch
from ..autograd.state import inherit, run_inherited
from ..autograd.tensor import Tensor
from ..ops.abstract import ValueSpec, spec_of
from .graph import GraphError

# ----- eager deferral ------------------------------------------------------------------------

_local = threading.local()  # .block: the parallel() block recording on this thread, if any


_ARRAY_SLOT = Tensor.array  # the slot itself, read past LazyTensor's forcing property


class LazyTensor(Tensor):
    """A tensor recorded inside ``parallel()``: its values exist once its op has run.

    Reading ``.array`` (and anything built on it: ``.data``, ``numpy()``, ``item()``,
    printing) runs the op and what it depends on; shape and dtype are known from the start.
    """

    __slots__ = ("_pending", "_shape", "_dtype")

    @property
    def array(self):
        pending = self._pending
        if pending is not None:
            pending.block.force(pending)
        return _ARRAY_SLOT.__get__(self)

    @array.setter
    def array(self, value):
        _ARRAY_SLOT.__set__(self, value)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)


class _Pending:
    """One recorded op, with the dispatch state and module path it was recorded under (it runs
    under them, on whichever thread runs it)."""

    __slots__ = ("op", "inputs", "attrs", "output", "block", "inherited", "done", "running", "lock")

    def __init__(self, op, inputs, attrs, output, block, inherited) -> None:
        self.op, self.inputs, self.attrs, self.output, self.block = op, inputs, attrs, output, block
        self.inherited = inherited
        self.done = self.running = False
        # reentrant: a read of the output on the thread running its op returns, not deadlocks
        self.lock = threading.RLock()


class _Block:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pending: list = []

    # recording ---------------------------------------------------------------------------
    def record(self, op, inputs: tuple, attrs: dict):
        shape, dtype = _infer(op, inputs, attrs)
        if shape is None:
            return None  # no shape rule: dispatch runs it now (its inputs are forced first)
        first = inputs[0] if inputs else None
        out = dispatch.output_tensor(op, None, first, None, LazyTensor.__new__(LazyTensor))
        out._shape, out._dtype = shape, dtype
        # recorded from the mode's __dispatch__, so inherit() holds the modes below it only: the
        # op runs for real, with the grad mode, modes and module path where it was recorded
        pending = _Pending(op, inputs, attrs, out, self, inherit())
        out._pending = pending
        self.pending.append(pending)
        return out

    # running ---------------------------------------------------------------------------------
    def execute(self, pending: _Pending) -> None:
        with pending.lock:
            if pending.done or pending.running:  # running: a read while its output is built
                return
            pending.running = True
            op, inputs = pending.op, pending.inputs
            try:
                real = run_inherited(pending.inherited, _apply, op, inputs, pending.attrs)
            finally:
                pending.running = False
            # the lazy tensor becomes the op's output, built as dispatch builds every output
            out = pending.output
            first = inputs[0] if inputs else None
            dispatch.output_tensor(op, real.array, first, real._node, out)
            out._shape, out._dtype = tuple(real.array.shape), real.array.dtype
            out._pending = None
            pending.done = True

    def force(self, target: _Pending) -> None:
        """Run ``target`` and the recorded ops it depends on, on this thread, in order."""
        needed = {id(target)}
        for pending in reversed(self.pending):
            if id(pending) in needed and not pending.done:
                for value in pending.inputs:
                    if isinstance(value, LazyTensor) and value._pending is not None:
                        needed.add(id(value._pending))
        for pending in self.pending:
            if id(pending) in needed:
                self.execute(pending)

    def run_all(self) -> None:
        todo = [p for p in self.pending if not p.done]
        if not todo:
            return
        index_of = {id(p): i for i, p in enumerate(todo)}
        waiting = []
        dependents: list = [[] for _ in todo]
        for i, pending in enumerate(todo):
            needs = {
                index_of[id(v._pending)]
                for v in pending.inputs
                if isinstance(v, LazyTensor)
                and v._pending is not None
                and id(v._pending) in index_of
            }
            waiting.append(len(needs))
            for need in needs:
                dependents[need].append(i)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            running = {
                pool.submit(self._run_index, todo, i) for i, c in enumerate(waiting) if c == 0
            }
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    finished = future.result()
                    for i in dependents[finished]:
                        waiting[i] -= 1
                        if waiting[i] == 0:
                            running.add(pool.submit(self._run_index, todo, i))
        self.pending = []

    def _run_index(self, todo: list, index: int) -> int:
        self.execute(todo[index])
        return index


def _apply(op, inputs: tuple, attrs: dict):
    return dispatch.apply(op, *inputs, **attrs)


class _Recording(dispatch.DispatchMode):
    """The dispatch mode of a ``parallel()`` block: each op becomes a ``LazyTensor`` while the
    block records on this thread; None (run the op now) for an op no record can size."""

    def __init__(self, block: _Block) -> None:
        self.block = block

    def __dispatch__(self, op, inputs: tuple, attrs: dict):
        if getattr(_local, "block", None) is not self.block:
            return None  # the block is running its recorded ops
        return self.block.record(op, inputs, attrs)


def _infer(op, inputs: tuple, attrs: dict):
    """(shape, dtype) of ``op``'s output from its record's ``infer``, without running it; or
    (None, None) when the record cannot say (then the op runs now)."""
    specs = [_spec(value) for value in inputs]
    try:
        output = op.infer(*specs, **attrs)
    except Exception:  # no infer yet, or inputs it rejects: running the op says what is wrong
        return None, None
    if not isinstance(output, ValueSpec):
        return None, None  # several outputs: a LazyTensor stands for one
    return tuple(output.shape), output.dtype


def _spec(value):
    """The ``ValueSpec`` of an input (a LazyTensor's without running it); scalars unchanged."""
    if isinstance(value, LazyTensor):
        return ValueSpec(value._shape, value._dtype, _device_of(value))
    return spec_of(value)


def _device_of(value) -> str:
    """The device a lazy tensor will live on: that of the tensors its op reads."""
    while isinstance(value, LazyTensor) and value._pending is not None:
        tensors = [v for v in value._pending.inputs if isinstance(v, Tensor)]
        if not tensors:
            return "cpu"
        value = tensors[0]
    return str(value.device)


@contextlib.contextmanager
def parallel(workers: int = 2):
    """Record the ops of the block and run independent branches concurrently on exit.

    Example::

        with parallel():
            a = branch_a(x)     # recorded, not run
            b = branch_b(x)     # recorded; independent of a
        # here both have run, on two threads; a and b are ordinary tensors

    The block is a dispatch mode (``dispatch_mode``) that records each op instead of running it.
    """
    if getattr(_local, "block", None) is not None:
        raise GraphError("[parallel] blocks cannot be nested")
    block = _Block(workers)
    with dispatch.dispatch_mode(_Recording(block)):
        _local.block = block
        try:
            yield block
            _local.block = None
            block.run_all()
        finally:
            _local.block = None
