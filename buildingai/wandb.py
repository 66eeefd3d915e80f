"""Weights & Biases through its own package (``pip install 'buildingai[wandb]'``)::

    import buildingai.wandb as wandb
    wandb.init(project="my_exp")
    wandb.log({"loss": current_loss})      # tensors are turned into numbers
    wandb.finish()

Without an API key (no ``WANDB_API_KEY``, no ``wandb login``) the run is written offline under
``./wandb`` and can be uploaded later with ``wandb sync``; nothing needs the network. The
``WandbLogger`` callback (``buildingai.train.trackers``) does the same for a Trainer.
"""

from __future__ import annotations

import netrc
import os
from typing import Any

from .utils.extras import require
from .utils.scalars import flatten, numbers

_run = None  # the run ``init`` started, as wandb.run


def _library():
    return require("wandb", "wandb", "buildingai.wandb")


def _has_credentials() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def init(project: str | None = None, *, config: Any = None, mode: str | None = None, **kwargs):
    """Start a run (``wandb.init``). ``config`` may be a nested dict or a ``Config``; ``mode``
    defaults to ``WANDB_MODE``, else "online" with credentials and "offline" without. Other
    keyword arguments go to ``wandb.init`` unchanged (``name``, ``dir``, ``tags``...)."""
    global _run
    wandb = _library()
    if mode is None:
        mode = os.environ.get("WANDB_MODE") or ("online" if _has_credentials() else "offline")
    if config is not None and hasattr(config, "to_dict"):
        config = config.to_dict()
    kwargs.setdefault("settings", wandb.Settings(silent=True))
    _run = wandb.init(project=project, config=config, mode=mode, **kwargs)
    return _run


def log(metrics: dict[str, Any], step: int | None = None, **kwargs) -> None:
    """Log ``{name: value}`` (tensors become numbers) to the current run."""
    if _run is None:
        from .errors import BuildingAIError

        raise BuildingAIError(
            "buildingai.wandb.log was called before init",
            help='call wandb.init(project="...") first',
        )
    _run.log(numbers(metrics), step=step, **kwargs)


def config_update(params: dict[str, Any]) -> None:
    """Add ``params`` (nested mappings flattened to dotted keys) to the run's config."""
    if _run is not None:
        _run.config.update(flatten(params), allow_val_change=True)


def finish() -> None:
    """End the current run and write its files."""
    global _run
    if _run is not None:
        _run.finish()
        _run = None


def __getattr__(name: str):
    if name == "run":
        return _run
    raise AttributeError(f"module 'buildingai.wandb' has no attribute {name!r}")
