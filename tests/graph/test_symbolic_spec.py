"""TensorSpec and symbolic-size fitting."""

import numpy as np
import pytest

from buildingai.errors import ArgumentError
from buildingai.graph import DimExpr, TensorSpec
from buildingai.graph.symbolic import fit, is_symbolic, resolve


def test_spec_symbols_and_dtype():
    spec = TensorSpec((None, "seq", 4), "int64", name="tokens")
    assert spec.symbols == ("batch", "seq", None)
    assert spec.dtype == np.dtype("int64")
    assert "tokens" in repr(spec) and "None" in repr(spec)
    assert TensorSpec((3, None)).symbols == (None, "dim1")


@pytest.mark.parametrize("bad", [(-1, 3), (2.5,), ([1],)])
def test_spec_rejects_bad_dims(bad):
    with pytest.raises(ArgumentError, match="TensorSpec shape"):
        TensorSpec(bad)


SAMPLES = [{"b": 2, "s": 7}, {"b": 3, "s": 11}, {"b": 5, "s": 13}]


@pytest.mark.parametrize(
    "values, expected",
    [
        ([2, 3, 5], DimExpr(("b",))),
        ([14, 33, 65], DimExpr(("b", "s"))),
        ([4, 6, 10], DimExpr(("b",), 2)),
        ([6, 10, 12], DimExpr(("s",), 1, -1)),
        ([42, 99, 195], DimExpr(("b", "s"), 3)),
    ],
)
def test_fit_finds_the_simplest_expression(values, expected):
    assert fit(values, SAMPLES, ["b", "s"]) == expected


def test_fit_refuses_what_it_cannot_explain():
    assert fit([1, 1, 2], SAMPLES, ["b", "s"]) is None  # b // 2
    assert fit([4, 9, 25], SAMPLES, ["b", "s"]) is None  # b * b


def test_resolve_and_is_symbolic():
    b = DimExpr(("b",))
    attrs = {"shape": (b, -1), "index": (slice(None, DimExpr(("b",), 1, -1)),), "k": 3}
    assert is_symbolic(attrs) and not is_symbolic({"shape": (2, 3)})
    assert resolve(attrs, {"b": 4}) == {"shape": (4, -1), "index": (slice(None, 3),), "k": 3}
    assert repr(DimExpr(("s", "b"), 2, -1)) == "2*b*s-1"
