"""The MNIST-epoch benchmark runs end to end in quick mode (no timing assertions)."""

import pytest

pytest.importorskip("torch")

from benchmarks import mnist_epoch as benchmark  # noqa: E402


def test_quick_run_trains_both_from_the_same_weights(capsys):
    result = benchmark.run(quick=True, epochs=1, threads=1)
    assert set(result["seconds_per_epoch"]) == {"buildingai", "pytorch"}
    assert result["ratio"] > 0
    # Same weights, same batches, same optimizer: the losses agree closely.
    losses = result["final_loss"]
    assert losses["buildingai"] == pytest.approx(losses["pytorch"], rel=1e-3)
    benchmark.main(["--quick", "--epochs", "1", "--threads", "1"])
    assert "ratio buildingai / pytorch" in capsys.readouterr().out
