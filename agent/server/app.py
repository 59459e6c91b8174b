"""The HTTP side: a FastAPI app that speaks GGP the way real game managers expect.

* POST with any content type, HTTP/1.0 or 1.1; the body is the message (up to
  ``max_body`` bytes; larger requests get 413 and ``busy``).
* ``GET /<url-encoded message>`` (ggp-base's reading: ``+`` is a space); ``GET /`` answers
  like INFO, so a browser can check the player.
* ``OPTIONS`` (CORS pre-flight): empty 200.  Other methods: empty 200, as ggp-base does,
  but ``CONNECT``: 405 (a 2xx would switch the connection to a tunnel).
* Every reply: ``Content-type: text/acl``, ``Content-length``, the four CORS headers with
  ggp-base's spelling (``Access-Control-Allow-Age``), and ``Connection: close`` (Dresden
  reads to end of stream).  Header names are written in ggp-base's case.
* Nothing a client sends can produce a 5xx: every failure is logged and answered ``busy``
  (or, for PLAY, with a fallback move).
"""
from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from urllib.parse import unquote_plus

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from .config import ServerConfig
from .matches import MatchManager
from .protocol import ProtocolError, decode_body, parse_message

log = logging.getLogger("ggp.server")

CORS = [
    (b"Access-Control-Allow-Origin", b"*"),
    (b"Access-Control-Allow-Methods", b"POST, GET, OPTIONS"),
    (b"Access-Control-Allow-Headers", b"Content-Type"),
    (b"Access-Control-Allow-Age", b"86400"),
]
PARSE_IN_THREAD = 64 * 1024  # big STARTs are tokenised off the event loop


class AclResponse(Response):
    """A reply exactly as ggp-base's HttpWriter writes it (plus Connection: close)."""

    def __init__(self, body: str = "", status_code: int = 200):
        super().__init__(content=body.encode("utf-8"), status_code=status_code)
        # Content-Length counts bytes (HTTP's rule); replies are ASCII in practice, where
        # that equals ggp-base's char count, and the connection closes after the body anyway.
        self.raw_headers = [
            (b"Content-type", b"text/acl"),
            (b"Content-length", str(len(self.body)).encode("ascii")),
            *CORS,
            (b"Connection", b"close"),
        ]


class TooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise TooLarge(f"Content-Length {declared} exceeds the limit of {limit} bytes")
        except ValueError:
            pass
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def message_from_get(request: Request) -> str:
    """ggp-base takes the request line between ``GET /`` and the last space, URL-decoded."""
    raw = request.scope.get("raw_path") or request.url.path.encode("latin-1", "replace")
    text = raw.decode("latin-1")
    qs = request.scope.get("query_string") or b""
    if qs:
        text += "?" + qs.decode("latin-1")
    return unquote_plus(text[1:] if text.startswith("/") else text, encoding="utf-8", errors="replace")


def create_app(config: ServerConfig, manager: MatchManager | None = None) -> FastAPI:
    manager = manager or MatchManager(config)

    @asynccontextmanager
    async def lifespan(app):
        await manager.startup()
        log.info("%s listening on http://%s:%s/ (persona %s)", config.name, config.host, config.port,
                 config.persona or "default")
        try:
            yield
        finally:
            await manager.shutdown()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.manager = manager

    async def endpoint(request: Request):
        # The manager's clock started no later than the connection opened (the protocol
        # notes when, on time.monotonic()).
        received = min(time.monotonic(), request.scope.get("ggp.opened_at", float("inf")))
        method = request.method.upper()
        if method == "CONNECT":
            # A 2xx would open a tunnel (h11 then refuses the body: a traceback per request)
            return AclResponse("", status_code=405)
        if method == "OPTIONS" or method not in ("GET", "POST"):
            return AclResponse("")
        try:
            if method == "GET":
                text = message_from_get(request)
                if not text.strip():
                    return AclResponse(manager.info())
            else:
                data = await read_body(request, config.max_body)
                if len(data) > PARSE_IN_THREAD:
                    text = await asyncio.to_thread(decode_body, data)
                else:
                    text = decode_body(data)
        except TooLarge as e:
            log.error("request refused: %s", e)
            return AclResponse("busy", status_code=413)
        except Exception as e:  # a broken connection, mostly
            log.error("cannot read the request: %s: %s", type(e).__name__, e)
            return AclResponse("busy")
        reply = await handle_text(manager, text, received)
        return AclResponse(reply)

    app.add_api_route("/{rest:path}", endpoint, include_in_schema=False,
                      methods=["GET", "POST", "OPTIONS", "HEAD", "PUT", "DELETE", "PATCH"])
    # Paths the route's pattern cannot match (a GET message with a newline in it) would get
    # Starlette's JSON 404: every request is a GGP request here, so they take the same path.
    async def unrouted(request: Request, _exc):
        return await endpoint(request)

    app.add_exception_handler(StarletteHTTPException, unrouted)
    return app


async def handle_text(manager: MatchManager, text: str, received: float) -> str:
    """The reply to one message; never raises."""
    kind = "?"
    try:
        if len(text) > PARSE_IN_THREAD:
            msg = await asyncio.to_thread(parse_message, text)
        else:
            msg = parse_message(text)
        kind = msg.kind
        if kind == "info":
            reply = manager.info()
        elif kind == "preview":
            reply = "ready"  # nothing to prepare for: ggp-base never sends it
        elif kind == "start":
            reply = await manager.start(msg, received)
        elif kind == "play":
            reply = await manager.play(msg, received)
        elif kind == "stop":
            reply = await manager.stop(msg, received)
        else:
            reply = await manager.abort(msg)
        if kind not in ("info",):
            log.info("%s %s -> %s (%.0f ms)", kind.upper(), msg.match_id or "", reply[:60],
                     (time.monotonic() - received) * 1000)
        return reply
    except ProtocolError as e:
        log.error("malformed message (%s): %r", e, text[:200])
        return "busy"
    except Exception as e:
        log.exception("internal error on %s message: %s", kind.upper(), e)
        return "busy"
