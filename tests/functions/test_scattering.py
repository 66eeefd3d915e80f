"""The scatter family (``scatter``, ``scatter_reduce``, ``index_add``, ``index_copy``,
``index_fill``, ``index_put``, ``put``, ``masked_scatter``, ``fill_diagonal_``), ``logit`` and
``renorm``, and their in-place forms, against PyTorch in float64: values, gradients, repeated
indices, negative dims, in-place semantics, PyTorch's documentation examples and frozen graphs."""

import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, AutogradError, DTypeError, IndexingError, ShapeError
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError

from ..helpers import check_op, constant

torch = pytest.importorskip("torch")


def _pair(array, requires_grad=False):
    """The same values as a BuildingAI and a torch tensor."""
    array = np.asarray(array)
    grad = requires_grad and array.dtype.kind == "f"
    return (
        bai.tensor(array.copy(), requires_grad=grad),
        torch.tensor(array.copy(), requires_grad=grad),
    )


def _same(ours, theirs, atol=1e-12):
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours.numpy(), theirs, atol=atol, rtol=1e-10)


# ----- scatter ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x_shape, dim, index, src_shape",
    [
        ((3, 4), 0, [[0, 2, 1, 0], [2, 0, 0, 1]], (2, 4)),
        ((3, 4), 1, [[0, 3], [1, 1], [2, 0]], (3, 2)),
        ((3, 4), -1, [[3, 3, 3], [0, 1, 0]], (2, 3)),  # repeats, 2 of the 3 rows
        ((2, 3, 4), -2, [[[0, 2], [2, 2]], [[1, 1], [0, 0]]], (2, 2, 2)),
        ((5,), 0, [4, 4, 0, 4], (4,)),
    ],
    ids=["dim0", "dim1", "dim-1-repeats", "3d-dim-2", "1d-repeats"],
)
def test_scatter_values_and_gradients_match_pytorch(x_shape, dim, index, src_shape):
    # with repeated indices PyTorch writes the last value along dim, and src's gradient is
    # the output gradient gathered at every position of the index, the overwritten ones too
    check_op(
        lambda x, i, s: x.scatter(dim, i, s),
        x_shape,
        constant(index),
        src_shape,
        gradcheck=False,
        gradgrad=True,
    )
    check_op(
        lambda x, i, s: bai.scatter(x, dim, i, s),
        x_shape,
        constant(index),
        src_shape,
        torch_fn=lambda x, i, s: x.scatter(dim, i, s),
        gradcheck=False,
    )


def test_scatter_reads_only_the_leading_block_of_a_larger_src():
    # PyTorch's values; its backward refuses a src larger than the index, so the gradient is
    # compared on the block read (the rest of src takes no part: zero)
    index, weight = np.array([[3, 3, 0], [0, 1, 0]]), np.random.default_rng(8).normal(size=(3, 4))
    (x, tx), (s, ts) = _pair(np.zeros((3, 4)), True), _pair(np.arange(15.0).reshape(3, 5), True)
    for name in ("scatter", "scatter_add"):
        ours = getattr(x, name)(-1, bai.tensor(index), s)
        _same(ours, getattr(tx, name)(-1, torch.tensor(index), ts))
        (ours * bai.tensor(weight)).sum().backward()
        block = ts[:2, :3].detach().requires_grad_()
        theirs = getattr(tx, name)(-1, torch.tensor(index), block)
        (theirs * torch.tensor(weight)).sum().backward()
        expected = np.zeros((3, 5))
        expected[:2, :3] = block.grad.numpy()
        np.testing.assert_allclose(s.grad.numpy(), expected)
        s.grad = None
    reduced = x.scatter_reduce(-1, bai.tensor(index), s, "amin", include_self=False)
    _same(reduced, tx.scatter_reduce(-1, torch.tensor(index), ts, "amin", include_self=False))


@pytest.mark.parametrize("value", [0.25, -3, 2.0])
def test_scatter_of_a_value_matches_pytorch(value):
    index = [[1, 1], [0, 2]]
    check_op(lambda x, i: x.scatter(1, i, value), (2, 3), constant(index))
    check_op(lambda x, i: x.scatter(1, i, value=value), (2, 3), constant(index))
    ours, theirs = _pair(np.arange(6).reshape(2, 3))
    _same(ours.scatter(1, bai.tensor(index), 2.7), theirs.scatter(1, torch.tensor(index), 2.7))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("with_src", [True, False], ids=["src", "value"])
def test_scatter_with_reduce_matches_pytorch(reduce, with_src):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(3, 4))
    index = np.array([[0, 0, 3], [2, 2, 2], [1, 0, 1]])
    src = rng.normal(size=(3, 3))
    ours, theirs = _pair(data)
    operand = (_pair(src)[0], torch.tensor(src)) if with_src else (1.5, 1.5)
    with warnings.catch_warnings():  # PyTorch deprecates reduce with a src tensor
        warnings.simplefilter("ignore", UserWarning)
        expected = theirs.scatter(1, torch.tensor(index), operand[1], reduce=reduce)
    _same(ours.scatter(1, bai.tensor(index), operand[0], reduce=reduce), expected)


def test_scatter_with_reduce_has_gradients_where_pytorch_has_none():
    """PyTorch does not differentiate scatter with reduce; here it is sums and products, which
    are: the gradients equal scatter_reduce's, which PyTorch does differentiate."""
    index = [[0, 0, 2], [1, 1, 1]]
    check_op(
        lambda x, i, s: x.scatter(1, i, s, reduce="add"),
        (2, 3),
        constant(index),
        (2, 3),
        torch_fn=lambda x, i, s: x.scatter_reduce(1, i, s, "sum"),
    )
    check_op(
        lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
        (2, 3),
        constant(index),
        (2, 3),
        torch_fn=lambda x, i, s: x.scatter_reduce(1, i, s, "prod"),
    )


def test_scatter_of_zero_d_and_empty_indices_matches_pytorch():
    for library in (bai, torch):
        x = library.tensor(1.0)
        assert x.scatter(0, library.tensor(0), library.tensor(5.0)).item() == 5.0
        assert x.scatter(0, library.tensor([0]), library.tensor([5.0])).item() == 5.0
        assert x.scatter(-1, library.tensor(0), 7.0).item() == 7.0
    data = np.arange(6.0).reshape(2, 3)
    for empty in (np.zeros((0, 3), np.int64), np.zeros(0, np.int64)):
        ours, theirs = _pair(data)
        result = ours.scatter(0, bai.tensor(empty), bai.ones(3, 3, dtype="float64"))
        _same(result, theirs.scatter(0, torch.tensor(empty), torch.ones(3, 3).double()))
        assert not np.shares_memory(result.numpy(), ours.numpy())


def test_scatter_refuses_what_pytorch_refuses():
    x = bai.zeros(2, 3)
    with pytest.raises(DTypeError, match=r"^\[scatter\] src has dtype float64"):
        x.scatter(1, bai.tensor([[0], [1]]), bai.ones(2, 1, dtype="float64"))
    with pytest.raises(IndexingError, match=r"^\[scatter\] index -1 is out of range"):
        x.scatter(1, bai.tensor([[0], [-1]]), 0.5)
    with pytest.raises(IndexingError, match=r"^\[scatter\] index 3 is out of range"):
        x.scatter(1, bai.tensor([[0], [3]]), 0.5)
    with pytest.raises(ShapeError, match=r"^\[scatter\] index has 1 dimension"):
        x.scatter(1, bai.tensor([0, 1]), 0.5)
    with pytest.raises(ShapeError, match=r"^\[scatter\] index has 2 dimensions but the src"):
        x.scatter(1, bai.tensor([[0], [1]]), bai.tensor(0.5))
    with pytest.raises(ShapeError, match=r"^\[scatter\] index size 3 exceeds the input size 2"):
        x.scatter(1, bai.tensor([[0], [1], [0]]), 0.5)
    with pytest.raises(ArgumentError, match=r"^\[scatter\] reduce must be 'add' or 'multiply'"):
        x.scatter(1, bai.tensor([[0], [1]]), 0.5, reduce="mean")
    with pytest.raises(ArgumentError, match=r"^\[scatter\] takes src .* not both"):
        x.scatter(1, bai.tensor([[0], [1]]), bai.ones(2, 1), value=2.0)
    with pytest.raises(DTypeError, match=r"^\[scatter\] index must hold integers"):
        x.scatter(1, bai.tensor([[0.0], [1.0]]), 0.5)


# ----- in place: scatter_, scatter_add_ -----------------------------------------------------------


def test_scatter_in_place_returns_self_bumps_the_version_and_matches_pytorch():
    data = np.random.default_rng(1).normal(size=(3, 4))
    index, src = np.array([[0, 1], [3, 3], [2, 0]]), np.arange(6.0).reshape(3, 2)
    ours, theirs = _pair(data)
    before = ours.version
    assert ours.scatter_(1, bai.tensor(index), bai.tensor(src)) is ours
    assert ours.version == before + 1
    theirs.scatter_(1, torch.tensor(index), torch.tensor(src))
    _same(ours, theirs)
    assert ours.scatter_(0, bai.tensor([[2, 0, 1, 1]]), -1.0, reduce="add") is ours
    theirs.scatter_(0, torch.tensor([[2, 0, 1, 1]]), -1.0, reduce="add")
    _same(ours, theirs)
    assert ours.scatter_add_(1, bai.tensor(index), bai.tensor(src)) is ours
    theirs.scatter_add_(1, torch.tensor(index), torch.tensor(src))
    _same(ours, theirs)
    assert ours.version == before + 3


@pytest.mark.parametrize(
    "method, args",
    [
        ("scatter_", (1, [[0], [1]], 0.5)),
        ("scatter_add_", (1, [[0], [1]], "src")),
        ("scatter_reduce_", (1, [[0], [1]], "src", "amax")),
        ("index_add_", (0, [1], "row")),
        ("index_copy_", (0, [1], "row")),
        ("index_fill_", (1, [0, 2], 0.0)),
        ("index_put_", ((np.array([0, 1]), np.array([2, 2])), "pair")),
        ("put_", ([0, 5], "pair")),
        ("masked_scatter_", ("mask", "source")),
        ("fill_diagonal_", (1.0,)),
        ("logit_", ()),
        ("renorm_", (2, 0, 1.0)),
    ],
)
def test_in_place_forms_refuse_a_leaf_that_requires_grad_as_pytorch_does(method, args):
    for library in (bai, torch):
        operands = {
            "src": library.ones(2, 1, dtype=library.float64),
            "row": library.ones(1, 3, dtype=library.float64),
            "pair": library.ones(2, dtype=library.float64),
            "mask": library.tensor([True, False, True]),
            "source": library.ones(6, dtype=library.float64),
        }
        call_args = [operands[a] if isinstance(a, str) and a in operands else a for a in args]
        call_args = [library.tensor(a) if isinstance(a, list) else a for a in call_args]
        if call_args and isinstance(call_args[0], tuple):
            call_args[0] = tuple(library.tensor(part) for part in call_args[0])
        leaf = library.full((2, 3), 0.5, dtype=library.float64, requires_grad=True)
        error = AutogradError if library is bai else RuntimeError
        with pytest.raises(error, match=rf"^\[{method}\]" if library is bai else None):
            getattr(leaf, method)(*call_args)
        with library.no_grad():  # the way optimizers write parameters
            assert getattr(leaf, method)(*call_args) is leaf


def test_in_place_scatter_inside_a_graph_gives_pytorch_gradients():
    rng = np.random.default_rng(2)
    data, src, weight = rng.normal(size=(3, 4)), rng.normal(size=(3, 2)), rng.normal(size=(3, 4))
    index = np.array([[0, 0], [3, 1], [2, 2]])
    (a, ta), (s, ts) = _pair(data, True), _pair(src, True)
    for library, x, source in ((bai, a, s), (torch, ta, ts)):
        y = x * 2
        y.scatter_(1, library.tensor(index), source)
        y.scatter_add_(0, library.tensor([[1, 1, 0, 2]]), (x * x)[:1])
        y.index_copy_(1, library.tensor([3, 0]), source.exp())
        y.masked_scatter_(library.tensor([True, False, False, True]), x.sin())
        y.scatter_reduce_(1, library.tensor(index), source * 3, "amax", include_self=False)
        (y * library.tensor(weight)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12)


def test_label_smoothing_spelling():
    """The Annotated Transformer's LabelSmoothing, as written (Variable aside)."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(5, 6)).astype(np.float32)
    labels = np.array([2, 1, 0, 3, 0])
    size, padding_idx, smoothing = 6, 0, 0.4
    confidence = 1.0 - smoothing
    results = []
    for torch_ in (bai, torch):
        x = torch_.tensor(logits).log_softmax(-1)
        target = torch_.tensor(labels)
        true_dist = x.data.clone()
        true_dist.fill_(smoothing / (size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), confidence)
        true_dist[:, padding_idx] = 0
        mask = torch_.nonzero(target.data == padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        results.append(true_dist.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


# ----- scatter_reduce -----------------------------------------------------------------------------


REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_values_and_gradients_match_pytorch(reduce, include_self):
    index = [[0, 0, 2, 2, 2], [3, 1, 1, 3, 1], [0, 1, 2, 3, 0]]
    check_op(
        lambda x, i, s: x.scatter_reduce(-1, i, s, reduce, include_self=include_self),
        (3, 4),
        constant(index),
        (3, 5),
        gradcheck=False,
        gradgrad=reduce in ("sum", "mean", "amax"),
    )
    check_op(
        lambda x, i, s: bai.scatter_reduce(x, 0, i, s, reduce, include_self=include_self),
        (2, 3),
        constant([[1, 1, 0], [1, 0, 0], [1, 1, 1]]),
        (3, 3),
        torch_fn=lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
        gradcheck=False,
    )


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
def test_scatter_reduce_gradients_at_ties_and_zeros_match_pytorch(reduce, include_self):
    # ties share the gradient evenly (x counted where it equals the result, even when it is
    # excluded, as PyTorch does); a single zero factor gets the product of the others
    data = np.array([[1.0, 0.0, 3.0, 2.0], [2.0, 2.0, 0.0, 0.0]])
    src = np.array([[3.0, 3.0, 1.0, 0.0, 5.0], [0.0, 2.0, 2.0, -1.0, 0.0]])
    index = np.array([[0, 0, 2, 1, 3], [1, 0, 0, 2, 3]])
    weight = np.random.default_rng(4).normal(size=(2, 4))
    (x, tx), (s, ts) = _pair(data, True), _pair(src, True)
    ours = x.scatter_reduce(1, bai.tensor(index), s, reduce, include_self=include_self)
    theirs = tx.scatter_reduce(1, torch.tensor(index), ts, reduce, include_self=include_self)
    _same(ours, theirs)
    (ours * bai.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_scatter_reduce_of_integers_and_nan_matches_pytorch(reduce, include_self, dtype):
    index = np.array([0, 0, 1, 2, 3, 0])
    if dtype == "float32":
        data = np.array([1.0, np.nan, 3.0, -7.0], dtype)
        src = np.array([5.0, 2.0, np.nan, -1.0, 1.0, -2.0], dtype)
    else:  # integer means round down (towards -inf), as in PyTorch
        data = np.array([1, 7, 3, -7], dtype)
        src = np.array([5, 2, 4, -1, 0, -4], dtype)
    (x, tx), (s, ts) = _pair(data), _pair(src)
    ours = x.scatter_reduce(0, bai.tensor(index), s, reduce, include_self=include_self)
    theirs = tx.scatter_reduce(0, torch.tensor(index), ts, reduce, include_self=include_self)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == theirs.numpy().dtype
    assert x.scatter_reduce_(0, bai.tensor(index), s, reduce, include_self=include_self) is x
    np.testing.assert_array_equal(x.numpy(), theirs.numpy())


def test_scatter_reduce_refuses_what_pytorch_refuses():
    x = bai.zeros(4)
    with pytest.raises(ArgumentError, match=r"^\[scatter_reduce\] reduce must be one of"):
        x.scatter_reduce(0, bai.tensor([0]), bai.ones(1), "max")
    with pytest.raises(DTypeError, match=r"^\[scatter_reduce\] src has dtype float64"):
        x.scatter_reduce(0, bai.tensor([0]), bai.ones(1, dtype="float64"), "sum")


# ----- index_add, index_copy, index_fill ----------------------------------------------------------


@pytest.mark.parametrize("alpha", [1, -2.5])
@pytest.mark.parametrize(
    "dim, index, source_shape",
    [(0, [0, 4, 2, 4], (4, 3)), (1, [2, 2, 0], (5, 3)), (-1, [1], (5, 1)), (-2, 3, (1, 3))],
    ids=["dim0-repeats", "dim1-repeats", "dim-1", "0-d-index"],
)
def test_index_add_values_and_gradients_match_pytorch(dim, index, source_shape, alpha):
    check_op(
        lambda x, i, s: x.index_add(dim, i, s, alpha=alpha),
        (5, 3),
        constant(index),
        source_shape,
        gradgrad=True,
    )
    check_op(
        lambda x, i, s: bai.index_add(x, dim, i, s, alpha=alpha),
        (5, 3),
        constant(index),
        source_shape,
        torch_fn=lambda x, i, s: x.index_add(dim, i, s, alpha=alpha),
    )


def test_index_add_of_integers_and_in_place_matches_pytorch():
    for alpha in (2, 2.5, -1.5):
        ours, theirs = _pair(np.arange(6).reshape(3, 2))
        index, source = np.array([0, 0]), np.array([[1, 2], [3, 4]])
        assert ours.index_add_(0, bai.tensor(index), bai.tensor(source), alpha=alpha) is ours
        theirs.index_add_(0, torch.tensor(index), torch.tensor(source), alpha=alpha)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert bai.tensor(1.0).index_add(0, bai.tensor([0]), bai.tensor(2.0)).item() == 3.0


@pytest.mark.parametrize(
    "dim, index, source_shape",
    [(0, [0, 4, 2], (3, 3)), (1, [2, 0, 2], (5, 3)), (-1, 1, (5, 1))],
    ids=["dim0", "dim1-repeats", "0-d-index"],
)
def test_index_copy_values_and_gradients_match_pytorch(dim, index, source_shape):
    check_op(
        lambda x, i, s: x.index_copy(dim, i, s),
        (5, 3),
        constant(index),
        source_shape,
        gradcheck=False,
        gradgrad=True,
    )
    check_op(
        lambda x, i, s: bai.index_copy(x, dim, i, s),
        (5, 3),
        constant(index),
        source_shape,
        torch_fn=lambda x, i, s: x.index_copy(dim, i, s),
        gradcheck=False,
    )


@pytest.mark.parametrize("value", [-1.5, 2, "tensor"])
@pytest.mark.parametrize(
    "dim, index",
    [(0, [0, -1, 0]), (1, [2]), (-1, 0), (0, np.zeros(0, np.int64))],
    ids=["dim0-negative-repeats", "dim1", "0-d-index", "empty"],
)
def test_index_fill_values_and_gradients_match_pytorch(dim, index, value):
    if value == "tensor" and np.min(index, initial=0) >= 0:
        # a 0-d tensor value receives the gradient of the filled slices once (PyTorch's
        # backward fails on negative indices, so those are compared on values below)
        check_op(lambda x, i, v: x.index_fill(dim, i, v), (4, 3), constant(index), ())
        check_op(
            lambda x, i, v: bai.index_fill(x, dim, i, v),
            (4, 3),
            constant(index),
            (),
            torch_fn=lambda x, i, v: x.index_fill(dim, i, v),
        )
    elif value != "tensor":
        check_op(lambda x, i: x.index_fill(dim, i, value), (4, 3), constant(index))
    ours, theirs = _pair(np.arange(12).reshape(4, 3))
    fill = bai.tensor(2.7) if value == "tensor" else value
    assert ours.index_fill_(dim, bai.tensor(index), fill) is ours
    theirs.index_fill_(dim, torch.tensor(index), torch.tensor(2.7) if value == "tensor" else value)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_index_ops_refuse_what_pytorch_refuses():
    x = bai.zeros(2, 3)
    with pytest.raises(ShapeError, match=r"^\[index_add\] index must be 0-d or 1-D"):
        x.index_add(1, bai.tensor([[1]]), bai.ones(2, 1))
    with pytest.raises(IndexingError, match=r"^\[index_add\] index -1 is out of range"):
        x.index_add(1, bai.tensor([-1]), bai.ones(2, 1))
    with pytest.raises(ShapeError, match=r"^\[index_add\] source has shape \(1, 2\)"):
        x.index_add(1, bai.tensor([2, 0]), bai.ones(1, 2))
    with pytest.raises(DTypeError, match=r"^\[index_add\] source has dtype float64"):
        x.index_add(1, bai.tensor([0]), bai.ones(2, 1, dtype="float64"))
    with pytest.raises(ShapeError, match=r"^\[index_copy\] source has shape \(3, 2\)"):
        x.index_copy(1, bai.tensor([2, 0]), bai.ones(3, 2))
    with pytest.raises(IndexingError, match=r"^\[index_copy\] index -1 is out of range"):
        x.index_copy(1, bai.tensor([-1]), bai.ones(2, 1))
    with pytest.raises(IndexingError, match=r"^\[index_fill\] index -4 is out of range"):
        x.index_fill(1, bai.tensor([-4]), 1.0)
    with pytest.raises(ShapeError, match=r"^\[index_fill\] value must be a number or a 0-d"):
        x.index_fill(1, bai.tensor([0]), bai.tensor([1.0]))


# ----- index_put, put, masked_scatter -------------------------------------------------------------


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize(
    "indices, values_shape",
    [
        (([0, 2, 0],), (3, 3)),
        (([0, 2, 0],), (3,)),  # broadcast over each row
        (([1, 1, 3], [0, 2, 0]), (3,)),
        (([-1, 0], [2, -3]), ()),
        (([True, False, True, False],), (2, 3)),
    ],
    ids=["rows-repeats", "rows-broadcast", "pairs-repeats", "negative", "mask"],
)
def test_index_put_values_and_gradients_match_pytorch(indices, values_shape, accumulate):
    constants = [constant(part) for part in indices]
    count = len(indices)

    def ours(x, *args):
        return x.index_put(tuple(args[:count]), args[count], accumulate=accumulate)

    def theirs(x, *args):
        return torch.index_put(x, tuple(args[:count]), args[count], accumulate=accumulate)

    # with repeats and no accumulation the last value stays; values' gradient is gathered
    check_op(
        ours, (4, 3), *constants, values_shape, gradcheck=False, gradgrad=True, torch_fn=theirs
    )
    check_op(
        lambda x, *args: bai.index_put(x, tuple(args[:count]), args[count], accumulate),
        (4, 3),
        *constants,
        values_shape,
        torch_fn=theirs,
        gradcheck=False,
    )


def test_index_put_in_place_matches_pytorch():
    ours, theirs = _pair(np.zeros((3, 2)))
    for library, x in ((bai, ours), (torch, theirs)):
        index = (library.tensor([0, 0, 2]),)
        assert x.index_put_(index, library.tensor([1.0, 2.0], dtype=library.float64)) is x
        assert library.index_put_(x, index, library.tensor(5.0).double(), True) is x
    _same(ours, theirs)
    assert ours.version == 2


def test_index_put_refuses_what_pytorch_refuses():
    x = bai.zeros(3, 2)
    with pytest.raises(DTypeError, match=r"^\[index_put\] values has dtype float64"):
        x.index_put((bai.tensor([1]),), bai.tensor(5.0, dtype="float64"))
    with pytest.raises(ShapeError, match=r"^\[index_put\] values of shape \(3,\) cannot be"):
        x.index_put((bai.tensor([1]),), bai.ones(3))
    with pytest.raises(IndexingError, match=r"^\[index_put\] indices\[0\] is None"):
        x.index_put((None, bai.tensor([1])), bai.tensor(5.0))
    with pytest.raises(IndexingError, match=r"^\[index_put\] index 3"):
        x.index_put((bai.tensor([3]),), bai.tensor(5.0))
    with pytest.raises(ArgumentError, match=r"^\[index_put\] indices must be a tuple"):
        x.index_put(bai.tensor([1]), bai.tensor(5.0))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize(
    "index", [[0, -1, 0, 4], [[5], [1]], 3], ids=["repeats-negative", "2d", "0-d"]
)
def test_put_values_and_gradients_match_pytorch(index, accumulate):
    size = np.asarray(index).size
    check_op(
        lambda x, i, s: x.put(i, s, accumulate),
        (2, 3),
        constant(index),
        np.asarray(index).shape,
        gradcheck=False,
        gradgrad=True,
    )
    check_op(
        lambda x, i, s: bai.put(x, i, s, accumulate=accumulate),
        (2, 3),
        constant(index),
        (size,),
        torch_fn=lambda x, i, s: x.put(i, s, accumulate),
        gradcheck=False,
    )


def test_put_in_place_and_its_refusals_match_pytorch():
    ours, theirs = _pair(np.arange(6).reshape(2, 3))
    assert ours.put_(bai.tensor([0, -1]), bai.tensor([9, 8]), accumulate=True) is ours
    theirs.put_(torch.tensor([0, -1]), torch.tensor([9, 8]), accumulate=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ShapeError, match=r"^\[put\] source has 3 elements but index has 2"):
        ours.put(bai.tensor([0, 1]), bai.tensor([1, 2, 3]))
    with pytest.raises(IndexingError, match=r"^\[put\] index 6 is out of range"):
        ours.put(bai.tensor([6]), bai.tensor([1]))


@pytest.mark.parametrize(
    "x_shape, mask",
    [
        ((2, 3), [[True, False, True], [False, True, True]]),
        ((2, 3), [True, False, True]),  # broadcast over the rows
        ((3,), [[True, False, True], [False, True, True]]),  # the input broadcast (out of place)
        ((2, 3), [[False, False, False], [False, False, False]]),
    ],
    ids=["full", "mask-broadcast", "input-broadcast", "none"],
)
def test_masked_scatter_values_and_gradients_match_pytorch(x_shape, mask):
    # source's elements beyond the mask's count are unused and get a zero gradient
    check_op(lambda x, m, s: x.masked_scatter(m, s), x_shape, constant(mask), (2, 5), gradgrad=True)
    check_op(
        lambda x, m, s: bai.masked_scatter(x, m, s),
        x_shape,
        constant(mask),
        (2, 5),
        torch_fn=lambda x, m, s: x.masked_scatter(m, s),
    )


def test_masked_scatter_in_place_and_its_refusals_match_pytorch():
    ours, theirs = _pair(np.zeros((2, 3)))
    mask, source = np.array([True, False, True]), np.arange(10.0)
    assert ours.masked_scatter_(bai.tensor(mask), bai.tensor(source)) is ours
    theirs.masked_scatter_(torch.tensor(mask), torch.tensor(source))
    _same(ours, theirs)
    with pytest.raises(ShapeError, match=r"^\[masked_scatter_\]"):
        bai.zeros(3).masked_scatter_(bai.ones(2, 3, dtype="bool"), bai.ones(6))
    with pytest.raises(ShapeError, match=r"^\[masked_scatter\] the mask selects 2 elements"):
        bai.zeros(3).masked_scatter(bai.tensor([True, False, True]), bai.ones(1))
    with pytest.raises(DTypeError, match=r"^\[masked_scatter\] the mask must be boolean"):
        bai.zeros(3).masked_scatter(bai.tensor([1, 0, 1]), bai.ones(3))
    with pytest.raises(DTypeError, match=r"^\[masked_scatter\] source has dtype float64"):
        bai.zeros(3).masked_scatter(bai.tensor([True, False, True]), bai.ones(3).double())


# ----- fill_diagonal_ -----------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (7, 3), (3, 5), (4, 3), (5, 3), (3, 3, 3), (0, 2)])
def test_fill_diagonal_matches_pytorch(shape, wrap):
    data = np.random.default_rng(5).normal(size=shape)
    ours, theirs = _pair(data)
    assert ours.fill_diagonal_(-2.5, wrap=wrap) is ours
    theirs.fill_diagonal_(-2.5, wrap=wrap)
    _same(ours, theirs)
    assert ours.version == 1
    integers_ours, integers_theirs = _pair(np.zeros(shape, np.int64))
    integers_ours.fill_diagonal_(bai.tensor(2.7), wrap=wrap)
    integers_theirs.fill_diagonal_(2.7, wrap=wrap)
    np.testing.assert_array_equal(integers_ours.numpy(), integers_theirs.numpy())


def test_fill_diagonal_gradient_and_refusals_match_pytorch():
    check_op(lambda x: (x * 1).fill_diagonal_(5.0, wrap=True), (5, 2), gradgrad=True)
    with pytest.raises(ShapeError, match=r"^\[fill_diagonal_\] a tensor of more than 2"):
        bai.zeros(3, 4, 3).fill_diagonal_(1.0)
    with pytest.raises(ShapeError, match=r"^\[fill_diagonal_\] needs at least 2 dimensions"):
        bai.zeros(3).fill_diagonal_(1.0)


# ----- logit and renorm ---------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [None, 0.1, 0.0, 1e-6])
def test_logit_values_and_gradients_match_pytorch(eps):
    inside = np.array([0.05, 0.3, 0.5, 0.93])
    check_op(lambda x: x.logit(eps), constant(inside, requires_grad=True), gradgrad=True)
    check_op(
        lambda x: bai.logit(x, eps=eps),
        constant(inside, requires_grad=True),
        torch_fn=lambda x: torch.logit(x, eps=eps),
    )
    # at and beyond the ends: inf, nan and (with eps) clamped values and zero gradients
    edges = np.array([-0.5, 0.0, 1.0, 1.5, 0.97])
    ours, theirs = _pair(edges, requires_grad=True)
    with np.errstate(all="ignore"):
        ours_out = bai.logit(ours, eps)
        ours_out.backward(bai.ones(5, dtype="float64"))
    theirs_out = torch.logit(theirs, eps)
    theirs_out.backward(torch.ones(5, dtype=torch.float64))
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_logit_of_integers_and_in_place_matches_pytorch():
    with np.errstate(all="ignore"):
        _same(bai.logit(bai.tensor([0, 1, 2])), torch.logit(torch.tensor([0, 1, 2])))
    _same(bai.tensor([0, 1, 2]).logit(0.2), torch.tensor([0, 1, 2]).logit(0.2), atol=1e-6)
    ours, theirs = _pair(np.array([0.2, 0.7]))
    assert ours.logit_() is ours and bai.logit_(ours, 0.1) is ours
    theirs.logit_()
    torch.logit_(theirs, 0.1)
    _same(ours, theirs)
    with pytest.raises(DTypeError, match=r"^\[logit_\]"):
        bai.tensor([0, 1]).logit_()


@pytest.mark.parametrize("p", [1, 2, 3.5, 0.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm_values_and_gradients_match_pytorch(p, dim):
    data = np.random.default_rng(6).normal(size=(3, 4, 2))
    check_op(lambda x: x.renorm(p, dim, 1.5), constant(data, requires_grad=True), gradgrad=True)
    data[1] = 0.0  # a zero slice: norm 0, below maxnorm (PyTorch's second derivative is nan)
    check_op(lambda x: x.renorm(p, dim, 1.5), constant(data, requires_grad=True))
    # maxnorm 0 scales every nonzero slice to zero (no finite differences: a jump at zero)
    check_op(
        lambda x: bai.renorm(x, p, dim, 0.0),
        constant(data, requires_grad=True),
        torch_fn=lambda x: torch.renorm(x, p, dim, 0.0),
        gradcheck=False,
    )


def test_renorm_in_place_and_its_refusals_match_pytorch():
    ours, theirs = _pair(np.arange(12.0).reshape(3, 4))
    assert ours.renorm_(2, 0, 5.0) is ours
    theirs.renorm_(2, 0, 5.0)
    _same(ours, theirs)
    with pytest.raises(ArgumentError, match=r"^\[renorm\] p must be positive"):
        ours.renorm(0, 0, 1.0)
    with pytest.raises(ArgumentError, match=r"^\[renorm\] maxnorm must be >= 0"):
        ours.renorm(2, 0, -1.0)
    with pytest.raises(ShapeError, match=r"^\[renorm\] the input needs at least 2 dimensions"):
        bai.ones(3).renorm(2, 0, 1.0)
    with pytest.raises(DTypeError, match=r"^\[renorm\] needs a floating input"):
        bai.ones(3, 3, dtype="int64").renorm(2, 0, 1.0)


# ----- PyTorch's documentation examples -----------------------------------------------------------


def test_documentation_examples():
    """Each example's lines as PyTorch's documentation writes them, the printed tensor after."""
    torch = bai
    # fmt: off
    src = torch.arange(1, 11).reshape((2, 5))
    index = torch.tensor([[0, 1, 2, 0]])
    out = torch.zeros(3, 5, dtype=src.dtype).scatter_(0, index, src)
    _printed(out, [[1, 0, 0, 4, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0]])
    index = torch.tensor([[0, 1, 2], [0, 1, 4]])
    out = torch.zeros(3, 5, dtype=src.dtype).scatter_(1, index, src)
    _printed(out, [[1, 2, 3, 0, 0], [6, 7, 0, 0, 8], [0, 0, 0, 0, 0]])
    out = torch.full((2, 4), 2.).scatter_(1, torch.tensor([[2], [3]]),
               1.23, reduce='multiply')
    _printed(out, [[2.0000, 2.0000, 2.4600, 2.0000], [2.0000, 2.0000, 2.0000, 2.4600]])
    out = torch.full((2, 4), 2.).scatter_(1, torch.tensor([[2], [3]]),
               1.23, reduce='add')
    _printed(out, [[2.0000, 2.0000, 3.2300, 2.0000], [2.0000, 2.0000, 2.0000, 3.2300]])

    src = torch.ones((2, 5))
    index = torch.tensor([[0, 1, 2, 0, 0]])
    out = torch.zeros(3, 5, dtype=src.dtype).scatter_add_(0, index, src)
    _printed(out, [[1., 0., 0., 1., 1.], [0., 1., 0., 0., 0.], [0., 0., 1., 0., 0.]])
    index = torch.tensor([[0, 1, 2, 0, 0], [0, 1, 2, 2, 2]])
    out = torch.zeros(3, 5, dtype=src.dtype).scatter_add_(0, index, src)
    _printed(out, [[2., 0., 0., 1., 1.], [0., 2., 0., 0., 0.], [0., 0., 2., 1., 1.]])

    src = torch.tensor([1., 2., 3., 4., 5., 6.])
    index = torch.tensor([0, 1, 0, 1, 2, 1])
    input = torch.tensor([1., 2., 3., 4.])
    _printed(input.scatter_reduce(0, index, src, reduce="sum"), [5., 14., 8., 4.])
    _printed(input.scatter_reduce(0, index, src, reduce="sum", include_self=False),
             [4., 12., 5., 4.])
    input2 = torch.tensor([5., 4., 3., 2.])
    _printed(input2.scatter_reduce(0, index, src, reduce="amax"), [5., 6., 5., 2.])
    _printed(input2.scatter_reduce(0, index, src, reduce="amax", include_self=False),
             [3., 6., 5., 2.])

    x = torch.ones(5, 3)
    t = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=torch.float)
    index = torch.tensor([0, 4, 2])
    _printed(x.index_add_(0, index, t),
             [[2., 3., 4.], [1., 1., 1.], [8., 9., 10.], [1., 1., 1.], [5., 6., 7.]])
    _printed(x.index_add_(0, index, t, alpha=-1), [[1., 1., 1.]] * 5)

    x = torch.zeros(5, 3)
    t = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=torch.float)
    index = torch.tensor([0, 4, 2])
    _printed(x.index_copy_(0, index, t),
             [[1., 2., 3.], [0., 0., 0.], [7., 8., 9.], [0., 0., 0.], [4., 5., 6.]])

    x = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=torch.float)
    index = torch.tensor([0, 2])
    _printed(x.index_fill_(1, index, -1), [[-1., 2., -1.], [-1., 5., -1.], [-1., 8., -1.]])

    src = torch.tensor([[4, 3, 5],
                        [6, 7, 8]])
    _printed(src.put_(torch.tensor([1, 3]), torch.tensor([9, 10])), [[4, 9, 5], [10, 7, 8]])

    self = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    mask = torch.tensor(
        [[0, 0, 0, 1, 1], [1, 1, 0, 1, 1]],
        dtype=torch.bool,
    )
    source = torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    _printed(self.masked_scatter_(mask, source), [[0, 0, 0, 0, 1], [2, 3, 0, 4, 5]])

    a = torch.zeros(3, 3)
    _printed(a.fill_diagonal_(5), [[5., 0., 0.], [0., 5., 0.], [0., 0., 5.]])
    b = torch.zeros(7, 3)
    _printed(b.fill_diagonal_(5), [[5., 0., 0.], [0., 5., 0.], [0., 0., 5.]] + [[0., 0., 0.]] * 4)
    c = torch.zeros(7, 3)
    _printed(c.fill_diagonal_(5, wrap=True),
             [[5., 0., 0.], [0., 5., 0.], [0., 0., 5.], [0., 0., 0.],
              [5., 0., 0.], [0., 5., 0.], [0., 0., 5.]])

    x = torch.ones(3, 3)
    x[1].fill_(2)
    x[2].fill_(3)
    _printed(x, [[1., 1., 1.], [2., 2., 2.], [3., 3., 3.]])
    _printed(torch.renorm(x, 1, 0, 5),
             [[1.0000, 1.0000, 1.0000], [1.6667, 1.6667, 1.6667], [1.6667, 1.6667, 1.6667]])
    # fmt: on


def _printed(tensor, shown):
    """``tensor`` equals what the documentation prints (to the 4 decimals it shows)."""
    np.testing.assert_allclose(tensor.numpy(), shown, atol=5e-5, rtol=0)


# ----- frozen graphs ------------------------------------------------------------------------------


def test_constant_indices_freeze_and_give_eager_results_on_new_inputs():
    rows = bai.tensor([[0, 2, 2], [1, 1, 0], [3, 0, 1]])
    slots = bai.tensor([3, 0, 3])

    def scattered(x):  # (4, 3)
        written = x.scatter(0, rows, x[:3] * 2).scatter(1, rows[:, 1:2], 0.5)
        reduced = x.scatter_reduce(0, rows, x[1:], "amax", include_self=False)
        return written + reduced.scatter_reduce(0, rows, x[:3], "mean")

    def added(x):  # (4, 3)
        summed = x.index_add(0, slots, x[:3], alpha=-2.0)
        mask = bai.tensor([[True, False, True]])
        return summed.index_copy(1, bai.tensor([2, 0]), x[:, :2]).masked_scatter(mask, x)

    def in_place(x):  # (4, 3)
        y = x.clone()
        y.fill_diagonal_(0.0, wrap=True)  # positions from the (fixed) shape
        y.index_put_((bai.tensor([0, 3]), bai.tensor([1, 1])), x[0, :2], accumulate=True)
        return y.put_(bai.tensor([-1, 5]), x[1, :2])

    rng = np.random.default_rng(7)
    for fn in (scattered, added, in_place):
        frozen = freeze(fn, [bai.TensorSpec((4, 3), "float32")])
        for _ in range(2):
            x = rng.standard_normal((4, 3)).astype(np.float32)
            np.testing.assert_allclose(frozen(x).numpy(), fn(bai.tensor(x)).numpy(), rtol=1e-6)


def test_a_symbolic_batch_freezes_where_the_index_does_not_depend_on_it():
    columns = bai.tensor([2, 0, 2])

    def step(x):  # (B, 3)
        return x.index_add(1, columns, x * 2).index_fill(1, bai.tensor([1]), -1.0)

    frozen = freeze(step, [bai.TensorSpec((None, 3), "float32")])
    for batch in (2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)
        np.testing.assert_allclose(frozen(x).numpy(), step(bai.tensor(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.scatter(1, x.argmax(1, keepdim=True), 1.0),
        lambda x: x.index_add(0, x[:, 0].argsort(), x),
        lambda x: x.masked_scatter(x > 0, x * 2),
        lambda x: x.put(x.argmax(0), x[0]),
    ],
    ids=["scatter", "index_add", "masked_scatter", "put"],
)
def test_an_index_computed_from_the_inputs_is_refused_when_freezing(fn):
    with pytest.raises(GraphError):
        freeze(fn, [bai.TensorSpec((3, 4), "float32")])


def test_diagonal_positions_of_a_symbolic_size_are_refused_when_freezing():
    def fill(x):
        y = x.clone()
        return y.fill_diagonal_(0.0)

    with pytest.raises((GraphError, ShapeError), match=r"fill_diagonal_"):
        freeze(fill, [bai.TensorSpec((None, 3), "float32")])
