"""ASGI: ``TenantMiddleware`` runs each request in the tenant the app's own check found for it.

Any ASGI app (FastAPI, Starlette, Quart, ...) and server (uvicorn, hypercorn, ...); nothing to
install, as it imports no framework. The app says how to find a request's tenant from what it
trusts, never from what a client merely claims: an auth middleware's result in the scope
(``scope["user"]``, ``scope["state"]``), a verified token or signed header::

    app.add_middleware(TenantMiddleware, resolve=lambda scope: scope["state"].get("tenant"))

The request then runs inside ``tenant.use(<that tenant>)``: the endpoint, its dependencies,
the tasks it starts and the threads the framework runs sync code in (they copy the context)
all see it, and it ends with the request. A request ``resolve`` finds no tenant for
(``None``) gets a ``403`` problem-details response (code ``MAIN-MEM-E001``), a tenant id that
is not one a ``400`` (``MAIN-MEM-E010``): never a crash, and never the id it sent. Lifespan
events pass through untouched. Why not a sync FastAPI dependency with ``yield``: ADR 0090.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mainsdk_memory import tenant
from mainsdk_memory._errors import InvalidInputError, MemorySDKError, NoTenantError

__all__ = ["ASGIApp", "Resolve", "Scope", "TenantMiddleware"]

Scope = MutableMapping[str, Any]
"""An ASGI connection scope."""
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
ASGIApp = Callable[[Scope, _Receive, _Send], Awaitable[None]]
"""An ASGI application."""
Resolve = Callable[[Scope], str | None] | Callable[[Scope], Awaitable[str | None]]
"""How the app finds a request's tenant: the tenant id, or ``None`` when the request has none."""

_NO_TENANT = (
    "This request carries no tenant the app trusts, so it was not run. Send it with the "
    "credentials the app checks for its tenant."
)
_BAD_TENANT = (
    "The tenant this request was found to be in is not a tenant id, so it was not run. A "
    "tenant id is 1 to 128 characters of letters, digits, '.', '_' or '-'."
)
# RFC 6455 1008, "policy violation": the close code of a refused WebSocket handshake.
_WS_POLICY_VIOLATION = 1008


class TenantMiddleware:
    """Run each HTTP and WebSocket connection inside ``tenant.use(resolve(scope))``.

    ``resolve`` (a function or a coroutine function) gets the ASGI scope and returns the
    tenant id, or ``None`` to refuse the request. Put it inside (after) the middleware that
    authenticates, so the scope holds that middleware's result when ``resolve`` reads it
    (``app.add_middleware`` adds outermost last). An error ``resolve`` raises goes on to the
    server, as any app error does.
    """

    def __init__(self, app: ASGIApp, *, resolve: Resolve) -> None:
        """Wrap ``app``; ``resolve(scope)`` finds each request's tenant."""
        if not callable(resolve):
            raise InvalidInputError(
                "resolve is a function of the ASGI scope: "
                "TenantMiddleware(app, resolve=lambda scope: ...)."
            )
        self.app = app
        self._resolve = resolve

    async def __call__(self, scope: Scope, receive: _Receive, send: _Send) -> None:
        """Serve one connection: in its tenant, or refused."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan: no request, no tenant
            return
        found = self._resolve(scope)
        tenant_id = await found if inspect.isawaitable(found) else found
        if tenant_id is None:
            await _refuse(scope, send, 403, NoTenantError(_NO_TENANT), "No tenant")
            return
        try:
            block = tenant.use(tenant_id)
        except InvalidInputError:
            await _refuse(scope, send, 400, InvalidInputError(_BAD_TENANT), "Not a tenant id")
            return
        # The block belongs to this coroutine's frame, so everything the request runs sees it
        # (ADR 0028), and it ends here, with the request.
        with block:
            await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: _Send, status: int, error: MemorySDKError,
                  title: str) -> None:
    """A problem-details response (RFC 9457) without content, or a refused WebSocket."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": _WS_POLICY_VIOLATION})
        return
    body = json.dumps(
        {"type": "about:blank", "title": title, "status": status, "code": error.code,
         "detail": str(error)}
    ).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
        ],
    })
    await send({"type": "http.response.body", "body": body})
