"""``buildingai.linalg`` (det, slogdet, inv, solve, solve_triangular, cholesky, qr, eigh,
eigvalsh, svd, pinv, matrix_power, matrix_rank, multi_dot, cross, lstsq) and the top-level
spellings (det, logdet, slogdet, inverse, cholesky, qr, svd, pinverse, matrix_power and their
Tensor methods) against PyTorch in float64: values, namedtuple fields, batches, gradients and
second derivatives, singular and empty inputs, errors, PyTorch's documentation examples and
frozen graphs.

The functions run the records det, cofactor, slogdet_sign, logabsdet, inv, solve, cholesky,
qr_q, qr_r, eigvalsh, eigh_vectors, svd_u, svd_vh and pinv (``buildingai/ops/decompositions.py``).
"""

import math
import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.errors import ArgumentError, BuildingAIError, DTypeError, ShapeError
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError
from tests.helpers import check_op, constant

torch = pytest.importorskip("torch")
LinAlgError = bai.linalg.LinAlgError


def _well_conditioned(*shape, seed=0):
    """Diagonally dominant matrices, the first row of every other one negated: determinants
    of both signs."""
    rng = np.random.default_rng(seed)
    array = rng.uniform(-1.0, 1.0, shape) + 3.0 * np.eye(shape[-1])
    flat = array.reshape(-1, *shape[-2:])
    flat[1::2, 0, :] *= -1
    return flat.reshape(shape)


def _symmetric(*shape, seed=0):
    array = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    return array + np.swapaxes(array, -1, -2)


def _positive_definite(*shape, seed=0):
    array = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    return array @ np.swapaxes(array, -1, -2) + shape[-1] * np.eye(shape[-1])


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _grad(array):
    return constant(array, requires_grad=True)


# ----- the records behind the functions ------------------------------------------------------------


class _OpNames(DispatchMode):
    def __init__(self):
        self.names = []

    def before_op(self, op, inputs, attrs):
        self.names.append(op.name)


def _ops_run_by(function, *inputs):
    recorder = _OpNames()
    with dispatch_mode(recorder):
        out = function(*inputs)
    return set(recorder.names), out


def test_functions_run_the_decomposition_records():
    square = bai.tensor(_positive_definite(2, 3, 3))
    wide = bai.tensor(_random(2, 3))
    expected = [
        (bai.linalg.det, (square,), {"det"}),
        (bai.linalg.slogdet, (square,), {"slogdet_sign", "logabsdet"}),
        (bai.linalg.inv, (square,), {"inv"}),
        (bai.linalg.solve, (square, wide.mT), {"solve"}),
        (bai.linalg.cholesky, (square,), {"cholesky"}),
        (bai.linalg.qr, (wide,), {"qr_q", "qr_r"}),
        (bai.linalg.eigh, (square,), {"eigvalsh", "eigh_vectors"}),
        (bai.linalg.svd, (wide,), {"svd_u", "svd_vh", "svdvals"}),
        (bai.linalg.pinv, (wide,), {"pinv"}),
    ]
    for function, inputs, names in expected:
        ran, _ = _ops_run_by(function, *inputs)
        assert names <= ran, f"{function.__name__} ran {ran}"
    x = bai.tensor(_well_conditioned(3, 3), requires_grad=True)
    ran, _ = _ops_run_by(lambda a: bai.grad(bai.linalg.det(a), [a]), x)
    assert "cofactor" in ran


# ----- determinants --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2), (1, 1)], ids=str)
def test_det_values_first_and_second_derivatives_like_torch(shape):
    A = _grad(_well_conditioned(*shape))
    check_op(bai.linalg.det, A, torch_fn=torch.linalg.det, gradgrad=True)
    check_op(bai.det, A, torch_fn=torch.det)
    check_op(lambda a: a.det(), A, torch_fn=lambda a: a.det())


def test_det_of_a_singular_matrix_is_zero_with_the_cofactor_gradient():
    # PyTorch's gradient of a singular matrix's det: its cofactor matrix, which it computes when
    # the graph is kept (create_graph); without it PyTorch gives zeros where det is exactly 0
    for array in ([[1.0, 2.0], [2.0, 4.0]], np.arange(9.0).reshape(3, 3) + 1, np.zeros((3, 3))):
        ours = bai.tensor(array, dtype=bai.float64, requires_grad=True)
        theirs = torch.tensor(array, dtype=torch.float64, requires_grad=True)
        value = bai.linalg.det(ours)
        assert abs(value.item()) < 1e-12
        (grad,) = bai.grad(value, [ours])
        (expected,) = torch.autograd.grad(torch.linalg.det(theirs), theirs, create_graph=True)
        np.testing.assert_allclose(grad.numpy(), expected.detach().numpy(), atol=1e-12)


def test_second_derivative_of_det_at_a_singular_matrix_says_what_is_missing():
    A = bai.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=bai.float64, requires_grad=True)
    (grad,) = bai.grad(bai.linalg.det(A), [A], create_graph=True)
    with pytest.raises(LinAlgError, match=r"^\[det\] second derivatives"):
        bai.grad(grad.sum(), [A])


def test_third_derivative_of_det_like_torch():
    array = _well_conditioned(3, 3)
    ours = bai.tensor(array, requires_grad=True)
    theirs = torch.tensor(array, requires_grad=True)
    g = _random(3, 3, seed=1)
    h = _random(3, 3, seed=2)
    (first,) = bai.grad(bai.linalg.det(ours), [ours], create_graph=True)
    (second,) = bai.grad((first * bai.tensor(g)).sum(), [ours], create_graph=True)
    (third,) = bai.grad((second * bai.tensor(h)).sum(), [ours])
    (first_t,) = torch.autograd.grad(torch.linalg.det(theirs), theirs, create_graph=True)
    (second_t,) = torch.autograd.grad((first_t * torch.tensor(g)).sum(), theirs, create_graph=True)
    (third_t,) = torch.autograd.grad((second_t * torch.tensor(h)).sum(), theirs)
    np.testing.assert_allclose(third.numpy(), third_t.numpy(), rtol=1e-8, atol=1e-10)


def test_slogdet_fields_values_and_gradients_like_torch():
    A = _grad(_well_conditioned(3, 4, 4))
    check_op(bai.linalg.slogdet, A, torch_fn=torch.linalg.slogdet, gradgrad=True)
    check_op(bai.slogdet, A, torch_fn=torch.slogdet)
    check_op(lambda a: a.slogdet(), A, torch_fn=lambda a: a.slogdet())
    result = bai.linalg.slogdet(bai.tensor(_well_conditioned(3, 4, 4)))
    assert result._fields == ("sign", "logabsdet")
    assert set(result.sign.numpy()) == {-1.0, 1.0}  # the permuted rows give both signs
    sign, logabsdet = result
    assert sign is result.sign and logabsdet is result.logabsdet


def test_slogdet_of_a_singular_matrix_and_its_infinite_gradient():
    A = bai.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=bai.float64, requires_grad=True)
    sign, logabsdet = bai.linalg.slogdet(A)
    expected = torch.linalg.slogdet(torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64))
    assert sign.item() == expected.sign.item() == 0
    assert logabsdet.item() == expected.logabsdet.item() == -math.inf
    # PyTorch returns infinities here; an error says so instead of spreading them silently
    with pytest.raises(LinAlgError, match=r"^\[slogdet\] the gradient of logabsdet"):
        logabsdet.backward()


def test_logdet_is_nan_for_a_negative_determinant_like_torch():
    A = _grad(_well_conditioned(4, 3, 3))
    # finite differences of nan are nan: the gradients are compared with PyTorch's only
    check_op(bai.logdet, A, torch_fn=torch.logdet, gradgrad=True, gradcheck=False)
    check_op(lambda a: a.logdet(), A, torch_fn=lambda a: a.logdet(), gradcheck=False)
    values = bai.logdet(bai.tensor(_well_conditioned(4, 3, 3))).numpy()
    assert np.isnan(values).any() and np.isfinite(values).any()


# ----- inverse and solves --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3, 3), (1, 1)], ids=str)
def test_inv_and_inverse_like_torch(shape):
    A = _grad(_well_conditioned(*shape))
    check_op(bai.linalg.inv, A, torch_fn=torch.linalg.inv, gradgrad=True)
    check_op(bai.inverse, A, torch_fn=torch.inverse)
    check_op(lambda a: a.inverse(), A, torch_fn=lambda a: a.inverse())


def test_inv_of_a_singular_matrix_raises_naming_the_op_and_the_matrix():
    stack = np.stack([np.eye(3), [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]]])
    with pytest.raises(LinAlgError, match=r"^\[inv\] matrix 1 of the batch .* singular"):
        bai.linalg.inv(bai.tensor(stack))
    with pytest.raises(torch.linalg.LinAlgError):  # PyTorch raises too
        torch.linalg.inv(torch.tensor(stack))
    assert issubclass(LinAlgError, RuntimeError)  # as torch.linalg.LinAlgError
    with pytest.raises(LinAlgError, match=r"^\[solve\] the matrix is singular"):
        bai.linalg.solve(bai.zeros(2, 2), bai.ones(2))


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "left"),
    [((3, 3), (3, 2), True), ((2, 3, 3), (3,), True), ((2, 3, 3), (2, 3), True),
     ((4, 1, 3, 3), (2, 3, 1), True), ((2, 3, 3), (4, 3), False), ((4, 1, 3, 3), (2, 3), False),
     ((3, 3), (2, 4, 3, 5), True)],
    ids=str,
)  # fmt: skip
def test_solve_matrices_vectors_broadcasting_and_left_like_torch(a_shape, b_shape, left):
    A, B = _grad(_well_conditioned(*a_shape)), _grad(_random(*b_shape, seed=1))
    check_op(
        lambda a, b: bai.linalg.solve(a, b, left=left),
        A,
        B,
        torch_fn=lambda a, b: torch.linalg.solve(a, b, left=left),
        gradgrad=True,
    )


def test_solve_rejects_what_torch_rejects_with_the_shapes():
    A = bai.tensor(_well_conditioned(2, 3, 3))
    with pytest.raises(ShapeError, match=r"^\[solve\] cannot solve A X = B .*\(2, 3, 3\)"):
        bai.linalg.solve(A, bai.ones(2, 4))
    with pytest.raises(ShapeError, match=r"^\[solve\] cannot solve X A = B"):
        bai.linalg.solve(A, bai.ones(3), left=False)  # a vector is a column: (3, 1)
    with pytest.raises(ShapeError, match=r"^\[solve\] the batch shapes"):
        bai.linalg.solve(A, bai.ones(4, 3, 2, dtype=bai.float64))
    with pytest.raises(DTypeError, match=r"^\[solve\] a and b must have the same dtype"):
        bai.linalg.solve(A, bai.ones(2, 3, 1, dtype=bai.float32))
    with pytest.raises(RuntimeError):
        torch.linalg.solve(torch.tensor(A.numpy()), torch.ones(2, 3, 1))


@pytest.mark.parametrize(
    ("upper", "left", "unitriangular"),
    [(True, True, False), (False, True, False), (False, False, True), (True, False, False)],
    ids=str,
)
def test_solve_triangular_reads_one_triangle_like_torch(upper, left, unitriangular):
    A = _grad(_well_conditioned(2, 3, 3))  # full matrices: the other triangle is ignored
    B = _grad(_random(2, 3, 4, seed=1) if left else _random(2, 4, 3, seed=1))
    options = dict(upper=upper, left=left, unitriangular=unitriangular)
    check_op(
        lambda a, b: bai.linalg.solve_triangular(a, b, **options),
        A,
        B,
        torch_fn=lambda a, b: torch.linalg.solve_triangular(a, b, **options),
        gradcheck=False,  # finite differences cannot see which triangle is read
    )


# ----- Cholesky ------------------------------------------------------------------------------------


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_values_and_symmetric_gradients_like_torch(upper):
    A = _grad(_positive_definite(2, 4, 4))

    def ours(a):
        return bai.linalg.cholesky(a, upper=upper)

    def theirs(a):
        return torch.linalg.cholesky(a, upper=upper)

    # the gradient is PyTorch's symmetric one, though only one triangle is read: finite
    # differences go through a symmetric parametrisation instead
    check_op(ours, A, torch_fn=theirs, gradgrad=True, gradcheck=False)
    X = _grad(_random(2, 4, 4))
    check_op(
        lambda x: ours(x @ x.mT + 4 * bai.eye(4, dtype=bai.float64)),
        X,
        torch_fn=lambda x: theirs(x @ x.mT + 4 * torch.eye(4, dtype=torch.float64)),
        gradgrad=True,
    )


def test_cholesky_reads_the_lower_triangle_or_with_upper_the_upper_one():
    lower_definite = np.array([[4.0, 100.0], [2.0, 3.0]])  # only its lower triangle is definite
    L = bai.linalg.cholesky(bai.tensor(lower_definite))
    np.testing.assert_allclose(L.numpy(), torch.linalg.cholesky(torch.tensor(lower_definite)))
    with pytest.raises(LinAlgError, match=r"^\[cholesky\] the matrix is not positive-definite"):
        bai.linalg.cholesky(bai.tensor(lower_definite), upper=True)
    U = bai.linalg.cholesky(bai.tensor(lower_definite.T), upper=True)
    expected = torch.linalg.cholesky(torch.tensor(lower_definite.T), upper=True)
    np.testing.assert_allclose(U.numpy(), expected.numpy())


def test_cholesky_names_the_matrix_and_the_leading_minor_like_torch():
    stack = bai.stack([bai.eye(3), bai.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, -1]])])
    with pytest.raises(LinAlgError, match=r"matrix 1 of the batch .* leading minor of order 3"):
        bai.linalg.cholesky(stack)
    with pytest.raises(torch.linalg.LinAlgError, match="Batch element 1.*order 3"):
        torch.linalg.cholesky(torch.tensor(stack.numpy()))


def test_deprecated_torch_cholesky_warns_and_takes_upper_positionally():
    A = _positive_definite(3, 3)
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        U = bai.cholesky(bai.tensor(A), True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(U.numpy(), torch.cholesky(torch.tensor(A), True).numpy())
        np.testing.assert_allclose(
            bai.tensor(A).cholesky().numpy(), torch.tensor(A).cholesky().numpy()
        )


# ----- QR ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5), (4, 1)], ids=str)
def test_qr_reduced_values_and_gradients_like_torch(shape):
    A = _grad(_random(*shape))
    check_op(bai.linalg.qr, A, torch_fn=torch.linalg.qr, gradgrad=True)
    result = bai.linalg.qr(bai.tensor(_random(*shape)))
    assert result._fields == ("Q", "R")


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (0, 3), (3, 0)], ids=str)
def test_qr_modes_give_torch_shapes(shape):
    array = _random(*shape)
    for mode in ("reduced", "complete", "r"):
        Q, R = bai.linalg.qr(bai.tensor(array), mode)
        Q_t, R_t = torch.linalg.qr(torch.tensor(array), mode)
        assert Q.shape == tuple(Q_t.shape) and R.shape == tuple(R_t.shape), mode
        np.testing.assert_allclose(R.numpy(), R_t.numpy(), atol=1e-12)
        np.testing.assert_allclose(Q.numpy(), Q_t.numpy(), atol=1e-12)


def test_qr_complete_of_a_wide_matrix_is_differentiable_like_torch():
    A = _grad(_random(2, 3, 5))
    check_op(
        lambda a: bai.linalg.qr(a, "complete"),
        A,
        torch_fn=lambda a: torch.linalg.qr(a, "complete"),
    )


def test_qr_gradients_torch_does_not_define_raise():
    tall = bai.tensor(_random(5, 3), requires_grad=True)
    with pytest.raises(BuildingAIError, match=r"^\[qr\] .*mode='complete' and more rows"):
        bai.linalg.qr(tall, "complete").Q.sum().backward()
    with pytest.raises(BuildingAIError, match=r"^\[qr\] .*mode='r' does not compute"):
        bai.linalg.qr(tall, "r").R.sum().backward()
    with pytest.raises(ArgumentError, match=r"^\[qr\] mode must be"):
        bai.linalg.qr(tall, "full")


def test_deprecated_torch_qr_takes_some():
    array = _random(5, 3)
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        Q, R = bai.qr(bai.tensor(array), some=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Q_t, R_t = torch.qr(torch.tensor(array), some=False)
        assert Q.shape == (5, 5) and R.shape == (5, 3)
        np.testing.assert_allclose(Q.numpy(), Q_t.numpy(), atol=1e-12)
        np.testing.assert_allclose(bai.tensor(array).qr().R.numpy(), torch.tensor(array).qr().R)


# ----- eigh ----------------------------------------------------------------------------------------


def _torch_eigh_signed_as_numpy(a, uplo="L"):
    values, vectors = torch.linalg.eigh(a, UPLO=uplo)
    numpy_vectors = np.linalg.eigh(a.detach().numpy(), UPLO=uplo)[1]
    signs = torch.sign((vectors.detach() * torch.from_numpy(numpy_vectors)).sum(-2, keepdim=True))
    return values, vectors * signs


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3, 3), (1, 1)], ids=str)
def test_eigh_and_eigvalsh_like_torch(shape, uplo):
    A = _grad(_symmetric(*shape))
    check_op(
        lambda a: bai.linalg.eigh(a, uplo),
        A,
        torch_fn=lambda a: _torch_eigh_signed_as_numpy(a, uplo),
        gradgrad=True,
        gradcheck=False,  # one triangle is read: the gradient is PyTorch's symmetric one
    )
    check_op(
        lambda a: bai.linalg.eigvalsh(a, UPLO=uplo),
        A,
        torch_fn=lambda a: torch.linalg.eigvalsh(a, UPLO=uplo),
        gradgrad=True,
        gradcheck=False,
    )


def test_eigh_reads_one_triangle_and_names_its_fields():
    A = np.array([[4.0, 100.0], [2.0, 3.0]])
    for uplo in ("L", "U", "u"):
        values = bai.linalg.eigh(bai.tensor(A), UPLO=uplo).eigenvalues
        expected = torch.linalg.eigvalsh(torch.tensor(A), UPLO=uplo)
        np.testing.assert_allclose(values.numpy(), expected.numpy())
    result = bai.linalg.eigh(bai.tensor(_symmetric(3, 3)))
    assert result._fields == ("eigenvalues", "eigenvectors")
    with pytest.raises(ArgumentError, match=r"^\[eigh\] UPLO must be 'L' or 'U'"):
        bai.linalg.eigvalsh(bai.tensor(A), "X")


def test_eigh_of_a_symmetric_parametrisation_passes_finite_differences():
    X = _grad(_random(2, 3, 3))
    check_op(
        lambda x: bai.linalg.eigh(x + x.mT),
        X,
        torch_fn=lambda x: _torch_eigh_signed_as_numpy(x + x.mT),
        gradgrad=True,
    )


# ----- SVD -----------------------------------------------------------------------------------------


def _torch_svd_signed_as_numpy(a, full_matrices):
    """PyTorch's SVD with each pair (u_i, v_i) signed as NumPy's; the vectors beyond
    min(m, n) (a basis of a complement: no gradient) are NumPy's."""
    u, s, vh = torch.linalg.svd(a, full_matrices=full_matrices)
    numpy_u, _, numpy_vh = np.linalg.svd(a.detach().numpy(), full_matrices=full_matrices)
    k = s.shape[-1]
    signs = torch.sign((u[..., :k].detach() * torch.from_numpy(numpy_u[..., :k])).sum(-2))
    u = torch.cat([u[..., :k] * signs.unsqueeze(-2), torch.from_numpy(numpy_u[..., k:])], -1)
    vh = torch.cat(
        [vh[..., :k, :] * signs.unsqueeze(-1), torch.from_numpy(numpy_vh[..., k:, :])], -2
    )
    return u, s, vh


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (4, 4), (1, 3)], ids=str)
def test_svd_values_and_gradients_like_torch(shape, full_matrices):
    A = _grad(_random(*shape))
    square = shape[-1] == shape[-2]
    check_op(
        lambda a: bai.linalg.svd(a, full_matrices),
        A,
        torch_fn=lambda a: _torch_svd_signed_as_numpy(a, full_matrices),
        gradgrad=True,
        gradcheck=square or not full_matrices,  # the complement's gradient is ignored
    )


def test_svd_fields_and_the_older_torch_svd():
    array = _random(2, 5, 3)
    result = bai.linalg.svd(bai.tensor(array))
    assert result._fields == ("U", "S", "Vh")
    assert result.U.shape == (2, 5, 5) and result.S.shape == (2, 3) and result.Vh.shape == (2, 3, 3)
    for some in (True, False):
        U, S, V = bai.svd(bai.tensor(array), some=some)
        U_t, S_t, V_t = torch.svd(torch.tensor(array), some=some)
        assert U.shape == tuple(U_t.shape) and V.shape == tuple(V_t.shape)
        k = 3
        reconstructed = (U[..., :k] * S.unsqueeze(-2)) @ V.mT
        np.testing.assert_allclose(reconstructed.numpy(), array, atol=1e-12)
    U, S, V = bai.tensor(array).svd(compute_uv=False)
    U_t, S_t, V_t = torch.tensor(array).svd(compute_uv=False)
    assert U.shape == tuple(U_t.shape) == (2, 5, 5) and V.shape == tuple(V_t.shape) == (2, 3, 3)
    assert not U.numpy().any() and not V.numpy().any()
    np.testing.assert_allclose(S.numpy(), S_t.numpy())
    check_op(
        lambda a: bai.svd(a).V,
        _grad(array),
        torch_fn=lambda a: _torch_svd_signed_as_numpy(a, False)[2].mT,
    )


# ----- pseudo-inverse and rank ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5), (4, 4)], ids=str)
def test_pinv_values_and_gradients_like_torch(shape):
    A = _grad(_random(*shape))
    check_op(bai.linalg.pinv, A, torch_fn=torch.linalg.pinv, gradgrad=True)
    check_op(bai.pinverse, A, torch_fn=torch.pinverse)
    check_op(lambda a: a.pinverse(), A, torch_fn=lambda a: a.pinverse())


_SCALED = np.diag([3.0, 1.0, 1e-3]) @ _random(3, 3)


@pytest.mark.parametrize(
    "options",
    [dict(atol=0.5), dict(rtol=0.1), dict(atol=0.01, rtol=0.2), dict(hermitian=True)],
    ids=str,
)
def test_pinv_tolerances_and_hermitian_like_torch(options):
    A = _grad(_symmetric(3, 3) if options.get("hermitian") else _SCALED)
    check_op(
        lambda a: bai.linalg.pinv(a, **options),
        A,
        torch_fn=lambda a: torch.linalg.pinv(a, **options),
        gradgrad=True,
        # PyTorch's rule is the derivative at a fixed rank (a cut singular value is not zero),
        # and hermitian reads one triangle: finite differences see neither
        gradcheck=False,
    )


def test_pinv_older_spelling_and_empty_matrices():
    array = _SCALED
    for rcond in (0.5, 1e-15):  # the older positional spelling
        np.testing.assert_allclose(
            bai.linalg.pinv(bai.tensor(array), rcond).numpy(),
            torch.linalg.pinv(torch.tensor(array), rcond).numpy(),
        )
    empty = bai.linalg.pinv(bai.zeros(2, 0, 3, dtype=bai.float64))
    assert empty.shape == tuple(torch.linalg.pinv(torch.zeros(2, 0, 3)).shape)


def test_matrix_rank_like_torch():
    rng = np.random.default_rng(0)
    deficient = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))  # rank 2
    scaled = np.diag([10.0, 1.0, 0.1, 0.0]) @ rng.standard_normal((4, 4))
    for array, options in [
        (deficient, {}),
        (scaled, {}),
        (scaled, dict(atol=0.5)),
        (scaled, dict(rtol=0.05)),
        (scaled, dict(atol=1.0, rtol=0.0)),
        (_symmetric(2, 4, 4), dict(hermitian=True)),
        (scaled, dict(tol=0.5)),
    ]:
        ours = bai.linalg.matrix_rank(bai.tensor(array), **options)
        theirs = torch.linalg.matrix_rank(torch.tensor(array), **options)
        assert ours.dtype == bai.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=str(options))
    # one tolerance per matrix; where atol is 0, the default rtol still applies
    tolerances = np.array([0.0, 5e-4, 5.0])
    stack = np.stack([np.diag([1.0, 1e-17, 1e-3])] * 3)
    np.testing.assert_array_equal(
        bai.linalg.matrix_rank(bai.tensor(stack), atol=bai.tensor(tolerances)).numpy(),
        torch.linalg.matrix_rank(torch.tensor(stack), atol=torch.tensor(tolerances)).numpy(),
    )
    assert bai.linalg.matrix_rank(bai.zeros(2, 0, 3)).numpy().tolist() == [0, 0]


# ----- powers, chains, cross -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -3])
def test_matrix_power_like_torch(n):
    A = _grad(_well_conditioned(2, 3, 3))
    check_op(
        lambda a: bai.linalg.matrix_power(a, n),
        A,
        torch_fn=lambda a: torch.linalg.matrix_power(a, n),
        gradgrad=n != 0,
    )
    check_op(lambda a: a.matrix_power(n), A, torch_fn=lambda a: a.matrix_power(n))


def test_matrix_power_of_integers_and_bad_exponents():
    ints = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(
        bai.matrix_power(bai.tensor(ints), 5).numpy(), torch.matrix_power(torch.tensor(ints), 5)
    )
    with pytest.raises(ArgumentError, match=r"^\[matrix_power\] n must be an integer"):
        bai.linalg.matrix_power(bai.eye(2), 1.5)
    with pytest.raises(ShapeError, match=r"^\[matrix_power\] needs square matrices"):
        bai.linalg.matrix_power(bai.ones(2, 3), 2)


def test_multi_dot_with_vectors_at_the_ends_like_torch():
    check_op(
        lambda *t: bai.linalg.multi_dot(t),
        (3,), (3, 10), (10, 2), (2, 8), (8,),
        torch_fn=lambda *t: torch.linalg.multi_dot(t),
    )  # fmt: skip
    check_op(
        lambda *t: bai.linalg.multi_dot(list(t)),
        (4, 3), (3, 5),
        torch_fn=lambda *t: torch.linalg.multi_dot(list(t)),
    )  # fmt: skip
    with pytest.raises(ArgumentError, match=r"expected at least 2 tensors but got 1"):
        bai.linalg.multi_dot([bai.ones(3)])
    with pytest.raises(ShapeError, match=r"the last tensor must be 1D or 2D but got 3D"):
        bai.linalg.multi_dot([bai.ones(2, 3), bai.ones(2, 3, 4)])
    with pytest.raises(ShapeError, match=r"cannot multiply \(2, 3\) by \(4, 4\)"):
        bai.linalg.multi_dot([bai.ones(2, 3), bai.ones(4, 4)])


def test_linalg_cross_takes_the_last_dimension_by_default_like_torch():
    check_op(bai.linalg.cross, (4, 3), (1, 3), torch_fn=torch.linalg.cross)
    check_op(
        lambda a, b: bai.linalg.cross(a, b, dim=1),
        (2, 3, 4),
        (2, 3, 1),
        torch_fn=lambda a, b: torch.linalg.cross(a, b, dim=1),
    )


# ----- least squares -------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((2, 5, 3), (2, 5, 2)), ((5, 3), (5,)), ((3, 5), (3, 2)), ((1, 5, 3), (4, 5, 2))],
    ids=str,
)
def test_lstsq_fields_values_and_gradients_like_torch(a_shape, b_shape, driver):
    A_array, B_array = _random(*a_shape), _random(*b_shape, seed=1)
    ours = bai.linalg.lstsq(bai.tensor(A_array), bai.tensor(B_array), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(A_array), torch.tensor(B_array), driver=driver)
    assert ours._fields == ("solution", "residuals", "rank", "singular_values")
    for name, value, expected in zip(ours._fields, ours, theirs):
        assert value.shape == tuple(expected.shape), name
        assert value.dtype.name == str(expected.dtype).replace("torch.", ""), name
        np.testing.assert_allclose(value.numpy(), expected.numpy(), rtol=1e-9, atol=1e-12)
    differentiable = ("solution", "residuals") if ours.residuals.numel() else ("solution",)
    check_op(
        lambda a, b: [getattr(bai.linalg.lstsq(a, b, driver=driver), f) for f in differentiable],
        _grad(A_array),
        _grad(B_array),
        torch_fn=lambda a, b: [
            getattr(torch.linalg.lstsq(a, b, driver=driver), f) for f in differentiable
        ],
    )


def test_lstsq_of_a_rank_deficient_matrix_gives_the_minimum_norm_solution():
    A = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    B = _random(3, 1)
    for driver in ("gelsy", "gelsd", "gelss"):
        ours = bai.linalg.lstsq(bai.tensor(A), bai.tensor(B), driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
        np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), atol=1e-12)
        assert ours.rank.item() == theirs.rank.item() == 1
        assert ours.residuals.shape == tuple(theirs.residuals.shape) == (0,)
    with pytest.raises(ArgumentError, match=r"^\[lstsq\] driver must be one of"):
        bai.linalg.lstsq(bai.tensor(A), bai.tensor(B), driver="gelsx")


# ----- edge cases and errors -----------------------------------------------------------------------


def test_empty_matrices_like_torch():
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        array = np.ones(shape)
        pairs = [
            (bai.linalg.det, torch.linalg.det),
            (bai.linalg.inv, torch.linalg.inv),
            (lambda a: bai.linalg.slogdet(a).logabsdet, lambda a: torch.linalg.slogdet(a)[1]),
            (bai.linalg.cholesky, torch.linalg.cholesky),
            (bai.linalg.eigvalsh, torch.linalg.eigvalsh),
        ]
        for ours, theirs in pairs:
            value, expected = ours(bai.tensor(array)), theirs(torch.tensor(array))
            assert value.shape == tuple(expected.shape), shape
            np.testing.assert_allclose(value.numpy(), expected.numpy())
    U, S, Vh = bai.linalg.svd(bai.zeros(0, 3, dtype=bai.float64))
    U_t, S_t, Vh_t = torch.linalg.svd(torch.zeros(0, 3, dtype=torch.float64))
    assert (U.shape, S.shape, Vh.shape) == (tuple(U_t.shape), tuple(S_t.shape), tuple(Vh_t.shape))
    np.testing.assert_allclose(Vh.numpy(), Vh_t.numpy())


def test_float32_stays_float32():
    A = bai.tensor(_well_conditioned(2, 3, 3), dtype=bai.float32)
    for out in (
        bai.linalg.det(A),
        bai.linalg.inv(A),
        bai.linalg.solve(A, A),
        bai.linalg.slogdet(A).logabsdet,
        bai.linalg.pinv(A),
        bai.linalg.qr(A).Q,
        bai.linalg.svd(A).U,
    ):
        assert out.dtype == bai.float32


def test_bad_inputs_name_the_op():
    with pytest.raises(ShapeError, match=r"^\[det\] needs matrices \(\.\.\., n, n\)"):
        bai.linalg.det(bai.ones(3))
    with pytest.raises(ShapeError, match=r"^\[inv\] needs square matrices .* \(2, 3\)"):
        bai.linalg.inv(bai.ones(2, 3))
    with pytest.raises(
        DTypeError, match=r"^\[cholesky\] computes in float32 or float64, got int64"
    ):
        bai.linalg.cholesky(bai.ones(2, 2, dtype=bai.int64))
    with pytest.raises(DTypeError, match=r"^\[eigvalsh\] .* float16"):
        bai.linalg.eigvalsh(bai.ones(2, 2, dtype=bai.float16))
    with pytest.raises(ArgumentError, match=r"^\[svd\] driver="):
        bai.linalg.svd(bai.ones(2, 2), driver="gesvd")


# ----- frozen graphs -------------------------------------------------------------------------------


def test_frozen_solve_and_det_give_eager_results_on_new_inputs():
    def log_likelihood(covariance, x):
        """A Gaussian's log-density up to a constant: through solve and slogdet."""
        return -0.5 * (x * bai.linalg.solve(covariance, x)).sum(-1) - 0.5 * bai.logdet(covariance)

    frozen = freeze(
        log_likelihood, [bai.TensorSpec((4, 3, 3), "float32"), bai.TensorSpec((4, 3), "float32")]
    )
    covariance = _positive_definite(4, 3, 3, seed=5).astype(np.float32)
    x = _random(4, 3, seed=6).astype(np.float32)
    eager = log_likelihood(bai.tensor(covariance), bai.tensor(x))
    np.testing.assert_allclose(frozen(covariance, x).numpy(), eager.numpy(), rtol=1e-6)

    frozen_det = freeze(bai.linalg.det, [bai.TensorSpec(("batch", 3, 3), "float64")])
    A = _well_conditioned(5, 3, 3, seed=7)
    np.testing.assert_allclose(frozen_det(A).numpy(), bai.linalg.det(bai.tensor(A)).numpy())


def test_freezing_a_lstsq_whose_fields_depend_on_the_rank_is_refused():
    with pytest.raises(GraphError):
        freeze(
            lambda a, b: bai.linalg.lstsq(a, b, driver="gelsd").residuals,
            [bai.TensorSpec((5, 3), "float64"), bai.TensorSpec((5, 2), "float64")],
        )


# ----- PyTorch's documentation examples ------------------------------------------------------------


def test_documentation_examples_of_det_slogdet_inv_and_solve():
    torch = bai  # the examples run with only the import changed
    torch.manual_seed(0)
    A = torch.randn(3, 3)
    torch.linalg.det(A)
    A = torch.randn(3, 2, 2)
    assert torch.linalg.det(A).shape == (3,)

    A = torch.tensor([[0.0032, -0.2239, -1.1219],
                      [-0.6690, 0.1161, 0.4053],
                      [-1.6218, -0.9273, -0.0082]])  # fmt: skip
    assert abs(torch.linalg.det(A).item() - -0.7576) < 1e-4
    assert math.isnan(torch.logdet(A).item())
    sign, logabsdet = torch.linalg.slogdet(A)
    assert sign.item() == -1.0 and abs(logabsdet.item() - -0.2776) < 1e-4

    A = torch.randn(4, 4)
    Ainv = torch.linalg.inv(A)
    assert torch.dist(A @ Ainv, torch.eye(4)) < 1e-4
    A = torch.randn(2, 3, 4, 4)  # Batch of matrices
    Ainv = torch.linalg.inv(A)
    assert torch.dist(A @ Ainv, torch.eye(4)) < 1e-3

    A = torch.randn(3, 3)
    b = torch.randn(3)
    x = torch.linalg.solve(A, b)
    assert torch.allclose(A @ x, b, atol=1e-5)
    A = torch.randn(2, 3, 3)
    B = torch.randn(2, 3, 4)
    X = torch.linalg.solve(A, B)
    assert X.shape == (2, 3, 4)
    assert torch.allclose(A @ X, B, atol=1e-5)
    A = torch.randn(2, 3, 3)
    b = torch.randn(3, 1)
    x = torch.linalg.solve(A, b)  # b is broadcasted to size (2, 3, 1)
    assert x.shape == (2, 3, 1)
    assert torch.allclose(A @ x, b, atol=1e-5)
    b = torch.randn(3)
    x = torch.linalg.solve(A, b)  # b is broadcasted to size (2, 3)
    assert x.shape == (2, 3)
    Ax = A @ x.unsqueeze(-1)
    assert torch.allclose(Ax, b.unsqueeze(-1).expand_as(Ax), atol=1e-5)


def test_documentation_examples_of_the_factorisations():
    torch = bai
    torch.manual_seed(0)
    A = torch.randn(3, 2, 2, dtype=torch.float64)
    A = A @ A.mT + torch.eye(2)  # batch of symmetric positive-definite matrices
    L = torch.linalg.cholesky(A)
    assert torch.dist(L @ L.mT, A) < 1e-12

    A = torch.tensor([[12.0, -51, 4], [6, 167, -68], [-4, 24, -41]])
    Q, R = torch.linalg.qr(A)
    expected_Q = [[-0.8571, 0.3943, 0.3314], [-0.4286, -0.9029, -0.0343], [0.2857, -0.1714, 0.9429]]
    np.testing.assert_allclose(Q.numpy(), expected_Q, atol=1e-4)
    np.testing.assert_allclose(R.numpy(), [[-14, -21, 14], [0, -175, 70], [0, 0, -35]], atol=1e-3)
    np.testing.assert_array_equal((Q @ R).round().numpy(), A.numpy())
    Q2, R2 = torch.linalg.qr(A, mode='r')  # fmt: skip
    assert Q2.shape == (0,)
    assert torch.equal(R, R2)
    A = torch.randn(3, 4, 5)
    Q, R = torch.linalg.qr(A, mode='complete')  # fmt: skip
    assert torch.dist(Q @ R, A) < 1e-5
    assert torch.dist(Q.mT @ Q, torch.eye(4)) < 1e-5

    A = torch.randn(3, 2, 2, dtype=torch.float64)
    A = A + A.mT  # creates a batch of symmetric matrices
    L, Q = torch.linalg.eigh(A)
    assert torch.dist(Q @ torch.diag_embed(L) @ Q.mT, A) < 1e-12
    assert torch.linalg.eigvalsh(A).shape == (3, 2)

    A = torch.randn(5, 3)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    assert (U.shape, S.shape, Vh.shape) == ((5, 3), (3,), (3, 3))
    assert torch.dist(A, U @ torch.diag(S) @ Vh) < 1e-5
    U, S, Vh = torch.linalg.svd(A)
    assert (U.shape, S.shape, Vh.shape) == ((5, 5), (3,), (3, 3))
    assert torch.dist(A, U[:, :3] @ torch.diag(S) @ Vh) < 1e-5
    A = torch.randn(7, 5, 3)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    assert torch.dist(A, U @ torch.diag_embed(S) @ Vh) < 1e-5


def test_documentation_examples_of_pinv_power_rank_multi_dot_lstsq_and_triangular_solves():
    torch = bai
    torch.manual_seed(0)
    A = torch.randn(3, 5)
    assert torch.linalg.pinv(A).shape == (5, 3)
    A = torch.randn(2, 6, 3)
    Apinv = torch.linalg.pinv(A)
    assert torch.dist(Apinv @ A, torch.eye(3)) < 1e-5

    A = torch.randn(3, 3)
    np.testing.assert_array_equal(torch.linalg.matrix_power(A, 0).numpy(), np.eye(3))
    assert torch.linalg.matrix_power(A.expand(2, -1, -1), -2).shape == (2, 3, 3)

    A = torch.eye(10)
    assert torch.linalg.matrix_rank(A).item() == 10
    B = torch.eye(10)
    B[0, 0] = 0
    assert torch.linalg.matrix_rank(B).item() == 9
    A = torch.randn(4, 3, 2)
    assert torch.linalg.matrix_rank(A).tolist() == [2, 2, 2, 2]
    A = torch.randn(2, 4, 2, 3)
    assert torch.linalg.matrix_rank(A).tolist() == [[2, 2, 2, 2], [2, 2, 2, 2]]

    from buildingai.linalg import multi_dot

    assert multi_dot([torch.tensor([1, 2]), torch.tensor([2, 3])]).item() == 8
    assert multi_dot([torch.tensor([[1, 2]]), torch.tensor([2, 3])]).tolist() == [8]
    assert multi_dot([torch.tensor([[1, 2]]), torch.tensor([[2], [3]])]).tolist() == [[8]]
    A = torch.arange(2 * 3).view(2, 3)
    B = torch.arange(3 * 2).view(3, 2)
    C = torch.arange(2 * 2).view(2, 2)
    assert multi_dot((A, B, C)).tolist() == [[26, 49], [80, 148]]

    A = torch.randn(1, 3, 3)
    B = torch.randn(2, 3, 3)
    X = torch.linalg.lstsq(A, B).solution  # A is broadcasted to shape (2, 3, 3)
    assert torch.dist(X, torch.linalg.pinv(A) @ B) < 1e-5
    S = torch.linalg.lstsq(A, B, driver='gelsd').singular_values  # fmt: skip
    assert torch.dist(S, torch.linalg.svdvals(A)) < 1e-5
    A[:, 0].zero_()  # Decrease the rank of A
    rank = torch.linalg.lstsq(A, B).rank
    assert rank.tolist() == [2]

    A = torch.randn(3, 3).triu_()
    B = torch.randn(3, 4)
    X = torch.linalg.solve_triangular(A, B, upper=True)
    assert torch.allclose(A @ X, B, atol=1e-4)
    A = torch.randn(2, 3, 3).tril_()
    B = torch.randn(2, 3, 4)
    X = torch.linalg.solve_triangular(A, B, upper=False)
    assert torch.allclose(A @ X, B, atol=1e-4)
    A = torch.randn(2, 4, 4).tril_()
    B = torch.randn(2, 3, 4)
    X = torch.linalg.solve_triangular(A, B, upper=False, left=False)
    assert torch.allclose(X @ A, B, atol=1e-4)
