"""``embedding_grad.sorted`` (``accel/embedding.py``) against the record: the table's gradient
through ``F.embedding`` with acceleration off (the record's ``bincount``) and on (the kernel,
checked to have run), with its compiled twin and with its NumPy form, float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import registry
from buildingai.accel.kernels import compiled

# (indices shape, table rows, width, padding_idx): a batch larger than the table (the
# workload's token table), one as large, a table much larger than the batch, a padding row
CASES = [
    ((16, 64), 65, 128, None),
    ((64,), 64, 128, None),
    ((3, 5), 1000, 7, 2),
    ((200,), 10, 3, 0),
]


def _table_grad(indices, weight, upstream, padding_idx):
    table = bai.tensor(weight, requires_grad=True)
    out = F.embedding(bai.tensor(indices), table, padding_idx=padding_idx)
    (grad,) = bai.grad(out, [table], grad_outputs=bai.tensor(upstream))
    return grad.numpy()


@pytest.fixture
def ran(monkeypatch):
    names = []
    entry = registry.kernel("embedding_grad.sorted")
    run = entry.run

    def spy(*args, **kwargs):
        result = run(*args, **kwargs)
        if result is not NotImplemented:
            names.append(entry.name)
        return result

    monkeypatch.setattr(entry, "run", spy)
    return names


@pytest.mark.parametrize("twins", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_kernel_agrees_with_the_record(case, dtype, twins, ran):
    shape, rows, width, padding_idx = case
    rng = np.random.default_rng(0)
    indices = rng.integers(0, rows, shape)
    weight = rng.standard_normal((rows, width)).astype(dtype)
    upstream = rng.standard_normal(shape + (width,)).astype(dtype)
    with bai.accel.enabled(False):
        reference = _table_grad(indices, weight, upstream, padding_idx)
    with bai.accel.enabled(True):
        previous = compiled.set_enabled(twins)
        try:
            got = _table_grad(indices, weight, upstream, padding_idx)
        finally:
            compiled.set_enabled(previous)
    assert ran == ["embedding_grad.sorted"]
    assert got.dtype == reference.dtype
    tolerance = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, reference, rtol=tolerance, atol=tolerance)
    if padding_idx is not None:
        assert not got[padding_idx].any()
