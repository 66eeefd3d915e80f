"""Turn a ``POST /predict`` body into a checked NumPy batch, and a batch of outputs into a body.

Every way a body can be wrong raises ``BadRequest`` with an HTTP status and one line saying
what was wrong and what the server expects; nothing here ever reaches the model.
"""

from __future__ import annotations

import io
import json

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


def decode(body: bytes, content_type: str | None, signature: Signature) -> np.ndarray:
    """The batch ``(N, *signature.shape)`` in ``signature.dtype`` that ``body`` holds."""
    kind = media_type(content_type)
    if kind in JSON_TYPES:
        batch = _from_json(body)
    elif kind in NPY_TYPES:
        batch = _from_npy(body)
    else:
        raise BadRequest(
            415,
            f"Content-Type {kind or '(none)'!r} is not served; send application/json "
            '({"inputs": [[...], ...]}) or application/x-npy (a .npy file)',
        )
    return _checked(batch, signature)


def _refuse_constant(name: str):
    raise BadRequest(422, f"inputs hold {name}, which is not a finite number")


def _from_json(body: bytes) -> np.ndarray:
    try:
        document = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and bad UTF-8 are ValueErrors
        raise BadRequest(400, f"the body is not valid JSON: {error}") from None
    if not isinstance(document, dict) or "inputs" not in document:
        raise BadRequest(422, 'the body must be a JSON object {"inputs": [[...], ...]}')
    extra = sorted(set(document) - {"inputs"})
    if extra:
        raise BadRequest(422, f'unknown keys {extra} in the body; it takes only "inputs"')
    inputs = document["inputs"]
    if not isinstance(inputs, list):
        raise BadRequest(422, f'"inputs" must be a list of samples, got {type(inputs).__name__}')
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
    if not body.startswith(b"\x93NUMPY"):  # also keeps .npz archives and pickles out
        raise BadRequest(400, "the body is not a .npy file (those start with \\x93NUMPY); "
                              "write it with numpy.save")  # fmt: skip
    try:
        batch = np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        reason = " ".join(str(error).split())
        raise BadRequest(400, f"the body is not a readable .npy array: {reason}") from None
    if batch.dtype.kind not in "iuf":
        raise BadRequest(422, f"the array has dtype {batch.dtype}; send numbers (float or int)")
    return batch


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


def encode_json(outputs: np.ndarray) -> bytes:
    """``{"outputs": [[...], ...]}`` for a batch of one request's outputs."""
    return json.dumps({"outputs": outputs.tolist()}, allow_nan=False).encode()


def encode_npy(outputs: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, outputs, allow_pickle=False)
    return buffer.getvalue()
