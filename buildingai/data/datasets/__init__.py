"""Real and synthetic datasets. Real ones try their sources in order, check SHA-256 sums, and
cache a fast ``.npz`` under ``$BUILDINGAI_HOME`` (default ``~/.cache/buildingai``)."""

from ..sources import ChecksumError, DatasetUnavailableError
from ._formats import parse_uint8_csv, read_cifar_batches, read_idx
from .cifar import CIFAR10
from .mnist import MNIST, FashionMNIST
from .synthetic import Regression, Spirals
from .text_sets import RottenTomatoes

__all__ = [
    "CIFAR10",
    "ChecksumError",
    "DatasetUnavailableError",
    "FashionMNIST",
    "MNIST",
    "Regression",
    "RottenTomatoes",
    "Spirals",
    "parse_uint8_csv",
    "read_cifar_batches",
    "read_idx",
]
