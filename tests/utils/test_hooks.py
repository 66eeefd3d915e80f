"""One handle class for every hook: tensor gradient hooks, module hooks and step hooks."""

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.autograd.tensor import hooked_leaves
from buildingai.utils.hooks import RemovableHandle


def test_tensor_and_module_hooks_return_the_same_handle_class():
    x = bai.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    layer = nn.Linear(3, 2)
    handles = [
        x.register_hook(lambda grad: None),
        x.register_post_accumulate_grad_hook(lambda tensor: None),
        layer.register_forward_hook(lambda module, args, output: None),
        layer.register_forward_pre_hook(lambda module, args: None),
    ]
    assert all(type(handle) is RemovableHandle for handle in handles)
    assert len({handle.id for handle in handles}) == len(handles)
    for handle in handles:
        handle.remove()


def test_a_dict_handle_removes_its_entry_once():
    hooks: dict = {}
    handle = RemovableHandle(hooks)
    hooks[handle.id] = print
    with handle:
        assert handle.id in hooks
    assert hooks == {}
    handle.remove()  # a second remove does nothing


def test_a_list_handle_removes_its_own_hook_and_calls_on_remove_once():
    removed = []
    first, second = (lambda: 1), (lambda: 2)
    hooks = [first, second]
    handle = RemovableHandle(hooks, second, on_remove=lambda: removed.append(True))
    handle.remove()
    handle.remove()
    assert hooks == [first]
    assert removed == [True]


def test_removing_a_post_accumulate_hook_forgets_the_hooked_leaf():
    before = hooked_leaves()
    x = bai.tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    with x.register_post_accumulate_grad_hook(lambda tensor: None):
        assert hooked_leaves() == before + 1
    assert hooked_leaves() == before


def test_a_removed_gradient_hook_no_longer_runs():
    seen = []
    x = bai.tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    handle = x.register_hook(lambda grad: seen.append(grad))
    handle.remove()
    (x * 2).sum().backward()
    assert seen == []
