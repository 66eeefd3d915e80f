"""A step written for PyTorch reads ``self.state[p]`` before it holds anything, and fills it
when it is empty: the state reads as an empty dict for a new parameter, as PyTorch's does."""

import numpy as np
import pytest

import buildingai

torch = pytest.importorskip("torch")


def _momentum_sgd(library):
    class MomentumSGD(library.optim.Optimizer):
        def __init__(self, params, lr=0.1, momentum=0.9):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @library.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["momentum_buffer"] = library.zeros_like(p)
                    buf = state["momentum_buffer"]
                    buf.mul_(group["momentum"]).add_(p.grad)
                    p.add_(buf, alpha=-group["lr"])

    return MomentumSGD


def test_state_of_a_new_parameter_is_an_empty_dict_and_steps_match_pytorch():
    results = []
    for library in (buildingai, torch):
        w = library.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
        unused = library.tensor(np.array([3.0]), requires_grad=True)
        optimizer = _momentum_sgd(library)([w, unused], lr=0.1)
        assert len(optimizer.state) == 0 and optimizer.state[unused] == {}
        for _ in range(3):
            optimizer.zero_grad()
            ((w * w).sum() + w.prod()).backward()
            optimizer.step()
        results.append((w.detach().numpy().copy(), sorted(optimizer.state[w])))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    assert results[0][1] == results[1][1] == ["momentum_buffer"]


def test_a_loaded_state_reads_the_same_way():
    w = buildingai.tensor([1.0, 2.0], requires_grad=True)
    other = buildingai.tensor([1.0], requires_grad=True)
    optimizer = buildingai.optim.SGD([w, other], lr=0.1, momentum=0.9)
    w.grad = buildingai.tensor([1.0, 1.0])
    optimizer.step()
    optimizer.load_state_dict(optimizer.state_dict())
    assert optimizer.state[other] == {} and "momentum_buffer" in optimizer.state[w]
