"""ONNX export of the ordering and triangle records (sort_indices as TopK, gather_elements as
GatherElements, tril/triu as Trilu): eager == frozen == onnxruntime at two batch sizes, the
exported graph computing positions from its input."""

from __future__ import annotations

import pytest

import buildingai as bai

from .test_onnx_ops import agree_across_runtimes, floats, ints

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


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
    # distinct values: the order of ties is the one thing the two runtimes may differ in
    agree_across_runtimes(function, kinds, tolerance=1e-6)
