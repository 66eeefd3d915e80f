"""``buildingai.utils.data``: PyTorch's spelling (``torch.utils.data``) of ``buildingai.data``.

The names here are ``buildingai.data``'s own classes and functions, not copies, so
``from buildingai.utils.data import DataLoader`` and ``buildingai.data.DataLoader`` are the same
object. ``DistributedSampler`` is ``buildingai.distributed.DistributedSampler``. The submodules
``dataset``, ``sampler``, ``dataloader`` and ``distributed`` mirror PyTorch's for imports such
as ``from torch.utils.data.sampler import SubsetRandomSampler``.
"""

from ...data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from . import dataloader, dataset, distributed, sampler
from .distributed import DistributedSampler

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
