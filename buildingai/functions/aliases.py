"""PyTorch's other names for functions BuildingAI has under one name (``greater`` for ``gt``,
``multiply`` for ``mul``...), as functions and Tensor methods where PyTorch has them."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..errors import DTypeError
from . import elementwise, inplace_math


def positive(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``+input``: the tensor itself, as in PyTorch; a boolean tensor is refused.
    input: any shape (*) -> the same tensor."""
    if input.dtype == bool:
        raise DTypeError(
            "[positive] the unary + is not defined on a boolean tensor",
            help="use the tensor as it is, or convert it first (x.int())",
        )
    return input


greater, greater_equal = elementwise.gt, elementwise.ge
less, less_equal, not_equal = elementwise.lt, elementwise.le, elementwise.ne

# PyTorch also spells these in-place forms as functions: torch.negative_(x)
negative_ = inplace_math.TENSOR_METHODS["negative_"]
nan_to_num_ = inplace_math.TENSOR_METHODS["nan_to_num_"]

__all__ = ["positive", "greater", "greater_equal", "less", "less_equal", "not_equal",
           "negative_", "nan_to_num_"]  # fmt: skip

TENSOR_METHODS = {
    "absolute": elementwise.abs, "negative": elementwise.neg, "positive": positive,
    "multiply": elementwise.mul, "divide": elementwise.div, "true_divide": elementwise.div,
    "subtract": elementwise.sub,
    "greater": greater, "greater_equal": greater_equal, "less": less, "less_equal": less_equal,
    "not_equal": not_equal,
}  # fmt: skip
