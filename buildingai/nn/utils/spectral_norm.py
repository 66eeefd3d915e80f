"""Spectral normalisation (Miyato et al., 2018, https://arxiv.org/abs/1802.05957) as the older
forward pre-hook (``torch.nn.utils.spectral_norm``): before every call ``weight`` is recomputed
as ``weight_orig / sigma``, sigma the largest singular value of ``weight_orig`` estimated by
power iteration on the buffers ``weight_u`` and ``weight_v``.

``parametrizations.spectral_norm`` is the newer form of the same reparametrization.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...errors import ArgumentError
from ...functions.arrangement import mv
from ...functions.linalg import dot
from .. import init
from ..conv import ConvTranspose2d
from ..functional import normalize
from ..module import Module
from ..parameter import Parameter
from .parametrize import ReparametrizationError

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` as ``<name>_orig / sigma``."""

    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        if n_power_iterations <= 0:
            raise ArgumentError(
                f"[spectral_norm] expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """(d0, ..., d_dim, ...) -> (d_dim, the product of the others)."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``<name>_orig / sigma``, sigma = u^T W v; with ``do_power_iteration`` u and v first
        advance ``n_power_iterations`` steps (in place, so the module keeps the estimate)."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mv(weight_mat.mT, u), dim=0, eps=self.eps))
                    u.copy_(normalize(mv(weight_mat, v), dim=0, eps=self.eps))
                # copies: a later in-place update must not change what this graph saved
                u = u.clone()
                v = v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put ``name`` back as one parameter holding ``<name>_orig / sigma`` as it is now."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        """Move the parameter ``name`` to ``name_orig``, add the buffers ``name_u`` and
        ``name_v`` (random unit vectors) and the hook that recomputes ``name``."""
        for hook, _, _ in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise ReparametrizationError(
                    f"[spectral_norm] cannot register two spectral_norm hooks on the same "
                    f"parameter '{name}' of {type(module).__name__}",
                    help=f"call remove_spectral_norm(module, '{name}') first",
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ArgumentError(
                f"[spectral_norm] cannot be applied: parameter '{name}' of "
                f"{type(module).__name__} is None or missing"
            )
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = normalize(init.normal_(weight.new_empty((h,))), dim=0, eps=fn.eps)
            v = normalize(init.normal_(weight.new_empty((w,))), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)  # a plain attribute until the first call
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: T_module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> T_module:
    """Spectral normalisation by a forward pre-hook: ``module.<name>`` becomes
    ``<name>_orig / sigma``, recomputed before every call, sigma the spectral norm of
    ``<name>_orig`` as a matrix (``dim`` first, the rest flattened). In training mode each call
    first advances ``n_power_iterations`` steps of power iteration on the buffers
    ``<name>_u`` (d_dim,) and ``<name>_v`` (the rest). ``dim`` defaults to 1 for transposed
    convolutions and 0 otherwise. Returns ``module``."""
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose2d) else 0  # ConvTranspose1d is one too
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo ``spectral_norm``: ``module.<name>`` is again a single parameter, holding the
    normalised weight with the current estimate of sigma. Returns ``module``."""
    for key, (hook, _, _) in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ArgumentError(
        f"[remove_spectral_norm] spectral_norm of '{name}' not found in {type(module).__name__}",
        help="call nn.utils.spectral_norm(module, name) first, with the same name",
    )
