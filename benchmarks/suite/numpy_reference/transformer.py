"""The text classifier (token + learned position embeddings, pre-LayerNorm Transformer encoder
layers with tanh-GELU, final LayerNorm, mean over positions, Linear) with AdamW, in NumPy.

Tokens are processed as rows of a (B * S, D) matrix so every projection is one GEMM; attention
works on (B, H, S, Dh) stacks with batched matmuls. Parameter names and layouts are PyTorch's
(``nn.TransformerEncoderLayer(batch_first=True, norm_first=True)`` inside
``nn.TransformerEncoder``).
"""

from __future__ import annotations

import math

import numpy as np

from .core import Adam, LayerNorm, gelu_tanh, gelu_tanh_backward, softmax_cross_entropy


class _Layer:
    """One pre-LN encoder layer's forward and backward; saves what backward needs."""

    def __init__(self, prefix: str, heads: int) -> None:
        self.prefix, self.heads = prefix, heads
        self.norm1, self.norm2 = LayerNorm(), LayerNorm()

    def forward(self, p: dict, x: np.ndarray, batch: int) -> np.ndarray:
        name = self.prefix
        tokens, width = x.shape
        length, heads = tokens // batch, self.heads
        head_width = width // heads
        h = self.norm1.forward(x, p[name + "norm1.weight"], p[name + "norm1.bias"])
        self.h1 = h
        qkv = h @ p[name + "self_attn.in_proj_weight"].T
        qkv += p[name + "self_attn.in_proj_bias"]
        # (B, S, 3, H, Dh) -> (3, B, H, S, Dh), one copy so the batched matmuls get contiguous
        # operands
        qkv = np.ascontiguousarray(
            qkv.reshape(batch, length, 3, heads, head_width).transpose(2, 0, 3, 1, 4)
        )
        q, k, v = qkv
        q *= np.float32(1.0 / math.sqrt(head_width))  # scale q: S*Dh multiplies, not S*S
        scores = q @ k.transpose(0, 1, 3, 2)  # (B, H, S, S)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        self.qkv, self.probs = qkv, scores
        context = scores @ v  # (B, H, S, Dh)
        context = context.transpose(0, 2, 1, 3).reshape(tokens, width)  # copy: (B*S, D)
        self.context = context
        attended = context @ p[name + "self_attn.out_proj.weight"].T
        attended += p[name + "self_attn.out_proj.bias"]
        x = x + attended
        h = self.norm2.forward(x, p[name + "norm2.weight"], p[name + "norm2.bias"])
        self.h2 = h
        hidden = h @ p[name + "linear1.weight"].T
        hidden += p[name + "linear1.bias"]
        self.hidden = hidden
        activated, self.tanh = gelu_tanh(hidden)
        self.activated = activated
        out = activated @ p[name + "linear2.weight"].T
        out += p[name + "linear2.bias"]
        out += x
        return out

    def backward(self, p: dict, g: dict, grad: np.ndarray, batch: int) -> np.ndarray:
        """grad: d(loss)/d(output) (B*S, D) -> d(loss)/d(input); writes parameter gradients."""
        name = self.prefix
        tokens, width = grad.shape
        length, heads = tokens // batch, self.heads
        head_width = width // heads
        # feed-forward block: out = x + linear2(gelu(linear1(norm2(x))))
        np.matmul(grad.T, self.activated, out=g[name + "linear2.weight"])
        np.sum(grad, axis=0, out=g[name + "linear2.bias"])
        grad_act = grad @ p[name + "linear2.weight"]
        grad_hidden = gelu_tanh_backward(grad_act, self.hidden, self.tanh)
        np.matmul(grad_hidden.T, self.h2, out=g[name + "linear1.weight"])
        np.sum(grad_hidden, axis=0, out=g[name + "linear1.bias"])
        grad_h2 = grad_hidden @ p[name + "linear1.weight"]
        grad_x = self.norm2.backward(
            grad_h2, p[name + "norm2.weight"], g[name + "norm2.weight"], g[name + "norm2.bias"]
        )
        grad_x += grad  # the residual
        # attention block: x = x0 + out_proj(attention(norm1(x0)))
        np.matmul(grad_x.T, self.context, out=g[name + "self_attn.out_proj.weight"])
        np.sum(grad_x, axis=0, out=g[name + "self_attn.out_proj.bias"])
        grad_context = grad_x @ p[name + "self_attn.out_proj.weight"]  # (B*S, D)
        grad_context = np.ascontiguousarray(
            grad_context.reshape(batch, length, heads, head_width).transpose(0, 2, 1, 3)
        )
        q, k, v = self.qkv  # q already scaled
        probs = self.probs
        grad_qkv = np.empty_like(self.qkv)
        np.matmul(probs.transpose(0, 1, 3, 2), grad_context, out=grad_qkv[2])  # dV
        grad_probs = grad_context @ v.transpose(0, 1, 3, 2)  # (B, H, S, S)
        # softmax backward: dS = P * (dP - sum(dP * P))
        row_dot = np.einsum("bhij,bhij->bhi", grad_probs, probs)[..., None]
        grad_probs -= row_dot
        grad_probs *= probs
        np.matmul(grad_probs, k, out=grad_qkv[0])
        grad_qkv[0] *= np.float32(1.0 / math.sqrt(head_width))
        np.matmul(grad_probs.transpose(0, 1, 3, 2), q, out=grad_qkv[1])  # q was pre-scaled
        grad_qkv_rows = grad_qkv.transpose(1, 3, 0, 2, 4).reshape(tokens, 3 * width)
        np.matmul(grad_qkv_rows.T, self.h1, out=g[name + "self_attn.in_proj_weight"])
        np.sum(grad_qkv_rows, axis=0, out=g[name + "self_attn.in_proj_bias"])
        grad_h1 = grad_qkv_rows @ p[name + "self_attn.in_proj_weight"]
        grad_in = self.norm1.backward(
            grad_h1, p[name + "norm1.weight"], g[name + "norm1.weight"], g[name + "norm1.bias"]
        )
        grad_in += grad_x
        return grad_in


class NumpyTransformer:
    """Forward, backward and AdamW for fixed token ids (B, S) and targets (B,)."""

    def __init__(
        self,
        state_dict: dict,
        ids: np.ndarray,
        target: np.ndarray,
        heads: int,
        num_layers: int,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
    ) -> None:
        self.params = {k: np.array(v, dtype=np.float32) for k, v in state_dict.items()}
        self.grads = {k: np.empty_like(v) for k, v in self.params.items()}
        self.ids, self.target = ids, target
        self.layers = [_Layer(f"encoder.layers.{i}.", heads) for i in range(num_layers)]
        self.final_norm = LayerNorm()
        self.optimizer = Adam(self.params, lr=lr, weight_decay=weight_decay)

    def forward(self, ids: np.ndarray) -> np.ndarray:
        """Logits (B, classes) for token ids (B, S)."""
        return self._forward(ids)[0]

    def _forward(self, ids):
        p = self.params
        batch, length = ids.shape
        x = p["embedding.weight"][ids.reshape(-1)]  # (B*S, D), a gather (copy)
        x.reshape(batch, length, -1)[...] += p["positions.weight"][:length]
        for layer in self.layers:
            x = layer.forward(p, x, batch)
        normed = self.final_norm.forward(x, p["encoder.norm.weight"], p["encoder.norm.bias"])
        pooled = normed.reshape(batch, length, -1).mean(axis=1)  # (B, D)
        logits = pooled @ p["head.weight"].T
        logits += p["head.bias"]
        return logits, pooled

    def step(self) -> float:
        p, g = self.params, self.grads
        logits, pooled = self._forward(self.ids)
        batch, length = self.ids.shape
        grad_logits = np.empty_like(logits)
        loss = softmax_cross_entropy(logits, self.target, grad_logits)
        np.matmul(grad_logits.T, pooled, out=g["head.weight"])
        np.sum(grad_logits, axis=0, out=g["head.bias"])
        grad_pooled = grad_logits @ p["head.weight"]  # (B, D)
        grad_pooled *= np.float32(1.0 / length)
        width = grad_pooled.shape[1]
        grad_normed = np.broadcast_to(grad_pooled[:, None, :], (batch, length, width))
        grad_normed = grad_normed.reshape(batch * length, width)  # copy, written by backward
        grad = self.final_norm.backward(
            grad_normed,
            p["encoder.norm.weight"],
            g["encoder.norm.weight"],
            g["encoder.norm.bias"],
        )
        for layer in reversed(self.layers):
            grad = layer.backward(p, g, grad, batch)
        np.sum(grad.reshape(batch, length, width), axis=0, out=g["positions.weight"][:length])
        g["positions.weight"][length:] = 0
        embedding = g["embedding.weight"]
        embedding.fill(0)
        np.add.at(embedding, self.ids.reshape(-1), grad)
        self.optimizer.step(g)
        return loss

    def state_dict(self) -> dict:
        return {k: v.copy() for k, v in self.params.items()}
