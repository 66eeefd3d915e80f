"""Pruning methods in PyTorch's shape (``torch.nn.utils.prune``): each computes a 0/1 mask for one
tensor of a module and, once applied, is the module's forward pre-hook that recomputes
``weight = weight_orig * weight_mask`` before every call.

Which entries go follows PyTorch: ``amount`` is a count (int) or a fraction (float, rounded with
Python's ``round``) of the entries (unstructured) or of the slices along ``dim`` (structured)
that are still unpruned; the smallest by magnitude (or norm) go first, ties broken by position
(a stable sort), where PyTorch leaves ties to ``topk``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor, bump_version
from ..backend import device as _device
from ..backend.random import resolve_generator
from ..errors import BuildingAIError


class PruningError(BuildingAIError):
    """A pruning call that cannot be done: a bad amount, a missing tensor, a method mismatch."""


def compute_nparams_toprune(amount, tensor_size: int) -> int:
    """How many of ``tensor_size`` entries (or slices) ``amount`` prunes: an int as is, a
    fraction rounded as PyTorch rounds it (``round(amount * size)``, half to even)."""
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def validate_pruning_amount(amount, tensor_size: int | None = None, what: str = "prune") -> None:
    """Raise when ``amount`` is not a non-negative int or a float in [0, 1], or exceeds the
    number of entries (slices) it applies to."""
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise PruningError(f"[{what}] amount must be an int or a float, got {amount!r}")
    if isinstance(amount, numbers.Integral) and amount < 0:
        raise PruningError(f"[{what}] amount={amount} must be a non-negative int")
    if not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0:
        raise PruningError(
            f"[{what}] amount={amount} must be a fraction in [0, 1]",
            help="pass a float between 0 and 1 for a fraction, or an int for a count",
        )
    if tensor_size is not None and isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise PruningError(
            f"[{what}] amount={amount} is larger than the {tensor_size} entries it applies to",
            help=f"pass at most {tensor_size}, or a fraction",
        )


def _smallest(scores: np.ndarray, count: int) -> np.ndarray:
    """Flat indices of the ``count`` smallest scores; equal scores go in index order."""
    return np.argsort(scores.reshape(-1), kind="stable")[:count]


def _other_axes(ndim: int, dim: int) -> tuple[int, ...]:
    return tuple(axis for axis in range(ndim) if axis != dim)


class BasePruningMethod:
    """A pruning method: ``compute_mask(t, default_mask)`` says what to keep; the instance,
    registered as a forward pre-hook, recomputes the pruned tensor before each forward.

    ``PRUNING_TYPE`` is ``'unstructured'`` (single entries), ``'structured'`` (whole slices along
    ``dim``) or ``'global'``; it decides how a second pruning combines with the first."""

    PRUNING_TYPE = "unstructured"
    _tensor_name: str

    def __call__(self, module, inputs) -> None:
        # weight = weight_orig * weight_mask, recorded so gradients reach weight_orig
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        """The new 0/1 mask (same shape and dtype as ``default_mask``) for scores ``t``."""
        raise NotImplementedError(f"{type(self).__name__} does not define compute_mask")

    def apply_mask(self, module) -> Tensor:
        """``module.<name>_orig * module.<name>_mask``: the tensor the module computes with."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``: on first use the
        parameter moves to ``<name>_orig``, a ``<name>_mask`` buffer is added and the method
        becomes a forward pre-hook; a second pruning combines its mask with the first one's
        (``PruningContainer``). Returns the method now registered."""
        method = cls(*args, **kwargs)
        return _apply(module, name, method, importance_scores)

    def prune(self, t: Tensor, default_mask=None, importance_scores=None) -> Tensor:
        """``t`` with this method's mask applied (a new tensor; nothing is registered)."""
        data = _array(t)
        scores = data if importance_scores is None else _array(importance_scores)
        mask = np.ones_like(data) if default_mask is None else _array(default_mask)
        return t * Tensor(self.compute_mask(scores, mask).astype(data.dtype, copy=False))

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a Parameter holding ``orig * mask``
        (the same Parameter object as ``<name>_orig``, so optimizers keep it), and
        ``<name>_orig``, ``<name>_mask`` and this hook go."""
        name = self._tensor_name
        with no_grad():
            weight = self.apply_mask(module)
        if name in module.__dict__:
            del module.__dict__[name]
        orig = module._parameters.pop(name + "_orig")
        del module._buffers[name + "_mask"]
        orig.array = weight.array
        bump_version(orig, "prune.remove")
        module.register_parameter(name, orig)


class PruningContainer(BasePruningMethod):
    """Several pruning methods applied to one tensor in turn: each new method prunes only among
    the entries (or slices) the earlier ones kept. ``t`` and every mask have the tensor's
    shape (any); a structured method sees only the slices along its ``dim`` still alive."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple = ()
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method).__name__} is not a BasePruningMethod")
        if self._pruning_methods and method._tensor_name != self._tensor_name:
            raise PruningError(
                f"cannot combine a method pruning '{method._tensor_name}' with methods pruning "
                f"'{self._tensor_name}'"
            )
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index: int) -> BasePruningMethod:
        return self._pruning_methods[index]

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        """Combine ``default_mask`` with the mask the newest method computes on what is left."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.copy()
        if method.PRUNING_TYPE == "unstructured":
            kept = default_mask == 1
            new_mask[kept] = method.compute_mask(t[kept], default_mask[kept])
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim if method.dim >= 0 else method.dim + t.ndim
            alive = np.flatnonzero(default_mask.sum(axis=_other_axes(t.ndim, dim)) != 0)
            index = [slice(None)] * t.ndim
            index[dim] = alive
            index = tuple(index)
            new_mask[index] = method.compute_mask(t[index], default_mask[index])
        elif method.PRUNING_TYPE == "global":
            new_mask = method.compute_mask(t, default_mask)
        else:
            raise PruningError(f"unknown PRUNING_TYPE {method.PRUNING_TYPE!r}")
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (to add the orig/mask layout to a tensor). ``t``:
    any shape -> a mask of the same shape."""

    def compute_mask(self, t, default_mask):
        return default_mask.copy()


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries chosen uniformly at random (from the default generator).
    ``t``: any shape -> a 0/1 mask of the same shape; ``amount`` counts of ``t.size`` entries."""

    def __init__(self, amount, generator=None) -> None:
        validate_pruning_amount(amount, what="random_unstructured")
        self.amount = amount
        self.generator = generator

    def compute_mask(self, t, default_mask):
        count = compute_nparams_toprune(self.amount, t.size)
        validate_pruning_amount(self.amount, t.size, "random_unstructured")
        mask = default_mask.copy()
        if count:
            rng = resolve_generator(self.generator).backend_generator()
            chosen = rng.permutation(t.size)[:count]
            mask.reshape(-1)[chosen] = 0
        return mask


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value. ``t``: any shape -> a 0/1 mask
    of the same shape; ``amount`` counts of ``t.size`` entries."""

    def __init__(self, amount) -> None:
        validate_pruning_amount(amount, what="l1_unstructured")
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = compute_nparams_toprune(self.amount, t.size)
        validate_pruning_amount(self.amount, t.size, "l1_unstructured")
        mask = default_mask.copy()
        if count:
            mask.reshape(-1)[_smallest(np.abs(t), count)] = 0
        return mask


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` slices along ``dim`` (output channels for ``dim=0``) of smallest
    L``n`` norm, the norm taken over all other dimensions. ``t``: any shape with ``dim`` in
    range -> a mask of the same shape, constant over each slice; ``amount`` counts of
    ``t.shape[dim]`` (a Conv2d weight (out, in, kh, kw) with ``dim=0``: of ``out``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        validate_pruning_amount(amount, what="ln_structured")
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        dim = self.dim if self.dim >= 0 else self.dim + t.ndim
        if not 0 <= dim < t.ndim:
            raise PruningError(
                f"[ln_structured] dim={self.dim} is out of range for a tensor of shape {t.shape}"
            )
        size = t.shape[dim]
        count = compute_nparams_toprune(self.amount, size)
        validate_pruning_amount(self.amount, size, "ln_structured")
        if count == 0:
            return default_mask.copy()
        norms = slice_norms(t, self.n, dim)
        keep = np.zeros(size, dtype=bool)
        keep[np.argsort(norms, kind="stable")[count:]] = True
        shape = [1] * t.ndim
        shape[dim] = size
        return default_mask * keep.reshape(shape).astype(default_mask.dtype)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` slices along ``dim`` chosen at random. ``t``: any shape -> a mask of the
    same shape, constant over each slice; ``amount`` counts of ``t.shape[dim]``."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1, generator=None) -> None:
        validate_pruning_amount(amount, what="random_structured")
        self.amount = amount
        self.dim = dim
        self.generator = generator

    def compute_mask(self, t, default_mask):
        dim = self.dim if self.dim >= 0 else self.dim + t.ndim
        size = t.shape[dim]
        count = compute_nparams_toprune(self.amount, size)
        validate_pruning_amount(self.amount, size, "random_structured")
        keep = np.ones(size, dtype=bool)
        keep[resolve_generator(self.generator).backend_generator().permutation(size)[:count]] = (
            False
        )
        shape = [1] * t.ndim
        shape[dim] = size
        return default_mask * keep.reshape(shape).astype(default_mask.dtype)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given 0/1 mask is 0. ``mask`` must have the pruned tensor's shape (any);
    the new mask is ``default_mask * mask``, the same shape."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = _array(mask)

    def compute_mask(self, t, default_mask):
        if tuple(self.mask.shape) != tuple(default_mask.shape):
            raise PruningError(
                f"[custom_from_mask] mask shape {tuple(self.mask.shape)} differs from the "
                f"tensor's {tuple(default_mask.shape)}"
            )
        return default_mask * self.mask.astype(default_mask.dtype)


def slice_norms(t: np.ndarray, n, dim: int) -> np.ndarray:
    """The L``n`` norm of each slice of ``t`` along ``dim`` (``n`` may be ``inf``, ``'fro'``)."""
    flat = np.moveaxis(np.asarray(t, dtype=np.float64), dim, 0).reshape(t.shape[dim], -1)
    order = 2 if n == "fro" else n
    return np.linalg.norm(flat, ord=order, axis=1)


def _array(value) -> np.ndarray:
    """A host NumPy array of a Tensor or array-like."""
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(value)


def _apply(module, name: str, method: BasePruningMethod, importance_scores=None):
    """Register ``method`` on ``module.<name>`` (see ``BasePruningMethod.apply``)."""
    method._tensor_name = name
    hooks = _hooks_on(module, name)
    if len(hooks) > 1:
        raise PruningError(f"more than one pruning hook on '{name}' of {type(module).__name__}")
    if hooks:
        handle_id, old = hooks[0]
        container = old if isinstance(old, PruningContainer) else PruningContainer(old)
        container.add_pruning_method(method)
        del module._forward_pre_hooks[handle_id]
        registered = container
        default_mask = _array(module._buffers[name + "_mask"]).copy()
        current = getattr(module, name)
    else:
        param = module._parameters.get(name)
        if param is None:
            raise PruningError(
                f"{type(module).__name__} has no parameter '{name}' to prune",
                help="parameters: "
                + ", ".join(n for n, p in module._parameters.items() if p is not None),
            )
        registered = method
        current = param
        default_mask = np.ones(param.shape, dtype=param.dtype)
    scores = _array(current if importance_scores is None else importance_scores)
    if tuple(scores.shape) != tuple(default_mask.shape):
        raise PruningError(
            f"importance_scores of shape {tuple(scores.shape)} must match '{name}' of shape "
            f"{tuple(default_mask.shape)}"
        )
    mask = registered.compute_mask(scores, default_mask)
    if not hooks:
        del module._parameters[name]
        module.register_parameter(name + "_orig", current)
    orig = module._parameters[name + "_orig"]
    module.register_buffer(name + "_mask", Tensor(_device.to_device(mask, orig.device)))
    setattr(module, name, registered.apply_mask(module))
    module.register_forward_pre_hook(registered)
    return registered


def _hooks_on(module, name: str) -> list:
    """``(handle id, method)`` of the pruning hooks on ``module.<name>``."""
    return [
        (handle_id, hook)
        for handle_id, (hook, _, _) in module._forward_pre_hooks.items()
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name
    ]
