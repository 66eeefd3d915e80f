"""Optional libraries: import one only when a feature needs it, and say in one line what to
install when it is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import BuildingAIError


class MissingExtraError(BuildingAIError, ImportError):
    """An optional library a feature needs is not installed."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise ``MissingExtraError`` naming the extra that
    brings it: ``require("wandb", "wandb", "buildingai.wandb")``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        raise MissingExtraError(
            f"{feature} needs the {top!r} package, which is not installed ({error})",
            help=f"pip install 'buildingai[{extra}]'",
        ) from None
