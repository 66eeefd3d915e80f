"""Neural-network primitives: softmax, log_softmax, dropout, embedding."""

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op, constant, integers, torch

F = torch.nn.functional

# ----- softmax and log_softmax -------------------------------------------------------------------

SOFTMAX_CASES = [
    ((5,), -1),
    ((3, 4), -1),
    ((3, 4), 0),
    ((2, 3, 4), 1),
    ((2, 3, 4), -3),
    ((1, 1), 1),  # one-element slices: softmax 1, log_softmax 0
    ((0, 3), 1),  # zero-size batch
    ((3, 0), 1),  # zero-size softmax axis
    ((), 0),  # a scalar
]


@pytest.mark.parametrize("shape, axis", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family(name, shape, axis):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    check_op(lambda x: ours(x, axis), shape, torch_fn=lambda x: theirs(x, axis), gradgrad=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_spellings(name):
    theirs = getattr(F, name)
    check_op(lambda x: getattr(bai, name)(x, dim=0), (3, 4), torch_fn=lambda x: theirs(x, dim=0))
    check_op(lambda x: getattr(x, name)(1), (3, 4), torch_fn=lambda x: theirs(x, 1))
    check_op(lambda x: getattr(bai, name)(x), (3, 4), torch_fn=lambda x: theirs(x, -1))
    # dtype= casts first (and the gradient is cast back)
    check_op(
        lambda x: getattr(bai, name)(x.astype("float32"), dtype="float64"),
        (3, 4),
        torch_fn=lambda x: theirs(x.float(), -1, dtype=torch.float64),
        atol=1e-6,
        rtol=1e-6,
        gradcheck=False,
    )


def test_softmax_composed_with_itself():
    """Second derivatives through saved outputs, with log_softmax feeding softmax."""
    check_op(
        lambda x: bai.softmax(bai.log_softmax(x, 0) * 3.0, 1),
        (3, 4),
        torch_fn=lambda x: torch.softmax(torch.log_softmax(x, 0) * 3.0, 1),
        gradgrad=True,
    )


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_stable_for_huge_logits_float32(name):
    logits = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4, -1e4, -1e4]], np.float32)
    x = bai.tensor(logits, requires_grad=True)
    out = getattr(bai, name)(x)
    assert out.dtype == bai.float32
    assert np.isfinite(out.numpy()).all()
    expected = getattr(torch, name)(torch.tensor(logits), -1).numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    weights = np.arange(8, dtype=np.float32).reshape(2, 4)
    out.backward(bai.tensor(weights))
    assert np.isfinite(x.grad.numpy()).all()
    reference = torch.tensor(logits, requires_grad=True)
    getattr(torch, name)(reference, -1).backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # nan rows come silently, as in PyTorch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_far_apart_and_non_finite_match_pytorch(dtype):
    """Rows are shifted by the input's one maximum where that loses no precision; rows far
    below it, and rows with inf, -inf or nan, are computed with their own maximum."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((12, 6)).astype(dtype)
    logits[1] += 60.0  # every other row sits 55-65 below this one's maximum
    logits[2] -= 30.0
    logits[3] -= 100.0  # exp underflows under the shared shift: redone
    logits[4, 2] = -np.inf  # a masked entry
    logits[5] = -np.inf  # a fully masked row: nan, as in PyTorch
    logits[6, 0] = np.inf
    logits[7, 3] = np.nan
    out = bai.softmax(bai.tensor(logits), -1).numpy()
    expected = torch.softmax(torch.tensor(logits), -1).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)
    finite = ~np.isnan(out).any(axis=1)
    np.testing.assert_allclose(out[finite].sum(axis=1), 1.0, rtol=tolerance)
    masked = np.where(np.arange(6) < 3, logits[0], -np.inf)[None].repeat(4, axis=0)
    masked[2] = -np.inf  # one fully masked row among finite ones: shared shift, then redone
    out = bai.softmax(bai.tensor(masked), -1).numpy()
    expected = torch.softmax(torch.tensor(masked), -1).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


def test_softmax_sums_to_one_and_log_softmax_matches():
    x = bai.randn(4, 7)
    np.testing.assert_allclose(bai.softmax(x, 1).numpy().sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        bai.log_softmax(x, 1).numpy(), np.log(bai.softmax(x, 1).numpy()), atol=1e-6
    )


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_errors(name):
    function = getattr(bai, name)
    with pytest.raises(bai.DTypeError, match=rf"\[{name}\] expects a floating-point tensor, got "):
        function(bai.tensor([1, 2, 3]))
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] axis 2 is out of range for a tensor"):
        function(bai.zeros(3, 4), 2)
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] axis 1 is out of range"):
        function(bai.tensor(1.0), 1)
    with pytest.raises(TypeError, match="got both axis=0 and dim=1"):
        function(bai.zeros(3, 4), 0, dim=1)


# ----- dropout -----------------------------------------------------------------------------------

MASK = np.array(
    [[True, False, True, True, False], [False, True, True, False, True]] * 2, dtype=bool
)


@pytest.mark.parametrize("p", [0.3, 0.5, 0.9])
def test_dropout_with_mask_matches_torch(p):
    mask = bai.tensor(MASK)
    check_op(
        lambda x: bai.dropout(x, p, mask=mask),
        (4, 5),
        torch_fn=lambda x: x * torch.tensor(MASK) / (1 - p),
        gradgrad=True,
    )


def test_dropout_broadcast_mask_drops_whole_slices():
    channel_mask = np.array([True, False, True]).reshape(1, 3, 1)
    check_op(
        lambda x: bai.dropout(x, 0.25, mask=bai.tensor(channel_mask)),
        (2, 3, 4),
        torch_fn=lambda x: x * torch.tensor(channel_mask) / 0.75,
        gradgrad=True,
    )


def test_dropout_drawn_mask_is_the_published_mask():
    x = bai.randn(6, 7, requires_grad=True)
    y = bai.dropout(x, 0.4, generator=bai.Generator(seed=3))
    mask = bai.dropout_mask(x.shape, 0.4, generator=bai.Generator(seed=3))
    assert mask.dtype == bai.bool
    expected = np.where(mask.numpy(), x.numpy() / np.float32(0.6), 0)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    y.backward(bai.ones(6, 7))
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / np.float32(0.6), rtol=1e-6)


def test_dropout_same_seed_same_mask():
    x = bai.ones(50, 40)
    first = bai.dropout(x, 0.5, generator=bai.Generator(seed=7)).numpy()
    second = bai.dropout(x, 0.5, generator=bai.Generator(seed=7)).numpy()
    other = bai.dropout(x, 0.5, generator=bai.Generator(seed=8)).numpy()
    np.testing.assert_array_equal(first, second)
    assert (first != other).any()
    generator = bai.Generator(seed=7)
    assert (bai.dropout(x, 0.5, generator=generator).numpy() == first).all()
    assert (bai.dropout(x, 0.5, generator=generator).numpy() != first).any()  # stream advances


def test_dropout_default_generator_follows_manual_seed():
    x = bai.ones(20, 20)
    bai.manual_seed(11)
    first = bai.dropout(x, 0.5).numpy()
    bai.manual_seed(11)
    np.testing.assert_array_equal(bai.dropout(x, 0.5).numpy(), first)


def test_dropout_keeps_the_expected_value():
    out = bai.dropout(bai.ones(200_000), 0.3, generator=bai.Generator(seed=0)).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert abs(out.mean() - 1.0) < 0.02


def test_dropout_identity_cases():
    x = bai.randn(3, 4, requires_grad=True)
    assert bai.dropout(x, 0.0) is x
    assert bai.dropout(x, 0.7, training=False) is x
    assert bai.dropout(x, 1.0, training=False) is x


def test_dropout_p_one_gives_zeros_and_zero_gradient():
    x = bai.tensor([[1.0, np.inf], [np.nan, -2.0]], requires_grad=True)
    y = bai.dropout(x, 1.0)
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 2), np.float32))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("p", [-0.1, 1.5, "0.5", None])
def test_dropout_rejects_bad_probability(p):
    with pytest.raises(
        bai.BuildingAIError, match=r"\[dropout\] p must be a probability in \[0, 1\]"
    ):
        bai.dropout(bai.ones(3), p)


def test_dropout_mask_errors():
    with pytest.raises(bai.DTypeError, match=r"\[dropout\] mask must be bool, got float32"):
        bai.dropout(bai.ones(2, 3), 0.5, mask=bai.ones(2, 3))
    with pytest.raises(bai.ShapeError, match=r"\[dropout\] mask \(3, 2\) does not broadcast to"):
        bai.dropout(bai.ones(2, 3), 0.5, mask=bai.tensor(np.ones((3, 2), bool)))


# ----- embedding ---------------------------------------------------------------------------------

EMBEDDING_CASES = [
    ((2, 3), 10),  # table larger than the batch
    ((4, 6), 3),  # many repeats, small table
    ((5,), 5),
    ((), 4),  # one index
    ((2, 2, 3), 6),
    ((0,), 4),  # no indices: zero gradient
]


@pytest.mark.parametrize("index_shape, count", EMBEDDING_CASES, ids=str)
def test_embedding(index_shape, count):
    check_op(
        lambda i, w: bai.embedding(i, w),
        integers(*index_shape, high=count),
        (count, 3),
        torch_fn=F.embedding,
        gradgrad=True,
    )


@pytest.mark.parametrize("padding_idx", [0, 2, -1])
def test_embedding_padding_idx(padding_idx):
    indices = constant(np.array([[0, 2, 2], [4, 0, 1], [4, 4, 3]]))
    check_op(
        lambda i, w: bai.embedding(i, w, padding_idx=padding_idx),
        indices,
        (5, 2),
        torch_fn=lambda i, w: F.embedding(i, w, padding_idx=padding_idx),
        gradgrad=True,
        gradcheck=False,  # by design the padding row gets no gradient, though it is read
    )


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_second_derivative(padding_idx):
    """A loss that is not linear in the weight differentiates through the gradient scatter."""
    check_op(
        lambda i, w: bai.embedding(i, w, padding_idx) * bai.embedding(i, w, padding_idx),
        constant(np.array([[1, 1, 0], [3, 1, 2]])),
        (4, 3),
        torch_fn=lambda i, w: F.embedding(i, w, padding_idx) ** 2,
        gradgrad=True,
        gradcheck=padding_idx is None,  # the padding row's gradient is zero by design
    )


def test_embedding_repeated_rows_add_up():
    weight = bai.zeros(4, 2, requires_grad=True)
    bai.embedding(bai.tensor([[1, 1], [1, 3]], dtype="int32"), weight).sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy(), [[0, 0], [3, 3], [0, 0], [1, 1]])
    assert weight.grad.dtype == bai.float32


def test_embedding_accepts_lists_and_arrays():
    weight = bai.tensor(np.arange(12.0).reshape(6, 2))
    np.testing.assert_array_equal(bai.embedding([5, 0], weight).numpy(), [[10, 11], [0, 1]])
    np.testing.assert_array_equal(bai.embedding(np.array([[2]]), weight).numpy(), [[[4, 5]]])


@pytest.mark.parametrize(
    "indices, message",
    [
        ([1, 10, 3], r"\[embedding\] index 10 is out of range for 10 embeddings"),
        ([[-1, 2]], r"\[embedding\] index -1 is out of range for 10 embeddings"),
    ],
)
def test_embedding_index_out_of_range(indices, message):
    with pytest.raises(IndexError, match=message) as info:
        bai.embedding(bai.tensor(indices), bai.zeros(10, 3))
    assert isinstance(info.value, bai.IndexingError)
    assert "help: indices must lie in [0, 9]" in str(info.value)


def test_embedding_errors():
    with pytest.raises(bai.DTypeError, match=r"\[embedding\] indices must be integers, got float"):
        bai.embedding(bai.tensor([1.0, 2.0]), bai.zeros(4, 3))
    with pytest.raises(bai.ShapeError, match=r"\[embedding\] weight must be 2-D .* got \(4,\)"):
        bai.embedding(bai.tensor([1]), bai.zeros(4))
    with pytest.raises(bai.ShapeError, match=r"\[embedding\] padding_idx 4 is out of range for 4"):
        bai.embedding(bai.tensor([1]), bai.zeros(4, 3), padding_idx=4)
