"""Training that survives a lost rank, under ``buildingai launch --max-restarts K``.

When a rank dies, the launcher starts the whole job again (see ``launch.py``); the script then
finds the last complete checkpoint and continues from it. This module holds the script's side:

    from buildingai.distributed import elastic

    checkpoints = elastic.CheckpointFolder("ckpt")
    latest = checkpoints.latest()             # None on a fresh start
    if latest is not None:
        state = latest.load()                 # rank 0's file: replicated state loads anywhere
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        sampler.load_state_dict(state["sampler"])
    for step in range(latest.step if latest else 0, steps):
        elastic.record_step(step)             # the launcher names this step if the rank dies
        ...
        if (step + 1) % 5 == 0:
            checkpoints.save(step + 1, {"model": ..., "optimizer": ..., "sampler": ...})

A checkpoint is a folder ``step-00000005`` holding one file per rank (``rank0.safetensors``, ...,
each written atomically by ``buildingai.save``) and ``complete.json``, which rank 0 writes,
atomically too, only after a barrier has seen every rank's file on disk. ``latest()`` reads only
folders with that file: a checkpoint that a dying rank left half written is never resumed from.
A complete checkpoint is never overwritten: saving the same step again raises.

On several hosts the folder must be on a filesystem every host sees.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import CheckpointError
from ..serialization import load as _load
from ..serialization import save as _save
from ..serialization._atomic import write_atomically
from ._restarts import MAX_RESTARTS_VARIABLE, RESTART_VARIABLE
from .collectives import barrier
from .group import ProcessGroup, get_rank, get_world_size, is_initialized, rank_status

__all__ = ["CheckpointFolder", "SavedCheckpoint", "record_step", "restart_count",
           "MAX_RESTARTS_VARIABLE", "RESTART_VARIABLE"]  # fmt: skip
MANIFEST = "complete.json"
_STEP_FOLDER = re.compile(r"^step-(\d{8,})$")


def restart_count() -> int:
    """How many times ``buildingai launch`` has restarted this job (0 on the first start, and
    outside the launcher)."""
    value = os.environ.get(RESTART_VARIABLE, "")
    return int(value) if value.isdigit() else 0


def record_step(step: int) -> None:
    """Note that this rank is working on training step ``step``: if the rank dies, the launcher
    names the step in its report and restart line. Costs one memory store; nothing outside the
    launcher."""
    status = rank_status()
    if status is not None:
        status.at_step(int(step))


@dataclass(frozen=True)
class SavedCheckpoint:
    """A complete checkpoint: its folder, the step it was taken at, the world size that wrote
    it and its files (one per rank, in rank order)."""

    folder: Path
    step: int
    world_size: int
    files: tuple[str, ...]

    def load(self, rank: int = 0, map_location=None):
        """What rank ``rank`` saved (rank 0 by default: with data parallelism every rank holds
        the same model and optimizer, so rank 0's file resumes any world size)."""
        if not 0 <= rank < self.world_size:
            raise CheckpointError(
                f"[elastic] {self.folder} was written by {self.world_size} ranks; there is no "
                f"rank {rank} in it",
                help=f"load a rank between 0 and {self.world_size - 1}, or load_all()",
            )
        return _load(self.folder / self.files[rank], map_location=map_location)

    def load_all(self, map_location=None) -> list:
        """Every rank's state, in rank order (what ``ShardedOptimizer.load_state_dict`` takes
        to resume sharded state at any world size)."""
        return [_load(self.folder / name, map_location=map_location) for name in self.files]


class CheckpointFolder:
    """Checkpoints that a restarted job resumes from: every rank saves its state, rank 0 seals
    the step once all are on disk.

    Args:
        path: the folder (created when missing); on several hosts, a shared filesystem.
        keep_last: after sealing a checkpoint, delete the complete ones older than the newest
            ``keep_last`` (None keeps every one).
        group: the ranks that save together (the world by default).
    """

    def __init__(self, path: str | os.PathLike, keep_last: int | None = None,
                 group: ProcessGroup | None = None) -> None:  # fmt: skip
        if keep_last is not None and keep_last < 1:
            raise CheckpointError(f"[elastic] keep_last must be >= 1 or None, got {keep_last}")
        self.path, self.keep_last, self.group = Path(path), keep_last, group
        self.path.mkdir(parents=True, exist_ok=True)

    def folder_of(self, step: int) -> Path:
        return self.path / f"step-{int(step):08d}"

    def complete(self) -> list[SavedCheckpoint]:
        """Every complete checkpoint in the folder, oldest first."""
        found = []
        for entry in self.path.iterdir():
            match = _STEP_FOLDER.match(entry.name)
            if match and (entry / MANIFEST).is_file():
                found.append(_read_manifest(entry, int(match.group(1))))
        return sorted(found, key=lambda saved: saved.step)

    def latest(self) -> SavedCheckpoint | None:
        """The newest complete checkpoint, or None when there is none yet."""
        found = self.complete()
        return found[-1] if found else None

    def save(self, step: int, state) -> Path:
        """Write this rank's ``state`` (anything ``buildingai.save`` takes) for ``step``; every
        rank of the group must call it. Returns the checkpoint's folder, complete on return on
        rank 0 (the other ranks return once every file is on disk)."""
        rank, size = self._rank_and_size()
        folder = self.folder_of(step)
        if (folder / MANIFEST).is_file():
            raise CheckpointError(
                f"[elastic] {folder} already holds a complete checkpoint of step {step}; it is "
                "never overwritten",
                help="resume from it (CheckpointFolder.latest()), or save into another folder",
            )
        folder.mkdir(parents=True, exist_ok=True)
        _save(state, folder / _rank_file(rank))
        if size > 1:
            barrier(self.group)  # every rank's file is on disk (each save fsyncs and renames)
        if rank == 0:
            self._seal(folder, int(step), size)
        return folder

    def _rank_and_size(self) -> tuple[int, int]:
        if self.group is None and not is_initialized():
            return 0, 1  # a plain single process: no process group needed
        return get_rank(self.group), get_world_size(self.group)

    def _seal(self, folder: Path, step: int, size: int) -> None:
        files = [_rank_file(rank) for rank in range(size)]
        for stale in folder.glob("rank*.safetensors"):  # from a larger world's unsealed attempt
            if stale.name not in files:
                stale.unlink(missing_ok=True)
        manifest = {"step": step, "world_size": size, "files": files}
        data = json.dumps(manifest, indent=1).encode()
        write_atomically(str(folder / MANIFEST), lambda file: file.write(data))
        status = rank_status()
        if status is not None:
            status.checkpointed(step)
        if self.keep_last is not None:
            for old in self.complete()[: -self.keep_last]:
                (old.folder / MANIFEST).unlink(missing_ok=True)  # no longer complete, then gone
                shutil.rmtree(old.folder, ignore_errors=True)


def _rank_file(rank: int) -> str:
    return f"rank{rank}.safetensors"


def _read_manifest(folder: Path, step: int) -> SavedCheckpoint:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        files = tuple(manifest["files"])
        world_size = int(manifest["world_size"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CheckpointError(
            f"[elastic] {path} is not a checkpoint manifest ({error})",
            help="it is written atomically by CheckpointFolder.save; remove the folder if "
            "something else wrote it",
        ) from None
    missing = [name for name in files if not (folder / name).is_file()]
    if missing or len(files) != world_size:
        raise CheckpointError(
            f"[elastic] {folder} is sealed but lacks {', '.join(missing) or 'rank files'}",
            help="a file was removed after the checkpoint was complete; remove this folder to "
            "resume from the one before",
        )
    return SavedCheckpoint(folder, step, world_size, files)
