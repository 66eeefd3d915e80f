"""The backward engine: an iterative walk of the graph in reverse topological order.

Gradients of each node's output are summed before its backward rule runs (dependency counting,
as in Kahn's algorithm), so each rule runs once. The walk uses an explicit stack: a chain of any
length backpropagates without touching Python's recursion limit. Unless the graph is retained,
each node drops its saved values as soon as its rule has run, so memory is returned as the walk
proceeds. Broadcasting is undone here, once for every op: a gradient whose shape differs from its
input's is summed back to the input's shape. A sum the walk made itself takes later gradients in
place, and an op with ``add_grad_into`` (a basic index ``x[index]``) adds its gradient straight
into x's sum, where no one else holds that sum and nothing records or watches the walk
(``_run``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np

from ..accel.registry import add_grad_into
from ..backend.device import array_namespace, is_read_only
from ..errors import AutogradError, ShapeError
from ..ops.cast import CAST
from ..ops.elementwise import ADD
from ..ops.reduce import SUM_TO
from . import block_sums
from .dispatch import apply, binary_operator
from .gradients import Gradients
from .mode import set_grad_enabled
from .node import Node
from .state import current_state
from .tensor import Tensor, hooked_leaves

_ADD = binary_operator(ADD)  # gradients accumulate through the + operator's dispatch path


class _RunningNode(threading.local):
    """The node whose backward rule runs on this thread (None outside backward). It is kept only
    while a dispatch mode observes the walk, so that it costs nothing otherwise."""

    node: Node | None = None


_RUNNING = _RunningNode()


def running_node() -> Node | None:
    """The graph node being differentiated on this thread, for dispatch modes: an op they see
    while it is set belongs to that node's backward (anomaly detection names the forward op)."""
    return _RUNNING.node


class _ObservedWalk(set_grad_enabled):
    """``set_grad_enabled`` for a backward walk that dispatch modes observe: it also restores the
    caller's ``running_node()`` on exit, even when a rule raises (a backward may run in a hook)."""

    def __enter__(self) -> _ObservedWalk:
        self.previous = _RUNNING.node
        return super().__enter__()

    def __exit__(self, *exc_info) -> None:
        _RUNNING.node = self.previous
        super().__exit__(*exc_info)


class _BackwardRecording(threading.local):
    """Set on a thread whose training step is being traced (``buildingai.compile``): a leaf's
    ``.grad`` is then the gradient tensor backward computed (which the tracer recorded), never
    a copy made outside dispatch; and clipping waits for the recorded update."""

    active = False


_RECORDING = _BackwardRecording()


class recording_backward:
    """``with recording_backward(deferrer): ...``: backward() on this thread stores the traced
    gradient tensors themselves in ``.grad``; ``deferrer(action)`` receives work that must wait
    for the recorded optimizer update (gradient clipping, see ``defer_to_update``)."""

    def __init__(self, deferrer=None) -> None:
        self.deferrer = deferrer

    def __enter__(self) -> recording_backward:
        self.previous = _RECORDING.active, getattr(_RECORDING, "deferrer", None)
        _RECORDING.active, _RECORDING.deferrer = True, self.deferrer
        return self

    def __exit__(self, *exc_info) -> None:
        _RECORDING.active, _RECORDING.deferrer = self.previous


def defer_to_update(action):
    """While a training step is traced on this thread, hand ``action`` (e.g. clipping the
    gradients) to the recorded optimizer update and return a stand-in for its result; otherwise
    return None, and the caller does the work now."""
    deferrer = getattr(_RECORDING, "deferrer", None)
    if not _RECORDING.active or deferrer is None:
        return None
    return deferrer(action)


def backward(
    tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False
) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of every leaf they depend on.

    Args:
        tensors: a Tensor or an iterable of Tensors to differentiate, each of any shape.
        grad_tensors: the gradient of some scalar with respect to each tensor, each exactly
            that tensor's shape (``None`` means ones, allowed only for one-element tensors).
        retain_graph: keep the graph so that backward can run through it again
            (defaults to ``create_graph``).
        create_graph: record the backward pass itself, so the gradients can be differentiated.

    Each leaf's ``.grad`` has the leaf's shape.
    """
    roots = _as_list(tensors, "tensors")
    grads = _root_gradients(roots, grad_tensors, "backward")
    retain = create_graph if retain_graph is None else retain_graph
    _run(roots, grads, retain, create_graph, targets=None)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple:
    """Return d(outputs)/d(inputs) without touching any ``.grad``.

    Args:
        outputs: a Tensor or an iterable of Tensors.
        inputs: a Tensor or an iterable of Tensors (leaves or intermediate results), such as
            ``model.parameters()``.
        grad_outputs: weights for the outputs, as in ``backward``: each exactly its output's
            shape (None: ones, for one-element outputs only).
        create_graph: make the returned gradients differentiable (higher-order derivatives).
        allow_unused: return None for an input the outputs do not depend on, instead of raising.

    Returns:
        ``Gradients``: a tuple with one gradient (Tensor or None) per input, each shaped like
        its input, which also adds to another ``Gradients`` (or 0) and scales by a number.
    """
    roots = _as_list(outputs, "outputs")
    targets = _as_list(inputs, "inputs")
    for position, target in enumerate(targets):
        if not isinstance(target, Tensor) or not target.requires_grad:
            raise AutogradError(
                f"[grad] input {position} does not require grad, so it has no gradient",
                help="create it with requires_grad=True, or call .requires_grad_() on the leaf",
            )
    grads = _root_gradients(roots, grad_outputs, "grad")
    retain = create_graph if retain_graph is None else retain_graph
    found = _run(roots, grads, retain, create_graph, targets=targets)
    results = []
    for position, target in enumerate(targets):
        value = found.get(id(target))
        if value is None and not allow_unused:
            raise AutogradError(
                f"[grad] input {position} (shape {tuple(target.shape)}) was not used to compute "
                "the outputs",
                help="pass allow_unused=True to get None for it",
            )
        results.append(value)
    return Gradients(results)


def _as_list(value, argument: str) -> list:
    """``value`` (a Tensor, or any iterable of them: a list, a tuple, a generator such as
    ``model.parameters()``) as a list."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, np.ndarray)):
        return list(value)
    raise TypeError(
        f"{argument} must be a Tensor or an iterable of Tensors, got {type(value).__name__}"
    )


def _root_gradients(roots: list, given, caller: str) -> list:
    if given is None:
        given = [None] * len(roots)
    elif isinstance(given, Tensor):
        given = [given]
    else:
        given = list(given)  # any iterable, as for the outputs
    if len(given) != len(roots):
        raise AutogradError(f"[{caller}] got {len(roots)} outputs but {len(given)} gradients")
    result = []
    for root, gradient in zip(roots, given):
        if not isinstance(root, Tensor) or not root.requires_grad:
            raise AutogradError(
                f"[{caller}] the tensor does not require grad and has no grad_fn",
                help="make sure some input has requires_grad=True and no no_grad() block "
                "surrounds the computation",
            )
        if gradient is None:
            if root.array.size != 1:
                raise AutogradError(
                    f"[{caller}] a gradient can be implied only for one-element outputs, got "
                    f"shape {tuple(root.shape)}",
                    help="pass gradient= (a tensor shaped like the output), or reduce the output "
                    "to a scalar first (e.g. loss.sum())",
                )
            data = root.array  # ones, not ones_like: a constant, never a subclass of the root's
            gradient = Tensor(array_namespace(data).ones(data.shape, dtype=data.dtype))
        elif not isinstance(gradient, Tensor):
            gradient = Tensor(gradient)
        if tuple(gradient.shape) != tuple(root.shape):
            raise ShapeError(
                f"[{caller}] gradient shape {tuple(gradient.shape)} does not match output shape "
                f"{tuple(root.shape)}"
            )
        result.append(gradient)
    return result


def _run(
    roots: list, root_grads: list, retain_graph: bool, create_graph: bool, targets: list | None
) -> dict:
    """Propagate ``root_grads`` through the graph.

    With ``targets`` None, leaf gradients accumulate into ``.grad``; otherwise the gradients of
    the targets are returned as ``{id(tensor): gradient}`` and no ``.grad`` changes.
    """
    node_grads: dict[Node, Tensor] = {}
    leaf_grads: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
    for root, gradient in zip(roots, root_grads):
        if root._node is None:
            _add_leaf(leaf_grads, root, gradient)
        else:
            previous = node_grads.get(root._node)
            node_grads[root._node] = gradient if previous is None else _ADD(previous, gradient)

    target_nodes = {}
    if targets is not None:
        target_nodes = {t._node: t for t in targets if t._node is not None}
    found: dict[int, Tensor] = {}
    # grad() runs only the rules on a path to one of its inputs, and frees only those nodes
    dependencies, leading = _count_dependencies(list(node_grads), targets, target_nodes)
    # Sums of gradients the walk made itself (``owned``: nodes, and leaves by id) are NumPy
    # arrays no one else holds: later gradients are added into them in place, and an op with
    # ``add_grad_into`` (``x[index]``) adds its gradient into x's sum, without a zero array.
    # Not while the walk is recorded (create_graph, a traced step) or a dispatch mode watches
    # that must see every sum (``DispatchMode.sees_gradient_sums``).
    in_place = not (create_graph or _RECORDING.active or _sums_seen(current_state()))
    owned: set = set()
    unwritten: block_sums.Unwritten = {}  # sums a split's pieces fill, with blocks to come

    # leaves with post-accumulate hooks are finished as soon as their last gradient arrives
    waiting = _hooked_leaf_uses(dependencies) if targets is None and hooked_leaves() else None
    assigned: set[int] = set()
    ready = [node for node in node_grads if dependencies[node] == 0]
    observed = current_state().observers  # only observers ask which node is differentiated
    with (_ObservedWalk if observed else set_grad_enabled)(create_graph):
        while ready:
            node = ready.pop()
            if observed:
                _RUNNING.node = node
            gradient = node_grads.pop(node, None)
            owned.discard(node)
            if unwritten and node in unwritten:
                block_sums.fill(gradient.array, unwritten, node)  # a piece never came: zeros
            if gradient is not None and node._hooks:
                gradient = _run_hooks(node._hooks, gradient, node)
            if node in target_nodes:
                found[id(target_nodes[node])] = gradient
            if leading is not None and node not in leading:
                continue  # no input of grad() below: leave this part of the graph untouched
            inputs = node.inputs
            input_grads = into = None
            if gradient is not None:
                if node.input_versions is not None or node.out_data is not None:
                    node.check_versions()
                if in_place and node.op.add_grad_into and _fits_into(gradient, inputs[0]):
                    into = node  # its gradient added into x's sum below
                else:
                    input_grads = node.op.backward(node, gradient)
            for position, value in enumerate(inputs):
                if not isinstance(value, Tensor) or not value.requires_grad:
                    continue
                input_grad = None if input_grads is None else input_grads[position]
                if input_grad is not None:
                    data, expected = input_grad.array, value.array
                    if data.shape != expected.shape or data.dtype != expected.dtype:
                        input_grad = _fit_to(input_grad, value, node.op)
                child = value._node
                if child is None:
                    if into is not None:
                        _add_leaf_into(leaf_grads, value, into, gradient, owned)
                    elif input_grad is not None:
                        _add_leaf(leaf_grads, value, input_grad, owned if in_place else None)
                    if waiting and id(value) in waiting:
                        _count_down_leaf(waiting, leaf_grads, value, assigned, create_graph, owned)
                    continue
                if into is not None:
                    node_grads[child] = _sum_into(
                        node_grads.get(child), child in owned, value, into, gradient, unwritten
                    )
                    owned.add(child)
                elif input_grad is not None:
                    previous = node_grads.get(child)
                    if previous is None:
                        node_grads[child] = input_grad
                    elif in_place:
                        if unwritten and child in unwritten:
                            block_sums.fill(previous.array, unwritten, child)
                        node_grads[child] = _sum(previous, input_grad, child in owned)
                        owned.add(child)
                    else:
                        node_grads[child] = _ADD(previous, input_grad)
                remaining = dependencies[child] - 1
                dependencies[child] = remaining
                if remaining == 0:
                    ready.append(child)
            if not retain_graph:
                node.release()

        if observed:  # summing leaf gradients belongs to no node
            _RUNNING.node = None
        for leaf, gradient in leaf_grads.values():
            if leaf._hooks:
                gradient = _run_hooks(leaf._hooks, gradient, None)
            if targets is not None:
                found.setdefault(id(leaf), gradient)
            else:
                _accumulate(leaf, gradient, assigned, create_graph)
                _run_post_accumulate_hooks(leaf)
    if targets is not None:
        for target in targets:  # a target that is also a root receives its own root gradient
            if id(target) not in found and target._node in node_grads:
                gradient = node_grads[target._node]
                block_sums.fill(gradient.array, unwritten, target._node)
                found[id(target)] = gradient
    return found


def _count_dependencies(start: list, targets: list | None = None, target_nodes=None) -> tuple:
    """How many recorded consumers inside this graph each node's output has (iterative DFS),
    and, for ``grad`` (``targets`` given; ``target_nodes`` maps their nodes to them), the set
    of nodes with one of ``targets`` below them: the only ones whose backward rule ``grad``
    needs to run (None for ``backward``). That set is found upward from the nodes that read a
    target, through each node's consumers, noted on the same walk."""
    dependencies = dict.fromkeys(start, 0)
    stack = list(start)
    finding = targets is not None
    if finding:
        target_leaves = {id(t) for t in targets if t._node is None}
        consumers: dict = {}  # node -> the nodes that read its output
        reading = []  # the nodes with a target among their inputs
    while stack:
        node = stack.pop()
        if node.freed:
            raise AutogradError(
                f"[backward] the graph through '{node.op.name}' was already freed by an earlier "
                "backward",
                help="pass retain_graph=True to the first backward() if you need to run backward "
                "through the same graph twice",
            )
        for value in node.inputs:
            if not isinstance(value, Tensor) or not value.requires_grad:
                continue
            child = value._node
            if child is None:
                if finding and id(value) in target_leaves:
                    reading.append(node)
                continue
            if finding:
                if child in target_nodes:
                    reading.append(node)
                readers = consumers.get(child)
                if readers is None:
                    consumers[child] = [node]
                else:
                    readers.append(node)
            if child in dependencies:
                dependencies[child] += 1
            else:
                dependencies[child] = 1
                stack.append(child)
    if not finding:
        return dependencies, None
    leading: set = set()
    while reading:
        node = reading.pop()
        if node not in leading:
            leading.add(node)
            reading.extend(consumers.get(node, ()))
    return dependencies, leading


def _hooked_leaf_uses(nodes) -> dict:
    """``{id(leaf): uses}`` for the leaves with post-accumulate hooks that ``nodes`` consume."""
    uses: dict[int, int] = {}
    for node in nodes:
        for value in node.inputs:
            leaf = isinstance(value, Tensor) and value._node is None and value.requires_grad
            if leaf and getattr(value, "_post_hooks", None):
                uses[id(value)] = uses.get(id(value), 0) + 1
    return uses


def _count_down_leaf(
    waiting: dict, leaf_grads: dict, leaf: Tensor, assigned: set, create_graph: bool, owned: set
) -> None:
    """One use of ``leaf`` was differentiated; after its last, accumulate its gradient and run its
    post-accumulate hooks now, while the rest of backward still runs (gradient all-reduce)."""
    waiting[id(leaf)] -= 1
    if waiting[id(leaf)] or id(leaf) not in leaf_grads:
        return
    _, gradient = leaf_grads.pop(id(leaf))
    owned.discard(id(leaf))
    if leaf._hooks:
        gradient = _run_hooks(leaf._hooks, gradient, None)
    _accumulate(leaf, gradient, assigned, create_graph)
    _run_post_accumulate_hooks(leaf)


def _run_post_accumulate_hooks(leaf: Tensor) -> None:
    hooks = getattr(leaf, "_post_hooks", None)
    for hook in list(hooks or ()):
        hook(leaf)


def _fit_to(gradient: Tensor, value: Tensor, op) -> Tensor:
    """Sum a broadcast gradient back to its input's shape and cast it to the input's dtype."""
    if gradient.array.shape != value.array.shape:
        try:
            gradient = apply(SUM_TO, gradient, shape=value.array.shape)
        except ShapeError as error:
            raise AutogradError(
                f"[{op.name}] backward returned a gradient of shape {tuple(gradient.shape)} for "
                f"an input of shape {tuple(value.shape)}"
            ) from error
    if gradient.array.dtype != value.array.dtype:
        gradient = apply(CAST, gradient, dtype=value.array.dtype)
    return gradient


def _add_leaf(leaf_grads: dict, leaf: Tensor, gradient: Tensor, owned: set | None = None) -> None:
    """Add ``gradient`` to the sum for ``leaf``; in place into a sum the walk made itself when
    ``owned`` (the keys of those sums) is given."""
    key = id(leaf)
    entry = leaf_grads.get(key)
    if entry is None:
        leaf_grads[key] = [leaf, gradient]
    elif owned is None:
        entry[1] = _ADD(entry[1], gradient)
    else:
        entry[1] = _sum(entry[1], gradient, key in owned)
        owned.add(key)


def _sum(previous: Tensor, gradient: Tensor, in_place: bool) -> Tensor:
    """previous + gradient, the sum's array the walk's own: into ``previous`` when it already
    is (``in_place``) and the two are NumPy arrays of one shape and dtype, else a new one
    (NumPy's sum straight away for such arrays, ``_ADD`` for others)."""
    total, data = previous.array, gradient.array
    if (
        type(data) is np.ndarray
        and type(total) is np.ndarray
        and data.shape == total.shape
        and data.dtype == total.dtype
    ):
        if in_place:
            np.add(total, data, out=total)
            return previous
        return Tensor(np.add(total, data))  # what ``_ADD`` gives here, without its dispatch
    total = _ADD(previous, gradient)
    if type(total.array) is np.ndarray and not total.array.flags.writeable:
        total = Tensor(total.array.copy())  # (a 0-d result may be read-only)
    return total


def _fits_into(gradient: Tensor, x: Tensor) -> bool:
    """Whether an op's gradient for ``x`` can be added straight into x's sum
    (``Op.add_grad_into``): both NumPy arrays of one dtype."""
    data, source = gradient.array, x.array
    return type(data) is np.ndarray and type(source) is np.ndarray and data.dtype == source.dtype


def _sum_into(
    previous: Tensor | None,
    in_place: bool,
    x: Tensor,
    node,
    gradient: Tensor,
    unwritten: block_sums.Unwritten | None = None,
):
    """previous (or zeros) + ``node``'s gradient for x, as an array of the walk's own, the
    gradient added in by the op's ``add_grad_into`` (a basic index: into the slice, without
    ``zeros_index_add``'s zero array and the full-size sum after it). With ``unwritten`` (the
    walk's record for x's node), a gradient that fills one block (``Op.grad_block``: a piece
    of a split) is copied where no gradient has written yet (``block_sums``)."""
    source = x.array
    key = x._node
    if previous is None:
        block = _block(node, source, unwritten)
        if block is not None:
            return Tensor(block_sums.start(source.shape, source.dtype, block, gradient.array,
                                           unwritten, key))  # fmt: skip
        total = np.zeros(source.shape, source.dtype)
    elif in_place:
        total = previous.array
        if unwritten and key in unwritten:
            block = _block(node, source, unwritten)
            if block_sums.write(total, block, gradient.array, unwritten, key):
                return previous
            block_sums.fill(total, unwritten, key)  # another kind of gradient: added below
    else:
        total = np.array(previous.array, dtype=np.result_type(previous.array, source), order="C")
    add_grad_into(node.op, total, gradient.array, node.attrs)  # (or a registered kernel)
    return previous if previous is not None and in_place else Tensor(total)


def _block(node, source, unwritten) -> tuple | None:
    """The block of ``source``'s gradient that ``node``'s gradient fills (``Op.grad_block``),
    where the walk copies such blocks (``unwritten`` given); else None."""
    if unwritten is None or node.op.grad_block is None:
        return None
    return node.op.grad_block(source.shape, node.attrs)


def _sums_seen(state) -> bool:
    """Whether a mode on the stack must see the walk's gradient sums as ops."""
    return state.observed and any(mode.sees_gradient_sums for mode in state.modes)


def _add_leaf_into(leaf_grads: dict, leaf: Tensor, node, gradient: Tensor, owned: set):
    """Add ``node``'s gradient for ``leaf`` into the leaf's sum (``_sum_into``)."""
    key = id(leaf)
    entry = leaf_grads.get(key)
    if entry is None:
        leaf_grads[key] = [leaf, _sum_into(None, False, leaf, node, gradient)]
    else:
        entry[1] = _sum_into(entry[1], key in owned, leaf, node, gradient)
    owned.add(key)


def _run_hooks(hooks: list, gradient: Tensor, node: Node | None) -> Tensor:
    """Run the gradient hooks of one tensor (the output of ``node``, or a leaf when None); a
    returned gradient replaces the current one and must look exactly like it."""
    for hook in list(hooks):
        replaced = hook(gradient)
        if replaced is None:
            continue
        if not isinstance(replaced, Tensor):
            raise AutogradError(
                f"[backward] hook {_hook_name(hook)} on {_describe_owner(gradient, node)} returned "
                f"a value of type {type(replaced).__name__!r}, not a Tensor",
                help="return None to keep the gradient, or a Tensor (wrap an array with "
                "buildingai.tensor(...))",
            )
        if tuple(replaced.shape) != tuple(gradient.shape) or replaced.dtype != gradient.dtype:
            raise AutogradError(
                f"[backward] hook {_hook_name(hook)} on {_describe_owner(gradient, node)} returned "
                f"a gradient of shape {tuple(replaced.shape)} {replaced.dtype}, but the gradient "
                f"is shape {tuple(gradient.shape)} {gradient.dtype}",
                help="a hook may change the gradient's values, never its shape or dtype",
            )
        gradient = replaced
    return gradient


def _hook_name(hook) -> str:
    name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None)
    return f"'{name}'" if name else repr(hook)


def _describe_owner(gradient: Tensor, node: Node | None) -> str:
    shape = tuple(gradient.shape)
    if node is None:
        return f"a leaf tensor of shape {shape}"
    return f"the output of '{node.op.name}' (shape {shape})"


def _accumulate(leaf: Tensor, gradient: Tensor, assigned: set, create_graph: bool) -> None:
    """Add ``gradient`` into ``leaf.grad``. A stored gradient gets its own writable memory, so
    in-place updates of one ``.grad`` (clipping, optimizers) can never change another."""
    if leaf.grad is not None:
        leaf.grad = _ADD(leaf.grad, gradient)
        return
    if not (create_graph or _RECORDING.active):  # (a traced step stores the traced tensor)
        data = gradient.array
        shared = data.base is not None or is_read_only(data) or id(data) in assigned
        gradient = Tensor(data.copy() if shared else data)
    assigned.add(id(gradient.array))
    leaf.grad = gradient


def tensor_backward(
    self: Tensor, gradient=None, retain_graph: bool | None = None, create_graph: bool = False
) -> None:
    """``loss.backward()``: accumulate d(self)/d(leaf) into every leaf's ``.grad``; see
    ``buildingai.backward``."""
    backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)


# Tensor.backward lives beside the engine it runs: tensor.py sits below the engine
Tensor.backward = tensor_backward
