"""Utilities where PyTorch users look for them (``torch.nn.utils``): gradient clipping, flat
parameter vectors, pruning, parametrizations (and the older weight / spectral norm hooks),
batch-norm fusion, skip_init and padded / packed sequences."""

from . import parametrizations, parametrize, prune, rnn
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm
