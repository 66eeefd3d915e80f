"""The activation functions that take ``inplace=`` in PyTorch, with its semantics.

``inplace=True`` writes the result into the input and returns the input itself, so every other
reference to that tensor sees the activated values (a residual branch that kept ``x`` too), as
in PyTorch. It goes through the same path as the tensor's in-place methods (``add_``,
``clamp_``): the version counter moves, a leaf that requires grad is refused while gradients are
recorded, and a node that saved ``x`` as an input for its backward reports the change instead
of giving a wrong gradient.
"""

from __future__ import annotations

from collections.abc import Callable

from ...autograd.dispatch import tensor_operator
from ...autograd.mode import is_grad_enabled
from ...autograd.tensor import Tensor
from ...backend.device import array_namespace
from ...functions import activation as extra
from ...functions import elementwise
from ...functions.inplace import _in_place
from ...functions.random_like import rand_like
from ...ops.activation import RELU

# relu through dispatch's Tensor path (apply's steps for an unrecorded CPU call inline)
_relu = tensor_operator(RELU, general=elementwise.relu)


def _keep_saved_output(x: Tensor) -> None:
    """Give the node that produced ``x`` (or the tensor ``x`` is a view of) a private copy of
    the output it saved for its backward. Some records keep their output where PyTorch's keep
    their input (max pooling, normalisation without an affine map); writing into it must leave
    their gradient right, as it does in PyTorch."""
    for tensor in (x, x._base):
        node = None if tensor is None else tensor._node
        if node is not None and node.out_data is tensor.array:
            node.out_data = tensor.array.copy()
            node.out_version, node.out_version_at = [0, None], 0


def in_place(name: str, x: Tensor, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Replace the values of ``x`` by ``compute(x)`` (same shape) and return ``x``: what
    ``name(x, inplace=True)`` does. Recorded like the out-of-place op, from a copy of the
    previous values, so that the gradient flows to what ``x`` was computed from."""
    if not isinstance(x, Tensor):
        raise TypeError(f"[{name}] inplace=True needs a Tensor input, got {type(x).__name__}")
    if is_grad_enabled() and x.requires_grad:
        _keep_saved_output(x)

    def write(array) -> None:  # nothing records or observes: compute and copy the values in
        array_namespace(array).copyto(array, compute(x).array, casting="same_kind")

    return _in_place(x, f"{name}(inplace=True)", (), compute, write, reads_previous=True)


def _activation(name: str, x: Tensor, compute: Callable[[Tensor], Tensor], inplace: bool):
    return in_place(name, x, compute) if inplace else compute(x)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - PyTorch's name
    """max(x, 0). input: any shape (*) -> the same shape."""
    if inplace:
        return in_place("relu", input, elementwise.relu)
    return _relu(input)


def leaky_relu(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    negative_slope: float = 0.01,
    inplace: bool = False,
) -> Tensor:
    """x for x >= 0, negative_slope * x otherwise. input: any shape (*) -> the same shape."""
    return _activation(
        "leaky_relu", input, lambda x: elementwise.leaky_relu(x, negative_slope), inplace
    )


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * sigmoid(x). input: any shape (*) -> the same shape."""
    return _activation("silu", input, elementwise.silu, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > 0, else alpha * (exp(x) - 1). input: any shape (*) -> the same shape."""
    return _activation("elu", input, lambda x: extra.elu(x, alpha), inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """1.0507 * elu(x, 1.6733). input: any shape (*) -> the same shape."""
    return _activation("selu", input, extra.selu, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > 0, else alpha * (exp(x / alpha) - 1). input: any shape (*) -> the same."""
    return _activation("celu", input, lambda x: extra.celu(x, alpha), inplace)


def hardtanh(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    min_val: float = -1.0,
    max_val: float = 1.0,
    inplace: bool = False,
) -> Tensor:
    """x limited to [min_val, max_val]. input: any shape (*) -> the same shape."""
    return _activation("hardtanh", input, lambda x: extra.hardtanh(x, min_val, max_val), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(x, 0), 6). input: any shape (*) -> the same shape."""
    return _activation("relu6", input, extra.relu6, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(x + 3, 0), 6) / 6. input: any shape (*) -> the same shape."""
    return _activation("hardsigmoid", input, extra.hardsigmoid, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * min(max(x + 3, 0), 6) / 6. input: any shape (*) -> the same shape."""
    return _activation("hardswish", input, extra.hardswish, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * tanh(softplus(x)). input: any shape (*) -> the same shape."""
    return _activation("mish", input, extra.mish, inplace)


def threshold(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    threshold: float,
    value: float,
    inplace: bool = False,
) -> Tensor:
    """value where x <= threshold, else x. input: any shape (*) -> the same shape."""
    return _activation("threshold", input, lambda x: extra.threshold(x, threshold, value), inplace)


_threshold = threshold  # for threshold_, whose argument takes the name


def rrelu(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): x where x > 0, else a * x.

    In training each element draws its own slope ``a`` uniform in [lower, upper] (through the
    ``rand`` draw record, so a traced step draws again on each run); otherwise ``a`` is the
    mean slope ``(lower + upper) / 2``. The gradient is 1 where x > 0, else ``a``, as in
    PyTorch. input: any shape (*) -> the same shape.
    """
    if not 0 <= lower <= upper:
        raise ValueError(f"[rrelu] expects 0 <= lower <= upper, got lower={lower}, upper={upper}")

    def compute(x: Tensor) -> Tensor:
        if training:
            slope = rand_like(x) * (upper - lower) + lower
        else:
            slope = (lower + upper) / 2
        return elementwise.where(x > 0, x, x * slope)

    return _activation("rrelu", input, compute, inplace)


# PyTorch's in-place spellings: ``F.relu_(x)`` is ``F.relu(x, inplace=True)``


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(
    input: Tensor,  # noqa: A002
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


__all__ = [
    "celu",
    "celu_",
    "elu_",
    "hardtanh_",
    "leaky_relu_",
    "relu_",
    "rrelu_",
    "selu_",
    "threshold_",
    "elu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "mish",
    "relu",
    "relu6",
    "rrelu",
    "selu",
    "silu",
    "threshold",
]
