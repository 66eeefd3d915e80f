"""sort, argsort, topk, kthvalue against PyTorch (values, indices, gradients, second
derivatives, finite differences), their ties, NaN, 0-d inputs and errors: the public face of the
records sort_indices (positions) and gather_elements (values)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

from ..helpers import check_op, constant, torch

# ----- parity -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch(dim, descending):
    check_op(
        lambda x: bai.sort(x, dim=dim, descending=descending),
        (3, 4, 5),
        torch_fn=lambda x: torch.sort(x, dim=dim, descending=descending),
        gradgrad=True,
    )


@pytest.mark.parametrize("dim", [0, -1])
def test_argsort_matches_torch(dim):
    check_op(
        lambda x: x.argsort(dim=dim, descending=True),
        (4, 6),
        torch_fn=lambda x: x.argsort(dim=dim, descending=True),
    )


@pytest.mark.parametrize("k", [0, 1, 3, 6])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(k, largest):
    check_op(
        lambda x: bai.topk(x, k, dim=1, largest=largest),
        (4, 6),
        torch_fn=lambda x: torch.topk(x, k, dim=1, largest=largest),
        gradgrad=True,
    )


def test_topk_method_along_the_first_axis_and_its_fields():
    check_op(lambda x: x.topk(2, 0).values, (5, 3), torch_fn=lambda x: x.topk(2, 0).values)
    check_op(lambda x: x.topk(2, 0).indices, (5, 3), torch_fn=lambda x: x.topk(2, 0).indices)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_kthvalue_matches_torch(k, keepdim):
    check_op(
        lambda x: bai.kthvalue(x, k, 1, keepdim),
        (3, 5, 2),
        torch_fn=lambda x: torch.kthvalue(x, k, 1, keepdim),
        gradgrad=True,
    )


def test_integer_and_bool_inputs_sort_like_torch():
    check_op(
        lambda x: bai.sort(x, descending=True),
        constant([[3, 1, 2], [0, 5, -4]]),
        torch_fn=lambda x: torch.sort(x, descending=True),
    )
    check_op(
        lambda x: bai.topk(x, 2),
        constant([[3, 1, 2], [0, 5, -4]]),
        torch_fn=lambda x: torch.topk(x, 2),
    )
    check_op(
        lambda x: bai.sort(x.astype("int16") > 0, stable=True),
        constant([[3, -1, 2, 0]]),
        torch_fn=lambda x: torch.sort(x.short() > 0, stable=True),
    )


# ----- ties, NaN, 0-d ------------------------------------------------------------------------------


def test_ties_keep_their_input_order_both_ways():
    values = np.array([2.0, 1.0, 2.0, 1.0, 2.0])
    ours = bai.sort(bai.tensor(values), descending=True, stable=True)
    theirs = torch.sort(torch.tensor(values), descending=True, stable=True)
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ours = bai.argsort(bai.tensor(values), stable=True)
    np.testing.assert_array_equal(ours.numpy(), torch.argsort(torch.tensor(values), stable=True))


@pytest.mark.parametrize("descending", [False, True])
def test_nan_sorts_as_the_largest_value(descending):
    values = np.array([1.0, np.nan, -3.0, np.inf, 0.5])
    ours = bai.sort(bai.tensor(values), descending=descending)
    theirs = torch.sort(torch.tensor(values), descending=descending)
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    top = bai.topk(bai.tensor(values), 2)
    np.testing.assert_array_equal(top.indices.numpy(), torch.topk(torch.tensor(values), 2).indices)


def test_zero_d_inputs_sort_as_themselves():
    for function in (
        lambda x, lib: lib.sort(x, dim=-1),
        lambda x, lib: lib.topk(x, 1),
        lambda x, lib: lib.kthvalue(x, 1),
    ):
        check_op(lambda x, f=function: f(x, bai), (), torch_fn=lambda x, f=function: f(x, torch))
    check_op(lambda x: bai.argsort(x), (), torch_fn=torch.argsort)


# ----- errors -------------------------------------------------------------------------------------


def test_k_out_of_range_names_the_op_and_the_sizes():
    x = bai.zeros(2, 3)
    with pytest.raises(
        bai.ShapeError, match=r"\[topk\] k=4 is out of range for dimension 1 of size 3"
    ):
        bai.topk(x, 4)
    with pytest.raises(bai.ShapeError, match=r"\[kthvalue\] k=0"):
        bai.kthvalue(x, 0)
    with pytest.raises(bai.ShapeError, match=r"\[sort\] axis 2 is out of range"):
        bai.sort(x, dim=2)
    with pytest.raises(bai.ShapeError, match=r"\[argsort\] works along one dimension"):
        bai.argsort(x, dim=(0, 1))


def test_topk_among_ties_and_nan_follows_the_stable_sort():
    # a few of many go through a partition; ties at the k-th value must not change the result
    rng = np.random.default_rng(0)
    values = rng.integers(0, 4, size=(6, 40)).astype(np.float64)
    values[rng.random(values.shape) < 0.1] = np.nan
    for largest in (True, False):
        for k in (1, 3, 7):
            ours = bai.topk(bai.tensor(values), k, largest=largest).indices.numpy()
            theirs = torch.sort(torch.tensor(values), descending=largest, stable=True).indices
            np.testing.assert_array_equal(ours, theirs[:, :k].numpy())
