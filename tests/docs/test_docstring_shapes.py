"""tools/docstring_shapes.py: the shape notation it recognises, and a survey of the public API
that counts every public function and class once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "docstring_shapes.py"


def _tool():
    spec = importlib.util.spec_from_file_location("docstring_shapes", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_shape_notation_is_recognised_and_prose_is_not():
    tool = _tool()
    for text in (
        "x: (N, C, H, W) -> (N, O, Ho, Wo)",
        "logits (B, T, C)",
        "labels (N,) int64",
        "input (*, D), any leading dimensions",
        "returns a tensor of the same shape",
        "columns (C * kh * kw, N)",
        "query: (*batch, L, E)",
        "x: (*) element-wise",
    ):
        assert tool.states_shapes(text), text
    for text in ("Adam (Kingma and Ba, 2015).", "Return the value (if any).", "", None):
        assert not tool.states_shapes(text), text


def test_survey_counts_each_public_object_once(capsys):
    tool = _tool()
    tallies = tool.survey(("buildingai.nn", "buildingai.nn.functional"))
    nn, functional = tallies["buildingai.nn"], tallies["buildingai.nn.functional"]
    assert nn.total > 50 and functional.total > 10
    assert nn.with_shapes <= nn.documented <= nn.total
    assert "buildingai.nn.Linear" not in nn.missing  # "(*, in_features) -> (*, out_features)"
    assert all(name.startswith("buildingai.nn.") for name in nn.missing)
    assert tool.main(["--missing", "nn"]) == 0
    assert "states shapes" in capsys.readouterr().out
