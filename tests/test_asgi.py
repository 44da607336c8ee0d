"""ASGI: under a real uvicorn on loopback, each request runs in the tenant the app verified for
it (``TenantMiddleware``, or an async FastAPI dependency with ``yield``), two tenants' requests
at once never see each other's memories, and a request without a tenant gets a clear refusal."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx2
import pytest
import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mainsdk_memory import InvalidInputError, Memory, MemorySDKError, NoTenantError, tenant
from mainsdk_memory._async import AsyncMemory, AsyncScopedMemory
from mainsdk_memory.integrations.asgi import Scope, TenantMiddleware

SECRET = b"the app's own signing key"


def _signed(tenant_id: str) -> dict[str, str]:
    """The headers an upstream gateway the app trusts adds: the tenant and its signature."""
    signature = hmac.new(SECRET, tenant_id.encode(), hashlib.sha256).hexdigest()
    return {"x-tenant": tenant_id, "x-tenant-signature": signature}


def verified_tenant(scope: Scope) -> str | None:
    """The tenant of a request whose signature verifies, else ``None``."""
    headers = dict(scope["headers"])
    claimed, signature = headers.get(b"x-tenant"), headers.get(b"x-tenant-signature")
    if claimed is None or signature is None:
        return None
    expected = hmac.new(SECRET, claimed, hashlib.sha256).hexdigest().encode()
    return claimed.decode("latin-1") if hmac.compare_digest(expected, signature) else None


class Note(BaseModel):
    text: str


def _refusal(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, MemorySDKError)
    return JSONResponse({"code": error.code, "detail": str(error)}, status_code=403)


async def handle(request: Request, person: str) -> AsyncScopedMemory:
    """The support bot's handle for the person in the path, in the request's tenant."""
    amemory: AsyncMemory = request.app.state.amemory
    return amemory.acting_for(person, agent="support-bot")


Handle = Annotated[AsyncScopedMemory, Depends(handle)]


async def in_tenant(request: Request) -> AsyncIterator[str]:
    """The pattern that works without the middleware: an async dependency with ``yield``."""
    tenant_id = verified_tenant(request.scope)
    if tenant_id is None:
        raise HTTPException(403, "no tenant")
    with tenant.use(tenant_id):
        yield tenant_id


def in_tenant_sync(request: Request) -> Iterator[str]:
    """The one that cannot: FastAPI enters it in a worker thread, in a copy of the request's
    context that is dropped when the thread returns, so the endpoint never sees the block."""
    with tenant.use(verified_tenant(request.scope) or "nobody"):
        yield tenant.current()


InTenant = Annotated[str, Depends(in_tenant)]
InTenantSync = Annotated[str, Depends(in_tenant_sync)]


def _middleware_app(amemory: AsyncMemory) -> FastAPI:
    app = FastAPI()
    app.state.amemory = amemory
    app.add_middleware(TenantMiddleware, resolve=verified_tenant)

    @app.post("/people/{person}/memories")
    async def remember(note: Note, ada: Handle) -> dict[str, str]:
        record = await ada.remember(note.text, formation=False)
        return {"id": record.id, "tenant": record.scope.tenant}

    @app.get("/people/{person}/recall")
    async def recall(q: str, ada: Handle) -> list[list[str]]:
        return [[hit.record.scope.tenant, hit.record.text] for hit in await ada.recall(q, top_k=50)]

    @app.get("/people/{person}/memories")
    def listing(person: str) -> list[list[str]]:
        # A sync endpoint runs in FastAPI's thread pool, in a copy of the request's context:
        # the middleware's tenant is there too, so the sync API works as it is.
        page = amemory.memory.acting_for(person, agent="support-bot").list(limit=50)
        return [[record.scope.tenant, record.text] for record in page.items]

    return app


@contextlib.contextmanager
def _serving(app: Any) -> Iterator[str]:
    """``app`` under a real uvicorn on a free loopback port, stopped on exit."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()
        assert not thread.is_alive()


def _run(coroutine: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coroutine, 120)

    return asyncio.run(bounded())


def test_two_tenants_at_once_each_get_only_their_own_memories(memory: Memory) -> None:
    amemory = AsyncMemory(memory)
    tenants = ("acme", "globex")

    async def main(base: str) -> None:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:

            async def write(tenant_id: str, i: int) -> None:
                # The same person id in both tenants, the same words: only the tenant differs.
                response = await client.post(
                    "/people/ada/memories",
                    json={"text": f"{tenant_id} note {i}: Ada's account is active."},
                    headers=_signed(tenant_id),
                )
                assert response.status_code == 200, response.text
                assert response.json()["tenant"] == tenant_id

            await asyncio.gather(*(write(tenants[i % 2], i) for i in range(12)))

            async def read(tenant_id: str, path: str) -> tuple[str, list[list[str]]]:
                response = await client.get(path, headers=_signed(tenant_id))
                assert response.status_code == 200, response.text
                return tenant_id, response.json()

            reads = [
                read(tenants[i % 2], path)
                for i in range(8)
                for path in ("/people/ada/recall?q=Ada's account", "/people/ada/memories")
            ]
            for tenant_id, rows in await asyncio.gather(*reads):
                expected = {f"{tenant_id} note {i}: Ada's account is active."
                            for i in range(12) if tenants[i % 2] == tenant_id}
                assert {text for _, text in rows} == expected
                assert {row_tenant for row_tenant, _ in rows} == {tenant_id}

            # No tenant, a forged one (globex's name, acme's signature), and one the gateway
            # signed that is not a tenant id: refused with a problem, never run, never echoed.
            forged = {**_signed("acme"), "x-tenant": "globex"}
            for headers, status, code in (
                ({}, 403, NoTenantError.code),
                (forged, 403, NoTenantError.code),
                (_signed("no such tenant!"), 400, InvalidInputError.code),
            ):
                response = await client.get("/people/ada/memories", headers=headers)
                assert response.status_code == status
                assert response.headers["content-type"] == "application/problem+json"
                problem = response.json()
                assert (problem["status"], problem["code"]) == (status, code)
                assert "globex" not in response.text and "such tenant" not in response.text
            # ...and the server is still serving.
            assert (await read("acme", "/people/ada/memories"))[1]

    with _serving(_middleware_app(amemory)) as base:
        _run(main(base))
    _run(amemory.aclose())


def test_an_async_yield_dependency_sets_the_tenant_and_a_sync_one_cannot(
    tmp_path: Path, keys_path: Path
) -> None:
    amemory = AsyncMemory(Memory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="app"))
    app = FastAPI()
    app.add_exception_handler(NoTenantError, _refusal)

    @app.post("/async/{person}")
    async def remember(person: str, note: Note, _: InTenant) -> list[str]:
        ada = amemory.acting_for(person, agent="bot")
        await ada.remember(note.text, formation=False)
        return [record.text for record in (await ada.list()).items]

    @app.get("/sync/{person}")
    async def listing(person: str, _: InTenantSync) -> list[str]:
        ada = amemory.acting_for(person, agent="bot")
        return [record.text for record in (await ada.list()).items]

    async def main(base: str) -> None:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            answers = await asyncio.gather(*(
                client.post("/async/ada", json={"text": f"{t}: Ada pays yearly."},
                            headers=_signed(t))
                for t in ("acme", "globex", "acme", "globex")
            ))
            for answer, tenant_id in zip(answers, ("acme", "globex") * 2, strict=True):
                assert answer.status_code == 200, answer.text
                assert {text.split(":")[0] for text in answer.json()} == {tenant_id}
            refused = await client.get("/sync/ada", headers=_signed("acme"))
            assert refused.status_code == 403
            assert refused.json()["code"] == NoTenantError.code

    with _serving(app) as base:
        _run(main(base))
    _run(amemory.aclose())


def _stand_in_auth(app: Any) -> Any:
    """The app's own authentication, as the docs assume it: it puts what it verified (here, a
    signed header) in the scope's state, where the documented ``resolve`` reads it."""

    async def authenticated(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            tenant_id = verified_tenant(scope)
            state = scope.setdefault("state", {})
            if tenant_id is not None:
                state.update(tenant=tenant_id, person="ada")
        await app(scope, receive, send)

    return authenticated


def test_the_documented_fastapi_app_runs_each_request_in_its_tenant(
    tmp_path: Path, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (Path(__file__).parents[1] / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = page.split("## asyncio and FastAPI", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    assert len(code.strip().splitlines()) < 20  # the promise: under 20 lines
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_KEYS", str(keys_path))
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/integrations.md", "exec"), namespace)  # noqa: S102 - our docs
    amemory: AsyncMemory = namespace["memory"]
    for tenant_id in ("acme", "globex"):
        with tenant.use(tenant_id):
            amemory.memory.acting_for("ada", agent="support-bot").remember(
                f"Ada's {tenant_id} contract renews in May."
            )

    async def main(base: str) -> None:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            answers = await asyncio.gather(*(
                client.get("/recall", params={"q": "contract"}, headers=_signed(t))
                for t in ("acme", "globex") * 3
            ))
            for answer, tenant_id in zip(answers, ("acme", "globex") * 3, strict=True):
                assert answer.json() == [f"Ada's {tenant_id} contract renews in May."]
            refused = await client.get("/recall", params={"q": "contract"})
            assert refused.status_code == 403
            assert refused.json()["code"] == NoTenantError.code

    with _serving(_stand_in_auth(namespace["app"])) as base:
        _run(main(base))
    _run(amemory.aclose())


async def _call(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    return sent


def test_the_middleware_passes_lifespan_through_and_the_tenant_ends_with_the_request() -> None:
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"] if scope["type"] == "lifespan" else tenant.current())

    async def resolve(scope: Scope) -> str | None:  # a coroutine function works too
        return "acme" if scope["path"] == "/in" else None

    app = TenantMiddleware(inner, resolve=resolve)

    async def main() -> list[dict[str, Any]]:
        await _call(app, {"type": "lifespan"})
        await _call(app, {"type": "http", "path": "/in", "headers": []})
        with pytest.raises(NoTenantError):
            tenant.current()  # the request's block ended with it
        return await _call(app, {"type": "websocket", "path": "/out", "headers": []})

    refused = asyncio.run(main())
    assert seen == ["lifespan", "acme"]
    assert refused == [{"type": "websocket.close", "code": 1008}]
    with pytest.raises(InvalidInputError):
        TenantMiddleware(inner, resolve="x-tenant")  # type: ignore[arg-type]
