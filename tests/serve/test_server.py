"""The real server on 127.0.0.1 (uvicorn in a background thread, a free port): answers, refusals,
model errors, and 200 concurrent requests with good and bad bodies mixed."""

import io
import json
import socket
import threading

import numpy as np
import pytest

from buildingai.serve import ServedModel, Server, Signature, create_app, load_model
from buildingai.serve.server import bind

from .models import DIGITS, run_directly

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

TIMEOUT = 30
BODY_LIMIT = 64 * 1024  # a few 784-pixel samples


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def samples(seed: int, count: int) -> np.ndarray:
    return np.random.default_rng(seed).random((count, 784), dtype=np.float32)


@pytest.fixture(scope="module")
def served(mlp_checkpoint):
    """(server URL, the model run directly) for the MLP checkpoint."""
    path, model = mlp_checkpoint
    app = create_app(load_model(path), max_batch=16, max_latency_ms=5, max_body_bytes=BODY_LIMIT)
    with Server(app) as server:
        yield server.url, model


@pytest.fixture
def client(served):
    with httpx.Client(base_url=served[0], timeout=TIMEOUT) as client:
        yield client


def test_json_inputs_give_the_models_outputs(served, client):
    _, model = served
    inputs = samples(0, 3)
    answer = client.post("/predict", json={"inputs": inputs.tolist()})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    outputs = np.array(answer.json()["outputs"], np.float32)
    np.testing.assert_allclose(outputs, run_directly(model, inputs), rtol=1e-5, atol=1e-6)


def test_npy_bodies_and_npy_answers(served, client):
    _, model = served
    inputs = samples(1, 2)
    headers = {"Content-Type": "application/x-npy"}
    answer = client.post("/predict", content=npy(inputs), headers=headers)
    assert answer.status_code == 200, answer.text
    outputs = np.array(answer.json()["outputs"], np.float32)
    np.testing.assert_allclose(outputs, run_directly(model, inputs), rtol=1e-5, atol=1e-6)
    headers = {"Content-Type": "application/octet-stream", "Accept": "application/x-npy, */*"}
    answer = client.post("/predict", content=npy(inputs.astype(np.float64)), headers=headers)
    assert answer.headers["content-type"] == "application/x-npy"
    outputs = np.load(io.BytesIO(answer.content))
    assert outputs.dtype == np.float32 and outputs.shape == (2, 10)
    np.testing.assert_allclose(outputs, run_directly(model, inputs), rtol=1e-5, atol=1e-6)


def test_health_and_metadata(client):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["failures"] == 0
    metadata = client.get("/metadata").json()
    assert metadata["kind"] == "checkpoint"
    assert metadata["input"] == {"name": "input", "shape": [None, 784], "dtype": "float32"}
    assert metadata["output"] == {"shape": [None, 10]}
    assert metadata["labels"] == DIGITS
    assert metadata["batching"] == {"max_batch": 16, "max_latency_ms": 5}
    assert metadata["max_body_bytes"] == BODY_LIMIT


def _chunks(total: int):
    for _ in range(total // 4096):
        yield b" " * 4096


JSON = {"Content-Type": "application/json"}
NPY = {"Content-Type": "application/x-npy"}
GOOD_ROW = ", ".join(["0.5"] * 784)
# (body, headers, status, part of the one-line reason)
BAD_REQUESTS = [
    (b'{"inputs": [[0.1, 0.2', JSON, 400, "not valid JSON"),
    (b'{"inputs": [[0.1, 0.2]]}', JSON, 422, "inputs have shape (1, 2); this model takes (N, 784)"),
    (b'{"inputs": [[' + GOOD_ROW.encode() + b"], [0.5]]}", JSON, 422, "ragged"),
    (b'{"inputs": [["' + b'", "'.join([b"x"] * 784) + b'"]]}', JSON, 422, "only numbers"),
    (b'{"inputs": [[' + GOOD_ROW.encode()[:-3] + b"null]]}", JSON, 422, "only numbers"),
    (b'{"samples": []}', JSON, 422, '{"inputs": [[...], ...]}'),
    (npy(np.ones((1, 784), bool)), NPY, 422, "dtype bool"),
    (npy(np.ones((1, 28, 28), np.float32)), NPY, 422, "shape (1, 28, 28)"),
    (b"\x93NUMPY broken", NPY, 400, "not a readable .npy array"),
    (GOOD_ROW.encode(), {"Content-Type": "text/csv"}, 415, "'text/csv' is not served"),
    (b" " * (BODY_LIMIT + 1), JSON, 413, f"at most {BODY_LIMIT} (--max-body-bytes)"),
]


@pytest.mark.parametrize("body, headers, status, reason", BAD_REQUESTS,
                         ids=[f"{case[2]}: {case[3][:40]}" for case in BAD_REQUESTS])  # fmt: skip
def test_bad_input_gets_a_4xx_with_a_one_line_reason(client, body, headers, status, reason):
    answer = client.post("/predict", content=body, headers=headers)
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert reason in detail and "\n" not in detail
    assert client.get("/health").json()["status"] == "ok"


def test_an_oversized_streamed_body_is_cut_off(client):
    # no Content-Length: the limit is found while reading
    answer = client.post("/predict", content=_chunks(4 * BODY_LIMIT), headers=JSON)
    assert answer.status_code == 413
    assert "passes 65536 bytes" in answer.json()["detail"]


def test_the_listening_socket_is_tcp_so_asyncio_turns_nagle_off():
    # asyncio sets TCP_NODELAY on accepted sockets only when proto is IPPROTO_TCP; without it,
    # each keep-alive answer waited for the client's delayed ACK (about 40 ms)
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_wrong_method_and_unknown_path(client):
    assert client.get("/predict").status_code == 405
    assert client.get("/nothing-here").status_code == 404


class Picky(ServedModel):
    """Doubles its input, and fails on any sample holding a 13."""

    kind = "test"

    def __init__(self) -> None:
        super().__init__("picky", Signature((2,), np.dtype(np.float32)), None)

    def run(self, batch: np.ndarray) -> np.ndarray:
        if (batch == 13).any():
            raise ValueError("13 is unlucky")
        return batch * 2


def test_a_model_error_is_a_500_and_the_server_stays_up():
    model = Picky()
    model.warm_up()
    with Server(create_app(model)) as server, httpx.Client(base_url=server.url) as client:
        answer = client.post("/predict", json={"inputs": [[1, 13]]})
        assert answer.status_code == 500
        assert answer.json() == {
            "detail": "the model failed on this input: ValueError: 13 is unlucky"
        }
        answer = client.post("/predict", json={"inputs": [[1, 2]]})
        assert answer.status_code == 200 and answer.json() == {"outputs": [[2.0, 4.0]]}
        assert client.get("/health").json()["failures"] == 1


def hammer(url: str, requests: list, threads: int = 200) -> list:
    """Send ``requests`` ((body, headers) each) from ``threads`` threads released together;
    returns each request's (status, body bytes) in order."""
    results: list = [None] * len(requests)
    start = threading.Barrier(threads)
    limits = httpx.Limits(max_connections=threads, max_keepalive_connections=threads)
    with httpx.Client(base_url=url, timeout=TIMEOUT, limits=limits) as client:

        def send(worker: int) -> None:
            start.wait(TIMEOUT)
            for index in range(worker, len(requests), threads):
                body, headers = requests[index]
                try:
                    answer = client.post("/predict", content=body, headers=headers)
                    results[index] = (answer.status_code, answer.content)
                except httpx.HTTPError as error:
                    results[index] = (None, repr(error).encode())

        workers = [threading.Thread(target=send, args=(k,), daemon=True) for k in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(3 * TIMEOUT)
        assert not any(worker.is_alive() for worker in workers), "requests did not finish"
    return results


@pytest.mark.parametrize("kind", ["checkpoint", "onnx"])
@pytest.mark.slow
def test_200_concurrent_requests_good_and_bad(kind, mlp_checkpoint, mlp_onnx):
    path, model = mlp_checkpoint if kind == "checkpoint" else mlp_onnx
    app = create_app(load_model(path), max_batch=32, max_latency_ms=20, max_body_bytes=BODY_LIMIT)
    requests, expected = [], []
    for index in range(200):
        if index % 4 == 3:  # every fourth request is bad, of every kind in turn
            body, headers, status, _ = BAD_REQUESTS[(index // 4) % len(BAD_REQUESTS)]
            requests.append((body, headers))
            expected.append(status)
            continue
        inputs = samples(index, 1 + index % 3)
        if index % 2:
            requests.append((json.dumps({"inputs": inputs.tolist()}).encode(), JSON))
        else:
            requests.append((npy(inputs), NPY))
        expected.append(run_directly(model, inputs))
    with Server(app) as server:
        results = hammer(server.url, requests)
        health = httpx.get(server.url + "/health", timeout=TIMEOUT).json()
    for index, ((status, content), want) in enumerate(zip(results, expected)):
        if isinstance(want, int):
            assert status == want, (index, content)
            assert "\n" not in json.loads(content)["detail"]
        else:
            assert status == 200, (index, content)
            outputs = np.array(json.loads(content)["outputs"], np.float32)
            np.testing.assert_allclose(outputs, want, rtol=1e-5, atol=1e-6, err_msg=str(index))
    assert health["status"] == "ok" and health["failures"] == 0
    assert health["requests"] == 150  # every good request reached the model, no bad one did
    assert health["largest_batch"] > 1  # concurrent requests were stacked
