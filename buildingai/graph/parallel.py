"""Run independent branches concurrently: in frozen graphs (``StaticGraph(..., workers=n)``) and
in eager code (``with parallel(): ...``).

NumPy releases the GIL inside its kernels (BLAS calls, ufunc loops), so two branches that spend
their time in large kernels overlap on two cores even from Python threads.

Eager deferral. Inside ``with parallel():`` dispatch hands every op to ``defer`` (the hook
``dispatch.set_deferral`` installs), which records it and returns a ``LazyTensor`` instead of
running it. On exit the recorded ops run on a thread pool, each as soon as its inputs are ready,
each through ``apply`` (so autograd records them as usual and backward works). Reading a lazy
tensor's values inside the block runs what it needs first, on the calling thread. A lazy tensor
knows its shape and dtype without running: element-wise ops broadcast their inputs' shapes and
matmul/linear follow the product rule (the dtype comes from the op's own forward on
one-element stand-ins); any other op first runs what its inputs need, then is recorded with the
shape it would have (it still runs in the pool).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from ..autograd import dispatch
from ..autograd.tensor import Tensor
from ..ops.linalg import swap_last_two
from .graph import GraphError

# ----- frozen graphs -----------------------------------------------------------------------


def run_concurrently(static, arrays: list, sizes: dict, xp) -> list:
    """Execute ``static``'s plan with each step submitted as soon as its inputs exist."""
    from .executor import _Scratch
    from .symbolic import resolve

    plan = static.plan
    slots = list(plan.initial)
    for position, array in zip(plan.input_slots, arrays):
        slots[position] = array
    producer = {step.out: index for index, step in enumerate(plan.steps)}
    waiting = []
    dependents: list = [[] for _ in plan.steps]
    for index, step in enumerate(plan.steps):
        needs = {producer[a] for a in step.args if a in producer}
        waiting.append(len(needs))
        for need in needs:
            dependents[need].append(index)

    def run(index):
        step = plan.steps[index]
        attrs = resolve(step.attrs, sizes) if step.symbolic else step.attrs
        result = step.forward(_Scratch(), xp, *[slots[i] for i in step.args], **attrs)
        slots[step.out] = result if type(result) is np.ndarray else xp.asarray(result)
        return index

    with ThreadPoolExecutor(max_workers=static.workers) as pool:
        running = {pool.submit(run, i) for i, count in enumerate(waiting) if count == 0}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                finished = future.result()  # re-raises an op's error here
                for index in dependents[finished]:
                    waiting[index] -= 1
                    if waiting[index] == 0:
                        running.add(pool.submit(run, index))
    return [slots[index] for index in plan.output_slots]


# ----- eager deferral ------------------------------------------------------------------------

_local = threading.local()  # .block: the parallel() block recording on this thread, if any

_BROADCASTING = {
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "neg",
    "exp",
    "expm1",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "abs",
    "sin",
    "cos",
    "tanh",
    "relu",
    "leaky_relu",
    "sigmoid",
    "silu",
    "softplus",
    "gelu",
    "erf",
    "where",
    "clone",
    "softmax",
    "log_softmax",
}


class LazyTensor(Tensor):
    """A tensor recorded inside ``parallel()``: its values exist once its op has run.

    Reading ``.data`` (and anything built on it: ``numpy()``, ``item()``, printing) runs the op
    and what it depends on; shape and dtype are known from the start.
    """

    __slots__ = ("_pending", "_shape", "_dtype")

    @property
    def data(self):
        pending = self._pending
        if pending is not None:
            pending.block.force(pending)
        return Tensor.data.__get__(self)

    @data.setter
    def data(self, value):
        Tensor.data.__set__(self, value)

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
    __slots__ = ("op", "inputs", "attrs", "output", "block", "done", "lock")

    def __init__(self, op, inputs, attrs, output, block) -> None:
        self.op, self.inputs, self.attrs, self.output, self.block = op, inputs, attrs, output, block
        self.done = False
        self.lock = threading.Lock()


class _Block:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pending: list = []

    # recording ---------------------------------------------------------------------------
    def record(self, op, inputs: tuple, attrs: dict):
        shape, dtype = _infer(op, inputs, attrs)
        if shape is None:
            return None  # no shape rule: dispatch runs it now (its inputs are forced first)
        out = LazyTensor.__new__(LazyTensor)
        Tensor.data.__set__(out, None)
        out.grad = out._node = out._base = out._hooks = None
        out.requires_grad = False
        out._version = [0, None]
        out._shape, out._dtype = shape, dtype
        pending = _Pending(op, inputs, attrs, out, self)
        out._pending = pending
        self.pending.append(pending)
        return out

    # running ---------------------------------------------------------------------------------
    def execute(self, pending: _Pending) -> None:
        with pending.lock:
            if pending.done:
                return
            previous = getattr(_local, "block", None)
            _local.block = None  # ops run for real on this thread
            try:
                real = dispatch.apply(pending.op, *pending.inputs, **pending.attrs)
            finally:
                _local.block = previous
            out = pending.output
            Tensor.data.__set__(out, real.data)
            out._node, out.requires_grad = real._node, real.requires_grad
            out._version, out._base = real._version, real._base
            out._shape, out._dtype = tuple(real.data.shape), real.data.dtype
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


def defer(op, inputs: tuple, attrs: dict):
    """The deferral hook dispatch calls first in ``apply``: a ``LazyTensor`` while a
    ``parallel()`` block records on this thread, else None (run the op now)."""
    block = getattr(_local, "block", None)
    if block is None:
        return None
    return block.record(op, inputs, attrs)


def _infer(op, inputs: tuple, attrs: dict):
    """(shape, dtype) of ``op``'s output without running it, or (None, None)."""
    shapes = [tuple(v.shape) for v in inputs if isinstance(v, Tensor)]
    name = op.name
    if name in _BROADCASTING:
        shape = np.broadcast_shapes(*shapes) if shapes else ()
    elif name == "matmul" and all(len(s) >= 2 for s in shapes):
        a, b = shapes
        if attrs.get("transpose_a"):
            a = swap_last_two(a)
        if attrs.get("transpose_b"):
            b = swap_last_two(b)
        shape = np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    elif name == "linear":
        shape = shapes[0][:-1] + (shapes[1][0],)
    else:
        return None, None
    # the dtype from the op's own forward on one-element stand-ins of the inputs
    stand_ins = [
        np.zeros((1,) * len(v.shape), dtype=v.dtype) if isinstance(v, Tensor) else v for v in inputs
    ]
    try:
        dtype = np.asarray(op.forward(_Stub(), np, *stand_ins, **attrs)).dtype
    except Exception:
        return None, None
    return shape, dtype


class _Stub:
    pass


@contextlib.contextmanager
def parallel(workers: int = 2):
    """Record the ops of the block and run independent branches concurrently on exit.

    Example::

        with parallel():
            a = branch_a(x)     # recorded, not run
            b = branch_b(x)     # recorded; independent of a
        # here both have run, on two threads; a and b are ordinary tensors

    Needs dispatch's deferral hook (``dispatch.set_deferral``).
    """
    set_deferral = getattr(dispatch, "set_deferral", None)
    if set_deferral is None:
        raise GraphError(
            "[parallel] dispatch has no deferral hook (dispatch.set_deferral), so ops cannot be "
            "recorded instead of run",
            help="use a frozen graph with workers > 1 (freeze(...).with_workers(2)) meanwhile",
        )
    if getattr(_local, "block", None) is not None:
        raise GraphError("[parallel] blocks cannot be nested")
    block = _Block(workers)
    previous = set_deferral(defer)
    _local.block = block
    try:
        yield block
        _local.block = None
        block.run_all()
    finally:
        _local.block = None
        set_deferral(previous)
