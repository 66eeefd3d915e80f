"""The HTTP endpoint (FastAPI): ``POST /predict``, ``GET /health``, ``GET /metadata`` and the
drawing page at ``/``. Bodies are read on the event loop, decoded and encoded on worker threads
(``asyncio.to_thread``), and the model runs on the batching worker thread, so the loop stays
free to answer ``/health`` and other clients while a large request is served. Every answer that is not a success is ``{"detail": "<one line>"}``."""

# no `from __future__ import annotations`: FastAPI reads the handlers' annotations at definition
import asyncio
import time
from contextlib import asynccontextmanager

from .batching import Batcher
from .bodies import BadRequest, decode, encode_json, encode_npy, media_type
from .loading import ServedModel, ServeError, one_line
from .page import PAGE

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SAMPLES = 8192  # per request; each runs in parts of max_batch samples
DEFAULT_BODY_TIMEOUT_S = 30.0  # from the request's headers to the last byte of its body


def require_serving():
    """Import fastapi and uvicorn, or raise an error that says how to install them."""
    try:
        import fastapi
        import uvicorn
    except ImportError as error:
        raise ServeError(
            f"serving needs the optional packages fastapi and uvicorn ({error.name} is missing)",
            help="pip install 'buildingai[serve]'",
        ) from None
    return fastapi, uvicorn


def create_app(
    model: ServedModel,
    max_batch: int = 64,
    max_latency_ms: float = 5.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
):
    """A FastAPI app serving ``model`` with a ``Batcher`` (``app.state.batcher``) that stops
    when the app shuts down. A request holds at most ``max_samples`` samples (413 above) and
    its body must arrive within ``body_timeout_s`` seconds (408 after)."""
    fastapi, _ = require_serving()
    from fastapi import Request
    from fastapi.responses import HTMLResponse, JSONResponse, Response

    _check_setting("max_body_bytes", max_body_bytes)
    _check_setting("max_samples", max_samples)
    if not (isinstance(body_timeout_s, (int, float)) and 0 < body_timeout_s < float("inf")):
        raise ServeError(f"body_timeout_s must be a number of seconds > 0, got {body_timeout_s!r}")
    batcher = Batcher(model.run, max_batch=max_batch, max_latency_ms=max_latency_ms)
    started = time.time()

    @asynccontextmanager
    async def lifespan(app):
        yield
        batcher.close()

    app = fastapi.FastAPI(title="BuildingAI model server", lifespan=lifespan, docs_url=None,
                          redoc_url=None, openapi_url=None)  # fmt: skip
    app.state.batcher, app.state.model = batcher, model

    def refuse(status: int, reason: str) -> JSONResponse:
        # a body left unread (413, 408) cannot be skipped reliably: close after answering
        close = {"Connection": "close"} if status in (408, 413) else None
        return JSONResponse({"detail": reason}, status_code=status, headers=close)

    @app.exception_handler(Exception)
    async def unexpected(request, error: Exception) -> JSONResponse:
        return refuse(500, f"internal error: {one_line(error)}")

    @app.get("/", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "uptime_s": round(time.time() - started, 3),
                **batcher.stats.to_dict()}  # fmt: skip

    @app.get("/metadata")
    async def metadata() -> dict:
        return {
            **model.describe(),
            "batching": {"max_batch": batcher.max_batch, "max_latency_ms": max_latency_ms},
            "max_body_bytes": max_body_bytes,
            "max_samples": max_samples,
            "content_types": ["application/json", "application/x-npy",
                              "application/octet-stream"],
        }  # fmt: skip

    @app.post("/predict")
    async def predict(request: Request) -> Response:
        # every failure is answered here, never raised: a raised error makes the server close
        # the connection, and the client's next request on it would be reset
        try:
            return await answer(request)
        except BadRequest as error:
            return refuse(error.status, error.reason)
        except Exception as error:  # noqa: BLE001 - one line to the client, server stays up
            return refuse(500, f"internal error: {one_line(error)}")

    async def answer(request: Request) -> Response:
        with batcher.arriving():
            body = await read_body(request, max_body_bytes, body_timeout_s)
            # decoding and encoding run off the event loop: a large body never delays /health
            batch = await asyncio.to_thread(decode, body, request.headers.get("content-type"),
                                            model.signature, max_samples)  # fmt: skip
            del body
            future = batcher.submit(batch)
        try:
            outputs = await asyncio.wrap_future(future)
        except Exception as error:
            return refuse(500, f"the model failed on this input: {one_line(error)}")
        accepted = [media_type(part) for part in request.headers.get("accept", "").split(",")]
        if "application/x-npy" in accepted:
            return Response(await asyncio.to_thread(encode_npy, outputs),
                            media_type="application/x-npy")  # fmt: skip
        try:
            encoded = await asyncio.to_thread(encode_json, outputs)
        except ValueError:
            return refuse(500, "the outputs hold NaN or infinity, which JSON cannot carry; "
                               "ask for Accept: application/x-npy")  # fmt: skip
        return Response(encoded, media_type="application/json")

    return app


def _check_setting(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ServeError(f"{name} must be an integer >= 1, got {value!r}")


async def read_body(request, limit: int, timeout_s: float) -> bytes:
    """The request body, refused with 413 as soon as it is known to pass ``limit`` bytes, and
    with 408 when it has not all arrived ``timeout_s`` seconds after the headers: a client that
    sends half a body and waits would otherwise hold its connection and memory for ever."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest(400, f"Content-Length {declared!r} is not a number of bytes")
        if int(declared) > limit:
            raise BadRequest(413, f"the body has {declared} bytes; this server takes at most "
                                  f"{limit} (--max-body-bytes)")  # fmt: skip
    chunks, total = [], 0
    stream = request.stream().__aiter__()
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        left = deadline - asyncio.get_running_loop().time()
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), timeout=max(left, 0.0))
        except StopAsyncIteration:
            break
        except asyncio.TimeoutError:
            raise BadRequest(408, f"the body did not arrive within {timeout_s:g} s "
                                  f"(--body-timeout-s); {total} bytes came") from None  # fmt: skip
        total += len(chunk)
        if total > limit:
            raise BadRequest(413, f"the body passes {limit} bytes, the most this server takes "
                                  "(--max-body-bytes)")  # fmt: skip
        chunks.append(chunk)
    return b"".join(chunks)
