"""Shared pieces of the NumPy reference models: the fused softmax cross-entropy, layer norm,
tanh-GELU, and the optimizers (PyTorch's update rules, in place)."""

from __future__ import annotations

import math

import numpy as np


def softmax_cross_entropy(logits: np.ndarray, target: np.ndarray, grad: np.ndarray) -> float:
    """Mean cross-entropy of ``logits`` (N, C) against class indices ``target`` (N,).

    Writes d(loss)/d(logits) = (softmax(logits) - onehot(target)) / N into ``grad`` (N, C) in
    the same pass that computes the softmax: the fused form needs no log-softmax array and no
    one-hot matrix.
    """
    rows = np.arange(logits.shape[0])
    shift = logits.max(axis=1, keepdims=True)
    np.subtract(logits, shift, out=grad)
    picked = grad[rows, target]  # logit of the target class, shifted
    np.exp(grad, out=grad)
    total = grad.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0]) - picked))
    grad /= total
    grad[rows, target] -= 1.0
    grad *= np.float32(1.0 / logits.shape[0])
    return loss


class LayerNorm:
    """Layer norm over the last axis of (T, D) rows, keeping what backward needs."""

    def __init__(self, eps: float = 1e-5) -> None:
        self.eps = eps

    def forward(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=1, keepdims=True)
        centred = x - mean
        variance = np.mean(np.square(centred), axis=1, keepdims=True)
        self.rstd = 1.0 / np.sqrt(variance + np.float32(self.eps))
        centred *= self.rstd
        self.normed = centred  # x-hat
        return centred * weight + bias

    def backward(
        self, grad: np.ndarray, weight: np.ndarray, grad_weight: np.ndarray, grad_bias: np.ndarray
    ) -> np.ndarray:
        """grad (T, D) -> input gradient; writes the parameter gradients."""
        normed = self.normed
        np.sum(grad * normed, axis=0, out=grad_weight)
        np.sum(grad, axis=0, out=grad_bias)
        grad_normed = grad * weight
        width = np.float32(1.0 / grad.shape[1])
        mean_grad = grad_normed.sum(axis=1, keepdims=True) * width
        mean_projection = np.einsum("td,td->t", grad_normed, normed)[:, None] * width
        grad_normed -= mean_grad
        normed *= mean_projection  # normed is not needed afterwards
        grad_normed -= normed
        grad_normed *= self.rstd
        return grad_normed


_GELU_C = np.float32(math.sqrt(2.0 / math.pi))
_GELU_A = np.float32(0.044715)


def gelu_tanh(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """0.5 x (1 + tanh(c (x + a x^3))); returns (output, tanh term) — backward needs the latter."""
    inner = x * x
    inner *= _GELU_A
    inner += 1.0
    inner *= x
    inner *= _GELU_C
    tanh = np.tanh(inner, out=inner)
    out = tanh + 1.0
    out *= x
    out *= np.float32(0.5)
    return out, tanh


def gelu_tanh_backward(grad: np.ndarray, x: np.ndarray, tanh: np.ndarray) -> np.ndarray:
    """d/dx of tanh-GELU times grad: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)."""
    slope = x * x
    slope *= 3 * _GELU_A
    slope += 1.0
    slope *= x
    slope *= 0.5 * _GELU_C
    one_minus_t2 = np.square(tanh)
    np.subtract(1.0, one_minus_t2, out=one_minus_t2)
    slope *= one_minus_t2
    tanh += 1.0
    tanh *= np.float32(0.5)
    slope += tanh
    slope *= grad
    return slope


class Adam:
    """PyTorch's Adam/AdamW update on a dict of arrays, in place, with preallocated state."""

    def __init__(
        self,
        params: dict,
        lr: float = 1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.weight_decay = weight_decay  # decoupled (AdamW) when non-zero
        self.exp_avg = {k: np.zeros_like(v) for k, v in params.items()}
        self.exp_avg_sq = {k: np.zeros_like(v) for k, v in params.items()}
        self.work = {k: np.empty_like(v) for k, v in params.items()}
        self.steps = 0

    def step(self, grads: dict) -> None:
        self.steps += 1
        beta1, beta2 = self.betas
        bias1 = 1 - beta1**self.steps
        root_bias2 = math.sqrt(1 - beta2**self.steps)
        step_size = np.float32(self.lr / bias1)
        for name, param in self.params.items():
            grad, m, v, work = (
                grads[name],
                self.exp_avg[name],
                self.exp_avg_sq[name],
                self.work[name],
            )
            if self.weight_decay:
                param *= np.float32(1 - self.lr * self.weight_decay)
            m -= grad  # m = beta1 m + (1 - beta1) g, without a temporary
            m *= np.float32(beta1)
            m += grad
            np.multiply(grad, grad, out=work)
            work *= np.float32(1 - beta2)
            v *= np.float32(beta2)
            v += work
            np.sqrt(v, out=work)
            work *= np.float32(1 / root_bias2)
            work += np.float32(self.eps)
            np.divide(m, work, out=work)
            work *= step_size
            param -= work


class SGD:
    """PyTorch's SGD with momentum (no dampening, no Nesterov), in place."""

    def __init__(self, params: dict, lr: float = 0.01, momentum: float = 0.9) -> None:
        self.params, self.lr, self.momentum = params, lr, momentum
        self.buffers = {k: np.empty_like(v) for k, v in params.items()}
        self.work = {k: np.empty_like(v) for k, v in params.items()}
        self.started = False

    def step(self, grads: dict) -> None:
        for name, param in self.params.items():
            buffer, work = self.buffers[name], self.work[name]
            if self.started:
                buffer *= np.float32(self.momentum)
                buffer += grads[name]
            else:  # PyTorch's first step copies the gradient into the buffer
                np.copyto(buffer, grads[name])
            np.multiply(buffer, np.float32(self.lr), out=work)
            param -= work
        self.started = True
