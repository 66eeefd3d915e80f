"""``torch.utils.data.distributed.DistributedSampler``: ``buildingai.distributed``'s sampler,
which gives each rank its own share of a dataset (same arguments as PyTorch's)."""

from ...distributed.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
