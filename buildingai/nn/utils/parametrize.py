"""Parametrizations (``torch.nn.utils.parametrize``): a parameter or buffer of a module replaced
by a function of other tensors, recomputed on every access.

    register_parametrization(linear, "weight", Symmetric())
    linear.weight                                  # Symmetric()(linear.parametrizations.weight.original)

The tensors that are trained move to ``module.parametrizations.<name>.original`` (or
``original0``, ``original1``... when the first parametrization takes several), with PyTorch's
state-dict keys. The module's class is swapped for a subclass ``Parametrized<Class>`` holding a
property per parametrized name, so ``module.weight`` calls the parametrizations in order and
gradients reach the originals; assigning ``module.weight = value`` goes through the
parametrizations' ``right_inverse`` methods.
"""

from __future__ import annotations

import collections.abc
import copy
import copyreg
import threading
from collections.abc import Sequence
from contextlib import contextmanager, suppress

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...errors import BuildingAIError
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]


class ParametrizationError(BuildingAIError, ValueError):
    """A parametrization that does not fit its tensor (dtype, shape, what right_inverse returns),
    or a tensor that is not parametrized where one is expected."""


class ReparametrizationError(BuildingAIError, RuntimeError):
    """A reparametrization used in a way it cannot support: registered twice, assigned without
    a right_inverse, pickled."""


# ----- caching: one computation of each parametrized tensor inside `with cached():` --------------
class _CacheState(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # how many `cached()` blocks are open on this thread
        self.values: dict[tuple[int, str], Tensor] = {}


_CACHE = _CacheState()


@contextmanager
def cached():
    """Inside this block each parametrized tensor is computed once, on its first access, and
    the same value (and graph) is reused; the values are dropped when the outermost block ends.

    Useful when a parametrized weight is read many times in one forward (a recurrent kernel in
    the loop of an RNN, shared weights)::

        with parametrize.cached():
            output = model(inputs)
    """
    _CACHE.depth += 1
    try:
        yield
    finally:
        _CACHE.depth -= 1
        if not _CACHE.depth:
            _CACHE.values = {}


# ----- the container that holds the originals and the chain of parametrizations ----------------
def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_data(destination: Tensor, source: Tensor) -> None:
    """Give ``destination`` the memory of ``source`` (PyTorch's ``set_``): the tensor object,
    which an optimizer may hold, stays the same, while its shape and values become source's."""
    destination.data = source.detach()


class ParametrizationList(ModuleList):
    """``module.parametrizations[name]``: the parametrizations of one tensor, applied in order,
    and the tensor(s) they start from, as ``original`` (or ``original0``, ``original1``... when
    the first parametrization's ``right_inverse`` returns several tensors).

    Calling it computes the parametrized tensor. Built by ``register_parametrization``; not
    meant to be made directly.
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ParametrizationError("[ParametrizationList] needs one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape = tuple(original.shape)
        original_dtype = original.dtype

        # What the originals start as: right_inverse of every parametrization, last first (a
        # parametrization without right_inverse, or whose right_inverse raises
        # NotImplementedError, counts as the identity).
        with no_grad():
            new = original
            for parametrization in reversed(list(self)):
                if hasattr(parametrization, "right_inverse"):
                    with suppress(NotImplementedError):
                        new = parametrization.right_inverse(new)
        if not isinstance(new, (Tensor, Sequence)):
            raise ParametrizationError(
                "[register_parametrization] 'right_inverse' must return a Tensor or a sequence "
                f"of tensors (list, tuple...), got {type(new).__name__}"
            )

        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ParametrizationError(
                    "[register_parametrization] when 'right_inverse' returns one tensor it may "
                    f"not change the dtype: original {original.dtype}, right_inverse(original) "
                    f"{new.dtype}"
                )
            if new.device != original.device:
                raise ParametrizationError(
                    "[register_parametrization] when 'right_inverse' returns one tensor it may "
                    f"not change the device: original {original.device}, "
                    f"right_inverse(original) {new.device}"
                )
            # The same tensor object stays the original, so an optimizer built earlier still
            # trains it.
            _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for index, tensor in enumerate(new):
                if not isinstance(tensor, Tensor):
                    raise ParametrizationError(
                        "[register_parametrization] 'right_inverse' must return a Tensor or a "
                        f"sequence of tensors, got element {index} of type "
                        f"{type(tensor).__name__}"
                    )
                # New tensors: they must be added to an optimizer built before (as in PyTorch).
                if isinstance(original, Parameter):
                    tensor = Parameter(tensor.detach(), requires_grad=original.requires_grad)
                else:
                    tensor = tensor.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{index}", tensor)

        if not self.unsafe:
            # forward(right_inverse(original)) must look like the original
            value = self()
            if not isinstance(value, Tensor):
                raise ParametrizationError(
                    f"[register_parametrization] a parametrization must return a tensor, got "
                    f"{type(value).__name__}"
                )
            if value.dtype != original_dtype or tuple(value.shape) != original_shape:
                raise ParametrizationError(
                    "[register_parametrization] registering a parametrization may not change the "
                    f"dtype or shape of the tensor: unparametrized {original_dtype} "
                    f"{original_shape}, parametrized {value.dtype} {tuple(value.shape)}",
                    help="pass unsafe=True if the change is intended",
                )

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes ``value``: the
        ``right_inverse`` of every parametrization, last first, stored into ``original``
        (or ``original0``, ``original1``...) in place."""
        with no_grad():
            for parametrization in reversed(list(self)):
                if not hasattr(parametrization, "right_inverse"):
                    raise ReparametrizationError(
                        f"[right_inverse] parametrization {type(parametrization).__name__} does "
                        "not implement right_inverse, so the tensor cannot be assigned to",
                        help="define right_inverse(self, value) on the parametrization, or "
                        "assign to the originals in module.parametrizations[name]",
                    )
                value = parametrization.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ParametrizationError(
                        f"[right_inverse] should return a tensor, got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ParametrizationError(
                        f"[right_inverse] returned dtype {value.dtype} while 'original' has "
                        f"dtype {self.original.dtype}"
                    )
                _set_data(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ParametrizationError(
                    f"[right_inverse] must return a sequence of tensors, got {type(value).__name__}"
                )
            if len(value) != self.ntensors:
                raise ParametrizationError(
                    f"[right_inverse] must return a sequence of {self.ntensors} tensors, got "
                    f"{len(value)}"
                )
            for index, tensor in enumerate(value):
                original = getattr(self, f"original{index}")
                if not isinstance(tensor, Tensor):
                    raise ParametrizationError(
                        f"[right_inverse] returned element {index} of type "
                        f"{type(tensor).__name__}, not a tensor"
                    )
                if tensor.dtype != original.dtype:
                    raise ParametrizationError(
                        f"[right_inverse] tensor {index} has dtype {tensor.dtype} while "
                        f"'original{index}' has dtype {original.dtype}"
                    )
                _set_data(original, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the first parametrization applied to the original(s), then
        each further one to the result."""
        parametrizations = list(self)
        if self.is_tensor:
            value = parametrizations[0](self.original)
        else:
            originals = [getattr(self, f"original{index}") for index in range(self.ntensors)]
            value = parametrizations[0](*originals)
        for parametrization in parametrizations[1:]:
            value = parametrization(value)
        return value

    def __repr__(self) -> str:
        return type(self).__name__ + super().__repr__()[len("ModuleList") :]


# ----- the class swap that makes `module.weight` a computed attribute --------------------------
def _deepcopy_parametrized(self, memo: dict):
    """``copy.deepcopy`` of a parametrized module (pickling is refused, as in PyTorch). The copy
    gets a class of its own, so removing a parametrization from it leaves this module alone."""
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    cls = type(self)
    replica_cls = type(cls.__name__, cls.__bases__, dict(cls.__dict__))
    replica = replica_cls.__new__(replica_cls)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(cls):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise ReparametrizationError(
        f"[parametrize] a parametrized {type(self).__name__} cannot be pickled: its class is "
        "made on the fly",
        help="save module.state_dict() instead, and load it into a module parametrized the "
        "same way",
    )


def _inject_new_class(module: Module) -> None:
    """Swap the class of ``module`` for a new subclass ``Parametrized<Class>``, where the
    properties of its parametrized tensors will live."""
    cls = module.__class__

    def __setattr__(self, name: str, value) -> None:  # noqa: N807 - the class's method
        # A Parameter assigned to a parametrized name would hide behind the property; PyTorch
        # refuses it the same way (a plain tensor goes through right_inverse).
        if isinstance(value, Parameter) and is_parametrized(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        cls.__setattr__(self, name, value)

    namespace = {"__getstate__": _refuse_pickling, "__setattr__": __setattr__}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Add the property ``tensor_name`` to the parametrized class of ``module``: reading it runs
    the parametrizations (or reuses the value inside ``cached()``), assigning to it runs their
    right_inverse."""

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _CACHE.depth:
            return parametrization()
        key = (id(self), tensor_name)
        value = _CACHE.values.get(key)
        if value is None:
            value = parametrization()
            _CACHE.values[key] = value
        return value

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


# ----- the public functions --------------------------------------------------------------------
def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` (a parameter or buffer) computed as
    ``parametrization(original)`` on every access; gradients flow to the original, which moves
    to ``module.parametrizations.<tensor_name>.original`` (state-dict key
    ``parametrizations.<tensor_name>.original``).

    The original starts as ``parametrization.right_inverse(tensor)`` when the parametrization
    defines it (else the tensor itself). A ``right_inverse`` returning several tensors makes
    ``original0``, ``original1``... and ``forward`` then takes them all; these are new
    parameters, to be added to an optimizer built before. Registering again on the same name
    chains the parametrizations (each applied to the previous one's result). With
    ``unsafe=False`` the parametrization must keep the tensor's shape and dtype, which is
    checked once here. Returns ``module``.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not isinstance(value, Tensor):
                raise ParametrizationError(
                    f"[register_parametrization] a parametrization must return a tensor, got "
                    f"{type(value).__name__}"
                )
            if value.dtype != current.dtype or tuple(value.shape) != tuple(current.shape):
                raise ParametrizationError(
                    "[register_parametrization] registering a parametrization may not change the "
                    f"dtype or shape of module.{tensor_name}: {current.dtype} "
                    f"{tuple(current.shape)} became {value.dtype} {tuple(value.shape)}",
                    help="pass unsafe=True if the change is intended",
                )
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverse = parametrization.right_inverse(value)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(inverse, Tensor):
                        raise ParametrizationError(
                            "[register_parametrization] parametrization.right_inverse must return "
                            f"a tensor, got {type(inverse).__name__}"
                        )
                    if inverse.dtype != current.dtype or tuple(inverse.shape) != tuple(
                        current.shape
                    ):
                        raise ParametrizationError(
                            "[register_parametrization] parametrization.right_inverse must keep "
                            f"the dtype and shape of module.{tensor_name}: {current.dtype} "
                            f"{tuple(current.shape)}, got {inverse.dtype} "
                            f"{tuple(inverse.shape)}",
                            help="pass unsafe=True if the change is intended",
                        )
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe  # once unsafe, the chain stays unchecked
    elif tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        # built first, so that a failing check leaves the module as it was
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ParametrizationError(
            f"[register_parametrization] {type(module).__name__} has no parameter, buffer or "
            f"parametrized tensor named '{tensor_name}'",
            help=f"its parameters are {list(module._parameters)}, its buffers "
            f"{list(module._buffers)}",
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module.<tensor_name>`` is parametrized (with no name: whether any of the
    module's tensors is)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Make ``module.<tensor_name>`` a plain parameter (or buffer) again, holding its current
    parametrized value (``leave_parametrized=True``) or the original
    (``leave_parametrized=False``, possible only with a single original). With one original, the
    same tensor object is kept, so an optimizer holding it keeps working. When no parametrized
    tensor is left the module gets its class back. Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ParametrizationError(
            f"[remove_parametrizations] {type(module).__name__} has no parametrization on "
            f"'{tensor_name}'"
        )
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_data(original, value)
    elif leave_parametrized:
        # Whether gradients are wanted follows from the originals (so no no_grad here).
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()) if value.requires_grad else value.detach()
    else:
        raise ParametrizationError(
            f"[remove_parametrizations] '{tensor_name}' is parametrized by "
            f"{parametrizations.ntensors} tensors, so it cannot be left unparametrized",
            help="pass leave_parametrized=True to keep the current value",
        )

    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` as it was before any parametrization (``Linear`` for a
    ``ParametrizedLinear``)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Register on ``to_module`` the parametrizations of ``from_module`` (of ``tensor_name`` only,
    or of all its parametrized tensors) and make ``to_module``'s originals the same tensors as
    ``from_module``'s. A tensor ``to_module`` lacks is created first. Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            index = 0
            while hasattr(source, f"original{index}"):
                setattr(target, f"original{index}", getattr(source, f"original{index}"))
                index += 1
    return to_module
