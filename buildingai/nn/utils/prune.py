"""``from buildingai.nn.utils import prune``: the pruning API where PyTorch users look for it
(``torch.nn.utils.prune``); it lives in ``buildingai.prune``."""

from ...prune import *  # noqa: F403
from ...prune import __all__  # noqa: F401
