"""Gradient clipping where PyTorch users look for it (``torch.nn.utils.clip_grad_norm_``); the
functions live in ``buildingai.optim.clip``."""

from ...optim.clip import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
