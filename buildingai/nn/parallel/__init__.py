"""``buildingai.nn.parallel``: PyTorch's ``torch.nn.parallel`` names, for programs that import
them and run on one device.

``DataParallel`` over zero or one device does what PyTorch's does there: it moves the inputs to
that device and calls the wrapped module (its state dict keys start with ``module.``, as
PyTorch's). Copying a model to several GPUs inside one process is not BuildingAI's way: run one
process per GPU (``buildingai launch``) and average gradients with
``buildingai.distributed.all_reduce_gradients``; asking ``DataParallel`` for several devices,
or constructing ``DistributedDataParallel``, says so.
"""

from __future__ import annotations

from ... import cuda
from ...backend.device import Device
from ...errors import BuildingAIError
from ..module import Module

_ONE_PROCESS_PER_GPU = (
    "run one process per GPU with `buildingai launch -n N script.py` and average gradients with "
    "buildingai.distributed.all_reduce_gradients (docs/distributed.md)"
)


def _to(value, device: Device):
    """``value`` (a tensor, or a list, tuple or dict of them) on ``device``; others unchanged."""
    if hasattr(value, "to") and hasattr(value, "device"):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(item, device) for item in value)
    if isinstance(value, dict):
        return {key: _to(item, device) for key, item in value.items()}
    return value


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)`` on one device.

    ``device_ids`` defaults to every visible GPU (none on a CPU-only machine, where the module is
    called as it is). With one device the inputs move there before the call; the output stays
    there unless ``output_device`` is another device. More than one device raises.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if len(device_ids) > 1:
            raise BuildingAIError(
                f"[DataParallel] copying the model to {len(device_ids)} devices "
                f"{list(device_ids)} inside one process is not supported",
                help=f"pass device_ids=[0], or {_ONE_PROCESS_PER_GPU}",
            )
        self.module = module
        self.device_ids = list(device_ids)
        self.dim = dim
        self._device = _gpu(device_ids[0]) if device_ids else None
        self._output_device = _gpu(output_device) if output_device is not None else self._device

    def forward(self, *inputs, **kwargs):
        if self._device is None:
            return self.module(*inputs, **kwargs)
        output = self.module(*_to(inputs, self._device), **_to(kwargs, self._device))
        return _to(output, self._output_device)


def _gpu(device) -> Device:
    return Device("cuda", device) if isinstance(device, int) else Device(device)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):  # fmt: skip
    """The functional form: ``DataParallel(module, ...)`` called once on ``inputs``."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))


class DistributedDataParallel(Module):
    """Not a model wrapper here: constructing one raises, naming BuildingAI's explicit helpers."""

    def __init__(self, module: Module, *args, **kwargs) -> None:
        raise BuildingAIError(
            "[DistributedDataParallel] BuildingAI has no model wrapper for data parallelism",
            help="keep the model unwrapped: " + _ONE_PROCESS_PER_GPU,
        )


__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
