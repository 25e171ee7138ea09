"""`terminus mcp --http`: the streamable HTTP transport's socket and server, and the ASGI middlewares in front of
the MCP app. Every request must carry `Authorization: Bearer <token>` (any local process can reach a loopback port;
only the user holds the token); a client that drops a call's connection cancels the call; and a connection whose
request headers are not complete within `header_timeout_s` seconds is closed (a client that sends half a request
line, or one byte a minute, would otherwise hold its connection, and a slot, for ever)."""

from __future__ import annotations

import hmac
import json
import logging
import socket
from typing import TYPE_CHECKING

import anyio

from terminus.errors import TerminusError

if TYPE_CHECKING:  # the SDK loads when a server is built; the CLI reads HEADER_TIMEOUT_S from here for its help
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 10.0
"""Seconds a connection may take to send a whole request's headers (from the connection, or from the end of the
previous response on a kept-alive one). Any client sends them at once; only a stalled or hostile one is cut."""

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class ListenError(TerminusError, OSError):
    """The HTTP port cannot be bound (taken, or not ours to take)."""


class BearerTokenRequired:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`; anything else is a 401
    before the MCP app sees it. Lifespan events pass through (the app's session manager starts in them)."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = b'{"error": "unauthorized: send Authorization: Bearer <the token terminus mcp printed>"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="terminus mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope) -> bool:
        given = [value for name, value in scope.get("headers", []) if name.lower() == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, credential = given[0].partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token)


MAX_PARSED_BODY = 1 << 20  # a tools/call is a query and a description: larger bodies pass through unread


class CancelOnDisconnect:
    """ASGI middleware: a client that drops a request's connection before its response is complete has given
    up on it, but the MCP SDK keeps running the handler (and its sandbox) to the end. Here the request's own
    session is sent `notifications/cancelled` for it, the protocol's cancellation, as if the client had sent it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        buffered, more = [], True
        size = 0
        while more and size <= MAX_PARSED_BODY:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        request_id = None if more else _request_id(b"".join(m.get("body", b"") for m in buffered))
        state = {"disconnected": False, "complete": False}

        async def replay():
            if buffered:
                return buffered.pop(0)
            message = await receive()
            if message["type"] == "http.disconnect":
                state["disconnected"] = True
            return message

        async def watch_send(message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True
            await send(message)

        try:
            await self.app(scope, replay, watch_send)
        finally:
            if state["disconnected"] and not state["complete"] and request_id is not None:
                with anyio.CancelScope(shield=True):
                    await self._cancel(scope, request_id)

    async def _cancel(self, scope, request_id) -> None:
        session = dict(scope["headers"]).get(b"mcp-session-id")
        if session is None:
            return
        log.info("the client dropped request %s of session %s: cancelling it", request_id, session.decode())
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": "the client disconnected"},
            }
        ).encode()
        replaced = (b"content-length", b"content-type", b"accept")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in replaced]
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(body)).encode()),
        ]
        delivered = False

        async def receive():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(message) -> None:
            pass

        try:
            await self.app(dict(scope, headers=headers), receive, discard)
        except Exception as err:  # the session may be gone already; then so is the call
            log.warning("could not cancel request %s after the client disconnected: %s", request_id, err)


def _request_id(body: bytes):
    """The JSON-RPC id of a request that may be cancelled (not `initialize`), else None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") in (None, "initialize"):
        return None
    request_id = message.get("id")
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def listen(host: str, port: int) -> socket.socket:
    """The HTTP transport's socket, bound before anything is announced: a taken port is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        why = f"cannot listen on {host} port {port} ({err.strerror}); choose another --http PORT"
        raise ListenError(why) from None
    sock.listen(128)
    return sock


def serve_http(server: MCPServer, sock: socket.socket, token: str, header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
    """Streamable HTTP on the bound socket, path /mcp, behind the bearer token; a dropped call is cancelled; request
    headers have `header_timeout_s` seconds to arrive."""
    import uvicorn

    host = sock.getsockname()[0]
    app = BearerTokenRequired(CancelOnDisconnect(server.streamable_http_app(host=host)), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", http=header_deadline(header_timeout_s))
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def header_deadline(timeout_s: float) -> type:
    """uvicorn's h11 protocol with a deadline on each request's headers, which uvicorn does not have: its keep-alive
    timer stops at the first byte of the next request, and nothing times the first request of a connection. (A
    class made here: uvicorn and h11 load only when HTTP is served.)"""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the request line and headers are in: the request runs
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # the next request on this connection has its own deadline

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(timeout_s, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                log.info("closing a connection from %s: no whole request headers in %g s", self.client, timeout_s)
                self.transport.close()

    return HeaderDeadline
