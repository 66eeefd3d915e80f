"""retain_freed_memory: freed blocks are reused from the heap instead of being mapped afresh."""

import platform
import resource

import numpy as np
import pytest

from buildingai.backend import allocator_settings, retain_freed_memory

glibc_only = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt is glibc's",
)


def _page_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@glibc_only
def test_settings_are_applied_and_reported():
    assert retain_freed_memory()
    settings = allocator_settings()
    assert settings["keep"] == 1 << 30
    assert 1 << 20 <= settings["largest_block"] <= 64 << 20


@glibc_only
def test_a_freed_block_is_reused_without_new_page_faults():
    assert retain_freed_memory()
    # 48 MiB: above glibc's default mmap ceiling (32 MiB), so mapped afresh by default
    size = allocator_settings()["largest_block"] * 3 // 4

    def cycle():
        block = np.empty(size, dtype=np.uint8)
        block.fill(1)  # touch every page
        del block

    cycle()  # the first cycle grows the heap
    before = _page_faults()
    for _ in range(5):
        cycle()
    # with malloc's defaults each cycle maps the block again and faults all of it in (about
    # 500 faults per cycle here with transparent huge pages, thousands without)
    assert _page_faults() - before < 64
