"""Read back what the trackers wrote offline: W&B's run file and TensorBoard's event files."""

from __future__ import annotations

import struct
from pathlib import Path

WANDB_BLOCK = 32768  # the run file is a LevelDB-style log of 32 KiB blocks
WANDB_HEADER = 7  # ":W&B", magic, version
RECORD_HEADER = 7  # crc32 (4), length (2), kind (1)
FULL, LAST = 1, 4


def wandb_records(path: Path) -> list:
    """Every protobuf ``Record`` in an offline ``run-*.wandb`` file."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    position, pending, records = WANDB_HEADER, b"", []
    while position + RECORD_HEADER <= len(data):
        left = WANDB_BLOCK - position % WANDB_BLOCK
        if left < RECORD_HEADER:  # the block's tail is padding
            position += left
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + RECORD_HEADER])
        if length == 0 and kind == 0:
            position += left
            continue
        start = position + RECORD_HEADER
        pending += data[start : start + length]
        position = start + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def wandb_history(path: Path) -> list[dict]:
    """The rows ``wandb.log`` wrote, as ``{key: value}`` (values JSON-decoded)."""
    import json

    rows = []
    for record in wandb_records(path):
        if record.WhichOneof("record_type") == "history":
            rows.append({
                item.key or "/".join(item.nested_key): json.loads(item.value_json)
                for item in record.history.item
            })  # fmt: skip
    return rows


def tensorboard_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` from every event file under ``logdir``."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(Path(logdir).rglob("events.out.tfevents.*")):
        data, position = path.read_bytes(), 0
        while position + 12 <= len(data):  # length (8), its crc (4), payload, payload crc (4)
            (length,) = struct.unpack("<Q", data[position : position + 8])
            payload = data[position + 12 : position + 12 + length]
            position += 12 + length + 4
            event = event_pb2.Event()
            event.ParseFromString(payload)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars
