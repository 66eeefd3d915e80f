"""Registries: built-ins, decorators, lookups, and errors that list or suggest names."""

import pytest

from buildingai import nn, optim
from buildingai.train import (
    DATASETS,
    LOSSES,
    MODELS,
    OPTIMIZERS,
    SCHEDULERS,
    Config,
    ConfigError,
    Registry,
    RegistryError,
    build_dataset,
    register_model,
)  # fmt: skip


def test_builtins():
    assert {"SGD", "Adam", "AdamW"} <= set(OPTIMIZERS.names())
    assert {"CosineAnnealingLR", "OneCycleLR", "StepLR"} <= set(SCHEDULERS.names())
    assert {"CrossEntropyLoss", "MSELoss"} <= set(LOSSES.names())
    assert {"MNIST", "FashionMNIST", "RottenTomatoes", "Spirals"} <= set(DATASETS.names())
    assert {"MLP", "SmallCNN"} <= set(MODELS.names())


def test_register_and_build():
    registry = Registry("model")

    @registry.register
    class Net(nn.Module):
        def __init__(self, width: int = 4):
            super().__init__()
            self.fc = nn.Linear(2, width)

    @registry.register(name="other")
    def factory(width: int = 3):
        return Net(width)

    assert registry.get("Net") is Net and "other" in registry
    assert registry.build({"type": "Net", "width": 5}).fc.out_features == 5
    assert registry.build("other").fc.out_features == 3
    with pytest.raises(RegistryError, match="already registered"):
        registry.register(factory, name="Net")
    registry.register(factory, name="Net", replace=True)


def test_unknown_type_lists_names():
    with pytest.raises(
        RegistryError, match="unknown optimizer type 'Adan' — did you mean 'Adam'"
    ) as info:
        OPTIMIZERS.get("Adan")
    assert "registered optimizers: Adadelta, Adafactor, Adagrad, Adam, Adamax" in str(info.value)


def test_unknown_argument_suggests():
    model = MODELS.build({"type": "MLP", "in_features": 2, "hidden": [3], "out_features": 2})
    with pytest.raises(
        ConfigError, match="unknown key 'optim.lrr' for optimizer Adam — did you mean 'optim.lr'"
    ):
        OPTIMIZERS.build(Config(type="Adam", lrr=0.1), model.parameters(), path="optim")
    with pytest.raises(ConfigError, match="needs a 'type' key"):
        OPTIMIZERS.build({"lr": 0.1}, model.parameters(), path="optim")


def test_build_optimizer_scheduler_with_fill():
    model = MODELS.build({"type": "MLP", "in_features": 2, "hidden": [3], "out_features": 2})
    optimizer = OPTIMIZERS.build({"type": "SGD", "lr": 0.5, "momentum": 0.9}, model.parameters())
    assert isinstance(optimizer, optim.SGD) and optimizer.param_groups[0]["momentum"] == 0.9
    scheduler = SCHEDULERS.build({"type": "CosineAnnealingLR", "T_max": 2}, optimizer,
                                 fill={"steps_per_epoch": 4, "not_an_argument": 1})  # fmt: skip
    assert scheduler.steps_per_epoch == 4


def test_decorator_registers_globally():
    @register_model(name="TinyForTest")
    class Tiny(nn.Module):
        pass

    try:
        assert MODELS.get("TinyForTest") is Tiny
    finally:
        MODELS._entries.pop("TinyForTest")


def test_build_dataset_with_transforms():
    spirals = build_dataset({"type": "Spirals", "n": 10})
    assert len(spirals) == 10
    with pytest.raises(
        ConfigError, match="unknown key 'data.nn' for dataset Spirals — did you mean 'data.n'"
    ):
        build_dataset({"type": "Spirals", "nn": 10})
