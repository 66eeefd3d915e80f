"""Distributed training with explicit collectives: the training loop says where ranks talk.

    from buildingai.distributed import all_reduce, init_process_group
    init_process_group()                      # "mpi" under a launcher, "local" for one process
    loss = model(batch)
    loss.backward()
    for param in model.parameters():
        all_reduce(param.grad, op="mean")
    optimizer.step()

Run it on N processes with ``buildingai launch -n N script.py`` (MPI through mpi4py); a plain
``python script.py`` is a world of one, where every collective works. A collective that waits
longer than the group's timeout raises ``CollectiveTimeoutError`` naming the missing rank.
"""

from .collectives import (
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from .errors import CollectiveMismatchError, CollectiveTimeoutError, DistributedError
from .group import (
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    new_group,
)
from .helpers import GradientReducer, all_reduce_gradients, broadcast_parameters
from .sampler import DistributedSampler
from .sharded_optimizer import ShardedOptimizer
from .sharded_parameters import ShardedModel, shard


def ledger(group: ProcessGroup | None = None) -> list:
    """Debug mode's record of this rank's collectives in ``group`` (the world by default): one
    ``Entry(seq, op, shape, dtype, site)`` per call, oldest first (the last 1000)."""
    from .group import default_group

    return list((group or default_group()).ledger)


__all__ = [
    "CollectiveMismatchError", "CollectiveTimeoutError", "DistributedError",
    "DistributedSampler", "GradientReducer", "ProcessGroup", "ShardedModel", "ShardedOptimizer",
    "Work",
    "all_gather", "all_gather_into_tensor", "all_reduce", "all_reduce_gradients", "barrier",
    "broadcast", "broadcast_parameters", "destroy_process_group", "gather", "get_backend",
    "get_rank", "get_world_size", "init_process_group", "irecv", "is_initialized", "isend",
    "ledger", "new_group", "recv", "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
    "shard",
]  # fmt: skip
