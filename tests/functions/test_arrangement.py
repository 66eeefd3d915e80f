"""The arrangement functions (grids, diagonals, the ``*stack`` family, picking, rotations,
differences and small products) against PyTorch in float64: values, gradients, edge cases,
errors, the Tensor-method spellings, PyTorch's documentation examples and frozen graphs."""

import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, IndexingError, ShapeError
from tests.helpers import check_op, constant

torch = pytest.importorskip("torch")

NAMES = [
    "meshgrid", "cartesian_prod", "tril_indices", "triu_indices", "diagonal", "diag_embed",
    "diag", "trace", "block_diag", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "concat", "unbind", "ravel", "select", "take",
    "take_along_dim", "fliplr", "flipud", "rot90", "diff", "cross", "kron", "tensordot", "inner",
    "mv", "addmm", "addmv", "baddbmm",
]  # fmt: skip
METHODS = [
    "diag", "diagonal", "diag_embed", "trace", "unbind", "ravel", "select", "take",
    "take_along_dim", "fliplr", "flipud", "rot90", "diff", "cross", "kron", "inner", "mv",
    "addmm", "addmv", "baddbmm",
]  # fmt: skip


def same(ours, theirs):
    """Equal values, shape and dtype (for integer and bool results)."""
    theirs = theirs.numpy()
    assert ours.shape == theirs.shape
    assert ours.dtype.name == str(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs)


def both(values):
    """The same values as a BuildingAI and a torch tensor."""
    values = np.asarray(values)
    return bai.tensor(values), torch.tensor(values)


def test_every_name_is_exported_and_methods_exist_where_torch_has_them():
    for name in NAMES:
        assert hasattr(bai, name) and hasattr(torch, name), name
    for name in METHODS:
        assert hasattr(bai.Tensor, name) and hasattr(torch.Tensor, name), name
    assert bai.concat is bai.cat and bai.row_stack is bai.vstack


# ----- grids and index lists ------------------------------------------------------------------


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("shapes", [[(3,)], [(3,), (4,)], [(2,), (), (4,)], [(0,), (2,)]], ids=str)
def test_meshgrid_matches_pytorch(indexing, shapes):
    check_op(
        lambda *xs: bai.meshgrid(*xs, indexing=indexing),
        *shapes,
        torch_fn=lambda *xs: torch.meshgrid(*xs, indexing=indexing),
    )
    check_op(  # the list spelling
        lambda *xs: bai.meshgrid(list(xs), indexing=indexing),
        *shapes,
        torch_fn=lambda *xs: torch.meshgrid(list(xs), indexing=indexing),
        gradcheck=False,
    )


def test_meshgrid_warns_like_pytorch_without_indexing_and_defaults_to_ij():
    x, t = both([1, 2, 3])
    y, u = both([4, 5])
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ours = bai.meshgrid(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.meshgrid(t, u)
    for a, b in zip(ours, theirs):
        same(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bai.meshgrid(x, y, indexing="ij")


def test_meshgrid_errors():
    with pytest.raises(ArgumentError, match=r"\[meshgrid\] indexing must be 'ij' or 'xy'"):
        bai.meshgrid(bai.ones(2), indexing="foo")
    with pytest.raises(ShapeError, match=r"\[meshgrid\] expects 0-d or 1-D.*\(2, 2\)"):
        bai.meshgrid(bai.ones(2, 2), indexing="ij")
    with pytest.raises(DTypeError, match=r"\[meshgrid\] expects tensors of one dtype"):
        bai.meshgrid(bai.ones(2), bai.tensor([1, 2]), indexing="ij")
    with pytest.raises(ArgumentError, match=r"\[meshgrid\] needs at least one tensor"):
        bai.meshgrid(indexing="ij")


def test_meshgrid_doc_example():
    torch = bai
    x = torch.tensor([1, 2, 3])
    y = torch.tensor([4, 5, 6])
    grid_x, grid_y = torch.meshgrid(x, y, indexing="ij")
    assert grid_x.tolist() == [[1, 1, 1], [2, 2, 2], [3, 3, 3]]
    assert grid_y.tolist() == [[4, 5, 6], [4, 5, 6], [4, 5, 6]]
    assert torch.equal(torch.cat(tuple(torch.dstack([grid_x, grid_y]))), torch.cartesian_prod(x, y))
    xs = torch.linspace(-5, 5, steps=100)
    ys = torch.linspace(-5, 5, steps=100)
    x, y = torch.meshgrid(xs, ys, indexing="xy")
    z = torch.sin(torch.sqrt(x * x + y * y))
    assert z.shape == (100, 100)


@pytest.mark.parametrize(
    "shapes", [[(3,)], [(3,), (2,)], [(2,), (3,), (2,)], [(0,), (2,)]], ids=str
)
def test_cartesian_prod_matches_pytorch(shapes):
    check_op(bai.cartesian_prod, *shapes, torch_fn=torch.cartesian_prod)


def test_cartesian_prod_doc_example_and_errors():
    torch = bai
    a = [1, 2, 3]
    b = [4, 5]
    tensor_a = torch.tensor(a)
    tensor_b = torch.tensor(b)
    assert torch.cartesian_prod(tensor_a, tensor_b).tolist() == [
        [1, 4], [1, 5], [2, 4], [2, 5], [3, 4], [3, 5]
    ]  # fmt: skip
    assert bai.cartesian_prod(tensor_a) is tensor_a
    with pytest.raises(ShapeError, match=r"\[cartesian_prod\] expects 1-D tensors.*\(\)"):
        bai.cartesian_prod(bai.tensor(1.0), bai.ones(2))
    with pytest.raises(ArgumentError, match=r"\[cartesian_prod\] needs at least one"):
        bai.cartesian_prod()


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize(
    ("row", "col", "offset"),
    [(3, 3, 0), (4, 3, -1), (4, 3, 1), (3, 5, 2), (4, 3, -5), (4, 3, 7), (0, 3, 0), (1, 1, 0)],
)
def test_triangle_indices_match_pytorch(name, row, col, offset):
    same(getattr(bai, name)(row, col, offset), getattr(torch, name)(row, col, offset))
    same(
        getattr(bai, name)(row, col, offset=offset, dtype=bai.int32),
        getattr(torch, name)(row, col, offset=offset, dtype=torch.int32),
    )


def test_triangle_indices_doc_examples_and_errors():
    torch = bai
    a = torch.tril_indices(3, 3)
    assert a.tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    a = torch.tril_indices(4, 3, -1)
    assert a.tolist() == [[1, 2, 2, 3, 3, 3], [0, 0, 1, 0, 1, 2]]
    a = torch.tril_indices(4, 3, 1)
    assert a.tolist() == [[0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], [0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2]]
    a = torch.triu_indices(3, 3)
    assert a.tolist() == [[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]
    a = torch.triu_indices(4, 3, -1)
    assert a.tolist() == [[0, 0, 0, 1, 1, 1, 2, 2, 3], [0, 1, 2, 0, 1, 2, 1, 2, 2]]
    a = torch.triu_indices(4, 3, 1)
    assert a.tolist() == [[0, 0, 1], [1, 2, 2]]
    assert a.dtype == bai.int64
    with pytest.raises(ArgumentError, match=r"\[tril_indices\] row and col must be non-negative"):
        bai.tril_indices(-1, 3)
    with pytest.raises(DTypeError, match=r"\[triu_indices\] dtype must be int64 or int32"):
        bai.triu_indices(2, 3, dtype=bai.float32)


# ----- diagonals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "offset", "dim1", "dim2"),
    [((3, 3), 0, 0, 1), ((3, 5), 1, 0, 1), ((5, 3), -2, 0, 1), ((2, 5), 1, 1, 0),
     ((2, 3, 4), 0, -1, -2), ((2, 5, 4, 2), -1, 1, 2), ((3, 4), 9, 0, 1), ((3, 4), -9, 0, 1),
     ((0, 3), 0, 0, 1), ((2, 0, 3), 0, -1, 0)],
    ids=str,
)  # fmt: skip
def test_diagonal_matches_pytorch(shape, offset, dim1, dim2):
    check_op(lambda x: bai.diagonal(x, offset, dim1, dim2), shape,
             torch_fn=lambda x: torch.diagonal(x, offset, dim1, dim2), gradgrad=True)  # fmt: skip
    check_op(lambda x: x.diagonal(offset=offset, dim1=dim1, dim2=dim2), shape,
             torch_fn=lambda x: x.diagonal(offset=offset, dim1=dim1, dim2=dim2),
             gradcheck=False)  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "offset", "dim1", "dim2"),
    [((3, 3), 0, 0, 1), ((3, 4), -1, 1, 0), ((2, 3, 4), 1, -2, -1), ((3, 4, 2), 0, 0, 1)],
    ids=str,
)  # fmt: skip
def test_diagonal_is_a_view_that_writes_into_its_input(shape, offset, dim1, dim2):
    ours, theirs = bai.zeros(shape), torch.zeros(shape)
    ours.diagonal(offset, dim1, dim2).add_(2.0)
    theirs.diagonal(offset, dim1, dim2).add_(2.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    bai.diagonal(ours, offset, dim1, dim2).fill_(-1.0)
    theirs.diagonal(offset, dim1, dim2).fill_(-1.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    ("shape", "offset", "dim1", "dim2"),
    [((3,), 0, -2, -1), ((3,), 2, -2, -1), ((3,), -1, 0, 1), ((2, 3), 1, 0, 2),
     ((2, 3), -1, 2, 0), ((2, 3, 2), 0, 1, 3), ((0,), 1, -2, -1), ((2, 0), 0, -2, -1)],
    ids=str,
)  # fmt: skip
def test_diag_embed_matches_pytorch(shape, offset, dim1, dim2):
    check_op(lambda x: bai.diag_embed(x, offset, dim1, dim2), shape,
             torch_fn=lambda x: torch.diag_embed(x, offset, dim1, dim2), gradgrad=True)  # fmt: skip
    check_op(lambda x: x.diag_embed(offset, dim1=dim1, dim2=dim2), shape,
             torch_fn=lambda x: x.diag_embed(offset, dim1=dim1, dim2=dim2), gradcheck=False)  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "diagonal"), [((3,), 0), ((3,), 1), ((3,), -2), ((0,), 1), ((3, 3), 0),
                            ((3, 4), 1), ((4, 3), -1), ((2, 3), 5), ((2, 3), -5)], ids=str
)  # fmt: skip
def test_diag_matches_pytorch(shape, diagonal):
    check_op(lambda x: bai.diag(x, diagonal), shape,
             torch_fn=lambda x: torch.diag(x, diagonal), gradgrad=True)  # fmt: skip
    check_op(lambda x: x.diag(diagonal=diagonal), shape,
             torch_fn=lambda x: x.diag(diagonal=diagonal), gradcheck=False)  # fmt: skip


def test_diagonals_of_integers_and_bools_keep_their_dtype():
    for values in ([1, 2, 3], [True, False, True], [[1, 2], [3, 4]]):
        ours, theirs = both(values)
        same(bai.diag(ours, -1), torch.diag(theirs, -1))
        if ours.ndim == 1:
            same(bai.diag_embed(ours, 1), torch.diag_embed(theirs, 1))


def test_diagonal_errors():
    with pytest.raises(ShapeError, match=r"\[diagonal\] dim1 and dim2 must differ"):
        bai.diagonal(bai.ones(2, 3), 1, 1, 1)
    with pytest.raises(ShapeError, match=r"\[diagonal\] axis 1 is out of range"):
        bai.diagonal(bai.ones(3))
    with pytest.raises(ShapeError, match=r"\[diag_embed\] dim1 and dim2 must differ"):
        bai.diag_embed(bai.ones(2, 3), 1, 0, 0)
    with pytest.raises(ShapeError, match=r"\[diag_embed\] axis -2 is out of range"):
        bai.diag_embed(bai.tensor(1.0))
    with pytest.raises(ShapeError, match=r"\[diag\] expects a 1-D or 2-D tensor.*\(2, 2, 2\)"):
        bai.diag(bai.ones(2, 2, 2))
    with pytest.raises(ShapeError, match=r"\[diag\] expects a 1-D or 2-D tensor.*\(\)"):
        bai.diag(bai.tensor(3.0))


def test_diagonal_doc_examples():
    torch = bai
    a = torch.randn(3)
    assert torch.diag(a).shape == (3, 3)
    np.testing.assert_array_equal(torch.diag(a).numpy(), np.diag(a.numpy()))
    np.testing.assert_array_equal(torch.diag(a, 1).numpy(), np.diag(a.numpy(), 1))
    a = torch.randn(3, 3)
    np.testing.assert_array_equal(torch.diag(a, 0).numpy(), np.diag(a.numpy()))
    np.testing.assert_array_equal(torch.diag(a, 1).numpy(), np.diag(a.numpy(), 1))
    np.testing.assert_array_equal(torch.diagonal(a).numpy(), np.diagonal(a.numpy()))
    np.testing.assert_array_equal(torch.diagonal(a, 1).numpy(), np.diagonal(a.numpy(), 1))
    b = torch.randn(2, 5)
    np.testing.assert_array_equal(torch.diagonal(b, 1, 1, 0).numpy(), b.numpy()[1:2, 0])
    x = torch.randn(2, 5, 4, 2)
    expected = np.diagonal(x.numpy(), offset=-1, axis1=1, axis2=2)
    np.testing.assert_array_equal(torch.diagonal(x, offset=-1, dim1=1, dim2=2).numpy(), expected)
    a = torch.randn(2, 3)
    assert torch.diag_embed(a).shape == (2, 3, 3)
    embedded = torch.diag_embed(a, offset=1, dim1=0, dim2=2)
    assert embedded.shape == (4, 2, 4)
    np.testing.assert_array_equal(embedded.numpy()[0, :, 1], a.numpy()[:, 0])
    x = torch.arange(1.0, 10.0).view(3, 3)
    assert torch.trace(x).item() == 15.0


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (0, 3)], ids=str)
def test_trace_matches_pytorch(shape):
    check_op(bai.trace, shape, torch_fn=torch.trace, gradgrad=True)
    check_op(lambda x: x.trace(), shape, gradcheck=False)


def test_trace_of_integers_and_errors():
    ours, theirs = both(np.arange(6, dtype=np.int32).reshape(2, 3))
    same(bai.trace(ours), torch.trace(theirs))
    with pytest.raises(ShapeError, match=r"\[trace\] expects a matrix, got shape \(3,\)"):
        bai.trace(bai.ones(3))
    with pytest.raises(DTypeError, match=r"\[trace\] is not defined for bool"):
        bai.trace(bai.ones(2, 2, dtype=bai.bool))


@pytest.mark.parametrize(
    "shapes", [[(2, 2)], [(), (2,), (2, 1)], [(2, 3), (1, 1), (3,)], [(0,), (1, 1)], [(0, 2), (1, 1)]],
    ids=str,
)  # fmt: skip
def test_block_diag_matches_pytorch(shapes):
    # PyTorch's backward gives the block after an empty 1-D block the gradient of the row above
    # its own, as if that block added no row; its forward (and ours, forward and backward) does
    empty_vector = (0,) in shapes
    check_op(bai.block_diag, *shapes, torch_fn=torch.block_diag, grad=not empty_vector)


def test_block_diag_gradient_after_an_empty_vector_reaches_its_own_row():
    empty = bai.tensor(np.zeros(0), requires_grad=True)
    block = bai.tensor(np.ones((1, 1)), requires_grad=True)
    out = bai.block_diag(empty, block)  # (2, 1): the empty vector is a row of width 0
    (out * bai.tensor([[1.0], [2.0]])).sum().backward()
    assert block.grad.tolist() == [[2.0]] and empty.grad.shape == (0,)


def test_block_diag_dtypes_and_errors():
    same(bai.block_diag(), torch.block_diag())
    for dtypes in ((np.bool_,), (np.bool_, np.int32), (np.int64, np.float32)):
        blocks = [np.ones(2, dtype=dtype) for dtype in dtypes]
        same(bai.block_diag(*map(bai.tensor, blocks)), torch.block_diag(*map(torch.tensor, blocks)))
    with pytest.raises(ShapeError, match=r"\[block_diag\] blocks must have at most 2.*position 0"):
        bai.block_diag(bai.ones(2, 2, 2))


def test_block_diag_doc_example():
    torch = bai
    A = torch.tensor([[0, 1], [1, 0]])
    B = torch.tensor([[3, 4, 5], [6, 7, 8]])
    C = torch.tensor(7)
    D = torch.tensor([1, 2, 3])
    E = torch.tensor([[4], [5], [6]])
    assert torch.block_diag(A, B, C, D, E).tolist() == [
        [0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 3, 4, 5, 0, 0, 0, 0, 0],
        [0, 0, 6, 7, 8, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 7, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 1, 2, 3, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 5],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 6],
    ]


# ----- joining and splitting ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (0,)], ids=str)
def test_atleast_matches_pytorch(name, shape):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    check_op(ours, shape, torch_fn=theirs)
    check_op(lambda x, y: ours(x, y), shape, (2,), torch_fn=lambda x, y: theirs(x, y))
    pair = ours([bai.ones(shape), bai.ones(2)])
    assert isinstance(pair, tuple) and len(pair) == 2
    assert isinstance(ours(bai.ones(shape)), bai.Tensor)


def test_atleast_doc_examples():
    torch = bai
    x = torch.arange(2)
    assert torch.atleast_1d(x).tolist() == [0, 1]
    x = torch.tensor(1.0)
    assert torch.atleast_1d(x).tolist() == [1.0]
    x = torch.tensor(0.5)
    y = torch.tensor(1.0)
    assert [t.tolist() for t in torch.atleast_1d((x, y))] == [[0.5], [1.0]]
    assert torch.atleast_1d() == ()
    x = torch.tensor(1.0)
    assert torch.atleast_2d(x).tolist() == [[1.0]]
    x = torch.arange(4).view(2, 2)
    assert torch.atleast_2d(x).tolist() == [[0, 1], [2, 3]]
    x = torch.tensor(0.5)
    y = torch.tensor(1.0)
    assert [t.tolist() for t in torch.atleast_2d((x, y))] == [[[0.5]], [[1.0]]]
    assert torch.atleast_2d() == ()
    x = torch.tensor(0.5)
    assert torch.atleast_3d(x).tolist() == [[[0.5]]]
    y = torch.arange(4).view(2, 2)
    assert torch.atleast_3d(y).tolist() == [[[0], [1]], [[2], [3]]]
    x = torch.tensor(1).view(1, 1, 1)
    assert torch.atleast_3d(x).tolist() == [[[1]]]
    x = torch.tensor(0.5)
    y = torch.tensor(1.0)
    assert [t.tolist() for t in torch.atleast_3d((x, y))] == [[[[0.5]]], [[[1.0]]]]
    assert torch.atleast_3d() == ()


@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize(
    "shapes",
    [[(3,)], [(), ()], [(3,), (3,)], [(2, 3), (2, 3)], [(2, 1), (2, 3)], [(3, 2), (1, 2)],
     [(2, 3, 4), (2, 3, 4)], [(0,), (0,)]],
    ids=str,
)  # fmt: skip
def test_stacks_match_pytorch(name, shapes):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # row_stack may be deprecated in PyTorch
            theirs([torch.ones(s) for s in shapes])
    except RuntimeError:
        with pytest.raises(ShapeError):
            ours([bai.ones(s) for s in shapes])
        return
    check_op(lambda *xs: ours(xs), *shapes, torch_fn=lambda *xs: theirs(xs))
    check_op(lambda *xs: ours(list(xs)), *shapes, torch_fn=lambda *xs: theirs(list(xs)),
             gradcheck=False)  # fmt: skip


def test_stacks_promote_dtypes_and_refuse_bad_arguments():
    a, t = both([1, 2])
    b, u = both([0.5, 1.5])
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        same(getattr(bai, name)((a, b)), getattr(torch, name)((t, u)))
        with pytest.raises(ShapeError, match=rf"\[{name}\] needs at least one tensor"):
            getattr(bai, name)([])
        with pytest.raises(TypeError, match=rf"\[{name}\] expects a list or tuple"):
            getattr(bai, name)(a)


def test_stack_doc_examples():
    torch = bai
    a = torch.tensor([1, 2, 3])
    b = torch.tensor([4, 5, 6])
    assert torch.hstack((a, b)).tolist() == [1, 2, 3, 4, 5, 6]
    assert torch.vstack((a, b)).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert torch.dstack((a, b)).tolist() == [[[1, 4], [2, 5], [3, 6]]]
    assert torch.column_stack((a, b)).tolist() == [[1, 4], [2, 5], [3, 6]]
    a = torch.tensor([[1], [2], [3]])
    b = torch.tensor([[4], [5], [6]])
    assert torch.hstack((a, b)).tolist() == [[1, 4], [2, 5], [3, 6]]
    assert torch.vstack((a, b)).tolist() == [[1], [2], [3], [4], [5], [6]]
    assert torch.dstack((a, b)).tolist() == [[[1, 4]], [[2, 5]], [[3, 6]]]
    a = torch.arange(5)
    b = torch.arange(10).reshape(5, 2)
    assert torch.column_stack((a, b, b)).tolist() == [
        [0, 0, 1, 0, 1], [1, 2, 3, 2, 3], [2, 4, 5, 4, 5], [3, 6, 7, 6, 7], [4, 8, 9, 8, 9]
    ]  # fmt: skip


def test_concat_is_cat():
    check_op(lambda x, y: bai.concat((x, y), 1), (2, 3), (2, 1),
             torch_fn=lambda x, y: torch.concat((x, y), 1))  # fmt: skip
    check_op(lambda x, y: bai.concat([x, y], dim=-2), (2, 3), (1, 3),
             torch_fn=lambda x, y: torch.concat([x, y], dim=-2))  # fmt: skip


@pytest.mark.parametrize(("shape", "dim"), [((3, 2), 0), ((3, 2), 1), ((2, 3, 4), -1),
                                            ((4,), 0), ((0, 2), 0), ((2, 0), 0)], ids=str)  # fmt: skip
def test_unbind_matches_pytorch(shape, dim):
    check_op(lambda x: bai.unbind(x, dim), shape, torch_fn=lambda x: torch.unbind(x, dim))
    check_op(lambda x: x.unbind(dim=dim), shape, torch_fn=lambda x: x.unbind(dim=dim),
             gradcheck=False)  # fmt: skip


def test_unbind_doc_example_views_and_errors():
    torch = bai
    parts = torch.unbind(torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
    assert isinstance(parts, tuple) and [p.tolist() for p in parts] == [
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
    ]
    assert bai.unbind(bai.ones(0, 2)) == ()
    grid = bai.zeros(2, 3)
    bai.unbind(grid, 1)[2].fill_(1.0)  # views, as in PyTorch: the write reaches the input
    bai.select(grid, 0, -1).add_(2.0)
    assert grid.tolist() == [[0.0, 0.0, 1.0], [2.0, 2.0, 3.0]]
    with pytest.raises(ShapeError, match=r"\[unbind\] needs a tensor with at least 1 dimension"):
        bai.unbind(bai.tensor(1.0))
    with pytest.raises(ShapeError, match=r"\[unbind\] axis 2 is out of range"):
        bai.unbind(bai.ones(2, 3), 2)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0, 3)], ids=str)
def test_ravel_matches_pytorch(shape):
    check_op(bai.ravel, shape, torch_fn=torch.ravel)
    check_op(lambda x: x.t().ravel() if x.ndim == 2 else x.ravel(), shape, gradcheck=False)


def test_ravel_doc_example():
    torch = bai
    t = torch.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    assert torch.ravel(t).tolist() == [1, 2, 3, 4, 5, 6, 7, 8]


# ----- picking elements -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dim", "index"),
    [((3, 4), 0, 1), ((3, 4), 1, -1), ((2, 3, 4), -1, 3), ((2, 3, 4), -2, -3), ((5,), 0, 2)],
    ids=str,
)  # fmt: skip
def test_select_matches_pytorch(shape, dim, index):
    check_op(lambda x: bai.select(x, dim, index), shape,
             torch_fn=lambda x: torch.select(x, dim, index), gradgrad=True)  # fmt: skip
    check_op(lambda x: x.select(dim, index), shape, gradcheck=False)


def test_select_takes_a_0d_tensor_index_and_refuses_bad_ones():
    x = bai.arange(6.0).reshape(2, 3)
    assert x.select(0, bai.tensor(1)).tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(IndexingError, match=r"\[select\] index 3 is out of range for dimension 1"):
        bai.select(x, 1, 3)
    with pytest.raises(IndexingError, match=r"\[select\] index -3 is out of range"):
        bai.select(x, 0, -3)
    with pytest.raises(ShapeError, match=r"\[select\] needs a tensor with at least 1 dimension"):
        bai.select(bai.tensor(1.0), 0, 0)


@pytest.mark.parametrize(
    ("shape", "index"),
    [((2, 3), [0, 2, 5]), ((2, 3), [[-1, 0], [3, -6]]), ((2, 3), 4), ((), [0, 0]), ((), 0),
     ((4,), np.zeros((0,), dtype=np.int64)), ((0,), np.zeros((0,), dtype=np.int64))],
    ids=str,
)  # fmt: skip
def test_take_matches_pytorch(shape, index):
    index = np.asarray(index, dtype=np.int64)
    check_op(lambda x, i: bai.take(x, i), shape, constant(index),
             torch_fn=lambda x, i: torch.take(x, i), gradgrad=True)  # fmt: skip
    check_op(lambda x, i: x.take(i), shape, constant(index), gradcheck=False)


def test_take_doc_example_and_errors():
    torch = bai
    src = torch.tensor([[4, 3, 5], [6, 7, 8]])
    assert torch.take(src, torch.tensor([0, 2, 5])).tolist() == [4, 5, 8]
    with pytest.raises(IndexingError, match=r"\[take\] index 6 is out of range for dim 0"):
        bai.take(src, bai.tensor([6]))
    with pytest.raises(IndexingError, match=r"\[take\] index -7 is out of range"):
        bai.take(src, bai.tensor([-7]))
    with pytest.raises(DTypeError, match=r"\[take\] index must hold integers, got dtype float32"):
        bai.take(src, bai.tensor([0.0]))


@pytest.mark.parametrize(
    ("shape", "index", "dim"),
    [((2, 3), [[0], [2]], 1), ((2, 3), [[0, 1, 1], [1, 0, 0], [0, 0, 1]], 0),
     ((1, 3), [[0], [2], [1]], 1), ((2, 3, 4), [[[3, 0]]], -1), ((2, 3, 4), [[[1], [0]]], 1),
     ((2, 3), [[5, 0], [1, 1]], None), ((2, 3), 4, None), ((2, 3), [[0], [2]], -1)],
    ids=str,
)  # fmt: skip
def test_take_along_dim_matches_pytorch(shape, index, dim):
    index = np.asarray(index, dtype=np.int64)
    check_op(lambda x, i: bai.take_along_dim(x, i, dim), shape, constant(index),
             torch_fn=lambda x, i: torch.take_along_dim(x, i, dim), gradgrad=True)  # fmt: skip
    check_op(lambda x, i: x.take_along_dim(i, dim=dim), shape, constant(index),
             gradcheck=False)  # fmt: skip


def test_take_along_dim_doc_example_and_errors():
    torch = bai
    t = torch.tensor([[10, 30, 20], [60, 40, 50]])
    max_idx = torch.argmax(t)
    assert torch.take_along_dim(t, max_idx).tolist() == [60]
    sorted_idx = torch.argsort(t, dim=1)
    assert torch.take_along_dim(t, sorted_idx, dim=1).tolist() == [[10, 20, 30], [40, 50, 60]]
    with pytest.raises(ShapeError, match=r"\[take_along_dim\] indices have 3 dimensions but the"):
        bai.take_along_dim(t, bai.tensor([[[0]]]), 0)
    with pytest.raises(ShapeError, match=r"\[take_along_dim\] indices shape \(1, 2\) does not"):
        bai.take_along_dim(t, bai.tensor([[0, 1]]), 0)
    with pytest.raises(IndexingError, match=r"\[take_along_dim\] index 3 is out of range"):
        bai.take_along_dim(t, bai.tensor([[3], [2]]), 1)
    with pytest.raises(IndexingError, match=r"\[take_along_dim\] index -1 is out of range"):
        bai.take_along_dim(t, bai.tensor([5, -1]))
    with pytest.raises(ShapeError, match=r"\[take_along_dim\] axis 2 is out of range"):
        bai.take_along_dim(t, bai.tensor([[0]]), 2)
    with pytest.raises(ShapeError, match=r"\[take_along_dim\] needs a tensor with at least 1"):
        bai.take_along_dim(bai.tensor(2.0), bai.tensor(0), 0)


# ----- reordering -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3), (3, 2, 4), (0, 3)], ids=str)
def test_fliplr_and_flipud_match_pytorch(shape):
    for name in ("fliplr", "flipud"):
        check_op(getattr(bai, name), shape, torch_fn=getattr(torch, name))
        check_op(lambda x, name=name: getattr(x, name)(), shape, gradcheck=False)
    check_op(bai.flipud, (4,), torch_fn=torch.flipud)


def test_flips_doc_examples_and_errors():
    torch = bai
    x = torch.arange(4).view(2, 2)
    assert torch.fliplr(x).tolist() == [[1, 0], [3, 2]]
    assert torch.flipud(x).tolist() == [[2, 3], [0, 1]]
    with pytest.raises(ShapeError, match=r"\[fliplr\] needs a tensor with at least 2 dim"):
        bai.fliplr(bai.ones(3))
    with pytest.raises(ShapeError, match=r"\[flipud\] needs a tensor with at least 1 dim"):
        bai.flipud(bai.tensor(1.0))


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 3, 4, 6])
@pytest.mark.parametrize(("shape", "dims"), [((2, 3), (0, 1)), ((2, 3), (1, 0)),
                                             ((2, 3, 4), (2, 0)), ((2, 3, 4), (-1, -2))], ids=str)  # fmt: skip
def test_rot90_matches_pytorch(k, shape, dims):
    check_op(lambda x: bai.rot90(x, k, dims), shape, torch_fn=lambda x: torch.rot90(x, k, dims))
    check_op(lambda x: x.rot90(k, dims=dims), shape, gradcheck=False)


def test_rot90_copies_on_a_full_turn_doc_examples_and_errors():
    x = bai.ones(2, 2)
    assert bai.rot90(x, 4) is not x
    torch = bai
    x = torch.arange(4).view(2, 2)
    assert torch.rot90(x, 1, [0, 1]).tolist() == [[1, 3], [0, 2]]
    x = torch.arange(8).view(2, 2, 2)
    assert torch.rot90(x, 1, [1, 2]).tolist() == [[[1, 3], [0, 2]], [[5, 7], [4, 6]]]
    with pytest.raises(ShapeError, match=r"\[rot90\] dims must name exactly 2"):
        bai.rot90(x, 1, [0])
    with pytest.raises(ShapeError, match=r"\[rot90\] the two dims must differ"):
        bai.rot90(x, 1, [0, -3])
    with pytest.raises(ShapeError, match=r"\[rot90\] needs a tensor with at least 2"):
        bai.rot90(bai.ones(3))
    with pytest.raises(ShapeError, match=r"\[rot90\] axis 3 is out of range"):
        bai.rot90(x, 1, [0, 3])


# ----- differences and products ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "n", "dim"),
    [((5,), 1, -1), ((5,), 3, 0), ((5,), 0, 0), ((5,), 7, -1), ((3, 4), 2, 0), ((3, 4), 1, -2),
     ((2, 3, 4), 2, 1), ((2, 0), 1, -1)],
    ids=str,
)  # fmt: skip
def test_diff_matches_pytorch(shape, n, dim):
    check_op(lambda x: bai.diff(x, n, dim), shape, torch_fn=lambda x: torch.diff(x, n, dim),
             gradgrad=True)  # fmt: skip
    check_op(lambda x: x.diff(n=n, dim=dim), shape, gradcheck=False)


@pytest.mark.parametrize(
    ("shape", "before", "after", "dim"),
    [((2, 3), (2, 1), (2, 2), -1), ((2, 3), (1, 3), None, 0), ((2, 3), None, (3, 3), 0),
     ((4,), (2,), (1,), 0)],
    ids=str,
)  # fmt: skip
def test_diff_with_prepend_and_append_matches_pytorch(shape, before, after, dim):
    inputs = [shape] + [s for s in (before, after) if s is not None]

    def call(library):
        def run(x, *ends):
            ends = list(ends)
            prepend = ends.pop(0) if before is not None else None
            append = ends.pop(0) if after is not None else None
            return library.diff(x, 2, dim, prepend, append)

        return run

    check_op(call(bai), *inputs, torch_fn=call(torch))


def test_diff_of_integers_and_bools_and_errors():
    for values in ([1, 5, 2, 2], [True, False, False, True]):
        ours, theirs = both(values)
        same(bai.diff(ours), torch.diff(theirs))
        same(bai.diff(ours, 2), torch.diff(theirs, 2))
    ours, theirs = both(np.array([1, 5, 2], dtype=np.int32))
    same(bai.diff(ours), torch.diff(theirs))
    a, t = both(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    same(bai.diff(a, prepend=bai.ones(2, 1, dtype=bai.int64)),
         torch.diff(t, prepend=torch.ones(2, 1, dtype=torch.int64)))  # fmt: skip
    c = bai.tensor([[1, 2, 3], [3, 4, 5]])
    with pytest.raises(ShapeError, match=r"\[diff\] expects a tensor with at least 1 dim"):
        bai.diff(bai.tensor(1.0))
    with pytest.raises(ArgumentError, match=r"\[diff\] the order n must be non-negative, got -1"):
        bai.diff(c, n=-1)
    with pytest.raises(ShapeError, match=r"\[diff\] prepend has shape \(3,\) but the input"):
        bai.diff(c, prepend=bai.ones(3))
    with pytest.raises(ShapeError, match=r"\[diff\] axis 3 is out of range"):
        bai.diff(c, dim=3)


def test_diff_doc_example():
    torch = bai
    a = torch.tensor([1, 3, 2])
    assert torch.diff(a).tolist() == [2, -1]
    b = torch.tensor([4, 5])
    assert torch.diff(a, append=b).tolist() == [2, -1, 2, 1]
    c = torch.tensor([[1, 2, 3], [3, 4, 5]])
    assert torch.diff(c, dim=0).tolist() == [[2, 2, 2]]
    assert torch.diff(c, dim=1).tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize(
    ("left", "right", "dim"),
    [((3,), (3,), 0), ((4, 3), (4, 3), 1), ((3, 4), (3, 4), -2), ((2, 3, 5), (1, 3, 5), 1),
     ((1, 3), (4, 3), -1), ((2, 4, 3), (2, 1, 3), 2)],
    ids=str,
)  # fmt: skip
def test_cross_matches_pytorch(left, right, dim):
    check_op(lambda a, b: bai.cross(a, b, dim=dim), left, right,
             torch_fn=lambda a, b: torch.cross(a, b, dim=dim), gradgrad=True)  # fmt: skip
    check_op(lambda a, b: a.cross(b, dim), left, right, gradcheck=False)


def test_cross_default_dim_warns_like_pytorch_and_picks_the_first_of_size_3():
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg"):
        check_op(lambda a, b: bai.cross(a, b), (3, 3, 2), (3, 3, 2),
                 torch_fn=lambda a, b: torch.cross(a, b), gradcheck=False)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = both(np.array([[1, 2, 3], [4, 5, 7]]))
        same(bai.cross(ours, ours.flip(1)), torch.cross(theirs, theirs.flip(1)))
        with pytest.raises(ShapeError, match=r"\[cross\] input of shape \(2, 4\) has no dim"):
            bai.cross(bai.ones(2, 4), bai.ones(2, 4))
    with pytest.raises(ShapeError, match=r"\[cross\] dimension 1 must have size 3"):
        bai.cross(bai.ones(2, 4), bai.ones(2, 4), dim=1)
    with pytest.raises(ShapeError, match=r"\[cross\] inputs need the same number of dim"):
        bai.cross(bai.ones(3), bai.ones(3, 3), dim=0)
    with pytest.raises(ShapeError, match=r"\[cross\] shapes \(2, 3\) and \(4, 3\) do not broad"):
        bai.cross(bai.ones(2, 3), bai.ones(4, 3), dim=1)
    with pytest.raises(DTypeError, match=r"\[cross\] is not defined for bool"):
        bai.cross(bai.ones(3, dtype=bai.bool), bai.ones(3, dtype=bai.bool), dim=0)


def test_cross_doc_example():
    torch = bai
    a = torch.randn(4, 3)
    b = torch.randn(4, 3)
    expected = np.cross(a.numpy(), b.numpy(), axis=1)
    np.testing.assert_allclose(torch.cross(a, b, dim=1).numpy(), expected, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(torch.cross(a, b).numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("left", "right"),
    [((), ()), ((), (2, 3)), ((2,), (3,)), ((2,), (2, 3)), ((2, 3), (3, 2)),
     ((2, 1, 3), (2, 2)), ((0, 2), (2, 3))],
    ids=str,
)  # fmt: skip
def test_kron_matches_pytorch(left, right):
    check_op(bai.kron, left, right, torch_fn=torch.kron, gradgrad=True)
    check_op(lambda a, b: a.kron(b), left, right, gradcheck=False)


def test_kron_doc_examples():
    torch = bai
    mat1 = torch.eye(2)
    mat2 = torch.ones(2, 2)
    assert torch.kron(mat1, mat2).tolist() == [
        [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]
    ]  # fmt: skip
    mat1 = torch.eye(2)
    mat2 = torch.arange(1, 5).reshape(2, 2)
    product = torch.kron(mat1, mat2)
    assert product.dtype == bai.float32
    assert product.tolist() == [
        [1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0], [0.0, 0.0, 3.0, 4.0]
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("left", "right", "dims"),
    [((3, 4, 5), (4, 5, 6), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0), ((), (), 0),
     ((3, 4, 5), (4, 3, 2), ([1, 0], [0, 1])), ((3, 5, 4, 6), (6, 4, 5, 3), ([2, 1, 3], [1, 2, 0])),
     ((2, 3), (3, 4), [[-1], [0]]), ((2, 1), (3, 4), ([1], [0])), ((2, 3), (1, 4), ([1], [0])),
     ((2, 0), (0, 3), 1), ((2, 3), (3, 2), ([1, 0], [0, 1]))],
    ids=str,
)  # fmt: skip
def test_tensordot_matches_pytorch(left, right, dims):
    check_op(lambda a, b: bai.tensordot(a, b, dims), left, right,
             torch_fn=lambda a, b: torch.tensordot(a, b, dims), gradgrad=True)  # fmt: skip


def test_tensordot_takes_dims_as_a_tensor_and_refuses_bad_dims():
    check_op(lambda a, b: bai.tensordot(a, b, dims=bai.tensor(1)), (2, 3), (3, 4),
             torch_fn=lambda a, b: torch.tensordot(a, b, dims=torch.tensor(1)))  # fmt: skip
    check_op(lambda a, b: bai.tensordot(a, b, bai.tensor([[1], [0]])), (2, 3), (3, 4),
             torch_fn=lambda a, b: torch.tensordot(a, b, torch.tensor([[1], [0]])))  # fmt: skip
    x, y = bai.ones(2, 3), bai.ones(3, 4)
    with pytest.raises(ShapeError, match=r"\[tensordot\] cannot contract 3 dimensions"):
        bai.tensordot(x, y, 3)
    with pytest.raises(ArgumentError, match=r"\[tensordot\] dims must be non-negative, got -1"):
        bai.tensordot(x, y, -1)
    with pytest.raises(ShapeError, match=r"\[tensordot\] contracted dimensions must match"):
        bai.tensordot(x, bai.ones(2, 4), 1)
    with pytest.raises(ShapeError, match=r"\[tensordot\] the two dimension lists must have"):
        bai.tensordot(x, y, ([1, 0], [0]))
    with pytest.raises(ShapeError, match=r"\[tensordot\] dimensions \[1, 1\] of \(2, 3\) repeat"):
        bai.tensordot(x, bai.ones(3, 3), ([1, 1], [0, 1]))


def test_tensordot_doc_examples():
    torch = bai
    a = torch.arange(60.0).reshape(3, 4, 5)
    b = torch.arange(24.0).reshape(4, 3, 2)
    assert torch.tensordot(a, b, dims=([1, 0], [0, 1])).tolist() == [
        [4400.0, 4730.0], [4532.0, 4874.0], [4664.0, 5018.0], [4796.0, 5162.0], [4928.0, 5306.0]
    ]  # fmt: skip
    a = torch.randn(3, 4, 5)
    b = torch.randn(4, 5, 6)
    c = torch.tensordot(a, b, dims=2).cpu()
    np.testing.assert_allclose(c.numpy(), np.tensordot(a.numpy(), b.numpy(), 2), rtol=1e-5)
    a = torch.randn(3, 5, 4, 6)
    b = torch.randn(6, 4, 5, 3)
    c = torch.tensordot(a, b, dims=([2, 1, 3], [1, 2, 0]))
    expected = np.tensordot(a.numpy(), b.numpy(), ([2, 1, 3], [1, 2, 0]))
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("left", "right"), [((3,), (3,)), ((2, 3), (4, 5, 3)), ((), (2, 3)), ((2, 3), ()),
                        ((0, 3), (2, 3)), ((2, 0), (4, 0))], ids=str
)  # fmt: skip
def test_inner_matches_pytorch(left, right):
    check_op(bai.inner, left, right, torch_fn=torch.inner, gradgrad=True)
    check_op(lambda a, b: a.inner(b), left, right, gradcheck=False)


def test_inner_doc_examples_and_errors():
    torch = bai
    assert torch.inner(torch.tensor([1, 2, 3]), torch.tensor([0, 2, 1])).item() == 7
    a = torch.randn(2, 3)
    b = torch.randn(2, 4, 3)
    expected = np.inner(a.numpy(), b.numpy())
    np.testing.assert_allclose(torch.inner(a, b).numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(torch.inner(a, torch.tensor(2)).numpy(), 2 * a.numpy())
    with pytest.raises(ShapeError, match=r"\[inner\] the last dimensions must match"):
        bai.inner(bai.ones(2, 3), bai.ones(4, 5, 2))


def test_mv_matches_pytorch():
    check_op(bai.mv, (2, 3), (3,), torch_fn=torch.mv, gradgrad=True)
    check_op(lambda m, v: m.mv(v), (0, 3), (3,), gradcheck=False)
    check_op(lambda m, v: m.mv(v), (2, 0), (0,), gradcheck=False)
    with pytest.raises(ShapeError, match=r"\[mv\] expects a matrix \(n, m\) and a vector"):
        bai.mv(bai.ones(2, 3), bai.ones(2))


def test_mv_doc_example():
    torch = bai
    mat = torch.randn(2, 3)
    vec = torch.randn(3)
    np.testing.assert_allclose(torch.mv(mat, vec).numpy(), mat.numpy() @ vec.numpy(), rtol=1e-5)


SCALES = [dict(), dict(beta=0.5, alpha=2.0), dict(beta=0, alpha=-1.5), dict(alpha=0.0)]


@pytest.mark.parametrize("scales", SCALES, ids=str)
@pytest.mark.parametrize(
    ("name", "shapes"),
    [("addmm", [(2, 4), (2, 3), (3, 4)]), ("addmm", [(4,), (2, 3), (3, 4)]),
     ("addmm", [(2, 1), (2, 3), (3, 4)]), ("addmm", [(), (2, 3), (3, 4)]),
     ("addmv", [(2,), (2, 3), (3,)]), ("addmv", [(1,), (2, 3), (3,)]),
     ("addmv", [(), (2, 3), (3,)]), ("baddbmm", [(2, 3, 4), (2, 3, 5), (2, 5, 4)]),
     ("baddbmm", [(3, 1), (2, 3, 5), (2, 5, 4)]), ("addmm", [(2, 4), (2, 0), (0, 4)])],
    ids=str,
)  # fmt: skip
def test_scaled_products_match_pytorch(name, shapes, scales):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    check_op(lambda *xs: ours(*xs, **scales), *shapes, torch_fn=lambda *xs: theirs(*xs, **scales),
             gradgrad=True)  # fmt: skip
    check_op(lambda x, *rest: getattr(x, name)(*rest, **scales), *shapes, gradcheck=False)


def test_beta_zero_ignores_nan_and_inf_in_the_input():
    for name, shapes in (("addmm", [(2, 3), (3, 3)]), ("addmv", [(2, 3), (3,)]),
                         ("baddbmm", [(2, 2, 3), (2, 3, 3)])):  # fmt: skip
        rng = np.random.default_rng(1)
        operands = [rng.standard_normal(s) for s in shapes]
        out_shape = getattr(torch, name)(
            torch.zeros(1, dtype=torch.float64), *map(torch.tensor, operands)
        ).shape
        poisoned = np.full(tuple(out_shape), np.nan)
        poisoned.flat[0] = np.inf
        x = bai.tensor(poisoned, requires_grad=True)
        ours = getattr(bai, name)(x, *map(bai.tensor, operands), beta=0)
        theirs = getattr(torch, name)(torch.tensor(poisoned), *map(torch.tensor, operands), beta=0)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())
        ours.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(poisoned))


def test_scaled_products_of_integers_and_errors():
    m, t = both(np.ones((2, 3), dtype=np.int64))
    w, u = both(np.arange(9).reshape(3, 3))
    same(bai.addmm(m, m, w, beta=2, alpha=3), torch.addmm(t, t, u, beta=2, alpha=3))
    with pytest.raises(ArgumentError, match=r"\[addmm\] beta=0.5 is not a whole number"):
        bai.addmm(m, m, w, beta=0.5)
    with pytest.raises(ArgumentError, match=r"\[baddbmm\] alpha=inf is not a whole number"):
        bai.baddbmm(m[None], m[None], w[None], alpha=float("inf"))
    with pytest.raises(ShapeError, match=r"\[addmm\] input of shape \(2, 2\) does not broad"):
        bai.addmm(bai.ones(2, 2), bai.ones(2, 3), bai.ones(3, 3))
    with pytest.raises(ShapeError, match=r"\[addmm\] input of shape \(2, 3, 3\) does not"):
        bai.addmm(bai.ones(2, 3, 3), bai.ones(2, 3), bai.ones(3, 3))
    with pytest.raises(ShapeError, match=r"\[addmm\] cannot multiply \(2, 3\) by \(2, 3\)"):
        bai.addmm(bai.ones(2, 3), bai.ones(2, 3), bai.ones(2, 3))
    with pytest.raises(ShapeError, match=r"\[addmv\] cannot multiply \(2, 3\) by \(2,\)"):
        bai.addmv(bai.ones(2), bai.ones(2, 3), bai.ones(2))
    with pytest.raises(ShapeError, match=r"\[baddbmm\] cannot multiply \(2, 3, 4\) by \(3, 4"):
        bai.baddbmm(bai.ones(3), bai.ones(2, 3, 4), bai.ones(3, 4, 3))


def test_scaled_products_doc_examples():
    torch = bai
    M = torch.randn(2, 3)
    mat1 = torch.randn(2, 3)
    mat2 = torch.randn(3, 3)
    expected = M.numpy() + mat1.numpy() @ mat2.numpy()
    np.testing.assert_allclose(torch.addmm(M, mat1, mat2).numpy(), expected, rtol=1e-5, atol=1e-6)
    M = torch.randn(2)
    mat = torch.randn(2, 3)
    vec = torch.randn(3)
    expected = M.numpy() + mat.numpy() @ vec.numpy()
    np.testing.assert_allclose(torch.addmv(M, mat, vec).numpy(), expected, rtol=1e-5, atol=1e-6)
    M = torch.randn(10, 3, 5)
    batch1 = torch.randn(10, 3, 4)
    batch2 = torch.randn(10, 4, 5)
    assert torch.baddbmm(M, batch1, batch2).size() == (10, 3, 5)


# ----- frozen graphs --------------------------------------------------------------------------


def test_frozen_composites_agree_with_eager_on_new_inputs():
    from buildingai.graph import freeze

    def arranged(x):  # (4, 3, 3)
        rows = bai.diagonal(x, 1, -2, -1).sum(-1)
        turned = bai.rot90(x, 1, (1, 2)).diff(dim=0)
        mixed = bai.tensordot(x, x, dims=([1, 2], [2, 1]))
        stacked = bai.hstack([x[0], bai.diag_embed(x[1, 0], -1)[:3]])
        return rows.sum() + turned.sum() + bai.kron(mixed, x[0]).sum() + stacked.sum()

    def products(x):  # (4, 3, 3)
        affine = bai.baddbmm(x, x, x.transpose(1, 2), beta=0.5, alpha=2.0)
        cross = bai.cross(x[:, 0], x[:, 1], dim=1)
        picked = bai.take_along_dim(x, bai.tensor([[[2], [0], [1]]]), dim=2)
        return affine.mean(0) + bai.block_diag(cross[0], x[0]).sum() + picked.sum()

    rng = np.random.default_rng(3)
    for fn in (arranged, products):
        frozen = freeze(fn, [bai.TensorSpec((4, 3, 3), "float32")])
        for _ in range(2):
            x = rng.standard_normal((4, 3, 3)).astype(np.float32)
            np.testing.assert_allclose(frozen(x).numpy(), fn(bai.tensor(x)).numpy(), rtol=1e-5)


def test_frozen_graph_with_a_symbolic_batch_and_its_refusals():
    from buildingai.graph import freeze
    from buildingai.graph.graph import GraphError

    def batched(x):  # (B, 3, 3): the matrix sizes are fixed, the batch is not
        return bai.diagonal(x, 0, 1, 2) + bai.cross(x[:, 0], x[:, 2], dim=-1)

    frozen = freeze(batched, [bai.TensorSpec((None, 3, 3), "float32")])
    x = np.random.default_rng(4).standard_normal((7, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(frozen(x).numpy(), batched(bai.tensor(x)).numpy(), rtol=1e-6)

    def data_dependent(x):  # the positions depend on the values
        return bai.take(x, bai.argmax(x, dim=1))

    with pytest.raises(GraphError):
        freeze(data_dependent, [bai.TensorSpec((3, 4), "float32")])
    # a diagonal of symbolic size would be frozen for one size: refused, not baked in
    with pytest.raises(GraphError, match=r"\[diagonal\] rows is a symbolic size"):
        freeze(lambda x: bai.diagonal(x), [bai.TensorSpec((None, None), "float32")])
