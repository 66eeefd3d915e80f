"""Data loading: datasets, samplers, the DataLoader (with worker processes), transforms, text
tools and real datasets (``buildingai.data.datasets``)."""

from . import datasets, text, transforms
from ._worker import (
    DataLoaderError,
    DataLoaderTimeoutError,
    DataLoaderWorkerError,
    WorkerInfo,
    get_worker_info,
)
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    ResumableSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "DataLoaderError",
    "DataLoaderTimeoutError",
    "DataLoaderWorkerError",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "ResumableSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "datasets",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
    "text",
    "transforms",
]
