"""``Module``: the base class of every layer and model.

A Module owns Parameters, buffers and sub-modules, registered by plain attribute assignment
(``self.fc = Linear(3, 4)``), and names them as PyTorch does (``layers.0.weight``), so state dicts
move between the two frameworks. Calling a module runs its forward pre-hooks, ``forward`` and
forward hooks, and records where in the model the call happens: an error raised inside says
``(in MLP.encoder.layers.0.fc1)``.
"""

from __future__ import annotations

import copy
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..autograd.mode import no_grad
from ..autograd.state import MODULE_CALLS
from ..autograd.tensor import Tensor, bump_version
from ..backend import device as _device
from ..backend.dtypes import as_dtype, is_floating
from ..errors import BuildingAIError, CheckpointError, DTypeError
from ..functions.elementwise import clone as _clone_tensor
from ..utils.hooks import RemovableHandle
from .call_signature import call_signature, set_last_call_signature
from .parameter import Buffer, Parameter


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys the model expected but did not get, and the
    keys it got but does not know."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )

    __str__ = __repr__


class Module:
    """Base class of layers and models: subclass it, assign parts in ``__init__``, write
    ``forward``.

    Example::

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 256)   # registered as sub-module 'fc1'
                self.fc2 = nn.Linear(256, 10)

            def forward(self, x):                # x: (N, 784) -> (N, 10)
                return self.fc2(self.fc1(x).relu())

    ``super().__init__()`` may be left out: ``__new__`` sets the module up before any
    ``__init__`` runs.
    """

    training: bool

    def __new__(cls, *args, **kwargs):
        # The stores exist before any __init__ runs: a subclass whose __init__ does not call
        # super().__init__() works all the same (the one place that allows it).
        module = super().__new__(cls)
        Module.__init__(module)
        return module

    def __init__(self) -> None:
        # Written into __dict__ directly: our __setattr__ needs these stores to exist.
        self.__dict__.update(
            training=True,
            _parameters={},
            _buffers={},
            _non_persistent_buffers=set(),
            _modules={},
            _forward_pre_hooks={},
            _forward_hooks={},
            _child_names={},  # id(sub-module) -> name, for the module path (see __call__)
        )

    # ----- calling -----------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The computation; every subclass defines it. Call the module, not ``forward``, so that
        hooks run and errors name the module path."""
        raise NotImplementedError(
            f"module {type(self).__name__} has no forward(); define forward(self, ...) in the class"
        )

    def __call__(self, *args, **kwargs):
        # The modules being called on this thread (dispatch reads their names for errors), so
        # errors name this thread's call even when other threads run the same model.
        stack, path = MODULE_CALLS.stacks
        on_its_own = not stack
        if stack:
            # The name under which the calling module holds this one: a cached lookup, checked.
            parent = stack[-1]
            name = parent._child_names.get(id(self))
            if name is None or (
                parent._modules.get(name) is not self  # a direct child: the commonest call
                and not _holds_under(parent, name, self)
            ):
                name = _name_within(parent, self)
        else:
            name = type(self).__name__
        stack.append(self)
        path.append(name)
        try:
            if self._forward_pre_hooks or self._forward_hooks:
                output = self._call_with_hooks(args, kwargs)
            else:
                output = self.forward(*args, **kwargs)
            if on_its_own:  # the shapes of a call that ran let plot_computation_graph draw it
                set_last_call_signature(self, call_signature(args, kwargs))
            return output
        except BuildingAIError as error:
            if error.where is None:  # raised by layer code itself, not by an op
                error.where = ".".join(path)
            raise
        except Exception as error:
            _note_module_path(error, path)
            raise
        finally:
            stack.pop()
            path.pop()

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        for hook, with_kwargs, _ in list(self._forward_pre_hooks.values()):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise TypeError(
                            "a forward pre-hook registered with with_kwargs=True must return "
                            f"None or a tuple (args, kwargs), got {type(result).__name__}"
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        try:
            output = self.forward(*args, **kwargs)
        except Exception:
            # Hooks registered with always_call=True still see the call (e.g. to close a timer).
            for hook, with_kwargs, always_call in list(self._forward_hooks.values()):
                if always_call:
                    if with_kwargs:
                        hook(self, args, kwargs, None)
                    else:
                        hook(self, args, None)
            raise
        for hook, with_kwargs, _ in list(self._forward_hooks.values()):
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        return output

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, args)`` before ``forward``. A returned value replaces the
        positional inputs (a single value is wrapped in a tuple). With ``with_kwargs=True`` the
        hook is ``hook(module, args, kwargs)`` and may return ``(args, kwargs)``."""
        return _add_hook(self._forward_pre_hooks, (hook, with_kwargs, False), prepend)

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(module, args, output)`` after ``forward``; a returned value replaces the
        output. With ``with_kwargs=True`` the hook is ``hook(module, args, kwargs, output)``.
        With ``always_call=True`` it also runs (with output None) when forward raises."""
        return _add_hook(self._forward_hooks, (hook, with_kwargs, always_call), prepend)

    # ----- registration --------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        stores = self.__dict__
        parameters, modules, buffers = stores["_parameters"], stores["_modules"], stores["_buffers"]
        if isinstance(value, Parameter):
            _remove_from(name, stores, buffers, modules)
            self._non_persistent_buffers.discard(name)
            self.register_parameter(name, value)
        elif name in parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter '{name}' (a Parameter or "
                    f"None is expected); wrap it as Parameter(value), or `del module.{name}` "
                    "first to store a plain tensor in its place"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            _remove_from(name, stores, parameters, buffers)
            self._non_persistent_buffers.discard(name)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as sub-module '{name}' (a Module "
                    "or None is expected)"
                )
            modules[name] = value
        elif isinstance(value, Buffer):  # registered as a buffer, as torch.nn.Buffer
            _remove_from(name, stores, parameters, modules)
            self.register_buffer(name, value, persistent=value.persistent)
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer '{name}' (a Tensor or "
                    "None is expected)"
                )
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and sub-modules live here.
        stores = self.__dict__
        for kind in ("_parameters", "_buffers", "_modules"):
            store = stores.get(kind)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        names.update(self._parameters, self._buffers, self._modules)
        return sorted(name for name in names if not name[:1].isdigit())

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (a Parameter or None) under ``name``; same as ``self.name = param``."""
        _check_name(self, name, self._parameters, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign {type(param).__name__} as parameter '{name}' (a Parameter or "
                "None is expected); wrap it: Parameter(value)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but is not trained (running
        statistics, masks...). Persistent buffers are saved in ``state_dict``; moved by ``to``."""
        _check_name(self, name, self._buffers, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot register {type(tensor).__name__} as buffer '{name}' (a Tensor or None is "
                "expected); wrap it: buildingai.tensor(value)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a sub-module under ``name`` (which may be any string without dots, e.g. ``'0'``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(self, name, self._modules, "module")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The sub-module at a dotted path such as ``'encoder.layers.0'`` (``''`` is self)."""
        module = self
        if target == "":
            return module
        for part in target.split("."):
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(
                    f"{type(module).__name__} has no sub-module '{part}' (looking up '{target}')"
                )
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``'encoder.fc.weight'``."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        if name not in module._parameters or module._parameters[name] is None:
            raise AttributeError(f"{type(module).__name__} has no parameter '{name}'")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``'bn.running_mean'``."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        if name not in module._buffers or module._buffers[name] is None:
            raise AttributeError(f"{type(module).__name__} has no buffer '{name}'")
        return module._buffers[name]

    # ----- walking the tree ------------------------------------------------------------------
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for this module and every descendant, depth first, in registration
        order; a module reachable twice is listed once (under its first name)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = prefix + "." + name if prefix else name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant (each once)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for the direct sub-modules (each once)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct sub-modules (each once)."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, members, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + "." + name if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs with PyTorch's names (``layers.0.weight``); a parameter
        shared by several modules is listed once."""
        return self._named_members(
            lambda module: module._parameters.items(), prefix, recurse, remove_duplicate
        )

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (each once): what an optimizer trains."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(name, buffer)`` pairs, persistent or not."""
        return self._named_members(
            lambda module: module._buffers.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer (each once)."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def num_parameters(self, trainable_only: bool = False) -> int:
        """How many numbers the parameters hold (shared parameters counted once)."""
        return sum(
            param.numel()
            for param in self.parameters()
            if param.requires_grad or not trainable_only
        )

    # ----- state dict ----------------------------------------------------------------------------
    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict[str, Tensor]:
        """The parameters and persistent buffers by name (``'layers.0.weight'``), in PyTorch's
        order: each module's own parameters, then its buffers, then its children. The values are
        detached tensors sharing memory with the model (the Parameters themselves with
        ``keep_vars=True``). A shared parameter appears under each of its names, as in PyTorch."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(self, state_dict: Mapping, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this model's parameters and buffers, in place.

        Values may be Tensors, NumPy/CuPy arrays or anything ``numpy.asarray`` accepts (a
        PyTorch CPU tensor, for instance); they are cast to each tensor's dtype and moved to its
        device. The tensors keep their identity, so an optimizer built before the load still
        trains them. Nothing is copied unless every value fits: a failed load leaves the model
        unchanged.

        With ``strict=True`` a missing or unexpected key is an error; with ``strict=False`` they
        are returned as ``(missing_keys, unexpected_keys)``. A shape mismatch is always an error.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"load_state_dict expects a mapping of names to tensors, got "
                f"{type(state_dict).__name__}"
            )
        missing: list[str] = []
        mismatches: list[str] = []
        expected: set[str] = set()
        copies: list[tuple[Tensor, Any]] = []
        for prefix, module in _all_modules_with_prefix(self):
            module._collect_state_to_load(state_dict, prefix, expected, missing, mismatches, copies)
        unexpected = [key for key in state_dict if key not in expected]

        problems = []
        if strict and missing:
            problems.append("Missing key(s) in state_dict: " + _quoted(missing) + ".")
        if strict and unexpected:
            problems.append("Unexpected key(s) in state_dict: " + _quoted(unexpected) + ".")
        problems.extend(mismatches)
        if problems:
            advice = []
            if strict and (missing or unexpected):
                advice.append(
                    "pass strict=False to load the matching keys and get the others back as "
                    "(missing_keys, unexpected_keys)"
                )
            if mismatches:
                advice.append("a checkpoint must come from a model built with the same sizes")
            raise CheckpointError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(problems),
                help="; ".join(advice),
            )

        with no_grad():
            for target, array in copies:
                target.copy_(Tensor(_device.to_device(array, target.device)))
        return IncompatibleKeys(missing, unexpected)

    def _collect_state_to_load(
        self,
        state_dict: Mapping,
        prefix: str,
        expected: set,
        missing: list,
        mismatches: list,
        copies: list,
    ) -> None:
        """Match this module's own entries (not its children's) against ``state_dict``.
        Subclasses whose saved layout differs from their attributes override this."""
        local = [(n, p) for n, p in self._parameters.items() if p is not None]
        local += [
            (n, b)
            for n, b in self._buffers.items()
            if b is not None and n not in self._non_persistent_buffers
        ]
        for name, target in local:
            key = prefix + name
            expected.add(key)
            if key not in state_dict:
                missing.append(key)
                continue
            array = _as_array(state_dict[key], key)
            if tuple(array.shape) != tuple(target.shape):
                mismatches.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(array.shape)} "
                    f"from checkpoint, the shape in current model is {tuple(target.shape)}."
                )
                continue
            copies.append((target, array))

    # ----- modes and whole-model operations ------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch statistics used) here and in every
        sub-module; ``eval()`` is ``train(False)``. Returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is a bool, got {mode!r}")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode (``train(False)``). Returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient tracking of every parameter on or off (freezing). Returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the parameters' gradients: set them to None (default; saves memory and
        lets an optimizer skip them) or fill them with zeros in place."""
        for param in self.parameters():
            grad = param.grad
            if grad is None:
                continue
            if set_to_none:
                param.grad = None
            elif grad.requires_grad:  # a gradient with history (create_graph): start afresh
                param.grad = Tensor(_device.array_namespace(grad.array).zeros_like(grad.array))
            else:
                with no_grad():
                    grad.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn(module)`` on every sub-module (children first) and then on self, e.g. to
        initialise weights. Returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, dtype=None, device=None) -> Module:
        """Convert floating parameters and buffers to ``dtype`` and/or move every tensor to
        ``device``, in place: ``model.to("cuda")``, ``model.to(buildingai.float64)``. The
        Parameter objects stay the same, so optimizers built earlier keep working. Returns self."""
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif isinstance(arg, _device.Device) or (
                isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda")
            ):
                device = arg
            else:
                dtype = arg
        if dtype is not None:
            dtype = as_dtype(dtype)
            if not is_floating(dtype):
                raise DTypeError(
                    f"Module.to converts to floating dtypes only, got {dtype}",
                    help="use float16, bfloat16, float32 or float64; integer buffers keep their "
                    "dtype",
                )
        if device is not None:
            device = _device.Device(device)

        def convert(array):
            if dtype is not None and is_floating(array.dtype) and array.dtype != dtype:
                array = array.astype(dtype)
            if device is not None:
                array = _device.to_device(array, device)
            return array

        return self._convert_tensors(convert)

    def _convert_tensors(self, convert: Callable) -> Module:
        """Replace the array of every parameter, gradient and buffer by ``convert(array)``,
        keeping the Tensor objects (an optimizer holds them)."""
        for module in self.modules():
            for tensor in itertools.chain(module._parameters.values(), module._buffers.values()):
                if tensor is None:
                    continue
                converted = convert(tensor.array)
                if converted is not tensor.array:
                    tensor.array = converted
                    # A graph recorded before the conversion must not read the new values.
                    bump_version(tensor, "Module.to")
                if tensor.grad is not None:
                    tensor.grad = Tensor(convert(tensor.grad.array))
        return self

    def float(self) -> Module:
        return self.to(dtype="float32")

    def double(self) -> Module:
        return self.to(dtype="float64")

    def half(self) -> Module:
        return self.to(dtype="float16")

    def cpu(self) -> Module:
        return self.to(device="cpu")

    def cuda(self, index: int = 0) -> Module:
        return self.to(device=f"cuda:{index}")

    def clone(self, detach: bool = False) -> Module:
        """A deep copy for fast weights (meta-learning). Buffers and plain tensors are copied
        by value; hooks and sub-module sharing are copied too.

        By default the copy's parameters are graph values computed from this module's
        (``buildingai.clone`` of each): a loss computed with the copy, or with a copy adapted by
        ``update``, backpropagates to this module's parameters (second-order MAML when the inner
        gradients were taken with ``create_graph=True``). They are plain Tensors, not leaves.

        With ``detach=True`` the parameters are new leaf Parameters holding copies of the values:
        gradients stop at the copy (first-order MAML, or a frozen target network)."""
        memo: dict = {}
        # Plain tensors (buffers, cached values) are copied by value, never with their graph.
        for module in self.modules():
            for value in itertools.chain(module._buffers.values(), module.__dict__.values()):
                if type(value) is Tensor and id(value) not in memo:
                    memo[id(value)] = Tensor(
                        value.array.copy(), requires_grad=value.requires_grad and value.is_leaf
                    )
        for param in self.parameters():
            if detach or not param.requires_grad:  # parameters that do not train: by value
                memo[id(param)] = Parameter(param.array.copy(), requires_grad=param.requires_grad)
            else:
                memo[id(param)] = _clone_tensor(param)
        return copy.deepcopy(self, memo)

    def update(self, grads: Sequence, lr: float) -> Module:
        """Take one gradient step ``p - lr * g`` for every parameter, out of place: no tensor is
        written, each parameter entry is replaced by the new value, which stays in the graph.
        Call it on a ``clone()``, whose parameters are graph values: the original keeps its
        Parameters, and a loss on the updated clone backpropagates through the step.

        ``grads`` holds one gradient (or None, to keep that parameter) per parameter, in
        ``parameters()`` order: what ``buildingai.grad(loss, clone.parameters())`` returns.
        Returns self, so ``adapted = fast_weights.update(grads, lr=0.01)`` reads naturally."""
        params = list(self.parameters())
        grads = list(grads)
        if len(grads) != len(params):
            raise BuildingAIError(
                f"[Module.update] got {len(grads)} gradients for {len(params)} parameters of "
                f"{type(self).__name__}",
                help="pass one gradient (or None) per parameter, in parameters() order, e.g. "
                "buildingai.grad(loss, fast_weights.parameters())",
            )
        stepped = {}
        for (name, param), grad in zip(self.named_parameters(), grads):
            if grad is None:
                continue
            if not isinstance(grad, Tensor) or tuple(grad.shape) != tuple(param.shape):
                shape = tuple(grad.shape) if isinstance(grad, Tensor) else type(grad).__name__
                raise BuildingAIError(
                    f"[Module.update] the gradient for '{name}' is {shape}, the parameter is "
                    f"shape {tuple(param.shape)}",
                    help="pass the gradients in parameters() order, as grad() returns them",
                )
            stepped[id(param)] = param - lr * grad
        entries = tensor_entries(self)  # a parameter shared by sub-modules: each of its names
        replace_tensors(entries, {
            name: stepped[id(store[key])]
            for name, (store, key) in entries.items() if id(store[key]) in stepped
        })  # fmt: skip
        return self

    # ----- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text between the parentheses of this module's line in ``repr`` (its settings)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _indent(repr(module)) for name, module in self._modules.items()
        ]
        text = type(self).__name__ + "("
        lines = extra_lines + child_lines
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"

    def _repr_html_(self) -> str:
        """What Jupyter shows: a table of the modules with their parameters and the totals."""
        from ..utils.notebook import module_html

        return module_html(self)


# ----- helpers -------------------------------------------------------------------------------------
# ----- tensors replaced by name: functional_call runs with them, update keeps them ----------------
def tensor_entries(module: Module) -> dict[str, tuple[dict, str]]:
    """Every parameter and buffer of ``module`` by dotted name -> ``(store, key)``: the dict of
    the sub-module that holds it, and its key there. A tensor shared by sub-modules is listed
    under each of its names; empty (None) entries are left out."""
    entries = {}
    for prefix, owner in module.named_modules(remove_duplicate=False):
        for store in (owner._parameters, owner._buffers):
            for key, value in store.items():
                if value is not None:
                    entries[f"{prefix}.{key}" if prefix else key] = (store, key)
    return entries


def replace_tensors(
    entries: dict[str, tuple[dict, str]], values: Mapping[str, Tensor | None]
) -> dict[str, Tensor | None]:
    """Put ``values`` in the named ``entries`` (of ``tensor_entries``): the entries change, no
    tensor is written to, so a graph through the new values stays intact. Returns what the
    entries held: ``replace_tensors(entries, returned)`` puts it back."""
    previous = {}
    for name, value in values.items():
        store, key = entries[name]
        previous[name] = store[key]
        store[key] = value
    return previous


def _add_hook(hooks: dict, entry: tuple, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks[handle.id] = entry
        hooks.update(items)
    else:
        hooks[handle.id] = entry
    return handle


def _holds_under(parent: Module, name: str, child: Module) -> bool:
    """Whether ``parent`` holds ``child`` under the (possibly dotted) ``name`` now: the check of
    ``_name_within``'s cache on each call."""
    if parent._modules.get(name) is child:  # a direct child: the commonest call
        return True
    if "." not in name:
        return False
    module = parent
    for part in name.split("."):
        module = module._modules.get(part) if module is not None else None
    return module is child


def _name_within(parent: Module, child: Module) -> str:
    """The name under which ``parent`` holds ``child`` (``'fc1'``, ``'transformer.h.0'``...),
    used for the module path in errors. The names of direct children, and of deeper modules a
    forward calls directly (``self.transformer.wte(idx)``), are cached and checked on each use;
    a module not found costs a walk, and an unregistered one is named by its class."""
    names = {}
    for key, module in parent._modules.items():
        if module is not None and id(module) not in names:
            names[id(module)] = key
    # deeper names stay cached: each use checks them (_holds_under), so a stale one is harmless.
    # (dict() copies in one step: another thread may be adding to the cache meanwhile.)
    for ident, key in dict(parent._child_names).items():
        if "." in key:
            names.setdefault(ident, key)
    name = names.get(id(child))
    if name is None:
        for key, module in parent.named_modules():
            if module is child and key:
                name = names[id(child)] = key
                break
    parent.__dict__["_child_names"] = names  # published whole, never changed after
    return type(child).__name__ if name is None else name


def _note_module_path(error: Exception, path: list) -> None:
    """Add the module path to an exception that did not come from an op (innermost call only)."""
    if getattr(error, "_buildingai_module_path", None) is not None:
        return
    where = ".".join(path)
    try:
        error._buildingai_module_path = where
    except AttributeError:  # exceptions with __slots__
        return
    if hasattr(error, "add_note"):
        error.add_note(f"(in {where})")


def _remove_from(name: str, *stores) -> None:
    for store in stores:
        if name in store:
            del store[name]


def _check_name(module: Module, name: str, store: dict, kind: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name must be a string, got {type(name).__name__}")
    if name == "" or "." in name:
        raise KeyError(f'{kind} name must be non-empty and contain no ".", got {name!r}')
    if name not in store and name in module.__dict__:
        raise KeyError(f"attribute '{name}' already exists; delete it before registering a {kind}")


def _all_modules_with_prefix(module: Module, prefix: str = "") -> Iterator[tuple[str, Module]]:
    """Every module under every name (shared modules repeated), as state dicts list them."""
    yield prefix, module
    for name, child in module._modules.items():
        if child is not None:
            yield from _all_modules_with_prefix(child, prefix + name + ".")


def _as_array(value, key: str):
    """A backend array from a state-dict value (Tensor, array, or anything array-like)."""
    if isinstance(value, Tensor):
        return value.array
    if _device.is_array(value):
        return value
    try:
        array = np.asarray(value)
    except Exception as exc:
        array, cause = None, exc
    else:
        cause = None
    if array is None or array.dtype == object:
        raise TypeError(
            f"state_dict['{key}'] is of type {type(value).__name__}, which cannot be read as a "
            "numeric array"
        ) from cause
    return array


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{key}"' for key in keys)


def _indent(text: str, spaces: int = 2) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])
