"""The optimizer base class: parameter groups, per-parameter state, step hooks, checkpoints.

An optimizer is a thin stateful class over a pure per-parameter update function. The class owns
the bookkeeping (which parameters, which hyper-parameters, what state); the update function owns
the math, on backend arrays, in place. A new optimizer writes only its update rule::

    class SignSGD(OptimizerBase):
        def __init__(self, params, lr=0.01):
            super().__init__(params, {"lr": lr})

        def update(self, param, grad, state, group):   # arrays, in place
            param -= group["lr"] * np.sign(grad)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..accel.optimizers import update_group as accelerated_update_group
from ..autograd import Tensor, enable_grad, no_grad
from ..autograd.tensor import bump_version
from ..backend import CPU, array_namespace, to_device
from ..backend.dtypes import is_floating
from ..errors import BuildingAIError
from ..utils.hooks import RemovableHandle

# What register_step_pre_hook / register_step_post_hook return: ``handle.remove()``.
StepHookHandle = RemovableHandle


class OptimizerError(BuildingAIError, ValueError):
    """A bad optimizer or scheduler argument, or a state dict that does not fit."""


class OptimizerBase:
    """Base class of every optimizer.

    Args:
        params: an iterable of Tensors, or of dicts (parameter groups) each holding ``"params"``
            and any hyper-parameters that differ from ``defaults`` for that group.
        defaults: the hyper-parameters of a group that does not set them.

    Attributes:
        param_groups: a list of dicts, each with ``"params"`` (a list of Tensors) and every
            hyper-parameter. Schedulers change ``group["lr"]`` here.
        state: per-parameter state, ``{param: {"step": 3, "exp_avg": array, ...}}``.

    A subclass writes its update rule in one of two ways:

    - ``update(self, param, grad, state, group)``: one parameter, backend arrays, in place;
      ``init_state(self, param, group)`` returns the fresh state of a parameter. ``step()``,
      hooks, ``apply_gradients`` and checkpoints then come for free.
    - or its own ``step(self, closure=None)`` looping over ``self.param_groups`` (PyTorch style).
      Such a ``step`` is wrapped so that the step hooks run around it and it runs under
      ``no_grad()``.

    A subclass may skip ``super().__init__`` and keep its parameters in ``self.params``: the base
    is then set up after its ``__init__`` (its ``register_hooks()`` included), so hooks, zero_grad
    and checkpoints work the same.

    ``step()`` runs ``update`` on each parameter in turn. With acceleration on
    (``buildingai.accel.enable()``), the built-in rules run in their fused forms instead
    (``buildingai/accel/optimizers.py``), with the same results to rounding. A subclass whose
    ``update`` treats every element on its own, and whose state holds only arrays shaped like
    the parameter and values shared by the group (step counts), sets
    ``updates_elementwise = True``: with acceleration on, its small parameters are then updated
    together, as one flat array per group, with the same arithmetic.
    """

    updates_elementwise = False

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        # a missing parameter reads as an empty state, as PyTorch's: a step written for PyTorch
        # starts with `state = self.state[p]; if len(state) == 0: ...`
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self._init_bookkeeping()
        for group in self._as_groups(params):
            self.add_param_group(group)
        self.default_hook_handles = [self.register_step_pre_hook(h) for h in self.register_hooks()]

    def _init_bookkeeping(self) -> None:
        self._step_pre_hooks: dict[int, Callable] = {}
        self._step_post_hooks: dict[int, Callable] = {}
        self._accelerated: dict = {}  # what the accelerated step keeps between steps
        self._stepping = False

    def _as_groups(self, params) -> list:
        """``params`` as a list of parameter groups (dicts), refusing what cannot be one."""
        if isinstance(params, Tensor):
            raise OptimizerError(
                f"{type(self).__name__} got a single Tensor as params",
                help="pass an iterable of tensors, e.g. [w, b] or model.parameters()",
            )
        groups = list(params)
        if not groups:
            raise OptimizerError(
                f"{type(self).__name__} got an empty parameter list",
                help="pass the tensors to optimize, e.g. model.parameters(); a generator that "
                "was already consumed is empty too",
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        return groups

    def _init_without_base(self) -> None:
        """Set up the base class for a subclass whose ``__init__`` did not call
        ``super().__init__``: its parameters are taken from ``self.params`` (or its own
        ``self.param_groups``), and the hooks of ``register_hooks()`` are installed, so that
        ``step()``, ``zero_grad()`` and checkpoints work as for any optimizer. Attributes the
        subclass set itself (``state``, ``defaults``) are kept."""
        own = self.__dict__
        own.setdefault("defaults", {})
        own.setdefault("state", {})
        self._init_bookkeeping()
        if "param_groups" in own:
            groups, self.param_groups = own["param_groups"], []
        elif "params" in own:
            groups, self.param_groups = own["params"], []
        else:
            name = type(self).__name__
            raise OptimizerError(
                f"{name}.__init__ did not call super().__init__(params, defaults) and keeps no "
                "self.params, so the optimizer does not know its parameters",
                help="store them as self.params = list(params) in __init__, or call "
                "super().__init__(params, {'lr': lr})",
            )
        for group in self._as_groups(groups):
            self.add_param_group(group)
        self.default_hook_handles = [self.register_step_pre_hook(h) for h in self.register_hooks()]

    # ----- what subclasses provide ------------------------------------------------------------
    def register_hooks(self) -> list[Callable]:
        """Step pre-hooks installed at construction, e.g. ``[clip_grad_hook(max_norm=1.0)]``.
        Their handles are in ``self.default_hook_handles``."""
        return []

    def init_state(self, param: Tensor, group: dict) -> dict[str, Any]:
        """The state of a parameter before its first update (arrays shaped like the parameter)."""
        return {}

    def update(self, param, grad, state: dict, group: dict) -> None:
        """Update one parameter in place. ``param`` and ``grad`` are backend arrays of the same
        shape and dtype; ``state`` is this parameter's state; ``group`` its hyper-parameters."""
        raise NotImplementedError(
            f"{type(self).__name__} must define update(param, grad, state, group) or step()"
        )

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])
        if "__init__" in cls.__dict__:
            cls.__init__ = _completing_base_init(cls.__dict__["__init__"])

    # ----- parameter groups -------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (others from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise OptimizerError(
                f"a parameter group must be a dict, got {type(param_group).__name__}"
            )
        if "params" not in param_group:
            raise OptimizerError("a parameter group needs a 'params' entry")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise OptimizerError(
                "parameters given as a set have no stable order, so state dicts could not be "
                "matched to them",
                help="pass a list instead",
            )
        params = list(params)
        for position, param in enumerate(params):
            if not isinstance(param, Tensor):
                raise OptimizerError(
                    f"an optimizer can only optimize Tensors, but parameter {position} is a "
                    f"{type(param).__name__}"
                )
            if not is_floating(param.dtype):
                raise OptimizerError(
                    f"parameter {position} has dtype {param.dtype}; only floating-point "
                    "tensors can be optimized"
                )
            if not param.is_leaf:
                raise OptimizerError(
                    f"parameter {position} (shape {tuple(param.shape)}) is not a leaf tensor",
                    help="optimize the leaf itself, or x.detach().requires_grad_()",
                )
        if len({id(p) for p in params}) != len(params):
            raise OptimizerError("a parameter group contains the same parameter more than once")
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise OptimizerError(
                "some parameters appear in more than one parameter group",
                help="give each parameter to exactly one group",
            )
        group = dict(self.defaults)
        group.update(param_group)
        group["params"] = params
        self.param_groups.append(group)

    # ----- gradients --------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients: ``.grad = None`` (default, frees memory) or fill them with 0."""
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    if param.grad.grad_fn is not None:
                        param.grad = param.grad.detach()
                    param.grad.array.fill(0)

    # ----- hooks ------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer)`` before each step, in registration order; it may modify the
        gradients in place (clipping). Returns a handle whose ``remove()`` unregisters it."""
        handle = RemovableHandle(self._step_pre_hooks)
        self._step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer)`` after each step, in registration order."""
        handle = RemovableHandle(self._step_post_hooks)
        self._step_post_hooks[handle.id] = hook
        return handle

    # ----- stepping ---------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient.

        ``closure`` (optional) re-evaluates the model and returns the loss; it runs first, with
        gradient recording on, then the pre-hooks see the gradients it produced. Returns the
        closure's loss (or None).
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._apply()
        return loss

    def apply_gradients(self, grads: Iterable) -> None:
        """Apply an explicit list of gradients (one per parameter, in ``param_groups`` order;
        None skips a parameter) instead of ``.grad``. Step hooks see them as ``.grad`` while
        they run, and every ``.grad`` is restored afterwards."""
        params = [p for group in self.param_groups for p in group["params"]]
        grads = list(grads)
        if len(grads) != len(params):
            raise OptimizerError(
                f"apply_gradients got {len(grads)} gradients for {len(params)} parameters",
                help="pass one gradient (or None) per parameter, in param_groups order",
            )
        saved = [p.grad for p in params]
        has_hooks = bool(self._step_pre_hooks or self._step_post_hooks)
        try:
            for position, (param, grad) in enumerate(zip(params, grads)):
                if grad is None:
                    param.grad = None
                    continue
                data = grad.array if isinstance(grad, Tensor) else grad
                data = _fit_gradient(data, param, position, copy=has_hooks)
                param.grad = Tensor(data)
            self.step()
        finally:
            for param, grad in zip(params, saved):
                param.grad = grad

    def _apply(self) -> None:
        """Run the pre-hooks, the updates from ``.grad`` (under no_grad) and the post-hooks."""
        outer = not self._stepping  # a subclass's step() calling super().step(): hooks ran
        if outer:
            self._stepping = True
        try:
            if outer:
                for hook in list(self._step_pre_hooks.values()):
                    hook(self)
            with no_grad():
                for index, group in enumerate(self.param_groups):
                    self._update_group(index, group)
            if outer:
                for hook in list(self._step_post_hooks.values()):
                    hook(self)
        finally:
            if outer:
                self._stepping = False

    def _update_group(self, index: int, group: dict) -> None:
        """Update every parameter of ``group`` that has a gradient: ``self.update`` on each, or
        the accelerated step when acceleration is on (``buildingai/accel/optimizers.py``)."""
        entries = []
        for position, param in enumerate(group["params"]):
            if param.grad is None:
                continue
            grad = _fit_gradient(param.grad.array, param, position, copy=False)
            state = self.state.get(param)
            if state is None:
                state = self.state[param] = self.init_state(param, group)
            entries.append((param, grad, state))
        if not accelerated_update_group(self, index, group, entries):
            for param, grad, state in entries:
                self.update(param.array, grad, state, group)
        name = type(self).__name__
        for param, _, _ in entries:
            _bump_version(param, name)

    # ----- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer as plain data: ``{"state": {index: {name: array or number}},
        "param_groups": [{hyper-parameters..., "params": [indices]}]}``.

        Parameters are numbered across groups in order, as in PyTorch. Arrays are host NumPy
        copies and everything else is a number, bool, string, tuple or list, so a checkpoint can
        store the arrays in safetensors and the rest in JSON.
        """
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            indices = []
            for param in group["params"]:
                index_of.setdefault(id(param), len(index_of))
                indices.append(index_of[id(param)])
            saved = {k: v for k, v in group.items() if k != "params"}
            saved["params"] = indices
            groups.append(saved)
        state = {}
        for param, param_state in self.state.items():
            if id(param) in index_of:
                state[index_of[id(param)]] = {
                    name: to_device(value, CPU).copy() if _is_array(value) else value
                    for name, value in param_state.items()
                }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (also after a JSON round trip: string indices
        and lists for tuples are accepted). Floating state arrays take each parameter's dtype
        and device."""
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise OptimizerError("an optimizer state dict needs 'state' and 'param_groups' entries")
        if len(groups) != len(self.param_groups):
            raise OptimizerError(
                f"the state dict has {len(groups)} parameter groups, this optimizer has "
                f"{len(self.param_groups)}"
            )
        for position, (saved, group) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise OptimizerError(
                    f"parameter group {position} has {len(saved['params'])} parameters in the "
                    f"state dict but {len(group['params'])} in this optimizer"
                )
        param_of = {}
        for saved, group in zip(groups, self.param_groups):
            for index, param in zip(saved["params"], group["params"]):
                param_of[int(index)] = param
        self.state = defaultdict(dict)
        for index, saved_state in state_dict["state"].items():
            param = param_of.get(int(index))
            if param is None:
                raise OptimizerError(f"the state dict has state for unknown parameter {index}")
            for name, value in saved_state.items():
                # per-element state (moments, buffers) must fit its parameter; 0-d values are
                # counters. A mismatch means the checkpoint belongs to another model layout.
                shape = tuple(getattr(value, "shape", ()))
                if _is_array(value) and shape and shape != tuple(param.shape):
                    raise OptimizerError(
                        f"state '{name}' of parameter {index} has shape {shape}, but the "
                        f"parameter has shape {tuple(param.shape)}",
                        help="load optimizer state saved from the same model, with its "
                        "parameters in the same order",
                    )
            self.state[param] = {
                name: _array_like_param(value, param) if _is_array(value) else value
                for name, value in saved_state.items()
            }
        for saved, group in zip(groups, self.param_groups):
            for name, value in saved.items():
                if name == "params":
                    continue
                if isinstance(group.get(name), tuple) and isinstance(value, list):
                    value = tuple(value)
                group[name] = value

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for position, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {position}")
            for name in sorted(group):
                if name != "params":
                    lines.append(f"    {name}: {group[name]}")
        lines.append(")")
        return "\n".join(lines)


def _with_step_hooks(step: Callable) -> Callable:
    """Wrap a subclass's own ``step`` so hooks run around it, under ``no_grad()``."""

    def wrapped(self, *args, **kwargs):
        if self._stepping:  # called through super().step() or nested: hooks already ran
            return step(self, *args, **kwargs)
        self._stepping = True
        try:
            for hook in list(self._step_pre_hooks.values()):
                hook(self)
            with no_grad():
                result = step(self, *args, **kwargs)
            for hook in list(self._step_post_hooks.values()):
                hook(self)
            return result
        finally:
            self._stepping = False

    wrapped.__name__ = step.__name__
    wrapped.__qualname__ = step.__qualname__
    wrapped.__doc__ = step.__doc__
    wrapped.__wrapped__ = step
    return wrapped


def _completing_base_init(init: Callable) -> Callable:
    """Wrap a subclass's ``__init__`` so that, if the base class's ``__init__`` never ran, the
    base is set up after it (``_init_without_base``): users write optimizers without
    ``super().__init__`` and still expect their hooks to run on every step."""

    def wrapped(self, *args, **kwargs):
        init(self, *args, **kwargs)
        outermost = type(self).__init__ is wrapped
        if outermost and "_step_pre_hooks" not in self.__dict__:
            self._init_without_base()

    wrapped.__name__ = init.__name__
    wrapped.__qualname__ = init.__qualname__
    wrapped.__doc__ = init.__doc__
    wrapped.__wrapped__ = init
    return wrapped


def _bump_version(param: Tensor, name: str) -> None:
    """Count the in-place update, so a graph that saved the old values refuses to backward."""
    bump_version(param, f"{name}.step")


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, Tensor)


def _array_like_param(value, param: Tensor):
    xp = array_namespace(param.array)
    value = np.asarray(to_device(value, CPU))
    if value.dtype.kind == "f":
        value = value.astype(param.dtype, copy=False)
    return xp.array(value, copy=True)


def _fit_gradient(grad, param: Tensor, position: int, copy: bool):
    """Check a gradient's shape against its parameter; cast it to the parameter's dtype."""
    data = param.array
    fits = type(grad) is type(data) and grad.shape == data.shape and grad.dtype == data.dtype
    if fits and not copy:
        return grad
    xp = array_namespace(data)
    if not hasattr(grad, "shape"):
        grad = np.asarray(grad)
    if tuple(grad.shape) != tuple(param.shape):
        raise OptimizerError(
            f"the gradient of parameter {position} has shape {tuple(grad.shape)}, the parameter "
            f"has shape {tuple(param.shape)}"
        )
    if type(grad) is not type(param.array):
        grad = to_device(grad, param.device)
    if grad.dtype != param.dtype or copy:
        grad = xp.array(grad, dtype=param.dtype, copy=True)
    return grad


# ----- argument checks shared by the optimizers ----------------------------------------------
def check_hyperparameter(optimizer: str, name: str, value, minimum: float = 0.0, below=None):
    """Raise ``OptimizerError`` unless ``minimum <= value`` (and ``value < below`` if given)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptimizerError(f"{optimizer}: {name} must be a number, got {value!r}")
    if value != value or value < minimum or (below is not None and value >= below):
        allowed = f">= {minimum}" if below is None else f"in [{minimum}, {below})"
        raise OptimizerError(
            f"{optimizer}: invalid {name} {value!r}; it must be {allowed}",
            help=f"pass {name} {allowed}",
        )


def check_betas(optimizer: str, betas) -> tuple[float, float]:
    """Validate a ``(beta1, beta2)`` pair, each in [0, 1)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise OptimizerError(
            f"{optimizer}: betas must be a pair (beta1, beta2), got {betas!r}",
            help="e.g. betas=(0.9, 0.999)",
        )
    for position, beta in enumerate(betas):
        check_hyperparameter(optimizer, f"beta{position + 1}", beta, 0.0, below=1.0)
    return (float(betas[0]), float(betas[1]))
