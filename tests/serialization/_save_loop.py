"""Save a large checkpoint to one path over and over, announcing each save on stdout.

The crash test runs this in a child process and kills it with SIGKILL in the middle of a save.
Usage: python _save_loop.py PATH MEGABYTES
"""

import sys
import time

import numpy as np

from buildingai.serialization import save

path, megabytes = sys.argv[1], int(sys.argv[2])
big = np.zeros(megabytes * 2**20 // 4, dtype=np.float32)
step = 0
while True:
    big[0] = big[big.size // 2] = big[-1] = step  # each save differs from the one before
    print(f"saving {step}", flush=True)
    start = time.perf_counter()
    save({"big": big, "step": step, "marker": np.full(3, step)}, path)
    print(f"saved {step} in {time.perf_counter() - start:.3f}s", flush=True)
    step += 1
