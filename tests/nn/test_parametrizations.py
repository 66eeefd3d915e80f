"""nn.utils.parametrize and nn.utils.parametrizations against PyTorch, with identical weights
(state dicts copied across): parametrized values, layer outputs, gradients w.r.t. the
originals, state-dict keys, removal, caching, and training steps through parametrized layers."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError
from buildingai.nn.utils import parametrizations as ours_p
from buildingai.nn.utils import parametrize as ours_pr

torch = pytest.importorskip("torch")
from torch.nn.utils import parametrizations as torch_p  # noqa: E402
from torch.nn.utils import parametrize as torch_pr  # noqa: E402

RNG = np.random.default_rng(0)


# ----- helpers ---------------------------------------------------------------------------------
def _copy_state(torch_module, our_module) -> None:
    state = {key: value.detach().numpy() for key, value in torch_module.state_dict().items()}
    result = our_module.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


def _randomize(torch_module) -> None:
    """New random values for every parameter of the torch module (the originals included)."""
    with torch.no_grad():
        for param in torch_module.parameters():
            param.copy_(torch.tensor(RNG.standard_normal(tuple(param.shape))))


def _close(ours, theirs, atol=1e-12, rtol=1e-10):
    ours = ours.numpy() if isinstance(ours, bai.Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol)


def _layers(kind: str):
    """The same layer in both frameworks, float64."""
    if kind == "linear":
        return torch.nn.Linear(4, 3).double(), bai.nn.Linear(4, 3, dtype="float64"), (5, 4)
    if kind == "conv2d":
        return (
            torch.nn.Conv2d(3, 4, 3, padding=1).double(),
            bai.nn.Conv2d(3, 4, 3, padding=1, dtype="float64"),
            (2, 3, 5, 5),
        )
    if kind == "conv_transpose2d":
        return (
            torch.nn.ConvTranspose2d(3, 4, 3).double(),
            bai.nn.ConvTranspose2d(3, 4, 3, dtype="float64"),
            (2, 3, 4, 4),
        )
    raise ValueError(kind)


def _check_forward_and_gradients(torch_module, our_module, input_shape, atol=1e-12):
    """Outputs, parametrized weights and gradients of every parameter agree."""
    assert list(our_module.state_dict()) == list(torch_module.state_dict())
    x = RNG.standard_normal(input_shape)
    theirs = torch_module(torch.tensor(x))
    ours = our_module(bai.tensor(x))
    _close(ours, theirs, atol=atol)
    _close(our_module.weight, torch_module.weight, atol=atol)
    upstream = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(upstream)).sum().backward()
    (ours * bai.tensor(upstream)).sum().backward()
    theirs_named = dict(torch_module.named_parameters())
    ours_named = dict(our_module.named_parameters())
    assert list(ours_named) == list(theirs_named)
    for name, param in theirs_named.items():
        _close(ours_named[name].grad, param.grad, atol=atol * 10)


# ----- PyTorch's documentation examples --------------------------------------------------------
def test_register_parametrization_doc_example_symmetric():
    torch = bai  # noqa: F811 - the example as PyTorch documents it
    nn = bai.nn
    P = ours_pr  # noqa: N806

    class Symmetric(nn.Module):
        def forward(self, X):  # noqa: N803
            return X.triu() + X.triu(1).T  # Return a symmetric matrix

        def right_inverse(self, A):  # noqa: N803
            return A.triu()

    m = nn.Linear(5, 5)
    P.register_parametrization(m, "weight", Symmetric())
    assert torch.allclose(m.weight, m.weight.T)  # m.weight is now symmetric
    A = torch.rand(5, 5)  # noqa: N806
    A = A + A.T  # A is now symmetric  # noqa: N806
    m.weight = A  # Initialize the weight to be the symmetric matrix A
    assert torch.allclose(m.weight, A)


def test_weight_norm_doc_example():
    nn = bai.nn
    m = ours_p.weight_norm(nn.Linear(20, 40), name="weight")
    assert type(m).__name__ == "ParametrizedLinear"
    assert m.parametrizations.weight.original0.size() == (40, 1)
    assert m.parametrizations.weight.original1.size() == (40, 20)
    assert repr(m) == (
        "ParametrizedLinear(\n"
        "  in_features=20, out_features=40, bias=True\n"
        "  (parametrizations): ModuleDict(\n"
        "    (weight): ParametrizationList(\n"
        "      (0): _WeightNorm()\n"
        "    )\n"
        "  )\n"
        ")"
    )


def test_spectral_norm_doc_example():
    torch = bai  # noqa: F811
    nn = bai.nn
    snm = ours_p.spectral_norm(nn.Linear(20, 40))
    assert abs(torch.linalg.matrix_norm(snm.weight, 2).item() - 1.0) < 0.1  # about 1.0081


def test_orthogonal_doc_example():
    torch = bai  # noqa: F811
    nn = bai.nn
    orth_linear = ours_p.orthogonal(nn.Linear(20, 40))
    Q = orth_linear.weight  # noqa: N806
    assert torch.dist(Q.T @ Q, torch.eye(20)).item() < 1e-5  # tensor(4.9332e-07)


# ----- register_parametrization: the mechanics -------------------------------------------------
class Symmetric(bai.nn.Module):
    def forward(self, X):  # noqa: N803
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):  # noqa: N803
        return A.triu()


class TorchSymmetric(torch.nn.Module):
    def forward(self, X):  # noqa: N803
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):  # noqa: N803
        return A.triu()


class Scale(bai.nn.Module):
    """x -> 2x, with a right inverse."""

    def forward(self, x):
        return 2.0 * x

    def right_inverse(self, x):
        return 0.5 * x


class TorchScale(torch.nn.Module):
    def forward(self, x):
        return 2.0 * x

    def right_inverse(self, x):
        return 0.5 * x


class RankOne(bai.nn.Module):
    """Two originals: x (n,) and y (m,) -> the rank-1 matrix x y^T."""

    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):  # noqa: N803
        u, s, vh = np.linalg.svd(Z.numpy(), full_matrices=False)
        root = np.sqrt(s[0])
        return bai.tensor(u[:, 0] * root), bai.tensor(vh[0] * root)


class TorchRankOne(torch.nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):  # noqa: N803
        U, S, Vh = torch.linalg.svd(Z, full_matrices=False)  # noqa: N806
        root = S[0].sqrt()
        return U[:, 0] * root, Vh[0] * root


def test_chained_parametrizations_match_pytorch():
    theirs, ours, shape = _layers("linear")
    theirs, ours = torch.nn.Linear(4, 4).double(), bai.nn.Linear(4, 4, dtype="float64")
    _copy_state(theirs, ours)
    torch_pr.register_parametrization(theirs, "weight", TorchSymmetric())
    torch_pr.register_parametrization(theirs, "weight", TorchScale())
    ours_pr.register_parametrization(ours, "weight", Symmetric())
    ours_pr.register_parametrization(ours, "weight", Scale())
    assert list(ours.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert len(ours.parametrizations.weight) == 2
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    _check_forward_and_gradients(theirs, ours, (5, 4))
    # assignment runs the right inverses, last first
    value = RNG.standard_normal((4, 4))
    value = value + value.T
    theirs.weight = torch.tensor(value)
    ours.weight = bai.tensor(value)
    _close(ours.weight, value)
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)


def test_several_originals_match_pytorch():
    theirs, ours = torch.nn.Linear(3, 4).double(), bai.nn.Linear(3, 4, dtype="float64")
    _copy_state(theirs, ours)
    torch_pr.register_parametrization(theirs, "weight", TorchRankOne())
    ours_pr.register_parametrization(ours, "weight", RankOne())
    assert list(ours.state_dict()) == [
        "bias",
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    _randomize(theirs)
    _copy_state(theirs, ours)
    _check_forward_and_gradients(theirs, ours, (5, 3))
    assert np.linalg.matrix_rank(ours.weight.numpy()) == 1
    # leave_parametrized=False needs a single original
    with pytest.raises(ValueError, match="parametrized by 2 tensors"):
        ours_pr.remove_parametrizations(ours, "weight", leave_parametrized=False)
    expected = ours.weight.numpy()
    ours_pr.remove_parametrizations(ours, "weight")
    assert isinstance(ours.weight, bai.nn.Parameter)
    np.testing.assert_array_equal(ours.weight.numpy(), expected)
    assert type(ours) is bai.nn.Linear


def test_state_dict_keys_and_values_of_every_parametrization():
    cases = [
        (torch_p.weight_norm, ours_p.weight_norm, {}),
        (torch_p.spectral_norm, ours_p.spectral_norm, {}),
        (torch_p.orthogonal, ours_p.orthogonal, {}),
    ]
    for torch_fn, our_fn, kwargs in cases:
        theirs, ours = torch.nn.Linear(4, 4).double(), bai.nn.Linear(4, 4, dtype="float64")
        torch_fn(theirs, **kwargs)
        our_fn(ours, **kwargs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
        assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
        _copy_state(theirs, ours)
        for key, value in theirs.state_dict().items():
            _close(ours.state_dict()[key], value, atol=0, rtol=0)


def test_is_parametrized_and_type_before_parametrizations():
    layer = bai.nn.Linear(3, 3)
    assert not ours_pr.is_parametrized(layer)
    assert ours_pr.type_before_parametrizations(layer) is bai.nn.Linear
    ours_pr.register_parametrization(layer, "weight", Symmetric())
    assert ours_pr.is_parametrized(layer) and ours_pr.is_parametrized(layer, "weight")
    assert not ours_pr.is_parametrized(layer, "bias")
    assert isinstance(layer, bai.nn.Linear) and type(layer) is not bai.nn.Linear
    assert ours_pr.type_before_parametrizations(layer) is bai.nn.Linear
    ours_pr.register_parametrization(layer, "bias", Scale())
    ours_pr.remove_parametrizations(layer, "weight")
    assert ours_pr.is_parametrized(layer) and type(layer).__name__ == "ParametrizedLinear"
    ours_pr.remove_parametrizations(layer, "bias")
    assert type(layer) is bai.nn.Linear
    assert not hasattr(layer, "parametrizations")
    assert list(layer.state_dict()) == ["weight", "bias"]  # each re-registered last, as torch


def test_remove_keeps_the_tensor_object_for_the_optimizer():
    layer = bai.nn.Linear(3, 3, dtype="float64")
    original = layer.weight
    ours_pr.register_parametrization(layer, "weight", Scale())
    assert layer.parametrizations.weight.original is original  # same object, halved values
    parametrized = layer.weight.numpy()
    ours_pr.remove_parametrizations(layer, "weight", leave_parametrized=True)
    assert layer.weight is original
    np.testing.assert_array_equal(layer.weight.numpy(), parametrized)

    layer = bai.nn.Linear(3, 3, dtype="float64")
    before = layer.weight.numpy().copy()
    ours_pr.register_parametrization(layer, "weight", Scale())
    ours_pr.remove_parametrizations(layer, "weight", leave_parametrized=False)
    np.testing.assert_allclose(layer.weight.numpy(), 0.5 * before)  # the original, as torch


def test_remove_matches_pytorch():
    for leave in (True, False):
        theirs, ours = torch.nn.Linear(4, 4).double(), bai.nn.Linear(4, 4, dtype="float64")
        _copy_state(theirs, ours)
        torch_p.orthogonal(theirs, orthogonal_map="cayley")
        ours_p.orthogonal(ours, orthogonal_map="cayley")
        _randomize(theirs)
        _copy_state(theirs, ours)
        torch_pr.remove_parametrizations(theirs, "weight", leave_parametrized=leave)
        ours_pr.remove_parametrizations(ours, "weight", leave_parametrized=leave)
        assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
        _close(ours.weight, theirs.weight)


def test_parametrized_buffer():
    theirs, ours = torch.nn.BatchNorm1d(3).double(), bai.nn.BatchNorm1d(3, dtype="float64")
    torch_pr.register_parametrization(theirs, "running_var", TorchScale())
    ours_pr.register_parametrization(ours, "running_var", Scale())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "parametrizations.running_var.original" in dict(ours.named_buffers())
    _close(ours.running_var, theirs.running_var)


def test_assigning_a_parameter_is_refused_like_pytorch():
    layer = ours_p.orthogonal(bai.nn.Linear(3, 5))
    with pytest.raises(KeyError, match="already exists"):
        layer.weight = bai.nn.Parameter(bai.eye(5, 3))
    layer.weight = bai.eye(5, 3)  # a plain tensor goes through right_inverse
    np.testing.assert_allclose(layer.weight.numpy(), np.eye(5, 3), atol=1e-6)


def test_unsafe_and_consistency_checks():
    class Widen(bai.nn.Module):
        def forward(self, x):
            return bai.cat([x, x], dim=-1)

    with pytest.raises(ValueError, match=r"\[register_parametrization\].*shape"):
        ours_pr.register_parametrization(bai.nn.Linear(3, 2), "weight", Widen())
    layer = ours_pr.register_parametrization(bai.nn.Linear(3, 2), "weight", Widen(), unsafe=True)
    assert tuple(layer.weight.shape) == (2, 6)
    with pytest.raises(ValueError, match="no parameter, buffer or parametrized tensor named"):
        ours_pr.register_parametrization(bai.nn.Linear(3, 2), "kernel", Scale())
    with pytest.raises(ValueError, match="no parametrization on 'weight'"):
        ours_pr.remove_parametrizations(bai.nn.Linear(3, 2), "weight")

    class NoInverse(bai.nn.Module):
        def forward(self, x):
            return x * 1.0

    layer = ours_pr.register_parametrization(bai.nn.Linear(3, 2), "weight", NoInverse())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        layer.weight = bai.zeros(2, 3)


def test_cached_computes_once_inside_the_block():
    calls = []

    class Counted(bai.nn.Module):
        def forward(self, x):
            calls.append(1)
            return 2.0 * x

    layer = ours_pr.register_parametrization(bai.nn.Linear(3, 3), "weight", Counted())
    calls.clear()
    first, second = layer.weight, layer.weight
    assert len(calls) == 2 and first is not second
    with ours_pr.cached():
        first, second = layer.weight, layer.weight
        with ours_pr.cached():
            assert layer.weight is first
    assert len(calls) == 3 and first is second
    layer.weight  # noqa: B018 - the block is over: computed again
    assert len(calls) == 4
    # a cached weight used twice still sends its whole gradient to the original
    with ours_pr.cached():
        out = layer(bai.ones(1, 3)).sum() + layer(bai.ones(1, 3)).sum()
    out.backward()
    np.testing.assert_allclose(layer.parametrizations.weight.original.grad.numpy(), 4.0)


def test_deepcopy_gives_an_independent_module_and_pickling_is_refused():
    layer = ours_p.weight_norm(bai.nn.Linear(3, 4))
    twin = copy.deepcopy(layer)
    np.testing.assert_array_equal(twin.weight.numpy(), layer.weight.numpy())
    assert twin.parametrizations.weight.original1 is not layer.parametrizations.weight.original1
    ours_pr.remove_parametrizations(twin, "weight")
    assert type(twin) is bai.nn.Linear
    assert ours_pr.is_parametrized(layer, "weight")
    layer.weight  # noqa: B018 - the original still has its property
    with pytest.raises(RuntimeError, match="cannot be pickled"):
        pickle.dumps(layer)


def test_transfer_parametrizations_and_params():
    source = ours_p.weight_norm(bai.nn.Linear(3, 4))
    target = bai.nn.Linear(3, 4)
    ours_pr.transfer_parametrizations_and_params(source, target)
    assert ours_pr.is_parametrized(target, "weight")
    assert target.parametrizations.weight.original0 is source.parametrizations.weight.original0
    np.testing.assert_array_equal(target.weight.numpy(), source.weight.numpy())


# ----- weight_norm -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, dim",
    [
        ("linear", 0),
        ("linear", 1),
        ("linear", None),
        ("linear", -1),
        ("linear", -2),
        ("conv2d", 0),
        ("conv2d", 1),
        ("conv2d", 3),
        ("conv2d", -2),
        ("conv2d", None),
    ],
)
def test_weight_norm_matches_pytorch(kind, dim):
    theirs, ours, input_shape = _layers(kind)
    _copy_state(theirs, ours)
    torch_p.weight_norm(theirs, dim=dim)
    ours_p.weight_norm(ours, dim=dim)
    g = ours.parametrizations.weight.original0
    assert tuple(g.shape) == tuple(theirs.parametrizations.weight.original0.shape)
    _close(g, theirs.parametrizations.weight.original0)
    _check_forward_and_gradients(theirs, ours, input_shape)
    _randomize(theirs)
    _copy_state(theirs, ours)
    for module in (theirs, ours):
        module.zero_grad()
    _check_forward_and_gradients(theirs, ours, input_shape)


# ----- spectral_norm ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, kwargs",
    [
        ("linear", {}),
        ("linear", {"n_power_iterations": 3}),
        ("linear", {"dim": 1, "eps": 1e-6}),
        ("conv2d", {}),
        ("conv2d", {"dim": 2}),
        ("conv_transpose2d", {}),
    ],
)
def test_spectral_norm_matches_pytorch_over_several_training_steps(kind, kwargs):
    theirs, ours, input_shape = _layers(kind)
    torch_p.spectral_norm(theirs, **kwargs)
    ours_p.spectral_norm(ours, **kwargs)
    if kind == "conv_transpose2d":  # the default dim is 1 for transposed convolutions
        assert tuple(ours.parametrizations.weight[0]._u.shape) == (4,)
    _copy_state(theirs, ours)  # the same weight and the same u, v
    for _ in range(3):  # each access in training mode advances u and v
        for module in (theirs, ours):
            module.zero_grad()
        _check_forward_and_gradients(theirs, ours, input_shape)
        _close(ours.parametrizations.weight[0]._u, theirs.parametrizations.weight[0]._u)
        _close(ours.parametrizations.weight[0]._v, theirs.parametrizations.weight[0]._v)
    # in eval mode u and v stay where they are
    theirs.eval()
    ours.eval()
    u = ours.parametrizations.weight[0]._u.numpy().copy()
    _close(ours.weight, theirs.weight)
    np.testing.assert_array_equal(ours.parametrizations.weight[0]._u.numpy(), u)


def test_spectral_norm_of_a_vector_divides_by_its_norm():
    theirs, ours = torch.nn.Linear(3, 4).double(), bai.nn.Linear(3, 4, dtype="float64")
    _copy_state(theirs, ours)
    torch_p.spectral_norm(theirs, name="bias")
    ours_p.spectral_norm(ours, name="bias")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.bias, theirs.bias)
    np.testing.assert_allclose(np.linalg.norm(ours.bias.numpy()), 1.0)


def test_spectral_norm_errors():
    with pytest.raises(IndexError, match="out of range"):
        ours_p.spectral_norm(bai.nn.Linear(3, 4), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        ours_p.spectral_norm(bai.nn.Linear(3, 4), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer named 'kernel'"):
        ours_p.spectral_norm(bai.nn.Linear(3, 4), name="kernel")


# ----- orthogonal ------------------------------------------------------------------------------
ORTHOGONAL_CASES = [
    (orthogonal_map, shape, trivialization)
    for orthogonal_map in ("matrix_exp", "cayley", "householder")
    for shape in ((4, 4), (3, 5), (6, 3))
    for trivialization in (True, False)
]


@pytest.mark.parametrize("orthogonal_map, shape, use_trivialization", ORTHOGONAL_CASES)
def test_orthogonal_matches_pytorch(orthogonal_map, shape, use_trivialization):
    out_features, in_features = shape
    theirs = torch.nn.Linear(in_features, out_features).double()
    ours = bai.nn.Linear(in_features, out_features, dtype="float64")
    _copy_state(theirs, ours)
    kwargs = {"orthogonal_map": orthogonal_map, "use_trivialization": use_trivialization}
    torch_p.orthogonal(theirs, **kwargs)
    ours_p.orthogonal(ours, **kwargs)
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    if not use_trivialization or shape[0] == shape[1]:  # no random completion of the base
        _close(ours.weight, theirs.weight)
    # away from the starting point: random originals (and base), copied across
    _randomize(theirs)
    if orthogonal_map == "householder":  # its diagonal holds the signs of the columns
        original = theirs.parametrizations.weight.original
        with torch.no_grad():
            signs = torch.tensor(RNG.choice([-1.0, 1.0], size=min(shape)))
            original.diagonal().copy_(signs)
    _copy_state(theirs, ours)
    _check_forward_and_gradients(theirs, ours, (5, in_features), atol=1e-11)
    weight = ours.weight.numpy()
    gram = weight.T @ weight if shape[0] >= shape[1] else weight @ weight.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)


def test_orthogonal_default_maps_and_starting_value():
    square = ours_p.orthogonal(bai.nn.Linear(4, 4))
    assert square.parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    tall = ours_p.orthogonal(bai.nn.Linear(3, 6))
    assert tall.parametrizations.weight[0].orthogonal_map.name == "householder"
    # an orthogonal weight is kept as it is
    theirs, ours = torch.nn.Linear(4, 4).double(), bai.nn.Linear(4, 4, dtype="float64")
    q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(q))
    _copy_state(theirs, ours)
    ours_p.orthogonal(ours)
    torch_p.orthogonal(theirs)
    _close(ours.weight, q)
    _close(ours.parametrizations.weight[0].base, theirs.parametrizations.weight[0].base)


def test_orthogonal_batched_weights():
    class TorchStack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(2, 5, 3, dtype=torch.float64))

    class Stack(bai.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = bai.nn.Parameter(bai.randn(2, 5, 3, dtype="float64"))

    for orthogonal_map in ("matrix_exp", "cayley", "householder"):
        theirs, ours = TorchStack(), Stack()
        _copy_state(theirs, ours)
        torch_p.orthogonal(theirs, orthogonal_map=orthogonal_map, use_trivialization=False)
        ours_p.orthogonal(ours, orthogonal_map=orthogonal_map, use_trivialization=False)
        _randomize(theirs)
        _copy_state(theirs, ours)
        _close(ours.weight, theirs.weight, atol=1e-11)
        upstream = RNG.standard_normal((2, 5, 3))
        (theirs.weight * torch.tensor(upstream)).sum().backward()
        (ours.weight * bai.tensor(upstream)).sum().backward()
        _close(
            ours.parametrizations.weight.original.grad,
            theirs.parametrizations.weight.original.grad,
            atol=1e-10,
        )


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        ours_p.orthogonal(bai.nn.Linear(3, 4), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        ours_p.orthogonal(bai.nn.Linear(3, 4), orthogonal_map="qr")
    layer = ours_p.orthogonal(bai.nn.Linear(4, 4), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        layer.weight = bai.eye(4)


def test_cayley_second_derivatives_match_pytorch():
    """Gradients of gradients through the Cayley map (its solve keeps third-order terms)."""
    x = RNG.standard_normal((4, 4))
    theirs_orig = torch.tensor(x, requires_grad=True)
    ours_orig = bai.tensor(x, requires_grad=True)
    theirs_map = torch_p._Orthogonal(
        theirs_orig, torch_p._OrthMaps.cayley, use_trivialization=False
    )
    ours_map = ours_p._Orthogonal(ours_orig, ours_p._OrthMaps.cayley, use_trivialization=False)
    w = RNG.standard_normal((4, 4))
    (theirs_grad,) = torch.autograd.grad(
        (theirs_map(theirs_orig) ** 3).sum(), theirs_orig, create_graph=True
    )
    (ours_grad,) = bai.grad((ours_map(ours_orig) ** 3).sum(), ours_orig, create_graph=True)
    _close(ours_grad, theirs_grad, atol=1e-10)
    (theirs_hvp,) = torch.autograd.grad((theirs_grad * torch.tensor(w)).sum(), theirs_orig)
    (ours_hvp,) = bai.grad((ours_grad * bai.tensor(w)).sum(), ours_orig)
    _close(ours_hvp, theirs_hvp, atol=1e-9)


# ----- training through parametrized layers ----------------------------------------------------
class _TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.fc = torch.nn.Linear(3 * 4 * 4, 4)

    def forward(self, x):
        return self.fc(torch.tanh(self.conv(x)).flatten(1))


class _Net(bai.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = bai.nn.Conv2d(2, 3, 3, padding=1)
        self.fc = bai.nn.Linear(3 * 4 * 4, 4)

    def forward(self, x):
        return self.fc(self.conv(x).tanh().flatten(1))


@pytest.mark.parametrize(
    "conv_fn, fc_fn, optimizer",
    [
        ("spectral_norm", "weight_norm", "SGD"),
        ("weight_norm", "orthogonal", "Adam"),
        ("orthogonal", "spectral_norm", "SGD"),
    ],
)
def test_training_steps_match_pytorch(conv_fn, fc_fn, optimizer):
    theirs, ours = _TorchNet().double(), _Net().to(bai.float64)
    _copy_state(theirs, ours)
    getattr(torch_p, conv_fn)(theirs.conv)
    getattr(torch_p, fc_fn)(theirs.fc)
    getattr(ours_p, conv_fn)(ours.conv)
    getattr(ours_p, fc_fn)(ours.fc)
    _randomize(theirs)
    _copy_state(theirs, ours)
    make = {"SGD": (torch.optim.SGD, bai.optim.SGD, {"lr": 0.1, "momentum": 0.9})}
    make["Adam"] = (torch.optim.Adam, bai.optim.Adam, {"lr": 0.01})
    torch_cls, our_cls, settings = make[optimizer]
    theirs_opt = torch_cls(theirs.parameters(), **settings)
    ours_opt = our_cls(ours.parameters(), **settings)
    for _ in range(4):
        x = RNG.standard_normal((5, 2, 4, 4))
        target = RNG.standard_normal((5, 4))
        theirs_loss = ((theirs(torch.tensor(x)) - torch.tensor(target)) ** 2).mean()
        ours_loss = ((ours(bai.tensor(x)) - bai.tensor(target)) ** 2).mean()
        _close(ours_loss, theirs_loss, atol=1e-11)
        for optimizer_, loss in ((theirs_opt, theirs_loss), (ours_opt, ours_loss)):
            optimizer_.zero_grad()
            loss.backward()
            optimizer_.step()
    for key, value in theirs.state_dict().items():
        _close(ours.state_dict()[key], value, atol=1e-10)


# ----- frozen graphs ---------------------------------------------------------------------------
@pytest.mark.parametrize("parametrization", ["weight_norm", "spectral_norm", "orthogonal"])
def test_frozen_parametrized_layer_matches_eager(parametrization):
    layer = getattr(ours_p, parametrization)(bai.nn.Linear(4, 4)).eval()
    frozen = freeze(layer, [bai.TensorSpec((3, 4), "float32")])
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(frozen(x).numpy(), layer(bai.tensor(x)).numpy(), rtol=1e-6)


def test_frozen_householder_map_of_an_input_matches_eager():
    householder = ours_p._Orthogonal(
        bai.zeros(5, 3), ours_p._OrthMaps.householder, use_trivialization=False
    )
    frozen = freeze(lambda x: householder(x), [bai.TensorSpec((5, 3), "float32")])
    x = (RNG.standard_normal((5, 3)) * 3).astype(np.float32)  # new values, other signs
    np.testing.assert_allclose(frozen(x).numpy(), householder(bai.tensor(x)).numpy(), atol=1e-6)


def test_freezing_a_map_that_depends_on_the_input_values_is_refused():
    # the exponential's number of squarings comes from the values
    orth = ours_p._Orthogonal(
        bai.zeros(4, 4), ours_p._OrthMaps["matrix_exp"], use_trivialization=False
    )
    with pytest.raises(GraphError):
        freeze(lambda x: orth(x), [bai.TensorSpec((4, 4), "float32")])


def test_the_cayley_map_freezes_its_solve():
    cayley = ours_p._Orthogonal(
        bai.zeros(4, 4), ours_p._OrthMaps["cayley"], use_trivialization=False
    )
    frozen = freeze(lambda x: cayley(x), [bai.TensorSpec((4, 4), "float32")])
    x = (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)  # new values
    np.testing.assert_allclose(frozen(x).numpy(), cayley(bai.tensor(x)).numpy(), atol=1e-6)
