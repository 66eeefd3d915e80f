"""Training: ``Config`` (settings, YAML, overrides), registries of named classes, the
``Trainer`` with its callbacks, metrics and progress bar, and two small ready-made models."""

from .callbacks import (
    Callback,
    Checkpoint,
    ConsoleLogger,
    EarlyStopping,
    KeepBest,
    MetricsLogger,
    latest_checkpoint,
    list_checkpoints,
)
from .config import (
    DEFAULTS,
    RULES,
    Config,
    ConfigError,
    load_config,
    parse_value,
    validate_config,
)
from .metrics import Accuracy, Mean, Metric, accuracy, correct_counts, top_k_accuracy
from .models import MLP, SmallCNN
from .progress import PlainProgress, progress
from .registry import (
    DATASETS,
    LOSSES,
    MODELS,
    OPTIMIZERS,
    SCHEDULERS,
    TRANSFORMS,
    Registry,
    RegistryError,
    build_dataset,
    build_transform,
    register_dataset,
    register_loss,
    register_model,
    register_optimizer,
    register_scheduler,
    register_transform,
)
from .trainer import RunDirExistsError, Trainer

__all__ = [
    "Accuracy", "Callback", "Checkpoint", "Config", "ConfigError", "ConsoleLogger", "DATASETS",
    "DEFAULTS", "EarlyStopping", "KeepBest", "LOSSES", "MLP", "MODELS", "Mean",
    "Metric", "MetricsLogger", "OPTIMIZERS", "PlainProgress", "RULES", "Registry",
    "RegistryError", "RunDirExistsError", "SCHEDULERS", "SmallCNN", "TRANSFORMS", "Trainer",
    "accuracy", "build_dataset", "build_transform", "correct_counts", "latest_checkpoint",
    "list_checkpoints", "load_config", "parse_value", "progress", "register_dataset",
    "register_loss", "register_model", "register_optimizer", "register_scheduler",
    "register_transform", "top_k_accuracy", "validate_config",
]  # fmt: skip
