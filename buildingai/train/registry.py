"""Registries: the names a config may use in ``type:`` fields, mapped to classes.

``MODELS``, ``DATASETS``, ``OPTIMIZERS``, ``SCHEDULERS``, ``LOSSES`` and ``TRANSFORMS`` start with
the library's own classes; add yours with a decorator::

    @register_model
    class CustomResNet(nn.Module):
        def __init__(self, depth: int = 50, widen_factor: int = 1): ...

    model = MODELS.build({"type": "CustomResNet", "depth": 18})

``build`` checks the config's keys against the class's signature, so a typo fails before any
work starts, with the closest valid name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .. import optim
from ..data import datasets, transforms
from ..nn import loss as losses
from . import models
from .config import Config, ConfigError, suggest


class RegistryError(ConfigError, KeyError):
    """An unknown ``type`` name or a name registered twice."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return ConfigError.__str__(self)


class Registry:
    """A mapping from names to classes (or factory functions) of one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Callable] = {}

    def register(self, obj: Callable | None = None, *, name: str | None = None, replace=False):
        """Register ``obj`` under ``name`` (default: its ``__name__``). Usable as ``@register``,
        ``@register(name="resnet")`` or a plain call; returns ``obj``."""

        def add(target: Callable) -> Callable:
            key = name or target.__name__
            existing = self._entries.get(key)
            if existing is not None and existing is not target and not replace:
                raise RegistryError(
                    f"{self.kind} {key!r} is already registered ({_qualname(existing)})",
                    help="choose another name, or pass replace=True to override it",
                )
            self._entries[key] = target
            return target

        return add if obj is None else add(obj)

    def get(self, name: str) -> Callable:
        """The class registered as ``name``; an unknown name lists the registered ones."""
        if name not in self._entries:
            raise RegistryError(
                f"unknown {self.kind} type {name!r}{suggest(name, self._entries)}",
                help=f"registered {self.kind}s: {', '.join(self.names())}; add your own with "
                f"@register_{self.kind}",
            )
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries, key=str.lower)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"

    def build(
        self,
        spec: Mapping[str, Any] | str,
        *args: Any,
        path: str | None = None,
        fill: Mapping[str, Any] | None = None,
    ) -> Any:
        """Instantiate ``spec["type"]`` with the other keys of ``spec`` as keyword arguments.

        ``args`` are passed first (an optimizer's parameters, a scheduler's optimizer);
        ``fill`` gives values for arguments the class takes but the spec does not set
        (``steps_per_epoch``). ``path`` names the config section in error messages.
        """
        path = path or self.kind
        if isinstance(spec, str):
            spec = {"type": spec}
        target, accepted = self.check(spec, skip=len(args), path=path)
        kwargs = {
            key: value.to_dict() if isinstance(value, Config) else value
            for key, value in spec.items()
            if key != "type"
        }
        for key, value in (fill or {}).items():
            if key not in kwargs and (accepted is None or key in accepted):
                kwargs[key] = value
        try:
            return target(*args, **kwargs)
        # an argument the class refuses, or a size that cannot be allocated
        except (TypeError, ValueError, MemoryError) as error:
            raise ConfigError(
                f"cannot build {self.kind} {spec['type']} from {path}: {error}",
                help=f"change the value in the config's {path} section",
            ) from None

    def check(
        self, spec: Mapping[str, Any] | str, *, skip: int = 0, path: str | None = None
    ) -> tuple[Callable, list[str] | None]:
        """Check ``spec`` without building anything: its ``type`` is registered and every other
        key is an argument of that class (after ``skip`` positional ones). Returns the class and
        the keyword names it accepts (None when it takes ``**kwargs``)."""
        path = path or self.kind
        if isinstance(spec, str):
            spec = {"type": spec}
        if "type" not in spec:
            raise ConfigError(
                f"{path} needs a 'type' key naming the {self.kind}",
                help=f"for example {path}.type={self.names()[0] if self._entries else '...'}; "
                f"registered: {', '.join(self.names())}",
            )
        target = self.get(spec["type"])
        accepted = _keyword_names(target, skip=skip)
        if accepted is not None:
            unknown = [key for key in spec if key != "type" and key not in accepted]
            if unknown:
                key = unknown[0]
                names = [f"{path}.{name}" for name in accepted]
                raise ConfigError(
                    f"unknown key '{path}.{key}' for {self.kind} {spec['type']}"
                    f"{suggest(f'{path}.{key}', names)}",
                    help=f"{spec['type']} takes: {', '.join(accepted) or '(no arguments)'}",
                )
        return target, accepted


def _keyword_names(target: Callable, skip: int) -> list[str] | None:
    """The keyword arguments ``target`` accepts after ``skip`` positional ones; None when it
    takes ``**kwargs`` (anything goes) or its signature cannot be read."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    names = []
    for position, parameter in enumerate(signature.parameters.values()):
        if parameter.kind is parameter.VAR_KEYWORD:
            return None
        if parameter.kind is parameter.VAR_POSITIONAL or position < skip:
            continue
        if parameter.kind is not parameter.POSITIONAL_ONLY:
            names.append(parameter.name)
    return names


def _qualname(obj: Callable) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"


MODELS = Registry("model")
DATASETS = Registry("dataset")
OPTIMIZERS = Registry("optimizer")
SCHEDULERS = Registry("scheduler")
LOSSES = Registry("loss")
TRANSFORMS = Registry("transform")

register_model = MODELS.register
register_dataset = DATASETS.register
register_optimizer = OPTIMIZERS.register
register_scheduler = SCHEDULERS.register
register_loss = LOSSES.register
register_transform = TRANSFORMS.register

for _cls in (
    optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adagrad, optim.Adadelta, optim.Lion,
    optim.Adamax, optim.NAdam, optim.RAdam, optim.ASGD, optim.Rprop, optim.Adafactor,
):  # fmt: skip
    register_optimizer(_cls)
for _cls in (
    optim.StepLR, optim.MultiStepLR, optim.ExponentialLR, optim.CosineAnnealingLR,
    optim.CosineAnnealingWarmRestarts, optim.LinearLR, optim.OneCycleLR, optim.WarmupLR,
    optim.ReduceLROnPlateau,
):  # fmt: skip
    register_scheduler(_cls)
for _cls in (
    losses.CrossEntropyLoss, losses.NLLLoss, losses.MSELoss, losses.L1Loss, losses.HuberLoss,
    losses.SmoothL1Loss, losses.BCELoss, losses.BCEWithLogitsLoss, losses.KLDivLoss,
    losses.CosineEmbeddingLoss, losses.MarginRankingLoss, losses.HingeEmbeddingLoss,
    losses.SoftMarginLoss, losses.MultiLabelSoftMarginLoss, losses.MultiMarginLoss,
    losses.MultiLabelMarginLoss, losses.TripletMarginLoss, losses.PoissonNLLLoss,
    losses.GaussianNLLLoss,
):  # fmt: skip
    register_loss(_cls)
for _cls in (
    datasets.MNIST, datasets.FashionMNIST, datasets.CIFAR10, datasets.RottenTomatoes,
    datasets.Spirals, datasets.Regression,
):  # fmt: skip
    register_dataset(_cls)
for _cls in (
    transforms.ToTensor, transforms.Normalize, transforms.RandomCrop,
    transforms.RandomHorizontalFlip,
):  # fmt: skip
    register_transform(_cls)
register_model(models.MLP)
register_model(models.SmallCNN)
del _cls


def build_transform(spec: Any, path: str = "transform") -> Callable | None:
    """None, one transform spec, or a list of them (composed in order)."""
    if spec is None:
        return None
    if isinstance(spec, (list, tuple)):
        return transforms.Compose(
            [TRANSFORMS.build(item, path=f"{path}[{i}]") for i, item in enumerate(spec)]
        )
    return TRANSFORMS.build(spec, path=path)


def check_dataset(spec: Mapping[str, Any], path: str = "data") -> None:
    """Check a dataset spec and its transform specs without building (or loading) anything."""
    DATASETS.check(spec, path=path)
    for key in ("transform", "target_transform"):
        transform = spec.get(key)
        if isinstance(transform, Mapping):
            TRANSFORMS.check(transform, path=f"{path}.{key}")
        elif isinstance(transform, (list, tuple)):
            for i, item in enumerate(transform):
                TRANSFORMS.check(item, path=f"{path}.{key}[{i}]")


def build_dataset(spec: Mapping[str, Any], path: str = "data") -> Any:
    """A dataset from its spec; ``transform`` entries may be transform specs."""
    spec = dict(spec.to_dict() if isinstance(spec, Config) else spec)
    for key in ("transform", "target_transform"):
        if isinstance(spec.get(key), (Mapping, list, tuple)):
            spec[key] = build_transform(spec[key], path=f"{path}.{key}")
    return DATASETS.build(spec, path=path)
