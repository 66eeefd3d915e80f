"""Kernels made per geometry (register tiles and the loops over them) are found in numba's
on-disk cache by the next process (``compiled/disk_cache.py``): a process that runs the same
convolutions as an earlier one compiles none of BuildingAI's kernels again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[3]

# Every direct convolution twin (same-size, no padding, other padding, 1x1; forward, input
# and weight gradients), stride 2, im2col and the Winograd weight gradient's transforms, at one
# and two threads; then prints which of
# BuildingAI's functions numba compiled (a function loaded from the cache is not compiled).
_CONVOLUTIONS = """
import json, sys
import numpy as np
from numba.core import compiler

compiled = []
original = compiler.compile_extra

def counting(typingctx, targetctx, func, *args, **kwargs):
    compiled.append(f"{func.__module__}.{func.__qualname__}")
    return original(typingctx, targetctx, func, *args, **kwargs)

compiler.compile_extra = counting

import buildingai as bai
import buildingai.nn.functional as F

bai.accel.enable(quiet=True)
rng = np.random.default_rng(0)
for threads in (1, 2):
    bai.set_num_threads(threads)
    for size, stride, kernel, padding in [(16, 1, 3, 1), (16, 1, 3, 0), (16, 1, 3, 2),
                                          (16, 1, 1, 0), (16, 2, 3, 1), (32, 1, 3, 1),
                                          (32, 2, 3, 1), (8, 1, 3, 1)]:
        x = bai.tensor(rng.standard_normal((4, 16, size, size)).astype(np.float32),
                       requires_grad=True)
        w = bai.tensor(rng.standard_normal((16, 16, kernel, kernel)).astype(np.float32),
                       requires_grad=True)
        y = F.conv2d(x, w, stride=stride, padding=padding)
        y.backward(bai.tensor(rng.standard_normal(y.shape).astype(np.float32)))
    x = bai.tensor(rng.standard_normal((4, 64, 8, 8)).astype(np.float32))
    w = bai.tensor(rng.standard_normal((64, 64, 3, 3)).astype(np.float32), requires_grad=True)
    F.conv2d(x, w, padding=1).sum().backward()  # the Winograd weight gradient
print(json.dumps({"compiled": [name for name in compiled if name.startswith("buildingai.")]}))
"""


def _run(cache: Path) -> list[str]:
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", _CONVOLUTIONS], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["compiled"]


@pytest.mark.slow
def test_a_second_process_compiles_no_convolution_kernel(tmp_path):
    first = _run(tmp_path)
    assert any("conv" in name for name in first)  # the first process compiled the conv loops
    assert any("winograd" in name for name in first)
    assert _run(tmp_path) == []


def test_an_intrinsic_s_key_names_its_sizes_and_the_sources():
    from numba.core import types
    from numba.extending import intrinsic

    from buildingai.accel.kernels.compiled import disk_cache

    def make():
        @intrinsic
        def one(typing_context, x):
            return types.float64(x), lambda context, builder, signature, args: args[0]

        return one

    first = disk_cache.keyed(make(), "one", 4, None, True)
    again = disk_cache.keyed(make(), "one", 4, None, True)
    other = disk_cache.keyed(make(), "one", 8, None, True)
    assert (
        first._uuid == again._uuid == f"buildingai.one(4, None, True)@{disk_cache.source_digest()}"
    )
    assert other._uuid != first._uuid
    assert len(disk_cache.source_digest()) == 16
