"""A small decoder-only transformer language model (GPT style), written for PyTorch."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelSettings:
    context: int = 16
    vocabulary: int = 23
    layers: int = 2
    heads: int = 2
    width: int = 16
    dropout: float = 0.0
    use_bias: bool = True


class MaskedSelfAttention(nn.Module):
    def __init__(self, settings):
        super().__init__()
        assert settings.width % settings.heads == 0
        self.heads = settings.heads
        self.width = settings.width
        self.qkv = nn.Linear(settings.width, 3 * settings.width, bias=settings.use_bias)
        self.out = nn.Linear(settings.width, settings.width, bias=settings.use_bias)
        self.attention_dropout = nn.Dropout(settings.dropout)
        self.output_dropout = nn.Dropout(settings.dropout)
        # lower-triangular ones: position t may look at positions 0..t only
        causal = torch.tril(torch.ones(settings.context, settings.context))
        self.register_buffer("causal", causal.view(1, 1, settings.context, settings.context))

    def forward(self, x):
        batch, steps, channels = x.size()
        q, k, v = self.qkv(x).split(self.width, dim=2)
        head_size = channels // self.heads
        q = q.view(batch, steps, self.heads, head_size).transpose(1, 2)
        k = k.view(batch, steps, self.heads, head_size).transpose(1, 2)
        v = v.view(batch, steps, self.heads, head_size).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(self.causal[:, :, :steps, :steps] == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        weights = self.attention_dropout(weights)
        y = weights @ v
        y = y.transpose(1, 2).contiguous().view(batch, steps, channels)
        return self.output_dropout(self.out(y))


class FeedForward(nn.Module):
    def __init__(self, settings):
        super().__init__()
        self.up = nn.Linear(settings.width, 4 * settings.width, bias=settings.use_bias)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * settings.width, settings.width, bias=settings.use_bias)
        self.dropout = nn.Dropout(settings.dropout)

    def forward(self, x):
        return self.dropout(self.down(self.act(self.up(x))))


class Block(nn.Module):
    def __init__(self, settings):
        super().__init__()
        self.norm_1 = nn.LayerNorm(settings.width)
        self.attention = MaskedSelfAttention(settings)
        self.norm_2 = nn.LayerNorm(settings.width)
        self.feed_forward = FeedForward(settings)

    def forward(self, x):
        x = x + self.attention(self.norm_1(x))
        x = x + self.feed_forward(self.norm_2(x))
        return x


class TinyGPT(nn.Module):
    def __init__(self, settings):
        super().__init__()
        self.settings = settings
        self.body = nn.ModuleDict(
            dict(
                tokens=nn.Embedding(settings.vocabulary, settings.width),
                positions=nn.Embedding(settings.context, settings.width),
                dropout=nn.Dropout(settings.dropout),
                blocks=nn.ModuleList([Block(settings) for _ in range(settings.layers)]),
                final_norm=nn.LayerNorm(settings.width),
            )
        )
        self.head = nn.Linear(settings.width, settings.vocabulary, bias=False)
        self.body.tokens.weight = self.head.weight  # the embedding and the head share weights
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith("out.weight"):
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * settings.layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def parameter_count(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None):
        batch, steps = idx.size()
        assert steps <= self.settings.context, f"{steps} tokens exceed the context"
        where = torch.arange(0, steps, dtype=torch.long, device=idx.device)
        x = self.body.dropout(self.body.tokens(idx) + self.body.positions(where))
        for block in self.body.blocks:
            x = block(x)
        x = self.body.final_norm(x)
        if targets is None:
            return self.head(x[:, [-1], :]), None
        logits = self.head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, new_tokens, temperature=1.0, top_k=None):
        for _ in range(new_tokens):
            recent = (
                idx if idx.size(1) <= self.settings.context else idx[:, -self.settings.context :]
            )
            logits, _ = self(recent)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx
