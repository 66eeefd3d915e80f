"""examples/advanced/bayesian_regression.py: the ELBO falls, the predictive spread is wider
away from the data than on it, the plot is a PNG, and a missing matplotlib is one clear line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import buildingai as bai
from buildingai.utils.extras import MissingExtraError

_PATH = Path(__file__).resolve().parents[2] / "examples" / "advanced" / "bayesian_regression.py"


def _example():
    spec = importlib.util.spec_from_file_location("bayesian_regression", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_training_lowers_the_negative_elbo_and_uncertainty_grows_off_the_data(tmp_path):
    example = _example()
    bai.manual_seed(0)
    x, y = example.make_data(200, np.random.default_rng(0))
    model = example.BayesianRegressor()
    losses = example.train(
        model, bai.tensor(x, dtype=bai.float32), bai.tensor(y, dtype=bai.float32), 300
    )
    assert np.mean(losses[-20:]) < 0.6 * np.mean(losses[:20])
    grid = np.array([-3.0, -2.0, 2.0, 3.0, -7.0, 7.0])
    mean, std = example.predictive(model, bai.tensor(grid[:, None], dtype=bai.float32), draws=100)
    assert std[4:].min() > std[:4].max()  # far from both stretches the model is less sure
    assert mean.shape == std.shape == (6,)
    pytest.importorskip("matplotlib")
    path = tmp_path / "bands.png"
    example.plot(str(path), x, y, grid, mean, std)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_missing_matplotlib_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    example = _example()
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now fails
    with pytest.raises(MissingExtraError, match=r"pip install 'buildingai\[vis\]'"):
        example.plot(
            str(tmp_path / "x.png"),
            np.zeros((1, 1)),
            np.zeros((1, 1)),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1),
        )
