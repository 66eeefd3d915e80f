"""The small convolutional network (conv3x3, ReLU, conv3x3, ReLU, maxpool 2, flatten, Linear,
ReLU, Linear) with SGD + momentum, in NumPy.

Activations are channels-last (N, H, W, C) so that an im2col patch row (kh, kw, C) is a run of
contiguous channel vectors, and each convolution is one GEMM over a stride-tricks view of its
input. The parameters are kept in the matching layouts (convolution weights as (out, kh*kw*in),
the first Linear's columns in (H, W, C) order) and converted to PyTorch's only in
``state_dict``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .core import SGD, softmax_cross_entropy


def im2col(x: np.ndarray, kernel: int, out: np.ndarray | None = None) -> np.ndarray:
    """x: (N, H, W, C) -> patches (N * Ho * Wo, kernel * kernel * C), rows in (kh, kw, C) order,
    stride 1, no padding. One copy from a strided view; ``out`` reuses a buffer."""
    n, h, w, c = x.shape
    windows = sliding_window_view(x, (kernel, kernel), axis=(1, 2))  # (N, Ho, Wo, C, kh, kw)
    windows = windows.transpose(0, 1, 2, 4, 5, 3)  # (N, Ho, Wo, kh, kw, C)
    ho, wo = h - kernel + 1, w - kernel + 1
    if out is None:
        out = np.empty((n * ho * wo, kernel * kernel * c), x.dtype)
    np.copyto(out.reshape(n, ho, wo, kernel, kernel, c), windows)
    return out


def col2im_add(cols: np.ndarray, shape: tuple, kernel: int, out: np.ndarray) -> np.ndarray:
    """The adjoint of ``im2col``: sum patch gradients (N * Ho * Wo, kh * kw * C) back into
    ``out`` (N, H, W, C) — one strided add per kernel offset (kh * kw adds, not per pixel)."""
    n, h, w, c = shape
    ho, wo = h - kernel + 1, w - kernel + 1
    patches = cols.reshape(n, ho, wo, kernel, kernel, c)
    out.fill(0)
    for i in range(kernel):
        for j in range(kernel):
            out[:, i : i + ho, j : j + wo, :] += patches[:, :, :, i, j, :]
    return out


def _conv_to_matrix(weight: np.ndarray) -> np.ndarray:
    """(O, C, kh, kw) -> (O, kh * kw * C)."""
    return np.ascontiguousarray(weight.transpose(0, 2, 3, 1)).reshape(weight.shape[0], -1)


def _matrix_to_conv(matrix: np.ndarray, channels: int, kernel: int) -> np.ndarray:
    return matrix.reshape(-1, kernel, kernel, channels).transpose(0, 3, 1, 2).copy()


class NumpyCNN:
    """Forward, backward and SGD(momentum) for a fixed batch x (N, 1, H, W), targets (N,)."""

    kernel = 3

    def __init__(
        self,
        state_dict: dict,
        x: np.ndarray,
        target: np.ndarray,
        lr: float = 0.01,
        momentum: float = 0.9,
    ) -> None:
        sd = {k: np.asarray(v, dtype=np.float32) for k, v in state_dict.items()}
        self.in_channels = sd["0.weight"].shape[1]
        self.mid_channels = sd["2.weight"].shape[1]
        self.out_channels = sd["2.weight"].shape[0]
        n, _, h, w = x.shape
        k = self.kernel
        self.h1, self.w1 = h - k + 1, w - k + 1
        self.h2, self.w2 = self.h1 - k + 1, self.w1 - k + 1
        self.hp, self.wp = self.h2 // 2, self.w2 // 2
        hidden = sd["6.weight"].shape[0]
        fc1 = sd["6.weight"].reshape(hidden, self.out_channels, self.hp, self.wp)
        self.params = {
            "0.weight": _conv_to_matrix(sd["0.weight"]),
            "0.bias": sd["0.bias"].copy(),
            "2.weight": _conv_to_matrix(sd["2.weight"]),
            "2.bias": sd["2.bias"].copy(),
            "6.weight": np.ascontiguousarray(fc1.transpose(0, 2, 3, 1)).reshape(hidden, -1),
            "6.bias": sd["6.bias"].copy(),
            "8.weight": sd["8.weight"].copy(),
            "8.bias": sd["8.bias"].copy(),
        }
        self.grads = {name: np.empty_like(value) for name, value in self.params.items()}
        self.x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # (N, H, W, C)
        self.target = target
        self.cols1 = im2col(self.x, k)  # the input never changes: its patches are built once
        self.cols2 = np.empty((n * self.h2 * self.w2, k * k * self.mid_channels), np.float32)
        self.grad_a1 = np.empty((n, self.h1, self.w1, self.mid_channels), np.float32)
        self.optimizer = SGD(self.params, lr=lr, momentum=momentum)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Logits for any batch x (N, C, H, W) (inference)."""
        return self._forward(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), None, None)[-1]

    def _forward(self, x, cols1, cols2):
        p, k = self.params, self.kernel
        n = x.shape[0]
        cols1 = im2col(x, k) if cols1 is None else cols1
        a1 = cols1 @ p["0.weight"].T  # (N * H1 * W1, C1), channels-last
        a1 += p["0.bias"]
        np.maximum(a1, 0, out=a1)
        a1 = a1.reshape(n, self.h1, self.w1, -1)
        cols2 = im2col(a1, k, cols2)
        a2 = cols2 @ p["2.weight"].T  # (N * H2 * W2, C2)
        a2 += p["2.bias"]
        np.maximum(a2, 0, out=a2)
        windows = a2.reshape(n, self.hp, 2, self.wp, 2, -1)
        pooled = windows.max(axis=(2, 4))  # (N, Hp, Wp, C2)
        flat = pooled.reshape(n, -1)
        h = flat @ p["6.weight"].T
        h += p["6.bias"]
        np.maximum(h, 0, out=h)
        logits = h @ p["8.weight"].T
        logits += p["8.bias"]
        return a1, cols2, windows, pooled, flat, h, logits

    def step(self) -> float:
        p, g, k = self.params, self.grads, self.kernel
        a1, cols2, windows, pooled, flat, h, logits = self._forward(self.x, self.cols1, self.cols2)
        grad_logits = np.empty_like(logits)
        loss = softmax_cross_entropy(logits, self.target, grad_logits)

        np.matmul(grad_logits.T, h, out=g["8.weight"])
        np.sum(grad_logits, axis=0, out=g["8.bias"])
        grad_h = grad_logits @ p["8.weight"]
        grad_h *= h > 0
        np.matmul(grad_h.T, flat, out=g["6.weight"])
        np.sum(grad_h, axis=0, out=g["6.bias"])
        grad_pooled = (grad_h @ p["6.weight"]).reshape(pooled.shape)

        # max-pool and ReLU backward in one mask: the window's maximum, if it is positive (a
        # window of zeros after ReLU has ties, but ReLU's gradient is 0 there anyway)
        mask = windows == pooled[:, :, None, :, None, :]
        mask &= windows > 0
        grad_a2 = np.multiply(mask, grad_pooled[:, :, None, :, None, :], dtype=np.float32)
        grad_a2 = grad_a2.reshape(-1, self.out_channels)  # (N * H2 * W2, C2)

        np.matmul(grad_a2.T, cols2, out=g["2.weight"])
        np.sum(grad_a2, axis=0, out=g["2.bias"])
        grad_cols2 = grad_a2 @ p["2.weight"]  # (N * H2 * W2, k * k * C1)
        grad_a1 = col2im_add(grad_cols2, a1.shape, k, self.grad_a1)
        grad_a1 *= a1 > 0
        grad_a1 = grad_a1.reshape(-1, self.mid_channels)
        np.matmul(grad_a1.T, self.cols1, out=g["0.weight"])
        np.sum(grad_a1, axis=0, out=g["0.bias"])
        self.optimizer.step(g)
        return loss

    def state_dict(self) -> dict:
        p, k = self.params, self.kernel
        hidden = p["6.weight"].shape[0]
        fc1 = p["6.weight"].reshape(hidden, self.hp, self.wp, self.out_channels)
        return {
            "0.weight": _matrix_to_conv(p["0.weight"], self.in_channels, k),
            "0.bias": p["0.bias"].copy(),
            "2.weight": _matrix_to_conv(p["2.weight"], self.mid_channels, k),
            "2.bias": p["2.bias"].copy(),
            "6.weight": fc1.transpose(0, 3, 1, 2).reshape(hidden, -1).copy(),
            "6.bias": p["6.bias"].copy(),
            "8.weight": p["8.weight"].copy(),
            "8.bias": p["8.bias"].copy(),
        }
