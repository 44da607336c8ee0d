"""The HTTP service's FastAPI app: routes for agents, persons and admins over one Memory.

Built by :func:`mainsdk_memory.service.build_app`. Each route names the roles it serves
(:func:`_role`); the request's :class:`~mainsdk_memory._tokens.Principal` was verified by
:class:`~mainsdk_memory._service_edge.Edge` before the framework read the request. Every
memory call runs in a worker thread of a bounded executor the app owns, inside
``tenant.use(<the token's tenant>)`` entered *in that thread* (:meth:`_Calls.run`): the
tenant is never carried through a context variable across a FastAPI dependency (ADR 0090,
ADR 0093), and never read from the request.

The handle is the token's: an ``agent`` token gets ``memory.acting_for(person, agent=...,
session=...)``, a ``person`` token ``memory.person(person, session=...)``, an ``admin``
token no handle at all (the app's calls: grants, kill switch, limits).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from mainsdk_memory import tenant as _tenant
from mainsdk_memory._errors import MemorySDKError, ScopeError, TokenError
from mainsdk_memory._importing import ImportReport
from mainsdk_memory._importing import import_export as _import_export
from mainsdk_memory._memory import Memory, services_of
from mainsdk_memory._records import (
    AgentLimits,
    ForgetRequest,
    Kind,
    MemoryRecord,
    Page,
)
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory._service_bodies import (
    AgentStatus,
    ByKeyBody,
    ContextBody,
    ContextResult,
    GrantBody,
    Health,
    HistoryResult,
    ImportBody,
    LinksResult,
    PendingResult,
    Problem,
    RecallBody,
    RecallResult,
    ReceiptResult,
    RememberBody,
    ReviseBody,
    receipt_result,
)
from mainsdk_memory._service_edge import (
    PRINCIPAL,
    REQUEST_ID,
    Edge,
    problem_body,
    problem_of,
)
from mainsdk_memory._tokens import Principal, Role, TokenVerifier

__all__ = ["build"]

_R = TypeVar("_R")

_PROBLEM = {"model": Problem, "content": {"application/problem+json": {}}}
_PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {**_PROBLEM, "description": what}
    for status, what in (
        (400, "Bad input; nothing was changed"),
        (401, "Missing or refused bearer token"),
        (403, "The token's role or scope does not allow this"),
        (404, "No such memory in this scope"),
        (413, "The body is larger than the cap"),
        (422, "The body failed validation, or the injection check refused the text"),
        (429, "The agent reached a limit"),
    )
}

_bearer = HTTPBearer(auto_error=False, description="A JWT naming tenant, sub, agent and role")


def _role(*roles: Role) -> Callable[..., Any]:
    """A dependency: the request's verified principal, if its role is one of ``roles``."""
    allowed = ", ".join(roles)

    async def principal(
        request: Request, _: Annotated[Any, Depends(_bearer)] = None
    ) -> Principal:
        found = request.scope.get(PRINCIPAL)
        if not isinstance(found, Principal):  # the edge lets none through
            raise TokenError("This request carries no verified bearer token.", reason="missing")
        if found.role not in roles:
            raise ScopeError(
                f"This route is for {allowed} tokens, and this token's role is "
                f"{found.role}; nothing was changed. Ask the issuer for a token of the role "
                "the route needs."
            )
        return found

    return principal


Reader = Annotated[Principal, Depends(_role("agent", "person"))]
Agent = Annotated[Principal, Depends(_role("agent"))]
Person = Annotated[Principal, Depends(_role("person"))]
Admin = Annotated[Principal, Depends(_role("admin"))]


def _in_tenant(tenant_id: str, job: Callable[[], _R]) -> _R:
    with _tenant.use(tenant_id):
        return job()


class _Calls:
    """The memory calls of one app, each in a worker thread inside the token's tenant."""

    def __init__(self, memory: Memory, max_workers: int) -> None:
        self.memory = memory
        self.executor = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="mainsdk-memory-http"
        )

    async def run(self, tenant_id: str, job: Callable[[], _R]) -> _R:
        """``job()`` in a worker thread, inside ``tenant.use(tenant_id)`` entered there."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(_in_tenant, tenant_id, job)
        )

    def handle(self, who: Principal) -> ScopedMemory | PersonMemory:
        """The token's handle (call it inside the token's tenant, in the worker)."""
        assert who.person is not None  # noqa: S101 - agent and person tokens name one
        if who.role == "agent":
            assert who.agent is not None  # noqa: S101 - an agent token names one
            return self.memory.acting_for(who.person, agent=who.agent, session=who.session)
        return self.memory.person(who.person, session=who.session)

    async def with_handle(
        self, who: Principal, job: Callable[[ScopedMemory | PersonMemory], _R]
    ) -> _R:
        return await self.run(who.tenant, lambda: job(self.handle(who)))

    async def as_person(self, who: Principal, job: Callable[[PersonMemory], _R]) -> _R:
        assert who.person is not None  # noqa: S101 - a person token names one
        person = who.person
        return await self.run(who.tenant, lambda: job(self.memory.person(person)))

    async def as_app(self, who: Principal, job: Callable[[Memory], _R]) -> _R:
        return await self.run(who.tenant, lambda: job(self.memory))


def _fields_of(*models: type[BaseModel]) -> frozenset[str]:
    names: set[str] = set()
    for model in models:
        names.update(model.model_fields)
    return frozenset(names)


_KNOWN_FIELDS = _fields_of(
    RememberBody, ReviseBody, ByKeyBody, RecallBody, ContextBody, GrantBody, ImportBody,
    AgentLimits,
)


def _where(loc: tuple[Any, ...]) -> list[str | int]:
    """A validation error's location, cut before anything the caller named (a metadata key)."""
    shown: list[str | int] = []
    for at, part in enumerate(loc[:3]):
        where = at == 0 and part in ("body", "query", "path", "header")
        known = isinstance(part, str) and part in _KNOWN_FIELDS
        if not (where or known or isinstance(part, int)):
            break
        shown.append(part)
    return shown


def _install_errors(app: FastAPI) -> None:
    def request_id(request: Request) -> str | None:
        found = request.scope.get(REQUEST_ID)
        return found if isinstance(found, str) else None

    async def sdk_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, MemorySDKError)  # noqa: S101 - registered for it
        status, body = problem_of(exc, request_id(request))
        headers = {"WWW-Authenticate": 'Bearer realm="mainsdk-memory", error="invalid_token"'}
        return JSONResponse(
            body, status_code=status, media_type="application/problem+json",
            headers=headers if status == 401 else None,
        )

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)  # noqa: S101 - registered for it
        errors = [
            {"loc": _where(tuple(error.get("loc", ()))), "type": str(error.get("type", ""))}
            for error in exc.errors()
        ]
        body = problem_body(
            422, "Unprocessable Content", code="MAIN-MEM-E010",
            detail="The request does not match the route's schema (see /openapi.json); "
            "nothing was changed.",
            request_id=request_id(request), errors=errors,
        )
        return JSONResponse(body, status_code=422, media_type="application/problem+json")

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)  # noqa: S101 - registered for it
        title = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, "Error")
        body = problem_body(exc.status_code, title, request_id=request_id(request))
        return JSONResponse(
            body, status_code=exc.status_code, media_type="application/problem+json",
            headers=getattr(exc, "headers", None),
        )

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        body = problem_body(500, "Internal Server Error", request_id=request_id(request))
        return JSONResponse(body, status_code=500, media_type="application/problem+json")

    app.add_exception_handler(MemorySDKError, sdk_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


def build(
    memory: Memory, verifier: TokenVerifier, *, max_workers: int, max_body_bytes: int,
    title: str, version: str,
) -> Edge:
    """The service: the FastAPI app inside its :class:`Edge` (the ASGI app to serve)."""
    calls = _Calls(memory, max_workers)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(calls.executor.shutdown, True)

    app = FastAPI(
        title=title,
        version=version,
        description="Privacy-first memory for app agents, over HTTP. Every /v1 route needs "
        "a bearer token (a JWT) naming the tenant, the role and, for agents and persons, "
        "the person; errors are RFC 9457 problem details without memory content.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        responses=_PROBLEMS,
    )
    _install_errors(app)
    _routes(app, calls)
    return Edge(app, verifier=verifier, max_body_bytes=max_body_bytes)


def _routes(app: FastAPI, calls: _Calls) -> None:
    # -- health ---------------------------------------------------------------------------

    @app.get("/healthz", tags=["health"], response_model=Health)
    async def healthz() -> Health:
        """The process answers. No token, no content."""
        return Health()

    # -- memories: agent and person tokens -------------------------------------------------

    @app.post("/v1/memories", status_code=201, tags=["memories"], response_model=MemoryRecord)
    async def remember(body: RememberBody, who: Reader) -> MemoryRecord:
        """Remember a text (``handle.remember``): formation decides how it joins."""
        return await calls.with_handle(who, lambda handle: handle.remember(
            body.text, kind=body.kind.value, about=body.about, source=body.source,
            valid_from=body.valid_from, labels=body.labels, pinned=body.pinned,
            session_only=body.session_only, language=body.language, formation=body.formation,
            derived_from=body.derived_from, key=body.key, metadata=body.metadata,
        ))

    @app.get("/v1/memories", tags=["memories"], response_model=Page)
    async def list_memories(
        who: Reader,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        cursor: str | None = None,
        kind: Annotated[list[Kind] | None, Query()] = None,
    ) -> Page:
        """A page of current memories, newest first (``handle.list``)."""
        kinds = None if kind is None else [one.value for one in kind]
        return await calls.with_handle(
            who, lambda handle: handle.list(kinds=kinds, limit=limit, cursor=cursor)
        )

    @app.post("/v1/memories/by-key", tags=["memories"], response_model=MemoryRecord)
    async def get_by_key(body: ByKeyBody, who: Reader) -> MemoryRecord:
        """The current memory with this caller key (``handle.get(key=...)``)."""
        return await calls.with_handle(
            who, lambda handle: handle.get(key=body.key, about=body.about)
        )

    @app.get("/v1/memories/{memory_id}", tags=["memories"], response_model=MemoryRecord)
    async def get_memory(memory_id: str, who: Reader) -> MemoryRecord:
        """The memory's current version (``handle.get``)."""
        return await calls.with_handle(who, lambda handle: handle.get(memory_id))

    @app.get(
        "/v1/memories/{memory_id}/history", tags=["memories"], response_model=HistoryResult
    )
    async def history(memory_id: str, who: Reader) -> HistoryResult:
        """Every version the caller may see, oldest first (``handle.history``)."""
        versions = await calls.with_handle(who, lambda handle: handle.history(memory_id))
        return HistoryResult(versions=versions)

    @app.post(
        "/v1/memories/{memory_id}/versions", status_code=201, tags=["memories"],
        response_model=MemoryRecord,
    )
    async def revise(memory_id: str, body: ReviseBody, who: Reader) -> MemoryRecord:
        """Write the memory's next version (``handle.revise``); 409 if another won."""
        kind = None if body.kind is None else body.kind.value
        return await calls.with_handle(who, lambda handle: handle.revise(
            memory_id, body.text, kind=kind, source=body.source, valid_from=body.valid_from,
            labels=body.labels, language=body.language,
        ))

    @app.get("/v1/memories/{memory_id}/links", tags=["memories"], response_model=LinksResult)
    async def links(memory_id: str, who: Reader) -> LinksResult:
        """The memory's relations the caller may see (``handle.links``)."""
        found = await calls.with_handle(who, lambda handle: handle.links(memory_id))
        return LinksResult(links=found)

    @app.post("/v1/recall", tags=["recall"], response_model=RecallResult)
    async def recall(body: RecallBody, who: Reader) -> RecallResult:
        """The memories that best match the query, best first (``handle.recall``)."""
        kinds = None if body.kinds is None else [one.value for one in body.kinds]
        hits = await calls.with_handle(who, lambda handle: handle.recall(
            body.query, top_k=body.top_k, kinds=kinds, as_of=body.as_of, mode=body.mode,
            ranking=body.ranking, language=body.language, entity=body.entity,
            where=body.where,
        ))
        return RecallResult(hits=hits)

    @app.post("/v1/context", tags=["recall"], response_model=ContextResult)
    async def context(body: ContextBody, who: Reader) -> ContextResult:
        """One escaped ``<memory-data>`` block for a prompt (``handle.context``)."""
        block = await calls.with_handle(who, lambda handle: handle.context(
            body.query, top_k=body.top_k, max_chars=body.max_chars, language=body.language,
            where=body.where,
        ))
        return ContextResult(context=block)

    @app.post(
        "/v1/memories/{memory_id}/forget", status_code=202, tags=["memories"],
        response_model=ForgetRequest,
    )
    async def request_forget(memory_id: str, who: Agent) -> ForgetRequest:
        """The agent asks to forget a memory; the person approves or rejects it."""

        def ask(handle: ScopedMemory | PersonMemory) -> ForgetRequest:
            assert isinstance(handle, ScopedMemory)  # noqa: S101 - an agent token's
            return handle.forget(memory_id)

        return await calls.with_handle(who, ask)

    # -- the person ---------------------------------------------------------------------

    @app.post(
        "/v1/person/memories/{memory_id}/confirm", tags=["person"], response_model=MemoryRecord
    )
    async def confirm(memory_id: str, who: Person) -> MemoryRecord:
        """The person confirms a memory: it leaves quarantine (``person.confirm``)."""
        return await calls.as_person(who, lambda person: person.confirm(memory_id))

    @app.get("/v1/person/forget-requests", tags=["person"], response_model=PendingResult)
    async def pending(who: Person) -> PendingResult:
        """Agents' forget requests waiting for the person (``person.pending``)."""
        found = await calls.as_person(who, lambda person: person.pending())
        return PendingResult(requests=found)

    @app.post(
        "/v1/person/forget-requests/{request_id}/approve", tags=["person"],
        response_model=ReceiptResult,
    )
    async def approve(request_id: str, who: Person) -> ReceiptResult:
        """Approve a forget request: the memory is forgotten, with a signed receipt."""
        receipt = await calls.as_person(who, lambda person: person.approve(request_id))
        return receipt_result(receipt)

    @app.post(
        "/v1/person/forget-requests/{request_id}/reject", tags=["person"],
        response_model=ForgetRequest,
    )
    async def reject(request_id: str, who: Person) -> ForgetRequest:
        """Reject a forget request: the memory stays."""
        return await calls.as_person(who, lambda person: person.reject(request_id))

    @app.get("/v1/person/export", tags=["person"], response_model=dict[str, Any])
    async def export(who: Person) -> dict[str, Any]:
        """Everything held about the person, every version (``privacy.export``)."""
        assert who.person is not None  # noqa: S101 - a person token names one
        person = who.person
        return await calls.as_app(who, lambda memory: memory.privacy.export(person))

    @app.post("/v1/person/import", tags=["person"], response_model=ImportReport)
    async def import_export(body: ImportBody, who: Person) -> ImportReport:
        """Import a signed export of this person, made in this tenant by another app of this
        key store (``privacy.import_export``: only this key store's exports verify here; one
        signed by another store is imported with ``memory import --public-key``); the report
        (ids and counts). Audited as the person's call."""
        person = who.person
        if body.document.get("person") != person:
            raise ScopeError(
                "This export is about another person than the token's, so nothing was "
                "imported. Import an export of the token's person."
            )
        return await calls.as_app(who, lambda memory: _import_export(
            services_of(memory), body.document, person=person, actor="person"
        ))

    @app.post("/v1/person/erase", tags=["person"], response_model=ReceiptResult)
    async def erase(who: Person) -> ReceiptResult:
        """Erase everything about the person and destroy their keys, with one receipt."""
        assert who.person is not None  # noqa: S101 - a person token names one
        person = who.person
        receipt = await calls.as_app(who, lambda memory: memory.privacy.erase(person))
        return receipt_result(receipt)

    # -- the tenant's administrator ---------------------------------------------------------

    @app.get("/v1/admin/agents/{agent}", tags=["admin"], response_model=AgentStatus)
    async def agent_status(agent: str, who: Admin) -> AgentStatus:
        """What the agent may read and whether its kill switch is on."""

        def status(memory: Memory) -> AgentStatus:
            return AgentStatus(
                agent=agent, read=memory.read_policy(agent), killed=memory.is_killed(agent)
            )

        return await calls.as_app(who, status)

    @app.put("/v1/admin/agents/{agent}/grant", status_code=204, tags=["admin"])
    async def grant(agent: str, body: GrantBody, who: Admin) -> None:
        """Let the agent read its own memories or every agent's (``memory.grant``)."""
        await calls.as_app(who, lambda memory: memory.grant(agent, read=body.read))

    @app.delete("/v1/admin/agents/{agent}/grant", status_code=204, tags=["admin"])
    async def revoke(agent: str, who: Admin) -> None:
        """Remove the agent's grant: it reads only its own again (``memory.revoke``)."""
        await calls.as_app(who, lambda memory: memory.revoke(agent))

    @app.post("/v1/admin/agents/{agent}/kill", status_code=204, tags=["admin"])
    async def kill(agent: str, who: Admin) -> None:
        """Turn the agent's kill switch on (``memory.kill``)."""
        await calls.as_app(who, lambda memory: memory.kill(agent))

    @app.post("/v1/admin/agents/{agent}/revive", status_code=204, tags=["admin"])
    async def revive(agent: str, who: Admin) -> None:
        """Turn the agent's kill switch off (``memory.revive``)."""
        await calls.as_app(who, lambda memory: memory.revive(agent))

    @app.put("/v1/admin/agents/{agent}/limits", status_code=204, tags=["admin"])
    async def set_limits(agent: str, body: AgentLimits, who: Admin) -> None:
        """Store the agent's limits (``memory.set_limits``)."""
        await calls.as_app(who, lambda memory: memory.set_limits(agent, body))

    @app.delete("/v1/admin/agents/{agent}/limits", status_code=204, tags=["admin"])
    async def reset_limits(agent: str, who: Admin) -> None:
        """Back to the service's default limits (``memory.set_limits(agent, None)``)."""
        await calls.as_app(who, lambda memory: memory.set_limits(agent, None))
