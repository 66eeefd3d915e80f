"""examples/distillation_mnist.py runs end to end on a small stand-in for MNIST: a few steps of
the teacher, the student alone and the distilled student."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from buildingai.data import TensorDataset

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "distillation_mnist.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("distillation_mnist", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _digits(count: int, seed: int) -> TensorDataset:
    """28x28 images whose class is which of ten 7x7 squares is bright (a learnable stand-in)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count)
    images = rng.uniform(0, 0.3, (count, 1, 28, 28)).astype("float32")
    for index, label in enumerate(labels):
        row, col = divmod(int(label), 4)
        images[index, 0, 7 * row : 7 * row + 7, 7 * col : 7 * col + 7] += 0.7
    return TensorDataset(images, labels)


def test_example_trains_teacher_and_both_students():
    example = _load_example()
    results = example.run(_digits(256, 0), _digits(100, 1), batch_size=32, max_steps=6)
    assert set(results) == {"teacher", "student alone", "student distilled", "seconds"}
    for name in ("teacher", "student alone", "student distilled"):
        assert 0.0 <= results[name] <= 1.0
    assert results["teacher"] > 0.3  # six steps learn the bright square well above chance
