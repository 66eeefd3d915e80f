"""``summary()``: the bytes held now by tensors' buffers, by op and by module."""

from __future__ import annotations

from ..backend import accounting


class MemorySummary(dict):
    """``{"current", "peak", "by_op": {op: bytes}, "by_module": {path: bytes}}``, largest first;
    ``str()`` is a table. A module path ``""`` stands for buffers made outside any module call,
    and the op ``"tensor"`` for arrays wrapped by ``Tensor(...)`` (parameters, inputs)."""

    def __str__(self) -> str:
        lines = [f"memory: {_size(self['current'])} held, peak {_size(self['peak'])}"]
        for title, key in (("op", "by_op"), ("module", "by_module")):
            lines.append(f"{'by ' + title:<40} {'bytes':>12}")
            for name, nbytes in self[key].items():
                lines.append(f"  {name or '(outside modules)':<38} {_size(nbytes):>12}")
        return "\n".join(lines)


def summary() -> MemorySummary:
    """What holds memory now: the bytes of every live buffer, grouped by the op that allocated it
    and by the module path it was allocated in (``encoder.layers.0.fc1``). Called between forward
    and backward it shows the activations the graph keeps. Counts the buffers made while memory
    tracking was on (``memory.start_tracking()``); raises when it is off."""
    totals = accounting.stats()
    by_op: dict[str, int] = {}
    by_module: dict[str, int] = {}
    for buffer in accounting.live_buffers():
        by_op[buffer.op] = by_op.get(buffer.op, 0) + buffer.nbytes
        by_module[buffer.module] = by_module.get(buffer.module, 0) + buffer.nbytes
    return MemorySummary(
        current=totals["current"],
        peak=totals["peak"],
        by_op=dict(sorted(by_op.items(), key=lambda item: -item[1])),
        by_module=dict(sorted(by_module.items(), key=lambda item: -item[1])),
    )


def _size(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if abs(nbytes) < 1024:
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} GiB"
