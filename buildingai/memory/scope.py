"""``memory_scope``: at the end of a block, release the tensors made in it that nothing needs.

```python
with memory_scope():
    x = layer1(input)
    y = layer2(x)
    output = layer3(y)
```

The scope watches every op run in the block on this thread (it is a dispatch mode).
On exit it decides, for each tensor made by an op in the block and still alive, whether it is
needed:

- a **result** of the block is needed: a tensor that no later op in the block used as an input
  (``output`` above; ``x`` and ``y`` were used by ``layer2`` and ``layer3``), or one passed to
  ``scope.keep(...)``;
- parameters (leaves that require grad) and their ``.grad``, tensors an in-place op modified or
  wrote (module buffers, running statistics), and tensors made by a backward pass are needed;
- everything the autograd graph of a needed tensor reaches is needed (its inputs, and theirs,
  back to the leaves), so backward through a result works and gives exactly the gradients it
  gives without the scope.

A tensor that a later op in the block used but that the caller still wants afterwards (kept in
a list, say) must be passed to ``scope.keep``. When the block raises, nothing is released.

Every other tensor is released: its buffer is dropped even though a Python name still points at
it (the memory returns when no other reference holds the array), and any later use of it raises
``ReleasedTensorError`` naming the line that made it. Without gradients (under ``no_grad``) this
frees every intermediate; with gradients it frees those the graph of the results does not save.

``memory_scope(report=True)`` prints, on exit, what stayed alive and why, results that still hold
autograd history first (the ``total_loss += loss`` leak: a running sum that keeps every step's
graph), with the bytes each keeps and the line that made it; ``scope.kept`` holds the same rows.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from dataclasses import dataclass

from ..autograd import engine
from ..autograd.dispatch import DispatchMode, dispatch_mode
from ..autograd.tensor import Tensor
from ..backend import accounting
from ..errors import BuildingAIError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ReleasedTensorError(BuildingAIError, RuntimeError):
    """A tensor whose buffer a ``memory_scope`` released was used."""


class _Released:
    """What a released tensor holds instead of its array: every use raises, naming the line
    that made the tensor."""

    __slots__ = ("_made_at", "_scope_at")

    def __init__(self, made_at: str, scope_at: str) -> None:
        object.__setattr__(self, "_made_at", made_at)
        object.__setattr__(self, "_scope_at", scope_at)

    def _error(self) -> ReleasedTensorError:
        return ReleasedTensorError(
            f"[memory_scope] this tensor was made at {self._made_at} and released when the "
            f"memory_scope opened at {self._scope_at} ended: a later op in the block used it, so "
            "it was not a result of the block, and no graph of a result saved it",
            help="keep it: `with memory_scope() as scope: ...` and `scope.keep(tensor)` inside the "
            "block, or use it before the block ends",
        )

    def __getattr__(self, name: str):
        raise self._error()

    def __setattr__(self, name: str, value) -> None:
        raise self._error()

    def __array__(self, *args, **kwargs):
        raise self._error()

    def __len__(self) -> int:
        raise self._error()

    def __getitem__(self, index):
        raise self._error()

    def __repr__(self) -> str:
        return f"<released buffer of a tensor made at {self._made_at}>"


@dataclass
class _Made:
    """A tensor made by an op in the block."""

    ref: weakref.ref
    site: tuple[str, int]  # (file, line) of the code that made it
    used: bool = False  # an input of a later op in the block
    backward: bool = False  # made by a backward rule
    inplace: bool = False  # modified or written by an in-place op


@dataclass
class KeptTensor:
    """One row of the report: a tensor made in the block that stayed alive, and why."""

    reason: str
    line: str
    shape: tuple
    dtype: str
    nbytes: int  # its own buffer, or for a result with history, every buffer its graph keeps
    history: bool  # it still holds autograd history (a graph)


class MemoryScope(DispatchMode):
    """The scope ``memory_scope()`` returns; see the module docstring for the rule. It watches
    tensors of any shape and never reshapes one; each row of ``kept`` (a ``KeptTensor``)
    records the surviving tensor's ``shape`` tuple, dtype and bytes."""

    def __init__(self, report: bool = False) -> None:
        self.report = report
        self.kept: list[KeptTensor] = []
        self.released = 0  # how many tensors the scope released
        self._made: dict[int, _Made] = {}
        self._prune_at = 4096
        self._kept_ids: set[int] = set()
        self._leaves: dict[int, weakref.ref] = {}
        self._context = None
        self._opened_at = "?"

    # ----- inside the block -------------------------------------------------------------------
    def keep(self, *tensors: Tensor):
        """Mark ``tensors`` as results of the block (never released); returns them."""
        for tensor in tensors:
            self._kept_ids.add(id(tensor))
        return tensors[0] if len(tensors) == 1 else tensors

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        made = self._made
        for value in inputs:
            if type(value) is Tensor or isinstance(value, Tensor):
                entry = made.get(id(value))
                if entry is not None and entry.ref() is value:
                    entry.used = True
                elif value.requires_grad and value._node is None:
                    self._leaves[id(value)] = weakref.ref(value)
        made[id(output)] = _Made(
            weakref.ref(output), _user_site(), backward=engine.running_node() is not None
        )
        if len(made) > self._prune_at:  # a long block: forget the tensors already freed
            self._made = {key: entry for key, entry in made.items() if entry.ref() is not None}
            self._prune_at = max(4096, 2 * len(self._made))

    def after_inplace(self, name: str, target: Tensor, result: Tensor | None) -> None:
        for tensor in (target, result):
            entry = None if tensor is None else self._made.get(id(tensor))
            if entry is not None and entry.ref() is tensor:
                entry.inplace = True

    # ----- the scope ----------------------------------------------------------------------------
    def __enter__(self) -> MemoryScope:
        self._opened_at = _describe(_user_site())
        accounting.start_tracking()  # the report says how many bytes each release frees
        self._context = dispatch_mode(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self._context.__exit__(*exc_info)
        accounting.stop_tracking()
        if exc_info[0] is not None:  # keep everything for the traceback's reader
            return
        self._finish()

    def _finish(self) -> None:
        alive = []
        for entry in self._made.values():
            tensor = entry.ref()
            if tensor is not None and not isinstance(tensor.array, _Released):
                alive.append((tensor, entry))
        made_ids = {id(tensor) for tensor, _ in alive}
        reasons: dict[int, str] = {}
        for leaf_ref in self._leaves.values():
            leaf = leaf_ref()
            grad = None if leaf is None else leaf.grad
            if grad is not None and id(grad) in made_ids:
                reasons[id(grad)] = "gradient of a parameter"
        needed = []  # and everything their graphs save
        for tensor, entry in alive:
            reason = reasons.get(id(tensor)) or self._own_reason(tensor, entry)
            if reason is not None:
                reasons[id(tensor)] = reason
                needed.append(tensor)
        for tensor in _saved_by_graphs(needed):
            if id(tensor) in made_ids and id(tensor) not in reasons:
                reasons[id(tensor)] = "saved by the graph of a result"
        for tensor, entry in alive:
            reason = reasons.get(id(tensor))
            if reason is None:
                _release(tensor, _describe(entry.site), self._opened_at)
                self.released += 1
            elif self.report:
                self.kept.append(_row(tensor, _describe(entry.site), reason))
        self._made.clear()
        self._leaves.clear()
        if self.report:
            self.kept.sort(key=lambda row: (not row.history, -row.nbytes))
            print(self.report_text())

    def _own_reason(self, tensor: Tensor, entry: _Made) -> str | None:
        if id(tensor) in self._kept_ids:
            return "kept by scope.keep"
        if tensor.requires_grad and tensor._node is None:
            return "parameter (a leaf that requires grad)"
        if entry.backward:
            return "made by backward (a gradient)"
        if not entry.used:
            return "result of the block"
        if entry.inplace:
            return "modified in place (a buffer or state)"
        return None

    def report_text(self) -> str:
        """The report as a table: reason, bytes, shape, the line that made the tensor."""
        lines = [
            f"memory_scope at {self._opened_at}: {len(self.kept)} tensors stayed alive, "
            f"{self.released} released"
        ]
        for row in self.kept:
            why = row.reason
            if row.history:
                why += "; holds autograd history (use .item() or .detach() to keep only the value)"
            lines.append(
                f"  {row.nbytes:>12,} B  {str(row.shape):<16} {row.line}\n  {'':>14}  {why}"
            )
        return "\n".join(lines)


def memory_scope(report: bool = False) -> MemoryScope:
    """``with memory_scope(): ...`` releases the tensors made in the block that nothing needs
    (see ``buildingai.memory.scope``); ``report=True`` prints what stayed alive and why, with
    each tensor's shape. Tensors of any shape; a kept one keeps its shape and values."""
    return MemoryScope(report)


# ----- helpers ------------------------------------------------------------------------------------


def _user_site() -> tuple[str, int]:
    """``(file, line)`` of the innermost caller outside the buildingai package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return ("?", 0) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _describe(site: tuple[str, int]) -> str:
    """``file:line: code`` (the source is read only when a report or an error needs it)."""
    filename, line = site
    code = linecache.getline(filename, line).strip()
    return f"{filename}:{line}: {code}"


def _saved_by_graphs(results: list) -> list:
    """Every tensor the autograd graphs of ``results`` reach through their nodes' inputs."""
    reached: list = []
    seen_nodes: set[int] = set()
    stack = [tensor._node for tensor in results if tensor._node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        for value in getattr(node, "inputs", ()):
            if isinstance(value, Tensor):
                reached.append(value)
                if value._node is not None:
                    stack.append(value._node)
    return reached


def _graph_bytes(tensor: Tensor) -> int:
    """The bytes of every buffer ``tensor`` and its graph keep, parameters excepted."""
    buffers: dict[int, int] = {}
    for value in [tensor, *_saved_by_graphs([tensor])]:
        if value.requires_grad and value._node is None or isinstance(value.array, _Released):
            continue
        buffer = accounting.buffer_of(value.array)
        if buffer is not None:
            buffers[id(buffer)] = buffer.nbytes
    return sum(buffers.values())


def _row(tensor: Tensor, line: str, reason: str) -> KeptTensor:
    history = tensor._node is not None
    nbytes = _graph_bytes(tensor) if history else int(tensor.array.nbytes)
    return KeptTensor(reason, line, tuple(tensor.shape), str(tensor.dtype), nbytes, history)


def _release(tensor: Tensor, line: str, opened_at: str) -> None:
    tensor.array = _Released(line, opened_at)
    tensor._node = None
    tensor.grad = None
