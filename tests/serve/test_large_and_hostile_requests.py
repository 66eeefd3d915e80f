"""Requests sent as a hostile or careless client would: the largest request the server takes,
bodies sent by half, malformed .npy headers and JSON, each answered on one line without
stalling the server or breaking the keep-alive connection."""

import http.client
import io
import json
import socket
import threading

import numpy as np
import pytest

from buildingai.serve import ServedModel, Server, Signature, create_app
from buildingai.serve import app as app_module

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

TIMEOUT = 20
MAX_BATCH, MAX_SAMPLES = 4, 64
NPY = {"Content-Type": "application/x-npy"}


class Doubler(ServedModel):
    """Doubles ``(N, 2)`` float32 inputs, recording each call's size; ``hold`` (when set) runs
    at the start of the second call."""

    kind = "test"

    def __init__(self, hold=None) -> None:
        super().__init__("doubler", Signature((2,), np.dtype(np.float32)), None)
        self.sizes: list[int] = []
        self.hold = hold

    def run(self, batch: np.ndarray) -> np.ndarray:
        self.sizes.append(len(batch))
        if self.hold is not None and len(self.sizes) == 2:
            self.hold()
        return batch * 2


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def npy_with_header(header: str, data: bytes = b"") -> bytes:
    """A version 1.0 .npy file with ``header`` as its (dict) header text, as a forger writes it."""
    text = header.encode("latin1")
    text += b" " * (63 - (10 + len(text)) % 64) + b"\n"  # the data starts 64-byte aligned
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data


def maximal_inputs() -> np.ndarray:
    return np.arange(2 * MAX_SAMPLES, dtype=np.float32).reshape(MAX_SAMPLES, 2)


@pytest.mark.parametrize("stage", ["decode", "model", "encode"])
def test_health_is_answered_while_a_maximal_request_is_served(stage, monkeypatch):
    # The request is held at one stage until /health has been answered: the server must answer
    # /health first (an order of events, whatever the machine's speed).
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        assert release.wait(TIMEOUT), "the test never released the request"

    def held(function):
        def run(*args, **kwargs):
            hold()
            return function(*args, **kwargs)

        return run

    if stage == "decode":
        monkeypatch.setattr(app_module, "decode", held(app_module.decode))
    if stage == "encode":
        monkeypatch.setattr(app_module, "encode_json", held(app_module.encode_json))
    model = Doubler(hold if stage == "model" else None)
    app = create_app(model, max_batch=MAX_BATCH, max_latency_ms=0, max_samples=MAX_SAMPLES)
    inputs = maximal_inputs()
    answers: list = []
    with Server(app) as server:
        sender = threading.Thread(target=lambda: answers.append(
            httpx.post(server.url + "/predict", content=npy(inputs), headers=NPY, timeout=TIMEOUT)
        ), daemon=True)  # fmt: skip
        sender.start()
        try:
            assert entered.wait(TIMEOUT), f"the request never reached its {stage} stage"
            health = httpx.get(server.url + "/health", timeout=TIMEOUT)
            assert health.status_code == 200 and health.json()["status"] == "ok"
            assert sender.is_alive() and not answers  # /health was answered first
        finally:
            release.set()
            sender.join(TIMEOUT)
    assert answers and answers[0].status_code == 200, answers
    np.testing.assert_array_equal(np.array(answers[0].json()["outputs"]), inputs * 2)
    # the request ran in parts of at most max_batch samples
    assert model.sizes == [MAX_BATCH] * (MAX_SAMPLES // MAX_BATCH)


def test_more_samples_than_max_samples_is_413_on_one_line():
    model = Doubler()
    app = create_app(model, max_batch=MAX_BATCH, max_samples=MAX_SAMPLES)
    limit = f"this server takes at most {MAX_SAMPLES} per request (--max-samples)"
    too_many = np.zeros((MAX_SAMPLES + 1, 2), np.float32)
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        answer = client.post("/predict", content=npy(too_many), headers=NPY)
        assert answer.status_code == 413
        assert answer.json() == {"detail": f"the request holds {MAX_SAMPLES + 1} samples; {limit}"}
        # JSON is refused as soon as the count passes the limit, before the rest is parsed
        body = json.dumps({"inputs": too_many.tolist()})
        answer = client.post("/predict", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 413
        assert answer.json() == {
            "detail": f"the request holds more than {MAX_SAMPLES} samples; {limit}"
        }
        assert model.sizes == []  # refused before the model
        assert client.get("/metadata").json()["max_samples"] == MAX_SAMPLES


def test_a_body_sent_by_half_is_timed_out_with_408():
    model = Doubler()
    app = create_app(model, body_timeout_s=0.5)
    with Server(app) as server:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy"
                b"\r\nContent-Length: 1000\r\n\r\n" + b"\x93NUMPY"
            )  # then nothing
            received = b""
            for _ in range(100):  # until the server closes the connection
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        status, _, rest = received.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout", received
        assert b"connection: close" in rest.lower()
        detail = json.loads(rest.partition(b"\r\n\r\n")[2])["detail"]
        assert detail == "the body did not arrive within 0.5 s (--body-timeout-s); 6 bytes came"
        assert httpx.get(server.url + "/health", timeout=TIMEOUT).status_code == 200


GOOD = npy(np.ones((1, 2), np.float32))
MALFORMED = [
    # (body, content type, status, part of the one-line reason)
    (npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (__import__('os'),), }"),
     "application/x-npy", 400, "its header is not what numpy.save writes (malformed node or string on line 1: an "
     "expression)"),
    (npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2)", b"\x00" * 8),
     "application/x-npy", 400, "its header is not what numpy.save writes (('EOF in multi-line statement'"),
    (npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (10**11, 2), }"),
     "application/x-npy", 400, "its header is not what numpy.save writes (malformed node"),
    (npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 2), }",
                     b"\x00" * 16),
     "application/x-npy", 400, "says shape (100000000000, 2) float64 (1600000000000 bytes), "
     "but 16 bytes follow it"),
    (GOOD + b"trailing", "application/x-npy", 400, "(8 bytes), but 16 bytes follow it"),
    (GOOD[:-2], "application/x-npy", 400, "(8 bytes), but 6 bytes follow it"),
    (b'{"inputs": [[1, 12345678901234567890123]]}', "application/json", 422,
     "the integer 12345678901234567890123, beyond the int64 range"),
    (b'{"inputs": ' + b"[" * 100 + b"1" + b"]" * 100 + b"}", "application/json", 422,
     '"inputs" nests lists more than 2 levels deep; this model takes 2'),
    (b'{"inputs": ' + b"[" * 5000 + b"]" * 5000 + b"}", "application/json", 400,
     "nests deeper than the parser allows"),
]  # fmt: skip


@pytest.mark.parametrize("body, kind, status, reason", MALFORMED,
                         ids=[case[3][:40] for case in MALFORMED])  # fmt: skip
def test_malformed_bodies_are_one_line_and_keep_the_connection(body, kind, status, reason):
    with Server(create_app(Doubler())) as server:
        host, port = server.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
        try:
            connection.request("POST", "/predict", body=body, headers={"Content-Type": kind})
            answer = connection.getresponse()
            detail = json.loads(answer.read())["detail"]
            assert answer.status == status, detail
            assert reason in detail and "\n" not in detail, detail
            assert not answer.will_close  # keep-alive: the server left the connection open
            sock = connection.sock
            connection.request("POST", "/predict", body=GOOD, headers=NPY)
            again = connection.getresponse()
            assert again.status == 200 and json.loads(again.read()) == {"outputs": [[2.0, 2.0]]}
            assert connection.sock is sock  # the same connection answered the next request
        finally:
            connection.close()
