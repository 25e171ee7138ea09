"""A misbehaving OpenAI-compatible endpoint on 127.0.0.1, for the fault tests (a pytest plugin: `fault_endpoint`).

It is the endpoint *under test*, not a stand-in for a model: each request gets the reply its mode names
(`ok`, `429` with Retry-After, `500`, `malformed` JSON, an `html` page, `empty` choices, or `never`: the
connection is accepted and no byte is ever sent). `script` lists modes for successive requests; the last one
repeats. Every request's arrival time is recorded, so a test can read the retry schedule the client kept.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ANSWER = "<final_answer>\nCommand: ls\nSummary: the folder holds README.md.\n</final_answer>"


def completion(content: str = ANSWER) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "tiny",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class FaultEndpoint:
    def __init__(self) -> None:
        self.script: list[str] = ["ok"]
        self.retry_after = "3"
        self.arrivals: list[float] = []
        self.stop = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    index = len(endpoint.arrivals)
                    endpoint.arrivals.append(time.monotonic())
                mode = endpoint.script[min(index, len(endpoint.script) - 1)]
                if mode == "never":
                    endpoint.stop.wait(120)  # hold the connection open, silent, until the test ends
                    return
                retry_after = {"Retry-After": endpoint.retry_after}
                status, body, ctype, headers = {
                    "ok": (200, json.dumps(completion()), "application/json", {}),
                    "429": (429, '{"error": {"message": "slow down"}}', "application/json", retry_after),
                    "500": (500, '{"error": {"message": "boom"}}', "application/json", {}),
                    "malformed": (200, '{"id": "x", "choices": [', "application/json", {}),
                    "html": (200, "<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html", {}),
                    "empty": (200, json.dumps(completion() | {"choices": []}), "application/json", {}),
                }[mode]
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def policy_options(self) -> dict[str, str]:
        """The options of a command whose policy calls this endpoint (see builders.cli_args)."""
        return {"policy": "openai", "model": "tiny", "base_url": self.url}

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fault_endpoint():
    endpoint = FaultEndpoint()
    endpoint.thread.start()
    try:
        yield endpoint
    finally:
        endpoint.close()
