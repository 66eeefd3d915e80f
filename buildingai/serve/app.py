"""The HTTP endpoint (FastAPI): ``POST /predict``, ``GET /health``, ``GET /metadata`` and the
drawing page at ``/``. Requests are checked here, on the event loop; the model runs on the
batching worker thread. Every answer that is not a success is ``{"detail": "<one line>"}``."""

# no `from __future__ import annotations`: FastAPI reads the handlers' annotations at definition
import asyncio
import time
from contextlib import asynccontextmanager

from .batching import Batcher
from .bodies import BadRequest, decode, encode_json, encode_npy, media_type
from .loading import ServedModel, ServeError, one_line
from .page import PAGE

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


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
):
    """A FastAPI app serving ``model`` with a ``Batcher`` (``app.state.batcher``) that stops
    when the app shuts down."""
    fastapi, _ = require_serving()
    from fastapi import Request
    from fastapi.responses import HTMLResponse, JSONResponse, Response

    if not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ServeError(f"max_body_bytes must be an integer >= 1, got {max_body_bytes!r}")
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
        return JSONResponse({"detail": reason}, status_code=status)

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
            "content_types": ["application/json", "application/x-npy",
                              "application/octet-stream"],
        }  # fmt: skip

    @app.post("/predict")
    async def predict(request: Request) -> Response:
        try:
            with batcher.arriving():
                body = await read_body(request, max_body_bytes)
                batch = decode(body, request.headers.get("content-type"), model.signature)
                future = batcher.submit(batch)
        except BadRequest as error:
            return refuse(error.status, error.reason)
        try:
            outputs = await asyncio.wrap_future(future)
        except Exception as error:
            return refuse(500, f"the model failed on this input: {one_line(error)}")
        accepted = [media_type(part) for part in request.headers.get("accept", "").split(",")]
        if "application/x-npy" in accepted:
            return Response(encode_npy(outputs), media_type="application/x-npy")
        try:
            return Response(encode_json(outputs), media_type="application/json")
        except ValueError:
            return refuse(500, "the outputs hold NaN or infinity, which JSON cannot carry; "
                               "ask for Accept: application/x-npy")  # fmt: skip

    return app


async def read_body(request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to pass ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest(400, f"Content-Length {declared!r} is not a number of bytes")
        if int(declared) > limit:
            raise BadRequest(413, f"the body has {declared} bytes; this server takes at most "
                                  f"{limit} (--max-body-bytes)")  # fmt: skip
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise BadRequest(413, f"the body passes {limit} bytes, the most this server takes "
                                  "(--max-body-bytes)")  # fmt: skip
        chunks.append(chunk)
    return b"".join(chunks)
