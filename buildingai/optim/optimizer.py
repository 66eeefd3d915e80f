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

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..accel.kernels import compiled
from ..autograd import Tensor, enable_grad, no_grad
from ..backend import CPU, array_namespace, to_device
from ..backend.dtypes import is_floating
from ..backend.threads import executor, get_num_threads
from ..errors import BuildingAIError
from .packing import ParameterPack, packable

# Elements per block of the blocked update: cache-resident across passes, few Python calls.
BLOCK_SIZE = 1 << 19
# Up to this many elements a parameter is updated whole: it fits in cache, blocks only add calls.
WHOLE_SIZE = 1 << 18

# From this size a parameter's blocks run on set_num_threads threads (ufuncs release the GIL).
_THREADED_MIN_SIZE = 1 << 20


class OptimizerError(BuildingAIError, ValueError):
    """A bad optimizer or scheduler argument, or a state dict that does not fit."""


class StepHookHandle:
    """Returned by ``register_step_pre_hook`` / ``register_step_post_hook``;
    ``handle.remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(StepHookHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> StepHookHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


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

    A subclass whose ``update`` treats every element on its own, and whose state holds only
    arrays shaped like the parameter and values shared by the group (step counts), sets
    ``updates_elementwise = True``: its small parameters are then updated together, as one
    flat array per group (``optim/packing.py``), with the same arithmetic.
    """

    updates_elementwise = False

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Tensor, dict[str, Any]] = {}
        self._init_bookkeeping()
        for group in self._as_groups(params):
            self.add_param_group(group)
        self.default_hook_handles = [self.register_step_pre_hook(h) for h in self.register_hooks()]

    def _init_bookkeeping(self) -> None:
        self._step_pre_hooks: dict[int, Callable] = {}
        self._step_post_hooks: dict[int, Callable] = {}
        self._workspace: dict[tuple, list] = {}  # reusable work arrays, see _run_elementwise
        self._work_views: dict[tuple, list] = {}  # shaped views of them, see _whole_work
        self._packs: dict[int, ParameterPack | None] = {}  # per group index, see _update_packed
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
                    param.grad.data.fill(0)

    # ----- hooks ------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> StepHookHandle:
        """Call ``hook(optimizer)`` before each step, in registration order; it may modify the
        gradients in place (clipping). Returns a handle whose ``remove()`` unregisters it."""
        handle = StepHookHandle(self._step_pre_hooks)
        self._step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> StepHookHandle:
        """Call ``hook(optimizer)`` after each step, in registration order."""
        handle = StepHookHandle(self._step_post_hooks)
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
                data = grad.data if isinstance(grad, Tensor) else grad
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
                    # PyTorch's foreach=False (without fused=True) asks for one-by-one updates
                    packed = group.get("foreach") is not False or group.get("fused")
                    if self.updates_elementwise and packed:
                        singles = self._update_packed(index, group)
                    else:
                        singles = enumerate(group["params"])
                    for position, param in singles:
                        if param.grad is None:
                            continue
                        grad = _fit_gradient(param.grad.data, param, position, copy=False)
                        state = self.state.get(param)
                        if state is None:
                            state = self.state[param] = self.init_state(param, group)
                        self.update(param.data, grad, state, group)
                        _bump_version(param, type(self).__name__)
            if outer:
                for hook in list(self._step_post_hooks.values()):
                    hook(self)
        finally:
            if outer:
                self._stepping = False

    def _update_packed(self, index: int, group: dict) -> list:
        """Update the group's small parameters together (``packing.ParameterPack``) and return
        the ``(position, param)`` pairs left to update one by one. Every parameter with a
        gradient gets its state first, in group order, as the one-by-one path creates it."""
        members, positions, singles = [], [], []
        state, dtype = self.state, None
        for position, param in enumerate(group["params"]):
            if param.grad is None:
                continue
            if param not in state:
                state[param] = self.init_state(param, group)
            if packable(param) and (dtype is None or param.data.dtype == dtype):
                dtype = param.data.dtype
                members.append(param)
                positions.append(position)
            else:
                singles.append((position, param))
        pack = None
        if len(members) >= 2:
            pack = self._packs.get(index)
            if pack is None or not pack.current(members, state):
                pack = ParameterPack.build(members, [state[p] for p in members], dtype)
                self._packs[index] = pack
        if pack is None:  # too few, or states that differ (e.g. step counts): one by one
            return sorted(singles + list(zip(positions, members)), key=_position)
        gradients = []
        for position, param in zip(positions, members):
            grad = param.grad.data
            if (
                type(grad) is not np.ndarray
                or grad.shape != param.data.shape
                or grad.dtype != dtype
            ):
                grad = _fit_gradient(grad, param, position, copy=False)
            gradients.append(grad)
        pack.step(self.update, group, gradients)
        name = type(self).__name__
        for param in members:
            _bump_version(param, name)
        return singles

    # ----- the blocked element-wise driver ----------------------------------------------------
    def _run_elementwise(self, update_fn: Callable, arrays: tuple, work_count: int, **scalars):
        """Call ``update_fn(xp, *arrays, work, **scalars)`` over cache-sized blocks.

        ``arrays`` (parameter, gradient, state arrays; None entries pass through) all have the
        parameter's shape; ``work`` is a list of ``work_count`` scratch arrays of the block's
        shape. On NumPy, contiguous arrays are cut into blocks of ``BLOCK_SIZE`` elements, so one
        update's many passes stay in cache; a large parameter's blocks are shared among threads.
        CuPy (and odd memory layouts) get one call over the whole arrays.
        """
        param = arrays[0]
        xp = array_namespace(param)
        contiguous = all(a is None or a.flags.c_contiguous for a in arrays)
        if xp is not np and compiled.run_gpu(update_fn, arrays, scalars):  # one fused kernel
            return
        if xp is not np or not contiguous:
            work = [xp.empty_like(param) for _ in range(work_count)]
            update_fn(xp, *arrays, work, **scalars)
            return
        flat = tuple(None if a is None else a.reshape(-1) for a in arrays)
        if compiled.run(update_fn, flat, scalars):  # one pass on numba's threads
            return
        size = param.size
        if size <= WHOLE_SIZE:
            # One block: the whole arrays, in their own shape, with work arrays of that shape
            # cached as views of the workspace (no per-call slicing or reshaping).
            update_fn(np, *arrays, self._whole_work(param, work_count), **scalars)
            return
        starts = range(0, size, BLOCK_SIZE)
        workers = min(get_num_threads(), len(starts)) if size >= _THREADED_MIN_SIZE else 1
        if workers == 1:
            self._run_blocks(update_fn, flat, starts, 0, work_count, scalars)
            return
        per_worker = -(-len(starts) // workers)
        pool = executor(workers)
        jobs = [
            pool.submit(
                self._run_blocks,
                update_fn,
                flat,
                starts[index * per_worker : (index + 1) * per_worker],
                index,
                work_count,
                scalars,
            )
            for index in range(workers)
        ]
        for job in jobs:
            job.result()

    def _work_arrays(self, worker: int, dtype, needed: int, work_count: int) -> list:
        """The flat work arrays of ``worker`` (at least ``work_count`` of ``needed`` elements)."""
        key = (worker, dtype)
        work = self._workspace.get(key)
        if work is None or len(work) < work_count or work[0].size < needed:
            length = max(needed, work[0].size if work else 0)
            count = max(work_count, len(work) if work else 0)
            work = self._workspace[key] = [np.empty(length, dtype) for _ in range(count)]
            self._work_views.clear()  # views of the replaced arrays are stale
        return work

    def _whole_work(self, param, work_count: int) -> list:
        """``work_count`` work arrays shaped like ``param`` (at most ``WHOLE_SIZE`` elements)."""
        key = (param.shape, param.dtype, work_count)
        views = self._work_views.get(key)
        if views is None:
            work = self._work_arrays(0, param.dtype, param.size, work_count)
            views = [w[: param.size].reshape(param.shape) for w in work[:work_count]]
            self._work_views[key] = views
        return views

    def _run_blocks(self, update_fn, flat, starts, worker, work_count, scalars) -> None:
        size = flat[0].size
        work = self._work_arrays(worker, flat[0].dtype, min(BLOCK_SIZE, size), work_count)
        for start in starts:
            stop = min(start + BLOCK_SIZE, size)
            block = tuple(None if a is None else a[start:stop] for a in flat)
            update_fn(np, *block, [w[: stop - start] for w in work[:work_count]], **scalars)

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
        self.state = {}
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


def _position(pair: tuple) -> int:
    return pair[0]


def _bump_version(param: Tensor, name: str) -> None:
    """Count the in-place update, so a graph that saved the old values refuses to backward."""
    param._version[0] += 1
    param._version[1] = f"{name}.step"


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, Tensor)


def _array_like_param(value, param: Tensor):
    xp = array_namespace(param.data)
    value = np.asarray(to_device(value, CPU))
    if value.dtype.kind == "f":
        value = value.astype(param.dtype, copy=False)
    return xp.array(value, copy=True)


def _fit_gradient(grad, param: Tensor, position: int, copy: bool):
    """Check a gradient's shape against its parameter; cast it to the parameter's dtype."""
    xp = array_namespace(param.data)
    if not hasattr(grad, "shape"):
        grad = np.asarray(grad)
    if tuple(grad.shape) != tuple(param.shape):
        raise OptimizerError(
            f"the gradient of parameter {position} has shape {tuple(grad.shape)}, the parameter "
            f"has shape {tuple(param.shape)}"
        )
    if type(grad) is not type(param.data):
        grad = to_device(grad, param.device)
    if grad.dtype != param.dtype or copy:
        grad = xp.array(grad, dtype=param.dtype, copy=True)
    return grad


# ----- helpers shared by the update rules --------------------------------------------------------
def effective_gradient(xp, param, grad, out, scratch, *, weight_decay: float, maximize: bool):
    """The gradient an update rule follows: ``grad`` negated when maximizing, plus the L2 term
    ``weight_decay * param``. Returns ``grad`` itself when neither applies, else ``out``
    (``scratch`` is clobbered). All arrays share one shape."""
    if not maximize and not weight_decay:
        return grad
    if maximize:
        xp.negative(grad, out=out)
    else:
        xp.copyto(out, grad)
    if weight_decay:
        xp.multiply(param, weight_decay, out=scratch)
        out += scratch
    return out


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
