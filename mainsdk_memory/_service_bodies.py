"""The JSON bodies of the HTTP service: what each route takes and gives, as pydantic models.

The requests name no tenant, person or agent (the bearer token does) and allow no field they
do not declare (``extra="forbid"``: a body with a ``tenant`` or ``person`` field is refused
with ``422``). The answers are the SDK's own records (:class:`~mainsdk_memory.MemoryRecord`,
:class:`~mainsdk_memory.Hit`, :class:`~mainsdk_memory.Page`, ...) wrapped in an object, so the
OpenAPI document describes them from the same models. Free text, queries, keys and metadata
go in bodies only, never in a URL (proxies and access logs keep URLs).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mainsdk_memory._recall import Ranking, RecallMode
from mainsdk_memory._records import (
    ForgetRequest,
    Hit,
    Kind,
    Link,
    MemoryRecord,
    Source,
)
from mainsdk_memory.receipts import Receipt

__all__ = [
    "AgentStatus",
    "ByKeyBody",
    "ContextBody",
    "ContextResult",
    "GrantBody",
    "Health",
    "HistoryResult",
    "ImportBody",
    "LinksResult",
    "PendingResult",
    "Problem",
    "ProblemField",
    "RecallBody",
    "RecallResult",
    "ReceiptResult",
    "RememberBody",
    "ReviseBody",
    "receipt_result",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberBody(_Body):
    """``POST /v1/memories``: what ``handle.remember(...)`` takes, but who is calling."""

    text: str
    kind: Kind = Kind.FACT
    about: Literal["tenant"] | None = Field(
        default=None, description="'tenant' for shared memory; default: the token's person"
    )
    source: Source | None = Field(
        default=None, description="who said it; a tool, mcp, web or import source is untrusted"
    )
    valid_from: datetime | None = None
    labels: list[str] | None = None
    pinned: bool = False
    session_only: bool = False
    language: str | None = None
    formation: bool | None = None
    derived_from: list[str] | None = None
    key: str | None = Field(default=None, description="the caller's own id for the memory")
    metadata: dict[str, Any] | None = Field(
        default=None, description="JSON metadata, sealed with the memory; filter with where"
    )


class ReviseBody(_Body):
    """``POST /v1/memories/{id}/versions``: the next version's text and what changes."""

    text: str
    kind: Kind | None = None
    source: Source | None = None
    valid_from: datetime | None = None
    labels: list[str] | None = None
    language: str | None = None


class ByKeyBody(_Body):
    """``POST /v1/memories/by-key``: the caller key (in the body: a key is the app's data)."""

    key: str
    about: Literal["tenant"] | None = None


class RecallBody(_Body):
    """``POST /v1/recall``: the query and how to rank (the query is never in the URL)."""

    query: str
    top_k: int = 5
    kinds: list[Kind] | None = None
    as_of: datetime | None = None
    mode: RecallMode = "auto"
    ranking: Ranking = "signals"
    language: str | None = None
    entity: str | None = None
    where: dict[str, Any] | None = None


class ContextBody(_Body):
    """``POST /v1/context``: the query of the untrusted-data block."""

    query: str
    top_k: int = 5
    max_chars: int | None = None
    language: str | None = None
    where: dict[str, Any] | None = None


class GrantBody(_Body):
    """``PUT /v1/admin/agents/{agent}/grant``: what the agent may read."""

    read: Literal["own", "all"]


class ImportBody(_Body):
    """``POST /v1/person/import``: a ``mainsdk-memory-export/1`` document of this person."""

    document: dict[str, Any]


class RecallResult(BaseModel):
    """The recalled memories, best first."""

    hits: list[Hit]


class ContextResult(BaseModel):
    """One ``<memory-data>`` block: untrusted data for the model, escaped."""

    context: str


class HistoryResult(BaseModel):
    """Every version of the memory the caller may see, oldest first."""

    versions: list[MemoryRecord]


class LinksResult(BaseModel):
    """The memory's relations the caller may see."""

    links: list[Link]


class PendingResult(BaseModel):
    """The person's pending forget requests."""

    requests: list[ForgetRequest]


class ReceiptResult(BaseModel):
    """A signed receipt (a compact JWS; verify it with ``memory-receipt verify``)."""

    receipt: str
    id: str
    op: str
    memory_ids: list[str]


def receipt_result(receipt: Receipt) -> ReceiptResult:
    """The answer for ``receipt``: the token and its ids."""
    return ReceiptResult(
        receipt=receipt.token, id=receipt.id, op=receipt.op, memory_ids=list(receipt.memory_ids)
    )


class AgentStatus(BaseModel):
    """An agent's administration in the token's tenant."""

    agent: str
    read: Literal["own", "all"]
    killed: bool


class Health(BaseModel):
    """``GET /healthz``: the process answers (no token, no content)."""

    status: Literal["ok"] = "ok"


class ProblemField(BaseModel):
    """Where a request failed validation: the location and the kind of error, never the value."""

    loc: list[str | int]
    type: str


class Problem(BaseModel):
    """An RFC 9457 problem-details answer (``application/problem+json``), with no content.

    ``type`` links to the error's entry in the error reference; ``code`` is the SDK's stable
    error code (``MAIN-MEM-E…``); ``detail`` says what to do next and never holds memory
    text, a query, a key or metadata.
    """

    type: str
    title: str
    status: int
    code: str | None = None
    detail: str | None = None
    request_id: str | None = None
    errors: list[ProblemField] | None = None
