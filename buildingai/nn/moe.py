"""Mixture of experts: a router that sends each sample to a few experts, the experts, and the
differentiable scatter that puts their outputs back in batch order.

Data flow of ``MoELayer`` for N samples, E experts and top-k routing::

    x (N, dim) -> Router -> Routing: gates (N, E) with fields indices (N, k), weights (N, k),
                            aux_loss ()
    group_by_expert(indices, gates, E) -> for each expert e: positions_e (n_e,), gates_e (n_e,)
    expert e runs on x[positions_e] only -> outputs_e (n_e, dim)
    dynamic_concat(outputs, positions, gates, N) -> y (N, dim), y[i] = sum_j gate_ij expert_ij(x_i)

Each expert computes only on the samples routed to it (sum_e n_e = N k); the loop is over
experts, never over samples. Gradients reach the experts through their outputs and the router
through the gate weights (and through the auxiliary load-balancing loss).

The same pieces serve a network written by hand: the router's output is the (N, E) gate tensor,
so ``mask = routing.argmax(1) == e`` selects expert e's samples, ``expert(x[mask])`` runs it on
them, and ``dynamic_concat(outputs, routing)`` puts every row back in place, scaled by its gate.
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


class Routing(Tensor):
    """What a ``Router`` returns: the (N, E) gate weights, a Tensor that differentiates back
    into the router, with the routing decision as fields.

    As a tensor, ``routing[i, e]`` is the gate weight of expert e for sample i: the chosen
    experts' weights, zero for the others. So ``routing.argmax(1)`` (N,) is each sample's best
    expert and ``dynamic_concat(outputs, routing)`` mixes per-expert outputs back by it. Fields:

    - ``indices`` (N, k) int64: the chosen experts, best first;
    - ``weights`` (N, k): their gate weights, ``routing[i, indices[i, j]] == weights[i, j]``;
    - ``aux_loss`` (): the load-balancing loss.
    """

    __slots__ = ("indices", "weights", "aux_loss")

    @classmethod
    def of(cls, gates: Tensor, indices: Tensor, weights: Tensor, aux_loss: Tensor) -> Routing:
        """A Routing that is ``gates`` (same array, same place in the graph) plus the fields."""
        routing = cls.__new__(cls)
        for slot in Tensor.__slots__:
            if slot != "__weakref__":
                setattr(routing, slot, getattr(gates, slot))
        routing.indices, routing.weights, routing.aux_loss = indices, weights, aux_loss
        return routing

    def __repr__(self) -> str:
        return f"Routing(gates={Tensor.__repr__(self)}, indices={self.indices!r})"


class MoEOutput(NamedTuple):
    """What a ``MoELayer`` returns: ``output`` (*, dim), ``aux_loss`` () to add (scaled) to the
    training loss, and the routing ``indices`` (*, k) for inspecting expert utilisation."""

    output: Tensor
    aux_loss: Tensor
    indices: Tensor


def _index_array(index, what: str):
    """The backend integer array of an index given as a Tensor, an array or a list."""
    array = index.array if isinstance(index, Tensor) else index
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
    xp = array_namespace(probs.array)
    count, num_experts = probs.shape
    assignments = xp.bincount(index.reshape(-1), minlength=num_experts)
    fraction = assignments / max(index.size, 1)  # f_e
    mean_prob = probs.sum(axis=0) / max(count, 1)  # P_e
    return (mean_prob * Tensor(fraction.astype(probs.dtype))).sum() * num_experts


class Router(Module):
    """A linear gate that picks ``top_k`` of ``num_experts`` experts for each sample.

    x: (N, dim) -> ``Routing``: the (N, num_experts) gate weights (zero for the experts not
    chosen), with fields ``indices`` (N, k) int64, ``weights`` (N, k) and ``aux_loss`` ().

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

    @shapes("x: [tokens, dim] -> [tokens, experts]")
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
        xp = array_namespace(logits.array)
        # The choice itself has no gradient: a stable sort of the negated logits puts the
        # largest first and keeps ties in index order.
        order = _stable_argsort(xp, -logits.array)
        indices = xp.ascontiguousarray(order[:, : self.top_k]).astype(np.int64)  # (N, k)
        if self.renormalize:
            chosen_logits = functions.take_along_axis(logits, indices, axis=-1)
            weights = functions.softmax(chosen_logits, axis=-1)  # (N, k), rows sum to 1
        else:
            weights = functions.take_along_axis(probs, indices, axis=-1)
        aux_loss = load_balancing_loss(probs, indices)
        rows = xp.arange(indices.shape[0], dtype=np.int64)[:, None]
        gates = functions.zeros_index_add(weights, logits.shape, (rows, indices))  # (N, E)
        return Routing.of(gates, Tensor(indices), weights, aux_loss)

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
    routing: Tensor | Sequence,
    weights: Sequence[Tensor] | None = None,
    batch_size: int | None = None,
) -> Tensor:
    """Put per-expert outputs back in batch order, scaled by their gate weights. Two forms:

    ``dynamic_concat(expert_outputs, gates)``, after routing each sample to its best expert:
    gates (N, E) are every expert's gate weight for every sample (a ``Router``'s output, or any
    such tensor), and sample i went to expert ``e_i = gates[i].argmax()`` (the first on ties, as
    ``gates.argmax(1)``). ``expert_outputs`` are the outputs (n_e, *F) of the experts that got
    samples, in expert order, each on its samples in batch order, as ``expert(x[mask])`` with
    ``mask = gates.argmax(1) == e`` gives; an expert with no samples may be left out or given
    as (0, *F). Returns (N, *F) with ``out[i] = gates[i, e_i] * (row of expert e_i for i)``.

    ``dynamic_concat(expert_outputs, expert_indices, weights, batch_size)``, after top-k
    routing (``group_by_expert``): expert_outputs[e] (n_e, *F) is expert e's output on the
    samples at positions ``expert_indices[e]`` (n_e,) (integers in ``0..batch_size-1``, a Tensor,
    array or list); weights[e] (n_e,) their gate weights, or ``weights=None`` for an unweighted
    sum. Returns (batch_size, *F) with ``out[i] = sum over (e, j) with expert_indices[e][j] == i
    of weights[e][j] * expert_outputs[e][j]``; samples no expert saw get zeros.

    Either way it is one concatenation and one gather or scatter-add, so the gradient reaches
    every expert output and every gate weight, to any order.
    """
    if len(expert_outputs) == 0:
        raise ShapeError(
            "[dynamic_concat] got no expert outputs",
            help="pass one output per expert (an expert with no samples gives shape (0, *F))",
        )
    if batch_size is None:
        if weights is not None or not isinstance(routing, Tensor):
            raise ShapeError(
                "[dynamic_concat] with per-expert sample positions it needs batch_size",
                help="call dynamic_concat(outputs, gates) with the (N, E) gate weights, or "
                "dynamic_concat(outputs, positions, weights, batch_size)",
            )
        return _concat_by_best_expert(expert_outputs, routing)
    return _concat_by_positions(expert_outputs, routing, weights, batch_size)


def _check_rows(expert: int, output: Tensor, feature: tuple) -> int:
    """The row count of expert ``expert``'s output, which must be (n, *feature)."""
    if output.ndim == 0 or tuple(output.shape[1:]) != feature:
        raise ShapeError(
            f"[dynamic_concat] expert {expert} output has shape {tuple(output.shape)}, but "
            f"expert 0 gives (n, {', '.join(map(str, feature))}); every expert must return "
            "(n_e, *F) with the same F",
        )
    return output.shape[0]


def _concat_by_best_expert(expert_outputs: Sequence[Tensor], gates: Tensor) -> Tensor:
    """``dynamic_concat(expert_outputs, gates)``: see there."""
    if gates.ndim != 2:
        raise ShapeError(
            f"[dynamic_concat] the gate weights must be (N, num_experts), got shape "
            f"{tuple(gates.shape)}",
            help="pass the router's output, or dynamic_concat(outputs, positions, weights, N)",
        )
    count, num_experts = gates.shape
    xp = array_namespace(gates.array)
    best = xp.argmax(gates.array, axis=1)  # (N,), the choice gates.argmax(1) makes
    rows_per_expert = [int(n) for n in _to_host(xp.bincount(best, minlength=num_experts))]
    used = [expert for expert in range(num_experts) if rows_per_expert[expert]]
    if len(expert_outputs) == num_experts:
        experts = list(range(num_experts))
    elif len(expert_outputs) == len(used):
        experts = used
    else:
        raise ShapeError(
            f"[dynamic_concat] got {len(expert_outputs)} expert outputs, but the gate weights "
            f"send samples to {len(used)} of {num_experts} experts ({used}) by their argmax",
            help="pass one output per expert that got samples, in expert order (or one per expert)",
        )
    feature = tuple(expert_outputs[0].shape[1:])
    for expert, output in zip(experts, expert_outputs):
        rows = _check_rows(expert, output, feature)
        if rows != rows_per_expert[expert]:
            raise ShapeError(
                f"[dynamic_concat] expert {expert} output has {rows} rows, but the gate "
                f"weights send it {rows_per_expert[expert]} samples (gates.argmax(1) == "
                f"{expert})",
                help="run each expert on x[gates.argmax(1) == e], in expert order",
            )
    # Rows arrive grouped by expert, each group in batch order: sample order[j] owns row j.
    order = _stable_argsort(xp, best)
    inverse = xp.empty_like(order)
    inverse[order] = xp.arange(count, dtype=order.dtype)
    values = functions.concatenate(list(expert_outputs), axis=0)  # (N, *F), expert order
    best_gate = functions.take_along_axis(gates, best[:, None].astype(np.int64), axis=1)  # (N, 1)
    in_place = functions.getitem(values, inverse)  # (N, *F), batch order
    return in_place * best_gate.reshape((count,) + (1,) * len(feature))


def _concat_by_positions(
    expert_outputs: Sequence[Tensor],
    expert_indices: Sequence,
    weights: Sequence[Tensor] | None,
    batch_size: int,
) -> Tensor:
    """``dynamic_concat(expert_outputs, expert_indices, weights, batch_size)``: see there."""
    count = len(expert_outputs)
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
        rows = _check_rows(expert, output, feature)
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
    xp = array_namespace(expert_outputs[0].array)
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
