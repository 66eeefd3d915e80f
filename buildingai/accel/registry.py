"""The acceleration registry: every faster implementation, the op it speeds up, when it applies,
and one switch for all of them.

An op record's ``forward`` is the reference: the clearest correct code for the op. A faster
kernel is registered beside it::

    register(CONV2D, applies=direct_fits, kernel=direct_conv2d, name="conv2d.direct",
             requires=("numba",))

``applies(xp, *arrays, **attrs) -> bool`` is a cheap test of the call (dtype, layout, size);
``min_size`` (optional) is a call size below which it never holds (``call_size``: the first
input's elements, times the second's where there is one, which bounds a product's
multiply-adds; or the op's own ``size`` rule where that bound is loose, as a layer's
multiply-adds): a call smaller than every active kernel of the op asks for skips them all
without calling ``applies`` (``op.accelerated_from``, ``op.accelerated_size``);
``kernel(ctx, xp, *arrays, **attrs)`` computes what ``forward`` computes, and may return
``NotImplemented`` to hand the call back (then the next kernel, or the record, runs it). Dispatch
asks ``op.accelerated`` (the op's kernels that are on now, in registration order) just before the
record's forward; when acceleration is off that tuple is empty and dispatch pays one truth test.

An op whose gradient the backward engine adds straight into its input's sum
(``Op.add_grad_into``: a basic index) may have faster kernels for that sum too, registered with
``register_gradient_into`` and run by ``add_grad_into``; ``op.accelerated_into`` holds the
active ones.

Accelerations that are not one op's kernel (a BLAS of BuildingAI's own, one thread pool, packed
optimizer state) are registered as switches (``register_switch``): code that uses them asks
``switch.active``.

One switch turns all of it on or off: ``enable()`` / ``disable()``, and ``BUILDINGAI_ACCEL=1|0``
for the value at start-up (off when unset: importing BuildingAI or running an op loads no
library, starts no thread and changes no setting). Each kernel and switch also has its own
(``set_enabled(name, flag)``). ``status()`` lists every entry, whether it is active and why not;
``buildingai info`` and the Trainer's run record show it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..backend.switches import env_switch
from ..errors import ArgumentError

ENV_VAR = "BUILDINGAI_ACCEL"


@dataclass(eq=False)
class Kernel:
    """A faster implementation of ``op`` (None for a switch that is no op's kernel)."""

    name: str
    op: object
    applies: Callable | None
    run: Callable | None
    requires: tuple[str, ...] = ()
    description: str = ""
    min_size: int = 0  # ``applies`` is False where ``call_size`` (or ``size``) is smaller
    size: Callable | None = None  # the op's call size where not ``call_size``: one rule per op
    method: str = "forward"  # the op's method it speeds up: "forward" or "add_grad_into"
    switched_on: bool = True  # this entry's own switch

    @property
    def active(self) -> bool:
        """Whether the kernel is used now: acceleration and its own switch are on, and what it
        needs is installed."""
        return _state["enabled"] and self.switched_on and not self.missing

    @functools.cached_property
    def missing(self) -> list[str]:
        """The required modules that are not installed (looked up once, without importing)."""
        return [name for name in self.requires if not _installed(name)]

    def reason(self) -> str:
        """Why the entry is active or not, in a few words."""
        if not _state["enabled"]:
            return "acceleration off"
        if not self.switched_on:
            return f"switched off (buildingai.accel.set_enabled({self.name!r}, True))"
        missing = self.missing
        if missing:
            extra = "mkl" if "mkl" in missing else "fast"
            return f"{', '.join(missing)} not installed (pip install 'buildingai[{extra}]')"
        return "on"


_state = {"enabled": env_switch(ENV_VAR, default=False), "announced": False}
_entries: dict[str, Kernel] = {}
_on_enable: list[Callable[[], None]] = []  # what enable() starts, registered by accel modules
_on_disable: list[Callable[[], None]] = []
_lock = threading.Lock()


def register(
    op,
    applies: Callable,
    kernel: Callable,
    *,
    name: str,
    requires: tuple[str, ...] = (),
    description: str = "",
    min_size: int = 0,
    size: Callable | None = None,
) -> Kernel:
    """Register ``kernel`` as a faster ``forward`` of ``op`` where ``applies`` holds (never
    where the call's size is below ``min_size``). ``size(*arrays)`` sizes the op's calls where
    ``call_size`` bounds them too loosely (a layer's input times its whole weight counts each
    multiply-add ``in_features`` times); every kernel of the op gives the same rule."""
    entry = Kernel(name, op, applies, kernel, tuple(requires), description, min_size, size)
    _add(entry)
    return entry


def register_gradient_into(
    op,
    applies: Callable,
    kernel: Callable,
    *,
    name: str,
    requires: tuple[str, ...] = (),
    description: str = "",
) -> Kernel:
    """Register ``kernel(total, grad, attrs)`` as a faster ``op.add_grad_into(total, grad,
    attrs)`` (the engine's sum of the op's gradient into its input's) where ``applies(total,
    grad, attrs)`` holds; it may return ``NotImplemented`` to hand the call back."""
    entry = Kernel(name, op, applies, kernel, tuple(requires), description, method="add_grad_into")
    _add(entry)
    return entry


def register_switch(name: str, *, requires: tuple[str, ...] = (), description: str = "") -> Kernel:
    """Register an acceleration that is no op's kernel; its users read ``.active``."""
    entry = Kernel(name, None, None, None, tuple(requires), description)
    _add(entry)
    return entry


def on_enable(start: Callable[[], None], stop: Callable[[], None] | None = None) -> None:
    """Have ``enable()`` call ``start()`` (and ``disable()`` call ``stop()``): what an
    acceleration sets up, it sets up there, never on import or on an op's first call."""
    _on_enable.append(start)
    if stop is not None:
        _on_disable.append(stop)
    if _state["enabled"]:
        start()


def _add(entry: Kernel) -> None:
    with _lock:
        if entry.name in _entries:
            raise ArgumentError(
                f"[accel] a kernel named {entry.name!r} is registered already",
                help="give each registered kernel its own name",
            )
        for other in _entries.values():
            if (
                other.op is entry.op
                and entry.op is not None
                and other.method == entry.method == "forward"
                and other.size is not entry.size
            ):
                raise ArgumentError(
                    f"[accel] kernel {entry.name!r} sizes calls of '{entry.op.name}' otherwise "
                    f"than {other.name!r} does",
                    help="register every kernel of one op with the same size rule",
                )
        _entries[entry.name] = entry
        _refresh(entry.op)


def _refresh(op) -> None:
    """Set ``op.accelerated`` to its forward kernels that are active now, in registration
    order, ``op.accelerated_from`` to the smallest call size any of them may take,
    ``op.accelerated_size`` to the op's size rule (None: ``call_size``), and
    ``op.accelerated_into`` to its active ``add_grad_into`` kernels."""
    if op is None:
        return
    active = [entry for entry in _entries.values() if entry.op is op and entry.active]
    forward = tuple(entry for entry in active if entry.method == "forward")
    op.accelerated = forward
    op.accelerated_from = min((entry.min_size for entry in forward), default=0)
    op.accelerated_size = forward[0].size if forward else None
    op.accelerated_into = tuple(entry for entry in active if entry.method == "add_grad_into")


def _refresh_all() -> None:
    for op in {id(entry.op): entry.op for entry in _entries.values()}.values():
        _refresh(op)


def enable(*, quiet: bool = False) -> None:
    """Turn every registered acceleration on (each still needs its own switch and packages).
    Says once per process, on standard error, what is now on, unless ``quiet``."""
    with _lock:
        _state["enabled"] = True
        _refresh_all()
    for start in _on_enable:
        start()
    if not quiet and not _state["announced"]:
        _state["announced"] = True
        active = [entry.name for entry in _entries.values() if entry.active]
        print(
            f"buildingai.accel: on, {len(active)} of {len(_entries)} kernels active "
            "(buildingai.accel.status() lists them; disable() turns them off)",
            file=sys.stderr,
        )


def disable() -> None:
    """Turn every acceleration off: every op runs its record's reference forward."""
    with _lock:
        _state["enabled"] = False
        _refresh_all()
    for stop in _on_disable:
        stop()


def is_enabled() -> bool:
    """Whether acceleration is on (each kernel may still be off on its own switch)."""
    return _state["enabled"]


@contextlib.contextmanager
def enabled(flag: bool = True, *, quiet: bool = True) -> Iterator[None]:
    """``with accel.enabled(False):`` runs the block with acceleration on or off, then restores
    the setting. The setting is process-wide: other threads see it too."""
    previous = _state["enabled"]
    if flag:
        enable(quiet=quiet)
    else:
        disable()
    try:
        yield
    finally:
        if previous:
            enable(quiet=True)
        else:
            disable()


def set_enabled(name: str, flag: bool) -> bool:
    """Turn one kernel or switch on or off; returns its previous setting."""
    entry = kernel(name)
    with _lock:
        previous = entry.switched_on
        entry.switched_on = bool(flag)
        _refresh(entry.op)
    return previous


def kernel(name: str) -> Kernel:
    """The registered kernel or switch called ``name``."""
    entry = _entries.get(name)
    if entry is None:
        known = ", ".join(sorted(_entries)) or "none"
        raise ArgumentError(
            f"[accel] no kernel named {name!r}", help=f"registered kernels: {known}"
        )
    return entry


def registered() -> list[Kernel]:
    """Every registered kernel and switch, in registration order."""
    return list(_entries.values())


def status() -> dict:
    """``{"enabled": bool, "kernels": [{"name", "op", "active", "reason", "description"}]}``."""
    return {
        "enabled": _state["enabled"],
        "kernels": [
            {
                "name": entry.name,
                "op": None if entry.op is None else entry.op.name,
                "active": entry.active,
                "reason": entry.reason(),
                "description": entry.description,
            }
            for entry in _entries.values()
        ],
    }


def run_accelerated(op, ctx, xp, arrays, attrs: dict):
    """The first active kernel of ``op`` that applies to this call computes it; the record's
    ``forward`` where none does. Dispatch calls this only when ``op.accelerated`` is not empty."""
    if op.accelerated_from and too_small(op, arrays):
        return op.forward(ctx, xp, *arrays, **attrs)
    return run_kernels(op, ctx, xp, arrays, attrs)


def run_kernels(op, ctx, xp, arrays, attrs: dict):
    """``run_accelerated`` for a call already known to be no smaller than the op's kernels
    take (``too_small`` is False): the kernels are asked in turn, then the record."""
    least = op.accelerated_from
    if attrs:
        for entry in op.accelerated:
            if entry.min_size > least and _size_below(op, arrays, entry.min_size):
                continue  # a kernel that takes larger calls than the op's smallest
            if entry.applies(xp, *arrays, **attrs):
                data = entry.run(ctx, xp, *arrays, **attrs)
                if data is not NotImplemented:
                    return data
        return op.forward(ctx, xp, *arrays, **attrs)
    for entry in op.accelerated:  # the same without keywords: this runs on every such op
        if entry.min_size > least and _size_below(op, arrays, entry.min_size):
            continue
        if entry.applies(xp, *arrays):
            data = entry.run(ctx, xp, *arrays)
            if data is not NotImplemented:
                return data
    return op.forward(ctx, xp, *arrays)


def add_grad_into(op, total, grad, attrs: dict) -> None:
    """``op.add_grad_into(total, grad, attrs)``, or the first of the op's active kernels for it
    that applies (``register_gradient_into``): the backward engine's one call."""
    for entry in op.accelerated_into:
        if (
            entry.applies(total, grad, attrs)
            and entry.run(total, grad, attrs) is not NotImplemented
        ):
            return
    op.add_grad_into(total, grad, attrs)


def call_size(arrays) -> int | None:
    """What a kernel's ``min_size`` bounds: the elements of a call's first input, times those of
    its second where there is one (a product's multiply-adds never exceed it); None where one
    of them is not an array (a Python number)."""
    size = 1
    for value in arrays[:2]:
        elements = getattr(value, "size", None)
        if elements is None:
            return None
        size *= elements
    return size


def too_small(op, arrays) -> bool:
    """Whether a call of ``op`` on ``arrays`` is smaller than every active kernel of the op
    takes (its size, ``op.accelerated_size`` or ``call_size``, below ``op.accelerated_from``)."""
    return _size_below(op, arrays, op.accelerated_from)


def _size_below(op, arrays, least: int) -> bool:
    """Whether a call of ``op`` on ``arrays`` is smaller than ``least`` (its size as
    ``too_small`` measures it)."""
    size_of = op.accelerated_size
    if size_of is not None:
        return size_of(*arrays) < least
    try:  # one or two arrays, the commonest call: their sizes without the general loop
        size = arrays[0].size * arrays[1].size if len(arrays) > 1 else arrays[0].size
    except (AttributeError, IndexError):
        size = call_size(arrays)
        return size is not None and size < least
    return size < least


def _installed(module: str) -> bool:
    """Whether ``module`` imports, or names an installed distribution that ships libraries and
    no module (the ``mkl`` wheel)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        if importlib.util.find_spec(module) is not None:
            return True
    except (ImportError, ValueError):  # a finder refused it (tests' BUILDINGAI_TEST_WITHOUT)
        return False
    try:
        importlib.metadata.distribution(module)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
