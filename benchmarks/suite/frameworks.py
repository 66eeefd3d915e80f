"""One training step in BuildingAI and in PyTorch eager, written the way a user writes it:
zero the gradients, forward, cross-entropy, backward, optimizer step."""

from __future__ import annotations

import numpy as np

import buildingai as bai
import buildingai.nn.functional as F


def cross_entropy(logits: bai.Tensor, target: bai.Tensor) -> bai.Tensor:
    """``buildingai.nn.functional.cross_entropy`` where the library has it, otherwise the same
    mean negative log-likelihood written from ``log_softmax`` and a gather."""
    function = getattr(F, "cross_entropy", None)
    if function is not None:
        return function(logits, target)
    log_probs = bai.log_softmax(logits, axis=-1)
    picked = bai.take_along_axis(log_probs, target.reshape(-1, 1), axis=1)
    return -picked.mean()


class BuildingAIStep:
    """model + optimizer on a fixed batch; ``step()`` returns the loss Tensor."""

    def __init__(self, model, optimizer, inputs: np.ndarray, target: np.ndarray) -> None:
        self.model, self.optimizer = model, optimizer
        self.inputs, self.target = bai.tensor(inputs), bai.tensor(target)

    def step(self):
        return self.step_on(self.inputs, self.target)

    def step_on(self, inputs, target):
        self.optimizer.zero_grad()
        loss = cross_entropy(self.model(inputs), target)
        loss.backward()
        self.optimizer.step()
        return loss

    def state_dict(self) -> dict:
        return {k: np.array(v.numpy()) for k, v in self.model.state_dict().items()}


class CompiledBuildingAIStep(BuildingAIStep):
    """The same step traced once into a static graph (``buildingai.compile``) and run by the
    graph executor."""

    def __init__(self, model, optimizer, inputs: np.ndarray, target: np.ndarray) -> None:
        super().__init__(model, optimizer, inputs, target)
        specs = [
            bai.TensorSpec((None, *self.inputs.shape[1:]), self.inputs.dtype),
            bai.TensorSpec((None,), self.target.dtype),
        ]
        self.compiled = bai.compile(super().step_on, specs)

    def step(self):
        return self.compiled(self.inputs, self.target)


class TorchStep:
    """The same step in PyTorch eager on the CPU."""

    def __init__(self, model, optimizer, inputs: np.ndarray, target: np.ndarray) -> None:
        import torch

        self.torch = torch
        self.model, self.optimizer = model, optimizer
        self.inputs, self.target = torch.from_numpy(inputs.copy()), torch.from_numpy(target.copy())

    def step(self):
        self.optimizer.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.model(self.inputs), self.target)
        loss.backward()
        self.optimizer.step()
        return loss

    def state_dict(self) -> dict:
        return {k: v.detach().numpy().copy() for k, v in self.model.state_dict().items()}

    def gradients(self) -> dict:
        """The last step's parameter gradients, by name (for the cross-check)."""
        return {
            k: v.grad.numpy().copy() for k, v in self.model.named_parameters() if v.grad is not None
        }


def torch_state_as_numpy(model) -> dict:
    """A PyTorch model's initial weights, the one source every implementation loads."""
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def load_buildingai(model, weights: dict):
    model.load_state_dict({k: v.copy() for k, v in weights.items()})
    return model
