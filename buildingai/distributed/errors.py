"""Errors of ``buildingai.distributed``: each names the rank, the collective and how to fix it."""

from __future__ import annotations

from ..errors import BuildingAIError


class DistributedError(BuildingAIError, RuntimeError):
    """A collective that cannot run: no process group, a rank outside the group, a broken group."""


class CollectiveTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within the group's timeout: a rank died or stopped calling
    collectives. The message names the ranks that did not answer and where the others wait."""


class CollectiveMismatchError(DistributedError):
    """Ranks called different collectives at the same step, or the same one with a different
    shape, dtype or argument (``op``, ``src``, ``dst``), or a recv got a message of another shape
    or dtype; checked in every mode, before any data moves. The message names each rank's call
    and the line it came from."""
