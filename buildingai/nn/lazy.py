"""Lazy layers, as PyTorch's: ``LazyLinear(out_features)``, ``LazyConv2d(out_channels, 3)``,
``LazyBatchNorm2d()``... take their input size from their first call.

Until then the weights are ``UninitializedParameter`` s (running statistics
``UninitializedBuffer`` s): placeholders that hold no values, listed by ``parameters()`` like any
other. The first call (or a ``load_state_dict``, which reads the sizes in the checkpoint) builds
the layer the lazy one stands for, ``Linear(in_features, ...)`` with the size found, and moves
its freshly initialised arrays into the placeholders, which become ordinary Parameters and
buffers: the same objects, so a reference kept to one still holds it. The module then *is* that
layer (its class changes, as PyTorch's ``cls_to_become``).

Build the optimizer after the first call (a dry run on one batch), as PyTorch asks: before it
the parameters have no size.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.random import get_rng_state, set_rng_state
from ..errors import ShapeError
from ._utils import _on_device
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .conv3d import Conv3d, ConvTranspose3d
from .instance_norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .parameter import Buffer, Parameter


class UninitializedParameter(Parameter):
    """A Parameter whose shape is not known yet: an empty array of its dtype (and device) until
    ``materialize`` gives it one, when it turns into a plain ``Parameter``, the same object."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=np.float32) -> None:
        super().__init__(_on_device(np.empty((0,), dtype), device), requires_grad=requires_grad)

    def materialize(self, shape: tuple, device=None, dtype=None) -> None:
        """Give the placeholder an (uninitialised) array of ``shape``."""
        _materialize(self, np.empty(tuple(shape), dtype or self.dtype), device)

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        copied = UninitializedParameter(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = copied
        return copied

    def __repr__(self) -> str:
        return f"<UninitializedParameter, dtype {self.dtype}>"


class UninitializedBuffer(Buffer):
    """A buffer whose shape is not known yet (a lazy norm's running statistics)."""

    __slots__ = ()
    cls_to_become = Buffer

    def __init__(self, requires_grad: bool = False, device=None, dtype=np.float32) -> None:
        super().__init__(_on_device(np.empty((0,), dtype), device))
        self.requires_grad = requires_grad

    def materialize(self, shape: tuple, device=None, dtype=None) -> None:
        """Give the placeholder an (uninitialised) array of ``shape``."""
        _materialize(self, np.empty(tuple(shape), dtype or self.dtype), device)

    def __deepcopy__(self, memo: dict) -> UninitializedBuffer:
        copied = UninitializedBuffer(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = copied
        return copied

    def __repr__(self) -> str:
        return f"<UninitializedBuffer, dtype {self.dtype}>"


def _materialize(placeholder, array, device) -> None:
    placeholder.array = _on_device(array, device or placeholder.device)
    placeholder.__class__ = placeholder.cls_to_become


def is_lazy(value) -> bool:
    """Whether ``value`` is a placeholder without a shape yet (``torch.nn.parameter.is_lazy``)."""
    return isinstance(value, (UninitializedParameter, UninitializedBuffer))


# Every module's own bookkeeping (stores, hooks), which a lazy layer keeps as it is; the layer's
# other attributes (sizes, kernel_size, eps...) are copied from the layer it becomes
_BOOKKEEPING = frozenset(Module().__dict__)


class LazyModuleMixin:
    """What every lazy layer shares. A subclass names the layer it becomes (``cls_to_become``)
    and that layer's size argument (``size_name``), passes the layer's other constructor
    arguments to ``_hold``, and says where the size is read: in the first input
    (``_size_of_input``) or in a checkpoint (``_size_of_state``)."""

    cls_to_become: type
    size_name: str

    def _hold(self, **arguments) -> None:
        """Register placeholders for the parameters and sized buffers of
        ``cls_to_become(size, **arguments)``, and its other attributes (a repr, ``kernel_size``
        and the like read the same before the first call), the size being 0 until then."""
        Module.__init__(self)
        self._lazy_arguments = arguments
        drawn = get_rng_state()  # the template's initial values are thrown away: draw nothing
        template = self.cls_to_become(self._template_size(), **arguments)
        set_rng_state(drawn)
        for name, value in template._parameters.items():
            placeholder = None
            if value is not None:
                placeholder = UninitializedParameter(value.requires_grad, value.device, value.dtype)
            self.register_parameter(name, placeholder)
        for name, value in template._buffers.items():
            if value is not None and value.ndim:  # sized by the input; a count () is not
                value = UninitializedBuffer(False, value.device, value.dtype)
            self.register_buffer(
                name, value, persistent=name not in template._non_persistent_buffers
            )
        self._copy_attributes(template)
        setattr(self, self.size_name, 0)
        self._lazy_hook = self.register_forward_pre_hook(_infer_parameters)

    def _template_size(self) -> int:
        """A size the layer accepts with these arguments, to build the template from."""
        return 1

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer still waits for its size."""
        stores = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(value) for value in stores)

    def initialize_parameters(self, input, *args, **kwargs) -> None:  # noqa: A002
        """Size the layer from ``input`` (its first call's) and initialise it as the layer it
        becomes is initialised; nothing where it is sized already."""
        if self.has_uninitialized_params():
            self._become(self._size_of_input(input))

    def _become(self, size: int) -> None:
        """Build the layer with ``size`` and take its state: its arrays into the placeholders
        (in their dtype and device, which ``.to()`` may have changed since), its attributes,
        its class."""
        built = self.cls_to_become(size, **self._lazy_arguments)
        for store, built_store in (
            (self._parameters, built._parameters),
            (self._buffers, built._buffers),
        ):
            for name, value in built_store.items():
                placeholder = store.get(name)
                if is_lazy(placeholder):
                    array = value.array.astype(placeholder.dtype, copy=False)
                    _materialize(placeholder, array, placeholder.device)
        self._copy_attributes(built)
        self._lazy_hook.remove()
        del self._lazy_hook, self._lazy_arguments
        self.__class__ = self.cls_to_become

    def _copy_attributes(self, layer: Module) -> None:
        for key, value in layer.__dict__.items():
            if key not in _BOOKKEEPING:
                self.__dict__[key] = value

    def _collect_state_to_load(self, state_dict, prefix, *rest) -> None:
        # a checkpoint gives the size: the layer takes it, then loads as any other
        if self.has_uninitialized_params():
            size = self._size_of_state(state_dict, prefix)
            if size is not None:
                self._become(size)
        Module._collect_state_to_load(self, state_dict, prefix, *rest)

    def _size_of_input(self, input) -> int:  # noqa: A002
        raise NotImplementedError

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        raise NotImplementedError


def _infer_parameters(module, args) -> None:
    """The forward pre-hook of a lazy layer: its first call sizes it."""
    if not args or not isinstance(args[0], Tensor):
        got = type(args[0]).__name__ if args else "no input"
        raise ShapeError(
            f"[{type(module).__name__}] a lazy layer takes its size from its first input, a "
            f"tensor; got {got}"
        )
    module.initialize_parameters(*args)


def _shape_in(state_dict, key: str) -> tuple | None:
    value = state_dict.get(key)
    return None if value is None else tuple(np.shape(value))


# ----- the layers --------------------------------------------------------------------------------


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the last dimension of its first input:
    x (*, in_features) -> (*, out_features)."""

    cls_to_become, size_name = Linear, "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        self._hold(out_features=out_features, bias=bias, device=device, dtype=dtype)

    def _size_of_input(self, input) -> int:  # noqa: A002
        return input.shape[-1]

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        shape = _shape_in(state_dict, prefix + "weight")
        return shape[1] if shape is not None and len(shape) == 2 else None


class _LazyConvolution(LazyModuleMixin):
    """A lazy convolution: ``in_channels`` is its first input's channel axis, the first of an
    unbatched input (C, *spatial) and the second of a batch (N, C, *spatial)."""

    size_name = "in_channels"

    def _template_size(self) -> int:
        return self._lazy_arguments.get("groups", 1)  # in_channels must divide into the groups

    def _size_of_input(self, input) -> int:  # noqa: A002
        return input.shape[input.ndim - 1 - self.cls_to_become._spatial]

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        shape = _shape_in(state_dict, prefix + "weight")
        if shape is None or len(shape) != 2 + self.cls_to_become._spatial:
            return None
        if self.cls_to_become._transposed:  # (in_channels, out_channels / groups, *kernel)
            return shape[0]
        return shape[1] * self._lazy_arguments.get("groups", 1)  # (out, in / groups, *kernel)


class _LazyForwardConvolution(_LazyConvolution):
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        self._hold(
            out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
            dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode,
            device=device, dtype=dtype,
        )  # fmt: skip


class _LazyTransposedConvolution(_LazyConvolution):
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        self._hold(
            out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
            output_padding=output_padding, groups=groups, bias=bias, dilation=dilation,
            padding_mode=padding_mode, device=device, dtype=dtype,
        )  # fmt: skip


class LazyConv1d(_LazyForwardConvolution, Conv1d):
    """``Conv1d`` whose ``in_channels`` is the channel axis of its first input, (N, C, L)."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyForwardConvolution, Conv2d):
    """``Conv2d`` whose ``in_channels`` is the channel axis of its first input, (N, C, H, W)."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyForwardConvolution, Conv3d):
    """``Conv3d`` whose ``in_channels`` is the channel axis of its first input,
    (N, C, D, H, W)."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyTransposedConvolution, ConvTranspose1d):
    """``ConvTranspose1d`` whose ``in_channels`` is the channel axis of its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyTransposedConvolution, ConvTranspose2d):
    """``ConvTranspose2d`` whose ``in_channels`` is the channel axis of its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyTransposedConvolution, ConvTranspose3d):
    """``ConvTranspose3d`` whose ``in_channels`` is the channel axis of its first input."""

    cls_to_become = ConvTranspose3d


class _LazyNorm(LazyModuleMixin):
    """A lazy batch or instance norm: ``num_features`` is its first input's channel axis."""

    size_name = "num_features"

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        # (PyTorch's lazy instance norms too default to affine and running statistics)
        self._hold(
            eps=eps,
            momentum=momentum,
            affine=affine,
            track_running_stats=track_running_stats,
            device=device,
            dtype=dtype,
        )

    def _size_of_input(self, input) -> int:  # noqa: A002
        return input.shape[self._channel_axis(input.ndim)]

    def _channel_axis(self, ndim: int) -> int:
        return 1  # (N, C, ...)

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        for name in ("weight", "running_mean"):
            shape = _shape_in(state_dict, prefix + name)
            if shape is not None and len(shape) == 1:
                return shape[0]
        return None


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """``BatchNorm1d`` whose ``num_features`` is the channel axis of its first input,
    (N, C) or (N, C, L)."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """``BatchNorm2d`` whose ``num_features`` is the channel axis of its first input,
    (N, C, H, W)."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """``BatchNorm3d`` whose ``num_features`` is the channel axis of its first input,
    (N, C, D, H, W)."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """``InstanceNorm1d`` whose ``num_features`` is the channel axis of its first input,
    (N, C, L) or (C, L)."""

    cls_to_become = InstanceNorm1d

    def _channel_axis(self, ndim: int) -> int:
        return ndim - 2


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """``InstanceNorm2d`` whose ``num_features`` is the channel axis of its first input,
    (N, C, H, W) or (C, H, W)."""

    cls_to_become = InstanceNorm2d

    def _channel_axis(self, ndim: int) -> int:
        return ndim - 3


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """``InstanceNorm3d`` whose ``num_features`` is the channel axis of its first input,
    (N, C, D, H, W) or (C, D, H, W)."""

    cls_to_become = InstanceNorm3d

    def _channel_axis(self, ndim: int) -> int:
        return ndim - 4


__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LazyModuleMixin",
    "UninitializedBuffer",
    "UninitializedParameter",
]
