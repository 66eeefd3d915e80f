"""Pruning against torch.nn.utils.prune on the same weights: which entries go, amounts,
iterative pruning, global ranking, structured channels, remove; masks that survive training,
checkpoints and ONNX export; the sparsity report."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.nn.utils import prune

torch = pytest.importorskip("torch")
torch_prune = pytest.importorskip("torch.nn.utils.prune")


def _pair(shape, seed=0, conv=False):
    """A BuildingAI layer and a torch layer holding the same float64 weights."""
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal(shape)
    if conv:
        ours = nn.Conv2d(shape[1], shape[0], shape[2:], dtype="float64")
        theirs = torch.nn.Conv2d(shape[1], shape[0], shape[2:]).double()
    else:
        ours = nn.Linear(shape[1], shape[0], dtype="float64")
        theirs = torch.nn.Linear(shape[1], shape[0]).double()
    ours.load_state_dict({"weight": weight, "bias": np.zeros(shape[0])})
    theirs.load_state_dict({"weight": torch.tensor(weight), "bias": torch.zeros(shape[0])})
    return ours, theirs


def _same_mask(ours, theirs, name="weight"):
    np.testing.assert_array_equal(
        getattr(ours, name + "_mask").numpy(), getattr(theirs, name + "_mask").numpy()
    )
    np.testing.assert_array_equal(
        prune.pruned_tensor(ours, name).numpy(), getattr(theirs, name).detach().numpy()
    )


@pytest.mark.parametrize("amount", [0, 1, 7, 0.3, 0.5, 0.9, 1.0])
def test_l1_unstructured_matches_torch(amount):
    ours, theirs = _pair((6, 5), seed=1)
    prune.l1_unstructured(ours, "weight", amount=amount)
    torch_prune.l1_unstructured(theirs, "weight", amount=amount)
    _same_mask(ours, theirs)
    assert list(ours._parameters) == list(theirs._parameters)  # ['bias', 'weight_orig']


def test_fraction_rounds_like_torch():
    # 0.5 of 5 entries: round(2.5) == 2 (half to even), as torch computes it
    ours, theirs = _pair((1, 5), seed=2)
    prune.l1_unstructured(ours, "weight", amount=0.5)
    torch_prune.l1_unstructured(theirs, "weight", amount=0.5)
    assert int((ours.weight_mask.numpy() == 0).sum()) == 2
    _same_mask(ours, theirs)


def test_iterative_pruning_prunes_among_the_remaining_like_torch():
    ours, theirs = _pair((8, 6), seed=3)
    for amount in (0.5, 0.5, 3):
        prune.l1_unstructured(ours, "weight", amount=amount)
        torch_prune.l1_unstructured(theirs, "weight", amount=amount)
        _same_mask(ours, theirs)
    assert int((ours.weight_mask.numpy() == 0).sum()) == 24 + 12 + 3


@pytest.mark.parametrize("n", [1, 2, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_matches_torch_on_conv_channels(n, dim):
    ours, theirs = _pair((6, 4, 3, 3), seed=4, conv=True)
    prune.ln_structured(ours, "weight", amount=0.5, n=n, dim=dim)
    torch_prune.ln_structured(theirs, "weight", amount=0.5, n=n, dim=dim)
    _same_mask(ours, theirs)


def test_structured_after_unstructured_matches_torch():
    ours, theirs = _pair((6, 5), seed=5)
    prune.l1_unstructured(ours, "weight", amount=0.4)
    torch_prune.l1_unstructured(theirs, "weight", amount=0.4)
    prune.ln_structured(ours, "weight", amount=2, n=1, dim=0)
    torch_prune.ln_structured(theirs, "weight", amount=2, n=1, dim=0)
    _same_mask(ours, theirs)


def test_global_unstructured_ranks_all_layers_together_like_torch():
    pairs = [_pair((8, 6), seed=6), _pair((4, 8), seed=7)]
    for layer in pairs[1]:  # a second layer with smaller weights loses more
        with torch.no_grad() if isinstance(layer, torch.nn.Module) else bai.no_grad():
            layer.weight.mul_(0.3)
    prune.global_unstructured(
        [(ours, "weight") for ours, _ in pairs], pruning_method=prune.L1Unstructured, amount=0.6
    )
    torch_prune.global_unstructured(
        [(theirs, "weight") for _, theirs in pairs],
        pruning_method=torch_prune.L1Unstructured,
        amount=0.6,
    )
    for ours, theirs in pairs:
        _same_mask(ours, theirs)
    sparsities = [float((ours.weight_mask.numpy() == 0).mean()) for ours, _ in pairs]
    assert sparsities[1] > sparsities[0]


def test_random_unstructured_prunes_the_amount():
    layer = nn.Linear(10, 10)
    bai.manual_seed(0)
    prune.random_unstructured(layer, "weight", amount=0.37)
    assert int((layer.weight_mask.numpy() == 0).sum()) == 37
    assert np.all(layer.weight.numpy()[layer.weight_mask.numpy() == 0] == 0)


def test_ties_prune_exactly_the_amount():
    layer = nn.Linear(4, 2)
    with bai.no_grad():
        layer.weight.fill_(0.5)
    prune.l1_unstructured(layer, "weight", amount=3)
    assert int((layer.weight_mask.numpy() == 0).sum()) == 3


def test_forward_uses_the_pruned_weight_and_gradients_reach_orig_masked():
    ours, theirs = _pair((3, 4), seed=8)
    prune.l1_unstructured(ours, "weight", amount=0.5)
    torch_prune.l1_unstructured(theirs, "weight", amount=0.5)
    x = np.random.default_rng(0).standard_normal((5, 4))
    out = ours(bai.tensor(x))
    expected = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(
        ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy(), rtol=1e-12
    )
    assert np.all(ours.weight_orig.grad.numpy()[ours.weight_mask.numpy() == 0] == 0)


def test_remove_makes_pruning_permanent_and_keeps_the_parameter():
    ours, theirs = _pair((4, 4), seed=9)
    orig = ours.weight
    prune.l1_unstructured(ours, "weight", amount=0.5)
    assert ours.weight_orig is orig
    torch_prune.l1_unstructured(theirs, "weight", amount=0.5)
    assert prune.is_pruned(ours)
    prune.remove(ours, "weight")
    torch_prune.remove(theirs, "weight")
    assert not prune.is_pruned(ours)
    assert ours.weight is orig and isinstance(ours.weight, nn.Parameter)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())


def test_remove_unpruned_names_the_fix():
    with pytest.raises(prune.PruningError, match="has to be pruned before"):
        prune.remove(nn.Linear(2, 2), "weight")


def test_bad_amounts_are_refused_with_the_value():
    layer = nn.Linear(2, 2)
    with pytest.raises(prune.PruningError, match="amount=1.5"):
        prune.l1_unstructured(layer, "weight", amount=1.5)
    with pytest.raises(prune.PruningError, match="amount=5 is larger than the 4"):
        prune.l1_unstructured(layer, "weight", amount=5)
    with pytest.raises(prune.PruningError, match="no parameter 'weights'"):
        prune.l1_unstructured(layer, "weights", amount=1)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):  # (N, 1, 6, 6) -> (N, 3)
        return self.fc(self.conv(x).relu().reshape(x.shape[0], -1))


def _pruned_net():
    bai.manual_seed(0)
    net = _Net()
    prune.ln_structured(net.conv, "weight", amount=0.5, n=2, dim=0)
    prune.l1_unstructured(net.fc, "weight", amount=0.8)
    return net


def test_masks_survive_ten_training_steps_and_a_save_load(tmp_path):
    net = _pruned_net()
    masks = {name: b.numpy() for name, b in net.named_buffers() if name.endswith("_mask")}
    optimizer = bai.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    rng = np.random.default_rng(0)
    for _ in range(10):
        x = bai.tensor(rng.standard_normal((8, 1, 6, 6)).astype("float32"))
        target = bai.tensor(rng.integers(0, 3, 8))
        loss = nn.functional.cross_entropy(net(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    net(x)  # the pre-hook recomputes the weights from the updated orig
    for layer, key in ((net.conv, "conv.weight_mask"), (net.fc, "fc.weight_mask")):
        np.testing.assert_array_equal(layer.weight_mask.numpy(), masks[key])
        assert np.all(layer.weight.numpy()[masks[key] == 0] == 0)

    path = tmp_path / "pruned.bai"
    bai.save(net.state_dict(), path)
    restored = _pruned_net()  # same layout (pruned), other masks until the load
    restored.load_state_dict(bai.load(path))
    np.testing.assert_array_equal(restored.fc.weight_mask.numpy(), masks["fc.weight_mask"])
    np.testing.assert_allclose(restored(x).numpy(), net(x).numpy(), rtol=1e-6)


def test_pruned_model_exports_to_onnx_with_its_zeros():
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime

    net = _pruned_net().eval()
    x = np.random.default_rng(1).standard_normal((2, 1, 6, 6)).astype("float32")
    model = export_onnx(net, input_signature=[bai.TensorSpec((None, 1, 6, 6))])
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], net(bai.tensor(x)).numpy(), atol=1e-5)
    # changing the pruned-away entries of orig changes nothing: the mask is in the graph
    with bai.no_grad():
        net.fc.weight_orig.data[net.fc.weight_mask.numpy() == 0] = 100.0
    model = export_onnx(net, input_signature=[bai.TensorSpec((None, 1, 6, 6))])
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], net(bai.tensor(x)).numpy(), atol=1e-5)


def test_sparsity_report_table_and_dict():
    net = _pruned_net()
    report = prune.sparsity_report(net)
    layers = report.to_dict()["layers"]
    assert layers["conv.weight"] == {"zeros": 18, "total": 36, "sparsity": 0.5, "pruned": True}
    assert layers["fc.weight"]["zeros"] == round(0.8 * 192)
    assert report.total == 36 + 192 and report.zeros == 18 + round(0.8 * 192)
    text = str(report)
    assert "conv.weight" in text and "50.0%" in text and text.splitlines()[-1].startswith("total")


def test_attention_heads_prunes_whole_heads():
    bai.manual_seed(0)
    attention = nn.MultiheadAttention(8, 4, batch_first=True)
    with bai.no_grad():  # head 2 gets the smallest weights
        attention.in_proj_weight.data.reshape(3, 4, 2, 8)[:, 2] *= 0.01
    pruned = prune.attention_heads(attention, amount=1)
    assert pruned == [2]
    x = bai.tensor(np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32"))
    out, _ = attention(x, x, x)
    assert np.all(attention.out_proj.weight.numpy()[:, 4:6] == 0)
    assert np.all(attention.in_proj_weight.numpy().reshape(3, 4, 2, 8)[:, 2] == 0)
    # head 2 contributes nothing: changing its (masked) original weights changes no output
    with bai.no_grad():
        attention.in_proj_weight_orig.data.reshape(3, 4, 2, 8)[:, 2] = 5.0
        attention.out_proj.weight_orig.data[:, 4:6] = -3.0
    again, _ = attention(x, x, x)
    np.testing.assert_array_equal(again.numpy(), out.numpy())
    assert prune.sparsity_report(attention).layers["out_proj.weight"]["sparsity"] == 0.25


def test_torch_spelling_as_users_write_it():
    from buildingai.nn.utils import prune  # as: from torch.nn.utils import prune

    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    parameters_to_prune = ((model[0], "weight"), (model[2], "weight"))
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
    prune.remove(model[0], "weight")
    assert bai.prune.is_pruned(model)


def test_issue_spelling():
    module = nn.Linear(6, 4)
    prune.l1_unstructured(module, "weight", amount=0.5)
    assert int((module.weight.numpy() == 0).sum()) == 12
    prune.remove(module, "weight")
    assert not prune.is_pruned(module)


def test_a_pruned_torch_state_dict_loads_into_a_pruned_layer():
    ours, theirs = _pair((5, 4), seed=10)
    torch_prune.l1_unstructured(theirs, "weight", amount=0.6)
    prune.identity(ours, "weight")  # the same layout: weight_orig + weight_mask
    state = {key: value.detach().numpy().copy() for key, value in theirs.state_dict().items()}
    ours.load_state_dict(state)
    x = np.random.default_rng(3).standard_normal((2, 4))
    np.testing.assert_allclose(
        ours(bai.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12
    )
