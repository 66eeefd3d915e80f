"""Linear algebra: matmul and its thin wrappers, the fused linear map, einsum."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.ops.linalg import MATMUL
from tests.helpers import check_op, constant, torch

# ----- matmul ------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((4,), (4,)),  # 1-D . 1-D -> scalar
    ((4,), (4, 3)),  # 1-D . 2-D
    ((3, 4), (4,)),  # 2-D . 1-D
    ((3, 4), (4, 2)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (4, 5)),  # batched left, one matrix right
    ((3, 4), (2, 4, 5)),  # one matrix left, batched right
    ((2, 1, 3, 4), (5, 4, 2)),  # batch broadcasting on both sides
    ((2, 3, 4), (4,)),  # batched matrix times vector
    ((4,), (2, 4, 3)),  # vector times batched matrix
    ((0, 4), (4, 3)),  # zero-size rows
    ((3, 0), (0, 2)),  # zero-size inner dimension: zeros
    ((2, 0, 3, 4), (4, 1)),  # zero-size batch
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    check_op(lambda a, b: a @ b, *shapes, gradgrad=True)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((2, 3, 4), (4,))], ids=str)
def test_matmul_function_and_methods(shapes):
    check_op(lambda a, b: bai.matmul(a, b), *shapes, torch_fn=torch.matmul)
    check_op(lambda a, b: a.matmul(b), *shapes)


def test_rmatmul_with_array_on_the_left():
    left = np.arange(6.0).reshape(2, 3)
    right = bai.tensor(np.ones((3, 2)))
    np.testing.assert_allclose((left @ right).numpy(), left @ np.ones((3, 2)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_keeps_dtype(dtype):
    a = bai.ones(3, 4, dtype=dtype)
    b = bai.ones(4, 2, dtype=dtype)
    assert (a @ b).dtype == dtype
    assert bai.linear(a, bai.ones(5, 4, dtype=dtype), bai.ones(5, dtype=dtype)).dtype == dtype


def test_matmul_float32_gradients_keep_dtype():
    a = bai.randn(3, 4, requires_grad=True)
    b = bai.randn(4, 2, requires_grad=True)
    (a @ b).sum().backward()
    assert a.grad.dtype == bai.float32 and b.grad.dtype == bai.float32


def test_matmul_inner_dimension_error():
    with pytest.raises(bai.ShapeError) as info:
        bai.zeros(32, 784) @ bai.zeros(256, 10)
    message = str(info.value)
    assert "[matmul] cannot multiply (32, 784) by (256, 10): inner dimensions 784 != 256" in message
    assert "help:" in message


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((4,), (5,)), r"cannot multiply \(4,\) by \(5,\): inner dimensions 4 != 5"),
        (((4,), (5, 3)), r"cannot multiply \(4,\) by \(5, 3\): inner dimensions 4 != 5"),
        (((3, 4), (5,)), r"cannot multiply \(3, 4\) by \(5,\): inner dimensions 4 != 5"),
    ],
)
def test_matmul_vector_errors_name_the_given_shapes(shapes, message):
    with pytest.raises(bai.ShapeError, match=r"\[matmul\] " + message):
        bai.zeros(*shapes[0]) @ bai.zeros(*shapes[1])


def test_matmul_batch_dimension_error():
    with pytest.raises(bai.ShapeError) as info:
        bai.zeros(2, 3, 4) @ bai.zeros(5, 4, 6)
    message = str(info.value)
    assert "[matmul] cannot multiply (2, 3, 4) by (5, 4, 6)" in message
    assert "batch dimensions (2,) and (5,) do not broadcast" in message


def test_matmul_scalar_error():
    with pytest.raises(bai.ShapeError, match=r"\[matmul\] operands must have at least one"):
        bai.tensor(2.0) @ bai.zeros(3)


# ----- dot, outer, mm, bmm -----------------------------------------------------------------------


def test_dot():
    check_op(lambda a, b: bai.dot(a, b), (5,), (5,), torch_fn=torch.dot, gradgrad=True)
    check_op(lambda a, b: a.dot(b), (0,), (0,))


def test_outer():
    check_op(lambda a, b: bai.outer(a, b), (3,), (4,), torch_fn=torch.outer, gradgrad=True)
    check_op(lambda a, b: a.outer(b), (0,), (2,))


def test_mm():
    check_op(lambda a, b: bai.mm(a, b), (3, 4), (4, 2), torch_fn=torch.mm, gradgrad=True)


def test_bmm():
    check_op(lambda a, b: a.bmm(b), (2, 3, 4), (2, 4, 5), gradgrad=True)


@pytest.mark.parametrize(
    "fn, shapes, message",
    [
        (bai.dot, ((3,), (4,)), r"\[dot\] expects two 1-D tensors of equal length, got \(3,\)"),
        (bai.dot, ((3, 1), (3,)), r"\[dot\] expects two 1-D tensors"),
        (bai.outer, ((3, 1), (2,)), r"\[outer\] expects two 1-D tensors, got \(3, 1\) and"),
        (bai.mm, ((2, 3, 4), (4, 5)), r"\[mm\] expects two 2-D tensors, got \(2, 3, 4\)"),
        (bai.mm, ((2, 3), (4, 5)), r"\[matmul\] cannot multiply \(2, 3\) by \(4, 5\)"),
        (bai.bmm, ((2, 3, 4), (3, 4, 5)), r"\[bmm\] expects two 3-D tensors with the same batch"),
        (bai.bmm, ((3, 4), (4, 5)), r"\[bmm\] expects"),
    ],
)
def test_wrapper_errors(fn, shapes, message):
    with pytest.raises(bai.ShapeError, match=message):
        fn(bai.zeros(*shapes[0]), bai.zeros(*shapes[1]))


# ----- linear ------------------------------------------------------------------------------------

LINEAR_SHAPES = [
    ((4, 3), (5, 3), (5,)),
    ((2, 4, 3), (5, 3), (5,)),  # batch and sequence dimensions
    ((3,), (5, 3), (5,)),  # one sample
    ((0, 3), (5, 3), (5,)),  # empty batch
]


@pytest.mark.parametrize("shapes", LINEAR_SHAPES, ids=str)
def test_linear(shapes):
    check_op(
        lambda x, w, b: bai.linear(x, w, b),
        *shapes,
        torch_fn=torch.nn.functional.linear,
        gradgrad=True,
    )


def test_linear_without_bias():
    check_op(
        lambda x, w: bai.linear(x, w), (2, 4, 3), (5, 3), torch_fn=torch.nn.functional.linear,
        gradgrad=True,
    )  # fmt: skip


def test_linear_with_constant_input():
    """Only the parameters need gradients (the usual first layer)."""
    check_op(
        lambda x, w, b: bai.linear(x, w, b),
        constant(np.linspace(-1, 1, 12).reshape(4, 3)),
        (2, 3),
        (2,),
        torch_fn=torch.nn.functional.linear,
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((4, 3), (5, 2), (5,)), r"\[linear\] input \(4, 3\) does not fit weight \(5, 2\)"),
        (((4, 3), (5, 3), (4,)), r"\[linear\] bias \(4,\) does not fit weight \(5, 3\)"),
        (((4, 3), (3,), (5,)), r"\[linear\] weight must be 2-D"),
    ],
)
def test_linear_errors(shapes, message):
    with pytest.raises(bai.ShapeError, match=message):
        bai.linear(*(bai.zeros(*s) for s in shapes))


# ----- einsum ------------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 2)]),  # matmul
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),  # batch matmul
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),  # attention scores
    ("i,j->ij", [(3,), (4,)]),  # outer product
    ("i,i->", [(5,), (5,)]),  # dot
    ("ij->ji", [(3, 4)]),  # transpose
    ("ij->", [(3, 4)]),  # total sum
    ("ij->j", [(3, 4)]),  # column sums: 'i' appears only in one operand
    ("ijk,jl->il", [(2, 3, 4), (3, 5)]),  # 'k' summed within the first operand only
    ("ij,jk", [(3, 4), (4, 2)]),  # implicit output
    ("ba,ca", [(3, 4), (2, 4)]),  # implicit output in alphabetical order: 'bc'
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),  # ellipsis with broadcasting
    ("...i,...i", [(2, 3), (3,)]),  # implicit output keeps the ellipsis
    ("i...->...", [(3, 2, 2)]),  # ellipsis at the end, 'i' summed
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),  # three operands: contraction path
    ("a,ab,bc->c", [(3,), (3, 4), (4, 2)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),  # labelled size-1 dimension broadcasts
    ("ij,kj->ikj", [(2, 0), (3, 0)]),  # zero-size
    ("ii->i", [(3, 3)]),  # diagonal
    ("ii->", [(3, 3)]),  # trace
    ("ii", [(3, 3)]),  # implicit: a repeated label is summed
    ("iij->ij", [(3, 3, 2)]),
    ("ij,jj->i", [(2, 3), (3, 3)]),
    (" ij , jk -> ik ", [(3, 4), (4, 2)]),  # spaces
]


@pytest.mark.parametrize("subscripts, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(subscripts, shapes):
    check_op(
        lambda *xs: bai.einsum(subscripts, *xs),
        *shapes,
        torch_fn=lambda *xs: torch.einsum(subscripts, *xs),
        gradgrad=True,
    )


def test_einsum_list_of_operands():
    check_op(
        lambda a, b: bai.einsum("ij,jk->ik", [a, b]),
        (2, 3),
        (3, 2),
        torch_fn=lambda a, b: torch.einsum("ij,jk->ik", [a, b]),
    )


def test_einsum_large_contraction_matches_numpy():
    """Big enough to take the optimised (BLAS) path."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 96)), rng.standard_normal((96, 32))
    out = bai.einsum("ij,jk->ik", bai.tensor(a), bai.tensor(b))
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)


def test_einsum_float32():
    a = bai.randn(3, 4, requires_grad=True)
    out = bai.einsum("ij->i", a)
    assert out.dtype == bai.float32
    out.sum().backward()
    assert a.grad.dtype == bai.float32
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((3, 4), np.float32))


@pytest.mark.parametrize(
    "subscripts, shapes, message",
    [
        ("ij,jk->ik", [(2, 3), (4, 5)], r"\[einsum\] label 'j' has sizes 3 and 4 in 'ij,jk->ik'"),
        ("ij,jk->ik", [(2, 3)], r"name 2 operand\(s\) but 1 were given"),
        ("ij->i", [(2, 3, 4)], r"operand 0 has shape \(2, 3, 4\) \(3 dimensions\) but its "),
        ("ij->k", [(2, 3)], r"output label 'k' in 'ij->k' names no input dimension"),
        ("ij->ii", [(2, 2)], r"output subscripts in 'ij->ii' repeat a label"),
        ("i1->i", [(2, 3)], r"invalid subscripts 'i1->i'"),
        ("ij->i->j", [(2, 3)], r"contain '->' more than once"),
        ("ii->i", [(2, 3)], r"repeated label 'i' in 'ii->i' spans dimensions of sizes 2 and 3"),
        ("...ij->ij", [(2,)], r"operand 0 has shape \(2,\)"),
    ],
)
def test_einsum_errors(subscripts, shapes, message):
    with pytest.raises(bai.ShapeError, match=message):
        bai.einsum(subscripts, *(bai.zeros(*s) for s in shapes))


def test_einsum_needs_an_operand():
    with pytest.raises(bai.ShapeError, match=r"\[einsum\] needs at least one operand"):
        bai.einsum("->")


# ----- the op's transposed operands (used by every matmul gradient) -----------------------------

TRANSPOSED_CASES = [
    ((3, 4), (4, 5)),  # matrices
    ((2, 3, 4), (4, 5)),  # a batch against one matrix: the folded weight gradient
    ((2, 3, 4), (2, 4, 5)),
    ((1, 3, 4), (2, 4, 5)),  # broadcast batch
]


def _swap(shape):
    return (*shape[:-2], shape[-1], shape[-2])


@pytest.mark.parametrize("shape_a, shape_b", TRANSPOSED_CASES, ids=str)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_with_transposed_operands(shape_a, shape_b, transpose_a, transpose_b):
    stored_a = _swap(shape_a) if transpose_a else shape_a
    stored_b = _swap(shape_b) if transpose_b else shape_b

    def theirs(a, b):
        return (a.mT if transpose_a else a) @ (b.mT if transpose_b else b)

    check_op(
        lambda a, b: MATMUL(a, b, transpose_a=transpose_a, transpose_b=transpose_b),
        stored_a,
        stored_b,
        torch_fn=theirs,
        gradgrad=True,
    )


def test_transposed_matmul_error_names_the_effective_shapes():
    with pytest.raises(bai.ShapeError, match=r"cannot multiply \(4, 3\) by \(4, 5\)"):
        MATMUL(bai.ones(3, 4), bai.ones(4, 5), transpose_a=True)
    with pytest.raises(bai.ShapeError, match="rank >= 2"):
        MATMUL(bai.ones(3), bai.ones(3, 5))
