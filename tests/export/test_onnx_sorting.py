"""ONNX export of the ordering and triangle records (sort_indices as TopK, gather_elements as
GatherElements, tril/triu as Trilu): eager == frozen == onnxruntime at two batch sizes, the
exported graph computing positions from its input."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import freeze

from .test_onnx_ops import _make, _spec_of, floats, ints

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import check_onnx, export_onnx, run_onnxruntime  # noqa: E402

CASES = {
    "topk_values": (lambda x: bai.topk(x, 2).values, [floats(5)]),
    "topk_indices_smallest": (lambda x: bai.topk(x, 3, dim=1, largest=False).indices, [floats(4)]),
    "sort_descending": (lambda x: bai.sort(x, dim=-1, descending=True).values * 2, [floats(3, 4)]),
    "sort_along_the_batch": (lambda x: bai.sort(x, dim=0).values, [floats(3)]),
    "argsort": (lambda x: bai.argsort(x, dim=1), [floats(6)]),
    "argsort_ints": (lambda x: bai.argsort(x, dim=1, descending=True), [ints(6, high=1000)]),
    "kthvalue": (lambda x: bai.kthvalue(x, 2, dim=1).values, [floats(5)]),
    "gather_elements": (lambda x: bai.topk(x, 2).values + bai.topk(-x, 1).values, [floats(5)]),
    "tril": (lambda x: bai.tril(x), [floats(4, 4)]),
    "triu_offset": (lambda x: x.triu(1) + x.tril(-2), [floats(3, 5)]),
    "tril_ints": (lambda x: x.tril(1), [ints(3, 3, high=9)]),
    "triu_int32": (lambda x: x.astype("int32").triu(), [ints(3, 3, high=9)]),
    "triu_bool": (lambda x: (x > 0.5).triu(), [floats(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ordering_and_triangles_export(name):
    function, kinds = CASES[name]
    static = freeze(function, [_spec_of(k) for k in kinds])
    assert not check_onnx(static)
    model = export_onnx(static)
    for batch in (2, 5):
        # distinct values: the order of ties is the one thing the two runtimes may differ in
        rng = np.random.default_rng(batch)
        arrays = [_make(k, batch, rng) for k in kinds]
        eager = function(*[bai.tensor(a) for a in arrays]).numpy()
        frozen = static(*arrays).numpy()
        exported = run_onnxruntime(model, *arrays)[0]
        np.testing.assert_array_equal(frozen, eager)
        assert exported.dtype == eager.dtype and exported.shape == eager.shape, name
        np.testing.assert_allclose(exported, eager, rtol=1e-6, atol=1e-6)
