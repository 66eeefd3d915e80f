"""A job that goes wrong on purpose; argv[1] says how. The other ranks must raise within the
timeout naming the rank and the collective (and the launcher must exit non-zero), never hang."""

import os
import signal
import sys
import time

import numpy as np

import buildingai as bai
from buildingai import distributed as dist

mode = sys.argv[1]
dist.init_process_group(timeout=float(sys.argv[2]) if len(sys.argv) > 2 else 3.0,
                        debug=mode == "mismatch")  # fmt: skip
rank = dist.get_rank()
values = bai.tensor(np.ones(4, np.float32))
dist.all_reduce(values)  # one collective that works first
print(f"rank {rank} passed the first all_reduce", flush=True)

if rank == 1 and mode == "killed":
    time.sleep(0.5)  # rank 0 is waiting in the next all_reduce by now
    os.kill(os.getpid(), signal.SIGKILL)
if rank == 1 and mode in ("vanishes", "dies"):
    time.sleep(0.5)
    os._exit(0 if mode == "vanishes" else 9)  # gone without a trace: no exception, no finalize
if rank == 1 and mode == "stalled":
    time.sleep(30)  # stops calling collectives (bounded, so nothing outlives the test)
if rank == 1 and mode == "raises":
    raise ValueError("rank 1 fails in its own code")
if rank == 1 and mode == "exits":
    sys.exit(3)
started = time.monotonic()
try:
    if mode == "mismatch" and rank == 1:
        dist.broadcast(bai.tensor(np.ones(5, np.float32)), src=0)
    else:
        dist.all_reduce(values)
except dist.DistributedError as error:
    # the report also goes to a file: a launcher may stop forwarding output once a rank died
    # (written whole, then renamed: the launcher may kill this rank mid-write once another failed)
    if len(sys.argv) > 3:
        path = os.path.join(sys.argv[3], f"rank{rank}.txt")
        with open(path + ".partial", "w") as report:
            report.write(f"{time.monotonic() - started:.2f}\n{type(error).__name__}: {error}")
        os.replace(path + ".partial", path)
        if mode == "mismatch":  # every rank raises at once: let the others write their reports
            time.sleep(1.0)  # before this rank's exit aborts the job and kills them
    raise
print(f"rank {rank} finished", flush=True)
