"""The graph node: one recorded op application, and the context its backward rule reads.

``forward`` may store what backward needs on the node (``ctx.mask = ...``). The inputs are kept as
Tensors, so a backward rule can differentiate through them again. The output is kept as its array
only, and rebuilt as a Tensor attached to this node on demand (``ctx.output``): keeping the output
Tensor itself would make a reference cycle output -> node -> output.
"""

from __future__ import annotations

from ..errors import AutogradError
from .mode import is_grad_enabled


class Node:
    """One op application in the dynamic graph (also the ``ctx`` of its forward and backward)."""

    _hooks = None  # gradient hooks of the produced (non-leaf) tensor
    freed = False  # True once backward released the node's saved values
    input_versions = None  # versions of the inputs at recording time (ops that save inputs)
    out_data = None  # the output array (ops that save their output)

    def __init__(self, op, inputs: tuple, attrs: dict) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs

    @property
    def output(self):
        """The op's output as a Tensor that belongs to this node (for backward rules)."""
        from .tensor import Tensor

        out = Tensor(self.out_data)
        out._node = self
        out.requires_grad = True
        out._version = self.out_version
        return out

    @property
    def create_graph(self) -> bool:
        """True when this backward is itself recorded (``grad(..., create_graph=True)``): rules
        with an array fast path must then take their differentiable form."""
        return is_grad_enabled()

    @staticmethod
    def tensor(array):
        """``array`` as a constant Tensor: backward rules live below autograd and build the
        Tensors they return through their context."""
        from .tensor import Tensor

        return Tensor(array)

    def check_versions(self) -> None:
        """Raise if a tensor this node's backward reads was modified in place since recording."""
        op = self.op
        if self.input_versions is not None:
            for tensor, recorded in zip(self.inputs, self.input_versions):
                if recorded is not None and tensor.version != recorded:
                    _raise_modified(op, "an input", tensor._version, recorded)
        if self.out_data is not None and self.out_version[0] != self.out_version_at:
            _raise_modified(op, "the output", self.out_version, self.out_version_at)

    def release(self) -> None:
        """Drop everything backward saved, so memory is returned as the walk proceeds."""
        op = self.op
        self.__dict__.clear()
        self.op = op
        self.freed = True

    def __repr__(self) -> str:
        return f"<node {self.op.name}>"


def _raise_modified(op, what: str, version: list, recorded: int) -> None:
    raise AutogradError(
        f"[{op.name}] backward needs {what} of '{op.name}', which was modified in place by "
        f"'{version[1]}' after it was used (version {recorded} -> {version[0]}); the gradient would "
        "be wrong",
        help="use the out-of-place form (e.g. x = x + y instead of x.add_(y)), or clone() the "
        "tensor before modifying it",
    )
