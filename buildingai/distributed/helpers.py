"""Explicit helpers for data parallelism: the same weights everywhere, and gradients averaged in
buckets that start while backward still runs.

    broadcast_parameters(model, src=0)                 # once, after building the model
    reducer = all_reduce_gradients(model, bucket_bytes=4 << 20)
    for batch in loader:
        loss = model(batch)
        loss.backward()          # each bucket's all-reduce starts when its last gradient is ready
        reducer.wait()           # every gradient is now the mean over the ranks
        optimizer.step()
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from .collectives import Work, all_reduce, broadcast
from .errors import DistributedError
from .group import ProcessGroup, default_group


def broadcast_parameters(model, src: int = 0, group: ProcessGroup | None = None) -> None:
    """Copy every parameter and buffer of ``model`` on world rank ``src`` to all ranks, in place.

    Each tensor keeps its shape, which must be the same on every rank (the same model)."""
    tensors = [p for p in model.parameters()]
    if hasattr(model, "buffers"):
        tensors += [b for b in model.buffers() if isinstance(b, Tensor)]
    works = [broadcast(tensor, src=src, group=group, async_op=True) for tensor in tensors]
    for work in works:
        work.wait()


class _Bucket:
    """Parameters of one dtype whose gradients travel together in one flat buffer."""

    def __init__(self, params: list, dtype: np.dtype) -> None:
        self.params = params
        self.offsets = np.cumsum([0] + [p.array.size for p in params])
        self.flat = np.zeros(int(self.offsets[-1]), dtype)
        self.ready: set[int] = set()
        self.work: Work | None = None

    def slot(self, index: int) -> np.ndarray:
        return self.flat[self.offsets[index] : self.offsets[index + 1]]


class GradientReducer:
    """Averages (or sums) the gradients of ``model`` over the ranks, in buckets of about
    ``bucket_bytes``. Post-accumulate gradient hooks copy each gradient into its bucket as
    backward finishes it; a full bucket's all-reduce starts at once, overlapping the rest of
    backward. ``wait()`` completes every bucket (a parameter without a gradient counts as zeros)
    and writes the results into each ``.grad``. ``remove()`` unregisters the hooks.

    Each gradient (shaped like its parameter) travels flattened to ``(p.numel(),)`` in a 1-D
    bucket of one dtype, and comes back reshaped to the parameter's shape."""

    def __init__(self, model, bucket_bytes: int = 25 << 20, op: str = "mean",
                 group: ProcessGroup | None = None) -> None:  # fmt: skip
        if op not in ("mean", "sum"):
            raise DistributedError(f"[all_reduce_gradients] op must be 'mean' or 'sum', got {op!r}")
        self.group, self.op = group or default_group(), op
        params = [p for p in model.parameters() if p.requires_grad]
        # gradients become ready roughly from the last layer to the first: fill buckets that way
        self.buckets: list[_Bucket] = []
        self.place: dict[int, tuple[_Bucket, int]] = {}
        current: list = []
        for param in reversed(params):
            if current and (
                param.array.dtype != current[0].array.dtype
                or sum(p.array.nbytes for p in current) + param.array.nbytes > bucket_bytes
            ):
                self._add_bucket(current)
                current = []
            current.append(param)
        if current:
            self._add_bucket(current)
        self.handles = [p.register_post_accumulate_grad_hook(self._on_gradient) for p in params]

    def _add_bucket(self, params: list) -> None:
        bucket = _Bucket(params, params[0].array.dtype)
        self.buckets.append(bucket)
        for index, param in enumerate(params):
            self.place[id(param)] = (bucket, index)

    def _on_gradient(self, param) -> None:
        bucket, index = self.place[id(param)]
        if bucket.work is not None:
            raise DistributedError(
                "[all_reduce_gradients] a second backward before wait(): the bucket's all-reduce "
                "is still running",
                help="call reducer.wait() after each backward (accumulate several micro-batches "
                "by summing losses before one backward)",
            )
        np.copyto(bucket.slot(index), param.grad.array.reshape(-1))
        bucket.ready.add(index)
        if len(bucket.ready) == len(bucket.params):
            self._start(bucket)
        # poke earlier buckets so their transfers progress while backward computes
        for other in self.buckets:
            if other.work is not None:
                other.work.is_completed()

    def _start(self, bucket: _Bucket) -> None:
        bucket.work = all_reduce(Tensor(bucket.flat), op=self.op, group=self.group, async_op=True)

    def wait(self) -> None:
        """Finish every bucket, in the same order on every rank, and write each ``.grad``."""
        for bucket in self.buckets:
            if bucket.work is None:  # some gradient never arrived (unused parameter): zeros
                for index, param in enumerate(bucket.params):
                    if index not in bucket.ready:
                        source = param.grad.array.reshape(-1) if param.grad is not None else 0
                        bucket.slot(index)[...] = source
                self._start(bucket)
        for bucket in self.buckets:
            bucket.work.wait()
            for index, param in enumerate(bucket.params):
                values = bucket.slot(index).reshape(param.array.shape)
                if param.grad is None:
                    param.grad = Tensor(values.copy())
                else:
                    np.copyto(param.grad.array, values)
            bucket.work = None
            bucket.ready.clear()

    synchronize = wait

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def all_reduce_gradients(model, bucket_bytes: int = 25 << 20, op: str = "mean",
                         group: ProcessGroup | None = None) -> GradientReducer:  # fmt: skip
    """Start reducing ``model``'s gradients over the ranks from the next backward on, in buckets
    of about ``bucket_bytes``; call ``.wait()`` on the result after each backward, before the
    optimizer step. See ``GradientReducer``: every ``.grad`` keeps its parameter's shape."""
    return GradientReducer(model, bucket_bytes, op, group)
