"""The parameter shapes a checkpoint's config would build, found without allocating them here.

A checkpoint is a file from elsewhere: its config may describe layers far wider than the tensors
it stores (a 1 KB file whose config asks for 12000-wide layers), and building that model would
allocate and initialise gigabytes before ``load_state_dict`` could report the mismatch. So the
model is first built in a forked child process whose address space is capped at what the stored
tensors justify (``budget_bytes``); the child reports ``{name: shape}`` of its ``state_dict`` or
that it ran out of room, and exits. Only a config whose shapes match the stored tensors is then
built in this process.

The probe needs ``fork`` and ``RLIMIT_AS`` (Linux); elsewhere ``probe_shapes`` returns None and
the caller builds the model directly.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable

PROBE_TIMEOUT_S = 60.0


def _address_space_bytes() -> int | None:
    """This process's virtual memory size, from /proc (Linux); None where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _memory_error_in(error: BaseException) -> MemoryError | None:
    """The MemoryError ``error`` is or was raised from (a registry may wrap it in a config
    error naming the section), or None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, MemoryError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def can_probe() -> bool:
    if not hasattr(os, "fork") or sys.platform != "linux":
        return False
    try:
        import resource  # noqa: F401
    except ImportError:
        return False
    return _address_space_bytes() is not None


def probe_shapes(build: Callable[[], dict], budget_bytes: int) -> dict | None:
    """Run ``build()`` (returns ``{name: shape}``) in a child limited to ``budget_bytes`` more
    address space than this process has. Returns ``{"shapes": {...}}``, ``{"memory": reason}``
    when the child ran out of room, ``{"error": reason}`` when ``build`` raised, or None where
    no probe can run (not Linux)."""
    if not can_probe():
        return None
    import resource

    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # the child only builds and reports, then exits
        warnings.simplefilter("ignore", DeprecationWarning)  # fork in a threaded process
        pid = os.fork()
    if pid == 0:  # the child: build, report on the pipe, exit without running any cleanup
        os.close(read_end)
        try:
            limit = _address_space_bytes() + budget_bytes
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            report = {"shapes": build()}
        except BaseException as error:  # noqa: BLE001 - reported to the parent, one line
            memory = _memory_error_in(error)
            if memory is not None:
                report = {"memory": " ".join(str(memory).split())}
            else:
                report = {"error": " ".join(f"{type(error).__name__}: {error}".split())}
        try:
            data = memoryview(json.dumps(report).encode())
            while data:
                data = data[os.write(write_end, data) :]
        finally:
            os._exit(0)
    os.close(write_end)
    data, timed_out = b"", False
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                timed_out = True
                break
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_end)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"error": f"building it took over {PROBE_TIMEOUT_S:g} s in the shape probe"}
    try:
        return json.loads(data)
    except ValueError:  # killed before reporting: out of memory, most likely
        code = os.waitstatus_to_exitcode(status)
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return {"memory": f"the probe process ended ({how}) before reporting"}
