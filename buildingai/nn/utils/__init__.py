"""Utilities where PyTorch users look for them (``torch.nn.utils``): gradient clipping, flat
parameter vectors, pruning, parametrizations and padded / packed sequences."""

from . import parametrizations, parametrize, prune, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
