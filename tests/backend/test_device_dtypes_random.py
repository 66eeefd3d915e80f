"""The backend floor: device names, the dtype table (bfloat16 included) and random generators."""

import json

import numpy as np
import pytest

import buildingai as bai
from buildingai.backend import dtypes

# ----- devices ----------------------------------------------------------------------------------


def test_cpu_device():
    device = bai.Device("cpu")
    assert device.type == "cpu" and device.index is None
    assert str(device) == "cpu"
    assert repr(device) == "device('cpu')"
    assert device == "cpu" and device == bai.Device()
    assert bai.Device(device) == device
    assert bai.zeros(2).device == device
    assert hash(device) == hash(bai.Device("cpu"))


@pytest.mark.parametrize(
    "spec, index", [("cuda", 0), ("cuda:0", 0), ("cuda:1", 1), ("cuda:12", 12)]
)
def test_cuda_device_names_parse_without_a_gpu(spec, index):
    device = bai.Device(spec)
    assert device.type == "cuda" and device.index == index
    assert str(device) == f"cuda:{index}"
    assert device == f"cuda:{index}"
    assert device != "cpu"


def test_cuda_device_with_a_separate_index():
    assert bai.Device("cuda", 3) == "cuda:3"
    assert {bai.Device("cuda:1"), bai.Device("cuda", 1)} == {bai.Device("cuda:1")}


@pytest.mark.parametrize("spec", ["gpu", "tpu:0", "CPU ", "mps", ""])
def test_unknown_device_is_a_device_error_with_help(spec):
    with pytest.raises(bai.DeviceError, match="unknown device") as info:
        bai.Device(spec)
    assert "help: use 'cpu', 'cuda' or 'cuda:N'" in str(info.value)


@pytest.mark.parametrize("spec", ["cuda:x", "cuda:-1", "cuda:1.5", "cuda:"])
def test_bad_device_index_is_a_device_error_with_help(spec):
    if spec == "cuda:":
        # an empty index reads as the default GPU, like "cuda"
        assert bai.Device(spec) == "cuda:0"
        return
    with pytest.raises(bai.DeviceError, match="bad device index") as info:
        bai.Device(spec)
    assert "help: use 'cuda:0', 'cuda:1', ..." in str(info.value)


@pytest.mark.parametrize("spec", [0, None, 1.5])
def test_device_must_be_named_by_a_string(spec):
    with pytest.raises(bai.DeviceError, match="a device is named by a string"):
        bai.Device(spec)


def test_cuda_without_cupy_names_cupy():
    if bai.cuda_is_available():
        pytest.skip("a GPU is present")
    for make in (
        lambda: bai.zeros(2, device="cuda"),
        lambda: bai.tensor([1.0], device="cuda:0"),
        lambda: bai.ones(2).to("cuda"),
        lambda: bai.Generator(0, device="cuda"),
    ):
        with pytest.raises(bai.DeviceError, match="CuPy") as info:
            make()
        assert "help:" in str(info.value)


# ----- dtypes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, name",
    [
        (bai.float16, "float16"),
        (bai.float32, "float32"),
        (bai.float64, "float64"),
        (bai.int32, "int32"),
        (bai.int64, "int64"),
        (bai.bool_, "bool"),
        (bai.bool, "bool"),
        (bai.int8, "int8"),
        (bai.uint8, "uint8"),
        (bai.int16, "int16"),
    ],
)
def test_dtype_table_is_numpy_dtypes(dtype, name):
    assert isinstance(dtype, np.dtype)
    assert dtype == np.dtype(name)
    assert bai.zeros(2, dtype=dtype).dtype == dtype
    assert bai.zeros(2, dtype=name).dtype == dtype


@pytest.mark.parametrize(
    "name, expected",
    [
        ("float16", "float16"), ("half", "float16"),
        ("float32", "float32"), ("float", "float32"),
        ("float64", "float64"), ("double", "float64"),
        ("int8", "int8"), ("uint8", "uint8"), ("int16", "int16"),
        ("int32", "int32"), ("int", "int32"),
        ("int64", "int64"), ("long", "int64"),
        ("bool", "bool"),
    ],
)  # fmt: skip
def test_as_dtype_names(name, expected):
    assert dtypes.as_dtype(name) == np.dtype(expected)


@pytest.mark.parametrize("given", [np.float32, np.dtype("int64"), np.int8, bool, float])
def test_as_dtype_accepts_numpy_types_and_python_types(given):
    assert dtypes.as_dtype(given) == np.dtype(given)


@pytest.mark.parametrize("name", ["float128x", "Float32", "bfloat", "i", "complex"])
def test_as_dtype_unknown_name(name):
    with pytest.raises(bai.DTypeError, match=f"unknown dtype '{name}'") as info:
        dtypes.as_dtype(name)
    assert "help: use one of" in str(info.value)
    assert "'bfloat16'" in str(info.value)


@pytest.mark.parametrize("given", [object(), 3.5, [1, 2]], ids=["object", "float", "list"])
def test_as_dtype_uninterpretable(given):
    with pytest.raises(bai.DTypeError, match="cannot interpret"):
        dtypes.as_dtype(given)


def test_is_floating():
    for dtype in ("float16", "float32", "float64", "bfloat16"):
        assert dtypes.is_floating(dtypes.as_dtype(dtype))
    for dtype in ("int32", "int64", "bool", "uint8"):
        assert not dtypes.is_floating(dtypes.as_dtype(dtype))


ml_dtypes = pytest.importorskip("ml_dtypes")


def test_bfloat16_dtype():
    assert bai.bfloat16 == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.as_dtype("bfloat16") == bai.bfloat16


def test_bfloat16_tensor_round_trip():
    values = np.array([1.0, -2.5, 0.15625, 3.0e5], dtype=np.float32)
    x = bai.tensor(values, dtype="bfloat16")
    assert x.dtype == bai.bfloat16
    back = x.float()
    assert back.dtype == bai.float32
    np.testing.assert_array_equal(back.numpy(), values.astype(ml_dtypes.bfloat16).astype("f4"))
    # values exactly representable in bfloat16 survive unchanged
    np.testing.assert_array_equal(back.numpy()[:3], values[:3])
    assert bai.ones(2, dtype=bai.bfloat16).dtype == bai.bfloat16
    assert bai.ones(3).to("bfloat16").dtype == bai.bfloat16


def test_bfloat16_arithmetic_and_gradient():
    a = bai.tensor([1.0, 2.0, 4.0], dtype="bfloat16", requires_grad=True)
    b = bai.tensor([0.5, 0.25, 2.0], dtype="bfloat16")
    out = a * b + a
    assert out.dtype == bai.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), [1.5, 2.5, 12.0])
    out.sum().backward()
    assert a.grad.dtype == bai.bfloat16
    np.testing.assert_array_equal(a.grad.float().numpy(), [1.5, 1.25, 3.0])


def test_bfloat16_with_python_scalars_stays_bfloat16_like_torch():
    x = bai.tensor([1.0, 2.0], dtype="bfloat16")
    for result in (x * 2.0, 2.0 * x, x + 1, x / 4.0, x - 0.5):
        assert result.dtype == bai.bfloat16
    np.testing.assert_array_equal((x * 2.0).float().numpy(), [2.0, 4.0])


# ----- random -----------------------------------------------------------------------------------


def test_generator_state_round_trip_reproduces_the_stream():
    generator = bai.Generator(42)
    bai.rand(7, generator=generator)  # move somewhere into the stream
    state = generator.get_state()
    json.loads(json.dumps(state))  # a plain JSON-serialisable dict
    expected = [
        bai.rand(3, generator=generator).numpy(),
        bai.randn(4, generator=generator).numpy(),
        bai.randint(0, 1000, (5,), generator=generator).numpy(),
    ]
    generator.set_state(state)
    again = [
        bai.rand(3, generator=generator).numpy(),
        bai.randn(4, generator=generator).numpy(),
        bai.randint(0, 1000, (5,), generator=generator).numpy(),
    ]
    for a, b in zip(expected, again):
        np.testing.assert_array_equal(a, b)
    # the state also restores into another generator
    other = bai.Generator(0)
    other.set_state(state)
    np.testing.assert_array_equal(bai.rand(3, generator=other).numpy(), expected[0])
    assert other.initial_seed == 42


def test_generator_manual_seed_restarts_the_stream():
    generator = bai.Generator(5)
    first = bai.randn(6, generator=generator).numpy()
    assert generator.manual_seed(5) is generator
    np.testing.assert_array_equal(bai.randn(6, generator=generator).numpy(), first)
    assert repr(generator) == "Generator(seed=5, device='cpu')"


def test_generators_without_seed_differ():
    a = bai.rand(8, generator=bai.Generator()).numpy()
    b = bai.rand(8, generator=bai.Generator()).numpy()
    assert not np.array_equal(a, b)


def test_manual_seed_resets_the_default_generator():
    returned = bai.manual_seed(11)
    assert returned is bai.default_generator
    assert bai.default_generator.initial_seed == 11
    first = bai.rand(4).numpy()
    legacy = np.random.rand(2)
    bai.manual_seed(11)
    np.testing.assert_array_equal(bai.rand(4).numpy(), first)
    np.testing.assert_array_equal(np.random.rand(2), legacy)  # NumPy's global stream too
    np.testing.assert_array_equal(
        first, bai.rand(4, generator=bai.Generator(11)).numpy()
    )  # the default generator is a Generator like any other


def test_rng_state_round_trip_of_every_stream():
    import random

    bai.manual_seed(3)
    state = bai.get_rng_state()
    expected = (bai.rand(2).numpy(), np.random.rand(2), random.random())
    bai.manual_seed(100)
    bai.set_rng_state(state)
    again = (bai.rand(2).numpy(), np.random.rand(2), random.random())
    np.testing.assert_array_equal(expected[0], again[0])
    np.testing.assert_array_equal(expected[1], again[1])
    assert expected[2] == again[2]
    with pytest.raises(bai.BuildingAIError, match=r"missing \['numpy', 'python'\]"):
        bai.set_rng_state({"buildingai": state["buildingai"]})
