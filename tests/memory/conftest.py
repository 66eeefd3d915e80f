"""Every test here counts memory: counting is off unless asked for."""

import pytest

from buildingai import memory


@pytest.fixture(autouse=True)
def tracking():
    with memory.tracking():
        yield
