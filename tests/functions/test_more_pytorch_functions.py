"""PyTorch functions added for code written against it: ``tensor_split``, ``hsplit``,
``vsplit``, ``dsplit``, ``split_with_sizes``, ``aminmax``, ``diagflat``, ``sum_to_size``, the
tensor queries ``is_same_size``/``is_signed``/``is_nonzero``, ``logspace``, the signal windows,
``addr``, ``addbmm``, ``vdot``, ``chain_matmul`` and ``matrix_exp``, against PyTorch: values,
dtypes, shapes, float64 gradients, shared memory and errors."""

import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, ShapeError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
NAMES = ["tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "aminmax", "diagflat",
         "sum_to_size", "is_same_size", "is_signed", "is_nonzero", "logspace", *WINDOWS, "addr",
         "addbmm", "vdot", "chain_matmul", "matrix_exp"]  # fmt: skip


def _same(ours, theirs, rtol=1e-12, atol=0.0):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _pair(shape, dtype=np.float64):
    data = RNG.standard_normal(shape).astype(dtype)
    return bai.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


def _weighted_backward(ours, theirs):
    """Backward of sum(out * w) for a fixed random w, on both sides."""
    weights = RNG.standard_normal(tuple(theirs.shape))
    (ours * bai.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()


@pytest.mark.parametrize("name", NAMES)
def test_the_same_forms_as_pytorch(name):
    assert hasattr(bai, name) == hasattr(torch, name)
    assert hasattr(bai.Tensor, name) == hasattr(torch.Tensor, name)


# ----- splitting -------------------------------------------------------------------------------

SPLITS = [(7,), 3, 0], [(7,), 10, 0], [(7,), [-1, 2, 9], 0], [(7,), (-10, -3), 0], [(7,), [], 0], \
    [(7,), [5, 2], 0], [(2, 7, 3), 3, -2], [(2, 7, 3), [1, 4], 1], [(0, 3), 3, 0], \
    [(4, 5), 2, -1]  # fmt: skip


@pytest.mark.parametrize(("shape", "points", "dim"), SPLITS)
def test_tensor_split_matches_pytorch_values_views_and_gradients(shape, points, dim):
    x, tx = _pair(shape)
    ours, theirs = bai.tensor_split(x, points, dim), torch.tensor_split(tx, points, dim)
    assert len(ours) == len(theirs)
    for piece, reference in zip(ours, theirs):
        _same(piece, reference)
    assert [tuple(p.shape) for p in x.tensor_split(points, dim=dim)] == [
        tuple(p.shape) for p in theirs
    ]
    weights = [RNG.standard_normal(tuple(p.shape)) for p in theirs]
    sum((p * bai.tensor(w)).sum() for p, w in zip(ours, weights)).backward()
    sum((p * torch.tensor(w)).sum() for p, w in zip(theirs, weights)).backward()
    _same(x.grad, tx.grad)


def test_tensor_split_takes_tensors_of_sections_or_indices_and_shares_memory():
    base = bai.tensor(np.arange(7.0))
    reference = torch.arange(7.0)
    for points in ([2, 4], 3):
        ours = bai.tensor_split(base, bai.tensor(points))
        theirs = torch.tensor_split(reference, torch.tensor(points))
        assert [p.numpy().tolist() for p in ours] == [p.tolist() for p in theirs]
    for name, points in (("tensor_split", 2), ("hsplit", [3]), ("split_with_sizes", [3, 4])):
        piece = getattr(bai, name)(base, points)[1]  # views, as PyTorch's
        assert np.shares_memory(piece.array, base.array)


@pytest.mark.parametrize(
    ("name", "shape", "points"),
    [("hsplit", (4, 6), 3), ("hsplit", (6,), [1, 4]), ("hsplit", (2, 4, 2), [1]),
     ("vsplit", (6, 4), 2), ("vsplit", (6, 4), [2, 7]), ("dsplit", (2, 2, 6), [1, 4]),
     ("dsplit", (1, 2, 4, 3), 2)],
)  # fmt: skip
def test_hsplit_vsplit_dsplit_match_pytorch(name, shape, points):
    x, tx = _pair(shape)
    ours, theirs = getattr(bai, name)(x, points), getattr(torch, name)(tx, points)
    assert len(ours) == len(theirs)
    for piece, reference, method_piece in zip(ours, theirs, getattr(x, name)(points)):
        _same(piece, reference)
        _same(method_piece, reference)
    _weighted_backward(bai.stack([p.sum() for p in ours]), torch.stack([p.sum() for p in theirs]))
    _same(x.grad, tx.grad)


def test_split_with_sizes_matches_pytorch():
    x, tx = _pair((2, 5))
    ours, theirs = bai.split_with_sizes(x, [2, 0, 3], dim=-1), tx.split_with_sizes([2, 0, 3], -1)
    for piece, reference in zip(ours, theirs):
        _same(piece, reference)
    assert [tuple(p.shape) for p in x.split_with_sizes((1, 1))] == [(1, 5), (1, 5)]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [(lambda x: bai.tensor_split(x, 0), ArgumentError, "must be positive"),
     (lambda x: bai.tensor_split(x, -1), ArgumentError, "got -1"),
     (lambda x: bai.tensor_split(x, bai.tensor([1.0])), DTypeError, "integer"),
     (lambda x: bai.tensor_split(x, bai.tensor([[1]])), ShapeError, "0-d tensor"),
     (lambda x: bai.tensor_split(bai.tensor(1.0), 2), ShapeError, "0-d tensor"),
     (lambda x: bai.tensor_split(x, 2, dim=1), ShapeError, "out of range"),
     (lambda x: bai.tensor_split(x, 2.5), TypeError, "2.5"),
     (lambda x: bai.tensor_split(x, [1.5]), TypeError, "int indices"),
     (lambda x: bai.hsplit(bai.ones(2, 5), 2), ShapeError, "size 5"),
     (lambda x: bai.hsplit(bai.ones(4, 4), 0), ShapeError, "0 equal"),
     (lambda x: bai.hsplit(bai.tensor(1.0), 2), ShapeError, "at least 1 dimension"),
     (lambda x: bai.vsplit(x, 7), ShapeError, "at least 2 dimensions"),
     (lambda x: bai.dsplit(bai.ones(2, 2), 2), ShapeError, "at least 3 dimensions"),
     (lambda x: bai.split_with_sizes(x, [2, 3]), ShapeError, "sum 5"),
     (lambda x: bai.split_with_sizes(x, [8, -1]), ShapeError, "non-negative")],
)  # fmt: skip
def test_split_errors_name_the_function_where_pytorch_raises(call, error, words):
    with pytest.raises(error, match=words):
        call(bai.tensor(np.arange(7.0)))


# ----- reductions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dim", "keepdim"), [(None, False), (None, True), (0, False), (-1, True), (1, False)]
)
def test_aminmax_matches_pytorch_with_ties(dim, keepdim):
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [-1.0, 5.0, 5.0]])
    x, tx = bai.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    keywords = {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}
    ours, theirs = bai.aminmax(x, **keywords), torch.aminmax(tx, **keywords)
    _same(ours.min, theirs.min)
    _same(ours.max, theirs.max)
    min_value, max_value = x.aminmax(**keywords)
    _same(max_value, theirs.max)
    (ours.min * 2 + ours.max * 3).sum().backward()
    (theirs.min * 2 + theirs.max * 3).sum().backward()
    _same(x.grad, tx.grad)


def test_aminmax_dtypes_empty_and_0d_like_pytorch():
    for data in ([1, 5, -2], [True, False], np.array([1.0, np.nan])):
        ours, theirs = bai.aminmax(bai.tensor(data)), torch.aminmax(torch.tensor(data))
        _same(ours.min, theirs.min)
        _same(ours.max, theirs.max)
    _same(bai.aminmax(bai.ones(0, 3), dim=1).max, torch.aminmax(torch.ones(0, 3), dim=1).max)
    _same(bai.aminmax(bai.tensor(3.0), dim=0).min, torch.aminmax(torch.tensor(3.0), dim=0).min)
    for keywords in ({}, {"dim": 0}):
        with pytest.raises(ShapeError, match=r"\[aminmax\] .*empty"):
            bai.aminmax(bai.ones(0, 3), **keywords)
    with pytest.raises(ShapeError, match="out of range"):
        bai.aminmax(bai.ones(2, 3), dim=2)
    with pytest.raises(TypeError):
        bai.aminmax(bai.ones(2, 3), 1)  # dim is keyword-only, as in PyTorch


@pytest.mark.parametrize(
    ("shape", "size"), [((2, 3), (1, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), (2, 3)),
                        ((4, 2, 3), (1, 1))],
)  # fmt: skip
def test_sum_to_size_matches_pytorch(shape, size):
    x, tx = _pair(shape)
    ours, theirs = x.sum_to_size(*size), tx.sum_to_size(*size)
    _same(ours, theirs)
    _same(x.sum_to_size(size), theirs)
    _weighted_backward(ours, theirs)
    _same(x.grad, tx.grad)


def test_sum_to_size_dtypes_identity_and_errors():
    for dtype in ("int32", "bool", "float16"):
        ours = bai.ones(2, 3, dtype=dtype).sum_to_size(3)
        theirs = torch.ones(2, 3, dtype=getattr(torch, dtype)).sum_to_size(3)
        _same(ours, theirs)
    x = bai.ones(2, 3)
    assert x.sum_to_size(2, 3) is x
    for size in ((4,), (1, 1, 3), (2, 2)):
        with pytest.raises(ShapeError, match=r"\[sum_to_size\] .* does not expand"):
            x.sum_to_size(*size)


# ----- diagonals and queries -------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "offset"), [((2, 2), 0), ((2, 2), 1), ((3,), -2), ((), 0),
                                               ((0,), 1), ((2, 1, 2), -1)])  # fmt: skip
def test_diagflat_matches_pytorch(shape, offset):
    x, tx = _pair(shape)
    ours, theirs = bai.diagflat(x, offset), torch.diagflat(tx, offset)
    _same(ours, theirs)
    _same(x.diagflat(offset=offset), theirs)
    _weighted_backward(ours, theirs)
    _same(x.grad, tx.grad)


def test_is_same_size_and_is_signed_match_pytorch():
    assert bai.is_same_size(bai.ones(2), bai.ones(2)) and bai.ones(2).is_same_size(bai.ones(2))
    assert not bai.is_same_size(bai.ones(2), bai.ones(1, 2))
    for dtype in ("uint8", "int8", "int16", "int32", "int64", "bool", "float16", "bfloat16",
                  "float32", "float64"):  # fmt: skip
        assert (
            bai.is_signed(bai.ones(1, dtype=dtype))
            == torch.ones(1, dtype=getattr(torch, dtype)).is_signed()
        ), dtype


def test_is_nonzero_matches_pytorch_and_refuses_ambiguity():
    for data in (0.0, [1], [[0.5]], np.nan, False, -0.0, [[[0]]]):
        assert bai.is_nonzero(bai.tensor(data)) == torch.is_nonzero(torch.tensor(data))
        assert bai.tensor(data).is_nonzero() == torch.tensor(data).is_nonzero()
    for data in ([1, 2], np.zeros(0)):
        with pytest.raises(ShapeError, match=r"\[is_nonzero\] .* ambiguous"):
            bai.is_nonzero(bai.tensor(data))


# ----- logspace and the windows ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "steps", "base", "dtype"),
    [(0, 3, 4, 10.0, "int64"), (0, 3, 4, 10.0, None), (-2, 2, 5, 2, None), (1, 2, 1, 10.0, None),
     (1, 2, 0, 10.0, None), (0, 1, 3, 10.0, "int64"), (0.5, 3.5, 4, 10.0, "int32"),
     (-3, 7.5, 11, 10.0, "float64"), (2, -1, 7, 3.0, "float64"), (0.0, 1.0, 6, 0.5, "float32")],
)  # fmt: skip
def test_logspace_matches_pytorch(start, end, steps, base, dtype):
    ours = bai.logspace(start, end, steps, base, dtype=dtype)
    theirs = torch.logspace(start, end, steps, base, dtype=dtype and getattr(torch, dtype))
    _same(ours, theirs, rtol=1e-6 if ours.dtype == np.float32 else 1e-13)


def test_logspace_requires_grad_and_errors():
    out = bai.logspace(0, 1, 3, dtype="float64", requires_grad=True)
    assert out.requires_grad and out.is_leaf
    with pytest.raises(ShapeError, match=r"\[logspace\] .*non-negative"):
        bai.logspace(0, 1, -1)
    with pytest.raises(TypeError, match="logspace"):
        bai.logspace(0, 1, 2.5)


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
def test_windows_match_pytorch(name, periodic, length):
    for dtype, rtol in (("float64", 1e-13), ("float32", 1e-6)):
        ours = getattr(bai, name)(length, periodic, dtype=dtype)
        theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
        _same(ours, theirs, rtol=rtol, atol=1e-15 if dtype == "float64" else 1e-7)
    _same(getattr(bai, name)(length), getattr(torch, name)(length), rtol=1e-6, atol=1e-7)


def test_window_parameters_requires_grad_and_errors():
    _same(bai.hamming_window(7, False, 0.5, 0.4, dtype="float64"),
          torch.hamming_window(7, False, 0.5, 0.4, dtype=torch.float64), atol=1e-15)  # fmt: skip
    _same(bai.kaiser_window(9, True, 5.0, dtype="float64"),
          torch.kaiser_window(9, True, 5.0, dtype=torch.float64), atol=1e-15)  # fmt: skip
    _same(bai.kaiser_window(6, True, 0.0, dtype="float64"),
          torch.kaiser_window(6, True, 0.0, dtype=torch.float64))  # fmt: skip
    window = bai.hann_window(3, requires_grad=True)
    assert window.requires_grad and window.is_leaf
    with pytest.raises(DTypeError, match=r"\[hann_window\] .*floating-point"):
        bai.hann_window(4, dtype="int64")
    with pytest.raises(ShapeError, match=r"\[kaiser_window\] .*non-negative"):
        bai.kaiser_window(-1)
    with pytest.raises(TypeError, match="blackman_window"):
        bai.blackman_window(2.0)


# ----- products --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("input_shape", "beta", "alpha"), [((3, 4), 1, 1), ((4,), 0.5, 2.0), ((3, 1), 0, -1.5)]
)
def test_addr_matches_pytorch(input_shape, beta, alpha):
    (x, tx), (u, tu), (v, tv) = _pair(input_shape), _pair((3,)), _pair((4,))
    ours = bai.addr(x, u, v, beta=beta, alpha=alpha)
    theirs = torch.addr(tx, tu, tv, beta=beta, alpha=alpha)
    _same(ours, theirs)
    _same(x.addr(u, v, beta=beta, alpha=alpha), theirs)
    _weighted_backward(ours, theirs)
    for mine, reference in ((x, tx), (u, tu), (v, tv)):
        _same(mine.grad, reference.grad)


def test_addr_integers_and_errors():
    ours = bai.addr(bai.ones(2, 3, dtype="int64"), bai.tensor([1, 2]), bai.tensor([1, 2, 3]),
                    alpha=2, beta=3)  # fmt: skip
    theirs = torch.addr(torch.ones(2, 3, dtype=torch.int64), torch.tensor([1, 2]),
                        torch.tensor([1, 2, 3]), alpha=2, beta=3)  # fmt: skip
    _same(ours, theirs)
    with pytest.raises(ShapeError, match=r"\[addr\] expects vec1 to be 1-D"):
        bai.addr(bai.zeros(3, 4), bai.ones(3, 1), bai.ones(4))
    with pytest.raises(ShapeError, match=r"\[addr\] input of shape \(2, 4\)"):
        bai.addr(bai.zeros(2, 4), bai.ones(3), bai.ones(4))
    with pytest.raises(ArgumentError, match="alpha=1.5"):
        bai.addr(bai.zeros(3, 4, dtype="int64"), bai.ones(3, dtype="int64"),
                 bai.ones(4, dtype="int64"), alpha=1.5)  # fmt: skip


@pytest.mark.parametrize(("input_shape", "beta", "alpha"), [((3, 5), 1, 1), ((5,), 0.5, 2.0),
                                                             ((1, 1), 0, 3.0)])  # fmt: skip
def test_addbmm_matches_pytorch(input_shape, beta, alpha):
    (x, tx), (a, ta), (b, tb) = _pair(input_shape), _pair((2, 3, 4)), _pair((2, 4, 5))
    ours = bai.addbmm(x, a, b, beta=beta, alpha=alpha)
    theirs = torch.addbmm(tx, ta, tb, beta=beta, alpha=alpha)
    _same(ours, theirs, rtol=1e-12, atol=1e-14)
    _same(x.addbmm(a, b, beta=beta, alpha=alpha), theirs, atol=1e-14)
    _weighted_backward(ours, theirs)
    for mine, reference in ((x, tx), (a, ta), (b, tb)):
        _same(mine.grad, reference.grad, atol=1e-14)
    with pytest.raises(ShapeError, match=r"\[addbmm\] cannot multiply"):
        bai.addbmm(bai.zeros(3, 5), bai.ones(2, 3, 4), bai.ones(3, 4, 5))
    with pytest.raises(ShapeError, match=r"\[addbmm\] cannot multiply"):
        bai.addbmm(bai.zeros(3, 5), bai.ones(3, 4), bai.ones(4, 5))


def test_vdot_matches_pytorch():
    (a, ta), (b, tb) = _pair((5,)), _pair((5,))
    ours, theirs = bai.vdot(a, b), torch.vdot(ta, tb)
    _same(ours, theirs)
    _same(a.vdot(b), theirs)
    ours.backward()
    theirs.backward()
    _same(a.grad, ta.grad)
    _same(b.grad, tb.grad)
    _same(bai.vdot(bai.tensor([1, 2]), bai.tensor([3, 4])), torch.vdot(torch.tensor([1, 2]),
                                                                    torch.tensor([3, 4])))  # fmt: skip
    _same(bai.vdot(bai.ones(0), bai.ones(0)), torch.vdot(torch.ones(0), torch.ones(0)))
    with pytest.raises(ShapeError, match=r"\[vdot\] .*\(3,\) and \(2,\)"):
        bai.vdot(bai.ones(3), bai.ones(2))
    with pytest.raises(ShapeError, match=r"\[vdot\] .*1-D"):
        bai.vdot(bai.ones(3, 1), bai.ones(3))
    with pytest.raises(DTypeError, match=r"\[vdot\] .*float32 and float64"):
        bai.vdot(bai.ones(3), bai.ones(3, dtype="float64"))


def test_chain_matmul_matches_pytorch_and_warns():
    pairs = [_pair((2, 3)), _pair((3, 6)), _pair((6, 2))]
    with pytest.warns(UserWarning, match="deprecated"):
        ours = bai.chain_matmul(*(p[0] for p in pairs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.chain_matmul(*(p[1] for p in pairs))
        one = torch.chain_matmul(pairs[0][1])
    _same(ours, theirs)
    _weighted_backward(ours, theirs)
    for mine, reference in pairs:
        _same(mine.grad, reference.grad)
    with pytest.warns(UserWarning):
        single = bai.chain_matmul(pairs[0][0])
        assert single is not pairs[0][0]
        _same(single, one)
        with pytest.raises(ArgumentError, match=r"\[chain_matmul\] .*none"):
            bai.chain_matmul()
        with pytest.raises(ShapeError, match=r"\[chain_matmul\] .*argument 0"):
            bai.chain_matmul(bai.ones(3), bai.ones(3, 2))
        with pytest.raises(ShapeError, match="cannot multiply"):
            bai.chain_matmul(bai.ones(2, 3), bai.ones(2, 3))


@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.5, 3.0, 20.0, 100.0])
def test_matrix_exp_matches_pytorch_to_1e_12(scale):
    data = RNG.standard_normal((3, 4, 4)) * scale
    data[1] *= 0.01  # matrices of one batch need different numbers of squarings
    ours, theirs = bai.matrix_exp(bai.tensor(data)), torch.matrix_exp(torch.tensor(data))
    _same(ours, theirs, rtol=1e-12, atol=1e-12 * float(np.abs(theirs.numpy()).max()))


def test_matrix_exp_gradient_shapes_and_errors():
    x, tx = _pair((2, 3, 3))
    ours, theirs = x.matrix_exp(), tx.matrix_exp()
    _weighted_backward(ours, theirs)
    _same(x.grad, tx.grad, rtol=1e-11, atol=1e-13)
    _same(bai.matrix_exp(bai.tensor([[2.0]])), torch.matrix_exp(torch.tensor([[2.0]])), rtol=1e-6)
    _same(bai.matrix_exp(bai.zeros(0, 0)), torch.matrix_exp(torch.zeros(0, 0)))
    nilpotent = np.array([[0.0, 1.0], [0.0, 0.0]])
    _same(bai.matrix_exp(bai.tensor(nilpotent)), torch.matrix_exp(torch.tensor(nilpotent)))
    with pytest.raises(ShapeError, match=r"\[matrix_exp\] .*\(2, 3\)"):
        bai.matrix_exp(bai.ones(2, 3))
    with pytest.raises(ShapeError, match=r"\[matrix_exp\]"):
        bai.matrix_exp(bai.ones(3))
    with pytest.raises(DTypeError, match=r"\[matrix_exp\] .*int64"):
        bai.matrix_exp(bai.ones(2, 2, dtype="int64"))


def test_matrix_exp_of_a_traced_input_is_refused():
    """The number of squarings depends on the values: a graph would keep the count of the
    values it was traced with, so tracing refuses it."""
    rotation = bai.tensor(np.array([[0.0, 30.0], [-30.0, 0.0]]))
    with bai.no_grad():
        compiled = bai.compile(lambda a: bai.matrix_exp(a), fullgraph=True)
        with pytest.raises(bai.graph.GraphError, match="reads the value of a tensor"):
            compiled(rotation)


def test_matrix_exp_is_reachable_as_torch_linalg_spells_it():
    a = RNG.standard_normal((2, 3, 3))
    np.testing.assert_allclose(
        bai.linalg.matrix_exp(bai.tensor(a)).numpy(),
        torch.linalg.matrix_exp(torch.tensor(a)).numpy(),
        rtol=1e-12,
        atol=1e-14,
    )
