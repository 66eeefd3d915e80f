"""In-place point-wise methods (``sqrt_``, ``sigmoid_``, ``pow_``, ``addcmul_``, ``lerp_``, ...)
and ``addcmul``/``addcdiv``/``lerp``/``clamp_min``/``clamp_max`` against PyTorch: values,
gradients through a recorded graph, the version counter, and refusals."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

POSITIVE = np.array([[0.5, 1.0, 2.0], [3.0, 0.25, 4.0]])
MIXED = np.array([[-1.5, 0.0, 2.5], [0.7, -0.2, 3.5]])
OTHER = np.array([[1.0, -2.0, 0.5], [2.0, 1.5, -1.0]])

UNARY = ["abs", "neg", "exp", "log", "sqrt", "rsqrt", "square", "reciprocal", "sign", "floor",
         "ceil", "sin", "cos", "log1p", "expm1", "sigmoid", "tanh", "relu", "erf"]  # fmt: skip


def _unary_call(name):
    return lambda x, lib: getattr(x, f"{name}_")()


CALLS = {f"{name}_": _unary_call(name) for name in UNARY}
CALLS.update({
    "pow_": lambda x, lib: x.pow_(2.5),
    "pow_ tensor": lambda x, lib: x.pow_(lib.tensor(OTHER)),
    "round_": lambda x, lib: x.round_(decimals=1),
    "clamp_min_": lambda x, lib: x.clamp_min_(1.0),
    "clamp_max_": lambda x, lib: x.clamp_max_(lib.tensor(OTHER)),
    "addcmul_": lambda x, lib: x.addcmul_(lib.tensor(OTHER), lib.tensor(OTHER), value=0.1),
    "addcdiv_": lambda x, lib: x.addcdiv_(lib.tensor(OTHER), lib.tensor(POSITIVE), value=-0.5),
    "lerp_": lambda x, lib: x.lerp_(lib.tensor(OTHER), 0.3),
    "lerp_ tensor weight": lambda x, lib: x.lerp_(lib.tensor(OTHER), lib.tensor(POSITIVE) / 4),
})  # fmt: skip
SMOOTH = {"abs_", "sign_", "floor_", "ceil_", "round_", "relu_", "clamp_min_", "clamp_max_"}


def _data(name):
    return POSITIVE if name.startswith(("log", "sqrt", "rsqrt", "pow", "reciprocal")) else MIXED


@pytest.mark.parametrize("name", list(CALLS))
def test_values_match_pytorch(name):
    ours, theirs = bai.tensor(_data(name)), torch.tensor(_data(name))
    assert CALLS[name](ours, bai) is ours
    CALLS[name](theirs, torch)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15)
    assert ours.version == 1


@pytest.mark.parametrize("name", [n for n in CALLS if n not in SMOOTH])
def test_gradients_through_the_graph_match_pytorch(name):
    x, tx = (
        bai.tensor(_data(name), requires_grad=True),
        torch.tensor(_data(name), requires_grad=True),
    )
    y, ty = x * 1.5, tx * 1.5
    CALLS[name](y, bai)
    CALLS[name](ty, torch)
    (y * bai.tensor(OTHER)).sum().backward()
    (ty * torch.tensor(OTHER)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradients_reach_the_other_operands():
    data = (MIXED, OTHER, POSITIVE)
    ours = [bai.tensor(d, requires_grad=True) for d in data]
    theirs = [torch.tensor(d, requires_grad=True) for d in data]
    for x, a, b in (ours, theirs):
        y = x * 1.0
        y.addcdiv_(a, b, value=0.5).lerp_(a * b, 0.25).addcmul_(a, b)
        (y**2).sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize(
    ("function", "args"),
    [("addcmul", (OTHER, POSITIVE)), ("addcdiv", (OTHER, POSITIVE)), ("lerp", (OTHER, 0.2)),
     ("clamp_min", (0.5,)), ("clamp_max", (0.5,))],
)  # fmt: skip
def test_out_of_place_forms_match_pytorch(function, args):
    def convert(lib, value):
        return lib.tensor(value) if isinstance(value, np.ndarray) else value

    kwargs = {"value": 0.5} if function.startswith("addc") else {}
    ours = getattr(bai, function)(bai.tensor(MIXED), *(convert(bai, a) for a in args), **kwargs)
    theirs = getattr(torch, function)(
        torch.tensor(MIXED), *(convert(torch, a) for a in args), **kwargs
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_refusals_name_the_op():
    with pytest.raises(RuntimeError):
        torch.tensor([1, 4]).sqrt_()
    with pytest.raises(bai.DTypeError, match=r"\[sqrt_\] cannot write .* int64"):
        bai.tensor([1, 4]).sqrt_()
    with pytest.raises(bai.AutogradError, match=r"\[exp_\] a leaf tensor"):
        bai.ones(2, requires_grad=True).exp_()
    with pytest.raises(bai.ShapeError, match=r"\[addcmul_\].*\(3,\).*\(2, 3\)"):
        bai.ones(3).addcmul_(bai.ones(2, 3), bai.ones(3))


def test_an_adam_step_written_with_them_matches_pytorch():
    """The update of torch.optim.Adam's single-tensor path, written with in-place methods."""
    rng = np.random.default_rng(0)
    start, grads = rng.normal(size=4), rng.normal(size=(3, 4))
    results = []
    for lib in (bai, torch):
        p, m, v = (
            lib.tensor(start),
            lib.zeros(4, dtype=lib.float64),
            lib.zeros(4, dtype=lib.float64),
        )
        for step, g in enumerate(grads, 1):
            g = lib.tensor(g)
            m.lerp_(g, 1 - 0.9)
            v.mul_(0.999).addcmul_(g, g, value=1 - 0.999)
            denom = (v.sqrt() / (1 - 0.999**step) ** 0.5).add_(1e-8)
            p.addcdiv_(m, denom, value=-0.01 / (1 - 0.9**step))
        results.append(p.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


SCALED_PRODUCTS = {
    "addmm": ((3, 4), (3, 5), (5, 4)),
    "addmv": ((3,), (3, 5), (5,)),
    "baddbmm": ((2, 3, 4), (2, 3, 5), (2, 5, 4)),
    "addr": ((3, 4), (3,), (4,)),
    "addbmm": ((3, 4), (2, 3, 5), (2, 5, 4)),
}


@pytest.mark.parametrize("name", sorted(SCALED_PRODUCTS))
def test_scaled_products_in_place_as_pytorch(name):
    """x.addmm_(a, b, beta=, alpha=) and its kin: PyTorch's values, the tensor itself returned
    with its version moved, gradients through it, and a product of another shape refused."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x, a, b = (rng.standard_normal(shape) for shape in SCALED_PRODUCTS[name])
    ours_a, ours_b = bai.tensor(a, requires_grad=True), bai.tensor(b, requires_grad=True)
    theirs_a, theirs_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ours = bai.tensor(x) * 1.0  # not a leaf: writable in place while recording
    theirs = torch.tensor(x) * 1.0
    version = ours.version
    assert getattr(ours, f"{name}_")(ours_a, ours_b, beta=0.5, alpha=2.0) is ours
    getattr(theirs, f"{name}_")(theirs_a, theirs_b, beta=0.5, alpha=2.0)
    assert ours.version > version
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours_a.grad.numpy(), theirs_a.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_b.grad.numpy(), theirs_b.grad.numpy(), rtol=1e-12)
    too_small = bai.tensor(np.zeros((1,) * len(SCALED_PRODUCTS[name][0])))
    with pytest.raises(bai.errors.ShapeError, match=f"\\[{name}_\\] the result has shape"):
        getattr(too_small, f"{name}_")(bai.tensor(a), bai.tensor(b))
