"""`terminus mcp` over stdio: `MCPServer.run("stdio")`, with JSON-RPC's standard error reply to each line that is no
message (the SDK's stdio transport hands the reader's exception to the session, which only logs it), so a client
that sent a broken request is told so and the next line is served. The HTTP transport is `mcp_http`."""

from __future__ import annotations

import logging

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger(__name__)


# JSON-RPC 2.0's codes for a line that is not JSON, and for JSON that is no JSON-RPC message
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def error_reply(error: Exception) -> JSONRPCError:
    """The standard reply to a line the stdio transport could not read as a message (the SDK hands the reader's
    exception on, and drops it): a parse error, or an invalid request with its id where one can be told."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if not problems or any(p["type"] == "json_invalid" for p in problems):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    ids = [p["input"].get("id") for p in problems if isinstance(p.get("input"), dict)]
    request_id = next((i for i in ids if isinstance(i, str | int) and not isinstance(i, bool)), None)
    error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


async def serve_stdio(server: MCPServer) -> None:
    """`MCPServer.run("stdio")`, with a reply to each malformed line: the SDK's stdio transport passes the reader's
    exception to the session, which only logs it, so a client that sent a broken request waited for ever."""
    lowlevel = server._lowlevel_server  # what run("stdio") drives; the SDK has no hook for the exceptions
    async with stdio_server() as (read_stream, write_stream):
        forward, received = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with forward:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        log.info("a line on stdin is no JSON-RPC message: %s", item)
                        await write_stream.send(SessionMessage(error_reply(item)))
                    else:
                        await forward.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            await lowlevel.run(received, write_stream, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()
