"""Small update blocks in these tests, so modest arrays already run through several blocks
(including a partial last one) without making the suite slow; ``both_ways`` runs a test on the
textbook updates and again on the accelerated step. PyTorch's reference steps run on one
thread (``torch_on_one_thread``)."""

import pytest

import buildingai as bai
from buildingai.accel import optimizers as accelerated

try:
    import torch
except ImportError:  # the tests that compare with PyTorch skip or fail on their own
    torch = None


@pytest.fixture(autouse=True, scope="package")
def torch_on_one_thread():
    """PyTorch's optimizer steps are elementwise: the same values on any number of threads. A
    team of two meets at every op on the 40000-element parameter, and waits there whenever the
    second core is busy (BLAS threads spinning, other processes): on one thread it does not."""
    if torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


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
