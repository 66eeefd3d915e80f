"""Neural networks: Module, Parameter, containers, layers and initialisation."""

from . import functional, init
from .attention import MultiheadAttention
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .containers import Flatten, Identity, ModuleDict, ModuleList, Sequential, Unflatten
from .linear import Bilinear, Linear
from .module import IncompatibleKeys, Module, RemovableHandle
from .parameter import Parameter
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "init",
    "Module",
    "Parameter",
    "RemovableHandle",
    "IncompatibleKeys",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "Identity",
    "Flatten",
    "Unflatten",
    "Linear",
    "Bilinear",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Softplus",
    "functional",
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
]
