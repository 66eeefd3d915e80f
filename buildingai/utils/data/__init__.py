"""``buildingai.utils.data``: PyTorch's spelling (``torch.utils.data``) of ``buildingai.data``.

The names here are ``buildingai.data``'s own classes and functions, not copies, so
``from buildingai.utils.data import DataLoader`` and ``buildingai.data.DataLoader`` are the same
object. ``DistributedSampler`` is ``buildingai.distributed.DistributedSampler``, imported on
first use. The submodules ``dataset``, ``sampler``, ``dataloader`` and ``distributed`` mirror
PyTorch's for imports such as ``from torch.utils.data.sampler import SubsetRandomSampler``.
"""

import importlib

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
from . import dataloader, dataset, sampler


def __getattr__(name: str):
    # buildingai.distributed is imported on first use, so `import buildingai` does not pay for it
    if name in ("DistributedSampler", "distributed"):
        distributed = importlib.import_module(f"{__name__}.distributed")
        return distributed if name == "distributed" else distributed.DistributedSampler
    raise AttributeError(f"module 'buildingai.utils.data' has no attribute {name!r}")


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
