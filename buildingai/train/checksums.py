"""Parameter checksums after every step, so a run can be replayed and checked step by step.

``ChecksumLog`` appends ``{"step": s, "checksum": "..."}`` to ``run_dir/checksums.jsonl``
after each optimizer step; ``buildingai replay`` re-runs steps from a checkpoint and compares.
A checksum is a BLAKE2b digest of every parameter's name, dtype, shape and bytes, so any
changed bit shows.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..nn.module import Module
from .callbacks import Callback, TrainerView

CHECKSUMS = "checksums.jsonl"


def parameter_checksum(model: Module) -> str:
    """A 16-hex-digit digest of ``model``'s parameters (names, dtypes, shapes, bytes)."""
    digest = hashlib.blake2b(digest_size=8)
    for name, parameter in model.named_parameters():
        values = np.ascontiguousarray(parameter.numpy())
        digest.update(f"{name}:{values.dtype.str}:{values.shape};".encode())
        digest.update(values.view(np.uint8).reshape(-1))
    return digest.hexdigest()


def read_checksums(run_dir: str | os.PathLike) -> dict[int, str]:
    """``{step: checksum}`` from ``run_dir/checksums.jsonl`` (empty when there is none)."""
    path = Path(run_dir) / CHECKSUMS
    if not path.exists():
        return {}
    records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {record["step"]: record["checksum"] for record in records}


class ChecksumLog(Callback):
    """Append the parameters' checksum after each step to ``run_dir/checksums.jsonl``; on
    resume, records later than the checkpoint's step are dropped first (the resumed run writes
    them again)."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.path = Path(run_dir) / CHECKSUMS

    def on_fit_start(self, trainer: TrainerView) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            kept = [
                line
                for line in self.path.read_text().splitlines()
                if line.strip() and json.loads(line)["step"] <= trainer.step
            ]
            self.path.write_text("".join(line + "\n" for line in kept))

    def on_step_end(self, trainer: TrainerView) -> None:
        record = {"step": trainer.step, "checksum": parameter_checksum(trainer.model)}
        with self.path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
