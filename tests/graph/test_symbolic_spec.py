"""TensorSpec, symbolic ints (sizes that carry their DimExpr) and deciding size comparisons."""

import numpy as np
import pytest

import buildingai.graph
from buildingai.errors import ArgumentError
from buildingai.graph import DimExpr, TensorSpec, symbolic
from buildingai.graph.symbolic import (
    DerivedFloat,
    DerivedInt,
    SymbolicInt,
    decide,
    is_symbolic,
    resolve,
)
from buildingai.ops import abstract
from buildingai.ops.abstract import SymbolicSizeError


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


def test_one_dim_expr_class():
    assert buildingai.graph.DimExpr is abstract.DimExpr


B = DimExpr(("b",))
S = DimExpr(("s",))


def _b(sample=13):
    return SymbolicInt(sample, B)


def test_symbolic_ints_act_as_their_sample_and_carry_the_expression():
    b, s = _b(), SymbolicInt(17, S)
    assert int(b) == 13 and [0] * 3 * b == [0] * 39 and range(b)[-1] == 12
    assert (b * 2 + 1).expression == DimExpr(("b",), 2, 1) and b * 2 + 1 == SymbolicInt(
        27, B * 2 + 1
    )
    assert (b - 1).expression == B - 1 and int(b - 1) == 12
    assert (b * s).expression == DimExpr(("b", "s")) and int(b * s) == 221
    assert ((b * 4) // 2).expression == B * 2
    assert (-b).expression == -B
    assert type(b + 0.5) is DerivedFloat  # a float: never a size


@pytest.mark.parametrize(
    "compute, value",
    [
        (lambda b: b // 2, 6),
        (lambda b: b % 3, 1),
        (lambda b: (b + 1) * b, 182),
        (lambda b: 1 / b, 1 / 13),
    ],
)
def test_inexpressible_results_are_marked_as_derived_with_their_origin(compute, value):
    result = compute(_b())
    assert isinstance(result, (DerivedInt, DerivedFloat))
    assert float(result) == pytest.approx(value)
    assert "b" in result.origin and "test_symbolic_spec.py" in result.origin
    assert isinstance(result + 1, (DerivedInt, DerivedFloat))  # the mark survives arithmetic


def test_comparisons_are_answered_only_when_every_size_agrees(monkeypatch):
    monkeypatch.setattr(symbolic.tracing, "active", True)  # as while freezing
    b = _b()
    assert b > 0 and b >= 1 and not b < 1 and b != 0 and b + 1 > b and b == SymbolicInt(13, B)
    assert b != -1 and (b == -1) is False  # -1 as in reshape(b, -1)
    assert b * 2 != b and (b * 2 == b) is False
    assert SymbolicInt(13, B) != SymbolicInt(17, S)  # different symbols: different sizes
    for question in (
        lambda: b > 2,
        lambda: b == 13,
        lambda: b < SymbolicInt(17, S),
        lambda: b // 2 > 1,
    ):
        with pytest.raises(SymbolicSizeError, match="cannot branch on a symbolic size"):
            question()


def test_outside_a_trace_a_symbolic_int_compares_as_its_sample():
    b = _b()  # e.g. kept in a cache during a freeze
    assert b == 13 and b > 2 and {13: "found"}[b] == "found"


@pytest.mark.parametrize(
    "a, b, symbol, answer",
    [
        (B, 0, ">", True),
        (B, 1, ">=", True),
        (B, 1, ">", None),
        (B - 1, 0, ">=", True),
        (-B, 0, "<", True),
        (B * 2, B, ">", True),
        (B, S, "==", False),
        (B, S, "<", None),
        (3, 4, "<", True),
    ],
)
def test_decide(a, b, symbol, answer):
    assert decide(a, b, symbol) is answer


def test_resolve_and_is_symbolic():
    b = DimExpr(("b",))
    attrs = {"shape": (b, -1), "index": (slice(None, DimExpr(("b",), 1, -1)),), "k": 3}
    assert is_symbolic(attrs) and not is_symbolic({"shape": (2, 3)})
    assert resolve(attrs, {"b": 4}) == {"shape": (4, -1), "index": (slice(None, 3),), "k": 3}
    assert repr(DimExpr(("s", "b"), 2, -1)) == "2*b*s-1"
