"""Shape ops against PyTorch: values, gradients, second derivatives, errors and round trips."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import buildingai as bai
from buildingai.ops import all_ops
from buildingai.ops import shape as shape_ops
from tests.helpers import check_op, constant

torch = pytest.importorskip("torch")
F = torch.nn.functional


# ----- reshape, expand, permute and their spellings -------------------------------------------


@pytest.mark.parametrize(
    ("shape", "new"),
    [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)), ((), (1, 1)),
     ((1,), ()), ((0, 3), (3, 0)), ((0, 3), (-1, 3))],
    ids=str,
)  # fmt: skip
def test_reshape(shape, new):
    check_op(lambda x: x.reshape(new), shape, gradgrad=True)
    check_op(lambda x: x.view(new), shape)


@pytest.mark.parametrize(
    ("shape", "new"),
    [((3, 1), (3, 4)), ((1, 4), (2, 3, 4)), ((), (2, 2)), ((2, 1, 3), (2, 5, 3)),
     ((1,), (0,)), ((3, 1), (-1, 2))],
    ids=str,
)  # fmt: skip
def test_expand(shape, new):
    check_op(lambda x: x.expand(*new), shape, gradgrad=True)


def test_broadcast_to_matches_numpy_spelling():
    check_op(lambda x: bai.broadcast_to(x, (2, 3)), (3,), torch_fn=lambda x: x.expand(2, 3))


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, -3, -2)), ((2, 0, 3), (1, 2, 0)), ((5,), (0,))],
    ids=str,
)
def test_permute(shape, axes):
    check_op(lambda x: x.permute(*axes), shape, gradgrad=True)


def test_transpose_spellings():
    check_op(lambda x: x.transpose(0, -1), (2, 3, 4), gradgrad=True)
    check_op(lambda x: x.swapaxes(1, 2), (2, 3, 4))
    check_op(lambda x: x.swapdims(-1, 0), (2, 3, 4))
    check_op(lambda x: x.T, (3, 4))
    check_op(lambda x: x.mT, (2, 3, 4))
    check_op(lambda x: x.transpose(), (2, 3, 4), torch_fn=lambda x: x.permute(2, 1, 0))


@pytest.mark.parametrize(
    ("shape", "source", "destination"),
    [((2, 3, 4), 0, -1), ((2, 3, 4, 5), (0, 1), (3, 0)), ((2, 3, 4), -1, 0), ((2, 3), 0, 0)],
    ids=str,
)
def test_movedim(shape, source, destination):
    check_op(lambda x: x.movedim(source, destination), shape, gradgrad=True)
    check_op(
        lambda x: bai.moveaxis(x, source, destination),
        shape,
        torch_fn=lambda x: torch.moveaxis(x, source, destination),
    )


# ----- squeeze, unsqueeze, flatten, unflatten --------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1), ((1, 3, 1), (0, 2)), ((1,), None),
     ((), None), ((2, 3), None), ((0, 1), 1),
     # an axis whose size is not 1 is kept, as in PyTorch
     ((2, 3), 0), ((2, 3), -1), ((2, 1, 3), (0, 1)), ((1, 3, 1), (0, 1, 2)), ((0, 1), 0)],
    ids=str,
)  # fmt: skip
def test_squeeze(shape, axis):
    torch_fn = (lambda x: x.squeeze()) if axis is None else (lambda x: x.squeeze(axis))
    check_op(lambda x: x.squeeze(axis), shape, torch_fn=torch_fn, gradgrad=True)
    check_op(lambda x: bai.squeeze(x, dim=axis), shape, torch_fn=torch_fn)


def test_squeeze_of_a_non_unit_axis_is_a_no_op_as_in_pytorch():
    x, t = bai.zeros(2, 3, 1), torch.zeros(2, 3, 1)
    for ours, theirs in [
        (x.squeeze(0), t.squeeze(0)),
        (x.squeeze(dim=1), t.squeeze(dim=1)),
        (bai.squeeze(x, 0), torch.squeeze(t, 0)),
        (bai.squeeze(x, dim=(0, 2)), torch.squeeze(t, dim=(0, 2))),
        (x.squeeze((1, 2)), t.squeeze((1, 2))),
    ]:
        assert ours.shape == tuple(theirs.shape)
    assert x.squeeze(0) is x  # nothing to drop: the tensor itself, as no axis is squeezed


def test_squeeze_errors():
    with pytest.raises(bai.ShapeError, match=r"\[squeeze\] axis 2 is out of range"):
        bai.zeros(1, 3).squeeze(2)
    with pytest.raises(  # the op record itself takes only axes of size 1
        bai.ShapeError,
        match=r"\[squeeze\] cannot squeeze axis 1 of a tensor shaped \(1, 3\): its size is 3",
    ):
        bai.apply(shape_ops.SQUEEZE, bai.zeros(1, 3), axes=(1,))


@pytest.mark.parametrize(("shape", "axis"), [((3, 4), 0), ((3, 4), -1), ((3, 4), 1), ((), 0),
                                             ((0, 2), 2)], ids=str)  # fmt: skip
def test_unsqueeze(shape, axis):
    check_op(lambda x: x.unsqueeze(axis), shape, gradgrad=True)
    check_op(lambda x: bai.expand_dims(x, axis), shape, torch_fn=lambda x: torch.unsqueeze(x, axis))


@pytest.mark.parametrize("shape", [(), (3,), (3, 4), (2, 3, 4), (1, 2, 3, 4, 5, 6, 7, 2)], ids=str)
def test_t_reverses_every_axis_like_numpy(shape):
    """``.T`` of any rank (the axis tuples of up to 7 dimensions are made once, the eighth
    builds its own): NumPy's order, a view, and the gradient flows back."""
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = bai.tensor(values, requires_grad=True)
    transposed = x.T
    np.testing.assert_array_equal(transposed.array, values.T)
    if len(shape) < 2:
        assert transposed is x
    else:
        assert np.shares_memory(transposed.array, x.array)
    (
        transposed * bai.tensor(np.arange(values.size, dtype=np.float64).reshape(values.T.shape))
    ).sum().backward()
    np.testing.assert_array_equal(
        x.grad.array, np.arange(values.size, dtype=np.float64).reshape(values.T.shape).T
    )


def test_unsqueeze_of_a_strided_tensor_is_a_view():
    """One new axis is an index with None in the record: a view of a permuted (not contiguous)
    tensor as well, sharing its memory and version counter, with NumPy's values."""
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = bai.tensor(values).permute(2, 0, 1)
    for axis in (0, 1, 3, -1):
        y = x.unsqueeze(axis)
        np.testing.assert_array_equal(y.array, np.expand_dims(values.transpose(2, 0, 1), axis))
        assert np.shares_memory(y.array, x.array)
        assert y._version is x._version


def test_unsqueeze_several_axes_like_numpy():
    check_op(
        lambda x: x.unsqueeze((0, -1)),
        (3, 4),
        torch_fn=lambda x: x.reshape(1, 3, 4, 1),
        gradgrad=True,
    )
    assert (
        bai.expand_dims(bai.zeros(3, 4), (1, 3)).shape
        == np.expand_dims(np.zeros((3, 4)), (1, 3)).shape
    )


def test_unsqueeze_errors():
    with pytest.raises(bai.ShapeError, match=r"\[unsqueeze\] axis 3 is out of range"):
        bai.zeros(3, 4).unsqueeze(3)
    with pytest.raises(TypeError, match="unsqueeze\\(\\) needs the position"):
        bai.zeros(3).unsqueeze()


@pytest.mark.parametrize(
    ("shape", "start", "end"),
    [((2, 3, 4, 5), 0, -1), ((2, 3, 4, 5), 1, -1), ((2, 3, 4, 5), 1, 2), ((2, 3, 4), -2, -1),
     ((2, 3), 1, 1), ((), 0, -1), ((2, 0, 3), 1, 2)],
    ids=str,
)  # fmt: skip
def test_flatten(shape, start, end):
    check_op(lambda x: x.flatten(start, end), shape, gradgrad=True)


@pytest.mark.parametrize(
    ("shape", "dim", "sizes"),
    [((2, 12), 1, (3, 4)), ((2, 12), -1, (3, -1)), ((6,), 0, (1, 6, 1)), ((2, 0), 1, (0, 5)),
     ((4, 3), 0, (4,))],
    ids=str,
)  # fmt: skip
def test_unflatten(shape, dim, sizes):
    check_op(lambda x: x.unflatten(dim, sizes), shape, gradgrad=True)


def test_flatten_and_unflatten_errors():
    with pytest.raises(bai.ShapeError, match=r"\[flatten\] start_dim 2 comes after end_dim 1"):
        bai.zeros(2, 3, 4).flatten(2, 1)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[unflatten\] sizes \(4, 4\) do not multiply to 12, the size of dimension 1 of "
        r"a tensor shaped \(2, 12\)",
    ):
        bai.zeros(2, 12).unflatten(1, (4, 4))
    with pytest.raises(bai.ShapeError, match=r"\[unflatten\] sizes \(5, -1\)"):
        bai.zeros(2, 12).unflatten(1, (5, -1))
    with pytest.raises(bai.ShapeError, match=r"\[unflatten\] sizes \(-1, -1\)"):
        bai.zeros(2, 12).unflatten(1, (-1, -1))


# ----- concatenate and stack --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3, 4), (2, 3, 4)], -1),
     ([(0, 3), (2, 3)], 0), ([(3,)], 0), ([(2, 0), (2, 3)], 1)],
    ids=str,
)  # fmt: skip
def test_concatenate(shapes, axis):
    check_op(lambda *xs: bai.concatenate(list(xs), axis), *shapes,
             torch_fn=lambda *xs: torch.cat(xs, axis), gradgrad=True)  # fmt: skip
    check_op(lambda *xs: bai.cat(xs, dim=axis), *shapes, torch_fn=lambda *xs: torch.cat(xs, axis))


def test_concatenate_with_inputs_that_need_no_gradient_and_promotes_dtypes():
    check_op(
        lambda x, c: bai.cat([c, x, c], 1), (2, 3), constant(np.ones((2, 1))),
        torch_fn=lambda x, c: torch.cat([c, x, c], 1), gradgrad=True,
    )  # fmt: skip
    mixed = bai.cat([bai.zeros(2, dtype="float32"), bai.ones(1, dtype="float64")])
    assert mixed.dtype == np.float64
    ints = bai.cat([bai.tensor([1, 2]), bai.tensor([3])])
    assert ints.dtype == np.int64 and ints.numpy().tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(0,), (2, 3)], 0), ([(2, 3), (0,), (2, 3)], 1), ([(2, 3), (0,)], -1),
     ([(0,), (2, 3, 4), (0,), (2, 3, 4)], 2), ([(0,), (0,)], 0), ([(0,), (3,)], -1)],
    ids=str,
)  # fmt: skip
def test_concatenate_skips_empty_1d_tensors_beside_others_like_torch(shapes, axis):
    check_op(lambda *xs: bai.cat(list(xs), axis), *shapes,
             torch_fn=lambda *xs: torch.cat(xs, axis), gradgrad=True)  # fmt: skip


def test_an_empty_1d_tensor_still_takes_part_in_dtype_promotion():
    for empty, expected in ((bai.zeros(0, dtype="float64"), np.float64), (bai.tensor([]), None)):
        out = bai.cat([empty, bai.ones(2, 3, dtype="float32")])
        theirs = torch.cat([torch.tensor(empty.numpy()), torch.ones(2, 3)])
        assert out.shape == (2, 3) and out.dtype.name == str(theirs.dtype).replace("torch.", "")
        assert expected is None or out.dtype == expected
    with pytest.raises(bai.ShapeError, match=r"\[concatenate\] axis 2 is out of range"):
        bai.cat([bai.zeros(0), bai.zeros(2, 3)], 2)  # the axis counts the others' dimensions


def test_concatenate_and_stack_of_one_tensor_copy_it():
    x = bai.zeros(2, 3)
    assert not np.shares_memory(bai.cat([x]).array, x.array)
    assert not np.shares_memory(bai.stack([x]).array, x.array)
    check_op(lambda x: bai.cat([x], 1), (2, 3), torch_fn=lambda x: torch.cat([x], 1))


def test_concatenate_of_strided_tensors_is_row_major_like_torch():
    heads = bai.tensor(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5))
    pieces = [heads.transpose(1, 2)] * 2  # (2, 4, 3, 5) views
    joined = bai.cat(pieces, dim=2)
    assert joined.array.flags.c_contiguous
    expected = torch.cat([torch.tensor(heads.numpy()).transpose(1, 2)] * 2, dim=2)
    np.testing.assert_array_equal(joined.numpy(), expected.numpy())


def test_concatenate_errors():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[concatenate\] cannot concatenate shapes \(2, 3\), \(2, 4\) along axis 0: "
        r"input 1 has size 4 in dimension 1 where input 0 has 3",
    ):
        bai.cat([bai.zeros(2, 3), bai.zeros(2, 4)])
    with pytest.raises(
        bai.ShapeError, match=r"input 2 has 1 dimension but input 0 has 2 dimensions\n  help: every"
    ):
        bai.cat([bai.zeros(2, 3), bai.zeros(2, 3), bai.zeros(3)], dim=1)
    with pytest.raises(bai.ShapeError, match=r"\[concatenate\] cannot concatenate 0-d tensors"):
        bai.cat([bai.tensor(1.0), bai.tensor(2.0)])
    with pytest.raises(bai.ShapeError, match=r"\[concatenate\] needs at least one tensor"):
        bai.cat([])
    with pytest.raises(TypeError, match=r"\[concatenate\] expects a list or tuple of tensors"):
        bai.cat(bai.zeros(2, 3))
    with pytest.raises(bai.ShapeError, match=r"\[concatenate\] axis 2 is out of range"):
        bai.cat([bai.zeros(2, 3)], axis=2)


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(2, 3), (2, 3)], 0), ([(2, 3), (2, 3), (2, 3)], -1), ([(2, 3)] * 2, 1), ([(), ()], 0),
     ([(0, 2), (0, 2)], 1), ([(4,)], 0)],
    ids=str,
)  # fmt: skip
def test_stack(shapes, axis):
    check_op(lambda *xs: bai.stack(xs, axis), *shapes,
             torch_fn=lambda *xs: torch.stack(xs, axis), gradgrad=True)  # fmt: skip
    check_op(lambda *xs: bai.stack(list(xs), dim=axis), *shapes,
             torch_fn=lambda *xs: torch.stack(xs, axis))  # fmt: skip


def test_stack_errors():
    with pytest.raises(
        bai.ShapeError, match=r"\[stack\] expects tensors of equal shape, got \(2, 3\), \(3, 2\)"
    ):
        bai.stack([bai.zeros(2, 3), bai.zeros(3, 2)])
    with pytest.raises(bai.ShapeError, match=r"\[stack\] axis 3 is out of range"):
        bai.stack([bai.zeros(2, 3)], axis=3)


# ----- split, chunk, narrow ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "sections", "dim"),
    [((5, 3), 2, 0), ((6, 3), 3, 0), ((2, 7), [2, 0, 5], 1), ((2, 7), [7], -1), ((0, 3), 2, 0),
     ((4, 3), 10, 0)],
    ids=str,
)  # fmt: skip
def test_split(shape, sections, dim):
    check_op(lambda x: x.split(sections, dim), shape, gradgrad=True)
    check_op(lambda x: bai.split(x, sections, axis=dim), shape,
             torch_fn=lambda x: torch.split(x, sections, dim))  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "chunks", "dim"),
    [((5, 3), 2, 0), ((6, 3), 4, 0), ((2, 7), 7, 1), ((2, 3), 5, -1), ((0, 3), 3, 0)],
    ids=str,
)
def test_chunk(shape, chunks, dim):
    check_op(lambda x: x.chunk(chunks, dim), shape, gradgrad=True)


@pytest.mark.parametrize(
    ("shape", "dim", "start", "length"),
    [((4, 6), 1, 2, 3), ((4, 6), 0, 0, 4), ((4, 6), -1, -2, 2), ((4, 6), 0, 4, 0)],
    ids=str,
)
def test_narrow(shape, dim, start, length):
    check_op(lambda x: x.narrow(dim, start, length), shape, gradgrad=True)


def test_split_chunk_narrow_errors():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[split\] section sizes \(2, 2\) \(sum 4\) do not add up to 5, the size of "
        r"dimension 0 of a tensor shaped \(5, 3\)",
    ):
        bai.zeros(5, 3).split([2, 2])
    with pytest.raises(bai.ShapeError, match=r"\[split\] split size must be positive, got 0"):
        bai.zeros(5, 3).split(0)
    with pytest.raises(bai.ShapeError, match=r"\[split\] axis 2 is out of range"):
        bai.zeros(5, 3).split(1, 2)
    with pytest.raises(bai.ShapeError, match=r"\[chunk\] the number of chunks must be positive"):
        bai.zeros(5, 3).chunk(0)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[narrow\] start 4 and length 3 do not fit in dimension 1 of size 6 of a tensor "
        r"shaped \(4, 6\)",
    ):
        bai.zeros(4, 6).narrow(1, 4, 3)


# ----- flip -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((3, 4), (0,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1,)), ((5,), (0,)), ((0, 3), (0, 1))],
    ids=str,
)
def test_flip(shape, axes):
    check_op(lambda x: x.flip(axes), shape, torch_fn=lambda x: torch.flip(x, axes), gradgrad=True)
    check_op(lambda x: x.flip(*axes), shape, torch_fn=lambda x: x.flip(*axes))


def test_flip_every_axis_like_numpy():
    check_op(lambda x: bai.flip(x), (2, 3, 4), torch_fn=lambda x: torch.flip(x, (0, 1, 2)))
    check_op(lambda x: bai.flip(x, dims=[1]), (2, 3), torch_fn=lambda x: torch.flip(x, [1]))
    with pytest.raises(bai.ShapeError, match=r"\[flip\] repeated axis in \(0, -2\)"):
        bai.zeros(2, 3).flip((0, -2))


# ----- pad --------------------------------------------------------------------------------------

MODES = ["constant", "reflect", "replicate", "circular"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("shape", "widths"),
    [((2, 3, 5), (2, 1)), ((2, 3, 5), (0, 3)), ((1, 2, 4, 5), (1, 2, 3, 0)),
     ((1, 2, 3, 4, 3), (1, 1, 2, 0, 0, 2)), ((2, 1, 4), (3, 3))],
    ids=str,
)  # fmt: skip
def test_pad_against_torch(shape, widths, mode):
    if mode == "reflect" and max(widths) >= min(shape[-len(widths) // 2 :]):
        widths = tuple(min(w, 1) for w in widths)
    if mode == "circular" and shape[-1] < 3:
        pytest.skip("circular padding needs pads no larger than the dimension")
    check_op(lambda x: x.pad(widths, mode=mode), shape,
             torch_fn=lambda x: F.pad(x, widths, mode=mode), gradgrad=True)  # fmt: skip


def test_pad_constant_value_and_negative_widths_crop():
    check_op(lambda x: bai.pad(x, (1, 2, 0, 1), value=-3.5), (2, 3),
             torch_fn=lambda x: F.pad(x, (1, 2, 0, 1), value=-3.5), gradgrad=True)  # fmt: skip
    check_op(lambda x: bai.pad(x, (-1, 2, 1, -2)), (4, 5),
             torch_fn=lambda x: F.pad(x, (-1, 2, 1, -2)), gradgrad=True)  # fmt: skip
    check_op(lambda x: bai.pad(x, (1, 1)), (0, 3), torch_fn=lambda x: F.pad(x, (1, 1)))


@pytest.mark.parametrize(
    ("mode", "numpy_mode"),
    [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
     ("circular", "wrap"), ("edge", "edge"), ("wrap", "wrap")],
)  # fmt: skip
def test_pad_numpy_form_on_any_axis(mode, numpy_mode):
    widths = ((2, 0), (0, 0), (1, 3))
    array = np.random.default_rng(0).standard_normal((3, 2, 4))
    x = bai.Tensor(array, requires_grad=True)
    expected = np.pad(array, widths, mode=numpy_mode)
    np.testing.assert_array_equal(bai.pad(x, widths, mode=mode).numpy(), expected)
    bai.debug.gradcheck(lambda x: bai.pad(x, widths, mode=mode), [x])
    bai.debug.gradgradcheck(lambda x: bai.pad(x, widths, mode=mode), [x])
    # one pair and a bare int apply to every axis, as in NumPy
    np.testing.assert_array_equal(
        bai.pad(x, ((1, 1),), mode=mode).numpy(), np.pad(array, ((1, 1),), mode=numpy_mode)
    )
    np.testing.assert_array_equal(bai.pad(x, 1, mode=mode).numpy(), np.pad(array, 1, numpy_mode))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    ("shape", "widths"),
    [((3, 4), ((2, 0), (3, 3))), ((5, 2, 3), ((4, 4), (0, 0), (1, 2))), ((1, 6), ((0, 0), (5, 1)))],
    ids=str,
)
def test_pad_adjoint_is_the_adjoint_of_pad(shape, widths, mode):
    if mode == "reflect":
        widths = tuple((min(b, n - 1), min(a, n - 1)) for (b, a), n in zip(widths, shape))
    if mode == "circular":
        widths = tuple((min(b, n), min(a, n)) for (b, a), n in zip(widths, shape))
    rng = np.random.default_rng(0)
    x = bai.Tensor(rng.standard_normal(shape))
    padded_shape = tuple(n + b + a for n, (b, a) in zip(shape, widths))
    g = bai.Tensor(rng.standard_normal(padded_shape), requires_grad=True)
    # <pad(x), g> == <x, pad_adjoint(g)>
    left = float((bai.pad(x, widths, mode=mode) * g).sum().item())
    right = float((x * bai.pad_adjoint(g, widths, mode)).sum().item())
    assert left == pytest.approx(right, rel=1e-12)
    bai.debug.gradcheck(lambda g: g.pad_adjoint(widths, mode), [g])
    bai.debug.gradgradcheck(lambda g: g.pad_adjoint(widths, mode), [g])


def test_pad_adjoint_errors():
    with pytest.raises(bai.ShapeError, match=r"\[pad_adjoint\] cannot fold 'constant' padding"):
        bai.zeros(4, 4).pad_adjoint(((1, 1), (1, 1)), "constant")
    with pytest.raises(bai.ShapeError, match=r"\[pad_adjoint\] cannot fold 'reflect' padding"):
        bai.zeros(4, 4).pad_adjoint(((3, 3), (0, 0)), "reflect")


def test_pad_integer_tensor_and_no_padding():
    x = bai.tensor([[1, 2], [3, 4]])
    assert bai.pad(x, (1, 0), value=9).numpy().tolist() == [[9, 1, 2], [9, 3, 4]]
    assert bai.pad(x, (0, 0)) is x


def test_pad_errors():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[pad\] reflect padding \(3, 0\) on axis 1 of a tensor shaped \(2, 3\) must be "
        r"smaller than that dimension \(3\)",
    ):
        bai.zeros(2, 3).pad((3, 0), mode="reflect")
    with pytest.raises(bai.ShapeError, match=r"\[pad\] circular padding \(0, 4\) on axis 1"):
        bai.zeros(2, 3).pad((0, 4), mode="circular")
    with pytest.raises(bai.ShapeError, match=r"\[pad\] replicate padding on axis 0 .* empty"):
        bai.zeros(0, 3).pad(((1, 0), (0, 0)), mode="replicate")
    with pytest.raises(bai.ShapeError, match=r"\[pad\] PyTorch-style padding \(1, 2, 3\) needs"):
        bai.zeros(2, 3).pad((1, 2, 3))
    with pytest.raises(bai.ShapeError, match=r"at most 4 for a tensor shaped \(2, 3\)"):
        bai.zeros(2, 3).pad((1, 1, 1, 1, 1, 1))
    with pytest.raises(bai.ShapeError, match=r"\[pad\] NumPy-style padding .* one \(before"):
        bai.zeros(2, 3, 4).pad(((1, 1), (1, 1)))
    with pytest.raises(ValueError, match=r"\[pad\] unknown mode 'mirror'"):
        bai.zeros(2, 3).pad((1, 1), mode="mirror")
    with pytest.raises(bai.ShapeError, match=r"\[pad\] padding \(-2, -2\) crops more than the 3"):
        bai.zeros(2, 3).pad((-2, -2))
    with pytest.raises(
        bai.ShapeError, match=r"\[pad\] reflect padding \(-3, 0\) on axis 1 .* leaves 0"
    ):
        bai.zeros(2, 3).pad((-3, 0), mode="reflect")  # PyTorch: "input (W: 3) is too small"


NEGATIVE_PADS = [(-1, 2), (2, -1), (-1, -1), (0, -3), (-4, 1), (3, -2), (-2, 3), (-3, 3), (-5, 2),
                 (4, -5), (-2, 1, 1, -1), (1, -2, -1, 2)]  # fmt: skip


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
@pytest.mark.parametrize("widths", NEGATIVE_PADS, ids=str)
def test_negative_padding_crops_in_every_mode_like_torch(mode, widths):
    shape = (2, 6) if len(widths) == 2 else (2, 5, 6)
    x = torch.arange(float(np.prod(shape))).reshape(shape)
    if mode == "circular" and widths in ((-5, 2), (4, -5)):
        # wrapping more than once around what the crop leaves: PyTorch 2.13 raises on some
        # shapes and returns uninitialised memory on others; refused here
        with pytest.raises(bai.ShapeError, match=r"\[pad\] circular padding .* cannot exceed"):
            bai.pad(bai.zeros(*shape), widths, mode=mode)
        return
    try:
        torch.nn.functional.pad(x.unsqueeze(0), widths, mode=mode)
    except RuntimeError:  # PyTorch refuses it: so do we, with the op named
        with pytest.raises(bai.ShapeError, match=r"\[pad\]"):
            bai.pad(bai.zeros(*shape), widths, mode=mode)
        return
    check_op(
        lambda x: bai.pad(x, widths, mode=mode),
        shape,
        torch_fn=lambda x: torch.nn.functional.pad(x.unsqueeze(0), widths, mode=mode)[0],
        gradgrad=True,
    )


def test_circular_crop_of_a_whole_axis_is_refused_where_torch_gives_an_empty_axis():
    # PyTorch 2.13 returns shape (1, 1, 0) for circular (-7, 1) on 6 elements; cropping more than
    # the axis holds is refused here, as PyTorch refuses it in constant mode
    assert torch.nn.functional.pad(torch.zeros(1, 1, 6), (-7, 1), mode="circular").shape[-1] == 0
    with pytest.raises(bai.ShapeError, match=r"\[pad\] padding \(-7, 1\) crops more than the 6"):
        bai.pad(bai.zeros(1, 1, 6), (-7, 1), mode="circular")


# ----- tile, repeat, repeat_interleave ----------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "reps"),
    [((2, 3), (2, 1)), ((2, 3), (2,)), ((3,), (2, 2)), ((1, 3), (2, 1, 2)), ((), (3,)),
     ((2, 3), (0, 2)), ((0, 2), (2, 2)), ((2, 3), (1, 1))],
    ids=str,
)  # fmt: skip
def test_tile(shape, reps):
    check_op(lambda x: x.tile(reps), shape, gradgrad=True)
    check_op(lambda x: bai.tile(x, *reps), shape, torch_fn=lambda x: torch.tile(x, reps))


@pytest.mark.parametrize(
    ("shape", "sizes"), [((2, 3), (2, 2)), ((2, 3), (3, 1, 2)), ((3,), (4,)), ((), (2,))], ids=str
)
def test_repeat_is_pytorch_tensor_repeat(shape, sizes):
    check_op(lambda x: x.repeat(*sizes), shape, gradgrad=True)
    check_op(lambda x: x.repeat(sizes), shape)


@pytest.mark.parametrize(
    ("shape", "repeats", "dim"),
    [((2, 3), 2, 1), ((2, 3), 3, 0), ((2, 3), 2, None), ((2, 3), [1, 0, 2], -1),
     ((3,), [2, 2, 1], 0), ((2, 3), [3], 0), ((0, 2), 2, 0)],
    ids=str,
)  # fmt: skip
def test_repeat_interleave(shape, repeats, dim):
    torch_repeats = torch.tensor(repeats) if isinstance(repeats, list) else repeats
    check_op(lambda x: x.repeat_interleave(repeats, dim), shape,
             torch_fn=lambda x: x.repeat_interleave(torch_repeats, dim), gradgrad=True)  # fmt: skip


def test_repeat_interleave_accepts_a_tensor_of_counts():
    counts = bai.tensor([2, 1])
    check_op(lambda x: bai.repeat_interleave(x, counts, axis=0), (2, 3),
             torch_fn=lambda x: torch.repeat_interleave(x, torch.tensor([2, 1]), 0))  # fmt: skip


def test_tile_and_repeat_errors():
    with pytest.raises(bai.ShapeError, match=r"\[tile\] repeat counts must be non-negative"):
        bai.zeros(2).tile(-1)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[repeat\] got 1 repeat counts \(2,\) for a tensor shaped \(2, 3\) with 2 dim",
    ):
        bai.zeros(2, 3).repeat(2)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[repeat_interleave\] got 2 repeat counts for dimension 1 of size 3",
    ):
        bai.zeros(2, 3).repeat_interleave([1, 2], 1)
    with pytest.raises(bai.ShapeError, match=r"\[repeat_interleave\] repeats must be"):
        bai.zeros(2, 3).repeat_interleave(-1, 1)


# ----- contiguous and views -----------------------------------------------------------------------


def test_contiguous_copies_only_when_needed():
    x = bai.Tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert x.contiguous() is x
    transposed = x.T
    assert not transposed.array.flags.c_contiguous
    copy = transposed.contiguous()
    assert copy.array.flags.c_contiguous and not np.shares_memory(copy.array, x.array)
    check_op(lambda x: x.mT.contiguous(), (2, 3, 4), gradgrad=True)


def test_squeeze_unsqueeze_and_slices_are_views():
    x = bai.zeros(1, 3)
    assert np.shares_memory(x.squeeze(0).array, x.array)
    assert np.shares_memory(x.unsqueeze(0).array, x.array)
    assert np.shares_memory(x.flip(1).array, x.array)
    assert all(np.shares_memory(piece.array, x.array) for piece in x.split(1, 1))


def test_shape_ops_have_onnx_mappings():
    table = {op.name: op for op in all_ops()}
    for name in ["squeeze", "unsqueeze", "concatenate", "pad", "contiguous"]:
        assert callable(getattr(table[name], "to_onnx", None)), name
        assert not hasattr(table[name], "onnx"), name  # to_onnx is the one mapping


def test_bad_axes_name_the_op():
    with pytest.raises(bai.ShapeError, match=r"\[permute\] axis 3 is out of range .* 2 dim"):
        bai.zeros(2, 3).permute(0, 3)
    with pytest.raises(bai.ShapeError, match=r"\[permute\] axes \(0, 0\) are not a permutation"):
        bai.zeros(2, 3).permute(0, 0)
    with pytest.raises(bai.ShapeError, match=r"\[movedim\] source \(0, 1\) and destination"):
        bai.zeros(2, 3).movedim((0, 1), 0)
    with pytest.raises(bai.ShapeError, match=r"\[movedim\] repeated axis"):
        bai.zeros(2, 3).movedim((0, -2), (0, 1))
    with pytest.raises(bai.ShapeError, match=r"\[reshape\] cannot reshape \(2, 3\)"):
        bai.zeros(2, 3).reshape(4, 2)
    with pytest.raises(bai.ShapeError, match=r"\[expand\] cannot expand \(2, 3\) to \(4, 3\)"):
        bai.zeros(2, 3).expand(4, 3)


# ----- property tests: round trips give back values and gradients exactly -------------------------

small_shapes = st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple)


def _leaf(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    return bai.Tensor(values, requires_grad=True), values


def _round_trip_gradient(x, y, seed=1):
    """The gradient of ``y`` (an exact rearrangement back to ``x``'s shape) for random weights."""
    weights = np.random.default_rng(seed).standard_normal(y.shape)
    (gradient,) = bai.grad(y, x, grad_outputs=bai.Tensor(weights))
    return gradient.numpy(), weights


@settings(max_examples=50, deadline=None)
@given(shape=small_shapes, data=st.data())
def test_reshape_round_trip(shape, data):
    x, values = _leaf(shape)
    target = tuple(data.draw(st.permutations(shape))) if shape else ()
    target = (-1,) if 0 not in shape and data.draw(st.booleans()) else target
    y = x.reshape(target).reshape(shape)
    np.testing.assert_array_equal(y.numpy(), values)
    gradient, weights = _round_trip_gradient(x, y)
    np.testing.assert_array_equal(gradient, weights)


@settings(max_examples=50, deadline=None)
@given(shape=small_shapes, data=st.data())
def test_permute_and_transpose_round_trip(shape, data):
    x, values = _leaf(shape)
    axes = tuple(data.draw(st.permutations(range(len(shape)))))
    inverse = tuple(np.argsort(axes))
    y = x.permute(axes)
    np.testing.assert_array_equal(y.numpy(), np.transpose(values, axes))
    back = y.permute(inverse)
    np.testing.assert_array_equal(back.numpy(), values)
    gradient, weights = _round_trip_gradient(x, back)
    np.testing.assert_array_equal(gradient, weights)
    if len(shape) >= 2:
        first, second = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=2,
                                           max_size=2))  # fmt: skip
        swapped = x.transpose(first, second).transpose(first, second)
        np.testing.assert_array_equal(swapped.numpy(), values)
        gradient, weights = _round_trip_gradient(x, swapped)
        np.testing.assert_array_equal(gradient, weights)


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=4).map(tuple), data=st.data())
def test_flatten_unflatten_round_trip(shape, data):
    x, values = _leaf(shape)
    start = data.draw(st.integers(0, len(shape) - 1))
    end = data.draw(st.integers(start, len(shape) - 1))
    flat = x.flatten(start, end)
    np.testing.assert_array_equal(flat.numpy(), torch.tensor(values).flatten(start, end).numpy())
    back = flat.unflatten(start, shape[start : end + 1])
    np.testing.assert_array_equal(back.numpy(), values)
    gradient, weights = _round_trip_gradient(x, back)
    np.testing.assert_array_equal(gradient, weights)


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_pad_matches_numpy_on_any_axes(shape, data):
    mode, numpy_mode = data.draw(
        st.sampled_from([("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
    )
    limit = {"reflect": lambda n: n - 1, "replicate": lambda n: 3, "circular": lambda n: n}[mode]
    widths = tuple(
        (data.draw(st.integers(0, limit(n))), data.draw(st.integers(0, limit(n)))) for n in shape
    )
    x, values = _leaf(shape)
    y = bai.pad(x, widths, mode=mode)
    np.testing.assert_array_equal(y.numpy(), np.pad(values, widths, mode=numpy_mode))
    # the gradient is the scatter-add of the output gradient onto the copied positions
    weights = np.random.default_rng(1).standard_normal(y.shape)
    (gradient,) = bai.grad(y, x, grad_outputs=bai.Tensor(weights))
    sources = np.pad(np.arange(values.size).reshape(shape), widths, mode=numpy_mode)
    expected = np.bincount(sources.ravel(), weights.ravel(), minlength=values.size)
    np.testing.assert_allclose(gradient.numpy(), expected.reshape(shape), rtol=1e-12, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(shape=small_shapes, data=st.data())
def test_expand_gradient_sums_over_broadcast_axes(shape, data):
    x, values = _leaf(shape)
    # grow size-1 dimensions and add leading ones, as broadcasting would
    grown = tuple(data.draw(st.integers(1, 3)) if extent == 1 else extent for extent in shape)
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + grown
    y = x.expand(target)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(values, target))
    weights = np.random.default_rng(1).standard_normal(target)
    (gradient,) = bai.grad(y, x, grad_outputs=bai.Tensor(weights))
    summed = weights.sum(axis=tuple(range(len(lead))))
    summed = summed.sum(axis=tuple(a for a, e in enumerate(shape) if e == 1), keepdims=True)
    np.testing.assert_allclose(gradient.numpy(), summed.reshape(shape), rtol=1e-12, atol=1e-12)
