"""``Parameter``: a tensor that a Module owns and trains."""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that a ``Module`` registers automatically
    when it is assigned as an attribute (``self.weight = Parameter(...)``).

    ``Parameter(data)`` shares memory with ``data`` (a Tensor or a backend array), as in PyTorch;
    pass ``buildingai.tensor(data)`` for a copy. Results of ops on a Parameter are plain Tensors.
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            data = data.data
        super().__init__(data, requires_grad=requires_grad)

    def __deepcopy__(self, memo: dict) -> Parameter:
        # A new leaf with copied values; the gradient and hooks stay with the original.
        copied = Parameter(self.data.copy(), requires_grad=self.requires_grad)
        memo[id(self)] = copied
        return copied

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
