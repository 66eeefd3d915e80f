"""``masked_fill_``: ``masked_fill`` written into the tensor, through the in-place path of
``inplace.py`` (version counter, leaf refusal, recorded graph)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .index import masked_fill
from .inplace import _check_keeps_shape, _in_place


def masked_fill_(x: Tensor, mask, value) -> Tensor:
    """Set ``x`` to ``value`` wherever ``mask`` (boolean, broadcasting to ``x``'s shape) is
    True, in place; ``value`` is a number or a one-element tensor. x: (...) -> x."""
    _check_keeps_shape(x, "masked_fill_", ("x.masked_fill_(mask, v)", "x.masked_fill(mask, v)"),
                       mask)  # fmt: skip

    def fill(previous: Tensor) -> Tensor:
        return masked_fill(previous, mask, value)

    def write(array) -> None:
        array[...] = masked_fill(Tensor(array), mask, value).array

    return _in_place(x, "masked_fill_", (value,), fill, write)


__all__: list[str] = []  # a Tensor method only, as in PyTorch

TENSOR_METHODS = {"masked_fill_": masked_fill_}
