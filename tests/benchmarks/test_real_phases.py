"""The phase timing of the real workloads (``benchmarks.real_phases``) runs end to end at tiny
sizes, times every phase on both sides, and puts back every call it wrapped (no timing
assertions)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("threadpoolctl")

import buildingai as bai  # noqa: E402
from benchmarks import real_phases  # noqa: E402
from benchmarks.suite.real_workloads import WORKLOADS  # noqa: E402


def test_every_phase_of_both_frameworks_is_timed():
    found = real_phases.phase_times("gpt", threads=None, rounds=1, steps=1, quick=True)
    assert set(found) == {"buildingai", "pytorch"}
    for framework, phases in found.items():
        assert set(phases) == {"step_ms", *real_phases.PHASES}, framework
        # nanoGPT's step runs backward, clips and updates: each was seen
        assert all(phases[phase] > 0 for phase in ("step_ms", "backward", "clip", "update"))
        assert sum(phases[phase] for phase in real_phases.PHASES) == pytest.approx(
            phases["step_ms"]
        )


@pytest.mark.parametrize("framework", real_phases.FRAMEWORKS)
def test_the_wrapped_calls_are_put_back(framework):
    module = WORKLOADS["lstm-lm"]
    config = module.sizes(True)
    step = module.build(framework, config, module.initial_weights(config))
    library = bai if framework == "buildingai" else torch
    before = (library.Tensor.backward, library.nn.utils.clip_grad_norm_)
    with real_phases.timing_phases(framework, step) as totals:
        step.step()
    assert totals["backward"] > 0 and totals["clip"] > 0 and totals["update"] > 0
    assert (library.Tensor.backward, library.nn.utils.clip_grad_norm_) == before
    for owner, name in ((step.optimizer, "step"), (step.optimizer, "zero_grad"),
                        (step.model, "zero_grad")):  # fmt: skip
        assert name not in vars(owner), name  # the class's method again
    with real_phases.timing_phases(framework, step) as totals:
        pass
    step.step()  # outside the block: nothing counts it
    assert not totals


@pytest.mark.slow
def test_command_line_quick_mode():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.real_phases", "lstm-lm", "--quick", "--rounds", "1",
         "--steps", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )  # fmt: skip
    assert "| whole step |" in done.stdout and "| backward |" in done.stdout
