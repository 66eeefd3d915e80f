"""Small update blocks in these tests, so modest arrays already run through several blocks
(including a partial last one) without making the suite slow."""

import pytest

from buildingai.optim import optimizer as optimizer_module


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(optimizer_module, "BLOCK_SIZE", 4096)
    monkeypatch.setattr(optimizer_module, "WHOLE_SIZE", 4096)
