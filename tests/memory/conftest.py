"""Every test here counts memory: counting is off unless asked for. The counts are taken after
a garbage collection; what existed before the test is kept out of the collector meanwhile
(``gc.freeze``), so that each collection walks the test's own objects, not the heap of every
test before it (over a second a collection late in the suite)."""

import gc

import pytest

from buildingai import memory


@pytest.fixture(autouse=True)
def earlier_objects_frozen():
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def tracking(earlier_objects_frozen):
    with memory.tracking():
        yield
