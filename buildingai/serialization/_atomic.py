"""Atomic file replacement: a crash mid-save never destroys the last good checkpoint.

The new file is written under a temporary name in the same folder (so the final rename stays on one
filesystem), flushed to the disk with ``fsync``, and moved over the old one with ``os.replace``,
which POSIX and Windows perform atomically. The folder is then fsynced so that the rename itself
survives a power cut. A reader therefore sees either the old file or the new one, never a mix.

A process killed mid-write leaves its temporary file behind; it is named
``.<name>.<host>.<pid>.<random>.tmp``, never matches the checkpoint's own name, and the next save
to the same path removes the ones whose process (on this host) is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
from collections.abc import Callable
from typing import BinaryIO

from ..errors import CheckpointError

TEMP_SUFFIX = ".tmp"


def _host() -> str:
    return socket.gethostname().replace(".", "_") or "host"


def temp_prefix(path: str) -> str:
    """The start of the name of every temporary file written for ``path``."""
    return f".{os.path.basename(path)}."


def temp_name(path: str, pid: int) -> str:
    """A fresh temporary file name for a save to ``path`` by process ``pid`` on this host."""
    return f"{temp_prefix(path)}{_host()}.{pid}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def write_atomically(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(file)`` to produce the new file's bytes, then move it to ``path`` durably.

    The new file gets the permissions of the file it replaces (a private checkpoint stays
    private), or the usual ones under the umask when there is none.

    On any exception (including KeyboardInterrupt) the temporary file is removed, ``path`` is left
    as it was, and the exception propagates (an OSError as a CheckpointError).
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CheckpointError(
            f"cannot save to {path!r}: the folder {folder!r} does not exist",
            help="create it first, e.g. os.makedirs(folder, exist_ok=True)",
        )
    if os.path.isdir(path):
        raise CheckpointError(f"cannot save to {path!r}: it is a directory")
    remove_stale_temporaries(path)
    temp_path = os.path.join(folder, temp_name(path, os.getpid()))
    try:
        with open(temp_path, "xb") as file:  # "x": the name is ours alone
            if os.path.exists(path):
                os.chmod(temp_path, stat.S_IMODE(os.stat(path).st_mode))
            write(file)
            file.flush()
            os.fsync(file.fileno())  # the bytes are on the disk before the name points at them
        os.replace(temp_path, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        if isinstance(exc, OSError):
            raise CheckpointError(
                f"cannot save to {path!r}: {exc}; the previous file there is untouched",
                help="check free disk space and write permission on the folder",
            ) from exc
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    """Make the rename durable. Windows cannot open folders; there the rename is all we can do."""
    if os.name == "nt":  # pragma: no cover - platform-specific
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError:  # pragma: no cover - some filesystems refuse to fsync folders
        pass
    finally:
        os.close(descriptor)


def remove_stale_temporaries(path: str) -> list[str]:
    """Delete temporary files that a killed save to ``path`` left behind; returns their names.

    Only files written on this host by a process that no longer exists are removed, so a save in
    progress in another process is never disturbed.
    """
    folder = os.path.dirname(os.path.abspath(path))
    prefix, host = temp_prefix(path), _host()
    removed = []
    for name in os.listdir(folder):
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        parts = name[len(prefix) : -len(TEMP_SUFFIX)].split(".")
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        if _process_alive(int(parts[1])):
            continue
        with contextlib.suppress(OSError):  # another save may have removed it first
            os.unlink(os.path.join(folder, name))
            removed.append(name)
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill would terminate the process
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists but belongs to someone else (or we cannot tell): leave it
    return True
