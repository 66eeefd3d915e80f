"""save/load round trips: every supported value and dtype, nesting, ties, map_location, foreign
safetensors files, unsupported values, and random-number-generator state."""

from __future__ import annotations

import collections
import enum
import json
import random
import struct

import ml_dtypes
import numpy as np
import pytest

import buildingai as bai
from buildingai.backend.random import Generator, default_generator
from buildingai.errors import CheckpointError, DeviceError
from buildingai.serialization import get_rng_state, load, save, set_rng_state

DTYPES = [
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
]  # fmt: skip
SHAPES = [(), (0,), (3, 0, 2), (1,), (2, 3), (2, 1, 3, 2)]


def roundtrip(obj, tmp_path, **load_kwargs):
    path = tmp_path / "checkpoint.bai"
    save(obj, path)
    return load(path, **load_kwargs)


def sample(shape, dtype) -> np.ndarray:
    values = np.asarray(np.random.default_rng(0).normal(size=shape) * 50)
    return values.astype(dtype)


def assert_same_array(actual, expected):
    assert type(actual) is np.ndarray
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    # Compare bit patterns: NaN payloads, -0.0 and bf16 rounding must all survive.
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_array_and_tensor_every_dtype_and_shape(tmp_path, dtype, shape):
    array = sample(shape, dtype)
    loaded = roundtrip({"array": array, "tensor": bai.Tensor(array.copy())}, tmp_path)
    assert_same_array(loaded["array"], array)
    assert isinstance(loaded["tensor"], bai.Tensor)
    assert_same_array(loaded["tensor"].array, array)


def test_bfloat16_values_survive_exactly(tmp_path):
    # Values that bfloat16 represents exactly, plus specials: nothing may pass through float32.
    values = np.array([1.0, -0.0, 3.140625, 1e38, -1e-38, np.inf, -np.inf, np.nan], np.float32)
    array = values.astype(ml_dtypes.bfloat16)
    loaded = roundtrip({"x": array}, tmp_path)["x"]
    assert loaded.dtype == ml_dtypes.bfloat16
    assert loaded.view(np.uint16).tolist() == array.view(np.uint16).tolist()


def test_non_contiguous_arrays_come_back_equal_and_contiguous(tmp_path):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    views = {
        "transposed": base.transpose(2, 0, 1),
        "strided": base[:, ::2, 1::2],
        "reversed": base[::-1],
        "fortran": np.asfortranarray(base),
        "broadcast": np.broadcast_to(np.arange(3.0), (4, 3)),
    }
    loaded = roundtrip(views, tmp_path)
    for name, view in views.items():
        np.testing.assert_array_equal(loaded[name], view, err_msg=name)
        assert loaded[name].flags.c_contiguous


def test_non_contiguous_tensor(tmp_path):
    x = bai.tensor(np.arange(12.0).reshape(3, 4))
    transposed = bai.Tensor(x.array.T)
    loaded = roundtrip({"t": transposed}, tmp_path)["t"]
    np.testing.assert_array_equal(loaded.numpy(), x.numpy().T)


def test_python_scalars(tmp_path):
    obj = {
        "none": None,
        "true": True,
        "false": False,
        "zero": 0,
        "negative": -7,
        "int64_max": 2**63 - 1,
        "beyond_int64": 2**64 + 1,
        "pcg_sized": 2**128 - 1,
        "negative_huge": -(2**100) - 3,
        "edge_of_exact_json": 2**53 + 1,
        "float": 0.1,
        "tiny": 5e-324,
        "negative_zero": -0.0,
        "inf": float("inf"),
        "minus_inf": float("-inf"),
        "text": 'héllo "quoted" \n ✓',
        "empty": "",
    }
    loaded = roundtrip(obj, tmp_path)
    assert list(loaded) == list(obj)
    for key, value in obj.items():
        assert type(loaded[key]) is type(value), key
        assert loaded[key] == value, key
    assert str(loaded["negative_zero"]) == "-0.0"
    nan = roundtrip({"nan": float("nan")}, tmp_path)["nan"]
    assert type(nan) is float and nan != nan


def test_numpy_scalars_come_back_as_numpy_scalars(tmp_path):
    obj = {
        "f32": np.float32(1.5),
        "i64": np.int64(-3),
        "b": np.bool_(True),
        "bf": ml_dtypes.bfloat16(2),
    }
    loaded = roundtrip(obj, tmp_path)
    for key, value in obj.items():
        assert type(loaded[key]) is type(value), key
        assert loaded[key] == value


def test_nested_training_state(tmp_path):
    state_dict = collections.OrderedDict(
        [
            ("fc1.weight", bai.randn(4, 3)),
            ("fc1.bias", bai.zeros(4)),
            ("fc2.weight", bai.randn(2, 4)),
        ]
    )
    obj = {
        "model": state_dict,
        "optimizer": {
            "state": {
                0: {"step": 3, "exp_avg": bai.ones(4, 3)},
                1: {"step": 3, "exp_avg": bai.ones(4)},
            },
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "name": None}],
        },
        "scheduler": {"last_epoch": 5, "milestones": [10, 20]},
        "history": [[1.0, 0.5], [], ({"deep": [(np.arange(3),)]},)],
        "rng": get_rng_state(),
        "step": 10,
    }
    loaded = roundtrip(obj, tmp_path)
    assert type(loaded["model"]) is dict  # OrderedDict comes back as a plain dict, order kept
    assert list(loaded["model"]) == list(state_dict)
    for name, tensor in state_dict.items():
        np.testing.assert_array_equal(loaded["model"][name].numpy(), tensor.numpy())
    assert set(loaded["optimizer"]["state"]) == {0, 1}  # int keys stay ints
    assert loaded["optimizer"]["state"][0]["step"] == 3
    group = loaded["optimizer"]["param_groups"][0]
    assert group == {"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "name": None}
    assert type(group["betas"]) is tuple and type(group["params"]) is list
    assert loaded["scheduler"] == obj["scheduler"]
    assert loaded["history"][:2] == [[1.0, 0.5], []]
    np.testing.assert_array_equal(loaded["history"][2][0]["deep"][0][0], np.arange(3))
    assert loaded["step"] == 10


def test_top_level_values_of_every_kind(tmp_path):
    assert roundtrip(None, tmp_path) is None
    assert roundtrip(3, tmp_path) == 3
    assert roundtrip((1, [2]), tmp_path) == (1, [2])
    np.testing.assert_array_equal(roundtrip(np.arange(4), tmp_path), np.arange(4))
    np.testing.assert_array_equal(roundtrip(bai.ones(2), tmp_path).numpy(), np.ones(2))
    assert roundtrip({}, tmp_path) == {}


def test_tensor_keeps_requires_grad_but_not_grad_or_graph(tmp_path):
    leaf = bai.randn(3, requires_grad=True)
    (leaf * 2.0).sum().backward()
    computed = leaf * 3.0
    loaded = roundtrip({"leaf": leaf, "computed": computed, "plain": bai.ones(2)}, tmp_path)
    assert loaded["leaf"].requires_grad and loaded["leaf"].grad is None and loaded["leaf"].is_leaf
    assert loaded["computed"].requires_grad and loaded["computed"].is_leaf
    assert not loaded["plain"].requires_grad
    loaded["leaf"].sum().backward()  # a usable leaf
    np.testing.assert_array_equal(loaded["leaf"].grad.numpy(), np.ones(3, np.float32))


def test_loaded_arrays_are_writable(tmp_path):
    loaded = roundtrip({"w": bai.zeros(3), "a": np.zeros(2)}, tmp_path)
    loaded["w"].array += 1
    loaded["a"][:] = 5
    assert loaded["w"].numpy().tolist() == [1, 1, 1]


def test_shared_objects_are_stored_once_and_stay_shared(tmp_path):
    weight = bai.randn(5, 3)
    array = np.arange(4.0)
    loaded = roundtrip({"encoder": weight, "decoder": weight, "a": array, "b": [array]}, tmp_path)
    assert loaded["encoder"] is loaded["decoder"]
    assert loaded["a"] is loaded["b"][0]
    header = read_header(tmp_path / "checkpoint.bai")
    assert sorted(name for name in header if name != "__metadata__") == ["a", "encoder"]


def test_tensors_are_named_by_key_path_so_other_readers_see_a_state_dict(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "model.safetensors"
    weights = {"fc1.weight": bai.randn(4, 3), "fc1.bias": bai.randn(4)}
    save(weights, path)
    read_by_torch = safetensors_torch.load_file(str(path))
    assert set(read_by_torch) == set(weights)
    for name, tensor in weights.items():
        assert torch.equal(read_by_torch[name], torch.from_numpy(tensor.numpy()))
    save({"model": {"fc1": {"weight": bai.ones(1)}}, "model.fc1.weight": bai.ones(1)}, path)
    header = read_header(path)
    assert sorted(n for n in header if n != "__metadata__") == [
        "model.fc1.weight",
        "model.fc1.weight#2",
    ]


def test_plain_safetensors_file_from_pytorch_loads_as_flat_dict(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    state = {
        "layer.weight": torch.randn(3, 2, dtype=torch.float64),
        "layer.bias": torch.randn(3).to(torch.bfloat16),
        "steps": torch.tensor(7, dtype=torch.int64),
        "mask": torch.tensor([True, False]),
    }
    path = tmp_path / "from_torch.safetensors"
    safetensors_torch.save_file(state, str(path), metadata={"format": "pt"})
    loaded = load(path)
    assert set(loaded) == set(state)
    for name, tensor in state.items():
        assert isinstance(loaded[name], bai.Tensor)
        expected = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        got = loaded[name].numpy()
        if tensor.dtype == torch.bfloat16:
            assert got.dtype == ml_dtypes.bfloat16
            got = got.astype(np.float32)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_map_location_cpu_and_device_objects(tmp_path):
    obj = {"t": bai.ones(2), "a": np.ones(2)}
    for where in (None, "cpu", bai.Device("cpu")):
        loaded = roundtrip(obj, tmp_path, map_location=where)
        assert loaded["t"].device == "cpu" and type(loaded["a"]) is np.ndarray


@pytest.mark.skipif(bai.cuda_is_available(), reason="checks the error on machines without a GPU")
def test_map_location_cuda_without_cupy_raises_device_error(tmp_path):
    save({"t": bai.ones(2)}, tmp_path / "c.bai")
    with pytest.raises(DeviceError, match="cuda"):
        load(tmp_path / "c.bai", map_location="cuda")
    save({"no_tensors": 1}, tmp_path / "d.bai")  # checked before reading, tensors or not
    with pytest.raises(DeviceError):
        load(tmp_path / "d.bai", map_location="cuda:0")


def test_map_location_rejects_unknown_devices(tmp_path):
    save({"t": bai.ones(2)}, tmp_path / "c.bai")
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        load(tmp_path / "c.bai", map_location="tpu")


@pytest.mark.skipif(not bai.cuda_is_available(), reason="needs CuPy and a GPU")
def test_map_location_cuda(tmp_path):  # pragma: no cover - runs on GPU machines
    obj = {"t": bai.randn(3, 2, requires_grad=True), "a": np.ones(2)}
    loaded = roundtrip(obj, tmp_path, map_location="cuda")
    assert loaded["t"].device == "cuda:0" and loaded["t"].requires_grad
    np.testing.assert_array_equal(loaded["t"].numpy(), obj["t"].numpy())
    assert type(loaded["a"]) is np.ndarray
    back = roundtrip(loaded, tmp_path)  # GPU tensors are saved from the device
    assert back["t"].device == "cpu"
    np.testing.assert_array_equal(back["t"].numpy(), obj["t"].numpy())


# ----- unsupported values ------------------------------------------------------------------------


class Custom:
    pass


@pytest.mark.parametrize(
    ("obj", "where", "what"),
    [
        (
            {"optimizer": {"state": [lambda: 0]}},
            r"obj\['optimizer'\]\['state'\]\[0\]",
            "never hold code",
        ),
        ({"model": Custom()}, r"obj\['model'\]", "Custom are not supported"),
        ([1, {"x": {1, 2}}], r"obj\[1\]\['x'\]", "builtins.set"),
        ({"k": {(1, 2): 3}}, r"obj\['k'\]", "dict key \\(1, 2\\) is a tuple"),
        ({"k": {True: 3}}, r"obj\['k'\]", "is a bool"),
        ({"gen": Generator(1)}, r"obj\['gen'\]", "Generator object"),
        ({"c": np.zeros(2, np.complex128)}, r"obj\['c'\]", "dtype complex128"),
        ({"s": np.array(["a", "b"])}, r"obj\['s'\]", "dtype <U1"),
        ({"o": np.array([None])}, r"obj\['o'\]", "dtype object"),
        ({"f": print}, r"obj\['f'\]", "never hold code"),
        ({"b": b"bytes"}, r"obj\['b'\]", "builtins.bytes"),
        ({"m": np.ma.masked_array([1, 2], mask=[0, 1])}, r"obj\['m'\]", "ndarray subclass"),
        ({"e": enum.IntEnum("Color", "RED").RED}, r"obj\['e'\]", "Color are not supported"),
    ],
)
def test_unsupported_values_name_their_key_path(tmp_path, obj, where, what):
    path = tmp_path / "c.bai"
    with pytest.raises(CheckpointError, match=f"cannot save {where}.*{what}"):
        save(obj, path)
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_objects_with_state_dict_get_a_hint(tmp_path):
    class Model:
        def state_dict(self):
            return {}

    with pytest.raises(CheckpointError, match=r"obj\['model'\].*\n  help: save its .state_dict"):
        save({"model": Model()}, tmp_path / "c.bai")


def test_reference_cycles_are_reported(tmp_path):
    loop = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(CheckpointError, match=r"obj\['a'\]\[0\]: it contains itself"):
        save(loop, tmp_path / "c.bai")
    shared = [1]
    assert roundtrip({"x": shared, "y": shared}, tmp_path) == {"x": [1], "y": [1]}  # not a cycle


def test_missing_folder_on_save(tmp_path):
    with pytest.raises(CheckpointError, match="folder .* does not exist"):
        save({"a": 1}, tmp_path / "no" / "such" / "c.bai")


# ----- random number generator state -------------------------------------------------------------


def draw_everything(generator=None):
    return (
        bai.rand(5).numpy().tolist(),
        bai.randn(3).numpy().tolist(),
        np.random.rand(3).tolist(),
        np.random.randn(),  # leaves a cached Gaussian in NumPy's legacy state
        random.random(),
        random.gauss(0, 1),  # leaves gauss_next in Python's state
        None if generator is None else generator.backend_generator().integers(0, 2**62, 4).tolist(),
    )


def test_rng_state_round_trips_through_a_checkpoint(tmp_path):
    bai.manual_seed(123)
    random.seed(5)
    draw_everything()
    state = get_rng_state()
    json_part = {k: v for k, v in state["buildingai"].items()}
    json.dumps(json_part)  # the generator part is plain JSON
    expected = draw_everything()
    loaded = roundtrip({"rng": state}, tmp_path)["rng"]
    bai.manual_seed(999)
    random.seed(999)
    set_rng_state(loaded)
    assert draw_everything() == expected


def test_set_rng_state_keeps_the_default_generator_object(tmp_path):
    before = default_generator
    set_rng_state(get_rng_state())
    assert bai.default_generator is before is default_generator


def test_set_rng_state_rejects_partial_states():
    with pytest.raises(bai.BuildingAIError, match=r"missing \['numpy', 'python'\]"):
        set_rng_state({"buildingai": get_rng_state()["buildingai"]})


def test_generator_state_with_128_bit_integers_round_trips(tmp_path):
    generator = Generator(seed=2**63 - 1)
    generator.backend_generator().random(7)
    state = generator.get_state()
    assert max(state["state"].values()) > 2**64  # really exercises integers beyond int64
    loaded = roundtrip({"shuffle": state}, tmp_path)["shuffle"]
    assert loaded == state
    expected = generator.backend_generator().integers(0, 2**62, 10).tolist()
    other = Generator(seed=1)
    other.set_state(loaded)
    assert other.backend_generator().integers(0, 2**62, 10).tolist() == expected
    # The structure JSON spells them as strings, which every JSON reader keeps exactly.
    structure = json.loads(
        read_header(tmp_path / "checkpoint.bai")["__metadata__"]["buildingai.structure"]
    )
    assert str(state["state"]["state"]) in json.dumps(structure)


def read_header(path) -> dict:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length])
