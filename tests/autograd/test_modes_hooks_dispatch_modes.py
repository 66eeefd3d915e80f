"""Grad modes as decorators, interceptors (nesting, exceptions, in-place ops), gradient hooks,
higher derivatives, and the version guard of every in-place op."""

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.autograd import dispatch


def leaf(*values):
    return bai.tensor(np.array(values, dtype=np.float64), requires_grad=True)


# ----- grad modes -------------------------------------------------------------------------------


def test_enable_grad_decorator_inside_no_grad():
    @bai.enable_grad()
    def double(x):
        assert bai.is_grad_enabled()
        return x * 2.0

    x = leaf(1.0, 2.0)
    with bai.no_grad():
        y = double(x)
        assert not bai.is_grad_enabled()  # restored after the call
        z = x * 2.0
    assert y.requires_grad and y.grad_fn is not None
    assert not z.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_no_grad_decorator_keeps_the_name_and_restores_the_mode():
    @bai.no_grad()
    def evaluate(x):
        """Docs."""
        return x * 3.0

    assert evaluate.__name__ == "evaluate" and evaluate.__doc__ == "Docs."
    assert not evaluate(leaf(1.0)).requires_grad
    assert bai.is_grad_enabled()


@pytest.mark.parametrize("flag", [True, False])
def test_set_grad_enabled_as_decorator(flag):
    seen = []

    @bai.set_grad_enabled(flag)
    def run(x):
        seen.append(bai.is_grad_enabled())
        return x * x

    with bai.set_grad_enabled(not flag):
        out = run(leaf(1.0, 2.0))
        assert bai.is_grad_enabled() is (not flag)
    assert seen == [flag]
    assert out.requires_grad is flag
    assert bai.is_grad_enabled()


def test_set_grad_enabled_as_context_and_function_restore_on_exceptions():
    with pytest.raises(RuntimeError, match="boom"), bai.set_grad_enabled(False):
        raise RuntimeError("boom")
    assert bai.is_grad_enabled()

    @bai.no_grad()
    def fails():
        raise ValueError("inner")

    with pytest.raises(ValueError, match="inner"):
        fails()
    assert bai.is_grad_enabled()


# ----- interceptors -----------------------------------------------------------------------------


class Recorder(bai.DispatchMode):
    def __init__(self, label: str = "", log: list | None = None) -> None:
        self.label = label
        self.log = [] if log is None else log
        self.before: list = []
        self.after: list = []
        self.inplace: list = []

    def before_op(self, op, inputs, attrs):
        self.before.append((op, inputs, dict(attrs)))
        self.log.append((self.label, "before", op.name))

    def after_op(self, op, inputs, output, attrs):
        self.after.append((op, inputs, output, dict(attrs)))
        self.log.append((self.label, "after", op.name))

    def after_inplace(self, name, target, result):
        self.inplace.append((name, target, result))
        self.log.append((self.label, "inplace", name))


def test_before_and_after_op_see_the_op_record_inputs_output_and_attrs():
    x = leaf(1.0, 2.0, 3.0)
    with bai.dispatch_mode(Recorder()) as recorder:
        out = x.sum(axis=0, keepdims=True)
    assert len(recorder.before) == len(recorder.after) == 1
    op, inputs, attrs = recorder.before[0]
    assert op.name == "sum" and isinstance(op, bai.ops.base.Op)
    assert inputs[0] is x
    assert attrs == {"axes": (0,), "keepdims": True}
    after_op, after_inputs, output, after_attrs = recorder.after[0]
    assert after_op is op and after_inputs[0] is x and output is out
    assert after_attrs == attrs


def test_before_op_runs_before_the_forward():
    calls = []

    class Checker(bai.DispatchMode):
        def before_op(self, op, inputs, attrs):
            calls.append(("before", op.name))

        def after_op(self, op, inputs, output, attrs):
            calls.append(("after", op.name, output.numpy().tolist()))

    with bai.dispatch_mode(Checker()):
        bai.tensor([1.0, 2.0]) * 3.0
    assert calls == [("before", "mul"), ("after", "mul", [3.0, 6.0])]


def test_nested_modes_both_see_every_op_in_order():
    log: list = []
    x = leaf(1.0, 2.0)
    with bai.dispatch_mode(Recorder("outer", log)) as outer:
        (x * 2.0).exp()
        with bai.dispatch_mode(Recorder("inner", log)) as inner:
            (x + 1.0).sin()
        x.neg()
    assert [a[0].name for a in outer.after] == ["mul", "exp", "add", "sin", "neg"]
    assert [a[0].name for a in inner.after] == ["add", "sin"]
    # for each op: every before_op, then the forward, then every after_op, outer first
    assert log[4:12] == [
        ("outer", "before", "add"), ("inner", "before", "add"),
        ("outer", "after", "add"), ("inner", "after", "add"),
        ("outer", "before", "sin"), ("inner", "before", "sin"),
        ("outer", "after", "sin"), ("inner", "after", "sin"),
    ]  # fmt: skip
    assert dispatch.active_modes() == ()


def test_an_exception_inside_intercept_pops_the_observer():
    recorder = Recorder()
    a, b = bai.zeros(2), bai.zeros(3)
    with pytest.raises(bai.ShapeError, match=r"\[add\] shapes"), bai.dispatch_mode(recorder):
        a + b
    assert dispatch.active_modes() == ()
    with pytest.raises(KeyError), bai.dispatch_mode(Recorder()), bai.dispatch_mode(recorder):
        raise KeyError("x")
    assert dispatch.active_modes() == ()
    bai.ones(2) * 2.0  # runs with no observer left
    assert [b[0].name for b in recorder.before] == ["add"]
    assert recorder.after == []


def test_interceptor_sees_in_place_ops():
    target = bai.tensor([1.0, 2.0])
    with bai.dispatch_mode(Recorder()) as recorder:
        returned = target.add_(1.0)
    assert returned is target
    assert len(recorder.inplace) == 1
    name, seen_target, result = recorder.inplace[0]
    assert name == "add_"
    assert seen_target is target
    np.testing.assert_array_equal(target.numpy(), [2.0, 3.0])
    if result is not None:
        np.testing.assert_array_equal(result.numpy(), [2.0, 3.0])
    assert target.version == 1


def test_interceptor_sees_every_in_place_op_name():
    x = bai.tensor([1.0, -2.0, 3.0])
    with bai.dispatch_mode(Recorder()) as recorder:
        x.add_(1.0).sub_(0.5).mul_(2.0).div_(4.0).clamp_(-1.0, 1.0)
        x.copy_(bai.tensor([0.1, 0.2, 0.3])).fill_(2.0).zero_()
        x += 1.0
    assert [entry[0] for entry in recorder.inplace] == [
        "add_", "sub_", "mul_", "div_", "clamp_", "copy_", "fill_", "zero_", "add_",
    ]  # fmt: skip
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0, 1.0])


def test_interceptor_without_after_inplace_still_works():
    class OnlyOps(bai.DispatchMode):
        def __init__(self):
            self.names = []

        def after_op(self, op, inputs, output, attrs):
            self.names.append(op.name)

    assert hasattr(bai.DispatchMode, "after_inplace")
    assert bai.DispatchMode().after_inplace("add_", bai.ones(1), None) is None
    x = bai.tensor([1.0])
    with bai.dispatch_mode(OnlyOps()):
        x.add_(1.0)
        x.mul_(3.0)
    np.testing.assert_array_equal(x.numpy(), [6.0])


# ----- hooks ------------------------------------------------------------------------------------


def test_hooks_returning_none_keep_the_gradient():
    seen = []
    x = leaf(1.0, 2.0)
    y = x * 3.0
    y.register_hook(lambda g: seen.append(g.numpy()))
    x.register_hook(lambda g: seen.append(g.numpy()))
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], 2 * np.array([3.0, 6.0]))  # d(y^2)/dy = 2y
    np.testing.assert_allclose(seen[1], 3.0 * seen[0])
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * np.array([1.0, 2.0]))


def test_hook_on_a_leaf_sees_the_summed_gradient_once():
    calls = []
    x = leaf(1.0, 2.0)
    x.register_hook(lambda g: calls.append(g.numpy()))
    (x * 2.0 + x * x + x.exp()).sum().backward()  # three uses of x
    assert len(calls) == 1
    expected = 2.0 + 2 * np.array([1.0, 2.0]) + np.exp([1.0, 2.0])
    np.testing.assert_allclose(calls[0], expected)
    np.testing.assert_allclose(x.grad.numpy(), expected)

    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    torch_calls = []
    tx.register_hook(lambda g: torch_calls.append(g.numpy().copy()))
    (tx * 2.0 + tx * tx + tx.exp()).sum().backward()
    assert len(torch_calls) == 1
    np.testing.assert_allclose(calls[0], torch_calls[0])


def test_hook_on_a_non_leaf_sees_the_summed_gradient_once():
    calls = []
    x = leaf(1.0, 2.0)
    y = x * 2.0
    y.register_hook(lambda g: calls.append(g.numpy()))
    (y + y * y).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0], 1.0 + 2 * np.array([2.0, 4.0]))


def test_hook_replacing_the_gradient_with_grad():
    x = leaf(1.0, 2.0)
    x.register_hook(lambda g: g * 10.0)
    (gx,) = bai.grad((x * x).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), [20.0, 40.0])
    assert x.grad is None


# ----- higher derivatives and grad w.r.t. non-leaves --------------------------------------------


def _nth_derivative(fn, x, order):
    out = fn(x)
    derivatives = []
    for _ in range(order):
        (out,) = bai.grad(out.sum(), [x], create_graph=True)
        derivatives.append(out)
    return derivatives


def test_third_derivative_of_sin_times_exp_matches_the_analytic_form():
    values = np.linspace(-2.0, 2.0, 7)
    x = bai.tensor(values, requires_grad=True)
    first, second, third = _nth_derivative(lambda t: t.sin() * t.exp(), x, 3)
    e, s, c = np.exp(values), np.sin(values), np.cos(values)
    np.testing.assert_allclose(first.numpy(), e * (s + c), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), 2 * e * c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(third.numpy(), 2 * e * (c - s), rtol=1e-12, atol=1e-14)


def test_third_derivative_of_tanh_matches_torch():
    values = np.linspace(-1.5, 1.5, 6)
    x = bai.tensor(values, requires_grad=True)
    ours = _nth_derivative(bai.tanh, x, 3)

    tx = torch.tensor(values, requires_grad=True)
    out, theirs = torch.tanh(tx), []
    for _ in range(3):
        (out,) = torch.autograd.grad(out.sum(), [tx], create_graph=True)
        theirs.append(out)
    for order, (o, t) in enumerate(zip(ours, theirs), start=1):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-10, err_msg=f"{order}")


def test_grad_with_respect_to_a_non_leaf():
    x = leaf(1.0, 2.0, 3.0)
    hidden = x * x
    out = (hidden.sin() * 2.0).sum()
    gh, gx = bai.grad(out, [hidden, x])
    np.testing.assert_allclose(gh.numpy(), 2.0 * np.cos([1.0, 4.0, 9.0]))
    np.testing.assert_allclose(gx.numpy(), gh.numpy() * 2 * np.array([1.0, 2.0, 3.0]))
    assert x.grad is None and hidden.grad is None

    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    th = tx * tx
    (tgh,) = torch.autograd.grad((th.sin() * 2.0).sum(), [th])
    np.testing.assert_allclose(gh.numpy(), tgh.numpy())


def test_grad_of_a_non_leaf_that_is_also_the_output():
    x = leaf(1.0, 2.0)
    y = x * 3.0
    (gy,) = bai.grad(y, [y], bai.tensor(np.array([1.0, 5.0])))
    np.testing.assert_array_equal(gy.numpy(), [1.0, 5.0])


# ----- in-place ops and the version guard -------------------------------------------------------

IN_PLACE = {
    "add_": lambda w: w.add_(1.0),
    "sub_": lambda w: w.sub_(1.0),
    "mul_": lambda w: w.mul_(2.0),
    "div_": lambda w: w.div_(2.0),
    "zero_": lambda w: w.zero_(),
    "fill_": lambda w: w.fill_(5.0),
    "clamp_": lambda w: w.clamp_(0.0, 3.5),
    "copy_": lambda w: w.copy_(bai.tensor(np.array([7.0, 8.0]))),
}


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_modifying_a_saved_tensor_names_mul_and_the_in_place_op(name):
    x = leaf(1.0, 2.0)
    w = bai.tensor(np.array([3.0, 4.0]))
    y = x * w  # mul saves w for x's gradient
    IN_PLACE[name](w)
    assert w.version == 1
    with pytest.raises(bai.AutogradError) as info:
        y.sum().backward()
    message = str(info.value)
    expected = (
        f"[mul] backward needs an input of 'mul', which was modified in place by '{name}' after "
        "it was used (version 0 -> 1)"
    )
    assert message.startswith(expected)
    assert "help: use the out-of-place form" in message


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_modifying_a_saved_tensor_through_a_view_names_the_op(name):
    x = leaf(1.0, 2.0)
    w = bai.tensor(np.array([[3.0, 4.0]]))
    y = x * w.reshape(2)
    IN_PLACE[name](w[0])
    with pytest.raises(bai.AutogradError, match=rf"\[mul\].*'{name}'"):
        y.sum().backward()


def test_fill_keeps_the_graph_with_a_zero_gradient_like_torch():
    x = leaf(1.0, -2.0)
    y = x * x
    y.fill_(3.0)
    assert y.requires_grad
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])

    tx = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    ty = tx * tx
    ty.fill_(3.0)
    ty.sum().backward()
    assert ty.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_zero_keeps_the_graph_with_a_zero_gradient():
    x = leaf(1.0, -2.0)
    y = x * 2.0  # mul by a number saves nothing that zero_ changes
    y.zero_()
    assert y.requires_grad
    (y + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_fill_zero_gradient_stays_zero_under_inf_upstream():
    x = leaf(1.0, 2.0)
    y = x * 2.0
    y.fill_(1.0)
    (gx,) = bai.grad(y, [x], bai.tensor(np.array([np.inf, np.nan])))
    np.testing.assert_array_equal(gx.numpy(), [0.0, 0.0])


def test_copy_from_a_tensor_that_requires_grad_passes_the_gradient_to_the_source():
    x = leaf(1.0, 2.0)
    source = leaf(3.0, 4.0)
    y = x * 2.0
    y.copy_(source * source)
    assert y.requires_grad
    (y * bai.tensor(np.array([1.0, 10.0]))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(source.grad.numpy(), [6.0, 80.0])

    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    ty = tx * 2.0
    ty.copy_(ts * ts)
    (ty * torch.tensor([1.0, 10.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(source.grad.numpy(), ts.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_copy_into_a_plain_tensor_from_one_that_requires_grad():
    source = leaf(3.0, 4.0)
    target = bai.zeros(2, 2, dtype="float64")
    target.copy_(source)  # broadcast over the rows
    assert target.requires_grad
    target.sum().backward()
    np.testing.assert_array_equal(source.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize(
    "modify, name",
    [
        (lambda t: t.add_(0.5), "add_"),
        (lambda t: t.sub_(0.5), "sub_"),
        (lambda t: t.mul_(1.5), "mul_"),
        (lambda t: t.div_(2), "div_"),
    ],
    ids=["add_", "sub_", "mul_", "div_"],
)
def test_in_place_float_into_an_integer_tensor_is_a_dtype_error(modify, name):
    values = bai.tensor([1, 2, 3])
    with pytest.raises(bai.DTypeError, match=rf"^\[{name}\] cannot write") as info:
        modify(values)
    assert "int64" in str(info.value)
    assert "help:" in str(info.value)
    np.testing.assert_array_equal(values.numpy(), [1, 2, 3])  # untouched
    assert values.version == 0


def test_in_place_integer_ops_that_fit_are_fine():
    values = bai.tensor([1, 2, 3])
    values.add_(2).mul_(3).sub_(1)
    np.testing.assert_array_equal(values.numpy(), [8, 11, 14])
    assert values.dtype == bai.int64


def test_int_add_float_refused_also_under_an_interceptor():
    values = bai.tensor([1, 2, 3])
    with pytest.raises(bai.DTypeError, match=r"\[add_\]"), bai.dispatch_mode(Recorder()):
        values.add_(0.5)


def test_zeroing_a_saved_output_names_the_op_and_zero_():
    x = leaf(1.0, -2.0)
    y = x.exp()  # exp's backward reads its output
    y.zero_()
    with pytest.raises(bai.AutogradError, match=r"^\[exp\] backward needs the output.*'zero_'"):
        y.sum().backward()


def test_a_hook_returning_a_wrong_shape_names_the_hook_and_the_tensor():
    x = bai.ones(3, requires_grad=True)
    y = x * 2.0

    def widen(grad):
        return bai.ones(4)

    y.register_hook(widen)
    with pytest.raises(bai.AutogradError, match=r"hook '.*widen' on the output of 'mul'") as caught:
        y.sum().backward()
    assert "shape (4,)" in str(caught.value) and "(3,)" in str(caught.value)


def test_a_hook_returning_a_numpy_array_names_the_hook_and_the_tensor():
    x = bai.ones(2, 3, requires_grad=True)

    def as_array(grad):
        return grad.numpy() * 2

    x.register_hook(as_array)
    with pytest.raises(bai.AutogradError, match=r"hook '.*as_array' on a leaf tensor of shape"):
        (x * 3.0).sum().backward()


def test_a_leaf_hook_with_a_wrong_shape_fails_at_backward_not_at_the_optimizer_step():
    model = bai.nn.Linear(3, 2)
    model.weight.register_hook(lambda grad: grad.sum(axis=0))
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(bai.AutogradError, match=r"\(2, 3\)") as caught:
        model(bai.ones(4, 3)).sum().backward()
    assert "<lambda>" in str(caught.value)
    assert model.weight.grad is None
    optimizer.step()  # nothing wrong reached the parameters


def test_a_hook_may_change_values_of_the_same_shape_and_dtype():
    x = bai.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad * 0.5)
    (x * 4.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0, np.float32))
