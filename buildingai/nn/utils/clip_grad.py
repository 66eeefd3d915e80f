"""Gradient clipping where PyTorch users look for it (``torch.nn.utils.clip_grad_norm_``):
``clip_grad_norm_`` and ``clip_grad_value_`` live in ``buildingai.optim.clip``; the two halves of
``clip_grad_norm_``, ``get_total_norm`` and ``clip_grads_with_norm_``, are here, for code that
measures the norm (e.g. across several groups or processes) before scaling by it.

    total_norm = get_total_norm([p.grad for p in params if p.grad is not None])
    clip_grads_with_norm_(params, max_norm=1.0, total_norm=total_norm)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...functions.creation import tensor as as_tensor
from ...functions.matrix_norms import vector_norm
from ...functions.shape import stack
from ...optim.clip import NonFiniteNormError, clip_grad_norm_, clip_grad_value_

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
]


def get_total_norm(
    tensors: Iterable[Tensor] | Tensor,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all entries of ``tensors`` seen as one vector (the norm of the
    per-tensor norms), as a 0-d tensor of the tensors' promoted dtype; ``float('inf')`` for the
    largest absolute entry. Typically the tensors are gradients. Computed outside the graph.

    An empty iterable gives 0.0 (float32). With ``error_if_nonfinite`` an inf or NaN norm
    raises ``NonFiniteNormError``. ``foreach`` is accepted for PyTorch's signature.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return as_tensor(0.0, dtype="float32")
    with no_grad():
        norms = [vector_norm(t, norm_type) for t in tensors]
        total_norm = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise NonFiniteNormError(
            f"[get_total_norm] the total norm of order {norm_type} of the gradients is "
            f"{total_norm.item()}, so they cannot be clipped",
            help="find where the gradient overflows (e.g. with anomaly detection), or pass "
            "error_if_nonfinite=False to scale by the non-finite norm anyway",
        )
    return total_norm


def clip_grads_with_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scale the gradients of ``parameters`` in place by min(max_norm / (total_norm + 1e-6), 1),
    given a total norm measured already (``get_total_norm``); each gradient keeps its shape.
    A NaN total norm makes the gradients NaN, as in PyTorch. ``foreach`` is accepted for
    PyTorch's signature."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    total_norm = total_norm if isinstance(total_norm, Tensor) else as_tensor(total_norm)
    with no_grad():
        coefficient = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(coefficient.to(grad.dtype))


def clip_grad_norm(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_`` (same arguments, same result), kept for older
    code; it warns with a FutureWarning, as in PyTorch."""
    warnings.warn(
        "`nn.utils.clip_grad_norm` is now deprecated in favor of `nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
