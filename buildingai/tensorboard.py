"""TensorBoard event files through tensorboardX (``pip install 'buildingai[tensorboard]'``)::

    from buildingai.tensorboard import SummaryWriter
    writer = SummaryWriter("runs/exp1")
    writer.add_scalars_from(metrics, step)   # or writer.add_scalar("loss", loss, step)
    writer.close()

``tensorboard --logdir runs`` shows them. The ``TensorBoardLogger`` callback
(``buildingai.train.trackers``) writes a Trainer's logged numbers the same way.
"""

from __future__ import annotations

import os
from typing import Any

from .utils.extras import require
from .utils.scalars import as_number, numbers


class SummaryWriter:
    """tensorboardX's ``SummaryWriter`` that accepts tensors wherever it takes numbers or
    arrays."""

    def __init__(self, logdir: str | os.PathLike | None = None, **kwargs) -> None:
        library = require("tensorboardX", "tensorboard", "buildingai.tensorboard")
        self.writer = library.SummaryWriter(logdir=None if logdir is None else str(logdir),
                                            **kwargs)  # fmt: skip
        self.logdir = self.writer.logdir

    def add_scalar(self, tag: str, value: Any, step: int | None = None) -> None:
        self.writer.add_scalar(tag, as_number(value), global_step=step)

    def add_scalars_from(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """One scalar per ``{tag: value}`` entry, all at ``step``."""
        for tag, value in numbers(metrics).items():
            self.writer.add_scalar(tag, value, global_step=step)

    def add_histogram(self, tag: str, values: Any, step: int | None = None) -> None:
        """A histogram of a tensor's or array's values (a weight, a gradient)."""
        array = values.numpy() if hasattr(values, "numpy") else values
        self.writer.add_histogram(tag, array, global_step=step)

    def add_text(self, tag: str, text: str, step: int | None = None) -> None:
        self.writer.add_text(tag, text, global_step=step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
