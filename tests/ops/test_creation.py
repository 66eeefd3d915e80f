"""Factories, conversions and leaving the framework: ``tensor``, ``zeros``... ``randint``, ``.to``,
``.numpy``, ``__array__``, and the dtype rules for NumPy scalars and 0-d reductions."""

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.ops import creation
from buildingai.ops.abstract import DimExpr, SymbolicSizeError, ValueSpec

# ----- tensor() ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dtype",
    [
        (1.5, bai.float32),
        ([1.0, 2.0], bai.float32),
        ([[1.0], [2.0]], bai.float32),
        (3, bai.int64),
        ([1, 2, 3], bai.int64),
        (True, bai.bool_),
        ([True, False], bai.bool_),
        ([1, 2.5], bai.float32),  # mixed ints and floats give the default float dtype
    ],
    ids=str,
)
def test_tensor_infers_dtype_like_torch(data, dtype):
    x = bai.tensor(data)
    assert x.dtype == dtype
    assert x.dtype.name == str(torch.tensor(data).dtype).replace("torch.", "")
    np.testing.assert_array_equal(x.numpy(), np.array(data, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int8, np.uint8, np.bool_])
def test_tensor_keeps_an_arrays_dtype(dtype):
    array = np.arange(6).reshape(2, 3).astype(dtype)
    x = bai.tensor(array)
    assert x.dtype == array.dtype
    np.testing.assert_array_equal(x.numpy(), array)


def test_tensor_copies_its_input():
    array = np.zeros(3)
    x = bai.tensor(array)
    array[0] = 5.0
    assert x.numpy()[0] == 0.0
    y = bai.tensor(x)
    x.data[1] = 7.0
    assert y.numpy()[1] == 0.0


@pytest.mark.parametrize("dtype", ["float64", bai.float64, np.float64])
def test_tensor_dtype_override(dtype):
    assert bai.tensor([1.0, 2.0], dtype=dtype).dtype == bai.float64
    assert bai.tensor([1, 2], dtype=dtype).dtype == bai.float64
    assert bai.tensor(np.arange(3, dtype=np.int32), dtype=dtype).dtype == bai.float64


def test_tensor_requires_grad_and_refuses_it_for_integers():
    assert bai.tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(bai.DTypeError, match="only floating-point tensors can require gradients"):
        bai.tensor([1, 2], requires_grad=True)


def test_tensor_of_zero_dim_tensors_is_numeric():
    x = bai.tensor([bai.tensor(1.0), bai.tensor(2.0)])
    assert x.dtype == bai.float32
    assert x.shape == (2,)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    ints = bai.tensor([bai.tensor(1), bai.tensor(2), bai.tensor(3)])
    assert ints.dtype == bai.int64
    np.testing.assert_array_equal(ints.numpy(), [1, 2, 3])


@pytest.mark.parametrize("data", ["abc", ["a", "b"], [b"x"]], ids=str)
def test_tensor_of_strings_is_a_dtype_error(data):
    with pytest.raises(bai.DTypeError, match="tensor"):
        bai.tensor(data)


def test_tensor_of_a_ragged_list_names_tensor():
    with pytest.raises(bai.BuildingAIError, match=r"tensor") as info:
        bai.tensor([[1, 2], [3]])
    assert "tensor" in str(info.value)


# ----- shape factories --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, reference",
    [("zeros", np.zeros), ("ones", np.ones)],
)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4), (1, 1, 2)], ids=str)
def test_zeros_ones(name, reference, shape):
    factory = getattr(bai, name)
    for x in (factory(*shape), factory(shape), factory(list(shape))):
        assert x.shape == shape
        assert x.dtype == bai.float32
        np.testing.assert_array_equal(x.numpy(), reference(shape, dtype=np.float32))
    assert factory(*shape, dtype="int64").dtype == bai.int64
    assert factory(*shape, dtype=bai.float64).dtype == bai.float64


def test_sizes_may_be_numpy_ints_even_alone():
    assert bai.zeros(np.int64(5)).shape == (5,)
    assert bai.ones(np.int32(2), 3).shape == (2, 3)
    assert bai.full((np.int64(2),), 1.0).shape == (2,)
    assert bai.zeros(np.array([2, 3])).shape == (2, 3)


def test_empty_has_shape_and_dtype():
    x = bai.empty(2, 3, dtype="float64")
    assert x.shape == (2, 3) and x.dtype == bai.float64


@pytest.mark.parametrize(
    "fill, dtype",
    [(1.5, bai.float32), (7, bai.int64), (True, bai.bool_)],
    ids=str,
)
def test_full_dtype_follows_the_fill_value_like_torch(fill, dtype):
    x = bai.full((2, 3), fill)
    assert x.shape == (2, 3)
    assert x.dtype == dtype
    assert x.dtype.name == str(torch.full((2, 3), fill).dtype).replace("torch.", "")
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), fill))


def test_full_accepts_int_shape_and_dtype():
    x = bai.full(3, 2.0, dtype="float64")
    assert x.shape == (3,) and x.dtype == bai.float64
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    "args",
    [(5,), (2, 7), (1, 10, 3), (10, 0, -2), (0,), (5, 5)],
    ids=str,
)
def test_arange_integer_form_matches_torch(args):
    x = bai.arange(*args)
    expected = torch.arange(*args)
    assert x.dtype == bai.int64
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


@pytest.mark.parametrize(
    "args",
    [(1.0, 2.0, 0.25), (3.0,), (0, 1, 0.1), (-1.0, 1.0, 0.5), (2.5,)],
    ids=str,
)
def test_arange_float_form_matches_torch(args):
    x = bai.arange(*args)
    expected = torch.arange(*args)
    assert x.dtype == bai.float32
    assert x.shape == tuple(expected.shape)
    np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-6)


def test_arange_keywords_and_dtype():
    x = bai.arange(0, 6, step=2, dtype="float64")
    assert x.dtype == bai.float64
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0, 4.0])


@pytest.mark.parametrize("args", [(0, 1, 5), (-2.0, 3.0, 11), (1, 1, 1), (0, 1, 0)], ids=str)
def test_linspace_matches_torch(args):
    x = bai.linspace(*args)
    expected = torch.linspace(*args)
    assert x.dtype == bai.float32
    np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,)], ids=str)
def test_eye_matches_numpy(args):
    x = bai.eye(*args)
    assert x.dtype == bai.float32
    np.testing.assert_array_equal(x.numpy(), np.eye(*args, dtype=np.float32))
    assert bai.eye(*args, dtype="int64").dtype == bai.int64


# ----- factories as op records ------------------------------------------------------------------


class _Recorder(DispatchMode):
    def __init__(self) -> None:
        self.calls = []

    def after_op(self, op, inputs, output, attrs) -> None:
        self.calls.append((op.name, inputs, dict(attrs)))


def test_factories_run_through_dispatch_as_op_records_without_inputs():
    source = bai.ones(2, 3, dtype="float64")
    with dispatch_mode(_Recorder()) as recorder:
        bai.zeros(2, 3)
        bai.empty(4)
        bai.full((2,), 7)
        bai.zeros_like(source)
        bai.arange(5)
        bai.eye(2, 3)
        bai.linspace(0, 1, 3)
    names = [name for name, _, _ in recorder.calls]
    assert names == ["full", "full", "full", "full", "arange", "eye", "linspace"]
    assert all(inputs == () for _, inputs, _ in recorder.calls)
    float32, int64 = np.dtype("float32"), np.dtype("int64")
    attrs = [attrs for _, _, attrs in recorder.calls]
    assert attrs[0] == {"shape": (2, 3), "fill_value": 0, "dtype": float32, "device": "cpu"}
    assert attrs[1]["fill_value"] is None  # empty: uninitialised memory
    assert attrs[2]["fill_value"] == 7 and attrs[2]["dtype"] == int64
    assert attrs[3]["shape"] == (2, 3) and attrs[3]["dtype"] == np.dtype("float64")
    assert attrs[4] == {"start": 0, "stop": 5, "step": 1, "dtype": int64, "device": "cpu"}
    assert attrs[5] == {"rows": 2, "columns": 3, "dtype": float32, "device": "cpu"}
    assert attrs[6]["steps"] == 3


def test_factory_records_are_not_differentiable_and_requires_grad_makes_a_leaf():
    for op in (creation.FULL, creation.ARANGE, creation.EYE, creation.LINSPACE):
        assert not op.differentiable
    x = bai.eye(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 3), 3.0))
    assert not bai.ones(2).requires_grad
    with pytest.raises(bai.DTypeError, match="only floating-point tensors can require gradients"):
        bai.zeros(2, dtype="int64", requires_grad=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda: bai.zeros(2, -1),
        lambda: bai.ones((-3,)),
        lambda: bai.empty(-1, 2),
        lambda: bai.full((2, -2), 1.0),
        lambda: bai.eye(-1),
    ],
    ids=["zeros", "ones", "empty", "full", "eye"],
)
def test_negative_sizes_are_a_shape_error_naming_the_factory(make):
    with pytest.raises(bai.ShapeError, match=r"^\[(zeros|ones|empty|full|eye)\] negative size"):
        make()
    with pytest.raises(ValueError):  # a ShapeError is a ValueError, as NumPy's error was
        make()


def test_arange_step_zero_and_linspace_negative_steps_are_argument_errors():
    with pytest.raises(bai.BuildingAIError, match=r"\[arange\] step must be non-zero") as info:
        bai.arange(0, 5, 0)
    assert isinstance(info.value, ValueError)
    with pytest.raises(bai.BuildingAIError, match=r"\[linspace\] steps must be non-negative"):
        bai.linspace(0.0, 1.0, -2)


def test_factories_take_a_device_and_refuse_unknown_ones():
    for device in ("cpu", bai.Device("cpu")):
        for made in (bai.zeros(2, device=device), bai.arange(3, device=device)):
            assert made.device == "cpu"
    with pytest.raises(bai.DeviceError, match="unknown device 'tpu'"):
        bai.zeros(2, device="tpu")
    with pytest.raises(bai.DeviceError, match="unknown device"):
        bai.eye(2, device="gpu0")


@pytest.mark.skipif(not bai.cuda_is_available(), reason="needs a CUDA GPU")
def test_factories_on_the_gpu_make_device_arrays():
    for made in (
        bai.zeros(2, 3, device="cuda"),
        bai.full((2,), 1.5, device="cuda"),
        bai.arange(4, device="cuda"),
        bai.eye(3, device="cuda"),
        bai.linspace(0, 1, 5, device="cuda"),
        bai.ones_like(bai.ones(2).to("cuda")),
    ):
        assert made.device == "cuda:0"
    np.testing.assert_array_equal(bai.arange(4, device="cuda").numpy(), np.arange(4))


def test_full_keeps_the_sign_of_a_negative_zero_and_zeros_of_bool_are_false():
    assert np.signbit(bai.full((3,), -0.0).numpy()).all()
    np.testing.assert_array_equal(bai.zeros(2, dtype="bool").numpy(), [False, False])
    np.testing.assert_array_equal(bai.full((2,), np.float32(1.5)).numpy(), [1.5, 1.5])
    assert bai.full((2,), np.float32(1.5)).dtype == bai.float32
    assert bai.full((2,), bai.tensor(2.0, dtype="float64")).dtype == bai.float64


F32, I64 = np.dtype("float32"), np.dtype("int64")
N = DimExpr(("n",))


def test_factory_infer_keeps_symbolic_sizes():
    assert creation.FULL.infer(shape=(N, 16), fill_value=0, dtype=F32) == ValueSpec((N, 16), F32)
    assert creation.FULL.infer(shape=(), fill_value=1, dtype=I64, device="cuda:0") == ValueSpec(
        (), I64, "cuda:0"
    )
    assert creation.EYE.infer(rows=N, columns=3, dtype=F32).shape == (N, 3)
    assert creation.LINSPACE.infer(start=0.0, stop=1.0, steps=N + 1, dtype=F32).shape == (N + 1,)
    for start, stop, step, length in [
        (0, N, 1, N),
        (1, N + 1, 1, N),
        (N, 0, -1, N),
        (0, 2 * N, 2, N),
        (2, N, 1, N - 2),
        (N, N + 3, 1, 3),
    ]:
        spec = creation.ARANGE.infer(start=start, stop=stop, step=step, dtype=I64)
        assert spec.shape == (length,), (start, stop, step)
    for start, stop, step in [(0, N, 2), (0.5, N, 1), (0, N, 1.0)]:
        with pytest.raises(SymbolicSizeError):
            creation.ARANGE.infer(start=start, stop=stop, step=step, dtype=I64)


@pytest.mark.parametrize(
    "args",
    [(0, 5, 1), (2, 7, 2), (1, 10, 3), (10, 0, -2), (5, 5, 1), (5, 0, 1), (0, -4, -3),
     (1.0, 2.0, 0.25), (0, 1, 0.1), (-1.0, 1.0, 0.5), (0.0, 2.5, 1), (3, 1.5, -0.5)],
    ids=str,
)  # fmt: skip
def test_arange_infer_agrees_with_forward(args):
    start, stop, step = args
    for dtype in (F32, I64, np.dtype("float64")):
        made = bai.arange(start, stop, step, dtype=dtype)
        spec = creation.ARANGE.infer(start=start, stop=stop, step=step, dtype=dtype)
        assert spec == ValueSpec(made.shape, dtype) and type(spec.shape[0]) is int


def test_factory_cost_counts_the_bytes_written():
    assert creation.FULL.cost(shape=(N, 16), fill_value=0, dtype=F32) == (0, 0, 64 * N)
    assert creation.FULL.cost(shape=(4, 16), fill_value=0, dtype=F32) == (0, 0, 256)
    assert creation.FULL.cost(shape=(4, 16), fill_value=None, dtype=F32) == (0, 0, 0)
    assert creation.ARANGE.cost(start=0, stop=10, step=3, dtype=I64) == (0, 0, 32)
    assert creation.EYE.cost(rows=N, columns=N, dtype=F32) == (0, 0, 4 * N * N)
    assert creation.LINSPACE.cost(start=0.0, stop=1.0, steps=5, dtype=F32) == (0, 0, 20)


# ----- random factories -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_rand_randn_shapes_dtypes_and_ranges(name):
    factory = getattr(bai, name)
    x = factory(200, 3)
    assert x.shape == (200, 3) and x.dtype == bai.float32
    assert factory((2, 5)).shape == (2, 5)
    assert factory(4, dtype="float64").dtype == bai.float64
    assert factory().shape == ()
    values = factory(20000).numpy()
    if name == "rand":
        assert values.min() >= 0.0 and values.max() < 1.0
        assert abs(values.mean() - 0.5) < 0.02
    else:
        assert abs(values.mean()) < 0.05 and abs(values.std() - 1.0) < 0.05


def test_randint_high_and_size_form_like_torch():
    x = bai.randint(5, (3,))
    assert x.shape == (3,) and x.dtype == bai.int64
    assert x.numpy().min() >= 0 and x.numpy().max() < 5
    many = bai.randint(5, (2000,)).numpy()
    assert set(np.unique(many)) == {0, 1, 2, 3, 4}


def test_randint_low_high_size_form():
    x = bai.randint(-3, 4, (40, 50))
    assert x.shape == (40, 50) and x.dtype == bai.int64
    values = x.numpy()
    assert values.min() == -3 and values.max() == 3
    assert bai.randint(0, 10, size=(2, 2), dtype="int32").dtype == bai.int32
    assert bai.randint(3, size=4).shape == (4,)


@pytest.mark.parametrize(
    "draw",
    [lambda **k: bai.rand(3, 2, **k), lambda **k: bai.randn(4, **k),
     lambda **k: bai.randint(0, 100, (5,), **k)],
    ids=["rand", "randn", "randint"],
)  # fmt: skip
def test_manual_seed_reproduces_the_streams(draw):
    bai.manual_seed(1234)
    first = [draw().numpy() for _ in range(2)]
    bai.manual_seed(1234)
    second = [draw().numpy() for _ in range(2)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    bai.manual_seed(99)
    assert not np.array_equal(draw().numpy(), first[0])


def test_explicit_generator_is_independent_of_the_default_one():
    bai.manual_seed(0)
    reference = bai.rand(5).numpy()
    bai.manual_seed(0)
    generator = bai.Generator(7)
    explicit = bai.rand(5, generator=generator).numpy()
    # drawing from the explicit generator did not advance the default stream
    np.testing.assert_array_equal(bai.rand(5).numpy(), reference)
    # and the explicit stream is its own, reproducible from its seed
    np.testing.assert_array_equal(bai.rand(5, generator=bai.Generator(7)).numpy(), explicit)
    bai.manual_seed(123)
    np.testing.assert_array_equal(bai.rand(5, generator=bai.Generator(7)).numpy(), explicit)
    ints = bai.randint(0, 9, (6,), generator=bai.Generator(3)).numpy()
    np.testing.assert_array_equal(bai.randint(0, 9, (6,), generator=bai.Generator(3)).numpy(), ints)


# ----- *_like -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_like_factories_keep_shape_and_dtype(dtype):
    source = bai.tensor(np.zeros((2, 3), dtype=dtype))
    np.testing.assert_array_equal(bai.zeros_like(source).numpy(), np.zeros_like(source.numpy()))
    np.testing.assert_array_equal(bai.ones_like(source).numpy(), np.ones_like(source.numpy()))
    np.testing.assert_array_equal(bai.full_like(source, 1).numpy(), np.full_like(source.numpy(), 1))
    for made in (bai.zeros_like(source), bai.ones_like(source), bai.full_like(source, 1)):
        assert made.shape == (2, 3) and made.dtype == source.dtype


def test_like_factories_dtype_override_and_requires_grad():
    source = bai.tensor(np.arange(4))
    assert bai.zeros_like(source, dtype="float64").dtype == bai.float64
    assert bai.ones_like(source, dtype=bai.float32).dtype == bai.float32
    full = bai.full_like(source, 2.5, dtype="float32")
    np.testing.assert_array_equal(full.numpy(), np.full(4, 2.5, dtype=np.float32))
    floats = bai.ones(3)
    for made in (
        bai.zeros_like(floats, requires_grad=True),
        bai.ones_like(floats, requires_grad=True),
        bai.full_like(floats, 3.0, requires_grad=True),
        bai.zeros(2, requires_grad=True),
        bai.rand(2, requires_grad=True),
        bai.arange(0.0, 3.0, requires_grad=True),
    ):
        assert made.requires_grad and made.is_leaf
        (made * 2.0).sum().backward()
        np.testing.assert_array_equal(made.grad.numpy(), np.full(made.shape, 2.0))


# ----- conversions ------------------------------------------------------------------------------


def test_to_astype_and_shorthands():
    x = bai.tensor([1.7, -2.2])
    assert x.to(bai.float64).dtype == bai.float64
    assert x.to("float16").dtype == bai.float16
    assert x.to(dtype="int64").dtype == bai.int64
    assert x.to("cpu") is x
    assert x.astype("float64").dtype == bai.float64
    assert x.astype(bai.float32) is x  # no conversion, no copy
    assert x.double().dtype == bai.float64
    assert x.double().float().dtype == bai.float32
    np.testing.assert_array_equal(x.long().numpy(), torch.tensor([1.7, -2.2]).long().numpy())
    with pytest.raises(bai.DTypeError, match="unknown dtype 'float128x'"):
        x.to("float128x")


def test_cast_between_floats_is_differentiable():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * 3.0).sum().backward()
    assert x.grad.dtype == bai.float32
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_numpy_returns_a_copy():
    x = bai.tensor([1.0, 2.0])
    array = x.numpy()
    array[0] = 99.0
    assert x.numpy()[0] == 1.0
    assert isinstance(array, np.ndarray)


def test_item_and_tolist():
    assert bai.tensor(2.5).item() == 2.5
    assert isinstance(bai.tensor(3).item(), int)
    assert isinstance(bai.tensor([[1.5]]).item(), float)
    with pytest.raises(ValueError, match=r"item\(\) needs a tensor with one element"):
        bai.tensor([1.0, 2.0]).item()
    assert bai.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert bai.tensor(1.5).tolist() == 1.5


def test_detach_shares_memory_and_version():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    assert d.data is y.data or np.shares_memory(d.data, y.data)
    d.add_(1.0)
    np.testing.assert_array_equal(y.numpy(), [3.0, 5.0])
    assert y.version == d.version == 1


def test_requires_grad_():
    x = bai.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    with pytest.raises(bai.DTypeError, match="only floating-point tensors"):
        bai.tensor([1, 2]).requires_grad_()
    y = bai.ones(2, requires_grad=True) * 2.0
    with pytest.raises(bai.AutogradError, match="non-leaf"):
        y.requires_grad_(False)


def test_numpy_array_protocol():
    x = bai.tensor([1.0, 2.0, 3.0])
    array = np.asarray(x)
    assert isinstance(array, np.ndarray) and array.dtype == np.float32
    np.testing.assert_array_equal(array, [1.0, 2.0, 3.0])
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    stacked = np.array([bai.tensor([1.0, 2.0]), bai.tensor([3.0, 4.0])])
    assert stacked.dtype == np.float32 and stacked.shape == (2, 2)
    np.testing.assert_array_equal(stacked, [[1.0, 2.0], [3.0, 4.0]])
    assert np.array(bai.tensor(5)).dtype == np.int64
    # a tensor that requires grad converts too (its values; the graph stays behind)
    np.testing.assert_array_equal(np.asarray(bai.ones(2, requires_grad=True)), [1.0, 1.0])


# ----- dtype rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scalar", [np.float64(2.0), np.float32(2.0), np.int64(2), 2.0, 2], ids=repr
)
def test_numpy_scalars_act_like_python_scalars(scalar):
    for result in (
        bai.ones(2) * scalar,
        scalar * bai.ones(2),
        bai.ones(2) + scalar,
        bai.ones(2) - scalar,
        bai.ones(2) / scalar,
    ):
        assert result.dtype == bai.float32
        assert result.dtype.name == str((torch.ones(2) * scalar).dtype).replace("torch.", "")
    np.testing.assert_array_equal((bai.ones(2) * scalar).numpy(), [2.0, 2.0])


def test_float32_divided_by_numpy_sqrt_stays_float32():
    x = bai.ones(3) / np.sqrt(2.0)
    assert x.dtype == bai.float32
    np.testing.assert_allclose(x.numpy(), np.full(3, 1 / np.sqrt(2.0)), rtol=1e-6)
    y = bai.ones(3, requires_grad=True)
    (y * np.float64(0.5)).sum().backward()
    assert y.grad.dtype == bai.float32


@pytest.mark.parametrize("axis", [0, -1, (0,), None])
def test_sum_of_a_zero_dim_tensor_over_axis_0_or_minus_1(axis):
    x = bai.tensor(3.0, requires_grad=True)
    out = bai.sum(x, axis=axis)
    expected = torch.sum(torch.tensor(3.0), dim=axis) if axis is not None else torch.tensor(3.0)
    assert out.shape == tuple(expected.shape) == ()
    assert out.item() == 3.0
    out.backward()
    assert x.grad.item() == 1.0
    assert bai.sum(bai.tensor(3.0), axis=0, keepdims=True).shape == ()
    assert x.sum(dim=-1).item() == 3.0


def test_sum_of_a_zero_dim_tensor_rejects_other_axes():
    with pytest.raises(bai.ShapeError, match=r"\[sum\] axis 1 is out of range"):
        bai.sum(bai.tensor(3.0), axis=1)
