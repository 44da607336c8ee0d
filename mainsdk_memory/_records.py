"""The values a memory call returns: records, their source, scope, hits and pages."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mainsdk_memory._text import DEFAULT_LANGUAGE

__all__ = [
    "AgentLimits",
    "Entity",
    "EntityType",
    "ForgetRequest",
    "Formation",
    "FormationOutcome",
    "Hit",
    "Kind",
    "Link",
    "LinkKind",
    "MemoryRecord",
    "MemoryStatus",
    "Page",
    "Revision",
    "Scope",
    "Source",
    "SourceKind",
    "Trust",
]


class Kind(StrEnum):
    """What sort of thing a memory is."""

    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    PROCEDURE = "procedure"
    NOTE = "note"
    INSIGHT = "insight"


class Trust(StrEnum):
    """How far a memory can be believed; computed from its source, never taken from input."""

    CONFIRMED = "confirmed"
    """A person said it or confirmed it."""
    INFERRED = "inferred"
    """An agent or a model derived it."""
    UNTRUSTED = "untrusted"
    """A tool, an MCP server, a web page or an import supplied it."""


SourceKind = Literal["person", "agent", "model", "tool", "mcp", "web", "import"]

_TRUST_OF: dict[str, Trust] = {
    "person": Trust.CONFIRMED,
    "agent": Trust.INFERRED,
    "model": Trust.INFERRED,
    "tool": Trust.UNTRUSTED,
    "mcp": Trust.UNTRUSTED,
    "web": Trust.UNTRUSTED,
    "import": Trust.UNTRUSTED,
}


class Source(BaseModel):
    """Who or what said a memory, when, and (optionally) the record it came from.

    Build one with the constructors (``Source.person(...)``, ``Source.web(url)``, …); the
    trust level follows from the kind and cannot be passed in.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SourceKind
    id: str | None = None
    """Who: a person id, an agent name, a model, a tool, an MCP server, a URL, an import."""
    ref: str | None = None
    """The real record it came from: a message id, a tool call id, a ledger entry."""
    at: datetime | None = None
    """When it was said, if known (timezone-aware)."""

    @property
    def trust(self) -> Trust:
        """The most trust this source can earn (a person source is ``confirmed`` only when the
        person's own handle writes it about themself; from an agent it is ``inferred``)."""
        return _TRUST_OF[self.kind]

    @classmethod
    def person(
        cls, person_id: str, *, ref: str | None = None, at: datetime | None = None
    ) -> Source:
        """A person said it (``confirmed`` from the person's own handle, else ``inferred``)."""
        return cls(kind="person", id=person_id, ref=ref, at=at)

    @classmethod
    def agent(cls, agent: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """An agent wrote it on its own account (trust ``inferred``)."""
        return cls(kind="agent", id=agent, ref=ref, at=at)

    @classmethod
    def model(cls, model: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """A model derived it (trust ``inferred``)."""
        return cls(kind="model", id=model, ref=ref, at=at)

    @classmethod
    def tool(cls, tool: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """A tool returned it (trust ``untrusted``)."""
        return cls(kind="tool", id=tool, ref=ref, at=at)

    @classmethod
    def mcp(cls, server: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """An MCP server returned it (trust ``untrusted``)."""
        return cls(kind="mcp", id=server, ref=ref, at=at)

    @classmethod
    def web(cls, url: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """A web page said it (trust ``untrusted``)."""
        return cls(kind="web", id=url, ref=ref, at=at)

    @classmethod
    def import_(cls, origin: str, *, ref: str | None = None, at: datetime | None = None) -> Source:
        """An import brought it in (trust ``untrusted``)."""
        return cls(kind="import", id=origin, ref=ref, at=at)


class Scope(BaseModel):
    """Where a memory lives: tenant and app, who it is about, which agent and session wrote it."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    app: str
    about: str
    """A person id, or ``"tenant"`` for shared, non-personal memory."""
    agent: str
    """The agent that owns the memory: the one that wrote its first version (``@person``
    when the person wrote it themself). ``read: "own"`` means memories it owns."""
    session: str | None = None


FormationOutcome = Literal[
    "novel", "duplicate", "supersession", "refinement", "contradiction", "related"
]
"""How a remembered text joined the memories held (docs/concepts.md, "Formation")."""

LinkKind = Literal["derived_from", "related", "contradicts", "supersedes", "mentions"]
"""What a link says: see :class:`Link`."""

MemoryStatus = Literal["active", "disputed", "retracted"]
"""``disputed``: contested (:meth:`contest`) and not revised since; ``retracted``: closed with
no successor (:meth:`retract`, or merged into another memory)."""

EntityType = Literal["person", "place", "organisation", "project", "tool", "other"]


class Formation(BaseModel):
    """What formation decided when ``remember`` wrote a version: outcome, target and why."""

    model_config = ConfigDict(frozen=True)

    outcome: FormationOutcome
    target: str | None = None
    """The memory it was classified against (``None`` for ``novel``)."""
    reason: str = "nothing-close"
    """A code that says why, never content: ``same-text``, ``same-key``, ``new-value``,
    ``says-it-changed``, ``negation``, ``fixed-attribute``, ``adds-detail``, ``shares-terms``,
    … (docs/concepts.md lists them)."""


class Revision(BaseModel):
    """A revision operation that wrote this version: ``contest``, ``retract`` or ``merge``."""

    model_config = ConfigDict(frozen=True)

    op: Literal["contest", "retract", "merge"]
    memories: tuple[str, ...] = ()
    """``merge``: on the memory that absorbed others, their ids; on an absorbed memory's last
    version, the id of the one it went into."""


class Link(BaseModel):
    """A relation of one memory, as ``handle.links(memory_id)`` reads it.

    ``direction="out"``: this memory → ``target`` (``derived_from``: this memory was derived
    from ``target``; ``supersedes``: it absorbed ``target`` in a merge; ``mentions``: it names
    the entity ``target``). ``direction="in"``: ``target`` → this memory (an insight derived
    from it, the memory that absorbed it). ``related`` and ``contradicts`` go both ways and
    are read as ``out`` from either end.
    """

    model_config = ConfigDict(frozen=True)

    kind: LinkKind
    target: str
    direction: Literal["out", "in"] = "out"
    weight: float | None = Field(default=None, ge=0.0, le=1.0)
    """``mentions``: how central the entity is to the memory's text, from 0 to 1."""


class Entity(BaseModel):
    """A named thing the person's memories mention, with its canonical name and aliases."""

    model_config = ConfigDict(frozen=True)

    id: str
    """``ent_…``"""
    name: str
    type: EntityType
    aliases: tuple[str, ...] = ()
    memories: int = 0
    """How many current memories mention it."""

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield (name, "<hidden>" if name in {"name", "aliases"} else value)


class MemoryRecord(BaseModel):
    """One version of one memory, opened."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str
    version: int
    kind: Kind
    text: str
    data: Any = None
    """The typed fact given as ``data=`` (a pydantic model instance), or ``None``."""
    source: Source
    trust: Trust
    labels: tuple[str, ...]
    pinned: bool
    session_only: bool
    scope: Scope
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    created_at: datetime
    """When the memory's first version was recorded."""
    confirmed_by: str | None = None
    """The person who confirmed this version, when a person confirmed it."""
    author: str = ""
    """Who wrote this version: an agent name, or ``@person`` for the person themself."""
    language: str = DEFAULT_LANGUAGE
    """The language its words were stemmed in for search (``remember(..., language=)``)."""
    formation: Formation | None = None
    """How ``remember`` formed this version (``None``: written with ``formation=False``, by
    ``revise``, ``confirm`` or a revision operation, or before formation existed). A
    duplicate writes no version: the record returned then carries the decision."""
    status: MemoryStatus = "active"
    revision: Revision | None = None
    """The revision operation that wrote this version, if one did."""
    derived_from: tuple[str, ...] = ()
    """The memories an insight was derived from (``remember(..., derived_from=[...])``)."""
    forked_from: str | None = None
    """The memory this one is a copy of, when a fork (``ScopedMemory.fork``) wrote it."""
    key: str | None = None
    """The caller's own id for the memory (``remember(key=...)``; ``get(key=...)`` finds it)."""
    metadata: dict[str, Any] | None = None
    """The memory's JSON metadata (``remember(metadata=...)``), sealed with it; filter on its
    top-level fields with ``recall(where=...)`` and ``list(where=...)``."""

    @property
    def quarantined(self) -> bool:
        """Untrusted and not confirmed: only the session that wrote it sees it."""
        return self.trust is Trust.UNTRUSTED

    @property
    def version_id(self) -> str:
        """The id of this version: ``<memory id>.v<version>``."""
        return f"{self.id}.v{self.version}"

    @property
    def is_current(self) -> bool:
        """Whether this version is still open (not revised since)."""
        return self.valid_to is None

    def __repr_args__(self) -> Any:
        # Keep memory text and data out of reprs, so a stray log line shows ids only.
        for name, value in super().__repr_args__():
            yield (name, "<hidden>" if name in {"text", "data", "key", "metadata"} else value)


class Hit(BaseModel):
    """A recalled memory and how well it matched, from 0 to 1."""

    model_config = ConfigDict(frozen=True)

    record: MemoryRecord
    score: float = Field(ge=0.0, le=1.0)


class Page(BaseModel):
    """One page of ``list()``: newest first; pass ``next_cursor`` back for the next page."""

    model_config = ConfigDict(frozen=True)

    items: list[MemoryRecord]
    next_cursor: str | None = None


class ForgetRequest(BaseModel):
    """An agent's request to forget a memory, waiting for the person to approve or reject it."""

    model_config = ConfigDict(frozen=True)

    id: str
    """``fgr_…``"""
    memory_id: str
    person: str
    agent: str
    requested_at: datetime
    status: Literal["pending", "approved", "rejected"] = "pending"


class AgentLimits(BaseModel):
    """Limits on one agent's writes and model calls; ``None`` means no limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    writes_per_minute: int | None = Field(default=None, ge=1)
    """Writes (remember, revise, pin, forget requests) in any sliding minute, counted once for
    every process and instance on the key store."""
    memories_per_person: int | None = Field(default=None, ge=1)
    """Memories this agent holds about one person (first written by it and not forgotten),
    counted atomically with each new memory across every process."""
    model_calls_per_minute: int | None = Field(default=None, ge=1)
    """Calls to the configured model made for this agent (``learn``'s model-assisted
    extractor, through the model port) in any sliding minute, counted once for every process
    and instance on the key store, apart from its writes."""
