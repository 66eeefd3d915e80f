"""``buildingai.compile`` as PyTorch programs call it: ``torch.compile(model)`` and
``torch.compile(fn)`` with no input signature. The training loops below are PyTorch code run
against both libraries (``torch`` is whichever module is passed in); compiled results equal
eager BuildingAI and PyTorch's in float64."""

import warnings

import numpy as np
import pytest

import buildingai
import buildingai as bai
from buildingai import nn
from buildingai.errors import ArgumentError
from buildingai.graph import CompiledFunction, CompiledModule, CompileWarning, GraphError

pytorch = pytest.importorskip("torch")


# ----- the training loop, as PyTorch programs write it ---------------------------------------


def train_and_evaluate(torch, compile_model: bool, steps: int = 3) -> dict:
    """Three SGD steps on a small classifier, evaluated under no_grad in eval mode after each
    one, in float64. ``torch`` is PyTorch or BuildingAI."""
    nn = torch.nn
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((12, 6)))
    y = torch.from_numpy(rng.integers(0, 3, 12))
    x_test = torch.from_numpy(rng.standard_normal((5, 6)))

    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    model = model.double()
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(param.shape))))
    if compile_model:
        model = torch.compile(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    losses, evaluations = [], []
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            evaluations.append(model(x_test).numpy().copy())
    with torch.inference_mode():
        last_batch = model(x_test[:3]).numpy().copy()  # a new batch size: traced once more
    state = {key: value.numpy().copy() for key, value in model.state_dict().items()}
    return {"losses": losses, "evaluations": evaluations, "last": last_batch, "state": state,
            "model": model}  # fmt: skip


def test_compiled_model_trains_and_evaluates_as_eager_and_as_pytorch():
    compiled = train_and_evaluate(bai, compile_model=True)
    eager = train_and_evaluate(bai, compile_model=False)
    theirs = train_and_evaluate(pytorch, compile_model=False)

    assert isinstance(compiled["model"], CompiledModule)
    assert compiled["losses"] == eager["losses"]
    for ours, reference in zip(compiled["evaluations"], eager["evaluations"]):
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(compiled["last"], eager["last"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(compiled["losses"], theirs["losses"], rtol=1e-10)
    for ours, reference in zip(compiled["evaluations"], theirs["evaluations"]):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-12)
    # the state after three steps: parameters and BatchNorm's running statistics
    assert list(compiled["state"]) == ["_orig_mod." + key for key in eager["state"]]
    for key, value in eager["state"].items():
        np.testing.assert_array_equal(compiled["state"]["_orig_mod." + key], value, err_msg=key)
        np.testing.assert_allclose(value, theirs["state"][key], rtol=1e-10, atol=1e-12)
    # eval calls ran frozen graphs (one per batch size); training calls ran eagerly
    assert compiled["model"].cache_info() == [
        "((5, 6) <f8) -> graph",
        "((3, 6) <f8) -> graph",
    ]


def test_evaluation_graph_reads_the_weights_trained_since_it_was_traced():
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
    compiled = bai.compile(model).eval()  # eval mode: the no_grad calls run a graph
    x = bai.randn(3, 4)
    optimizer = bai.optim.Adam(compiled.parameters(), lr=0.1)
    for _ in range(3):
        with bai.no_grad():
            frozen = compiled(x)
            np.testing.assert_array_equal(frozen.numpy(), model(x).numpy())
        loss = compiled(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert len(compiled.cache_info()) == 1


# ----- the module wrapper ---------------------------------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 2)
        self.scale = 2.0

    def forward(self, x, shift=0.0):
        return self.fc2(self.fc1(x).relu()) * self.scale + shift

    def describe(self):
        return f"Net x{self.scale}"


def test_compiled_module_forwards_attributes_modes_and_parameters():
    model = Net()
    compiled = bai.compile(model)
    assert compiled._orig_mod is model
    assert compiled.fc1 is model.fc1 and compiled.scale == 2.0
    assert compiled.describe() == "Net x2.0"
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    compiled.eval()
    assert not model.training and not model.fc1.training and not compiled.training
    compiled.train()
    assert model.training
    assert "_orig_mod" in repr(compiled)


def test_state_dict_keys_are_pytorchs_and_load_both_ways():
    model = Net()
    compiled = bai.compile(model)
    theirs = pytorch.compile(pytorch.nn.Sequential(pytorch.nn.Linear(5, 8)))  # traces lazily
    assert list(theirs.state_dict()) == ["_orig_mod.0.weight", "_orig_mod.0.bias"]
    assert list(bai.compile(nn.Sequential(nn.Linear(5, 8))).state_dict()) == list(
        theirs.state_dict()
    )
    state = compiled.state_dict()
    assert list(state) == ["_orig_mod." + key for key in model.state_dict()]

    # into the uncompiled model, with the prefix taken off (or from _orig_mod, as in PyTorch)
    other = Net()
    other.load_state_dict({key.removeprefix("_orig_mod."): v for key, v in state.items()})
    other.load_state_dict(compiled._orig_mod.state_dict())
    x = bai.randn(2, 5)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    # into a compiled model: its own keys, or the uncompiled model's
    again = bai.compile(Net())
    again.load_state_dict(state)
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())
    again = bai.compile(Net())
    again.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())


def test_keyword_arguments_and_python_values_are_part_of_the_signature():
    model = Net().eval()
    compiled = bai.compile(model)
    x = bai.randn(3, 5)
    with bai.no_grad():
        for shift in (0.0, 1.5, 0.0):
            np.testing.assert_array_equal(
                compiled(x, shift=shift).numpy(), model(x, shift=shift).numpy()
            )
    assert compiled.cache_info() == ["((3, 5) <f4) -> graph", "((3, 5) <f4) -> graph"]


def test_calls_that_need_eager_semantics_run_the_model_eagerly():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))
    compiled = bai.compile(model)
    x = bai.randn(6, 3)
    # training mode under no_grad: BatchNorm updates its statistics on every call, as eager
    with bai.no_grad():
        compiled(x)
        compiled(x)
    assert model[1].num_batches_tracked.item() == 2
    # forward hooks run on every call
    compiled.eval()
    seen = []
    handle = model[0].register_forward_hook(lambda module, args, output: seen.append(output))
    with bai.no_grad():
        compiled(x)
        compiled(x)
    assert len(seen) == 2
    handle.remove()
    # an input that requires grad: its gradient comes back
    x.requires_grad_()
    compiled(x).sum().backward()
    assert x.grad is not None and x.grad.shape == (6, 3)
    assert compiled.cache_info() == []


# ----- the function form ----------------------------------------------------------------------


def test_function_form_traces_each_new_batch_size_and_equals_eager():
    def f(x, y):
        return bai.sin(x) * y + x.mean(dim=0)

    compiled = bai.compile(f)
    assert isinstance(compiled, CompiledFunction) and compiled.__name__ == "f"
    rng = np.random.default_rng(0)
    for batch in (4, 4, 7, 4):
        x = bai.from_numpy(rng.standard_normal((batch, 3)).astype(np.float32))
        y = bai.from_numpy(rng.standard_normal((1, 3)).astype(np.float32))
        np.testing.assert_array_equal(compiled(x, y).numpy(), f(x, y).numpy())
    assert compiled.cache_info() == [
        "((4, 3) <f4, (1, 3) <f4) -> graph",
        "((7, 3) <f4, (1, 3) <f4) -> graph",
    ]

    dynamic = bai.compile(f, dynamic=True)
    for batch in (4, 7, 9):
        x = bai.from_numpy(rng.standard_normal((batch, 3)).astype(np.float32))
        np.testing.assert_allclose(dynamic(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)
    assert dynamic.cache_info() == ["((None, 3) <f4, (1, 3) <f4) -> graph"]


def test_recompile_limit_warns_once_and_runs_new_signatures_eagerly():
    compiled = bai.compile(lambda x: x * 2 + 1)
    compiled.recompile_limit = 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in (1, 2, 3, 4, 5):
            x = bai.randn(batch)
            np.testing.assert_array_equal(compiled(x).numpy(), (x * 2 + 1).numpy())
    messages = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    assert len(messages) == 1 and "recompile limit (2 input signatures)" in messages[0]
    assert caught[0].filename == __file__  # points at the caller's line
    assert len(compiled.cache_info()) == 2


def test_training_step_function_compiles_as_a_training_step():
    def run(compiled_step: bool):
        bai.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        optimizer = bai.optim.Adam(model.parameters(), lr=1e-2)

        def train_step(x, y):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        step = bai.compile(train_step) if compiled_step else train_step
        rng = np.random.default_rng(1)
        losses = []
        for batch in (6, 6, 6, 4):
            x = bai.from_numpy(rng.standard_normal((batch, 8)).astype(np.float32))
            y = bai.from_numpy(rng.integers(0, 3, batch))
            losses.append(step(x, y).item())
        return losses, [p.numpy().copy() for p in model.parameters()], step

    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_array_equal(a, b)
    assert compiled[2].cache_info() == [
        "((6, 8) <f4, (6,) <i8) -> training step",
        "((4, 8) <f4, (4,) <i8) -> training step",
    ]


def test_function_whose_result_is_differentiated_runs_eagerly():
    model = nn.Linear(4, 2)
    forward = bai.compile(lambda x: model(x).tanh())
    x = bai.randn(3, 4)
    forward(x).sum().backward()
    grad = model.weight.grad.numpy().copy()
    model.zero_grad()
    model(x).tanh().sum().backward()
    np.testing.assert_array_equal(grad, model.weight.grad.numpy())
    assert forward.cache_info() == ["((3, 4) <f4) -> eager: its result requires grad"]
    with bai.no_grad():  # the same function without gradients: a graph
        np.testing.assert_array_equal(forward(x).numpy(), model(x).tanh().numpy())
    assert forward.cache_info()[1] == "((3, 4) <f4) -> graph"


def test_gradients_computed_in_the_function_are_those_of_eager():
    model = nn.Linear(4, 2)

    def compute_gradients(x):  # backward inside, the optimizer step outside
        loss = model(x).square().mean()
        loss.backward()
        return loss

    x = bai.randn(5, 4)
    compiled = bai.compile(compute_gradients)
    loss = compiled(x)
    grad = model.weight.grad.numpy().copy()
    model.zero_grad()
    assert loss.item() == compute_gradients(x).item()
    np.testing.assert_array_equal(grad, model.weight.grad.numpy())


def test_untraceable_call_warns_and_runs_eagerly_and_fullgraph_raises():
    def branchy(x):
        if x.sum() > 0:  # a branch on a tensor value cannot be one graph
            return x * 2
        return x - 1

    x = bai.ones(3)
    with bai.no_grad():
        with pytest.warns(CompileWarning, match="could not be traced and runs eagerly"):
            np.testing.assert_array_equal(bai.compile(branchy)(x).numpy(), branchy(x).numpy())
        with pytest.raises(GraphError, match="cannot branch on tensor values"):
            bai.compile(branchy, fullgraph=True)(x)


def test_user_errors_are_raised_as_eager_raises_them_without_a_warning():
    model = bai.compile(nn.Linear(4, 2)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with bai.no_grad(), pytest.raises(bai.ShapeError, match="in_features = 4"):
            model(bai.randn(3, 5))


# ----- torch.compile's keywords ---------------------------------------------------------------


def test_torch_compile_keywords_are_accepted_and_mean_what_the_docstring_says():
    model = Net()
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        assert isinstance(bai.compile(model, mode=mode), CompiledModule)
    with pytest.raises(ArgumentError, match="unknown mode"):
        bai.compile(model, mode="fastest")
    with pytest.raises(ArgumentError, match="no counterpart"):
        bai.compile(model, backend="cudagraphs")
    with pytest.raises(ArgumentError, match="no counterpart"):
        bai.compile(model, backend=lambda graph, inputs: graph)
    assert bai.compile(model, disable=True) is model
    assert isinstance(bai.compile(model, fullgraph=True, dynamic=False, options={}), nn.Module)

    def double(x):
        return x * 2

    x = bai.randn(3)
    eager = bai.compile(double, backend="eager")
    assert eager(x).numpy().tolist() == (x * 2).numpy().tolist() and eager.cache_info() == []
    unoptimized = bai.compile(double, backend="aot_eager")
    unoptimized(x)
    assert unoptimized.cache_info() == ["((3,) <f4) -> graph"]

    @bai.compile
    def plain(x):
        return x + 1

    @bai.compile(fullgraph=True, mode="max-autotune")
    def configured(x):
        return x + 1

    for function in (plain, configured):
        np.testing.assert_array_equal(function(x).numpy(), (x + 1).numpy())


def test_a_signature_still_compiles_a_training_step_and_refuses_a_module():
    with pytest.raises(ArgumentError, match="not a Module"):
        buildingai.compile(Net(), [bai.TensorSpec((None, 5))])
