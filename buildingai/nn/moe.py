"""Mixture of experts: a router that sends each sample to a few experts, the experts, and the
differentiable scatter that puts their outputs back in batch order.

Data flow of ``MoELayer`` for N samples, E experts and top-k routing::

    x (N, dim) -> Router -> indices (N, k), gates (N, k), aux_loss ()
    group_by_expert(indices, gates, E) -> for each expert e: positions_e (n_e,), gates_e (n_e,)
    expert e runs on x[positions_e] only -> outputs_e (n_e, dim)
    dynamic_concat(outputs, positions, gates, N) -> y (N, dim), y[i] = sum_j gate_ij expert_ij(x_i)

Each expert computes only on the samples routed to it (sum_e n_e = N k); the loop is over
experts, never over samples. Gradients reach the experts through their outputs and the router
through the gate weights (and through the auxiliary load-balancing loss).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from .. import functions
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import ShapeError
from .containers import ModuleList
from .linear import Linear
from .module import Module
from .shapes import shapes

__all__ = [
    "Expert",
    "MoELayer",
    "MoEOutput",
    "Router",
    "Routing",
    "dynamic_concat",
    "group_by_expert",
    "load_balancing_loss",
]


class Routing(NamedTuple):
    """What a ``Router`` returns: ``indices`` (N, k) int64 chosen experts, best first;
    ``weights`` (N, k) their gate weights; ``aux_loss`` () the load-balancing loss."""

    indices: Tensor
    weights: Tensor
    aux_loss: Tensor


class MoEOutput(NamedTuple):
    """What a ``MoELayer`` returns: ``output`` (*, dim), ``aux_loss`` () to add (scaled) to the
    training loss, and the routing ``indices`` (*, k) for inspecting expert utilisation."""

    output: Tensor
    aux_loss: Tensor
    indices: Tensor


def _index_array(index, what: str):
    """The backend integer array of an index given as a Tensor, an array or a list."""
    array = index.data if isinstance(index, Tensor) else index
    if not hasattr(array, "shape"):
        array = np.asarray(array, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise ShapeError(
            f"[moe] {what} must hold integers, got dtype {array.dtype}",
            help="pass integer sample positions (int64)",
        )
    return array


def load_balancing_loss(probs: Tensor, indices) -> Tensor:
    """The Switch Transformer load-balancing loss ``E * sum_e f_e * P_e``.

    probs: (N, E) router probabilities (softmax over experts); indices: (N, k) chosen experts.
    ``f_e`` is the fraction of the N k assignments that went to expert e (a count: no
    gradient), ``P_e`` the mean router probability of expert e over the batch (differentiable).
    Both sum to 1 over experts; the loss is 1 when routing is uniform and grows up to E as the
    router collapses onto one expert, so minimising it pushes probability mass toward the
    under-used experts. With no samples it is 0.
    """
    index = _index_array(indices, "indices")
    xp = array_namespace(probs.data)
    count, num_experts = probs.shape
    assignments = xp.bincount(index.reshape(-1), minlength=num_experts)
    fraction = assignments / max(index.size, 1)  # f_e
    mean_prob = probs.sum(axis=0) / max(count, 1)  # P_e
    return (mean_prob * Tensor(fraction.astype(probs.dtype))).sum() * num_experts


class Router(Module):
    """A linear gate that picks ``top_k`` of ``num_experts`` experts for each sample.

    x: (N, dim) -> ``Routing(indices (N, k) int64, weights (N, k), aux_loss ())``.

    The gate computes logits ``x W^T`` (``gate.weight``: (num_experts, dim), no bias) and
    probabilities ``softmax(logits)`` over the experts. The k experts with the largest logits
    are chosen (ties go to the lower index), best first. With ``renormalize=True`` (default, as
    in GShard and Mixtral) the gate weights are the probabilities renormalised over the chosen
    experts, ``softmax(chosen logits)``, so each row sums to 1; with ``renormalize=False`` they
    are the raw probabilities of the chosen experts (as in Switch Transformer). Note that with
    ``top_k=1`` renormalised weights are always 1, so the router then learns only from the
    auxiliary loss; use ``renormalize=False`` to let the task loss train it too.

    ``aux_loss`` is ``load_balancing_loss(probs, indices)``: differentiable with respect to
    the gate weights; add it, scaled (around 0.01), to the training loss.

    ``noise_std > 0`` adds Gaussian noise of that standard deviation to the logits in
    training mode (noisy top-k gating), which spreads early routing; ``eval()`` turns it off.
    """

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        noise_std: float = 0.0,
        renormalize: bool = True,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        if num_experts < 1:
            raise ValueError(f"Router needs at least one expert, got num_experts={num_experts}")
        if not 1 <= top_k <= num_experts:
            raise ValueError(
                f"Router top_k must be between 1 and num_experts={num_experts}, got {top_k}"
            )
        if noise_std < 0:
            raise ValueError(f"Router noise_std must be >= 0, got {noise_std}")
        self.dim = dim
        self.num_experts = num_experts
        self.top_k = top_k
        self.noise_std = float(noise_std)
        self.renormalize = renormalize
        self.gate = Linear(dim, num_experts, bias=False, dtype=dtype, device=device)

    @shapes("x: [tokens, dim] -> ([tokens, k], [tokens, k], [])")
    def forward(self, x: Tensor) -> Routing:
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ShapeError(
                f"[Router] expects x of shape (N, {self.dim}), got {tuple(x.shape)}",
                help="flatten the leading dimensions first: x.reshape(-1, dim)",
            )
        logits = self.gate(x)  # (N, E)
        if self.training and self.noise_std > 0:
            noise = functions.randn(*logits.shape, dtype=logits.dtype, device=logits.device)
            logits = logits + noise * self.noise_std
        probs = functions.softmax(logits, axis=-1)  # (N, E)
        xp = array_namespace(logits.data)
        # The choice itself has no gradient: a stable sort of the negated logits puts the
        # largest first and keeps ties in index order.
        order = _stable_argsort(xp, -logits.data)
        indices = xp.ascontiguousarray(order[:, : self.top_k]).astype(np.int64)  # (N, k)
        if self.renormalize:
            chosen_logits = functions.take_along_axis(logits, indices, axis=-1)
            weights = functions.softmax(chosen_logits, axis=-1)  # (N, k), rows sum to 1
        else:
            weights = functions.take_along_axis(probs, indices, axis=-1)
        aux_loss = load_balancing_loss(probs, indices)
        return Routing(Tensor(indices), weights, aux_loss)

    def extra_repr(self) -> str:
        text = f"dim={self.dim}, num_experts={self.num_experts}, top_k={self.top_k}"
        if self.noise_std:
            text += f", noise_std={self.noise_std}"
        if not self.renormalize:
            text += ", renormalize=False"
        return text


_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": functions.gelu,
    "relu": functions.relu,
    "silu": functions.silu,
    "tanh": functions.tanh,
    "sigmoid": functions.sigmoid,
}


class Expert(Module):
    """A two-layer MLP: x (*, dim) -> fc2(activation(fc1(x))) (*, out_dim).

    ``fc1`` is Linear(dim, hidden) and ``fc2`` Linear(hidden, out_dim), ``out_dim`` defaulting
    to ``dim``. ``activation`` is one of "gelu", "relu", "silu", "tanh", "sigmoid", or any
    function of a tensor.
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        activation: str | Callable[[Tensor], Tensor] = "gelu",
        out_dim: int | None = None,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(
                    f"Expert activation must be one of {sorted(_ACTIVATIONS)} or a function, "
                    f"got {activation!r}"
                )
            self.activation_name = activation
            self.activation = _ACTIVATIONS[activation]
        else:
            self.activation_name = getattr(activation, "__name__", type(activation).__name__)
            self.activation = activation
        self.fc1 = Linear(dim, hidden, dtype=dtype, device=device)
        self.fc2 = Linear(hidden, dim if out_dim is None else out_dim, dtype=dtype, device=device)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.activation(self.fc1(x)))

    def extra_repr(self) -> str:
        return f"activation={self.activation_name!r}"


def group_by_expert(indices, weights: Tensor, num_experts: int) -> tuple[list, list[Tensor]]:
    """Group the routing decisions by expert.

    indices: (N, k) integers in ``0..num_experts-1`` (a Tensor or array); weights: (N, k) gate
    weights. Returns ``(positions, expert_weights)``, two lists of length ``num_experts``:
    ``positions[e]`` (n_e,) int64 backend array of the samples routed to expert e (in batch
    order), ``expert_weights[e]`` (n_e,) their gate weights for e (differentiable views of
    ``weights``). One sort of the N k assignments, no loop over samples.
    """
    index = _index_array(indices, "indices")
    if index.ndim != 2 or tuple(weights.shape) != tuple(index.shape):
        raise ShapeError(
            f"[group_by_expert] indices and weights must both be (N, k), got "
            f"{tuple(index.shape)} and {tuple(weights.shape)}"
        )
    if index.size and (int(index.min()) < 0 or int(index.max()) >= num_experts):
        raise ShapeError(
            f"[group_by_expert] expert indices must lie in 0..{num_experts - 1}, got values "
            f"from {int(index.min())} to {int(index.max())}"
        )
    xp = array_namespace(index)
    top_k = index.shape[1]
    flat = index.reshape(-1)  # assignment a = (sample a // k, slot a % k)
    # Sorting by (expert, assignment) keeps each expert's samples in batch order; the keys are
    # distinct, so any sort algorithm gives the same order.
    size = flat.size
    keys = flat.astype(np.int64) * size + xp.arange(size, dtype=np.int64)
    order = xp.argsort(keys).astype(np.int64)
    counts = xp.bincount(flat, minlength=num_experts)
    bounds = [0] + [int(end) for end in np.cumsum(_to_host(counts))]
    samples = order // top_k
    sorted_weights = functions.getitem(weights.reshape(-1), order)  # (N k,)
    positions, expert_weights = [], []
    for expert in range(num_experts):
        start, stop = bounds[expert], bounds[expert + 1]
        positions.append(samples[start:stop])
        expert_weights.append(sorted_weights[start:stop])
    return positions, expert_weights


def _stable_argsort(xp, array):
    """``argsort`` along the last axis that keeps equal elements in index order. NumPy needs
    ``kind="stable"``; CuPy's sort is always stable and (in some versions) takes no ``kind``."""
    try:
        return xp.argsort(array, axis=-1, kind="stable")
    except TypeError:
        return xp.argsort(array, axis=-1)


def _to_host(array) -> np.ndarray:
    return array.get() if hasattr(array, "get") else np.asarray(array)


def dynamic_concat(
    expert_outputs: Sequence[Tensor],
    expert_indices: Sequence,
    weights: Sequence[Tensor] | None,
    batch_size: int,
) -> Tensor:
    """Put per-expert outputs back in batch order, weighted by their gates, summing where a
    sample went to several experts.

    expert_outputs[e]: (n_e, *F), the output of expert e on the samples at positions
    ``expert_indices[e]`` (n_e,) (integers in ``0..batch_size-1``, a Tensor, array or list);
    weights[e]: (n_e,) their gate weights, or ``weights=None`` for an unweighted sum. Returns
    (batch_size, *F) with ``out[i] = sum over (e, j) with expert_indices[e][j] == i of
    weights[e][j] * expert_outputs[e][j]``; samples no expert saw get zeros.

    One concatenation and one scatter-add (``zeros_index_add``, whose adjoint is a gather), so
    the gradient reaches every expert output and every gate weight, to any order.
    """
    count = len(expert_outputs)
    if count == 0:
        raise ShapeError(
            "[dynamic_concat] got no expert outputs",
            help="pass one output per expert (an expert with no samples gives shape (0, *F))",
        )
    if len(expert_indices) != count or (weights is not None and len(weights) != count):
        lengths = f"{count} outputs, {len(expert_indices)} index arrays"
        if weights is not None:
            lengths += f", {len(weights)} weight tensors"
        raise ShapeError(
            f"[dynamic_concat] needs one index array (and one weight tensor) per expert output, "
            f"got {lengths}"
        )
    feature = tuple(expert_outputs[0].shape[1:])
    arrays = []
    for expert, output in enumerate(expert_outputs):
        index = _index_array(expert_indices[expert], f"expert_indices[{expert}]")
        rows = output.shape[0] if output.ndim else None
        if tuple(output.shape[1:]) != feature or rows is None:
            raise ShapeError(
                f"[dynamic_concat] expert {expert} output has shape {tuple(output.shape)}, but "
                f"expert 0 gives (n, {', '.join(map(str, feature))}); every expert must return "
                "(n_e, *F) with the same F",
            )
        if index.shape != (rows,):
            raise ShapeError(
                f"[dynamic_concat] expert {expert} has {rows} output rows but its index has "
                f"shape {tuple(index.shape)}; it must be ({rows},)",
                help="pass the 1-D sample positions each expert was run on",
            )
        if weights is not None and tuple(weights[expert].shape) != (rows,):
            raise ShapeError(
                f"[dynamic_concat] expert {expert} has {rows} output rows but its weights have "
                f"shape {tuple(weights[expert].shape)}; they must be ({rows},)"
            )
        if index.size and (int(index.min()) < 0 or int(index.max()) >= batch_size):
            raise ShapeError(
                f"[dynamic_concat] expert {expert} has sample positions from {int(index.min())} "
                f"to {int(index.max())}, outside 0..{batch_size - 1} (batch_size={batch_size})"
            )
        arrays.append(index)
    xp = array_namespace(expert_outputs[0].data)
    positions = xp.concatenate([xp.asarray(array, dtype=np.int64) for array in arrays])
    values = functions.concatenate(list(expert_outputs), axis=0)  # (sum n_e, *F)
    if weights is not None:
        gates = functions.concatenate(list(weights), axis=0)  # (sum n_e,)
        values = values * gates.reshape(gates.shape + (1,) * len(feature))
    return functions.zeros_index_add(values, (batch_size,) + feature, (positions,))


class MoELayer(Module):
    """A mixture-of-experts feed-forward layer: each sample goes to ``top_k`` of
    ``num_experts`` ``Expert(dim, hidden)`` MLPs, and their outputs are summed with the gate
    weights.

    x: (*, dim) -> ``MoEOutput(output (*, dim), aux_loss (), indices (*, top_k))``. The
    leading dimensions are flattened into N samples (tokens) for routing. Add
    ``aux_coef * aux_loss`` to the training loss to keep the experts evenly used; the loss is
    returned, never added behind the training loop's back.
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        num_experts: int,
        top_k: int = 2,
        noise_std: float = 0.0,
        activation: str | Callable[[Tensor], Tensor] = "gelu",
        renormalize: bool = True,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self.dim = dim
        self.num_experts = num_experts
        self.top_k = top_k
        self.router = Router(
            dim, num_experts, top_k, noise_std, renormalize, dtype=dtype, device=device
        )
        self.experts = ModuleList(
            [
                Expert(dim, hidden, activation, dtype=dtype, device=device)
                for _ in range(num_experts)
            ]
        )

    @shapes("x: [*lead, dim] -> ([*lead, dim], [], [*lead, k])")
    def forward(self, x: Tensor) -> MoEOutput:
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ShapeError(
                f"[MoELayer] expects x of shape (*, {self.dim}), got {tuple(x.shape)}",
            )
        lead = tuple(x.shape[:-1])
        tokens = x.reshape(-1, self.dim)  # (N, dim)
        routing = self.router(tokens)
        positions, gates = group_by_expert(routing.indices, routing.weights, self.num_experts)
        # Each expert sees only its own samples: (n_e, dim) -> (n_e, dim).
        outputs = [
            expert(functions.getitem(tokens, index))
            for expert, index in zip(self.experts, positions)
        ]
        mixed = dynamic_concat(outputs, positions, gates, tokens.shape[0])  # (N, dim)
        return MoEOutput(
            mixed.reshape(lead + (self.dim,)),
            routing.aux_loss,
            routing.indices.reshape(lead + (self.top_k,)),
        )

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_experts={self.num_experts}, top_k={self.top_k}"
