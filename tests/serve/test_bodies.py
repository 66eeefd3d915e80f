"""Request bodies: what /predict accepts, and the status and one-line reason of what it refuses."""

import io
import json

import numpy as np
import pytest

from buildingai.serve import BadRequest, Signature, decode
from buildingai.serve.bodies import encode_json, encode_npy

FLAT = Signature((4,), np.dtype(np.float32))
IMAGE = Signature((1, 2, 2), np.dtype(np.float32))
TOKENS = Signature((None,), np.dtype(np.int64), "ids")


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def test_json_inputs_become_a_float32_batch():
    batch = decode(b'{"inputs": [[1, 2, 3, 4], [0.5, -1e3, 0, 7]]}', "application/json", FLAT)
    assert batch.dtype == np.float32 and batch.shape == (2, 4)
    np.testing.assert_array_equal(batch, [[1, 2, 3, 4], [0.5, -1e3, 0, 7]])


def test_json_nests_to_the_sample_shape_and_charset_is_ignored():
    body = json.dumps({"inputs": np.arange(8.0).reshape(2, 1, 2, 2).tolist()}).encode()
    batch = decode(body, "application/json; charset=utf-8", IMAGE)
    np.testing.assert_array_equal(batch, np.arange(8.0).reshape(2, 1, 2, 2))


@pytest.mark.parametrize("content_type", ["application/x-npy", "application/octet-stream"])
def test_npy_bodies_of_any_real_dtype_are_cast(content_type):
    for dtype in (np.float64, np.float32, np.int32, np.uint8):
        array = np.arange(8).reshape(2, 4).astype(dtype)
        batch = decode(npy(array), content_type, FLAT)
        assert batch.dtype == np.float32
        np.testing.assert_array_equal(batch, array)


def test_integer_inputs_keep_free_axes():
    batch = decode(b'{"inputs": [[1, 2, 3]]}', "application/json", TOKENS)
    assert batch.dtype == np.int64 and batch.shape == (1, 3)


@pytest.mark.parametrize(
    "body, content_type, signature, status, reason",
    [
        (b'{"inputs": [[1, 2]', "application/json", FLAT, 400, "not valid JSON"),
        (b"\xff\xfe", "application/json", FLAT, 400, "not valid JSON"),
        (b"[[1, 2, 3, 4]]", "application/json", FLAT, 422, '{"inputs": [[...], ...]}'),
        (b'{"input": [[1, 2, 3, 4]]}', "application/json", FLAT, 422, '{"inputs"'),
        (b'{"inputs": [[1, 2, 3, 4]], "x": 1}', "application/json", FLAT, 422, "unknown keys ['x']"),
        (b'{"inputs": 5}', "application/json", FLAT, 422, "must be a list of samples, got int"),
        (b'{"inputs": [[1, 2, 3, 4], [1, 2]]}', "application/json", FLAT, 422, "ragged"),
        (b'{"inputs": [[1, 2, 3, "4"]]}', "application/json", FLAT, 422, "only numbers"),
        (b'{"inputs": [[1, 2, 3, null]]}', "application/json", FLAT, 422, "only numbers"),
        (b'{"inputs": [[1, 2, 3, true]]}', "application/json", FLAT, 422, "true/false"),
        (b'{"inputs": [[true, false, true, true]]}', "application/json", FLAT, 422, "numbers"),
        (b'{"inputs": [[1, 2, 3, {}]]}', "application/json", FLAT, 422, "only numbers"),
        (b'{"inputs": [[1, 2, 3, NaN]]}', "application/json", FLAT, 422, "NaN"),
        (b'{"inputs": [[1, 2, 3, Infinity]]}', "application/json", FLAT, 422, "Infinity"),
        (b'{"inputs": [[1, 2, 3, 1e39]]}', "application/json", FLAT, 422, "infinity (as float32)"),
        (b'{"inputs": [[1, 2, 3]]}', "application/json", FLAT, 422,
         "inputs have shape (1, 3); this model takes (N, 4)"),
        (b'{"inputs": [1, 2, 3, 4]}', "application/json", FLAT, 422, "shape (4,)"),
        (b'{"inputs": []}', "application/json", FLAT, 422, "shape (0,)"),
        (b'{"inputs": [[1.5, 2]]}', "application/json", TOKENS, 422, "integers (int64)"),
        (b"1,2,3,4", "text/csv", FLAT, 415, "'text/csv' is not served"),
        (b"1,2,3,4", None, FLAT, 415, "'(none)' is not served"),
        (b"not an array", "application/x-npy", FLAT, 400, "not a .npy file"),
        (npy(np.ones((1, 4)))[:60], "application/x-npy", FLAT, 400, "not a readable .npy array"),
        (npy(np.array([["a", "b", "c", "d"]])), "application/x-npy", FLAT, 422, "dtype <U1"),
        (npy(np.ones((1, 4), bool)), "application/x-npy", FLAT, 422, "dtype bool"),
        (npy(np.ones((1, 4), complex)), "application/x-npy", FLAT, 422, "complex128"),
        (npy(np.ones((2, 3))), "application/x-npy", FLAT, 422, "shape (2, 3)"),
        (npy(np.full((1, 4), np.nan)), "application/x-npy", FLAT, 422, "NaN"),
        (npy(np.ones((0, 4))), "application/x-npy", FLAT, 422, "no samples"),
    ],
)  # fmt: skip
def test_bad_bodies_are_refused_with_a_status_and_one_line(
    body, content_type, signature, status, reason
):
    with pytest.raises(BadRequest) as caught:
        decode(body, content_type, signature)
    assert caught.value.status == status
    assert reason in caught.value.reason
    assert "\n" not in caught.value.reason


def test_object_arrays_in_npy_are_refused_without_unpickling():
    buffer = io.BytesIO()
    np.save(buffer, np.array([[object()]], dtype=object), allow_pickle=True)
    with pytest.raises(BadRequest) as caught:
        decode(buffer.getvalue(), "application/x-npy", FLAT)
    assert caught.value.status == 400 and "pickle" in caught.value.reason.lower()


def test_outputs_encode_as_json_and_npy():
    outputs = np.array([[0.25, -1.5], [3.0, 4.0]], np.float32)
    assert json.loads(encode_json(outputs)) == {"outputs": [[0.25, -1.5], [3.0, 4.0]]}
    np.testing.assert_array_equal(np.load(io.BytesIO(encode_npy(outputs))), outputs)
    with pytest.raises(ValueError):
        encode_json(np.array([[np.nan]]))


@pytest.mark.parametrize("body", [
    b'{"inputs": [[1, 2, 3, 4], [5, 6, 7, 8]]}',
    b' \n{ "inputs" :[ [1,2,3,4] ,\n [5, 6, 7, 8] ] } \n',  # parsed sample by sample
    b'{"\\u0069nputs": [[1, 2, 3, 4], [5, 6, 7, 8]]}',  # another spelling: parsed whole
    '{"inputs": [[1, 2, 3, 4], [5, 6, 7, 8]]}'.encode("utf-16"),
])  # fmt: skip
def test_every_spelling_of_the_same_json_gives_the_same_batch(body):
    np.testing.assert_array_equal(decode(body, "application/json", FLAT),
                                  np.arange(1, 9).reshape(2, 4))  # fmt: skip


def test_json_mistakes_after_a_sample_are_named_as_for_the_whole_body():
    for body, reason in [
        (b'{"inputs": [[1, 2, 3, 4]], "extra": 1}', "unknown keys ['extra']"),
        (b'{"inputs": [[1, 2, 3, 4] [5, 6, 7, 8]]}', "not valid JSON: Expecting ',' delimiter"),
        (b'{"inputs": [[1, 2, 3, 4], NaN]}', "inputs hold NaN, which is not a finite number"),
    ]:
        with pytest.raises(BadRequest, match=reason.replace("[", r"\[").replace("]", r"\]")):
            decode(body, "application/json", FLAT)
