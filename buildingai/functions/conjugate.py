"""The complex conjugate as PyTorch code asks for it (``grad.conj()`` in PyTorch's own optimizer
steps, which users copy): for the real tensors BuildingAI trains, the tensor itself, as in
PyTorch, where ``x.conj() is x`` for a real ``x``."""

from __future__ import annotations

from ..autograd.tensor import Tensor


def conj(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The complex conjugate: ``input`` itself for a real tensor; for a complex one (which
    never requires grad here), a new tensor of the conjugated values."""
    if input.dtype.kind != "c":
        return input
    return Tensor(input.array.conj())


def conj_physical(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``conj`` (PyTorch's eager conjugate): ``input`` itself for a real tensor."""
    return conj(input)


def resolve_conj(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``input`` itself: conjugation here is never a lazy flag waiting to be applied."""
    return input


def is_conj(input: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """False: no tensor here carries PyTorch's lazy conjugate flag."""
    return False


__all__ = ["conj", "conj_physical", "is_conj", "resolve_conj"]

TENSOR_METHODS = {
    "conj": conj, "conj_physical": conj_physical, "resolve_conj": resolve_conj,
    "is_conj": is_conj,
}  # fmt: skip
