"""Sharded optimizer state and gradients (ZeRO stages 1 and 2): each rank updates one piece.

    optimizer = ShardedOptimizer(optim.Adam, model.parameters(), lr=1e-3)   # stage=2
    for batch in loader:
        optimizer.zero_grad()
        model(batch).backward()
        optimizer.reduce_gradients()        # reduce_scatter: this rank's piece of the mean gradient
        optimizer.clip_grad_norm_(1.0)      # optional: the norm over every rank's piece
        optimizer.step()                    # update this rank's piece, then all_gather the pieces

Each parameter group's parameters (of one dtype) are laid end to end in one flat vector cut into
equal pieces, one per rank (``shards.FlatLayout``). The parameters become views of that flat
vector, so the all_gather after the update writes straight into them. An ordinary optimizer of
``buildingai.optim`` runs over this rank's pieces only: its state (Adam's moments...) is
``1/world_size`` of the unsharded state, plus padding.

- ``stage=2`` (default): gradients are reduce-scattered; each rank keeps its piece only and the
  full ``.grad`` of every parameter is freed.
- ``stage=1``: gradients are all-reduced (each ``.grad`` holds the mean gradient afterwards, as
  in data parallel training) and each rank takes its piece.

Every rank must build the model with the same weights (``broadcast_parameters`` first).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.tensor import Tensor, bump_version
from ..backend.device import array_namespace
from ..optim.optimizer import OptimizerBase
from . import shards
from .collectives import all_gather_into_tensor, all_reduce, reduce_scatter_tensor
from .errors import DistributedError
from .group import ProcessGroup, default_group


class ShardedOptimizer:
    """``optimizer_class`` over this rank's pieces of ``params``; see the module docstring.

    Args:
        optimizer_class: an optimizer of ``buildingai.optim`` (or a subclass of
            ``OptimizerBase``) whose update treats every element on its own: SGD, Adam, AdamW,
            Adagrad, Adadelta, RMSprop, Lion. LBFGS (whole-vector line searches) is refused.
        params: parameters, or parameter groups (dicts with "params" and hyper-parameters).
        stage: 2 to reduce-scatter gradients, 1 to all-reduce them (see the module docstring).
        group: the process group (the world by default).
        **defaults: the optimizer's hyper-parameters (``lr=...``).

    Attributes:
        optimizer: the ordinary optimizer over this rank's flat pieces (one per parameter group
            and dtype); ``param_groups`` are its groups. A scheduler drives it:
            ``StepLR(optimizer.optimizer, step_size=10)``.
        buckets: one ``FlatLayout`` per piece, in the order of ``optimizer.param_groups``.
    """

    def __init__(self, optimizer_class, params, stage: int = 2,
                 group: ProcessGroup | None = None, **defaults) -> None:  # fmt: skip
        name = getattr(optimizer_class, "__name__", repr(optimizer_class))
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, OptimizerBase)):
            raise DistributedError(
                f"[ShardedOptimizer] optimizer_class must be an optimizer class such as "
                f"optim.Adam, got {name}",
                help="pass the class itself, with its hyper-parameters as keywords: "
                "ShardedOptimizer(optim.Adam, model.parameters(), lr=1e-3)",
            )
        if not optimizer_class.updates_elementwise:
            raise DistributedError(
                f"[ShardedOptimizer] {name} does not update each element on its own, so it "
                "cannot run on a piece of the flat parameter vector",
                help="use an element-wise optimizer (SGD, Adam, AdamW, Adagrad, Adadelta, "
                "RMSprop, Lion) or train unsharded",
            )
        if stage not in (1, 2):
            raise DistributedError(
                f"[ShardedOptimizer] stage must be 1 or 2, got {stage!r}",
                help="stage 3 (sharded parameters) is distributed.shard()",
            )
        self.stage = stage
        self.group = group or default_group()
        self.world_size, self.rank = self.group.size, self.group.rank
        self.buckets: list[shards.FlatLayout] = []
        self.flats: list = []  # each bucket's padded flat vector; its parameters view it
        pieces = []  # the inner optimizer's groups: one flat piece each
        number = 0
        for user_group in _as_groups(params):
            by_dtype: dict = {}
            for param in user_group["params"]:
                by_dtype.setdefault(param.array.dtype, []).append((f"param {number}", param))
                number += 1
            settings = {k: v for k, v in user_group.items() if k != "params"}
            for members in by_dtype.values():
                names, members = zip(*members)
                pieces.append(dict(settings, params=[self._add_bucket(list(members), names)]))
        self.shards = [piece["params"][0] for piece in pieces]
        self.optimizer = optimizer_class(pieces, **defaults)
        self.reduced = False  # whether the gradients since the last step were reduced yet

    def _add_bucket(self, params: list, names) -> Tensor:
        """Lay ``params`` out in a flat vector they then view; return this rank's piece (a copy:
        the all_gather sends it while writing the flat vector)."""
        layout = shards.FlatLayout(params, self.world_size, list(names))
        xp = array_namespace(params[0].array)
        flat = layout.flatten([p.array for p in params], xp)
        for param, view in zip(params, layout.views(flat)):
            param.array = view
        start, stop = layout.shard_range(self.rank)
        self.buckets.append(layout)
        self.flats.append(flat)
        return Tensor(flat[start:stop].copy())

    # ----- what users of an optimizer expect ------------------------------------------------
    @property
    def param_groups(self) -> list[dict]:
        return self.optimizer.param_groups

    @property
    def state(self) -> dict:
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the parameters' gradients and this rank's piece gradients."""
        for layout in self.buckets:
            for param in layout.params:
                param.grad = None
        self.optimizer.zero_grad(set_to_none)
        self.reduced = False

    # ----- the three steps -----------------------------------------------------------------
    def reduce_gradients(self) -> None:
        """Give each rank its piece of the mean gradient over the ranks, as ``.grad`` of its
        flat piece: one reduce_scatter (stage 2) or all_reduce (stage 1) per bucket, then one
        all_reduce of one value so that an inf/NaN anywhere makes every rank's piece non-finite
        (``GradScaler`` then skips the step on every rank together). Call it once per step,
        after the last backward of the step (gradients accumulate in ``.grad`` until then)."""
        works = []
        for layout, shard in zip(self.buckets, self.shards):
            xp = array_namespace(shard.array)
            flat = layout.flatten([p.grad.array if p.grad is not None else None
                                   for p in layout.params], xp)  # fmt: skip
            if self.stage == 2:
                piece = xp.empty(layout.shard_numel, layout.dtype)
                works.append((shard, piece, flat, reduce_scatter_tensor(
                    piece, flat, op="mean", group=self.group, async_op=True)))  # fmt: skip
                for param in layout.params:
                    param.grad = None  # stage 2 keeps only this rank's piece
            else:
                works.append((shard, None, flat, all_reduce(flat, op="mean", group=self.group,
                                                            async_op=True)))  # fmt: skip
        finite = True
        for (shard, piece, flat, work), layout in zip(works, self.buckets):
            work.wait()
            if piece is None:  # stage 1: every .grad is the reduced gradient, a view of flat
                for param, view in zip(layout.params, layout.views(flat)):
                    param.grad = Tensor(view)
                start, stop = layout.shard_range(self.rank)
                piece = flat[start:stop].copy()
            finite = finite and bool(array_namespace(piece).isfinite(piece).all())
            shard.grad = Tensor(piece)
        flag = np.array([0.0 if finite else 1.0])
        all_reduce(flag, op="max", group=self.group)
        if flag[0]:
            for shard in self.shards:
                shard.grad.array[...] = np.nan
        self.reduced = True

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0,
                        error_if_nonfinite: bool = False) -> Tensor:  # fmt: skip
        """Clip the reduced gradients by their norm over every rank's piece (reducing them
        first if ``reduce_gradients`` was not called); returns that norm, the same on every
        rank and equal to ``optim.clip_grad_norm_`` on the unsharded mean gradient."""
        if not self.reduced:
            self.reduce_gradients()
        return shards.clip_grad_norm_(self.shards, max_norm, norm_type, error_if_nonfinite,
                                      self.group)  # fmt: skip

    def step(self, closure=None) -> None:
        """Update this rank's pieces with the wrapped optimizer, then all_gather every piece into
        the parameters (each keeps its shape). Reduces the gradients first when
        ``reduce_gradients`` was not called since the last step; with a ``GradScaler``, call
        ``reduce_gradients()`` before ``scaler.step(optimizer)`` (the scaler reads the pieces'
        gradients)."""
        if closure is not None:
            raise DistributedError(
                "[ShardedOptimizer.step] a closure cannot be re-evaluated on a piece of the "
                "parameters",
                help="compute the loss and call backward before optimizer.step()",
            )
        if not self.reduced:
            self.reduce_gradients()
        self._check_views()
        self.optimizer.step()
        works = [all_gather_into_tensor(flat, shard.array, group=self.group, async_op=True)
                 for flat, shard in zip(self.flats, self.shards)]  # fmt: skip
        for work in works:
            work.wait()
        for layout in self.buckets:
            for param in layout.params:
                bump_version(param, "ShardedOptimizer.step")
        self.reduced = False

    def _check_views(self) -> None:
        for layout, flat in zip(self.buckets, self.flats):
            for name, param in zip(layout.names, layout.params):
                if param.array.base is not flat:
                    raise DistributedError(
                        f"[ShardedOptimizer.step] the data of {name} (shape "
                        f"{tuple(param.shape)}) was replaced after the optimizer was built, so "
                        "the update would not reach it",
                        help="load weights (load_state_dict, .to(...)) before building the "
                        "ShardedOptimizer, or write into param.array[...] in place",
                    )

    # ----- memory and checkpoints -----------------------------------------------------------
    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds (arrays in the wrapped optimizer's state)."""
        return sum(int(value.nbytes) for state in self.optimizer.state.values()
                   for value in state.values() if hasattr(value, "nbytes"))  # fmt: skip

    def state_dict(self) -> dict:
        """This rank's part of the optimizer: the wrapped optimizer's state dict, whose arrays
        are this rank's pieces without padding, and where each piece lies in the flat vector.
        Save one per rank; ``load_state_dict`` takes the list of all of them, at any world
        size."""
        inner = self.optimizer.state_dict()
        buckets = []
        for index, layout in enumerate(self.buckets):
            start, stop = layout.shard_range(self.rank)
            stop = min(stop, layout.numel)
            start = min(start, stop)
            buckets.append({"numel": layout.numel, "start": start, "stop": stop,
                            "dtype": str(layout.dtype)})  # fmt: skip
            for name, value in inner["state"].get(index, {}).items():
                if _is_piece(value, layout):
                    inner["state"][index][name] = value[: stop - start]
        return {"world_size": self.world_size, "rank": self.rank, "stage": self.stage,
                "buckets": buckets, "optimizer": inner}  # fmt: skip

    def load_state_dict(self, state_dicts) -> None:
        """Restore from the state dicts of every rank of a saved run (a list, any world size),
        or from this rank's own when the world size is the same. Each rank takes the elements
        of its own piece from the pieces that hold them. Build the model and this optimizer
        first (after loading the model's weights)."""
        if isinstance(state_dicts, dict):
            state_dicts = [state_dicts]
        state_dicts = sorted(state_dicts, key=lambda saved: int(saved["rank"]))
        saved_size = int(state_dicts[0]["world_size"])
        if len(state_dicts) != saved_size and not (
            saved_size == self.world_size and int(state_dicts[0]["rank"]) == self.rank
        ):
            raise DistributedError(
                f"[ShardedOptimizer.load_state_dict] got {len(state_dicts)} of the "
                f"{saved_size} ranks' state dicts of a run at {saved_size} ranks",
                help="pass the list of every rank's state dict (each rank saved its own), or "
                "this rank's own one when resuming at the same world size",
            )
        for saved in state_dicts:
            if len(saved["buckets"]) != len(self.buckets) or any(
                int(b["numel"]) != layout.numel for b, layout in zip(saved["buckets"], self.buckets)
            ):
                numels = [b["numel"] for b in saved["buckets"]]
                raise DistributedError(
                    "[ShardedOptimizer.load_state_dict] the saved pieces cover flat vectors of "
                    f"{numels} elements, this optimizer's cover {[b.numel for b in self.buckets]}",
                    help="resume with the same model and the same parameter groups",
                )
        first = state_dicts[0]["optimizer"]
        state = {}
        for index, layout in enumerate(self.buckets):
            start, stop = layout.shard_range(self.rank)
            names = first["state"].get(index, first["state"].get(str(index), {}))
            if not names:
                continue
            state[index] = {}
            for name, value in names.items():
                if not _is_saved_piece(value, state_dicts[0]["buckets"][index]):
                    state[index][name] = value  # a counter, the same on every rank
                    continue
                piece = np.zeros(layout.shard_numel, np.asarray(value).dtype)
                for saved in state_dicts:
                    where = saved["buckets"][index]
                    values = saved["optimizer"]["state"]
                    values = values.get(index, values.get(str(index)))[name]
                    low, high = max(start, int(where["start"])), min(stop, int(where["stop"]))
                    if low < high:
                        begin = int(where["start"])
                        piece[low - start : high - start] = np.asarray(values)[
                            low - begin : high - begin
                        ]
                state[index][name] = piece
        self.optimizer.load_state_dict({"state": state, "param_groups": first["param_groups"]})

    def describe(self) -> str:
        """Which elements of which parameters each rank owns, and its optimizer-state share."""
        lines = [f"ShardedOptimizer(stage {self.stage}, {type(self.optimizer).__name__}, "
                 f"{self.world_size} ranks)"]  # fmt: skip
        for index, layout in enumerate(self.buckets):
            lines.append(f"  bucket {index}: {layout.numel} elements of {layout.dtype}, "
                         f"{layout.shard_numel} per rank "
                         f"({layout.padded_numel - layout.numel} padding)")  # fmt: skip
            for rank in range(self.world_size):
                owned = ", ".join(
                    _span(name, first, stop, shape)
                    for (name, first, stop), shape in zip(
                        layout.owned(rank), _owned_shapes(layout, rank)
                    )
                )
                lines.append(f"    rank {rank}: {owned or '(padding only)'}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.describe()


def _as_groups(params) -> list[dict]:
    if isinstance(params, Tensor):
        params = [params]
    groups = list(params)
    if not groups:
        raise DistributedError(
            "[ShardedOptimizer] got an empty parameter list",
            help="pass model.parameters() (a consumed generator is empty)",
        )
    if not isinstance(groups[0], dict):
        groups = [{"params": groups}]
    return [dict(g, params=list(g["params"])) for g in groups]


def _is_piece(value, layout: shards.FlatLayout) -> bool:
    return hasattr(value, "shape") and tuple(value.shape) == (layout.shard_numel,)


def _is_saved_piece(value, where: dict) -> bool:
    """Whether ``value`` (in the state of the rank that saved ``where``) is that rank's piece of
    a per-element state array, not a counter."""
    shape = tuple(getattr(value, "shape", ()))
    return len(shape) == 1 and shape[0] == int(where["stop"]) - int(where["start"])


def _owned_shapes(layout, rank: int) -> list:
    names = [name for name, _, _ in layout.owned(rank)]
    return [layout.shapes[layout.names.index(name)] for name in names]


def _span(name: str, first: int, stop: int, shape: tuple) -> str:
    total = math.prod(shape)
    if first == 0 and stop == total:
        return f"{name} {shape}"
    return f"{name}[{first}:{stop}] of {total}"
