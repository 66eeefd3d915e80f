"""``Parameter``: a tensor that a Module owns and trains."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace

_POSTERIOR_LOCK = threading.Lock()  # guards the first creation of a parameter's record


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that a ``Module`` registers automatically
    when it is assigned as an attribute (``self.weight = Parameter(...)``).

    ``Parameter(data)`` shares memory with ``data`` (a Tensor or a backend array), as in PyTorch;
    pass ``buildingai.tensor(data)`` for a copy. Results of ops on a Parameter are plain Tensors.
    """

    __slots__ = ("_posterior",)

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            data = data.array
        super().__init__(data, requires_grad=requires_grad)
        self._posterior = None  # per-thread record of the distribution sampled from it

    def set_posterior(self, kl: Callable[[], Tensor] | None) -> None:
        """Record, for the calling thread only, how to compute this parameter's KL divergence
        to its prior (``buildingai.prob.sample`` does this for the parameters a sampled
        distribution is built from); None forgets it. Each thread keeps its own record, and a
        new sample replaces the previous one, so records never pile up across steps."""
        if self._posterior is None:
            with _POSTERIOR_LOCK:
                if self._posterior is None:
                    self._posterior = threading.local()
        self._posterior.kl = kl

    def kl_divergence(self) -> Tensor:
        """KL(posterior || prior), summed to a scalar, for the distribution most recently
        sampled from this parameter on this thread (through ``buildingai.prob.sample``);
        a zero scalar for a parameter with no distribution. When several parameters build one
        distribution (a mean and a scale), the first of them carries the KL and the others
        give 0, so ``sum(p.kl_divergence() for p in model.parameters())`` counts it once."""
        record = self._posterior
        kl = None if record is None else getattr(record, "kl", None)
        if kl is None:
            return Tensor(array_namespace(self.array).zeros((), dtype=self.array.dtype))
        return kl()

    def __deepcopy__(self, memo: dict) -> Parameter:
        # A new leaf with copied values; the gradient and hooks stay with the original.
        copied = Parameter(self.array.copy(), requires_grad=self.requires_grad)
        memo[id(self)] = copied
        return copied

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Buffer(Tensor):
    """A tensor a ``Module`` registers as a buffer when it is assigned as an attribute
    (``self.running_mean = Buffer(zeros(3))``), as ``torch.nn.Buffer``: state that is saved
    and moved with the module but not trained. ``persistent=False`` keeps it out of
    ``state_dict``. ``Buffer(data)`` shares memory with ``data``, detached from its graph."""

    __slots__ = ("persistent",)

    def __init__(self, data=None, *, persistent: bool = True) -> None:
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        requires_grad = isinstance(data, Tensor) and data.requires_grad
        if isinstance(data, Tensor):
            data = data.array
        super().__init__(data, requires_grad=requires_grad)
        self.persistent = persistent
