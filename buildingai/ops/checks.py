"""Checks on tensor values as ops, so a static graph checks them again on every run.

A distribution refuses invalid parameters (a negative scale, a probability above 1). In eager
code the check could read the values directly; in a traced (frozen) call the values are not
known while tracing, and a check made once at trace time would not hold for later calls. As a
record, the check is a node of the graph (``effectful``: never folded or dropped) whose check
reads values (``checks_values``): the graph makes it each time it runs, and not on the sample
values it is traced with.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import array_namespace
from ..errors import ArgumentError
from .abstract import ValueSpec
from .base import Op


class Require(Op):
    """Raise ``ArgumentError`` unless ``condition(values)`` holds for every element.

    values: any shape -> a 0-d bool (True). ``condition`` maps the values' array to a bool
    array of the same shape; the error names ``family``, ``name`` and up to four offending
    values, and says what was ``wanted``; its help line is ``fix`` when given (the default
    speaks to distributions)."""

    name = "require"
    save_inputs = False
    differentiable = False
    effectful = True
    checks_values = True  # so a graph makes the check on every run, not on its trace's samples

    def check(self, values, *, family, name, condition, wanted, fix=None):
        ok = array_namespace(values).asarray(condition(values))
        if not bool(ok.all()):
            host = np.asarray(values.get() if hasattr(values, "get") else values)
            good = np.asarray(ok.get() if hasattr(ok, "get") else ok)
            bad = host[~good] if host.ndim else host
            shown = ", ".join(f"{v:g}" for v in bad.reshape(-1)[:4])
            raise ArgumentError(
                f"[{family}] {name} must be {wanted}; got {shown}"
                + (" ..." if bad.size > 4 else ""),
                help=fix or f"pass {name} {wanted} (validate_args=False skips this check)",
            )

    def forward(self, ctx, xp, values, *, family, name, condition, wanted, fix=None):
        return xp.asarray(True)  # (``check`` has passed)

    def infer(self, values, **attrs) -> ValueSpec:
        return ValueSpec((), np.dtype(bool), values.device)


REQUIRE = Require()
