"""PyTorch's arguments on existing functions: ``alpha`` of add/sub, ``rounding_mode`` of div,
``dtype`` of sum/mean/prod/cumsum/cumprod, ``output_size`` of repeat_interleave,
``memory_format`` of clone/contiguous, and PyTorch's dtype names."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

from ..helpers import check_op, constant, integers, positive, torch

# ----- alpha --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize("alpha", [2.5, -1, 0])
def test_alpha_matches_torch(name, alpha):
    check_op(
        lambda a, b: getattr(bai, name)(a, b, alpha=alpha),
        (3, 4),
        (4,),
        torch_fn=lambda a, b: getattr(torch, name)(a, b, alpha=alpha),
        gradgrad=True,
    )
    check_op(lambda a, b: getattr(a, name)(b, alpha=alpha), (2, 3), (2, 3))


def test_alpha_with_integers_and_scalars():
    check_op(
        lambda a: bai.add(a, 3, alpha=2),
        constant([1, -2, 5]),
        torch_fn=lambda a: torch.add(a, 3, alpha=2),
    )


# ----- rounding_mode ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounding_modes_on_integers_match_torch(mode):
    check_op(
        lambda a, b: bai.div(a, b, rounding_mode=mode),
        integers(4, 5, low=-9, high=10),
        constant([3, -2, 4, -5, 7]),
        torch_fn=lambda a, b: torch.div(a, b, rounding_mode=mode),
    )
    check_op(
        lambda a: a.div(-4, rounding_mode=mode),
        integers(7, low=-9, high=10),
        torch_fn=lambda a: a.div(-4, rounding_mode=mode),
    )


def test_trunc_on_floats_matches_torch_with_its_zero_gradient():
    check_op(
        lambda a, b: bai.div(a, b, rounding_mode="trunc"),
        (3, 4),
        positive(4, low=0.3),
        torch_fn=lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        gradgrad=True,
    )


def test_floor_on_floats_matches_torch_where_floor_of_the_quotient_would_not():
    # 1 / 0.1 rounds to 10.0, while the floor quotient is 9 (Python's 1 // 0.1)
    check_op(
        lambda a, b: bai.div(a, b, rounding_mode="floor"),
        constant([1.0, -1.0, 7.5, -7.5]),
        constant([0.1, 0.1, 2.0, 2.0]),
        torch_fn=lambda a, b: torch.div(a, b, rounding_mode="floor"),
    )


def test_an_unknown_rounding_mode_names_the_choices():
    with pytest.raises(ValueError, match=r"\[div\] rounding_mode must be None, 'floor' or 'trunc'"):
        bai.div(bai.ones(2), 2, rounding_mode="round")


# ----- dtype of reductions and scans --------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "cumprod"])
def test_dtype_converts_first_as_torch(name):
    check_op(
        lambda x: getattr(x, name)(dim=1, dtype=bai.float64),
        integers(3, 4, low=-3, high=4),
        torch_fn=lambda x: getattr(x, name)(dim=1, dtype=torch.float64),
    )
    check_op(
        lambda x: getattr(bai, name)(x, dim=0, dtype=bai.float32),
        (3, 4),
        torch_fn=lambda x: getattr(torch, name)(x, dim=0, dtype=torch.float32),
        atol=1e-6,
        rtol=1e-5,
        gradcheck=False,  # finite differences in float32 are too coarse
    )


def test_sum_to_int64_of_bools():
    check_op(
        lambda x: x.sum(dtype=bai.long),
        constant([[True, False], [True, True]]),
        torch_fn=lambda x: x.sum(dtype=torch.long),
    )


# ----- output_size --------------------------------------------------------------------------------


def test_repeat_interleave_output_size_is_checked():
    check_op(
        lambda x: x.repeat_interleave(bai.tensor([1, 0, 2]), dim=0, output_size=3),
        (3, 2),
        torch_fn=lambda x: x.repeat_interleave(torch.tensor([1, 0, 2]), dim=0, output_size=3),
    )
    check_op(
        lambda x: bai.repeat_interleave(x, 2, output_size=12),
        (3, 2),
        torch_fn=lambda x: torch.repeat_interleave(x, 2, output_size=12),
    )
    with pytest.raises(bai.ShapeError, match=r"output_size=4, but the repeats give 3"):
        bai.zeros(3, 2).repeat_interleave(bai.tensor([1, 0, 2]), dim=0, output_size=4)


# ----- memory_format ------------------------------------------------------------------------------


def test_memory_formats_are_accepted_and_keep_values():
    x = bai.tensor(np.arange(24.0).reshape(1, 2, 3, 4), requires_grad=True)
    for memory_format in (bai.preserve_format, bai.contiguous_format, bai.channels_last):
        copy = x.clone(memory_format=memory_format)
        np.testing.assert_array_equal(copy.numpy(), x.numpy())
        assert copy.array.flags.c_contiguous and not np.shares_memory(copy.array, x.array)
    assert x.contiguous(memory_format=bai.channels_last) is x
    strided = x.transpose(1, 3)
    assert strided.contiguous(bai.contiguous_format).array.flags.c_contiguous
    check_op(
        lambda t: t.clone(memory_format=bai.channels_last_3d),
        (1, 2, 2, 2, 3),
        torch_fn=lambda t: t.clone(memory_format=torch.channels_last_3d),
    )


def test_memory_format_errors_say_what_it_means_here():
    with pytest.raises(bai.ShapeError, match=r"channels_last applies to 4-D tensors, got a 2-D"):
        bai.zeros(2, 3).clone(memory_format=bai.channels_last)
    with pytest.raises(bai.ShapeError, match=r"\[contiguous\] preserve_format"):
        bai.zeros(2, 3).contiguous(memory_format=bai.preserve_format)
    with pytest.raises(TypeError, match=r"memory_format must be one of"):
        bai.zeros(2).clone(memory_format="channels_last")


# ----- dtype names --------------------------------------------------------------------------------

TORCH_NAMES = ["long", "int", "short", "half", "float", "double", "uint8", "int8", "int16",
               "int32", "int64", "float16", "float32", "float64", "bool", "bfloat16"]  # fmt: skip


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_pytorch_dtype_names_mean_what_they_mean_in_torch(name):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    expected = str(theirs).replace("torch.", "")
    assert ours.name == expected
    for made in (
        bai.zeros(2, dtype=ours),
        bai.tensor([1, 0], dtype=ours),
        bai.arange(2, dtype=ours),
        bai.ones(2).to(ours),
        bai.ones(2).astype(ours),
        bai.full((2,), 1, dtype=ours),
    ):
        assert made.dtype == ours, made


def test_python_types_as_dtypes_follow_torch():
    assert bai.zeros(2, dtype=int).dtype == bai.int64  # torch: int -> int64
    assert bai.zeros(2, dtype=float).dtype == bai.float64  # torch: float -> float64
    assert bai.zeros(2, dtype=bool).dtype == bai.bool


def test_functional_forms_take_input_by_keyword_as_pytorchs():
    """PyTorch names the first argument ``input``; code that passes it by keyword runs."""
    torch = pytest.importorskip("torch")
    values = np.linspace(-2.0, 2.0, 8).reshape(2, 4)
    for name in ("sigmoid", "tanh", "softsign", "tanhshrink", "glu"):
        ours = getattr(bai.nn.functional, name)(input=bai.tensor(values))
        theirs = getattr(torch.nn.functional, name)(input=torch.tensor(values))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        x = bai.tensor(values.reshape(1, 2, 1, 1, 4))
        assert getattr(bai.nn.functional, name)(input=x, p=0.5, training=False) is x, name
