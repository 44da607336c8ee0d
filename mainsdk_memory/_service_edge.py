"""The edge of the HTTP service: problem details, the body cap, the bearer check, access logs.

:class:`Edge` is the outermost ASGI layer of ``memory serve``. For each HTTP request it

1. gives the request an id (a well-formed ``X-Request-Id`` it was sent, else a new one) and
   answers with it;
2. refuses a body larger than the cap (``413``), before reading it when ``Content-Length``
   says so, else as soon as it grows past it;
3. verifies the bearer token of every ``/v1/`` route (:meth:`TokenVerifier.verify_principal`)
   before the framework reads anything of the request: a refused token is a ``401`` with
   ``WWW-Authenticate: Bearer`` and reaches nothing;
4. writes one JSON line to the ``mainsdk_memory.service`` logger: method, route template
   (``/v1/memories/{memory_id}``, never the raw path), status, duration, request id, the
   token's role and a refused token's reason code. Never a query, a body, a key or metadata;
5. answers an unexpected exception with a ``500`` problem and logs its type only (an
   exception's message may hold anything it was given).

:func:`problem_of` turns the SDK's typed errors (each with its ``code``) into RFC 9457
problem details (``application/problem+json``); :func:`status_of` is the mapping.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread

from mainsdk_memory import _errors
from mainsdk_memory._errors import (
    AgentDisabledError,
    AuditError,
    ConfigurationError,
    InvalidInputError,
    KeyStoreError,
    LimitExceededError,
    MemoryCapabilityError,
    MemoryConflictError,
    MemoryInjectionError,
    MemoryNotFound,
    MemorySDKError,
    ModelError,
    NoTenantError,
    ReceiptError,
    ScopeError,
    SealError,
    StoreError,
    TokenError,
)
from mainsdk_memory._tokens import Principal, TokenVerifier

__all__ = [
    "PRINCIPAL",
    "REQUEST_ID",
    "Edge",
    "problem_body",
    "problem_of",
    "status_of",
]

logger = logging.getLogger("mainsdk_memory.service")

PRINCIPAL = "mainsdk_memory.principal"
"""The ASGI scope key holding the request's verified :class:`Principal`."""
REQUEST_ID = "mainsdk_memory.request_id"
"""The ASGI scope key holding the request id."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
_PROTECTED = "/v1/"

# Most specific first: the error classes derive from one another.
_STATUS: tuple[tuple[type[MemorySDKError], int, str], ...] = (
    (TokenError, 401, "Unauthorized"),
    (MemoryNotFound, 404, "Not Found"),
    (MemoryInjectionError, 422, "Refused by the injection check"),
    (LimitExceededError, 429, "Limit reached"),
    (AgentDisabledError, 403, "Agent disabled"),
    (ScopeError, 403, "Forbidden"),
    (NoTenantError, 403, "No tenant"),
    (MemoryConflictError, 409, "Conflict"),
    (ReceiptError, 422, "Receipt refused"),
    (InvalidInputError, 400, "Bad Request"),
    (MemoryCapabilityError, 501, "Not supported by this store"),
    (ModelError, 502, "Model failed"),
    (StoreError, 503, "Store unavailable"),
    (SealError, 500, "Store and key store disagree"),
    (KeyStoreError, 500, "Key store unusable"),
    (AuditError, 500, "Audit failed"),
    (ConfigurationError, 500, "Misconfigured"),
)


def status_of(error: MemorySDKError) -> tuple[int, str]:
    """The HTTP status and title for ``error``."""
    for kind, status, title in _STATUS:
        if isinstance(error, kind):
            return status, title
    return 500, "Internal Server Error"


def problem_body(
    status: int,
    title: str,
    *,
    code: str | None = None,
    detail: str | None = None,
    request_id: str | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An RFC 9457 problem-details object; ``type`` links the error code's documentation."""
    body: dict[str, Any] = {
        "type": "about:blank" if code is None else f"{_errors.DOCS}#{code.lower()}",
        "title": title,
        "status": status,
    }
    if code is not None:
        body["code"] = code
    if detail is not None:
        body["detail"] = detail
    if request_id is not None:
        body["request_id"] = request_id
    if errors is not None:
        body["errors"] = errors
    return body


def problem_of(error: MemorySDKError, request_id: str | None) -> tuple[int, dict[str, Any]]:
    """The status and problem details of a typed error (its message holds no content)."""
    status, title = status_of(error)
    return status, problem_body(
        status, title, code=error.code, detail=error.message, request_id=request_id
    )


def _challenge(presented: bool) -> bytes:
    challenge = 'Bearer realm="mainsdk-memory"'
    if presented:  # RFC 6750 §3.1: no error code when no credentials were sent
        challenge += ', error="invalid_token"'
    return challenge.encode()


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


async def send_problem(
    send: Send, status: int, body: dict[str, Any],
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """Answer with a problem-details body."""
    payload = json.dumps(body).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(payload)).encode()),
            *headers,
        ],
    })
    await send({"type": "http.response.body", "body": payload})


class _TooLarge(Exception):
    """The body grew past the cap."""


class Edge:
    """The outermost layer of the service (see the module's docstring)."""

    def __init__(
        self, app: ASGIApp, *, verifier: TokenVerifier, max_body_bytes: int
    ) -> None:
        self._app = app
        self._verifier = verifier
        self._max_body = max_body_bytes
        # A JWKS URL is fetched with blocking I/O: then verify off the event loop.
        self._in_thread = verifier.settings.jwks_url is not None

    @property
    def app(self) -> ASGIApp:
        """The app inside (the FastAPI app of :func:`mainsdk_memory.service.build_app`)."""
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        sent = _header(scope, b"x-request-id")
        given = None if sent is None else sent.decode("latin-1")
        request_id = given if given and _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        scope[REQUEST_ID] = request_id
        started = time.perf_counter()
        line: dict[str, Any] = {"event": "request", "request_id": request_id,
                                "method": scope.get("method")}
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_started = True
                message = dict(message)
                message["headers"] = [
                    *message.get("headers", ()), (b"x-request-id", request_id.encode())
                ]
            await send(message)

        try:
            await self._serve(scope, receive, send_with_id, request_id, line)
        except Exception as exc:
            line["error"] = type(exc).__name__
            if not response_started:
                await send_problem(
                    send_with_id, 500,
                    problem_body(500, "Internal Server Error", request_id=request_id),
                )
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None)
            line["route"] = template if isinstance(template, str) else None
            line["status"] = status
            line["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            logger.info(json.dumps(line, sort_keys=True))

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, request_id: str,
        line: dict[str, Any],
    ) -> None:
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._max_body):
            await self._too_large(send, request_id)
            return
        path = scope.get("path", "")
        if isinstance(path, str) and path.startswith(_PROTECTED):
            principal = await self._principal(scope, send, request_id, line)
            if principal is None:
                return
            scope[PRINCIPAL] = principal
            line["role"] = principal.role
        try:
            body = await self._body(receive)
        except _TooLarge:
            await self._too_large(send, request_id)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _principal(
        self, scope: Scope, send: Send, request_id: str, line: dict[str, Any]
    ) -> Principal | None:
        authorization = _header(scope, b"authorization")
        token: str | None = None
        if authorization is not None:
            scheme, _, value = authorization.decode("latin-1").partition(" ")
            token = value.strip() if scheme.lower() == "bearer" else ""
        try:
            if self._in_thread:
                return await anyio.to_thread.run_sync(self._verifier.verify_principal, token)
            return self._verifier.verify_principal(token)
        except TokenError as exc:
            line["refused"] = exc.reason
            status, body = problem_of(exc, request_id)
            await send_problem(
                send, status, body,
                ((b"www-authenticate", _challenge(authorization is not None)),),
            )
            return None

    async def _body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return b""
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self._max_body:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _too_large(self, send: Send, request_id: str) -> None:
        error = InvalidInputError(
            f"The request body is larger than {self._max_body} bytes, so it was not read; "
            "nothing was changed. Send less at once (the operator sets --max-body-bytes)."
        )
        await send_problem(
            send, 413,
            problem_body(413, "Content Too Large", code=error.code, detail=error.message,
                         request_id=request_id),
        )
