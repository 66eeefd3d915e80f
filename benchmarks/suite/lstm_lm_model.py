"""A word-level LSTM language model, written for PyTorch the way its users write it (the shape
of PyTorch's word_language_model example): an embedding, a 2-layer ``nn.LSTM``, a linear
decoder tied to the embedding, log-softmax and NLL loss, truncated backpropagation through time
with the hidden state carried (detached) from batch to batch, gradient clipping and SGD.

The suite runs this source text twice: as it is, and with its three import lines changed to
BuildingAI's (``lstm_lm.py``). Nothing else in it changes.
"""

import torch
import torch.nn as nn
from torch.nn import functional as F


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


criterion = nn.NLLLoss()


def make_optimizer(model, lr=20.0):
    return torch.optim.SGD(model.parameters(), lr=lr)


def train_step(model, optimizer, data, targets, hidden, clip=0.25):
    """One batch of the example's loop: the step starts from the previous batch's hidden state,
    detached, and returns the loss and the new hidden state."""
    hidden = repackage_hidden(hidden)
    model.zero_grad()
    output, hidden = model(data, hidden)
    loss = criterion(output, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss, hidden
