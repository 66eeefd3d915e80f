"""Pruning in PyTorch's spelling (``torch.nn.utils.prune``): magnitude, random and structured
masks kept as ``<name>_orig`` (Parameter) + ``<name>_mask`` (buffer), with the pruned tensor
recomputed before every forward; ``remove`` makes it permanent; ``sparsity_report`` counts zeros.

Example::

    from buildingai.nn.utils import prune
    prune.l1_unstructured(model.fc1, "weight", amount=0.5)
    prune.global_unstructured(
        [(model.fc1, "weight"), (model.fc2, "weight")],
        pruning_method=prune.L1Unstructured, amount=0.8,
    )
    print(prune.sparsity_report(model))
    prune.remove(model.fc1, "weight")
"""

from .functional import (
    attention_heads,
    custom_from_mask,
    global_unstructured,
    identity,
    is_pruned,
    l1_unstructured,
    ln_structured,
    pruned_names,
    pruned_tensor,
    random_structured,
    random_unstructured,
    remove,
)
from .methods import (
    BasePruningMethod,
    CustomFromMask,
    Identity,
    L1Unstructured,
    LnStructured,
    PruningContainer,
    PruningError,
    RandomStructured,
    RandomUnstructured,
)
from .report import SparsityReport, sparsity_report

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "PruningError",
    "RandomStructured",
    "RandomUnstructured",
    "SparsityReport",
    "attention_heads",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "pruned_names",
    "pruned_tensor",
    "random_structured",
    "random_unstructured",
    "remove",
    "sparsity_report",
]
