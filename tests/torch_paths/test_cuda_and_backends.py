"""``buildingai.cuda`` and ``buildingai.backends`` answer as PyTorch does on the same machine
(this CPU-only test machine: no GPU, no Metal, no cuDNN)."""

import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

cpu_only = pytest.mark.skipif(
    bai.cuda.is_available() or torch.cuda.is_available(), reason="answers of a CPU-only machine"
)


@cpu_only
def test_cuda_questions_on_a_machine_without_a_gpu():
    assert bai.cuda.is_available() is torch.cuda.is_available() is False
    assert bai.cuda.device_count() == torch.cuda.device_count() == 0
    assert bai.cuda.is_initialized() is False
    assert bai.cuda.memory_allocated() == 0 and bai.cuda.memory_reserved() == 0
    assert bai.cuda.is_bf16_supported() is False
    for seeding in (bai.cuda.manual_seed, bai.cuda.manual_seed_all):  # no-ops, as in PyTorch
        seeding(0)
        torch_seeding = getattr(torch.cuda, seeding.__name__)
        torch_seeding(0)
    bai.cuda.empty_cache()
    with pytest.raises(bai.DeviceError, match="the 'cuda' device needs CuPy|no CUDA GPU"):
        bai.cuda.get_device_name(0)


def test_cuda_seeding_leaves_the_cpu_stream_alone():
    bai.manual_seed(5)
    expected = bai.rand(3).tolist()
    bai.manual_seed(5)
    bai.cuda.manual_seed_all(123)
    assert bai.rand(3).tolist() == expected
    assert bai.cuda.initial_seed() == 5


def test_cuda_amp_spelling():
    from buildingai.cuda.amp import GradScaler, autocast

    assert GradScaler is bai.amp.GradScaler
    scope = autocast()
    assert isinstance(scope, bai.amp.autocast) and str(scope.dtype) == "float16"
    with autocast(dtype=bai.bfloat16):
        out = bai.nn.Linear(3, 2)(bai.ones(1, 3))
    assert str(out.dtype) == "bfloat16"
    assert autocast(enabled=False).enabled is False


@cpu_only
def test_backends_questions_and_flags():
    assert bai.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert bai.backends.mps.is_built() is False
    assert bai.backends.cudnn.is_available() is False and bai.backends.cudnn.version() is None
    assert bai.backends.mkldnn.is_available() is False
    assert bai.backends.openmp.is_available() is False
    assert isinstance(bai.backends.cuda.is_built(), bool)
    for module, flag in [("cudnn", "benchmark"), ("cudnn", "deterministic"),
                         ("cudnn", "enabled"), ("cudnn", "allow_tf32")]:  # fmt: skip
        ours = getattr(bai.backends, module)
        before = getattr(ours, flag)
        assert before == getattr(getattr(torch.backends, module), flag)
        setattr(ours, flag, not before)
        assert getattr(ours, flag) is (not before)
        setattr(ours, flag, before)
    assert bai.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
    bai.backends.cuda.matmul.allow_tf32 = True
    assert bai.get_math_precision() == "fp32"  # kept, and changes nothing
    bai.backends.cuda.matmul.allow_tf32 = False
