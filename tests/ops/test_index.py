"""Indexing: getitem/setitem with every index form, gather, scatter_add, index_select,
take_along_axis, masked_fill and one_hot, against PyTorch (and NumPy where PyTorch differs)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import buildingai as bai
from buildingai.ops.index import flat_positions
from tests.helpers import check_op, constant, integers, mask

torch = pytest.importorskip("torch")

MASK_4 = np.array([True, False, True, True])
MASK_56 = np.random.default_rng(1).random((5, 6)) < 0.5
MASK_456 = np.random.default_rng(2).random((4, 5, 6)) < 0.5

# Each case builds an index with ``T`` (bai.tensor or torch.tensor), so that both libraries get
# the same index in their own tensor type; plain ints, slices, lists, None and ... are shared.
INDEX_FORMS = {
    "int": lambda T: 1,
    "negative int": lambda T: -1,
    "two ints": lambda T: (1, -2),
    "all ints (0-d)": lambda T: (3, 0, -1),
    "slice": lambda T: slice(1, 3),
    "slice with step": lambda T: slice(None, None, 2),
    "slices and int": lambda T: (slice(1, None), slice(None, None, 3), 2),
    "out of range slice": lambda T: slice(10, 20),
    "None": lambda T: (None, 1),
    "ellipsis": lambda T: (Ellipsis, 1),
    "ellipsis and None": lambda T: (0, Ellipsis, None),
    "bool scalar": lambda T: True,
    "int list with duplicates": lambda T: [0, 2, 2, -1],
    "int tensor": lambda T: T([3, 1]),
    "2-d int tensor": lambda T: T([[0, 1], [2, 3], [3, 3]]),
    "0-d int tensor": lambda T: T(2),
    "0-d int tensor and slice": lambda T: (slice(None), T(-1)),
    "separated advanced": lambda T: (T([0, 3, 0]), slice(None), T([1, 5, 1])),
    "adjacent broadcast advanced": lambda T: (slice(None), T([0, 2, 2]), T([[1], [4]])),
    "advanced after ellipsis": lambda T: (Ellipsis, T([5, 0, 5])),
    "advanced with None": lambda T: (None, T([1, 1]), slice(1, 3)),
    "full mask": lambda T: T(MASK_456),
    "partial mask": lambda T: T(MASK_4),
    "mask after slice": lambda T: (slice(None), T(MASK_56)),
    "mask and int array": lambda T: (T(MASK_4), slice(None, None, 2), T([0, 1, 5])),
    "numpy mask": lambda T: MASK_4,
}


@pytest.mark.parametrize("form", INDEX_FORMS.values(), ids=INDEX_FORMS.keys())
def test_getitem_matches_torch(form):
    check_op(
        lambda x: x[form(bai.tensor)],
        (4, 5, 6),
        torch_fn=lambda x: x[form(torch.tensor)],
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shape, index, expected",
    [((0, 3), (slice(None), 1), (0,)), ((2, 0), [1, 1], (2, 0)), ((3,), [], (0,))],
    ids=["zero-size slice", "zero-size rows", "empty list"],
)
def test_getitem_zero_size(shape, index, expected):
    x = bai.tensor(np.ones(shape), requires_grad=True)
    y = x[index]
    assert y.shape == expected
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(shape))


NEGATIVE_STEPS = [
    slice(None, None, -1),
    (slice(None, 1, -2), Ellipsis, slice(4, 0, -3)),
    (None, slice(3, None, -1), np.array([0, 0, 4])),
    (slice(None), slice(None, None, -2), 1),
]


@pytest.mark.parametrize("index", NEGATIVE_STEPS, ids=str)
def test_negative_steps_follow_numpy(index):
    """PyTorch refuses negative steps: compare with NumPy values and finite differences."""
    values = np.random.default_rng(0).standard_normal((4, 5, 6))
    x = bai.tensor(values, requires_grad=True)
    y = x[index]
    np.testing.assert_array_equal(y.numpy(), values[index])
    y.sum().backward()
    expected = np.zeros_like(values)
    np.add.at(expected, index, 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    bai.debug.gradcheck(lambda t: t[index] * t[index], [x])
    bai.debug.gradgradcheck(lambda t: t[index] * t[index], [x])


def test_duplicates_accumulate_gradient():
    x = bai.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x[[0, 0, 2, 0]] * bai.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 0.0, 3.0])


def test_basic_index_is_a_view_sharing_the_version_counter():
    x = bai.tensor(np.arange(6.0).reshape(2, 3))
    row, scalar, picked = x[1], x[0, 2], x[[1]]
    assert row._version is x._version and scalar._version is x._version
    assert picked._version is not x._version  # advanced indexing copies
    x[1, 0] = 10.0
    assert row.numpy()[0] == 10.0 and picked.numpy()[0, 0] == 3.0
    assert x.version == 1


def test_iteration_yields_rows():
    x = bai.tensor(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(np.stack([row.numpy() for row in x]), x.numpy())


@pytest.mark.parametrize(
    "index",
    [
        (np.array([3, 0, 3]),),
        (slice(None), np.array([[1, 1], [4, 0]])),
        (Ellipsis, np.array([5, 5, -1])),
        (np.array([2, -1]), Ellipsis),
        (slice(None), np.array([0, 4]), slice(None)),
        (np.array([[0], [3]]), np.array([1, 1]), np.array([[2, 5]])),
    ],
    ids=str,
)
def test_flat_positions_fast_paths(index):
    """The fast accumulation paths agree with NumPy's add.at and are actually taken."""
    shape = (4, 5, 6)
    assert flat_positions(np, shape, index) is not None
    values = np.random.default_rng(0).standard_normal(np.zeros(shape)[index].shape)
    expected = np.zeros(shape)
    np.add.at(expected, index, values)
    ours = bai.zeros_index_add(bai.tensor(values), shape, index)
    np.testing.assert_allclose(ours.numpy(), expected, atol=1e-12)


def test_zeros_index_add_broadcasts_values():
    out = bai.zeros_index_add(bai.tensor(1.0), (3, 2), [0, 0])
    np.testing.assert_array_equal(out.numpy(), [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]])


def test_zeros_index_add_matches_torch_index_put():
    index = [2, 0, 2]
    check_op(
        lambda v: bai.zeros_index_add(v, (4, 3), bai.tensor(index)),
        (3, 3),
        torch_fn=lambda v: torch.zeros(4, 3, dtype=v.dtype).index_put(
            (torch.tensor(index),), v, accumulate=True
        ),
        gradgrad=True,
    )


# ----- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index, message",
    [
        (5, r"\[getitem\] index 5 is out of range for axis 0 with size 4 \(tensor shape \(4, 5\)"),
        ((0, -6), r"index -6 is out of range for axis 1 with size 5"),
        (([0, 9],), r"index 9 \(in an index array\) is out of range for axis 0 with size 4"),
        ((slice(None), [-6]), r"index -6 \(in an index array\) is out of range for axis 1"),
        (MASK_4[:3], r"boolean mask of shape \(3,\) does not match the indexed dimensions \(4,\)"),
        (MASK_56[:4, :4], r"mask of shape \(4, 4\) does not match .* \(4, 5\) at axes 0..1"),
        ((0, 0, 0), r"too many indices: the index addresses 3 dimensions but the tensor has 2"),
        ((Ellipsis, 0, Ellipsis), r"only one ellipsis"),
        ((1.5,), r"1.5 of type float is not a valid index"),
        ("a", r"'a' of type str is not a valid index"),
        (slice(0.5, 2), r"slice bounds must be integers, got 0.5 at axis 0"),
        (([0, 1], [0, 1, 2]), r"index arrays of shapes \(2,\), \(3,\) cannot be broadcast"),
        ([0.0, 1.0], r"index arrays must hold integers or booleans, got dtype float64"),
    ],
    ids=str,
)
def test_getitem_errors(index, message):
    x = bai.zeros(4, 5)
    with pytest.raises(bai.IndexingError, match=message) as info:
        x[index]
    assert isinstance(info.value, IndexError)


def test_index_error_names_the_index():
    with pytest.raises(IndexError, match=r"index \[:, \[0, 7\]\]\)"):
        bai.zeros(3, 4)[:, [0, 7]]


def test_zeros_index_add_rejects_out_of_range():
    with pytest.raises(bai.IndexingError, match=r"\[zeros_index_add\] index 4 .* axis 1"):
        bai.zeros_index_add(bai.ones(2), (3, 4), ([0, 1], [1, 4]))


# ----- setitem ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index, value",
    [
        (1, 7.0),
        ((slice(None), 0), np.array([1.0, 2.0, 3.0])),
        ((Ellipsis, slice(1, None)), bai.tensor([[5.0], [6.0], [7.0]])),
        ([0, 2], bai.tensor(9.0)),
        (bai.tensor([True, False, True]), bai.tensor([1.0, 2.0])),
        (np.array([[True, False], [False, True], [True, True]]), -1.0),
        ((slice(None, None, -1), 1), np.array([1.0, 2.0, 3.0])),
        (bai.tensor(2), [4.0, 5.0]),
    ],
    ids=str,
)
def test_setitem_matches_numpy(index, value):
    start = np.arange(6.0).reshape(3, 2)
    x = bai.tensor(start)
    expected = start.copy()
    np_index = index.numpy() if isinstance(index, bai.Tensor) else index
    expected[np_index] = value.numpy() if isinstance(value, bai.Tensor) else value
    x[index] = value
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x.version == 1


def test_setitem_after_use_breaks_the_saved_backward():
    a = bai.tensor([1.0, 2.0, 3.0])
    x = bai.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = x * a  # mul saves its inputs
    a[0] = 5.0
    with pytest.raises(bai.AutogradError, match=r"\[mul\].*modified in place by 'setitem'"):
        y.sum().backward()


def test_setitem_through_a_view_is_detected():
    a = bai.tensor([1.0, 2.0, 3.0])
    x = bai.tensor([1.0, 1.0], requires_grad=True)
    y = x * a[1:]
    a[2] = 0.0  # writes memory that the saved view a[1:] shares
    with pytest.raises(bai.AutogradError, match="setitem"):
        y.sum().backward()


def test_setitem_on_requires_grad_tensor_raises():
    w = bai.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(bai.AutogradError, match=r"\[setitem\] cannot write .* requires grad"):
        w[0] = 0.0
    with pytest.raises(bai.AutogradError, match="no_grad"):
        (w * 2)[0] = 0.0


def test_setitem_with_value_that_requires_grad_raises():
    w = bai.tensor(1.0, requires_grad=True)
    with pytest.raises(bai.AutogradError, match=r"\[setitem\] the value requires grad"):
        bai.zeros(2)[0] = w


def test_setitem_under_no_grad_edits_parameters():
    w = bai.tensor([1.0, 2.0], requires_grad=True)
    with bai.no_grad():
        w[0] = 5.0
        w[1] = bai.tensor(6.0, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [10.0, 12.0])


@pytest.mark.parametrize(
    "index, value, error, message",
    [
        (3, 1.0, bai.IndexingError, r"\[setitem\] index 3 is out of range for axis 0 with size 3"),
        ([0, 4], 1.0, bai.IndexingError, r"\[setitem\] index 4 \(in an index array\)"),
        (np.array([True]), 1.0, bai.IndexingError, r"\[setitem\] boolean mask of shape \(1,\)"),
        (0, np.ones(3), bai.ShapeError, r"\[setitem\] cannot write a value of shape \(3,\)"),
    ],
    ids=str,
)
def test_setitem_errors(index, value, error, message):
    x = bai.zeros(3, 2)
    with pytest.raises(error, match=message):
        x[index] = value
    assert x.version == 0


def test_setitem_on_read_only_view_explains():
    x = bai.zeros(1, 3).expand(2, 3)
    with pytest.raises(bai.BuildingAIError, match=r"\[setitem\] .* read-only view"):
        x[0, 0] = 1.0


# ----- gather, scatter_add, index_select, take_along_axis, masked_fill, one_hot -----------------


@pytest.mark.parametrize(
    "shape, dim, index_shape, high",
    [
        ((3, 4), 0, (5, 4), 3),
        ((3, 4), 1, (3, 6), 4),
        ((3, 4), -1, (2, 2), 4),  # smaller than x outside dim, as PyTorch allows
        ((2, 3, 4), 1, (2, 5, 4), 3),
        ((5,), 0, (7,), 5),
        ((3, 4), 1, (3, 0), 4),
    ],
    ids=str,
)
def test_gather_matches_torch(shape, dim, index_shape, high):
    check_op(
        lambda x, i: x.gather(dim, i),
        shape,
        integers(*index_shape, high=high),
        torch_fn=lambda x, i: x.gather(dim, i),
        gradgrad=True,
    )


def test_gather_of_scalar():
    check_op(
        lambda x, i: bai.gather(x, 0, i),
        (),
        constant(np.int64(0)),
        torch_fn=lambda x, i: torch.gather(x, 0, i),
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shape, dim, index_shape, src_shape",
    [
        ((3, 4), 0, (5, 4), (5, 4)),
        ((3, 4), 1, (3, 6), (3, 6)),
        ((2, 3, 4), -2, (2, 5, 4), (2, 5, 4)),
        ((4,), 0, (0,), (0,)),
    ],
    ids=str,
)
def test_scatter_add_matches_torch(shape, dim, index_shape, src_shape):
    check_op(
        lambda x, i, s: x.scatter_add(dim, i, s),
        shape,
        integers(*index_shape, high=shape[dim]),
        src_shape,
        torch_fn=lambda x, i, s: x.scatter_add(dim, i, s),
        gradgrad=True,
    )


def test_scatter_add_with_src_larger_than_index():
    """Only the leading index-shaped block of src is used (PyTorch's own backward fails here,
    so gradients are checked against finite differences)."""
    index = np.array([[3, 0, 3], [1, 1, 2]])
    check_op(
        lambda x, s: x.scatter_add(1, bai.tensor(index), s),
        (3, 4),
        (3, 5),
        torch_fn=lambda x, s: x.scatter_add(1, torch.tensor(index), s),
        grad=False,
    )
    x = bai.tensor(np.zeros((3, 4)), requires_grad=True)
    src = bai.tensor(np.ones((3, 5)), requires_grad=True)
    bai.debug.gradcheck(lambda a, b: a.scatter_add(1, bai.tensor(index), b) ** 2, [x, src])
    bai.debug.gradgradcheck(lambda a, b: a.scatter_add(1, bai.tensor(index), b) ** 2, [x, src])


def test_scatter_add_is_out_of_place():
    x = bai.zeros(3)
    out = x.scatter_add(0, bai.tensor([1, 1]), bai.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 3.0, 0.0])
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "shape, dim, index",
    [((4, 3), 0, [3, 0, 3]), ((4, 3), 1, [2]), ((2, 3, 4), -1, [0, 3, 3, 1]), ((4, 3), 0, [])],
    ids=str,
)
def test_index_select_matches_torch(shape, dim, index):
    check_op(
        lambda x, i: x.index_select(dim, i),
        shape,
        constant(np.array(index, dtype=np.int64)),
        torch_fn=lambda x, i: x.index_select(dim, i),
        gradgrad=True,
    )


def test_index_select_with_0d_index_keeps_the_dimension():
    x = bai.zeros(3, 4)
    assert x.index_select(1, bai.tensor(2)).shape == (3, 1)


@pytest.mark.parametrize(
    "shape, axis, index_shape",
    [((3, 4), 1, (3, 2)), ((3, 4), 0, (5, 1)), ((2, 3, 4), -1, (1, 3, 6)), ((3, 4), None, (7,))],
    ids=str,
)
def test_take_along_axis_matches_numpy_and_torch(shape, axis, index_shape):
    flat = int(np.prod(shape)) if axis is None else shape[axis]
    index = np.random.default_rng(3).integers(-flat, flat, size=index_shape)
    values = np.random.default_rng(4).standard_normal(shape)
    ours = bai.take_along_axis(bai.tensor(values), bai.tensor(index), axis=axis)
    np.testing.assert_array_equal(ours.numpy(), np.take_along_axis(values, index, axis=axis))
    if axis is not None:
        check_op(
            lambda x: x.take_along_axis(bai.tensor(index), dim=axis),
            shape,
            torch_fn=lambda x: torch.take_along_dim(x, torch.tensor(index) % flat, dim=axis),
            gradgrad=True,
        )


@pytest.mark.parametrize(
    "shape, mask_shape",
    [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (2, 3, 4)), ((0, 2), (2,))],
    ids=str,
)
def test_masked_fill_matches_torch(shape, mask_shape):
    check_op(
        lambda x, m: x.masked_fill(m, -1.5),
        shape,
        mask(*mask_shape),
        torch_fn=lambda x, m: x.masked_fill(m, -1.5),
        gradgrad=True,
    )


def test_masked_fill_with_tensor_value_gets_gradient():
    check_op(
        lambda x, m, v: x.masked_fill(m, v),
        (3, 4),
        mask(3, 4),
        (),
        torch_fn=lambda x, m, v: x.masked_fill(m, v),
        gradgrad=True,
    )


def test_masked_fill_casts_the_value_to_the_dtype():
    out = bai.tensor([1, 2, 3]).masked_fill(bai.tensor([True, False, True]), 2.7)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])


@pytest.mark.parametrize("num_classes", [-1, 5])
def test_one_hot_matches_torch(num_classes):
    indices = np.array([[0, 3], [1, 1], [2, 0]])
    ours = bai.one_hot(bai.tensor(indices), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(indices), num_classes)
    assert ours.dtype == np.int64 and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda x: x.gather(1, bai.tensor([[4]])),
            bai.IndexingError,
            r"\[gather\] index 4 is out of range for dim 1 with size 4",
        ),
        (
            lambda x: x.gather(1, bai.tensor([[-100]])),
            bai.IndexingError,
            r"\[gather\] index -100 .*negative indices are not allowed",
        ),
        (
            lambda x: x.gather(0, bai.tensor([1])),
            bai.ShapeError,
            r"\[gather\] index has 1 dimension but the input has 2 dimensions",
        ),
        (
            lambda x: x.gather(0, bai.tensor([[0] * 5])),
            bai.ShapeError,
            r"\[gather\] index size 5 exceeds the input size 4 at dim 1",
        ),
        (
            lambda x: x.gather(0, bai.tensor([[0.0]])),
            bai.DTypeError,
            r"\[gather\] index must hold integers, got dtype float32",
        ),
        (
            lambda x: x.gather(2, bai.tensor([[0]])),
            bai.ShapeError,
            r"\[gather\] axis 2 is out of range",
        ),
        (
            lambda x: x.scatter_add(0, bai.tensor([[3]]), bai.ones(1, 1)),
            bai.IndexingError,
            r"\[scatter_add\] index 3 is out of range for dim 0 with size 3",
        ),
        (
            lambda x: x.scatter_add(0, bai.tensor([[0, 0]]), bai.ones(1, 1)),
            bai.ShapeError,
            r"\[scatter_add\] index size 2 exceeds the src size 1 at dim 1",
        ),
        (
            lambda x: x.scatter_add(0, bai.tensor([[0]]), bai.ones(1, 1, dtype=bai.float64)),
            bai.DTypeError,
            r"\[scatter_add\] src has dtype float64 but x has float32",
        ),
        (
            lambda x: x.index_select(0, bai.tensor([0, 3])),
            bai.IndexingError,
            r"\[index_select\] index 3 is out of range for dim 0 with size 3",
        ),
        (
            lambda x: x.index_select(0, bai.tensor([[0]])),
            bai.ShapeError,
            r"\[index_select\] index must be 1-D",
        ),
        (
            lambda x: x.take_along_axis(bai.tensor([[5]]), axis=1),
            bai.IndexingError,
            r"\[take_along_axis\] index 5 is out of range for dim 1 with size 4",
        ),
        (
            lambda x: x.take_along_axis(bai.tensor([[0, 1]] * 2), axis=1),
            bai.ShapeError,
            r"\[take_along_axis\] indices shape \(2, 2\) does not broadcast against x shape",
        ),
        (
            lambda x: x.masked_fill(bai.tensor([1, 0, 1, 0]), 0.0),
            bai.DTypeError,
            r"\[masked_fill\] the mask must be boolean, got dtype int64",
        ),
        (
            lambda x: x.masked_fill(bai.tensor([True, False]), 0.0),
            bai.ShapeError,
            r"\[masked_fill\] mask of shape \(2,\) cannot be broadcast with x of shape \(3, 4\)",
        ),
        (
            lambda x: bai.one_hot(bai.tensor([0, 5]), 3),
            bai.IndexingError,
            r"\[one_hot\] class index 5 is out of range for num_classes=3",
        ),
        (
            lambda x: bai.one_hot(bai.tensor([-100, 1])),
            bai.IndexingError,
            r"\[one_hot\] class index -100 .*drop ignored labels",
        ),
        (
            lambda x: bai.one_hot(bai.tensor([0.0])),
            bai.DTypeError,
            r"\[one_hot\] indices must be integers",
        ),
        (
            lambda x: bai.one_hot(bai.tensor(np.zeros(0, np.int64))),
            bai.ShapeError,
            r"\[one_hot\] cannot infer the number of classes",
        ),
    ],
)
def test_index_op_errors(call, error, message):
    with pytest.raises(error, match="(?s)" + message):
        call(bai.zeros(3, 4))


# ----- properties ---------------------------------------------------------------------------------


@st.composite
def shapes_and_indices(draw):
    """A small shape and a random index mixing ints, slices (any step), None, '...', integer
    arrays (possibly repeating positions) and boolean masks."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    parts, axis = [], 0
    use_ellipsis = draw(st.booleans())
    while axis < len(shape):
        size = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "array", "mask", "none", "stop"]))
        if kind == "stop":
            break
        if kind == "none":
            parts.append(None)
            continue
        if kind == "int":
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-size - 2, size + 2)
            step = draw(st.none() | st.integers(-3, 3).filter(bool))
            parts.append(slice(draw(bound), draw(bound), step))
        elif kind == "array":
            parts.append(np.array(draw(st.lists(st.integers(-size, size - 1), max_size=4))))
        else:
            parts.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
        axis += 1
    if use_ellipsis:
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    sizes = [
        int(p.sum()) if p.dtype == bool else p.size for p in parts if isinstance(p, np.ndarray)
    ]
    if len(set(sizes) - {1}) > 1:
        # Keep the advanced indices broadcastable: only the first array stays, the others
        # become whole slices (the axes they index stay where they were).
        first = next(i for i, p in enumerate(parts) if isinstance(p, np.ndarray))
        parts = [
            slice(None) if isinstance(p, np.ndarray) and i != first else p
            for i, p in enumerate(parts)
        ]
    return shape, tuple(parts)


@settings(max_examples=50, deadline=None)
@given(shapes_and_indices())
def test_getitem_round_trip_property(case):
    shape, index = case
    values = np.arange(float(np.prod(shape))).reshape(shape)
    try:
        expected = values[index]
    except IndexError:
        with pytest.raises(IndexError):
            bai.tensor(values)[index]
        return
    x = bai.tensor(values, requires_grad=True)
    y = x[index]
    np.testing.assert_array_equal(y.numpy(), expected)
    y.sum().backward()
    counts = np.zeros(shape)
    np.add.at(counts, index, 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), counts)


@settings(max_examples=50, deadline=None)
@given(shapes_and_indices())
def test_setitem_property(case):
    shape, index = case
    values = np.zeros(shape)
    try:
        values[index] = 1.0
    except IndexError:
        return
    x = bai.zeros(*shape, dtype=bai.float64)
    x[index] = 1.0
    np.testing.assert_array_equal(x.numpy(), values)
