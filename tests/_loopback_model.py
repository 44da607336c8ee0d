"""A local OpenAI-compatible chat-completions server for tests: no internet, no model.

It listens on 127.0.0.1 (a free port), in a thread, for as long as the ``with`` block runs;
it records every request it received and answers each with what the test's function returns
for the request's messages, in the real chat-completions response shape::

    from _loopback_model import LoopbackModel

    with LoopbackModel(lambda messages: "Noted.") as server:
        model = OpenAICompatible(server.base_url, model="loopback", api_key="sk-test")
        model.complete([{"role": "user", "content": "hi"}])      # "Noted."
        server.requests[0].body["messages"]                      # what the client sent
        server.requests[0].headers["Authorization"]              # "Bearer sk-test"
        server.seen()                                            # every message's content

``answer`` takes the request's ``messages`` (a list of ``{"role", "content"}`` dicts) and
returns the answer's text; it may also look at ``server.requests[-1]`` for the whole body
(e.g. ``response_format``). To simulate a failing server, set :attr:`LoopbackModel.mode`
(also between calls): ``"ok"`` (default), ``"error"`` (HTTP 500 with a body that quotes the
prompt, as some servers do), ``"bad-json"`` (200 with a body that is not JSON),
``"no-content"`` (200, valid JSON without ``choices``), ``"redirect"`` (307 to another
host), ``"slow"`` (waits :attr:`LoopbackModel.delay` seconds before answering). A request
is recorded before it is answered, whatever the mode. Requests to another path than
``/v1/chat/completions`` get 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["LoopbackModel", "Received"]

Answer = Callable[[list[dict[str, str]]], str]


@dataclass(frozen=True)
class Received:
    """One request the server received: its path, headers and decoded JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class LoopbackModel:
    """The server (see the module docstring). ``base_url`` ends in ``/v1``."""

    def __init__(self, answer: Answer | None = None, *, delay: float = 2.0) -> None:
        self.answer: Answer = answer or (lambda messages: "")
        self.mode = "ok"
        self.delay = delay
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        assert self._server is not None, "use the server inside `with`"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def seen(self) -> str:
        """Every message content of every request received, joined by newlines."""
        with self._lock:
            return "\n".join(
                str(message.get("content", ""))
                for request in self.requests
                for message in request.body.get("messages", [])
            )

    def __enter__(self) -> LoopbackModel:
        server = _Server(("127.0.0.1", 0), _handler(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a timeout test) is not the server's failure


def _completion(text: str, model: str) -> dict[str, Any]:
    """The response shape of OpenAI's chat completions (as llama.cpp and vLLM return it)."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _handler(server: LoopbackModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # silent: tests read server.requests

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw.decode("utf-8"))
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            server._record(Received(self.path, dict(self.headers.items()), body))
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            messages = body.get("messages", [])
            mode = server.mode
            if mode == "slow":
                time.sleep(server.delay)
            if mode == "error":
                quoted = json.dumps({"error": {"message": f"failed on {messages!r}"}})
                self._send(500, quoted.encode())
            elif mode == "bad-json":
                self._send(200, b"{this is not json: " + json.dumps(messages).encode())
            elif mode == "no-content":
                self._send(200, b'{"object": "chat.completion", "choices": []}')
            elif mode == "redirect":
                self._send(307, b"", {"Location": "http://192.0.2.1/v1/chat/completions"})
            else:
                text = server.answer(messages)
                self._send(200, json.dumps(_completion(text, str(body.get("model")))).encode())

    return Handler
