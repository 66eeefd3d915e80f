"""The small-calls benchmark: it finds every element-wise and row twin, builds a call each
kernel takes, and times the twin it says it times; its op steps compute what PyTorch computes."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import small_ops as benchmark
from buildingai.accel.kernels import compiled

pytest.importorskip("numba")


def test_it_times_the_twins_of_both_families():
    names = {name for name, _ in benchmark._twins()}
    assert {"activations.gelu", "activations_fused.hardswish", "select.select"} <= names
    assert {"rows.cross_entropy_rows", "rows.layer_norm_rows", "rows.scale_rows"} <= names
    assert not names & benchmark.NOT_ROWS_SHAPED


def test_each_built_call_runs_the_twin_and_gives_the_kernel_s_values(accel_on):
    rng = np.random.default_rng(0)
    for name, kernel in benchmark._twins():
        shape = (4, 16) if name.startswith("rows.") else (64,)
        bound, arrays = benchmark._call(kernel, shape, rng)
        twin_arrays = [array.copy() for array in arrays]
        with np.errstate(all="ignore"), benchmark._taking_any_size(kernel):
            bound(np, *arrays)
            assert compiled.run(bound, twin_arrays), name
        for reference, twin in zip(arrays, twin_arrays):
            np.testing.assert_allclose(twin, reference, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_op_steps_match_pytorch(accel_on):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as torch_functional

    from buildingai.nn import functional

    for name, shapes in benchmark.OPS.items():
        for shape in shapes:
            ours, ours_x = benchmark._step(bai, functional, name, shape, np.random.default_rng(0))
            theirs, theirs_x = benchmark._step(
                torch, torch_functional, name, shape, np.random.default_rng(0)
            )
            ours()
            theirs()
            np.testing.assert_allclose(
                ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name
            )
