"""Module mechanics: registration, naming (as PyTorch names things), modes, conversion, clone,
hooks and the module path in errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd.state import module_path
from buildingai.nn import (
    Identity,
    Linear,
    Module,
    ModuleList,
    Parameter,
    RemovableHandle,
    Sequential,
)

from .models import Block, Net, TorchNet

torch = pytest.importorskip("torch")


# ----- Parameter ---------------------------------------------------------------------------------
def test_parameter_is_a_leaf_requiring_grad_that_shares_memory():
    data = bai.zeros(2, 3)
    param = Parameter(data)
    assert param.requires_grad and param.is_leaf and param.grad is None
    assert param.array is data.array
    assert not Parameter(data, requires_grad=False).requires_grad
    assert Parameter().shape == (0,)
    assert type(param * 2) is bai.Tensor  # results of ops are plain tensors


def test_parameter_repr():
    text = repr(Parameter(bai.ones(2)))
    assert text.startswith("Parameter containing:\ntensor([1., 1.]")
    assert "requires_grad=True" in text


# ----- registration ----------------------------------------------------------------------------
def test_attribute_assignment_registers_parameters_buffers_and_modules():
    block = Block(3)
    assert list(block._parameters) == []
    assert list(block._modules) == ["fc1", "fc2"]
    assert list(block._buffers) == ["scale", "cache"]
    assert block.fc1.weight.shape == (6, 3)
    block.extra = Parameter(bai.zeros(1))
    assert "extra" in block._parameters and block.extra is block._parameters["extra"]
    block.scale = bai.full((3,), 2.0)  # assigning a Tensor to a buffer name replaces the buffer
    assert block._buffers["scale"].numpy().tolist() == [2.0, 2.0, 2.0]
    block.note = bai.ones(1)  # a Tensor under a new name is a plain attribute
    assert "note" not in block._buffers and "note" in block.__dict__
    assert {"fc1", "scale", "extra"} <= set(dir(block))


def test_reassigning_a_name_moves_it_between_kinds():
    module = Module()
    module.thing = Linear(1, 1)
    module.thing = Parameter(bai.zeros(1))  # a Parameter replaces anything of the same name
    assert "thing" not in module._modules and "thing" in module._parameters
    module.thing = None  # None keeps the slot (like an absent bias)
    assert module._parameters["thing"] is None and module.thing is None
    assert list(module.parameters()) == []
    with pytest.raises(TypeError, match="cannot assign Linear as parameter 'thing'"):
        module.thing = Linear(1, 1)  # as in PyTorch: delete the parameter first
    del module.thing
    module.thing = Linear(1, 1)
    assert "thing" in module._modules


def test_delattr_and_getattr():
    block = Block(2)
    del block.fc1
    del block.scale
    assert "fc1" not in block._modules and "scale" not in block._buffers
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'fc1'"):
        block.fc1  # noqa: B018
    block.plain = 3
    del block.plain
    assert not hasattr(block, "plain")


def test_registration_errors():
    module = Module()
    module.weight = Parameter(bai.zeros(2))
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'weight'.*Parameter"):
        module.weight = bai.zeros(2)
    module.child = Identity()
    with pytest.raises(TypeError, match="cannot assign int as sub-module 'child'"):
        module.child = 3
    module.register_buffer("stat", bai.zeros(1))
    with pytest.raises(TypeError, match="cannot assign str as buffer 'stat'"):
        module.stat = "x"
    with pytest.raises(TypeError, match="cannot register ndarray as buffer 'raw'"):
        module.register_buffer("raw", np.zeros(1))
    with pytest.raises(KeyError, match="must be non-empty and contain no"):
        module.register_buffer("a.b", bai.zeros(1))
    with pytest.raises(KeyError, match="attribute 'flag' already exists"):
        module.flag = True
        module.register_parameter("flag", Parameter(bai.zeros(1)))
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'p'"):
        module.register_parameter("p", bai.zeros(1))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        module.add_module("m", 3)


def test_a_module_that_skips_super_init_is_set_up_on_first_use():
    class Forgetful(Module):
        def __init__(self):
            self.fc = Linear(1, 1)
            self.scale = Parameter(bai.ones(1))

        def forward(self, x):
            return self.fc(x) * self.scale

    model = Forgetful()
    assert [name for name, _ in model.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert model.training and model(bai.ones(2, 1)).shape == (2, 1)

    class Bare(Module):
        def __init__(self):
            pass

        def forward(self, x):
            return x

    bare = Bare()
    assert list(bare.parameters()) == [] and bare.state_dict() == {}
    bare.register_buffer("steps", bai.zeros(1))
    assert list(bare.state_dict()) == ["steps"]


def test_forward_must_be_defined():
    with pytest.raises(NotImplementedError, match="module Module has no forward"):
        Module()(bai.zeros(1))


# ----- naming and walking, compared with PyTorch ---------------------------------------------------
def test_named_members_match_pytorch_names_and_order():
    ours, theirs = Net(), TorchNet()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters(prefix="model")] == [
        n for n, _ in theirs.named_parameters(prefix="model")
    ]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == []
    assert [n for n, _ in ours.layers[0].named_parameters(recurse=False)] == []
    assert [n for n, _ in ours.embed.named_parameters(recurse=False)] == ["weight", "bias"]
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert len(list(ours.children())) == 4


def test_shared_parameters_and_modules_are_listed_once():
    shared = Linear(2, 2)
    model = Sequential(shared, Identity(), shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in model.named_modules()] == ["", "0", "1"]
    assert len(list(model.children())) == 2
    # The state dict lists every name, as PyTorch's does.
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]

    tied = Module()
    tied.a, tied.b = Linear(3, 3), Linear(3, 3)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert tied.num_parameters() == 9 + 3 + 3


def test_buffers_persistent_and_not():
    block = Block(3)
    assert [n for n, _ in block.named_buffers()] == ["scale", "cache"]
    assert "cache" not in block.state_dict() and "scale" in block.state_dict()
    block.register_buffer("cache", bai.ones(3), persistent=True)
    assert "cache" in block.state_dict()
    block.register_buffer("empty", None)
    assert "empty" not in block.state_dict() and block.empty is None


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("layers.1.fc2") is net.layers[1].fc2
    assert net.get_submodule("") is net
    assert net.get_parameter("layers.0.fc1.bias") is net.layers[0].fc1.bias
    assert net.get_buffer("layers.1.scale") is net.layers[1].scale
    with pytest.raises(AttributeError, match="ModuleList has no sub-module '7'"):
        net.get_submodule("layers.7")
    with pytest.raises(AttributeError, match="Linear has no parameter 'gamma'"):
        net.get_parameter("embed.gamma")


def test_num_parameters():
    net = Net()
    expected = sum(p.numel() for p in TorchNet().parameters())
    assert net.num_parameters() == expected
    net.embed.requires_grad_(False)
    assert net.num_parameters(trainable_only=True) == expected - 16


# ----- modes, grads, conversion ------------------------------------------------------------------
def test_train_and_eval_reach_every_module():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is a bool"):
        net.train("no")


def test_requires_grad_and_zero_grad():
    net = Net()
    net(bai.randn(2, 3)).sum().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None for g in grads)
    net.zero_grad(set_to_none=False)
    assert all(p.grad is g and not g.numpy().any() for p, g in zip(net.parameters(), grads))
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_visits_children_first():
    seen = []
    model = Sequential(Linear(1, 1), Sequential(Identity()))
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Identity", "Sequential", "Sequential"]


def test_to_float64_in_place_keeps_identities():
    net = Net()
    params = list(net.parameters())
    net(bai.randn(2, 3)).sum().backward()
    assert net.to(bai.float64) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.dtype == np.float64 and p.grad.dtype == np.float64 for p in params)
    assert net.layers[0].scale.dtype == np.float64
    assert net.step.dtype == np.int64  # integer buffers keep their dtype
    assert net.float() is net and net.embed.weight.dtype == np.float32
    assert net.to("cpu", dtype="float64").embed.bias.dtype == np.float64
    assert net.to(bai.zeros(1, dtype="float32")).embed.bias.dtype == np.float32
    with pytest.raises(bai.DTypeError, match="floating dtypes only, got int64"):
        net.to(bai.int64)


def test_to_makes_an_earlier_graph_refuse_backward():
    model = Linear(2, 2)
    out = model(bai.randn(3, 2)).sum()
    model.double()
    with pytest.raises(bai.AutogradError, match="Module.to"):
        out.backward()


# ----- clone (fast weights) --------------------------------------------------------------------------
def test_detached_clone_copies_values_into_new_leaves():
    net = Net()
    net(bai.randn(2, 3)).sum().backward()
    twin = net.clone(detach=True)
    pairs = list(zip(net.parameters(), twin.parameters()))
    assert len(pairs) == len(list(net.parameters()))
    for original, copied in pairs:
        assert copied is not original and copied.is_leaf and copied.requires_grad
        assert isinstance(copied, Parameter) and copied.grad is None
        assert not np.shares_memory(copied.array, original.array)
        np.testing.assert_array_equal(copied.numpy(), original.numpy())
    assert twin.layers[0].scale is not net.layers[0].scale
    np.testing.assert_array_equal(twin.layers[0].scale.numpy(), net.layers[0].scale.numpy())


def test_detached_clone_is_independent_and_gradients_reach_its_leaves_only():
    net = Net()
    before = {name: p.numpy() for name, p in net.named_parameters()}
    twin = net.clone(detach=True)
    with bai.no_grad():
        for param in twin.parameters():
            param.add_(1.0)
    for name, param in net.named_parameters():
        np.testing.assert_array_equal(param.numpy(), before[name])
    twin(bai.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in twin.parameters())
    assert all(p.grad is None for p in net.parameters())


def test_clone_keeps_sharing_inside_the_copy():
    shared = Linear(2, 2)
    model = Sequential(shared, shared)
    twin = model.clone()
    assert twin[0] is twin[1] and twin[0] is not shared
    assert len(list(twin.parameters())) == 2


# ----- repr ----------------------------------------------------------------------------------------
def test_repr_matches_pytorch():
    assert repr(Net()) == repr(TorchNet()).replace("Torch", "")
    long = ModuleList([Linear(2, 2) for _ in range(3)] + [Identity()])
    theirs = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)] + [torch.nn.Identity()])
    assert repr(long) == repr(theirs)
    assert repr(Module()) == "Module()"


def test_extra_repr_with_several_lines():
    class Custom(Module):
        def extra_repr(self):
            return "alpha=1\nbeta=2"

    assert repr(Custom()) == "Custom(\n  alpha=1\n  beta=2\n)"


# ----- hooks ---------------------------------------------------------------------------------------
class Doubler(Module):
    def forward(self, x, scale=1.0):
        return x * 2 * scale


def test_hooks_run_in_order_and_can_replace_inputs_and_outputs():
    module = Doubler()
    log = []
    module.register_forward_pre_hook(lambda m, args: log.append("pre1"))
    module.register_forward_pre_hook(lambda m, args: log.append("pre0"), prepend=True)
    module.register_forward_hook(lambda m, args, out: log.append("post"))
    assert module(bai.ones(1)).item() == 2.0
    assert log == ["pre0", "pre1", "post"]

    replace_input = module.register_forward_pre_hook(lambda m, args: args[0] + 1)  # not a tuple
    assert module(bai.ones(1)).item() == 4.0
    replace_output = module.register_forward_hook(lambda m, args, out: out * 10)
    assert module(bai.ones(1)).item() == 40.0
    replace_input.remove()
    replace_output.remove()
    replace_output.remove()  # removing twice is harmless
    assert module(bai.ones(1)).item() == 2.0


def test_hooks_with_kwargs():
    module = Doubler()

    def pre(m, args, kwargs):
        return args, {**kwargs, "scale": 3.0}

    seen = {}

    def post(m, args, kwargs, out):
        seen.update(kwargs)

    module.register_forward_pre_hook(pre, with_kwargs=True)
    module.register_forward_hook(post, with_kwargs=True)
    assert module(bai.ones(1), scale=1.0).item() == 6.0
    assert seen == {"scale": 3.0}

    bad = Doubler()
    bad.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
    with pytest.raises(TypeError, match=r"must return None or a tuple \(args, kwargs\)"):
        bad(bai.ones(1))


def test_hook_handle_as_context_manager_and_always_call():
    module = Doubler()
    with module.register_forward_hook(lambda m, a, out: out + 1) as handle:
        assert isinstance(handle, RemovableHandle)
        assert module(bai.ones(1)).item() == 3.0
    assert module(bai.ones(1)).item() == 2.0

    calls = []
    module.register_forward_hook(lambda m, a, out: calls.append(out), always_call=True)
    with pytest.raises(TypeError):
        module(bai.ones(1), wrong=True)
    assert calls == [None]


# ----- module path in errors -----------------------------------------------------------------------
class Encoder(Module):
    def __init__(self):
        super().__init__()
        self.layers = Sequential(Linear(4, 8), Sequential(Identity(), Linear(5, 3)))

    def forward(self, x):
        return self.layers(x)


class Model(Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.fc = Linear(3, 2)

    def forward(self, x, crash=False):
        if crash:
            return x @ bai.ones(7, 7)  # an op error in the model's own forward
        return self.fc(self.encoder(x))


def test_shape_error_names_the_module_path():
    with pytest.raises(bai.ShapeError) as info:
        Model()(bai.randn(2, 4))
    message = str(info.value)
    assert "[linear] input (2, 8) does not fit weight (3, 5)" in message
    assert "(in Model.encoder.layers.1.1)" in message
    assert module_path() == ()  # popped even though forward raised


def test_error_in_the_top_forward_and_in_a_directly_called_layer():
    with pytest.raises(bai.ShapeError, match=r"\(in Model\)"):
        Model()(bai.randn(2, 4), crash=True)
    with pytest.raises(bai.ShapeError, match=r"\(in Linear\)"):
        Linear(4, 2)(bai.randn(2, 3))
    assert module_path() == ()


def test_path_of_a_grandchild_called_directly_and_of_a_shared_module():
    class Skipper(Module):
        def __init__(self):
            super().__init__()
            self.inner = Sequential(Linear(2, 2), Linear(3, 3))

        def forward(self, x):
            return self.inner[1](x)  # called from Skipper, held by Sequential

    with pytest.raises(bai.ShapeError, match=r"\(in Skipper\.inner\.1\)"):
        Skipper()(bai.randn(1, 2))

    shared = Linear(3, 3)
    twice = Sequential(Identity(), shared, shared)
    with pytest.raises(bai.ShapeError, match=r"\(in Sequential\.1\)"):
        twice(bai.randn(1, 2))


def test_layer_errors_and_plain_exceptions_get_the_path():
    from buildingai.nn import Unflatten

    model = Sequential(Identity(), Unflatten(1, (2, 2)))
    with pytest.raises(bai.ShapeError, match=r"\[Unflatten\].*\(in Sequential\.1\)"):
        model(bai.randn(1, 5))

    class Faulty(Module):
        def forward(self, x):
            raise KeyError("oops")

    outer = Sequential(Faulty())
    with pytest.raises(KeyError) as info:
        outer(bai.ones(1))
    assert getattr(info.value, "__notes__", ["(in Sequential.0)"]) == ["(in Sequential.0)"]
    assert module_path() == ()


def test_path_names_follow_renaming():
    model = Sequential(Linear(2, 2))
    model(bai.randn(1, 2))  # fills the name cache that the renaming must invalidate
    model.add_module("renamed", model._modules.pop("0"))
    model.renamed.weight = Parameter(bai.zeros(2, 3))
    with pytest.raises(bai.ShapeError, match=r"\(in Sequential\.renamed\)"):
        model(bai.randn(1, 2))


def test_grandchildren_called_directly_keep_their_paths_and_follow_moves():
    class Outer(Module):  # nanoGPT's spelling: self.transformer.wte(idx), .wpe(pos)
        def __init__(self):
            super().__init__()
            self.inner = Sequential(Linear(2, 2), Linear(2, 2))

        def forward(self, x, wrong=0):
            x = self.inner[0](x)
            return self.inner[1](x if wrong != 1 else bai.randn(1, 3))

    outer = Outer()
    for _ in range(2):  # alternating grandchildren both stay cached
        outer(bai.randn(1, 2))
    with pytest.raises(bai.ShapeError, match=r"\(in Outer\.inner\.1\)"):
        outer(bai.randn(1, 2), wrong=1)
    outer.inner = Sequential(Linear(2, 2), Sequential(Linear(2, 2)))  # a stale cache entry
    outer.inner[1] = outer.inner[1][0]
    with pytest.raises(bai.ShapeError, match=r"\(in Outer\.inner\.1\)"):
        outer(bai.randn(1, 2), wrong=1)


def test_paths_of_grandchildren_on_two_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor

    class Outer(Module):
        def __init__(self):
            super().__init__()
            self.inner = Sequential(*(Linear(2, 2) for _ in range(6)))

        def forward(self, x, wrong):
            for index, layer in enumerate(self.inner):  # grandchildren, called from Outer
                x = layer(x if index != wrong else bai.randn(1, 3))
            return x

    outer = Outer()

    def run(wrong):
        found = []
        for _ in range(200):  # each call may refill the shared cache while the other reads it
            outer.__dict__["_child_names"] = {}
            try:
                outer(bai.randn(1, 2), wrong)
            except bai.ShapeError as error:
                found.append(str(error).split("(in ")[-1].split(")")[0])
        return found

    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(run, [1, 4]))
    assert paths == [["Outer.inner.1"] * 200, ["Outer.inner.4"] * 200]


def test_deepcopy_gives_an_independent_model():
    import copy

    net = Net()
    twin = copy.deepcopy(net)
    assert twin.embed.weight is not net.embed.weight
    np.testing.assert_array_equal(twin.embed.weight.numpy(), net.embed.weight.numpy())
    assert isinstance(twin.embed.weight, Parameter) and twin.embed.weight.requires_grad


@pytest.mark.skipif(not bai.cuda_is_available(), reason="needs a CUDA GPU")
def test_module_moves_to_the_gpu_and_back():
    from buildingai.nn import init

    net = Net().to("cuda")
    assert all(t.device.type == "cuda" for t in [*net.parameters(), *net.buffers()])
    net(bai.randn(2, 3, device="cuda")).sum().backward()
    assert all(p.grad.device.type == "cuda" for p in net.parameters())
    state = {k: v.numpy() for k, v in Net().state_dict().items()}
    net.load_state_dict(state)
    np.testing.assert_array_equal(net.embed.weight.numpy(), state["embed.weight"])
    init.trunc_normal_(net.embed.weight, std=0.02)
    init.orthogonal_(net.layers[0].fc1.weight)
    init.kaiming_normal_(net.layers[0].fc2.weight)
    assert net.clone().embed.weight.device.type == "cuda"
    net.cpu()
    assert all(t.device.type == "cpu" for t in [*net.parameters(), *net.buffers()])


def test_tensor_entries_name_shared_tensors_under_each_name_and_replace_tensors_swaps_back():
    from buildingai.nn.module import replace_tensors, tensor_entries

    shared = Linear(2, 2)
    model = Sequential(shared, shared)
    entries = tensor_entries(model)
    assert list(entries) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    new_weight = bai.zeros(2, 2)
    own = replace_tensors(entries, {"1.weight": new_weight})
    assert model[1].weight is new_weight  # the entry of the shared layer, under that name
    replace_tensors(entries, own)
    assert model[1].weight is own["1.weight"] and isinstance(model[1].weight, Parameter)


def test_a_module_that_skips_super_init_copies():
    import copy

    class Forgetful(Module):
        def __init__(self):
            self.fc = Linear(2, 1)

        def forward(self, x):
            return self.fc(x)

    model = Forgetful()
    for twin in (copy.deepcopy(model), model.clone()):
        assert [name for name, _ in twin.named_parameters()] == ["fc.weight", "fc.bias"]
        np.testing.assert_array_equal(twin(bai.ones(3, 2)).numpy(), model(bai.ones(3, 2)).numpy())
