"""The storage driver protocol: what a driver stores, what it must answer, and what it declares.

A driver stores :class:`StoredRow` values and never sees plaintext: the text, typed data and
source of a memory arrive sealed, person ids arrive as keyed pseudonyms, and search terms
arrive blinded (keyed HMACs). A driver only filters, orders, ranks and erases. A driver that
declares ``relations`` also stores :class:`StoredLink` values, links between memories (and
from memories to entities): ids and a sealed blob, nothing else (:class:`RelationDriver`).
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from mainsdk_memory.drivers import _bm25
from mainsdk_memory.drivers._bm25 import BM25_B, BM25_K1, TRUST_RANK

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_TAGS",
    "QUARANTINED_TRUST",
    "TENANT_SUBJECT",
    "TRUST_RANK",
    "Capabilities",
    "Driver",
    "EraseResult",
    "Filter",
    "RelationDriver",
    "StoredLink",
    "StoredRow",
    "VectorDriver",
    "VectorEntry",
    "bm25_rank",
]

#: The subject of shared, tenant-level memory (``about="tenant"``).
TENANT_SUBJECT = "tenant"

#: The most tags one stored version carries (:attr:`StoredRow.tags`).
MAX_TAGS = 512

#: Rows of this trust are quarantined: only the session that wrote them sees them.
QUARANTINED_TRUST = "untrusted"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a driver can do; the conformance suite checks each declared capability."""

    text_search: bool = True
    """Ranks blind-index terms with BM25 (:func:`bm25_rank`)."""
    time_travel: bool = True
    """Keeps closed versions, so ``as_of`` and ``history`` work."""
    vectors: bool = False
    """Stores a sealed embedding with each version (``put(vector=...)``) and returns the
    embeddings of the rows a filter matches (:meth:`Driver.vectors`); the SDK opens and ranks
    them in process."""
    relations: bool = False
    """Stores links between memories (``put_links``, ``links``, ``delete_links``:
    :class:`RelationDriver`) and erases them with either end."""
    erase: Literal["hard", "soft"] = "hard"
    """``hard``: forget removes every byte of a memory; ``soft``: it only hides it."""
    regions: tuple[str, ...] = ()
    """Regions the driver can keep data in; empty means wherever its storage is."""
    concurrent_writers: bool = True
    """Several processes may write one store at once without losing writes."""
    person_records: bool = True
    """Holds sealed per-person records (working memory, the episodic ledger) as control
    records of up to 64 KiB, listed by prefix."""
    tags: bool = True
    """Stores each version's blinded tags (:attr:`StoredRow.tags`) and applies
    :attr:`Filter.tags` and :attr:`Filter.tags_absent` in every read, through an index (a
    read by one tag does not scan the subject's rows): caller keys and metadata filters."""


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One version of one memory, as the driver stores it: sealed, blinded, pseudonymous."""

    tenant: str
    app: str
    subject: str
    """A person's keyed pseudonym (``p_…``), or :data:`TENANT_SUBJECT`."""
    memory_id: str
    version: int
    kind: str
    labels: tuple[str, ...]
    trust: str
    agent: str
    session: str | None
    session_only: bool
    pinned: bool
    created_at: datetime
    """When the memory's first version was recorded (list order)."""
    recorded_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    sealed: bytes
    terms: Mapping[str, int] = field(default_factory=dict)
    """Blind-index term → count in this version's text."""
    length: int = 0
    """Number of index terms in this version's text (BM25 document length)."""
    tags: frozenset[str] = frozenset()
    """Blinded tags (32 lowercase hex characters each, at most :data:`MAX_TAGS`): the
    version's caller key and filterable metadata, as keyed HMACs. Filtered on
    (:attr:`Filter.tags`), never ranked: they are not terms and count in no BM25 statistic."""


@dataclass(frozen=True, slots=True)
class StoredLink:
    """One relation from a memory to a memory or an entity, as the driver stores it: ids and a seal.

    Ids (``subject``, ``source``, ``target``) are plain names: 1 to 200 ASCII letters, digits,
    ``_`` and ``-``, starting with a letter or digit (what the core makes: ``p_…``, ``mem_…``,
    ``ent_…``); a driver may use them as file names. A driver refuses any other link
    (:meth:`RelationDriver.put_links`).
    """

    tenant: str
    app: str
    subject: str
    """The keyed pseudonym (``p_…``) or :data:`TENANT_SUBJECT` of the memory at ``source``."""
    source: str
    """A memory id (``mem_…``)."""
    target: str
    """A memory id (``mem_…``) or an entity id (``ent_…``)."""
    key: str
    """An opaque token (32 lowercase hex characters), unique within (tenant, app, subject)."""
    sealed: bytes
    """The link's kind, weight and time, sealed by the SDK; opaque to the driver."""


@dataclass(frozen=True, slots=True)
class Filter:
    """Which rows a read may see. Drivers apply it in full; :meth:`matches` is the reference."""

    tenant: str
    app: str
    subjects: tuple[str, ...]
    session: str | None = None
    """Rows written ``session_only``, and quarantined rows, are visible only to this session.

    The core stores a session as a keyed token bound to the person, the agent and the
    session's name (ADR 0045): the driver compares tokens and never sees a session's name."""
    kinds: frozenset[str] | None = None
    as_of: datetime | None = None
    """``None``: current versions (``valid_to`` unset); else the version valid at that time."""
    pinned: bool | None = None
    """``True``: pinned rows only; ``False``: unpinned only; ``None``: both."""
    written_by: str | None = None
    """Only rows whose ``agent`` is this one (an agent with ``read: "own"``)."""
    any_session: bool = False
    """Lift the session rules for the person's own rows (their view of everything held
    about them); shared rows (:data:`TENANT_SUBJECT`) obey them for every filter (ADR 0045)."""
    retention: tuple[tuple[str, datetime], ...] = ()
    """``(label, cutoff)`` pairs: a row carrying ``label`` whose memory was created before
    ``cutoff`` has outlived its retention and is not returned, even before a sweep erases it."""
    memory_ids: frozenset[str] | None = None
    """Only rows of these memories (``None``: any). A read's corpus is then the rows of these
    memories alone: BM25's N, lengths and document frequencies are counted over them."""

    tags: tuple[frozenset[str], ...] = ()
    """Tag clauses, all of which a row must meet: a row meets a clause when it carries at
    least one of its tags (``()``: no tag condition; an empty clause matches nothing). Like
    every clause, it also bounds a search's corpus."""
    tags_absent: frozenset[str] = frozenset()
    """Only rows that carry none of these tags."""

    def visible(self, row: StoredRow) -> bool:
        """Whether ``row`` is in scope, ignoring time.

        Scope is tenant, app and subject; then session: a ``session_only`` row, and a
        quarantined row (trust ``untrusted``), are visible only to the session that wrote it
        (``any_session`` lifts this for a person's own rows, never for shared ones);
        then kind, pin, writing agent, memory ids and tags when the filter names them.
        """
        same_session = (self.any_session and row.subject != TENANT_SUBJECT) or (
            row.session is not None and row.session == self.session
        )
        return (
            row.tenant == self.tenant
            and row.app == self.app
            and row.subject in self.subjects
            and (not row.session_only or same_session)
            and (row.trust != QUARANTINED_TRUST or same_session)
            and (self.written_by is None or row.agent == self.written_by)
            and not any(
                label in row.labels and row.created_at < cutoff
                for label, cutoff in self.retention
            )
            and (self.kinds is None or row.kind in self.kinds)
            and (self.pinned is None or row.pinned == self.pinned)
            and (self.memory_ids is None or row.memory_id in self.memory_ids)
            and all(not clause.isdisjoint(row.tags) for clause in self.tags)
            and self.tags_absent.isdisjoint(row.tags)
        )

    def in_time(self, row: StoredRow) -> bool:
        """Whether ``row`` is the version this filter's time selects."""
        if self.as_of is None:
            return row.valid_to is None
        return row.valid_from <= self.as_of and (row.valid_to is None or self.as_of < row.valid_to)

    def matches(self, row: StoredRow) -> bool:
        """Whether a read with this filter returns ``row``."""
        return self.visible(row) and self.in_time(row)


class VectorEntry(NamedTuple):
    """The sealed embedding of one stored version, as :meth:`Driver.vectors` returns it."""

    subject: str
    memory_id: str
    version: int
    sealed: bytes | None
    """The bytes given to ``put(vector=...)``; ``None`` when the caller said it knows them."""


@dataclass(frozen=True, slots=True)
class EraseResult:
    """What a driver's erase removed, confirmed durable when it returns."""

    memory_id: str
    versions: tuple[int, ...]
    mode: Literal["hard", "soft"]


def bm25_rank(
    rows: Iterable[StoredRow], query: Sequence[Collection[str]], top_k: int
) -> list[tuple[StoredRow, float]]:
    """Rank ``rows`` (already filtered) for ``query`` with BM25; the reference ranking.

    ``query`` holds one group per query term: the term's blind tokens, one per vocabulary
    (a person's and the tenant's index keys give different tokens for the same word).
    Scoring is Okapi BM25 with ``k1=1.5``, ``b=0.75`` and the non-negative idf
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``, summed once per query term (a repeated query
    term counts again), over the filtered rows as the corpus. The score returned is the raw
    score divided by the query's ceiling ``sum(idf * (k1 + 1))``, so it lies in [0, 1] and the
    order equals plaintext BM25 on the same normalized terms.
    Rows with no query term are left out. Ties: the more trusted row first (confirmed,
    inferred, untrusted: :data:`TRUST_RANK`), then newer ``recorded_at``, then the greater
    memory id. Every driver must return exactly this order and these scores; the arithmetic
    is the BM25 kernel's (:mod:`mainsdk_memory.drivers._bm25`).
    """
    corpus = list(rows)
    if not corpus or not query or top_k <= 0:
        return []
    counts = [_bm25.query_counts(row.terms, query) for row in corpus]
    weights = _bm25.weights(
        len(corpus),
        sum(row.length for row in corpus),
        _bm25.document_frequencies(counts, len(query)),
    )
    if weights is None:
        return []
    scored: list[_bm25.Scored] = [
        (
            _bm25.score(weights, held, row.length),
            _bm25.order_key(row.trust, row.recorded_at, row.memory_id),
            index,
        )
        for index, (row, held) in enumerate(zip(corpus, counts, strict=True))
        if any(held)
    ]
    return [(corpus[index], score) for score, _key, index in _bm25.best(scored, top_k)]


@runtime_checkable
class Driver(Protocol):
    """A storage driver. Methods are atomic: each either happens whole or not at all.

    Drivers translate their own failures into :class:`mainsdk_memory.StoreError`
    (``raise StoreError(...) from exc``) and never put row contents in a message.

    Optional, not part of this protocol's check: ``unit()``, a context manager (a unit of
    work, ADR 0096) inside which every method this driver runs on the calling thread is one
    atomic step with the others: all of them happen, or none (a failure inside, or the block
    raising, undoes them all); a unit inside a unit is the outer one, and the operations of
    one unit are of one tenant. The SDK runs one call's operations in one (``remember``).
    ``unit(write=False)``, when ``unit`` takes ``write``, is a read unit: a write inside it
    raises ``ValueError``, and it yields ``True`` when its reads see one snapshot
    (``recall``, ADR 0101).
    A driver without it, or whose ``unit()`` does nothing (:class:`BaseDriver`'s), keeps
    each method its own atomic step; the SDK relies on nothing more.

    Optional too: ``control_generation(tenant, app) -> bytes | None``, bytes the driver
    changes in the same atomic step as every :meth:`control_put` of that tenant and app
    (``None`` before the first). With it the SDK keeps the control records it opened and
    reads them again only when these bytes moved or the key store's anchors show another
    form; without it, it reads them on every call.
    """

    name: str
    """A short name for receipts and diagnostics, e.g. ``"local"``."""
    capabilities: Capabilities

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store ``row``.

        With ``closes=None`` the row is version 1 of a new memory. With ``closes=n`` the
        row is version ``n + 1``: in one atomic step, version ``n`` gets ``valid_to =
        row.valid_from`` and the row is added. If version ``n`` is not the memory's current
        open version (another writer got there first), nothing changes and
        :class:`mainsdk_memory.MemoryConflictError` is raised.

        ``vector`` is the version's sealed embedding, opaque bytes stored with it in the same
        atomic step and returned by :meth:`vectors`. The SDK passes it only to a driver that
        declares ``vectors``; a driver that does not may ignore the parameter.
        """
        ...

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> list[StoredRow]:
        """Every stored version of ``memory_id`` within those subjects, oldest first."""
        ...

    def set_pinned(
        self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool
    ) -> None:
        """Set the pinned flag on the memory's current version (no new version)."""
        ...

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """Rows matching ``where``, newest ``created_at`` first (then greater memory id).

        ``after`` is the ``(created_at, memory_id)`` of the last row of the previous page.
        """
        ...

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """Rank the rows matching ``where`` exactly as :func:`bm25_rank` does."""
        ...

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Remove every version, index entry and embedding of the memory; return once it is
        durable.

        A driver that declares ``relations`` also removes, in the same durable step, every
        link of that tenant and app, in any subject, whose ``source`` or ``target`` is
        ``memory_id`` (:class:`RelationDriver`); with ``erase="hard"`` no byte of them is
        left in :meth:`raw_dump`.
        """
        ...

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """``(subject, memory_id)`` of every memory in tenant and app, any subject, that
        carries a label of ``retention`` and was created before that label's cutoff (what a
        retention sweep erases), sorted."""
        ...

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Set the small control record ``key`` (grants, kill switches, pending requests).

        ``value`` is sealed by the SDK; ``None`` deletes the record for good. Keys are
        printable ASCII up to 200 characters, namespaced like ``grant/<agent>``.
        """
        ...

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        """The control record ``key``, or ``None``."""
        ...

    def control_list(self, tenant: str, app: str, prefix: str) -> builtins.list[tuple[str, bytes]]:
        """Every control record whose key starts with ``prefix``, sorted by key."""
        ...

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Everything the driver stores, as ``(where, bytes)`` pairs: files, table rows.

        The conformance suite reads it to check that an erase left no byte behind and that
        no plaintext was stored. It must cover every place the driver writes to, links too.
        """
        ...

    def close(self) -> None:
        """Release files, connections and locks."""
        ...


@runtime_checkable
class VectorDriver(Driver, Protocol):
    """A :class:`Driver` that declares ``vectors``: it also returns stored sealed embeddings.

    Only drivers that declare ``Capabilities(vectors=True)`` implement :meth:`vectors`; the
    SDK refuses an embedder on any other (``MemoryCapabilityError``).
    """

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embedding of every row matching ``where`` that has one (declared
        ``vectors`` only), sorted by subject, memory id and version.

        An entry whose ``(memory_id, version)`` is in ``known`` carries ``sealed=None``: the
        caller holds those bytes already, so a recall moves only embeddings it has not seen.
        """
        ...

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Store ``sealed`` as the embedding of that stored version, replacing the one it had
        (a reindex backfills versions written before an embedder, or under another one).

        Atomic and durable like :meth:`put`: afterwards :meth:`vectors` returns exactly these
        bytes for the version. Closed versions may be given too. If the version is not stored
        (never written, or erased meanwhile), nothing changes and
        :class:`mainsdk_memory.MemoryConflictError` is raised.
        """
        ...


@runtime_checkable
class RelationDriver(Driver, Protocol):
    """A :class:`Driver` that declares ``relations``: it also stores links between memories.

    Only drivers that declare ``Capabilities(relations=True)`` implement these methods. A link
    belongs to the subject of its ``source`` memory; :meth:`Driver.erase` of a memory removes
    every link with that memory at either end, in any subject of its tenant and app.
    """

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Store ``links``: all or none, durable when this returns.

        A link whose (tenant, app, subject, key) is already stored replaces it (source, target
        and sealed); within one batch the last link with a key wins. Every link of a batch has
        the same tenant and app. A batch with a link that is not well-formed (a key that is
        not 32 lowercase hex characters, an id that is not a plain name, ``sealed`` that is not
        bytes: :class:`StoredLink`), or with links of two tenants or apps, raises
        :class:`mainsdk_memory.InvalidInputError` and stores nothing. An empty batch does
        nothing.
        """
        ...

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """Every link of that tenant and app, within those subjects, whose ``source`` or
        ``target`` is in ``ids``, sorted by (subject, key). Empty ``ids``: ``[]``."""
        ...

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """Remove the links of that subject with these keys, for good; unknown keys are
        ignored. Durable when this returns."""
        ...
