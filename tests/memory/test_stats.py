"""memory.stats / reset_peak / summary: the bytes held by tensors' buffers, counted once per
buffer, dropped when freed, by op and by module."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import buildingai as bai
from buildingai import memory, nn


def test_stats_refuse_to_answer_while_tracking_is_off():
    with memory.tracking():
        pass
    memory.stop_tracking()  # closes the fixture's request too
    try:
        assert not memory.is_tracking()
        with pytest.raises(bai.BuildingAIError, match="tracking is off"):
            memory.stats()
        before = len(_live())
        kept = bai.Tensor(np.ones(1000, np.float32)) * 2.0  # made untracked: not counted
        assert len(_live()) == before and kept.shape == (1000,)
    finally:
        memory.start_tracking()


def _live() -> list:
    from buildingai.backend import accounting

    return accounting.live_buffers()


def _current() -> int:
    gc.collect()
    return memory.stats()["current"]


def test_counts_each_buffer_once_and_drops_it_when_freed():
    base = _current()
    x = bai.Tensor(np.ones((100, 100), np.float32))  # 40,000 bytes
    assert _current() - base == 40_000
    y = x * 2.0
    view = y.reshape(-1)[:10]  # a view: no new memory
    same = bai.Tensor(x.array)  # the same buffer under another tensor
    assert _current() - base == 80_000
    stats = memory.stats()
    assert stats["devices"]["cpu"]["current"] - base == 80_000
    del y
    assert _current() - base == 80_000  # the view still holds y's buffer
    del view
    assert _current() - base == 40_000
    del x, same
    assert _current() == base


def test_peak_and_reset_peak():
    base = _current()
    memory.reset_peak()
    assert memory.stats()["peak"] == base
    big = bai.Tensor(np.zeros(250_000, np.float32))  # 1,000,000 bytes
    doubled = big + 1.0
    del big, doubled
    stats = memory.stats()
    assert stats["peak"] - base == 2_000_000 and _current() == base
    assert stats["devices"]["cpu"]["peak"] - base == 2_000_000
    memory.reset_peak()
    assert memory.stats()["peak"] == _current()


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 256)
        self.fc2 = nn.Linear(256, 8)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def test_summary_by_op_and_module():
    block = _Block()
    x = bai.Tensor(np.ones((64, 16), np.float32))
    out = block(x)  # keeps fc1's output (64 x 256 floats) alive in the graph
    report = memory.summary()
    assert report["by_op"]["linear"] >= 64 * 256 * 4
    assert any(
        path.endswith("fc1") and size >= 64 * 256 * 4 for path, size in report["by_module"].items()
    )
    assert report["current"] == memory.stats()["current"]
    text = str(report)
    assert "by op" in text and "linear" in text and "fc1" in text
    del out


def test_arrays_over_foreign_buffers_count_as_themselves():
    torch = pytest.importorskip("torch")
    base = _current()
    shared = torch.ones(1000).numpy()  # its base is a torch.Tensor
    wrapped = bai.Tensor(shared)
    raw = bai.Tensor(np.frombuffer(bytes(4000), dtype=np.float32))  # its base is a bytes object
    assert _current() - base == 8000
    del wrapped, raw, shared
    assert _current() == base


def test_arrays_a_forward_keeps_for_backward_are_counted():
    norm = nn.LayerNorm(16)
    x = bai.Tensor(np.linspace(0, 1, 4 * 16, dtype=np.float32).reshape(4, 16))
    base = _current()
    out = norm(x)  # keeps the normalised input (and its statistics) on the node for backward
    saved = sum(v.nbytes for v in vars(out._node).values() if isinstance(v, np.ndarray))
    assert saved >= x.nbytes
    assert _current() - base == out.array.nbytes + saved
    assert memory.summary()["by_op"]["layer_norm"] >= out.array.nbytes + saved
    del out
    assert _current() == base
