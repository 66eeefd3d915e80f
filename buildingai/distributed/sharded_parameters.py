"""Sharded parameters (ZeRO stage 3, as FSDP): each rank keeps a piece of every layer's weights.

    sharded = shard(model, policy=lambda name, module: isinstance(module, nn.TransformerEncoderLayer))
    optimizer = optim.Adam(sharded.parameters(), lr=1e-3)   # an ordinary optimizer, over pieces
    for batch in loader:
        optimizer.zero_grad()
        loss_fn(model(batch)).backward()    # each unit: all_gather before its forward and its
                                            # backward, freed after; reduce_scatter its gradient
        sharded.finish_gradients()          # wait for the reduce_scatters: piece.grad is ready
        optimizer.step()                    # updates this rank's pieces only

The user marks the units: each module the ``policy`` selects becomes one unit holding its
parameters (those of selected sub-modules excepted), and the model itself holds every parameter
left over. A unit's parameters lie end to end in one flat vector of which each rank owns one equal
piece (``shards.FlatLayout``); outside the unit's forward and backward its parameters hold no
memory (their data is an empty array of shape (0,)). ``shard`` prints the plan before any step:
which parameters each rank owns, the bytes per rank, and the collectives of one step.

What happens, in order, with module hooks and gradient hooks:

1. forward pre-hook of a unit: ``all_gather`` the pieces into the parameters;
2. forward hook: free the parameters, and hook the unit's outputs so that
3. when backward reaches an output's gradient, the parameters are gathered again;
4. when every parameter of the unit has its gradient, the gradients are laid flat and
   ``reduce_scatter``-ed (mean over the ranks, started without waiting); parameters and
   gradients are freed;
5. ``finish_gradients()`` reduces the units whose gradients did not all arrive (unused
   parameters count as zeros), waits, and adds each rank's piece into ``piece.grad``.

Every rank must build the model with the same weights (the same seed, or
``broadcast_parameters`` before ``shard``).
"""

from __future__ import annotations

import contextlib
import weakref

from ..autograd.dispatch import DispatchMode, dispatch_mode
from ..autograd.mode import is_grad_enabled
from ..autograd.tensor import Tensor
from ..backend import accounting
from ..backend.device import array_namespace
from . import shards
from .collectives import all_gather_into_tensor, reduce_scatter_tensor
from .errors import DistributedError
from .group import ProcessGroup, default_group


class Unit:
    """The parameters gathered and freed together: one module's (see the module docstring).

    Attributes:
        name: the module's name in the model ("" for the model itself).
        layout: where each parameter sits in the flat vector, and each rank's piece.
        piece: this rank's piece (a Tensor of ``layout.shard_numel`` elements) that the
            optimizer updates; its ``.grad`` is this rank's piece of the mean gradient.
        flat: the gathered flat vector while the parameters are in use, else None.
    """

    def __init__(self, name: str, module, layout: shards.FlatLayout, piece: Tensor) -> None:
        self.name, self.module, self.layout, self.piece = name, module, layout, piece
        self.flat = None
        self.views: list = []  # tensors the forward made as views of ``flat`` (see ViewWatcher)
        self.watching: list = []  # the ViewWatcher contexts of forwards in progress
        self.ready: set[int] = set()  # parameters whose gradient is complete in this backward
        self.reduced = False  # whether this backward reduced the unit's gradients yet
        self.trainable = sum(1 for p in layout.params if p.requires_grad)


class ViewWatcher(DispatchMode):
    """Notes the tensors a unit's forward makes as views of its gathered parameters (slices
    such as attention's query, key and value weights), which the graph saves for backward.
    NumPy cannot free memory a view still points to, so freeing the unit empties these tensors
    too, and the next gather points them at the new flat vector: the same offsets and strides.
    """

    def __init__(self, unit: Unit) -> None:
        self.unit = unit

    def after_op(self, op, inputs: tuple, output, attrs: dict) -> None:
        flat = self.unit.flat
        data = getattr(output, "array", None)
        if flat is None or data is None or _owner(data) is not flat:
            return
        offset = (_address(data) - _address(flat)) // flat.itemsize
        self.unit.views.append((weakref.ref(output), offset, data.shape, data.strides))


class ShardedModel:
    """What ``shard`` returns: the units, their pieces, and the calls of a training step.

    Attributes:
        model: the model, whose parameters are now gathered and freed by hooks.
        units: the units, in the order of ``model.named_modules()`` (the model's own last).
    """

    def __init__(self, model, units: list[Unit], group: ProcessGroup) -> None:
        self.model, self.units, self.group = model, units, group
        self.world_size, self.rank = group.size, group.rank
        self.pending: list = []  # (unit, piece gradient, flat gradient, Work) of this backward
        self.collectives = {"all_gather": 0, "reduce_scatter": 0}  # calls made, for the plan
        self.handles = []
        for unit in units:
            module = unit.module
            self.handles.append(module.register_forward_pre_hook(self._pre_forward_hook(unit)))
            self.handles.append(
                module.register_forward_hook(self._forward_hook(unit), always_call=True)
            )
            for param in unit.layout.params:
                if param.requires_grad:
                    hook = self._gradient_hook(unit, param)
                    self.handles.append(param.register_post_accumulate_grad_hook(hook))

    # ----- what the training loop calls ------------------------------------------------------
    def parameters(self) -> list[Tensor]:
        """This rank's pieces, one per unit: what the optimizer trains."""
        return [unit.piece for unit in self.units]

    def finish_gradients(self) -> None:
        """Reduce what backward did not (units with parameters that got no gradient), wait for
        every reduce_scatter of this backward, and add each piece of the mean gradient into
        ``piece.grad``. Call it after each backward (several backwards accumulate)."""
        for unit in reversed(self.units):
            if not unit.reduced and (unit.ready or unit.flat is not None):
                self._reduce(unit)
        while self.pending:
            self._complete_oldest()
        for unit in self.units:
            unit.views = []
            unit.reduced = False
            unit.ready.clear()

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0,
                        error_if_nonfinite: bool = False) -> Tensor:  # fmt: skip
        """Clip the pieces' gradients by the norm over every rank's pieces (the norm of the
        unsharded gradient, one all_reduce of one value); returns that norm."""
        return shards.clip_grad_norm_(self.parameters(), max_norm, norm_type,
                                      error_if_nonfinite, self.group)  # fmt: skip

    @contextlib.contextmanager
    def gathered(self):
        """``with sharded.gathered():`` every parameter holds its full values in the block (to
        evaluate, compare or save with ``model.state_dict()``), and is freed after it."""
        for unit in self.units:
            self._gather(unit)
        try:
            yield self.model
        finally:
            for unit in self.units:
                self._free(unit)

    def full_state_dict(self) -> dict:
        """The model's state dict with every parameter gathered (copies, on every rank)."""
        with self.gathered():
            return {name: Tensor(value.array.copy()) for name, value in
                    self.model.state_dict().items()}  # fmt: skip

    def remove(self) -> None:
        """Unshard: every parameter gets its full values back (its own memory) and the hooks
        are removed."""
        for unit in self.units:
            self._gather(unit)
            for param in unit.layout.params:
                param.array = param.array.copy()
            unit.flat = None
        for handle in self.handles:
            handle.remove()

    # ----- the plan -------------------------------------------------------------------------
    def plan(self) -> str:
        """Which parameters each rank owns, the bytes per rank, and the collectives of one
        training step (forward, backward, gradients), with the bytes each rank sends in a ring."""
        n = self.world_size
        lines = [f"sharded parameters: {len(self.units)} units over {n} ranks"]
        header = f"  {'unit':<28}{'params':>7}{'elements':>11}{'per rank':>10}{'bytes/rank':>12}"
        lines.append(header)
        total = owned = 0
        for unit in self.units:
            layout = unit.layout
            size = layout.dtype.itemsize
            total += layout.numel * size
            owned += layout.shard_numel * size
            lines.append(f"  {unit.name or '(model)':<28}{len(layout.params):>7}"
                         f"{layout.numel:>11}{layout.shard_numel:>10}"
                         f"{layout.shard_numel * size:>12}")  # fmt: skip
        largest = max(u.layout.padded_numel * u.layout.dtype.itemsize for u in self.units)
        lines.append(f"  parameters: {total} bytes unsharded, {owned} bytes per rank "
                     f"(+ {largest} bytes while the largest unit is gathered)")  # fmt: skip
        sent = sum(3 * (n - 1) * u.layout.shard_numel * u.layout.dtype.itemsize
                   for u in self.units)  # fmt: skip
        lines.append(f"  collectives per step: {len(self.units)} all_gather in forward, "
                     f"{len(self.units)} all_gather in backward, {len(self.units)} "
                     f"reduce_scatter of gradients; {sent} bytes sent per rank (ring)")  # fmt: skip
        for rank in range(n):
            lines.append(f"  rank {rank} owns:")
            for unit in self.units:
                spans = [
                    _span(name, first, stop, unit, name_index)
                    for name_index, (name, first, stop) in _owned(unit.layout, rank)
                ]
                lines.append(f"    {unit.name or '(model)'}: {', '.join(spans) or '(padding)'}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.plan()

    # ----- gathering and freeing ------------------------------------------------------------
    def _gather(self, unit: Unit) -> None:
        if unit.flat is not None:
            return
        layout = unit.layout
        flat = array_namespace(unit.piece.array).empty(layout.padded_numel, layout.dtype)
        all_gather_into_tensor(flat, unit.piece.array, group=self.group)
        self.collectives["all_gather"] += 1
        if accounting.tracking:  # gathered parameters are memory this rank holds meanwhile
            accounting.record(flat, "all_gather", [unit.name or "(model)"])
        for param, view in zip(layout.params, layout.views(flat)):
            param.array = view
        xp = array_namespace(flat)
        for ref, offset, shape, strides in unit.views:
            tensor = ref()
            if tensor is not None:
                tensor.array = xp.lib.stride_tricks.as_strided(flat[offset:], shape, strides)
        unit.flat = flat

    def _free(self, unit: Unit) -> None:
        if unit.flat is None:
            return
        for param in unit.layout.params:
            param.array = _empty_like(param.array)
        for ref, _, _, _ in unit.views:
            tensor = ref()
            if tensor is not None:
                tensor.array = _empty_like(tensor.array)
        unit.flat = None

    def _pre_forward_hook(self, unit: Unit):
        def hook(module, args):
            if self.pending:
                raise DistributedError(
                    f"[shard] a forward of the model started while {len(self.pending)} "
                    "gradient reduce_scatters of the last backward were not finished",
                    help="call sharded.finish_gradients() after each backward, before "
                    "optimizer.step() and the next forward",
                )
            self._gather(unit)
            if is_grad_enabled():
                context = dispatch_mode(ViewWatcher(unit))
                context.__enter__()
                unit.watching.append(context)

        return hook

    def _forward_hook(self, unit: Unit):
        def hook(module, args, output):
            if unit.watching:
                unit.watching.pop().__exit__(None, None, None)
            if output is not None and is_grad_enabled():
                for tensor in _tensors(output):
                    if tensor.requires_grad:
                        tensor.register_hook(lambda grad: self._gather(unit))
            self._free(unit)

        return hook

    def _gradient_hook(self, unit: Unit, param):
        def hook(tensor):
            unit.ready.add(id(param))
            if len(unit.ready) == unit.trainable and not unit.reduced:
                self._reduce(unit)

        return hook

    def _reduce(self, unit: Unit) -> None:
        """Start the reduce_scatter of the unit's gradients; free its parameters and
        gradients."""
        layout = unit.layout
        xp = array_namespace(unit.piece.array)
        grads = [p.grad.array if p.grad is not None else None for p in layout.params]
        flat = layout.flatten(grads, xp)
        piece = xp.empty(layout.shard_numel, layout.dtype)
        if accounting.tracking:
            accounting.record(flat, "reduce_scatter", [unit.name or "(model)"])
        if self.pending:  # at most two in flight: each holds a whole flat gradient
            self._complete_oldest()
        work = reduce_scatter_tensor(piece, flat, op="mean", group=self.group, async_op=True)
        self.collectives["reduce_scatter"] += 1
        self.pending.append((unit, piece, flat, work))
        for param in layout.params:
            param.grad = None
        unit.reduced = True
        self._free(unit)

    def _complete_oldest(self) -> None:
        """Wait for the oldest reduce_scatter in flight and add its piece into the gradient."""
        unit, piece, _, work = self.pending.pop(0)
        work.wait()
        if unit.piece.grad is None:
            unit.piece.grad = Tensor(piece)
        else:
            unit.piece.grad.array += piece


def shard(model, policy, group: ProcessGroup | None = None, print_plan: bool = True
          ) -> ShardedModel:  # fmt: skip
    """Shard ``model``'s parameters over the ranks of ``group`` (the world by default), one unit
    per module that ``policy`` selects plus the model itself for what is left over; print the
    plan on rank 0 unless ``print_plan=False``. See the module docstring for the loop.

    Args:
        policy: ``policy(name, module) -> bool`` for each module of ``model.named_modules()``,
            or a tuple of module classes (every instance is a unit).
    """
    group = group or default_group()
    if isinstance(policy, (type, tuple)):
        classes = policy
        policy = lambda name, module: isinstance(module, classes)  # noqa: E731
    if not callable(policy):
        raise DistributedError(
            f"[shard] policy must be a function (name, module) -> bool or a tuple of module "
            f"classes, got {type(policy).__name__}",
            help="e.g. shard(model, policy=(nn.TransformerEncoderLayer,))",
        )
    names = {id(p): name for name, p in model.named_parameters()}
    selected = [(name, module) for name, module in model.named_modules()
                if name and policy(name, module)]  # fmt: skip
    claimed: set[int] = set()
    members: dict[str, list] = {}
    for name, module in reversed(selected):  # innermost first: an inner unit keeps its own
        params = [p for p in module.parameters() if id(p) not in claimed]
        claimed.update(id(p) for p in params)
        members[name] = params
    members_of_model = [p for p in model.parameters() if id(p) not in claimed]
    order = [(name, module, members[name]) for name, module in selected if members[name]]
    if members_of_model:
        order.append(("", model, members_of_model))
    units = []
    for name, module, params in order:
        dtypes = {str(p.array.dtype) for p in params}
        if len(dtypes) > 1:
            raise DistributedError(
                f"[shard] unit {name or '(model)'} has parameters of dtypes {sorted(dtypes)}; a "
                "unit's parameters are laid out in one flat vector of one dtype",
                help="convert the model to one dtype first (model.to(...)), or make the "
                "modules whose dtype differs units of their own in the policy",
            )
        layout = shards.FlatLayout(params, group.size, [names[id(p)] for p in params])
        xp = array_namespace(params[0].array)
        flat = layout.flatten([p.array for p in params], xp)
        start, stop = layout.shard_range(group.rank)
        piece = Tensor(flat[start:stop].copy())
        for param in params:
            param.array = _empty_like(param.array)
            param.grad = None
        units.append(Unit(name, module, layout, piece))
    sharded = ShardedModel(model, units, group)
    if print_plan and group.rank == 0:
        print(sharded.plan())
    return sharded


def _empty_like(array):
    """A parameter's data while it is not gathered: no elements, its dtype and device."""
    return array_namespace(array).empty((0,), array.dtype)


def _owner(array):
    """The array that owns ``array``'s memory (itself, or the base of a view)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _address(array) -> int:
    interface = getattr(array, "__array_interface__", None)
    return interface["data"][0] if interface else array.data.ptr  # NumPy, else CuPy


def _tensors(output):
    if isinstance(output, Tensor):
        yield output
    elif isinstance(output, (list, tuple)):
        for item in output:
            yield from _tensors(item)
    elif isinstance(output, dict):
        for item in output.values():
            yield from _tensors(item)


def _owned(layout: shards.FlatLayout, rank: int):
    for name, first, stop in layout.owned(rank):
        yield layout.names.index(name), (name, first, stop)


def _span(name: str, first: int, stop: int, unit: Unit, index: int) -> str:
    """``name (shape)`` when the rank owns the whole parameter, else ``name[first:stop]`` (of
    its flattened elements); names are relative to the unit."""
    layout = unit.layout
    if unit.name and name.startswith(unit.name + "."):
        name = name[len(unit.name) + 1 :]
    shape = layout.shapes[index]
    total = layout.offsets[index + 1] - layout.offsets[index]
    if first == 0 and stop == total:
        return f"{name} {shape}"
    return f"{name}[{first}:{stop}]"
