"""Reading the environment variables that set a process-wide switch's starting value.

Each acceleration that changes how work is done (``accel.vector_blas``, ``accel.packing``) has one
function to turn it on or off and one environment variable for its value at start-up; both are
documented in the README, and ``buildingai info`` and the Trainer's run record list the result.
"""

from __future__ import annotations

import os

from ..errors import ArgumentError

_TRUE = ("1", "true", "on", "yes")
_FALSE = ("0", "false", "off", "no")


def env_switch(name: str, default: bool) -> bool:
    """The value of the on/off environment variable ``name``; ``default`` when it is unset or
    empty. Anything but 1/0, true/false, on/off, yes/no (any case) raises ``ArgumentError``."""
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ArgumentError(
        f"environment variable {name}={os.environ[name]!r} is not an on/off value",
        help=f"set {name}=1 to turn it on or {name}=0 to turn it off, or unset it",
    )
