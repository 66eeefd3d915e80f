"""The backward engine: accumulation, grad(), higher orders, graph freeing, hooks, modes."""

import gc
import weakref

import numpy as np
import pytest
import torch

import buildingai as bai


def leaf(*values):
    return bai.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def test_backward_accumulates_into_leaves():
    x = leaf(1.0, 2.0, 3.0)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.numpy())


def test_grad_leaves_dot_grad_untouched():
    x = leaf(1.0, 2.0)
    (g,) = bai.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert x.grad is None


def test_grad_with_respect_to_an_intermediate_tensor():
    x = leaf(1.0, 2.0)
    hidden = x * 3.0
    out = (hidden * hidden).sum()
    gh, gx = bai.grad(out, [hidden, x])
    np.testing.assert_allclose(gh.numpy(), 2 * hidden.numpy())
    np.testing.assert_allclose(gx.numpy(), 18 * x.numpy())


def test_third_derivative_of_cube():
    x = leaf(0.5, -1.5)
    (first,) = bai.grad((x * x * x).sum(), x, create_graph=True)
    (second,) = bai.grad(first.sum(), x, create_graph=True)
    (third,) = bai.grad(second.sum(), x)
    np.testing.assert_allclose(first.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(second.numpy(), 6 * x.numpy())
    np.testing.assert_allclose(third.numpy(), [6.0, 6.0])


def test_hessian_vector_product_matches_torch():
    rng = np.random.default_rng(0)
    w0, x0, v0 = (
        rng.standard_normal((3, 4)),
        rng.standard_normal((5, 3)),
        rng.standard_normal((3, 4)),
    )

    def loss(lib, w, x):
        h = (x @ w).exp()
        return (h * h / (h + 1.0)).sum()

    w = bai.tensor(w0, requires_grad=True)
    (g,) = bai.grad(loss(bai, w, bai.tensor(x0)), w, create_graph=True)
    (hv,) = bai.grad((g * bai.tensor(v0)).sum(), w)

    tw = torch.tensor(w0, requires_grad=True)
    (tg,) = torch.autograd.grad(loss(torch, tw, torch.tensor(x0)), tw, create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.tensor(v0)).sum(), tw)
    np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-10, atol=1e-12)


def test_diamond_graph_sums_both_paths():
    x = leaf(2.0)
    a = x * 3.0
    y = a * a + a  # a is used twice
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3 * (2 * 6.0 + 1)])


def test_second_backward_through_freed_graph_raises():
    x = leaf(1.0, 2.0)
    y = (x.exp() * 2.0).sum()
    y.backward()
    with pytest.raises(bai.AutogradError, match=r"already freed.*\n.*retain_graph=True"):
        y.backward()


def test_long_chain_does_not_recurse():
    x = leaf(1.0)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])


def test_memory_is_released_as_the_walk_proceeds():
    x = leaf(0.1, 0.2)
    late = x.exp()
    late_node = late._node
    out = (late.exp() * 2.0).sum()
    seen = {}

    def observe(grad):
        # this hook runs when the walk reaches `late`, after the nodes above it ran
        seen["upper_freed"] = out._node.freed
        return grad

    late.register_hook(observe)
    saved = weakref.ref(late_node)
    del late, late_node
    out.backward()
    assert seen["upper_freed"] is True
    gc.collect()
    assert saved() is None or saved().freed


def test_root_gradient_required_for_non_scalars():
    x = leaf(1.0, 2.0)
    with pytest.raises(bai.AutogradError, match=r"one-element outputs, got shape \(2,\)"):
        (x * 2.0).backward()
    (x * 2.0).backward(bai.tensor(np.array([1.0, 10.0])))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_grad_errors_for_unused_and_non_differentiable_inputs():
    x, z = leaf(1.0), leaf(2.0)
    with pytest.raises(bai.AutogradError, match=r"input 1 \(shape \(1,\)\) was not used"):
        bai.grad((x * 2.0).sum(), [x, z])
    assert bai.grad((x * 2.0).sum(), [x, z], allow_unused=True)[1] is None
    with pytest.raises(bai.AutogradError, match="input 0 does not require grad"):
        bai.grad((x * 2.0).sum(), bai.tensor([1.0]))


def test_backward_without_graph_raises():
    with pytest.raises(bai.AutogradError, match="does not require grad"):
        bai.tensor([1.0]).sum().backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(bai.DTypeError, match="only floating-point tensors can require gradients"):
        bai.tensor([1, 2], requires_grad=True)


def test_no_grad_and_enable_grad():
    x = leaf(1.0)
    with bai.no_grad():
        assert not (x * 2.0).requires_grad
        with bai.enable_grad():
            assert (x * 2.0).requires_grad
    assert (x * 2.0).requires_grad

    @bai.no_grad()
    def evaluate(t):
        return t * 2.0

    assert not evaluate(x).requires_grad
    with bai.set_grad_enabled(False):
        assert not bai.is_grad_enabled()
    assert bai.is_grad_enabled()


def test_hooks_replace_gradients_and_can_be_removed():
    x = leaf(1.0, 2.0)
    hidden = x * 2.0
    handle = hidden.register_hook(lambda g: g * 10.0)
    leaf_calls = []
    x.register_hook(lambda g: leaf_calls.append(g.numpy().copy()))
    hidden.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])
    assert len(leaf_calls) == 1
    handle.remove()
    x.grad = None
    (x * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_retain_grad_keeps_non_leaf_gradient():
    x = leaf(1.0, 2.0)
    hidden = x * 3.0
    hidden.retain_grad()
    (hidden * hidden).sum().backward()
    np.testing.assert_allclose(hidden.grad.numpy(), 2 * hidden.numpy())


def test_leaf_gradients_never_alias_each_other():
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    (a + b).sum().backward()
    a.grad.mul_(5.0)
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])


def test_float32_leaf_gets_float32_gradient_from_float64_use():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    (x * bai.tensor(np.array([1.0, 1.0]))).sum().backward()
    assert x.grad.dtype == bai.float32


def test_interceptor_sees_every_op_in_order():
    class Recorder(bai.DispatchMode):
        def __init__(self):
            self.names = []

        def after_op(self, op, inputs, output, attrs):
            self.names.append(op.name)

    x = leaf(1.0, 2.0)
    with bai.dispatch_mode(Recorder()) as recorder:
        ((x * 2.0).exp() @ x).sum()
    assert recorder.names == ["mul", "exp", "reshape", "reshape", "matmul", "reshape", "sum"]
    from buildingai.autograd import dispatch

    assert dispatch.active_modes() == ()


def test_cuda_device_without_cupy_is_a_clear_error():
    if bai.cuda_is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(bai.DeviceError, match="'cuda' device needs CuPy|no CUDA GPU"):
        bai.zeros(2, device="cuda")


def test_grad_takes_any_iterable_of_inputs_a_generator_included():
    bai.manual_seed(0)
    model = bai.nn.Linear(3, 2)
    x = bai.tensor(np.arange(12.0).reshape(4, 3), dtype=bai.float32)
    from_list = bai.grad(model(x).pow(2).sum(), list(model.parameters()))
    from_generator = bai.grad(model(x).pow(2).sum(), model.parameters())
    from_tuple = bai.grad(model(x).pow(2).sum(), tuple(model.parameters()))
    assert isinstance(from_generator, tuple) and len(from_generator) == 2
    for a, b, c in zip(from_list, from_generator, from_tuple):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    outputs = (model(x).sum() for _ in range(2))
    (weight_grad,) = bai.grad(outputs, iter([model.weight]))
    expected = 2 * np.tile(x.numpy().sum(axis=0), (2, 1))  # two outputs, each sum(x @ W.T + b)
    np.testing.assert_array_equal(weight_grad.numpy(), expected)


def test_backward_takes_iterables_of_outputs_and_of_their_gradients():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    outputs = [x * 2.0, x * 3.0]
    bai.backward(iter(outputs), (bai.ones(2) for _ in outputs))
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])


def test_grad_refuses_what_is_not_a_tensor_or_an_iterable_of_them():
    x = bai.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="inputs must be a Tensor or an iterable of Tensors"):
        bai.grad((x * 2.0).sum(), 3)


# ----- sums of gradients: in place into the walk's own, slices added into them -------------------


def _steps_and_slices(lib, x, w):
    """A loop over x's steps (x[t] @ w with a carried state) with more slices of x and of an
    intermediate result: basic indices of every kind, x itself read too."""
    h = x[0] @ w
    outputs = [h]
    for t in range(1, x.shape[0]):
        h = (x[t] + h.tanh()) @ w
        outputs.append(h)
    y = x * 2.0
    extra = y[1:3].sum() + y[..., None][-1, 0].sum() + y[1::2, 1].sum() + x[2, :, 1:].sum()
    extra = extra + y[1].sum() + (x * x).sum()
    return lib.stack(outputs).sum() + extra


@pytest.mark.parametrize("call", ["grad", "backward"])
def test_sums_of_slice_gradients_match_pytorch(call):
    rng = np.random.default_rng(0)
    x_np, w_np = rng.standard_normal((5, 3, 4)), rng.standard_normal((4, 4))
    ours = [bai.tensor(x_np, requires_grad=True), bai.tensor(w_np, requires_grad=True)]
    theirs = [torch.tensor(x_np, requires_grad=True), torch.tensor(w_np, requires_grad=True)]
    expected = torch.autograd.grad(_steps_and_slices(torch, *theirs), theirs)
    if call == "grad":
        got = bai.grad(_steps_and_slices(bai, *ours), ours)
    else:
        _steps_and_slices(bai, *ours).backward()
        got = [t.grad for t in ours]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)


def test_sums_made_in_place_never_change_a_gradient_handed_out():
    x = leaf(1.0, 2.0, 3.0)
    seen = []
    hidden = x * 1.0
    hidden.register_hook(lambda g: seen.append((g, g.numpy().copy())))
    out = hidden[0] * 2 + hidden[1:].sum() + hidden.sum() + hidden[::2].sum()
    out.backward(retain_graph=True)
    first = x.grad
    kept = first.numpy().copy()
    out.backward()  # a second walk sums again: the first .grad and the hook's tensor stay
    np.testing.assert_allclose(first.numpy(), kept)
    np.testing.assert_allclose(kept, [4.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * kept)
    for gradient, values in seen:
        np.testing.assert_allclose(gradient.numpy(), values)


def test_slice_gradients_with_create_graph_stay_differentiable():
    x_np = np.array([[1.0, 2.0], [3.0, 4.0]])
    ours = bai.tensor(x_np, requires_grad=True)
    theirs = torch.tensor(x_np, requires_grad=True)
    results = []
    for lib, x in ((bai, ours), (torch, theirs)):
        y = (x[0] ** 3).sum() + (x[1] * x[0]).sum() + (x[:, 1] ** 2).sum()
        (g,) = (bai.grad if lib is bai else torch.autograd.grad)(y, [x], create_graph=True)
        (gg,) = (bai.grad if lib is bai else torch.autograd.grad)(g.sum(), [x])
        results.append((g.detach().numpy(), gg.numpy()))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected)


def test_a_root_gradient_is_never_summed_into_in_place():
    x = leaf(1.0, 2.0)
    y = x * 1.0
    given = bai.tensor(np.array([1.0, 1.0]))
    gx, gy = bai.grad([y, y[0] * 1.0 + y.sum()], [x, y], grad_outputs=[given, bai.tensor(1.0)])
    np.testing.assert_allclose(given.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(gx.numpy(), [3.0, 2.0])
    np.testing.assert_allclose(gy.numpy(), [3.0, 2.0])
