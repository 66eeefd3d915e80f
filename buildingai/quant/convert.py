"""The quantisation workflows, in PyTorch's spelling:

- ``quantize_dynamic(model)``: int8 weights now, activations quantised per batch from their own
  range at run time. No calibration.
- ``prepare(model, observer=MinMaxObserver)`` -> run calibration batches -> ``convert(model)``:
  static quantisation; observers fix each activation's uint8 grid in advance.
- ``prepare_qat(model)`` -> train -> ``convert(model)``: quantisation-aware training through
  fake quantisation with a straight-through gradient.

Linear and Conv2d become int8 layers; LSTM (and other RNNs) keep float arithmetic on int8-stored
weights (weight-only).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from ..autograd.tensor import Tensor
from ..nn.attention import MultiheadAttention
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.rnn import RNNBase
from .modules import (
    QATConv2d,
    QATLinear,
    QuantizationError,
    QuantizedConv2d,
    QuantizedLinear,
    quantize_weights_only,
)
from .observers import MinMaxObserver, MovingAverageMinMaxObserver

DEFAULT_DYNAMIC = (Linear, Conv2d, RNNBase)
DEFAULT_STATIC = (Linear, Conv2d)


def _copy(model: Module, inplace: bool) -> Module:
    """``model`` itself, or a copy with new leaf Parameters and buffers holding copied values."""
    if inplace:
        return model
    memo: dict = {}
    for module in model.modules():
        for value in itertools.chain(module._buffers.values(), module.__dict__.values()):
            if type(value) is Tensor and id(value) not in memo:
                memo[id(value)] = Tensor(value.array.copy())
    return copy.deepcopy(model, memo)  # Parameters copy themselves as new leaves


def _replace(model: Module, make: Callable[[Module], Module | None]) -> Module:
    """Swap every sub-module ``m`` for ``make(m)`` where that is not None (the model itself
    included); returns the (possibly new) root."""
    root = make(model)
    if root is not None:
        return root
    for parent in list(model.modules()):
        if isinstance(parent, MultiheadAttention):
            continue  # it reads out_proj's weight itself: a swapped layer would break it
        for name, child in list(parent._modules.items()):
            if child is None:
                continue
            replacement = make(child)
            if replacement is not None:
                parent._modules[name] = replacement
    return model


def _outside_attention(model: Module) -> list[Module]:
    """Every module except the layers a MultiheadAttention owns (it uses their weights
    directly, as PyTorch's NonDynamicallyQuantizableLinear marks)."""
    inside = {
        id(sub)
        for module in model.modules()
        if isinstance(module, MultiheadAttention)
        for sub in module.modules()
        if sub is not module
    }
    return [module for module in model.modules() if id(module) not in inside]


def quantize_dynamic(model: Module, types: tuple = DEFAULT_DYNAMIC, inplace: bool = False):
    """int8 weights (per output channel, symmetric) for the layers of ``types``; activations are
    quantised per call from their own range. Returns the quantised model (a copy unless
    ``inplace``), in eval mode. Swapped layers keep their shapes: Linear (*, in_features) ->
    (*, out_features), Conv2d (N, C, H, W) -> (N, O, Ho, Wo)."""
    model = _copy(model, inplace).eval()

    def make(module):
        if isinstance(module, Linear) and Linear in types:
            return QuantizedLinear(module)
        if isinstance(module, Conv2d) and Conv2d in types:
            return QuantizedConv2d(module)
        if isinstance(module, RNNBase) and any(issubclass(type(module), t) for t in types):
            quantize_weights_only(module)
        return None

    return _replace(model, make).eval()


class _Observe:
    """Forward hook of a prepared layer: feeds its input and output to two observers."""

    def __init__(self, make_observer: Callable) -> None:
        self.input = make_observer()
        self.output = make_observer()

    def __call__(self, module, args, output) -> None:
        self.input.observe(args[0].numpy())
        self.output.observe(output.numpy())


def prepare(
    model: Module,
    observer: Callable = MinMaxObserver,
    types: tuple = DEFAULT_STATIC,
    inplace: bool = True,
) -> Module:
    """Attach observers (``observer()`` makes one) to the input and output of every layer of
    ``types``; run calibration batches through the model (under ``no_grad``), then
    ``convert`` it. Works in place and returns the model, in eval mode (PyTorch copies by
    default; pass ``inplace=False`` to keep the float model). The observers take each layer's
    input and output whatever their shape, reduced to one [low, high] range per tensor."""
    model = _copy(model, inplace).eval()
    for module in _outside_attention(model):
        if isinstance(module, types):
            hook = _Observe(observer)
            module.__dict__["_quant_observers"] = hook
            module.__dict__["_quant_handle"] = module.register_forward_hook(hook)
    return model


def prepare_qat(
    model: Module, observer: Callable = MovingAverageMinMaxObserver, inplace: bool = True
) -> Module:
    """Swap Linear and Conv2d for versions that train through fake quantisation (inputs,
    weights and outputs), sharing the float Parameters (an optimizer built earlier still
    trains them); train, then ``convert``. In place unless ``inplace=False`` (a copy: build the
    optimizer on it); returns the model in training mode. The swapped layers keep their shapes:
    Linear (*, in_features) -> (*, out_features), Conv2d (N, C, H, W) -> (N, O, Ho, Wo)."""
    model = _copy(model, inplace).train()

    def make(module):
        if isinstance(module, Linear):
            return QATLinear(module, observer)
        if isinstance(module, Conv2d):
            return QATConv2d(module, observer)
        return None

    return _replace(model, make).train()


def convert(model: Module, inplace: bool = True) -> Module:
    """Turn a model from ``prepare`` (calibrated) or ``prepare_qat`` (trained) into int8 layers
    with the observed activation grids, in place unless ``inplace=False``; returns it in eval
    mode. The int8 layers keep the float layers' shapes: ``QuantizedLinear`` (*, in_features)
    -> (*, out_features), ``QuantizedConv2d`` (N, C, H, W) -> (N, O, Ho, Wo)."""
    model = _copy(model, inplace).eval()
    found = []

    def make(module):
        hook = module.__dict__.get("_quant_observers")
        if hook is not None:
            module.__dict__.pop("_quant_handle").remove()
            module.__dict__.pop("_quant_observers")
            found.append(module)
            layer = QuantizedLinear if isinstance(module, Linear) else QuantizedConv2d
            return layer(module, hook.input.qparams(), hook.output.qparams())
        if isinstance(module, (QATLinear, QATConv2d)):
            found.append(module)
            layer = QuantizedLinear if isinstance(module, QATLinear) else QuantizedConv2d
            return layer(
                module.to_float(),
                module.input_fake_quant.qparams(),
                module.output_fake_quant.qparams(),
            )
        return None

    model = _replace(model, make).eval()
    if not found:
        raise QuantizationError(
            "[quant.convert] the model has no prepared layers",
            help="call quant.prepare(model) and run calibration batches (or quant.prepare_qat "
            "and train) first",
        )
    return model
