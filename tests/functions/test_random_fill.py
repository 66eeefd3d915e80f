"""In-place random fills (``normal_``, ``uniform_``, ``exponential_``, ``bernoulli_``,
``random_``, ...) against PyTorch: signatures, dtypes, ranges and statistics; the in-place
rules (version counter, leaf refusal, zero gradient in a graph); a traced graph draws again."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

N = 40_000  # enough draws for means within a few hundredths


def _both(shape, dtype="float32"):
    return bai.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=getattr(torch, dtype))


@pytest.mark.parametrize(
    ("call", "mean", "std"),
    [
        (lambda x: x.normal_(), 0.0, 1.0),
        (lambda x: x.normal_(2.0, 0.5), 2.0, 0.5),
        (lambda x: x.normal_(mean=-1.0, std=3.0), -1.0, 3.0),
        (lambda x: x.uniform_(), 0.5, (1 / 12) ** 0.5),
        (lambda x: x.uniform_(-2.0, 4.0), 1.0, (36 / 12) ** 0.5),
        (lambda x: x.uniform_(**{"from": -1, "to": 1}), 0.0, (4 / 12) ** 0.5),
        (lambda x: x.exponential_(), 1.0, 1.0),
        (lambda x: x.exponential_(lambd=4.0), 0.25, 0.25),
        (lambda x: x.log_normal_(0.0, 0.25), np.exp(0.25**2 / 2), None),
        (lambda x: x.geometric_(0.25), 4.0, (0.75 / 0.25**2) ** 0.5),
        (lambda x: x.bernoulli_(0.3), 0.3, (0.3 * 0.7) ** 0.5),
        (lambda x: x.bernoulli_(), 0.5, 0.5),
    ],
)
def test_statistics_match_pytorch(call, mean, std):
    bai.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = _both((N,))
    assert call(ours) is ours  # returns the tensor itself, as PyTorch's
    call(theirs)
    # five standard errors of the mean (std 3 gives 0.075: a fixed 0.03 failed one run in 20)
    spread = 5 * (std if std is not None else 1.0) / N**0.5
    for values in (ours.numpy(), theirs.numpy()):
        assert values.dtype == np.float32
        assert abs(values.mean() - mean) < max(spread, 0.01 * max(1.0, mean))
        if std is not None:
            assert abs(values.std() - std) < 0.03 * max(1.0, std)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_uniform_stays_in_range_and_dtype(dtype):
    ours, theirs = _both((1000,), dtype)
    ours.uniform_(-3, -1)
    theirs.uniform_(-3, -1)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    values = ours.numpy().astype(np.float64)
    assert values.min() >= -3 and values.max() <= -1


def test_cauchy_median_matches_pytorch():
    ours, theirs = _both((N,))
    ours.cauchy_(median=1.0, sigma=2.0)
    theirs.cauchy_(median=1.0, sigma=2.0)
    for values in (ours.numpy(), theirs.numpy()):
        assert abs(np.median(values) - 1.0) < 0.06
        assert abs(np.quantile(values, 0.75) - 3.0) < 0.1  # median + sigma


@pytest.mark.parametrize(
    ("dtype", "args", "low", "high"),
    [
        ("int64", (10,), 0, 10),
        ("int64", (-5, 5), -5, 5),
        ("int32", (3, 4), 3, 4),
        ("uint8", (), 0, 256),
        ("int8", (), 0, 128),
        ("bool", (), 0, 2),
        ("float32", (7,), 0, 7),
        ("float16", (), 0, 2**11 + 1),
        ("float32", (), 0, 2**24 + 1),
    ],
)
def test_random_draws_integers_in_pytorchs_range(dtype, args, low, high):
    ours, theirs = _both((20_000,), dtype)
    ours.random_(*args)
    theirs.random_(*args)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    for values in (ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64)):
        assert values.min() >= low and values.max() <= high - 1
        assert np.all(values == np.round(values))
        assert abs(values.mean() - (low + high - 1) / 2) < 0.03 * max(1, high - low)


def test_random_of_int64_spans_its_range():
    values = bai.zeros(1000, dtype="int64").random_().numpy()
    assert values.min() >= 0 and values.max() > 2**62


def test_bernoulli_with_a_tensor_of_probabilities_and_integer_targets():
    p = bai.tensor([0.0, 1.0, 0.0, 1.0])
    assert bai.zeros(4, dtype="int64").bernoulli_(p).tolist() == [0, 1, 0, 1]
    assert torch.zeros(4, dtype=torch.int64).bernoulli_(torch.tensor([0.0, 1, 0, 1])).tolist() == [
        0, 1, 0, 1,
    ]  # fmt: skip
    rows = bai.zeros(2, 3, dtype="bool").bernoulli_(bai.tensor([[0.0], [1.0]]))
    assert rows.tolist() == [[False] * 3, [True] * 3]


def test_the_generator_keyword_repeats_a_draw():
    first, second = bai.empty(5), bai.empty(5)
    first.normal_(generator=bai.Generator().manual_seed(3))
    second.normal_(generator=bai.Generator().manual_seed(3))
    assert first.tolist() == second.tolist()
    bai.manual_seed(11)
    a = bai.empty(4).uniform_(-1, 1).tolist() + bai.empty(3).random_(100).tolist()
    bai.manual_seed(11)
    assert a == bai.empty(4).uniform_(-1, 1).tolist() + bai.empty(3).random_(100).tolist()


@pytest.mark.parametrize(
    ("name", "args"),
    [("normal_", ()), ("uniform_", ()), ("exponential_", ()), ("cauchy_", ()),
     ("log_normal_", ())],
)  # fmt: skip
def test_continuous_fills_refuse_integer_tensors(name, args):
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch.zeros(3, dtype=torch.int64), name)(*args)
    with pytest.raises(bai.DTypeError, match=rf"\[{name}\].*int64"):
        getattr(bai.zeros(3, dtype="int64"), name)(*args)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.uniform_(5, 2), r"\[uniform_\].*low=5 > high=2"),
        (lambda x: x.normal_(0, -1), r"\[normal_\] std must be >= 0"),
        (lambda x: x.exponential_(-1), r"\[exponential_\] expects lambd > 0"),
        (lambda x: x.bernoulli_(1.5), r"\[bernoulli_\] expects p in \[0, 1\]"),
        (lambda x: x.random_(5, 2), r"\[random_\] expects low < high"),
    ],
)
def test_bad_arguments_are_named(call, message):
    ours, theirs = _both((4,))
    with pytest.raises(RuntimeError):
        call(theirs)
    with pytest.raises(bai.BuildingAIError, match=message):
        call(ours)
    assert ours.version == 0


def test_random_bounds_outside_the_dtype_are_refused():
    with pytest.raises(bai.BuildingAIError, match=r"\[random_\] \[-1, 300\) does not fit in uint8"):
        bai.zeros(3, dtype="uint8").random_(-1, 300)


def test_in_place_rules_hold():
    x = bai.zeros(3)
    x.normal_()
    assert x.version == 1
    leaf = bai.zeros(3, requires_grad=True)
    tleaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tleaf.normal_()
    with pytest.raises(bai.AutogradError, match=r"\[normal_\] a leaf tensor"):
        leaf.normal_()
    with bai.no_grad():  # how initialisers write parameters, in both libraries
        leaf.uniform_(-0.1, 0.1)
    assert np.all(np.abs(leaf.numpy()) <= 0.1) and leaf.requires_grad


def test_a_filled_tensor_in_a_graph_gives_a_zero_gradient_like_pytorch():
    a, ta = bai.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    b, tb = a * 2, ta * 2
    b.normal_()
    tb.normal_()
    (b.sum() + (a * 3).sum()).backward()
    (tb.sum() + (ta * 3).sum()).backward()
    assert a.grad.tolist() == ta.grad.tolist() == [3.0, 3.0, 3.0]


def test_a_frozen_function_draws_afresh_on_each_call():
    def noisy(x):
        return x.clone().normal_() + x

    frozen = bai.freeze(noisy, input_signature=[bai.TensorSpec((None, 4), "float32")])
    x = bai.zeros(2, 4)
    first, second = frozen(x).numpy(), frozen(x).numpy()
    assert first.shape == (2, 4) and not np.array_equal(first, second)
    bai.manual_seed(5)
    eager = noisy(x).numpy()
    bai.manual_seed(5)
    np.testing.assert_array_equal(frozen(x).numpy(), eager)
