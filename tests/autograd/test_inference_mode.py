"""``inference_mode`` and the bare ``@no_grad`` decorator, as PyTorch spells them."""

import pytest

import buildingai as bai

torch = pytest.importorskip("torch")


def _records(lib, fn):
    x = lib.ones(2, requires_grad=True)
    return fn(x).requires_grad


@pytest.mark.parametrize("lib", [bai, torch], ids=["buildingai", "torch"])
def test_inference_mode_as_context_manager_and_decorators(lib):
    with lib.inference_mode():
        assert not lib.is_grad_enabled()
        assert not (lib.ones(2, requires_grad=True) * 2).requires_grad
    assert lib.is_grad_enabled()

    @lib.inference_mode()
    def called(x):
        return x * 2

    @lib.inference_mode
    def bare(x):
        return x * 2

    assert not _records(lib, called) and not _records(lib, bare)
    assert bare.__name__ == "bare"


@pytest.mark.parametrize("lib", [bai, torch], ids=["buildingai", "torch"])
def test_inference_mode_false_records_again(lib):
    with lib.no_grad():
        with lib.inference_mode(False):
            assert lib.is_grad_enabled()
        with lib.inference_mode(mode=True):
            assert not lib.is_grad_enabled()

    @lib.inference_mode(False)
    def recorded(x):
        return x * 2

    with lib.no_grad():
        assert _records(lib, recorded)


@pytest.mark.parametrize("lib", [bai, torch], ids=["buildingai", "torch"])
def test_no_grad_as_a_bare_decorator(lib):
    @lib.no_grad
    def doubled(x):
        return x * 2

    assert not _records(lib, doubled)
    assert doubled.__name__ == "doubled"
    assert lib.is_grad_enabled()


def test_a_tensor_made_in_inference_mode_can_be_used_in_a_recorded_computation():
    # PyTorch refuses ("Inference tensors cannot be saved for backward"); BuildingAI has no
    # separate kind of tensor for this mode, so the later computation records as usual.
    with bai.inference_mode():
        made = bai.ones(3)
    weight = bai.ones(3, requires_grad=True)
    (weight * made).sum().backward()
    assert weight.grad.tolist() == [1.0, 1.0, 1.0]
