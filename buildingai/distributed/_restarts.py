"""When ``buildingai launch --max-restarts K`` starts a failed job again, and on how many ranks.

The job runs on *slots*, numbered 0..N-1 at the first start; rank r of an attempt runs in the
r-th slot still in use. Each failure is charged to the slot of the rank that ended abnormally
first (the others were ended by mpiexec's cleanup after it). On one machine nothing tells a
crashed process from a lost node, so "a slot stays gone" is defined by count: a slot charged with
``slot_failures`` failures (default 2: it failed again after a restart) is counted gone, and the
job restarts without it, one rank fewer, as long as that leaves at least ``min_ranks`` ranks.
Otherwise (and by default, where ``min_ranks`` is N) the job restarts with the same world size.
Every decision is one line on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import DistributedError

RESTART_VARIABLE = "BUILDINGAI_RESTART"  # what the job sees: 0, then 1, 2, ... per restart
MAX_RESTARTS_VARIABLE = "BUILDINGAI_MAX_RESTARTS"


@dataclass
class RestartPolicy:
    """The restart budget and the slots in use; ``after_failure`` decides each restart."""

    processes: int
    max_restarts: int = 0
    min_ranks: int | None = None
    slot_failures: int = 2
    restarts: int = 0
    checkpoint: int | None = None  # the newest complete checkpoint any attempt recorded
    slots: list[int] = field(default_factory=list)
    failures: dict[int, int] = field(default_factory=dict)  # slot -> failures charged to it

    def __post_init__(self) -> None:
        if self.min_ranks is None:
            self.min_ranks = self.processes
        if self.max_restarts < 0:
            raise DistributedError(f"[launch] --max-restarts must be >= 0, got {self.max_restarts}")
        if not 1 <= self.min_ranks <= self.processes:
            raise DistributedError(
                f"[launch] --min-ranks must be between 1 and -n ({self.processes}), got "
                f"{self.min_ranks}",
                help="--min-ranks is the fewest ranks the job may shrink to after losing slots",
            )
        if self.slot_failures < 1:
            raise DistributedError(
                f"[launch] --slot-failures must be >= 1, got {self.slot_failures}"
            )
        self.slots = list(range(self.processes))

    @property
    def ranks(self) -> int:
        """The world size of the next attempt."""
        return len(self.slots)

    def after_failure(self, code: int, cause: tuple[int, str] | None,
                      checkpoint: int | None) -> tuple[bool, list[str]]:  # fmt: skip
        """Record a failed attempt (mpiexec's exit ``code``, ``(rank, description)`` of the rank
        that failed first, the checkpoint it recorded); returns whether to restart and the lines
        that say why."""
        if checkpoint is not None:
            self.checkpoint = max(checkpoint, self.checkpoint or 0)
        what = cause[1] if cause else f"the job exited with code {code} (no rank recorded why)"
        if self.restarts >= self.max_restarts:
            if not self.max_restarts:
                return False, []  # restarts were not asked for: the rank lines say it all
            return False, [f"{what}; not restarting (all {self.max_restarts} restarts used)"]
        lines = []
        if cause is not None and cause[0] < len(self.slots):
            lines += self._charge(self.slots[cause[0]], cause[0])
        self.restarts += 1
        resume = (f"from the last complete checkpoint (step {self.checkpoint})"
                  if self.checkpoint is not None else "(no complete checkpoint was recorded)")  # fmt: skip
        lines.insert(0, f"restart {self.restarts} of {self.max_restarts}: {what}")
        lines.append(f"starting {_ranks(self.ranks)} again {resume}")
        return True, lines

    def _charge(self, slot: int, rank: int) -> list[str]:
        count = self.failures[slot] = self.failures.get(slot, 0) + 1
        if count < self.slot_failures:
            return []
        limit = f"{count} failure{'s' if count > 1 else ''} (--slot-failures {self.slot_failures})"
        if self.ranks - 1 < self.min_ranks:
            return [f"slot {slot} (rank {rank}) has had {limit}, but {_ranks(self.ranks - 1)} "
                    f"would be fewer than --min-ranks {self.min_ranks}: keeping {self.ranks}"]  # fmt: skip
        self.slots.remove(slot)
        return [f"slot {slot} (rank {rank}) has had {limit}: counting it gone; the job shrinks "
                f"to {_ranks(self.ranks)} (--min-ranks {self.min_ranks})"]  # fmt: skip


def _ranks(count: int) -> str:
    return f"{count} rank{'' if count == 1 else 's'}"
