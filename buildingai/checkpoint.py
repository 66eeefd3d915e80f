"""Gradient checkpointing: keep a segment's inputs, not its activations, and recompute in backward.

``y = checkpoint(block, x)`` runs ``block`` without recording a graph and attaches ``y`` to one
node. Its backward runs ``block`` again with recording on, from the same random state (so dropout
draws the same mask), and back-propagates through that fresh graph. The gradients are the ones of
the plain run, bit for bit: the same ops run on the same values in the same order.

The node's inputs are every tensor that requires grad and that an op inside the segment read:
the tensor arguments, and the parameters (or other captured tensors) the function uses. They are
found by watching dispatch during the forward run. So ``loss.backward()`` fills ``p.grad`` for a
parameter inside the segment, and ``grad(loss, params)`` returns its gradient.

The recomputation reads each of those tensors through an alias (same memory, same version
counter, a leaf): the inner backward stops there instead of walking the rest of the graph, and
returns exactly the gradients of the node's inputs. With ``create_graph=True`` the nodes recorded
during that backward are then pointed back at the real tensors, so second derivatives flow
through the segment as if it had never been checkpointed.

As in PyTorch, the function runs twice: a side effect (a BatchNorm's running statistics, a
counter) happens again in the recomputation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from .amp.autocast import active_autocast, autocast
from .autograd import dispatch
from .autograd.dispatch import DispatchMode, dispatch_mode, output_tensor
from .autograd.engine import grad as _grad
from .autograd.mode import enable_grad, is_grad_enabled, no_grad
from .autograd.node import Node
from .autograd.tensor import Tensor
from .backend.random import default_generator
from .errors import ArgumentError
from .ops.base import Op

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function: Callable, *args, preserve_rng_state: bool = True, **kwargs):
    """Call ``function(*args, **kwargs)`` keeping only its inputs for backward.

    Args:
        function: a callable (a Module, or any function of Tensors) returning a Tensor.
        args: its positional arguments; at least one must be a Tensor.
        preserve_rng_state: restore the default generator's state of the forward call when
            recomputing, so random ops (dropout) draw the same values; False skips saving it.
            Only the CPU stream is restored: NumPy's and Python's global generators, and the
            CuPy stream, are not.
        kwargs: keyword arguments passed to ``function`` unchanged.

    Returns:
        What ``function`` returns: a Tensor that backpropagates by recomputing ``function``.
    """
    if not callable(function):
        raise ArgumentError(
            f"[checkpoint] the function must be callable, got {type(function).__name__}",
            help="pass the layer or function itself: checkpoint(block, x), not checkpoint(x)",
        )
    if not any(isinstance(value, Tensor) for value in args):
        kinds = ", ".join(type(value).__name__ for value in args) or "no arguments"
        raise ArgumentError(
            f"[checkpoint] needs at least one Tensor argument, got {kinds}",
            help="pass the segment's input tensor positionally: checkpoint(block, x)",
        )
    if not is_grad_enabled():
        return function(*args, **kwargs)  # nothing would be recorded: nothing to save

    rng_state = default_generator.get_state() if preserve_rng_state else None
    reads = _GradInputs()
    with no_grad(), dispatch_mode(reads):
        output = function(*args, **kwargs)
    if not reads.tensors:
        return output  # no input requires grad: the result is a constant, as in the plain run
    if not isinstance(output, Tensor):
        raise ArgumentError(
            f"[checkpoint] the function must return a Tensor, got {type(output).__name__}",
            help="checkpoint a function with one Tensor output (wrap several outputs in "
            "separate checkpoints, or return them concatenated)",
        )
    node = Node(CHECKPOINT, tuple(reads.tensors), {})
    node.segment = _Segment(function, args, kwargs, rng_state, active_autocast())
    for observer in dispatch.active_modes():
        if isinstance(observer, _NewNodes):  # a checkpoint recomputing this one must see it
            observer.nodes.append(node)
    return output_tensor(CHECKPOINT, output.array, None, node)


def checkpoint_sequential(
    functions, segments: int, input: Tensor, preserve_rng_state: bool = True
) -> Tensor:
    """Run ``functions`` (a Sequential or a list of modules) in order on ``input``, in
    ``segments`` chunks, checkpointing every chunk but the last (as PyTorch does: its
    activations are needed at once by backward, so recomputing them would save nothing).

    Args:
        functions: a ``Sequential`` or a sequence of callables applied one after another.
        segments: how many chunks to split them into (the last takes the remainder).
        input: the tensor given to the first function.
        preserve_rng_state: as for ``checkpoint``.
    """
    if hasattr(functions, "children") and not isinstance(functions, Sequence):
        functions = list(functions.children())
    functions = list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ArgumentError(
            f"[checkpoint_sequential] segments must be a positive int, got {segments!r}",
            help="pass how many checkpointed chunks to split the modules into, e.g. 2",
        )
    if segments > len(functions):
        raise ArgumentError(
            f"[checkpoint_sequential] cannot split {len(functions)} functions into {segments} "
            "segments",
            help=f"pass segments between 1 and {max(1, len(functions))}",
        )
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start : end + 1]
        input = checkpoint(_run_chunk, chunk, input, preserve_rng_state=preserve_rng_state)
    return _run_chunk(functions[end + 1 :], input)


def _run_chunk(functions: list, input):
    for function in functions:
        input = function(input)
    return input


class _GradInputs(DispatchMode):
    """Collects, in order, the distinct tensors that require grad which ops read (under
    ``no_grad`` every result is a constant, so these all come from outside the segment)."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self._seen: set[int] = set()

    def before_op(self, op, inputs: tuple, attrs: dict) -> None:
        for value in inputs:
            if isinstance(value, Tensor) and value.requires_grad and id(value) not in self._seen:
                self._seen.add(id(value))
                self.tensors.append(value)


class _NewNodes(DispatchMode):
    """Collects the graph nodes recorded while it is active."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def after_op(self, op, inputs: tuple, output: Tensor, attrs: dict) -> None:
        if output._node is not None:
            self.nodes.append(output._node)


class _Segment:
    """What a checkpoint node keeps to recompute its function: the call and the random state."""

    def __init__(
        self, function: Callable, args: tuple, kwargs: dict, rng_state, autocast=None
    ) -> None:
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.autocast = autocast  # the forward's autocast, in force again when recomputing

    def replace_tensors(self, mapping: dict) -> None:
        """Point the call's Tensor arguments at other tensors (``{id(old): new}``)."""
        self.args = tuple(_swap(value, mapping) for value in self.args)
        self.kwargs = {name: _swap(value, mapping) for name, value in self.kwargs.items()}


class Checkpoint(Op):
    """The node of a checkpointed call. Its inputs are the tensors requiring grad that the
    function read; backward recomputes the function and differentiates the fresh graph."""

    name = "checkpoint"
    save_inputs = True  # the recomputation reads them: an in-place change must be caught

    def backward(self, ctx, grad):
        segment = ctx.segment
        create_graph = ctx.create_graph
        aliases = {id(tensor): _alias(tensor) for tensor in ctx.inputs}
        recorded = _NewNodes()
        # only a recorded backward keeps nodes that must be pointed back at the real tensors
        observing = dispatch_mode(recorded) if create_graph else contextlib.nullcontext()
        substitution = _Substitution(_through_outer_substitutions(aliases))
        with dispatch_mode(substitution), observing:
            with enable_grad():
                output = _recompute(segment)
            if not isinstance(output, Tensor) or not output.requires_grad:
                raise ArgumentError(
                    "[checkpoint] recomputing the function in backward gave "
                    f"{type(output).__name__} without a graph, unlike its forward call",
                    help="the checkpointed function must compute the same thing every call",
                )
            input_grads = _grad(
                output,
                list(aliases.values()),
                grad,
                create_graph=create_graph,
                allow_unused=True,
            )
        if create_graph:  # the recorded backward must lead to the real tensors, not the aliases
            real = {id(aliases[id(tensor)]): tensor for tensor in ctx.inputs}
            for node in recorded.nodes:
                _point_at(node, real)
        # the dispatch states that held the substitution reference each other (a grad-mode
        # twin): empty its table so that they cannot keep the inputs' memory alive
        substitution.aliases.clear()
        return input_grads


CHECKPOINT = Checkpoint()


def _recompute(segment: _Segment):
    precision = contextlib.nullcontext()
    if segment.autocast is not None:
        precision = autocast(dtype=segment.autocast.dtype)
    with precision:
        if segment.rng_state is None:
            return segment.function(*segment.args, **segment.kwargs)
        current = default_generator.get_state()
        default_generator.set_state(segment.rng_state)
        try:
            return segment.function(*segment.args, **segment.kwargs)
        finally:
            default_generator.set_state(current)


def _alias(tensor: Tensor) -> Tensor:
    """A leaf that reads ``tensor``'s memory and version counter and requires grad."""
    alias = tensor.detach()
    alias.requires_grad = True
    return alias


class _Substitution(DispatchMode):
    """Runs every op that reads a tensor of ``aliases`` (``{id(tensor): alias}``) on the alias
    instead, so that recomputation differentiates with respect to the aliases."""

    def __init__(self, aliases: dict) -> None:
        self.aliases = aliases

    def __dispatch__(self, op, inputs: tuple, attrs: dict):
        aliases = self.aliases
        if any(isinstance(value, Tensor) and id(value) in aliases for value in inputs):
            swapped = tuple(_swap(value, aliases) for value in inputs)
            return dispatch.apply(op, *swapped, **attrs)  # the modes below run it, on aliases
        return None


def _through_outer_substitutions(aliases: dict) -> dict:
    """``aliases`` extended to the tensors that an outer checkpoint's recomputation reads through
    its own aliases (a checkpoint inside a checkpoint): such a tensor reaches this one's op as
    the outer alias only after the outer mode ran, which is below this one on the stack."""
    extended = dict(aliases)
    for mode in dispatch.active_modes():
        if isinstance(mode, _Substitution):
            for original, alias in mode.aliases.items():
                inner = extended.get(id(alias))
                if inner is not None:
                    extended[original] = inner
    return extended


def _swap(value, mapping: dict):
    if isinstance(value, Tensor):
        return mapping.get(id(value), value)
    return value


def _point_at(node: Node, mapping: dict) -> None:
    """Make ``node`` read the tensors of ``mapping`` (``{id(old): new}``) instead of the old."""
    if node.freed:
        return
    node.inputs = tuple(_swap(value, mapping) for value in node.inputs)
    segment = getattr(node, "segment", None)
    if segment is not None:
        segment.replace_tensors(mapping)
