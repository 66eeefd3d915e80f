"""Flat shards: parameters laid end to end in one flat vector, cut into one equal piece per rank.

    layout = FlatLayout(params, world_size=4)
    layout.shard_range(rank)      # (start, stop): the piece of the flat vector this rank owns
    layout.owned(rank)            # which parameters (and which of their elements) fall in it

The flat vector is padded with zeros to a multiple of the world size, so every rank's piece has
``shard_numel`` elements and ``reduce_scatter``/``all_gather`` move equal blocks. The sharded
optimizer (ZeRO stages 1 and 2) and the sharded parameters (stage 3) both cut parameters this way;
``global_grad_norm`` and ``clip_grad_norm_`` clip gradients that live as such pieces.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..optim.clip import NonFiniteNormError
from .collectives import all_reduce
from .group import ProcessGroup


class FlatLayout:
    """Where each of ``params`` (one dtype) sits in the flat vector, and each rank's piece.

    Attributes:
        params: the parameters, in order; parameter ``i`` fills ``offsets[i]:offsets[i + 1]``.
        numel: the elements of all parameters together.
        shard_numel: the elements of each rank's piece, ``ceil(numel / world_size)``.
        padded_numel: ``shard_numel * world_size`` (the flat vector with its zero padding).
    """

    def __init__(self, params: list, world_size: int, names: list[str] | None = None) -> None:
        self.params = list(params)
        self.names = names or [f"param {i}" for i in range(len(self.params))]
        self.shapes = [tuple(p.shape) for p in self.params]
        self.dtype = self.params[0].array.dtype
        self.offsets = [0]
        for param in self.params:
            self.offsets.append(self.offsets[-1] + int(param.array.size))
        self.numel = self.offsets[-1]
        self.world_size = world_size
        self.shard_numel = max(1, math.ceil(self.numel / world_size))
        self.padded_numel = self.shard_numel * world_size

    def shard_range(self, rank: int) -> tuple[int, int]:
        """``(start, stop)`` of ``rank``'s piece in the padded flat vector."""
        return rank * self.shard_numel, (rank + 1) * self.shard_numel

    def flatten(self, arrays: list, xp=np):
        """One padded flat vector (``padded_numel``,) of ``arrays`` (shaped like the parameters;
        None counts as zeros)."""
        flat = xp.zeros(self.padded_numel, self.dtype)
        for index, array in enumerate(arrays):
            if array is not None:
                flat[self.offsets[index] : self.offsets[index + 1]] = array.reshape(-1)
        return flat

    def views(self, flat) -> list:
        """Each parameter's elements of ``flat``, reshaped to the parameter's shape (views)."""
        return [
            flat[self.offsets[i] : self.offsets[i + 1]].reshape(shape)
            for i, shape in enumerate(self.shapes)
        ]

    def owned(self, rank: int) -> list[tuple[str, int, int]]:
        """``(name, first, stop)`` for each parameter with elements in ``rank``'s piece: elements
        ``first:stop`` of the flattened parameter belong to this rank."""
        start, stop = self.shard_range(rank)
        pieces = []
        for name, begin, end in zip(self.names, self.offsets[:-1], self.offsets[1:]):
            low, high = max(start, begin), min(stop, end)
            if low < high:
                pieces.append((name, low - begin, high - begin))
        return pieces


def global_grad_norm(shards: list, norm_type: float = 2.0, group: ProcessGroup | None = None
                     ) -> float:  # fmt: skip
    """The ``norm_type``-norm of the gradients of all ranks' ``shards`` together (the norm of
    the unsharded gradient: pieces do not overlap and the padding is zero), by one all_reduce
    of one float64. ``shards``: this rank's flat pieces (Tensors whose ``.grad`` may be None)."""
    norm_type = float(norm_type)
    grads = [s.grad.array for s in shards if s.grad is not None]
    if norm_type == math.inf:
        local = max((float(abs(g).max()) for g in grads if g.size), default=0.0)
        op = "max"
    elif norm_type == 2.0:
        local = sum(float(g.astype(np.float64, copy=False) @ g.astype(np.float64, copy=False))
                    for g in grads)  # fmt: skip
        op = "sum"
    else:
        local = sum(float((abs(g.astype(np.float64)) ** norm_type).sum()) for g in grads)
        op = "sum"
    total = np.array([local], np.float64)
    all_reduce(total, op=op, group=group)
    if norm_type == math.inf:
        return float(total[0])
    return float(total[0]) ** (1.0 / norm_type)


def clip_grad_norm_(shards: list, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, group: ProcessGroup | None = None
                    ) -> Tensor:  # fmt: skip
    """Scale this rank's shard gradients in place so that the norm of all ranks' gradients
    together is at most ``max_norm``, as ``optim.clip_grad_norm_`` does on unsharded gradients
    (the same coefficient, ``max_norm / (total + 1e-6)``). Returns the total norm before
    clipping as a 0-d Tensor; every rank computes the same one."""
    total = global_grad_norm(shards, norm_type, group)
    if error_if_nonfinite and not math.isfinite(total):
        raise NonFiniteNormError(
            f"[clip_grad_norm_] the total norm of order {norm_type} of the sharded gradients is "
            f"{total}, so they cannot be clipped",
            help="find where the gradient overflows, or pass error_if_nonfinite=False",
        )
    coefficient = float(max_norm) / (total + 1e-6)
    grads = [s.grad.array for s in shards if s.grad is not None]
    if coefficient < 1.0 or math.isnan(coefficient):
        for grad in grads:
            grad *= coefficient
    dtype = grads[0].dtype if grads else np.float32
    xp = array_namespace(grads[0]) if grads else np
    return Tensor(xp.asarray(total, dtype=dtype))
