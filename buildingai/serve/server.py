"""Run the app on uvicorn: ``serve`` in the foreground (the command line), ``Server`` in a
background thread (tests, benchmarks, notebooks). Both bind the socket themselves, so port 0
picks a free port and ``url`` says which."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from .app import require_serving
from .loading import ServeError


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio turns Nagle off (TCP_NODELAY) only on such sockets, so a
    # response written in two parts never waits for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {error.strerror}",
                         help="choose another --port, or stop what is using it") from None  # fmt: skip
    sock.listen(2048)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _uvicorn_server(app, log_level: str):
    _, uvicorn = require_serving()
    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on",
                            timeout_graceful_shutdown=5)  # fmt: skip
    return uvicorn.Server(config)


def serve(app, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          on_ready=None) -> None:  # fmt: skip
    """Serve ``app`` until interrupted (Ctrl-C); ``on_ready(url)`` is called once listening."""
    sock = bind(host, port)
    server = _uvicorn_server(app, log_level)
    if on_ready is not None:
        on_ready(url_of(sock))
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stopped cleanly, then re-raised Ctrl-C
        server.run(sockets=[sock])


class Server:
    """``app`` served from a background thread on ``host`` (a free port by default)::

    with Server(create_app(load_model("model.onnx"))) as server:
        httpx.post(server.url + "/predict", json={"inputs": [...]})
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning",
                 start_timeout: float = 20.0) -> None:  # fmt: skip
        self.app, self.start_timeout = app, start_timeout
        self._socket = bind(host, port)
        self.url = url_of(self._socket)
        self._server = _uvicorn_server(app, log_level)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="buildingai-serve", daemon=True)  # fmt: skip

    def start(self) -> Server:
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ServeError(f"the server at {self.url} did not start within "
                                 f"{self.start_timeout:g} s")  # fmt: skip
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
