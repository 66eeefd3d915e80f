"""A word-level language model in the style of the classic example: embedding, LSTM, decoder,
hidden state carried and detached between batches, gradients clipped with clip_grad_norm_."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, EMBED, HIDDEN, LAYERS = 20, 8, 12, 2
BPTT, BATCH = 5, 4
CLIP = 0.25


class RNNModel(nn.Module):
    def __init__(self, rnn_type="LSTM"):
        super().__init__()
        self.rnn_type = rnn_type
        self.encoder = nn.Embedding(VOCAB, EMBED)
        self.rnn = getattr(nn, rnn_type)(EMBED, HIDDEN, LAYERS)
        self.decoder = nn.Linear(HIDDEN, VOCAB)

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(output).view(-1, VOCAB)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, batch):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (
                weight.new_zeros(LAYERS, batch, HIDDEN),
                weight.new_zeros(LAYERS, batch, HIDDEN),
            )
        return weight.new_zeros(LAYERS, batch, HIDDEN)


def repackage_hidden(h):
    """Wrap hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def init_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, param in model.named_parameters():
            param.copy_(
                torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(param.shape)).astype(np.float32))
            )


def train(rnn_type, corpus):
    model = RNNModel(rnn_type)
    init_weights(model, seed=13)
    criterion = nn.NLLLoss()
    lr = 2.0
    hidden = model.init_hidden(BATCH)
    losses, norms = [], []
    for i in range(0, corpus.size(0) - 1 - BPTT, BPTT):
        data, targets = corpus[i : i + BPTT], corpus[i + 1 : i + 1 + BPTT].reshape(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    return losses, norms


def main():
    rng = np.random.default_rng(14)
    tokens = torch.from_numpy(rng.integers(0, VOCAB, size=(26, BATCH)))
    results = {kind: train(kind, tokens) for kind in ("LSTM", "GRU", "RNN")}
    for kind, (losses, norms) in results.items():
        print(f"{kind}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, first norm {norms[0]:.4f}")
    return results


if __name__ == "__main__":
    main()
