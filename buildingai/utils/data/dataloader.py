"""``torch.utils.data.dataloader``'s names: the DataLoader of ``buildingai.data`` and its
collate functions."""

from ...data import DataLoader, default_collate, default_convert, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
