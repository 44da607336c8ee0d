"""The model port: the one way the SDK calls a language model, and an OpenAI-compatible client.

Nothing here runs unless the app configures a model (``Memory.open(..., model=...)``); there
is no default model and no network call of its own. Every call the SDK makes goes through the
port (:mod:`mainsdk_memory._modelport`), which redacts identifiers, checks what goes in and
comes out for injection, applies the agent's limits, audits ids and counts, and never runs for
a child::

    from mainsdk_memory import Memory, ai

    model = ai.OpenAICompatible("http://127.0.0.1:8080/v1", model="qwen2.5-7b-instruct")
    memory = Memory.open("sqlite:///memory.db", keys="./keys", app="support", model=model)

:class:`OpenAICompatible` speaks the chat-completions API (``POST {base_url}/chat/completions``)
of a llama.cpp server, Ollama, vLLM or a hosted API, with the standard library only. It is
configured explicitly and by nothing else: it reads no environment variable (no proxy, no
key), sends no telemetry, follows no redirect, and keeps its API key out of its ``repr``, its
errors and any log. Any other object with a ``complete(messages, *, schema=None) -> str``
method is a :class:`Model` too.
"""

from __future__ import annotations

import http.client
import json
import math
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, Protocol, runtime_checkable
from urllib.parse import urlsplit

from mainsdk_memory._errors import ConfigurationError, InvalidInputError, ModelError

__all__ = ["Model", "ModelError", "OpenAICompatible"]

#: The largest answer read from a server (an answer is a few kilobytes of text).
MAX_ANSWER_BYTES = 8 * 1024 * 1024

_ROLES = frozenset({"system", "user", "assistant"})


@runtime_checkable
class Model(Protocol):
    """A language model: chat messages in, the model's text out.

    ``messages`` are ``{"role": "system" | "user" | "assistant", "content": str}`` dicts;
    ``schema`` (a JSON schema) asks for a JSON answer of that shape.
    """

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None
    ) -> str:
        """The model's answer to ``messages``."""
        ...


def _remaining(connection: http.client.HTTPConnection, deadline: float) -> None:
    """Give the connection's next socket operation only what is left of the call's time."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if connection.sock is not None:
        connection.sock.settimeout(left)


def _header_text(value: object, what: str) -> str:
    # No control character: a CR or LF would let a value add headers of its own.
    if not isinstance(value, str) or not value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigurationError(f"{what} must be a non-empty string without control characters.")
    return value


class OpenAICompatible:
    """An OpenAI-compatible chat-completions client (llama.cpp server, Ollama, vLLM, hosted).

    ``base_url`` is the API's root, e.g. ``http://127.0.0.1:8080/v1`` (llama.cpp),
    ``http://127.0.0.1:11434/v1`` (Ollama) or ``https://api.openai.com/v1``: http or https,
    with no user name, password, query or fragment in it. ``model`` is the name the server
    knows the model by; ``api_key``, when given, is sent as ``Authorization: Bearer …`` and
    never shown; ``headers`` are sent with every request (their values are never shown
    either). ``timeout`` bounds each call in seconds (connecting and reading the whole
    answer); ``temperature`` and ``max_tokens`` go into each request as they are.

    With a ``schema``, a call asks for JSON of that shape with
    ``response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": …}}``.
    A failure (no connection, the timeout, a status other than 2xx, a redirect, an answer
    that is not a chat-completions answer) raises :class:`ModelError`, whose message holds
    neither the prompt nor the answer nor the server's reply. Plain http sends the prompt (and
    the key) in clear: use https for anything but a server on this machine.

    One call is one connection, so a client can be shared by threads. It refuses to be
    pickled (it holds a key).
    """

    __slots__ = (
        "_api_key", "_headers", "_host", "_https", "_max_tokens", "_model", "_origin", "_path",
        "_port", "_temperature", "_timeout", "_tls",
    )

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(base_url, str):
            raise ConfigurationError("base_url must be a string such as 'http://127.0.0.1:8080/v1'.")
        parts = urlsplit(base_url.strip())
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in {"http", "https"} or not parts.hostname or port == -1:
            raise ConfigurationError(
                "base_url must be an http or https URL with a host, such as "
                "'http://127.0.0.1:8080/v1' or 'https://api.openai.com/v1'."
            )
        if parts.username is not None or parts.password is not None:
            raise ConfigurationError(
                "base_url must not hold a user name or password: pass the key as api_key=."
            )
        if parts.query or parts.fragment:
            raise ConfigurationError(
                "base_url must not hold a query or a fragment: pass a key as api_key= and "
                "other values as headers=."
            )
        self._https = parts.scheme == "https"
        self._tls: ssl.SSLContext | None = None
        self._host = parts.hostname
        self._port = port if port is not None else (443 if self._https else 80)
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._origin = f"{parts.scheme}://{host}:{self._port}"
        self._path = parts.path.rstrip("/") + "/chat/completions"
        self._model = _header_text(model, "model")
        self._api_key = None if api_key is None else _header_text(api_key, "api_key")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not (
            math.isfinite(timeout) and timeout > 0
        ):
            raise ConfigurationError("timeout must be a positive number of seconds.")
        self._timeout = float(timeout)
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not (
            math.isfinite(temperature) and temperature >= 0
        ):
            raise ConfigurationError("temperature must be a number of 0 or more.")
        self._temperature = float(temperature)
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ConfigurationError("max_tokens must be a positive integer or None.")
        self._max_tokens = max_tokens
        if headers is not None and not isinstance(headers, Mapping):
            raise ConfigurationError("headers must be a mapping of header names to values.")
        checked: dict[str, str] = {}
        for name, value in (headers or {}).items():
            name = _header_text(name, "A header name")
            if not all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name):
                raise ConfigurationError("A header name holds only letters, digits and - _ .")
            if name.lower() in {"host", "content-length", "content-type", "transfer-encoding"}:
                raise ConfigurationError(f"The header {name!r} is set by the client itself.")
            checked[name] = _header_text(value, f"The value of header {name!r}")
        self._headers = checked

    @property
    def base_url(self) -> str:
        """Where requests go (scheme, host, port and path; never a key)."""
        return self._origin + self._path.removesuffix("/chat/completions")

    @property
    def model(self) -> str:
        """The model's name on the server."""
        return self._model

    def __repr__(self) -> str:
        key = "" if self._api_key is None else ", api_key=***"
        names = "" if not self._headers else f", headers=[{', '.join(sorted(self._headers))}]"
        return f"OpenAICompatible({self.base_url!r}, model={self._model!r}{key}{names})"

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("An OpenAICompatible client holds a key and cannot be pickled.")

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None
    ) -> str:
        """The model's answer to ``messages`` (the first choice's message content)."""
        body = json.dumps(self._request(messages, schema), ensure_ascii=False).encode("utf-8")
        status, payload = self._post(body)
        if not 200 <= status < 300:
            if 300 <= status < 400:
                self._fail(
                    "redirect",
                    f"The model at {self._origin} answered with a redirect (HTTP {status}); the "
                    "client follows none. Point base_url at the server itself.",
                    status,
                )
            self._fail(
                "status",
                f"The model at {self._origin} answered with HTTP status {status}; nothing was "
                "stored. Check the model's name, the key and the server's own log, then retry.",
                status,
            )
        return self._answer(payload)

    # -- inside ------------------------------------------------------------------------------

    def _request(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not messages:
            raise InvalidInputError("messages is a non-empty list of {'role', 'content'} dicts.")
        sent = []
        for message in messages:
            if not isinstance(message, Mapping):
                raise InvalidInputError("Each message is a {'role', 'content'} dict.")
            role, content = message.get("role"), message.get("content")
            if role not in _ROLES or not isinstance(content, str):
                raise InvalidInputError(
                    "Each message has a role ('system', 'user' or 'assistant') and a text "
                    "content."
                )
            sent.append({"role": role, "content": content})
        request: dict[str, Any] = {
            "model": self._model,
            "messages": sent,
            "temperature": self._temperature,
            "stream": False,
        }
        if self._max_tokens is not None:
            request["max_tokens"] = self._max_tokens
        if schema is not None:
            if not isinstance(schema, Mapping):
                raise InvalidInputError("schema is a JSON schema (a dict) or None.")
            try:
                json.dumps(schema)
            except (TypeError, ValueError):
                raise InvalidInputError("schema must be plain JSON data.") from None
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(schema)},
            }
        return request

    def _post(self, body: bytes) -> tuple[int, bytes]:
        deadline = time.monotonic() + self._timeout
        connection: http.client.HTTPConnection
        if self._https:
            if self._tls is None:
                self._tls = ssl.create_default_context()  # verifies the certificate and host
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._timeout, context=self._tls
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        headers = {
            "Accept": "application/json",
            "User-Agent": "mainsdk-memory",
            **self._headers,
            "Content-Type": "application/json",
        }
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        failure: tuple[str, str] | None = None
        try:
            connection.request("POST", self._path, body=body, headers=headers)
            _remaining(connection, deadline)
            response = connection.getresponse()
            chunks, size = [], 0
            while True:
                _remaining(connection, deadline)
                chunk = response.read1(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    failure = ("too-large", "answered with more than 8 MiB")
                    break
                chunks.append(chunk)
            status = response.status
        except TimeoutError:
            failure = ("timeout", f"did not answer within {self._timeout:g} s")
        except ssl.SSLError:
            failure = ("connection", "could not be reached over TLS (check its certificate)")
        except (OSError, http.client.HTTPException):
            # The error names only the kind of failure: no exception of the socket or of
            # http.client is chained, so nothing of the request travels with the error.
            failure = ("connection", "could not be reached")
        finally:
            connection.close()
        if failure is not None:
            reason, what = failure
            self._fail(
                reason,
                f"The model at {self._origin} {what}; nothing was stored. Check that the "
                "server runs and base_url and timeout are right, then retry.",
            )
        return status, b"".join(chunks)

    def _answer(self, payload: bytes) -> str:
        try:
            data = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            data = None
        content = None
        if isinstance(data, dict):
            choices = data.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                message = choices[0].get("message")
                if isinstance(message, dict):
                    content = message.get("content")
        if not isinstance(content, str):
            self._fail(
                "malformed",
                f"The model at {self._origin} did not give a chat-completions answer with text "
                "in choices[0].message.content; nothing was stored. Check that base_url is an "
                "OpenAI-compatible API (it usually ends in /v1).",
            )
        return content

    @staticmethod
    def _fail(reason: str, message: str, status: int | None = None) -> NoReturn:
        raise ModelError(message, reason=reason, status=status)
