"""Small update blocks in these tests, so modest arrays already run through several blocks
(including a partial last one) without making the suite slow; ``both_ways`` runs a test on the
textbook updates and again on the accelerated step."""

import pytest

import buildingai as bai
from buildingai.accel import optimizers as accelerated


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(accelerated, "BLOCK_SIZE", 4096)
    monkeypatch.setattr(accelerated, "WHOLE_SIZE", 4096)


@pytest.fixture(params=["textbook", "accelerated"])
def both_ways(request):
    """Run the test with acceleration off (each ``update`` as written), then on (the fused
    forms, packed small parameters)."""
    with bai.accel.enabled(request.param == "accelerated"):
        yield request.param
