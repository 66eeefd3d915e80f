"""default_collate and default_convert on nested structures."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import buildingai as bai
from buildingai.data import default_collate, default_convert
from buildingai.errors import BuildingAIError, ShapeError

Pair = namedtuple("Pair", "x y")


def test_nested_structures():
    items = [
        {"image": np.full((2, 2), i, np.uint8), "meta": (i, 0.5 * i, f"name{i}"), "ok": True,
         "pair": Pair(bai.tensor([float(i)]), np.float64(i)), "list": [i, i + 1]}
        for i in range(3)
    ]  # fmt: skip
    batch = default_collate(items)
    assert batch["image"].shape == (3, 2, 2) and batch["image"].dtype == np.uint8
    ints, floats, names = batch["meta"]
    assert isinstance(batch["meta"], tuple)
    assert ints.dtype == np.int64 and floats.dtype == np.float32 and names == ["name0", "name1",
                                                                                 "name2"]  # fmt: skip
    assert batch["ok"].dtype == np.bool_
    assert isinstance(batch["pair"], Pair) and batch["pair"].x.shape == (3, 1)
    assert batch["pair"].y.dtype == np.float64
    assert isinstance(batch["list"], list) and batch["list"][1].tolist() == [1, 2, 3]


def test_strings_and_none_gathered():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([None, None]) == [None, None]


@pytest.mark.parametrize(
    "items, error, message",
    [
        ([np.zeros(2), np.zeros(3)], ShapeError, r"different shapes into a batch: \(2,\), \(3,\)"),
        ([{"a": 1}, {"b": 1}], BuildingAIError, "dict items have different keys"),
        ([(1, 2), (1,)], BuildingAIError, r"sequence items have different lengths \[1, 2\]"),
        ([object()], BuildingAIError, "does not know how to batch items of type object"),
        ([], BuildingAIError, "cannot collate an empty batch"),
    ],
)
def test_collate_errors(items, error, message):
    with pytest.raises(error, match=message):
        default_collate(items)


def test_default_convert():
    converted = default_convert({"x": np.ones(2), "y": (np.int64(3), "s")})
    assert isinstance(converted["x"], bai.Tensor)
    assert isinstance(converted["y"][0], bai.Tensor) and converted["y"][1] == "s"
