"""Turn a ``POST /predict`` body into a checked NumPy batch, and a batch of outputs into a body.

Every way a body can be wrong raises ``BadRequest`` with an HTTP status and one line saying
what was wrong and what the server expects; nothing here ever reaches the model.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np

from .loading import Signature

JSON_TYPES = ("application/json",)
NPY_TYPES = ("application/x-npy", "application/octet-stream")


class BadRequest(Exception):
    """A request the server refuses: ``status`` (4xx) and a one-line ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def media_type(content_type: str | None) -> str:
    """``"application/json; charset=utf-8"`` -> ``"application/json"``."""
    return (content_type or "").split(";")[0].strip().lower()


def decode(body: bytes, content_type: str | None, signature: Signature,
           max_samples: int | None = None) -> np.ndarray:  # fmt: skip
    """The batch ``(N, *signature.shape)`` in ``signature.dtype`` that ``body`` holds; more than
    ``max_samples`` samples are refused with 413 before they are converted."""
    kind = media_type(content_type)
    if kind in JSON_TYPES:
        batch = _from_json(body, depth=len(signature.shape) + 1, max_samples=max_samples)
    elif kind in NPY_TYPES:
        batch = _from_npy(body)
    else:
        raise BadRequest(
            415,
            f"Content-Type {kind or '(none)'!r} is not served; send application/json "
            '({"inputs": [[...], ...]}) or application/x-npy (a .npy file)',
        )
    if batch.ndim >= 1:
        _check_count(len(batch), max_samples, exact=True)
    return _checked(batch, signature)


def _check_count(samples: int, max_samples: int | None, exact: bool = True) -> None:
    """413 past ``max_samples``; ``exact=False`` while counting, when more may follow."""
    if max_samples is not None and samples > max_samples:
        holds = f"{samples}" if exact else f"more than {max_samples}"
        raise BadRequest(413, f"the request holds {holds} samples; this server takes at most "
                              f"{max_samples} per request (--max-samples)")  # fmt: skip


def _refuse_constant(name: str):
    raise BadRequest(422, f"inputs hold {name}, which is not a finite number")


INT64 = np.iinfo(np.int64)


def _read_int(text: str) -> int:
    """A JSON integer, refused past int64: NumPy would hold it as a Python object."""
    if len(text.lstrip("-")) > 19 or not INT64.min <= int(text) <= INT64.max:
        shown = text if len(text) <= 24 else f"{text[:10]}...{text[-4:]} ({len(text)} digits)"
        raise BadRequest(422, f"inputs hold the integer {shown}, beyond the int64 range "
                              f"[{INT64.min}, {INT64.max}]; write large numbers as floats "
                              "(1e30)")  # fmt: skip
    return int(text)


_SPACE = re.compile(r"[ \t\n\r]*")
_HEAD = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*"inputs"[ \t\n\r]*:[ \t\n\r]*\[[ \t\n\r]*')
_SAMPLE_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_read_int)


def _samples_one_by_one(body: bytes, max_samples: int | None) -> list | None:
    """The samples of a body spelled ``{"inputs": [s1, s2, ...]}``, parsed one sample per call,
    or None for any other spelling. One ``json.loads`` of a 16 MiB body holds the interpreter's
    lock for seconds, so the event loop could not answer ``/health`` meanwhile; between samples
    the lock is released. Counting as it goes, it stops past ``max_samples``."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    head = _HEAD.match(text)
    if head is None:
        return None
    samples, index = [], head.end()
    if text.startswith("]", index):
        index += 1
    else:
        while True:
            try:
                sample, index = _SAMPLE_DECODER.raw_decode(text, index)
            except json.JSONDecodeError:
                return None
            samples.append(sample)
            _check_count(len(samples), max_samples, exact=False)
            index = _SPACE.match(text, index).end()
            if text.startswith(",", index):
                index = _SPACE.match(text, index + 1).end()
            elif text.startswith("]", index):
                index += 1
                break
            else:
                return None
    index = _SPACE.match(text, index).end()
    if not text.startswith("}", index) or _SPACE.match(text, index + 1).end() != len(text):
        return None
    return samples


def _inputs_of(document) -> list:
    if not isinstance(document, dict) or "inputs" not in document:
        raise BadRequest(422, 'the body must be a JSON object {"inputs": [[...], ...]}')
    extra = sorted(set(document) - {"inputs"})
    if extra:
        raise BadRequest(422, f'unknown keys {extra} in the body; it takes only "inputs"')
    inputs = document["inputs"]
    if not isinstance(inputs, list):
        raise BadRequest(422, f'"inputs" must be a list of samples, got {type(inputs).__name__}')
    return inputs


def _nesting(value, limit: int) -> int:
    """How deep lists nest along the first elements of ``value``, counting at most ``limit + 1``."""
    depth = 0
    while isinstance(value, list) and depth <= limit:
        depth += 1
        value = value[0] if value else None
    return depth


def _from_json(body: bytes, depth: int, max_samples: int | None = None) -> np.ndarray:
    """``{"inputs": [...]}`` as an array whose lists nest ``depth`` levels (batch + sample)."""
    try:
        inputs = _samples_one_by_one(body, max_samples)
        if inputs is None:  # not the plain shape: the whole-body parser names the mistake
            document = json.loads(body, parse_constant=_refuse_constant, parse_int=_read_int)
            inputs = _inputs_of(document)
    except RecursionError:
        raise BadRequest(400, "the body's JSON nests deeper than the parser allows (about 1000 "
                              f"levels); this model's inputs nest {depth}") from None  # fmt: skip
    except ValueError as error:  # JSONDecodeError and bad UTF-8 are ValueErrors
        raise BadRequest(400, f"the body is not valid JSON: {error}") from None
    _check_count(len(inputs), max_samples, exact=True)  # before NumPy converts them all
    nested = _nesting(inputs, depth)
    if nested > depth:
        raise BadRequest(422, f'"inputs" nests lists more than {depth} levels deep; this model '
                              f"takes {depth} (a list of samples of {depth - 1} levels)")  # fmt: skip
    try:
        batch = np.array(inputs)
    except ValueError:  # NumPy refuses nested lists of unequal lengths
        raise BadRequest(422, '"inputs" is ragged: every sample must have the same shape') from None
    if batch.dtype.kind not in "iuf":
        raise BadRequest(422, '"inputs" must hold only numbers (no strings, null, true/false '
                              "or nested objects)")  # fmt: skip
    # NumPy turns true/false mixed with numbers into 1/0; JSON numbers never spell them
    if b"true" in body or b"false" in body:
        raise BadRequest(422, '"inputs" must hold only numbers, not true/false')
    return batch


def _from_npy(body: bytes) -> np.ndarray:
    """The array of a ``.npy`` body, read in place (no copy). Its header is checked before any
    memory is set aside: it must be readable, and its shape and dtype must account for exactly
    the bytes that follow it."""
    if not body.startswith(b"\x93NUMPY"):  # also keeps .npz archives and pickles out
        raise BadRequest(400, "the body is not a .npy file (those start with \\x93NUMPY); "
                              "write it with numpy.save")  # fmt: skip
    stream = io.BytesIO(body)
    try:
        version = np.lib.format.read_magic(stream)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)  # fmt: skip
        shape, fortran_order, dtype = read_header(stream, max_header_size=10_000)
    except Exception as error:  # noqa: BLE001 - NumPy raises several kinds for a bad header
        reason = " ".join(str(error).split())[:200]
        reason = re.sub(r"<[\w.]+ object at 0x[0-9a-f]+>", "an expression", reason)
        raise BadRequest(400, "the body is not a readable .npy array: its header is not what "
                              f"numpy.save writes ({reason})") from None  # fmt: skip
    if dtype.hasobject:
        raise BadRequest(400, f"the array has dtype {dtype}: Python objects, stored as a pickle, "
                              "which this server never unpickles; send numbers")  # fmt: skip
    if dtype.kind not in "iuf":
        raise BadRequest(422, f"the array has dtype {dtype}; send numbers (float or int)")
    offset = stream.tell()
    count = 1
    for extent in shape:
        count *= extent  # Python integers: a shape like (10**11, 2) cannot overflow
    if count * dtype.itemsize != len(body) - offset:
        raise BadRequest(400, f"the .npy header says shape {shape} {dtype} "
                              f"({count * dtype.itemsize} bytes), but {len(body) - offset} bytes "
                              "follow it; send the file numpy.save wrote, whole")  # fmt: skip
    flat = np.frombuffer(body, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran_order else "C")


def _checked(batch: np.ndarray, signature: Signature) -> np.ndarray:
    """``batch`` checked against one sample's shape and cast to the signature's dtype."""
    expected = tuple(signature.shape)
    spelled = "(N, " + ", ".join("?" if e is None else str(e) for e in expected) + ")"
    if batch.ndim != len(expected) + 1 or any(
        want is not None and got != want for got, want in zip(batch.shape[1:], expected)
    ):
        raise BadRequest(422, f"inputs have shape {batch.shape}; this model takes {spelled}")
    if batch.shape[0] == 0:
        raise BadRequest(422, f"inputs hold no samples; this model takes {spelled} with N >= 1")
    target = signature.dtype
    if target.kind in "iu":
        if batch.dtype.kind == "f":
            raise BadRequest(422, f"inputs are {batch.dtype} numbers; this model takes "
                                  f"integers ({target.name})")  # fmt: skip
        if batch.size and (
            batch.min() < np.iinfo(target).min or batch.max() > np.iinfo(target).max
        ):
            raise BadRequest(422, f"inputs fall outside the range of {target.name}")
        return batch.astype(target, copy=False)
    with np.errstate(over="ignore"):  # a value past the dtype's range is refused just below
        cast = batch.astype(target, copy=False)
    if not np.isfinite(cast).all():
        raise BadRequest(
            422, f"inputs hold NaN or infinity (as {target.name}); send finite numbers"
        )
    return cast


ROWS_PER_PIECE = 256  # rows converted per call while encoding JSON (see encode_json)


def encode_json(outputs: np.ndarray) -> bytes:
    """``{"outputs": [[...], ...]}`` for a batch of one request's outputs, written a few
    hundred rows at a time: one ``tolist``/``dumps`` call holds the interpreter's lock until it
    returns, and the event loop's thread must get it back often."""
    if outputs.ndim == 0:
        return json.dumps({"outputs": outputs.tolist()}, allow_nan=False).encode()
    pieces = []
    for start in range(0, len(outputs), ROWS_PER_PIECE):
        rows = json.dumps(outputs[start : start + ROWS_PER_PIECE].tolist(), allow_nan=False)
        pieces.append(rows[1:-1])  # without the brackets: the pieces join into one list
    return ('{"outputs": [' + ", ".join(piece for piece in pieces if piece) + "]}").encode()


def encode_npy(outputs: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, outputs, allow_pickle=False)
    return buffer.getvalue()
