"""The op records are the reference and only the reference: no record reaches for compiled
kernels, threads, BLAS bindings or packing (those are registered from ``buildingai.accel``), and
each has one backward, with no branch on whether a higher-order graph is recorded."""

from __future__ import annotations

import re
from pathlib import Path

OPS = Path(__file__).resolve().parents[2] / "buildingai" / "ops"
SPEED_WORDS = re.compile(r"compiled|threads|blas|packing|numba")


def _lines(pattern: re.Pattern) -> list[str]:
    found = []
    for path in sorted(OPS.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{path.name}:{number}: {line.strip()}")
    return found


def test_no_record_reaches_for_acceleration():
    # grep -nE "compiled|threads|blas|packing|numba" buildingai/ops/*.py
    found = _lines(SPEED_WORDS)
    assert not found, "register the fast path in buildingai/accel instead:\n" + "\n".join(found)


def test_one_backward_per_record():
    found = _lines(re.compile(r"ctx\.create_graph"))
    assert not found, (
        "a fused first-order gradient is a gradient record of its own, with its own backward:\n"
        + "\n".join(found)
    )


def test_the_search_itself_finds_what_it_looks_for(tmp_path):
    assert SPEED_WORDS.search("from ..accel.kernels import compiled")
    assert SPEED_WORDS.search("threads = get_num_threads()")
    assert not SPEED_WORDS.search("return xp.matmul(a, b)")
