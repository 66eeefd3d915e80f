"""``buildingai.optim.packing`` names ``buildingai.accel.packing`` (packed updates of small
parameters, a part of the accelerated step), for code that imports the switch from here."""

from ..accel.packing import ENV_VAR, PACK_MAX_SIZE, set_enabled, status

__all__ = ["ENV_VAR", "PACK_MAX_SIZE", "set_enabled", "status"]
