"""Mixture of experts: the router against NumPy references, dynamic_concat against a dense
reference (every expert on every sample, masked) in PyTorch, finite-difference checks, errors,
and a tiny model that trains."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.debug import gradcheck, gradgradcheck
from buildingai.errors import ShapeError
from buildingai.nn.moe import (
    Expert,
    MoELayer,
    Router,
    dynamic_concat,
    group_by_expert,
    load_balancing_loss,
)
from buildingai.nn.shapes import shape_checks

torch = pytest.importorskip("torch")

F64 = bai.float64


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _aux_reference(probs, indices, num_experts):
    fraction = np.bincount(indices.reshape(-1), minlength=num_experts) / indices.size
    return num_experts * np.sum(fraction * probs.mean(axis=0))


# ----- Router ---------------------------------------------------------------------------------
@pytest.mark.parametrize("num_experts, top_k", [(4, 1), (4, 2), (5, 3), (3, 3)])
def test_router_matches_numpy_reference(num_experts, top_k):
    bai.manual_seed(1)
    router = Router(6, num_experts, top_k, dtype=F64)
    x = np.random.default_rng(0).standard_normal((11, 6))
    routing = router(bai.tensor(x))
    indices, weights, aux = routing.indices, routing.weights, routing.aux_loss
    logits = x @ router.gate.weight.numpy().T
    expected = np.argsort(-logits, axis=-1, kind="stable")[:, :top_k]
    np.testing.assert_array_equal(indices.numpy(), expected)
    assert indices.dtype == bai.int64
    chosen = np.take_along_axis(logits, expected, axis=-1)
    np.testing.assert_allclose(weights.numpy(), _softmax(chosen), rtol=1e-12)
    np.testing.assert_allclose(weights.numpy().sum(axis=-1), 1.0, rtol=1e-12)
    # best first: the weights are sorted in decreasing order
    assert np.all(np.diff(weights.numpy(), axis=-1) <= 0)
    probs = _softmax(logits)
    np.testing.assert_allclose(aux.item(), _aux_reference(probs, expected, num_experts), 1e-12)


def test_router_ties_go_to_the_lower_index():
    router = Router(2, 4, top_k=2, dtype=F64)
    with bai.no_grad():
        router.gate.weight.copy_(bai.tensor([[1.0, 0.0], [2.0, 0.0], [2.0, 0.0], [1.0, 0.0]]))
    indices = router(bai.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=F64)).indices
    np.testing.assert_array_equal(indices.numpy(), [[1, 2], [0, 3]])


def test_router_without_renormalisation_gives_raw_probabilities():
    bai.manual_seed(2)
    router = Router(3, 4, top_k=2, renormalize=False, dtype=F64)
    x = np.random.default_rng(1).standard_normal((7, 3))
    routing = router(bai.tensor(x))
    indices, weights = routing.indices, routing.weights
    probs = _softmax(x @ router.gate.weight.numpy().T)
    expected = np.take_along_axis(probs, indices.numpy(), axis=-1)
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-12)
    # top-1 renormalised weights are all 1 (documented: the router then learns from aux only)
    ones = Router(3, 4, top_k=1, dtype=F64)(bai.tensor(x)).weights
    np.testing.assert_allclose(ones.numpy(), 1.0)


def test_aux_loss_gradient_matches_pytorch():
    """The aux loss is differentiable w.r.t. the gate weight through the mean probabilities
    (the routed fractions are counts)."""
    bai.manual_seed(3)
    router = Router(5, 4, top_k=2, dtype=F64)
    x = np.random.default_rng(2).standard_normal((9, 5))
    routing = router(bai.tensor(x))
    indices, aux = routing.indices, routing.aux_loss
    aux.backward()
    weight = torch.tensor(router.gate.weight.numpy(), requires_grad=True)
    probs = torch.softmax(torch.tensor(x) @ weight.T, dim=-1)
    fraction = torch.bincount(torch.tensor(indices.numpy()).reshape(-1), minlength=4).double() / 18
    loss = 4 * (fraction * probs.mean(dim=0)).sum()
    loss.backward()
    np.testing.assert_allclose(aux.item(), loss.item(), rtol=1e-12)
    np.testing.assert_allclose(router.gate.weight.grad.numpy(), weight.grad.numpy(), rtol=1e-10)


def test_load_balancing_loss_values():
    uniform = bai.full((4, 2), 0.5, dtype=F64)
    balanced = bai.tensor([[0], [1], [0], [1]])
    assert load_balancing_loss(uniform, balanced).item() == pytest.approx(1.0)
    collapsed = bai.tensor([[1.0, 0.0]] * 4, dtype=F64)
    assert load_balancing_loss(collapsed, np.zeros((4, 1), np.int64)).item() == pytest.approx(2.0)
    empty = load_balancing_loss(bai.zeros(0, 3, dtype=F64), np.zeros((0, 2), np.int64))
    assert empty.item() == 0.0


def test_router_noise_only_in_training():
    bai.manual_seed(4)
    router = Router(4, 6, top_k=2, noise_std=5.0, dtype=F64)
    x = bai.tensor(np.random.default_rng(3).standard_normal((50, 4)))
    router.eval()
    first, second = router(x).indices.numpy(), router(x).indices.numpy()
    np.testing.assert_array_equal(first, second)
    router.train()
    noisy = router(x)
    assert not np.array_equal(noisy.indices.numpy(), first)
    np.testing.assert_allclose(noisy.weights.numpy().sum(axis=-1), 1.0, rtol=1e-12)


def test_router_errors():
    with pytest.raises(ValueError, match=r"top_k must be between 1 and num_experts=3, got 4"):
        Router(2, 3, top_k=4)
    with pytest.raises(ValueError, match=r"top_k must be between 1 and num_experts=3, got 0"):
        Router(2, 3, top_k=0)
    with pytest.raises(ValueError, match="at least one expert"):
        Router(2, 0)
    with pytest.raises(ValueError, match="noise_std must be >= 0"):
        Router(2, 3, noise_std=-1.0)
    with pytest.raises(ShapeError, match=r"\[Router\] expects x of shape \(N, 2\), got \(4, 3\)"):
        Router(2, 3)(bai.zeros(4, 3))
    assert "num_experts=3, top_k=2, noise_std=0.5" in repr(Router(2, 3, noise_std=0.5))


def test_router_output_is_the_gate_tensor_with_the_routing_fields():
    """As a tensor the routing is (N, E): the chosen experts' gate weights, zeros elsewhere."""
    bai.manual_seed(5)
    router = Router(4, 5, top_k=2, dtype=F64)
    x = np.random.default_rng(4).standard_normal((8, 4))
    with shape_checks():
        routing = router(bai.tensor(x))
    assert isinstance(routing, bai.Tensor) and routing.shape == (8, 5)
    indices, weights = routing.indices.numpy(), routing.weights.numpy()
    dense = np.zeros((8, 5))
    np.put_along_axis(dense, indices, weights, axis=1)
    np.testing.assert_array_equal(routing.numpy(), dense)
    np.testing.assert_array_equal(routing.argmax(1).numpy(), indices[:, 0])
    assert routing.aux_loss.shape == () and "Routing(gates=tensor(" in repr(routing)
    # the tensor is differentiable: its gradient reaches the gate through the chosen logits
    upstream = np.random.default_rng(6).standard_normal((8, 5))
    (routing * bai.tensor(upstream)).sum().backward()
    weight = torch.tensor(router.gate.weight.numpy(), requires_grad=True)
    logits = torch.tensor(x) @ weight.T
    chosen = torch.tensor(indices)
    gates = torch.softmax(torch.gather(logits, 1, chosen), dim=-1)
    reference = torch.zeros_like(logits).scatter(1, chosen, gates)
    (reference * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(router.gate.weight.grad.numpy(), weight.grad.numpy(), rtol=1e-10)


# ----- group_by_expert ---------------------------------------------------------------------------
def test_group_by_expert_matches_nonzero():
    rng = np.random.default_rng(5)
    indices = np.stack([rng.permutation(5)[:2] for _ in range(9)])  # (9, 2), distinct per row
    gates = bai.tensor(rng.random((9, 2)), requires_grad=True)
    positions, weights = group_by_expert(indices, gates, 6)
    assert len(positions) == len(weights) == 6
    for expert in range(6):
        rows, slots = np.nonzero(indices == expert)
        np.testing.assert_array_equal(positions[expert], rows)
        np.testing.assert_array_equal(weights[expert].numpy(), gates.numpy()[rows, slots])
    assert positions[5].shape == (0,)  # expert 5 is never chosen
    bai.concatenate(weights).sum().backward()
    np.testing.assert_allclose(gates.grad.numpy(), 1.0)


def test_group_by_expert_errors():
    gates = bai.zeros(3, 2)
    with pytest.raises(ShapeError, match=r"must both be \(N, k\), got \(3,\) and \(3, 2\)"):
        group_by_expert(np.zeros(3, np.int64), gates, 4)
    with pytest.raises(ShapeError, match=r"must lie in 0..3, got values from 0 to 4"):
        group_by_expert(np.array([[0, 4]] * 3), gates, 4)
    with pytest.raises(ShapeError, match="indices must hold integers, got dtype float64"):
        group_by_expert(np.zeros((3, 2)), gates, 4)


# ----- dynamic_concat -----------------------------------------------------------------------------
def _tiny_case(seed=0):
    """Three experts' outputs on a batch of 4: one empty expert, sample 1 seen twice, sample
    3 by nobody."""
    rng = np.random.default_rng(seed)
    indices = [np.array([0, 1]), np.array([], np.int64), np.array([2, 1])]
    outputs = [bai.tensor(rng.standard_normal((len(i), 2)), requires_grad=True) for i in indices]
    weights = [bai.tensor(rng.random(len(i)), requires_grad=True) for i in indices]
    return outputs, indices, weights


def test_dynamic_concat_values():
    outputs, indices, weights = _tiny_case()
    result = dynamic_concat(outputs, indices, weights, 4).numpy()
    o = [t.numpy() for t in outputs]
    w = [t.numpy() for t in weights]
    expected = np.zeros((4, 2))
    expected[0] = w[0][0] * o[0][0]
    expected[1] = w[0][1] * o[0][1] + w[2][1] * o[2][1]
    expected[2] = w[2][0] * o[2][0]
    np.testing.assert_allclose(result, expected, rtol=1e-12)
    unweighted = dynamic_concat(outputs, [bai.tensor(i) for i in indices], None, 4).numpy()
    np.testing.assert_allclose(unweighted[1], o[0][1] + o[2][1], rtol=1e-12)
    # Any trailing feature shape: (n_e, 2, 3) pieces -> (batch, 2, 3).
    cubes = [bai.ones(len(i), 2, 3) for i in indices]
    assert dynamic_concat(cubes, indices, None, 5).shape == (5, 2, 3)


def test_dynamic_concat_gradcheck_and_gradgradcheck():
    outputs, indices, weights = _tiny_case(seed=1)

    def fn(o0, o1, o2, w0, w1, w2):
        return dynamic_concat([o0, o1, o2], indices, [w0, w1, w2], 4)

    assert gradcheck(fn, outputs + weights)
    assert gradgradcheck(fn, outputs + weights)


def test_dynamic_concat_errors():
    outputs, indices, weights = _tiny_case()
    with pytest.raises(ShapeError, match="got no expert outputs"):
        dynamic_concat([], [], None, 3)
    with pytest.raises(ShapeError, match="got 3 outputs, 2 index arrays, 3 weight tensors"):
        dynamic_concat(outputs, indices[:2], weights, 4)
    with pytest.raises(ShapeError, match=r"expert 1 output has shape \(0, 3\), but expert 0"):
        dynamic_concat([outputs[0], bai.zeros(0, 3), outputs[2]], indices, None, 4)
    with pytest.raises(ShapeError, match=r"expert 2 has 2 output rows but its index has shape"):
        dynamic_concat(outputs, indices[:2] + [np.array([0])], None, 4)
    with pytest.raises(ShapeError, match=r"expert 0 has 2 output rows but its weights have"):
        dynamic_concat(outputs, indices, [bai.ones(3)] + weights[1:], 4)
    with pytest.raises(ShapeError, match=r"expert 2 has sample positions from 1 to 2, outside "):
        dynamic_concat(outputs, indices, weights, 2)
    with pytest.raises(ShapeError, match=r"expert_indices\[0\] must hold integers"):
        dynamic_concat(outputs, [np.array([0.0, 1.0])] + indices[1:], None, 4)


# ----- a dynamic network written by hand -----------------------------------------------------
class DynamicNetwork(bai.nn.Module):
    """A user's module: the router's output used as an (N, E) weight tensor, masks, and
    dynamic_concat(outputs, weights)."""

    def __init__(self, dim, num_experts, top_k=1, renormalize=False):
        super().__init__()
        self.router = Router(dim, num_experts, top_k, renormalize=renormalize, dtype=F64)
        self.experts = bai.nn.ModuleList([Expert(dim, 5, dtype=F64) for _ in range(num_experts)])

    def forward(self, x):
        weights = self.router(x)
        outputs = []
        for i, expert in enumerate(self.experts):
            mask = weights.argmax(1) == i
            if mask.any():
                outputs.append(expert(x[mask]))
        return dynamic_concat(outputs, weights)


def _torch_expert(params: dict, e: int, x):
    """Expert e (a gelu MLP) in PyTorch, from the copied parameters."""
    linear = torch.nn.functional.linear
    hidden = linear(x, params[f"experts.{e}.fc1.weight"], params[f"experts.{e}.fc1.bias"])
    gelu = torch.nn.functional.gelu(hidden)
    return linear(gelu, params[f"experts.{e}.fc2.weight"], params[f"experts.{e}.fc2.bias"])


def _torch_dynamic_reference(model: DynamicNetwork, x: np.ndarray):
    """The same network in PyTorch with copied weights: each sample through its best expert,
    scaled by that expert's gate weight. Returns (output, parameters, best expert per sample)."""
    params = {
        name: torch.tensor(p.numpy(), requires_grad=True) for name, p in model.named_parameters()
    }
    xt = torch.tensor(x, requires_grad=True)
    logits = xt @ params["router.gate.weight"].T  # (N, E)
    chosen = torch.argsort(-logits, dim=-1, stable=True)[:, : model.router.top_k]
    if model.router.renormalize:
        gates = torch.softmax(torch.gather(logits, 1, chosen), dim=-1)
    else:
        gates = torch.gather(torch.softmax(logits, dim=-1), 1, chosen)
    weights = torch.zeros_like(logits).scatter(1, chosen, gates)  # (N, E)
    best = weights.argmax(1)
    rows = []
    for i in range(x.shape[0]):
        e = int(best[i])
        rows.append(weights[i, e] * _torch_expert(params, e, xt[i]))
    return torch.stack(rows), params, xt, best.numpy()


@pytest.mark.parametrize("top_k, renormalize", [(1, False), (2, True), (3, False)])
def test_a_dynamic_network_written_by_hand_matches_pytorch(top_k, renormalize):
    bai.manual_seed(20)
    model = DynamicNetwork(3, 4, top_k, renormalize)
    gate = model.router.gate.weight
    with bai.no_grad():
        # expert 3's logit is the mean of experts 0 and 1: never strictly the largest, so
        # expert 3 gets no rows and is left out of the outputs
        gate[3] = (gate[0] + gate[1]) / 2
    x = np.random.default_rng(21).standard_normal((12, 3))
    x_ours = bai.tensor(x, requires_grad=True)
    out = model(x_ours)
    reference, params, xt, best = _torch_dynamic_reference(model, x)
    assert 3 not in best and len(set(best)) == 3  # one expert gets no rows, the others some
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-12)

    upstream = np.random.default_rng(22).standard_normal((12, 3))
    (out * bai.tensor(upstream)).sum().backward()
    (reference * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-14)
    for name, param in model.named_parameters():
        expected = params[name].grad
        expected = np.zeros(param.shape) if expected is None else expected.numpy()
        ours = np.zeros(param.shape) if param.grad is None else param.grad.numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-14, err_msg=name)
    assert model.experts[3].fc1.weight.grad is None  # the expert with no rows never ran
    assert np.abs(gate.grad.numpy()).sum() > 0


def _best_expert_case(seed=0):
    """Gates (5, 3) whose argmax is [2, 0, 2, 2, 0] (expert 1 gets nothing), and the outputs
    of experts 0 and 2 on their rows."""
    rng = np.random.default_rng(seed)
    gates = rng.random((5, 3)) * 0.5
    best = np.array([2, 0, 2, 2, 0])
    gates[np.arange(5), best] += 1.0
    outputs = [
        bai.tensor(rng.standard_normal((2, 2)), requires_grad=True),
        bai.tensor(rng.standard_normal((3, 2)), requires_grad=True),
    ]
    return bai.tensor(gates, requires_grad=True), best, outputs


def test_dynamic_concat_by_best_expert_values_and_gradients():
    gates, best, outputs = _best_expert_case()
    result = dynamic_concat(outputs, gates).numpy()
    g, o = gates.numpy(), [t.numpy() for t in outputs]
    expected = np.stack(
        [
            g[0, 2] * o[1][0],
            g[1, 0] * o[0][0],
            g[2, 2] * o[1][1],
            g[3, 2] * o[1][2],
            g[4, 0] * o[0][1],
        ]
    )
    np.testing.assert_allclose(result, expected, rtol=1e-12)
    # one output per expert, the empty one given as (0, F), gives the same
    with_empty = [outputs[0], bai.zeros(0, 2, dtype=F64), outputs[1]]
    np.testing.assert_allclose(dynamic_concat(with_empty, gates).numpy(), expected, rtol=1e-12)

    def fn(gates, o0, o2):
        return dynamic_concat([o0, o2], gates)

    assert gradcheck(fn, [gates] + outputs)
    assert gradgradcheck(fn, [gates] + outputs)


def test_dynamic_concat_by_best_expert_errors():
    gates, _, outputs = _best_expert_case()
    with pytest.raises(
        ShapeError,
        match=r"got 1 expert outputs, but the gate weights send "
        r"samples to 2 of 3 experts \(\[0, 2\]\)",
    ):
        dynamic_concat(outputs[:1], gates)
    with pytest.raises(
        ShapeError,
        match=r"expert 0 output has 3 rows, but the gate weights "
        r"send it 2 samples \(gates.argmax\(1\) == 0\)",
    ):
        dynamic_concat([outputs[1], outputs[0]], gates)
    with pytest.raises(
        ShapeError,
        match=r"gate weights must be \(N, num_experts\), got "
        r"shape \(5,\)",
    ):
        dynamic_concat(outputs, gates[:, 0])
    with pytest.raises(ShapeError, match="with per-expert sample positions it needs batch_size"):
        dynamic_concat(outputs, [np.array([1, 4]), np.array([0, 2, 3])])


# ----- MoELayer against a dense reference ------------------------------------------------
def _torch_dense_reference(layer: MoELayer, x: np.ndarray, indices: np.ndarray):
    """Every expert on every sample, masked to the chosen ones: y = sum_e mask_e * expert_e(x),
    with the gates renormalised over the chosen experts. Returns (output, parameters)."""
    params = {
        name: torch.tensor(p.numpy(), requires_grad=True) for name, p in layer.named_parameters()
    }
    xt = torch.tensor(x)
    logits = xt @ params["router.gate.weight"].T  # (N, E)
    chosen = torch.tensor(indices)
    gates = torch.softmax(torch.gather(logits, 1, chosen), dim=-1)  # (N, k)
    dense_gates = torch.zeros_like(logits).scatter_add(1, chosen, gates)  # (N, E), 0 if unused
    output = torch.zeros_like(xt)
    for e in range(layer.num_experts):
        output = output + dense_gates[:, e : e + 1] * _torch_expert(params, e, xt)
    return output, params


@pytest.mark.parametrize("num_experts, top_k", [(4, 2), (3, 1), (3, 3)])
def test_moe_layer_equals_dense_reference(num_experts, top_k):
    bai.manual_seed(7)
    layer = MoELayer(3, 5, num_experts, top_k, dtype=F64)
    x = np.random.default_rng(8).standard_normal((10, 3))
    x_ours = bai.tensor(x, requires_grad=True)
    with shape_checks():
        out = layer(x_ours)
    reference, params = _torch_dense_reference(layer, x, out.indices.numpy())
    np.testing.assert_allclose(out.output.numpy(), reference.detach().numpy(), rtol=1e-10)

    upstream = np.random.default_rng(9).standard_normal((10, 3))
    (out.output * bai.tensor(upstream)).sum().backward()
    (reference * torch.tensor(upstream)).sum().backward()
    for name, param in layer.named_parameters():
        expected = params[name].grad
        if name == "router.gate.weight" and top_k == 1:
            expected = torch.zeros_like(params[name])  # renormalised top-1 gates are constant
        ours = np.zeros(param.shape) if param.grad is None else param.grad.numpy()
        np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    assert np.abs(layer.router.gate.weight.grad.numpy()).sum() > 0 or top_k in (1, num_experts)


def test_moe_layer_gradients_reach_the_input_and_leading_dims_are_kept():
    bai.manual_seed(10)
    layer = MoELayer(4, 6, 3, top_k=2, dtype=F64)
    x = bai.tensor(np.random.default_rng(11).standard_normal((2, 3, 4)), requires_grad=True)
    with shape_checks():
        output, aux, indices = layer(x)
    assert output.shape == (2, 3, 4) and aux.shape == () and indices.shape == (2, 3, 2)
    flat = layer(x.reshape(6, 4))
    np.testing.assert_allclose(output.numpy().reshape(6, 4), flat.output.numpy(), rtol=1e-12)
    (output.square().sum() + aux).backward()
    assert x.grad is not None and np.abs(x.grad.numpy()).sum() > 0
    assert layer.router.gate.weight.grad is not None


def test_moe_layer_gradcheck_on_a_tiny_layer():
    bai.manual_seed(12)
    layer = MoELayer(2, 3, 3, top_k=2, dtype=F64)
    x = bai.tensor(np.random.default_rng(13).standard_normal((4, 2)), requires_grad=True)
    # gradcheck perturbs the tensors in place, so the layer's own parameters can be checked;
    # the steps are too small to change which experts are chosen.
    gate_weight = layer.router.gate.weight
    expert_weight = layer.experts[1].fc2.weight

    def fn(x, gate_weight, expert_weight):
        return layer(x).output

    assert gradcheck(fn, [x, gate_weight, expert_weight])


def test_moe_layer_with_empty_batch_and_bad_input():
    layer = MoELayer(4, 6, 3, top_k=2)
    out = layer(bai.zeros(0, 4))
    assert out.output.shape == (0, 4) and out.aux_loss.item() == 0.0
    with pytest.raises(
        ShapeError, match=r"\[MoELayer\] expects x of shape \(\*, 4\), got \(2, 5\)"
    ):
        layer(bai.zeros(2, 5))
    assert "dim=4, num_experts=3, top_k=2" in repr(layer)


# ----- Expert ---------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["gelu", "relu", "silu", "tanh", "sigmoid"])
def test_expert_matches_pytorch(activation):
    bai.manual_seed(14)
    expert = Expert(3, 4, activation, dtype=F64)
    x = np.random.default_rng(15).standard_normal((5, 3))
    fc1 = torch.nn.Linear(3, 4).double()
    fc2 = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        fc1.weight.copy_(torch.tensor(expert.fc1.weight.numpy()))
        fc1.bias.copy_(torch.tensor(expert.fc1.bias.numpy()))
        fc2.weight.copy_(torch.tensor(expert.fc2.weight.numpy()))
        fc2.bias.copy_(torch.tensor(expert.fc2.bias.numpy()))
    act = getattr(torch.nn.functional, activation, None) or getattr(torch, activation)
    expected = fc2(act(fc1(torch.tensor(x)))).detach().numpy()
    np.testing.assert_allclose(expert(bai.tensor(x)).numpy(), expected, rtol=1e-10)


def test_expert_options_and_errors():
    expert = Expert(3, 4, activation=lambda h: h * 2.0, out_dim=7)
    assert expert(bai.zeros(2, 3)).shape == (2, 7)
    assert "activation='<lambda>'" in repr(expert)
    with pytest.raises(ValueError, match=r"activation must be one of .* got 'swish'"):
        Expert(3, 4, activation="swish")


# ----- training -------------------------------------------------------------------------------
def test_a_tiny_moe_model_trains():
    """Two regimes selected by the sign of the first feature; the loss must fall."""
    bai.manual_seed(16)
    rng = np.random.default_rng(17)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    target = np.where(x[:, :1] > 0, np.sin(2 * x[:, 1:2]), x[:, 2:3] ** 2).astype(np.float32)
    layer = MoELayer(3, 16, num_experts=4, top_k=2)
    head = bai.nn.Linear(3, 1)
    optimizer = bai.optim.Adam(list(layer.parameters()) + list(head.parameters()), lr=0.02)
    losses = []
    for _ in range(60):
        out = layer(bai.tensor(x))
        loss = ((head(out.output) - bai.tensor(target)) ** 2).mean()
        optimizer.zero_grad()
        (loss + 0.01 * out.aux_loss).backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
