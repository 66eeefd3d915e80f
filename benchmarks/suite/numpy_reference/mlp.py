"""The multilayer perceptron (Linear, ReLU, Linear, ReLU, Linear) with Adam, in NumPy."""

from __future__ import annotations

import numpy as np

from .core import Adam, softmax_cross_entropy

# PyTorch's names for nn.Sequential(Linear, ReLU, Linear, ReLU, Linear)
LAYERS = ("0", "2", "4")


class NumpyMLP:
    """Forward, backward and Adam for a fixed batch ``x`` (N, in) with targets (N,).

    ``state_dict`` holds PyTorch's names and layouts (Linear weights are (out, in), which is
    also what the GEMMs here want: ``x @ W.T`` is a transposed-operand GEMM, no copy).
    """

    def __init__(
        self, state_dict: dict, x: np.ndarray, target: np.ndarray, lr: float = 1e-3
    ) -> None:
        self.params = {k: np.array(v, dtype=np.float32) for k, v in state_dict.items()}
        self.grads = {k: np.empty_like(v) for k, v in self.params.items()}
        self.x, self.target = x, target
        batch = x.shape[0]
        widths = [self.params[f"{layer}.weight"].shape[0] for layer in LAYERS]
        self.hidden = [np.empty((batch, width), np.float32) for width in widths]  # activations
        self.grad_hidden = [np.empty((batch, width), np.float32) for width in widths]
        self.masks = [np.empty((batch, width), bool) for width in widths[:-1]]
        self.optimizer = Adam(self.params, lr=lr)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Logits for any batch (inference: allocates its own outputs)."""
        for index, layer in enumerate(LAYERS):
            x = x @ self.params[f"{layer}.weight"].T
            x += self.params[f"{layer}.bias"]
            if index < len(LAYERS) - 1:
                np.maximum(x, 0, out=x)
        return x

    def step(self) -> float:
        """One training step; returns the loss before the update."""
        params, grads = self.params, self.grads
        inputs = self.x
        for index, layer in enumerate(LAYERS):
            out = self.hidden[index]
            np.matmul(inputs, params[f"{layer}.weight"].T, out=out)
            out += params[f"{layer}.bias"]
            if index < len(LAYERS) - 1:
                np.maximum(out, 0, out=out)
            inputs = out
        grad = self.grad_hidden[-1]
        loss = softmax_cross_entropy(self.hidden[-1], self.target, grad)
        for index in range(len(LAYERS) - 1, -1, -1):
            layer = LAYERS[index]
            inputs = self.hidden[index - 1] if index else self.x
            np.matmul(grad.T, inputs, out=grads[f"{layer}.weight"])
            np.sum(grad, axis=0, out=grads[f"{layer}.bias"])
            if index:
                below = self.grad_hidden[index - 1]
                np.matmul(grad, params[f"{layer}.weight"], out=below)
                np.greater(inputs, 0, out=self.masks[index - 1])  # ReLU's gradient
                np.multiply(below, self.masks[index - 1], out=below)
                grad = below
        self.optimizer.step(grads)
        return loss

    def state_dict(self) -> dict:
        return {k: v.copy() for k, v in self.params.items()}
