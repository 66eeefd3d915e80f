"""Weight normalisation (Salimans & Kingma, 2016, https://arxiv.org/abs/1602.07868) as the older
forward pre-hook (``torch.nn.utils.weight_norm``): ``weight = g * v / ||v||``, with ``weight_g``
and ``weight_v`` the module's parameters and ``weight`` recomputed before every call.

``parametrizations.weight_norm`` is the newer form of the same reparametrization; both use
``norm_except_dim`` and ``weight_norm_value`` from here.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ...autograd.tensor import Tensor
from ...errors import ArgumentError
from ...functions.matrix_norms import vector_norm
from ..module import Module
from ..parameter import Parameter
from .parametrize import ReparametrizationError

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept as size-1 dimensions:
    v (4, 3, 5, 5), dim 0 -> (4, 1, 1, 1); dim 1 -> (1, 3, 1, 1).

    As ``torch.norm_except_dim``, ``dim=-1`` means no dimension is kept: the norm of the whole
    tensor, a 0-d tensor (other negative dims count from the end)."""
    if dim == -1:
        return vector_norm(v, pow)
    if not -v.ndim <= dim < v.ndim:
        raise ArgumentError(
            f"[norm_except_dim] dim {dim} is out of range for a weight of shape {tuple(v.shape)}",
            help=f"use a dimension in [{-v.ndim}, {v.ndim - 1}], or -1 for the whole tensor",
        )
    kept = dim % v.ndim
    others = tuple(axis for axis in range(v.ndim) if axis != kept)
    if not others:  # a vector: each entry is its own slice
        return v.abs()
    return vector_norm(v, pow, dim=others, keepdim=True)


def weight_norm_value(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``g * v / ||v||`` with the norm taken as ``norm_except_dim(v, 2, dim)`` (``torch._weight_norm``):
    every slice of ``v`` along ``dim`` rescaled to the length in ``g``. Same shape as ``v``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        """``g * v / ||v||`` from the module's current ``<name>_g`` and ``<name>_v``."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return weight_norm_value(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Replace the parameter ``name`` by ``name_g`` (its norm) and ``name_v`` (itself), and
        register the hook that recomputes ``name`` before each call."""
        warnings.warn(
            "`nn.utils.weight_norm` is deprecated in favor of "
            "`nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook, _, _ in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise ReparametrizationError(
                    f"[weight_norm] cannot register two weight_norm hooks on the same parameter "
                    f"'{name}' of {type(module).__name__}",
                    help=f"call remove_weight_norm(module, '{name}') first",
                )
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))  # a plain attribute, not a parameter
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put ``name`` back as one parameter holding the current ``g * v / ||v||``."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Weight normalisation by a forward pre-hook: ``module.<name>`` becomes
    ``<name>_g * <name>_v / ||<name>_v||``, recomputed before every call, where ``<name>_g``
    (the magnitude) and ``<name>_v`` (the direction) are the trained parameters.

    With ``dim=0`` the norm is taken per output channel: a Linear weight (out, in) gets
    ``weight_g`` (out, 1) and ``weight_v`` (out, in); ``dim=None`` takes one norm over the
    whole tensor (``weight_g`` 0-d). Deprecated, as in PyTorch, in favour of
    ``nn.utils.parametrizations.weight_norm``. Returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo ``weight_norm``: ``module.<name>`` is again a single parameter, holding the
    normalised weight as it is now. Returns ``module``."""
    for key, (hook, _, _) in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ArgumentError(
        f"[remove_weight_norm] weight_norm of '{name}' not found in {type(module).__name__}",
        help="call nn.utils.weight_norm(module, name) first, with the same name",
    )
