"""``masked_fill_``, ``is_floating_point``, ``nelement`` and friends, dtype comparisons and
``finfo``/``iinfo`` as PyTorch code writes them; ``fill_`` and ``masked_fill_`` in a frozen
call with a symbolic batch size."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool"]


@pytest.mark.parametrize("mask_shape", [(2, 3), (3,), (2, 1), ()], ids=str)
@pytest.mark.parametrize("value", [-1.5, 7, "tensor"])
def test_masked_fill_in_place_matches_pytorch(mask_shape, value):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(2, 3)).astype(np.float32)
    mask = rng.random(mask_shape) > 0.5
    if value == "tensor":
        ours_value, torch_value = bai.tensor(2.5), torch.tensor(2.5)
    else:
        ours_value = torch_value = value
    ours, theirs = bai.tensor(data), torch.tensor(data)
    assert ours.masked_fill_(bai.tensor(mask), ours_value) is ours
    theirs.masked_fill_(torch.tensor(mask), torch_value)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.version == 1


def test_masked_fill_in_place_refuses_a_larger_mask():
    with pytest.raises(RuntimeError):
        torch.zeros(3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 1.0)
    with pytest.raises(bai.ShapeError, match=r"\[masked_fill_\].*\(3,\).*\(2, 3\)"):
        bai.zeros(3).masked_fill_(bai.ones(2, 3, dtype="bool"), 1.0)


def test_masked_fill_in_place_gradients_match_pytorch():
    data = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    x, tx = bai.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    v, tv = (
        bai.tensor(0.5, dtype="float64", requires_grad=True),
        torch.tensor(0.5, dtype=torch.float64, requires_grad=True),
    )
    y, ty = x * 2, tx * 2
    y.masked_fill_(y < 0, v)
    ty.masked_fill_(ty < 0, tv)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_type_and_size_queries_match_pytorch(dtype):
    ours = bai.zeros((2, 3, 4), dtype=dtype)
    theirs = torch.zeros((2, 3, 4), dtype=getattr(torch, dtype))
    assert ours.is_floating_point() is theirs.is_floating_point()
    assert bai.is_floating_point(ours) is torch.is_floating_point(theirs)
    assert ours.is_complex() is theirs.is_complex() is False
    assert ours.nelement() == theirs.nelement() == 24
    assert ours.element_size() == theirs.element_size()
    assert ours.ndimension() == theirs.ndimension() == 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_comparisons_as_pytorch_code_writes_them(dtype):
    for torch in (bai, pytest.importorskip("torch")):  # the same lines under both libraries
        x = torch.zeros(3, dtype=getattr(torch, dtype))
        results = (
            x.dtype == torch.float32,
            x.dtype in (torch.float16, torch.bfloat16),
            x.dtype != torch.long,
            x.is_floating_point(),
        )
        if torch is bai:
            ours = results
        else:
            assert ours == results


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_pytorch(dtype):
    for torch in (bai, pytest.importorskip("torch")):
        x = torch.zeros(3, dtype=getattr(torch, dtype))
        eps = torch.finfo(x.dtype).eps
        info = torch.finfo(x.dtype)
        numbers = (eps, info.max, info.min, info.tiny, info.smallest_normal, info.resolution,
                   info.bits)  # fmt: skip
        if torch is bai:
            ours = numbers
            assert all(isinstance(n, float) for n in numbers[:-1])
            assert info.dtype == dtype
        else:
            assert ours == numbers
    assert bai.finfo().eps == torch.finfo().eps  # the default float dtype
    assert bai.ones(2).clamp(min=bai.finfo(bai.float32).eps).dtype == bai.float32


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_iinfo_matches_pytorch(dtype):
    ours, theirs = bai.iinfo(getattr(bai, dtype)), torch.iinfo(getattr(torch, dtype))
    assert (ours.min, ours.max, ours.bits) == (theirs.min, theirs.max, theirs.bits)


def test_finfo_and_iinfo_name_the_wrong_kind():
    with pytest.raises(bai.DTypeError, match=r"\[finfo\] int64 is not a floating dtype"):
        bai.finfo(bai.int64)
    with pytest.raises(bai.DTypeError, match=r"\[iinfo\] float32 is not an integer dtype"):
        bai.iinfo(bai.float32)


def test_dtype_prints_as_numpy_names():
    assert str(bai.zeros(1).dtype) == "float32"  # PyTorch prints torch.float32
    assert str(torch.zeros(1).dtype).replace("torch.", "") == str(bai.zeros(1).dtype)


@pytest.mark.parametrize(
    ("name", "fill"),
    [
        ("fill_", lambda y: y.fill_(1.0)),
        ("masked_fill_", lambda y: y.masked_fill_(y > 0.5, -1.0)),
        ("out of place masked_fill", lambda y: y.masked_fill(y > 0.5, -1.0)),
        ("uniform_", lambda y: y.uniform_()),
    ],
)
def test_in_place_fills_freeze_with_a_symbolic_batch(name, fill):
    def step(x):
        return fill(x.clone()) + x

    frozen = bai.freeze(step, input_signature=[bai.TensorSpec((None, 4), "float32")])
    for batch in (2, 5):
        x = bai.rand(batch, 4)
        assert frozen(x).shape == (batch, 4)
    x = bai.rand(3, 4)
    if name != "uniform_":
        np.testing.assert_array_equal(frozen(x).numpy(), step(x).numpy())
