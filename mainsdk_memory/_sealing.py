"""One version in and out of its seal: the plaintext of a version, the row a driver stores.

:class:`Contents` is what a version says (text, kind, labels, source, trust, authorship,
typed data, session and dates); :func:`seal` turns it into the :class:`StoredRow` the driver
keeps (AES-GCM under the subject's key, bound to tenant, app, subject, memory and version,
with blinded index terms and a pseudonymous subject), and :func:`open_contents` checks and
opens a row back. Embeddings are sealed beside the row the same way, with their own
associated data.

Each memory has a seal key of its own, derived from the subject's secret and a salt that
only the key store's anchors hold (ADR 0047): every row is checked against its anchor
(:mod:`mainsdk_memory._integrity`) before it opens, and a forgotten memory's salt is dropped,
so no copy of its rows opens again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ValidationError

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import IntegrityError, InvalidInputError, SealError
from mainsdk_memory._integrity import anchor_new, anchor_of, anchored_pin
from mainsdk_memory._records import (
    Formation,
    Kind,
    MemoryRecord,
    MemoryStatus,
    Revision,
    Scope,
    Source,
    Trust,
)
from mainsdk_memory._tags import version_tags
from mainsdk_memory._text import DEFAULT_LANGUAGE, check_language, index_terms
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow, VectorEntry
from mainsdk_memory.keys import SubjectKeys, associated_data

__all__ = [
    "KEY_MARK",
    "Contents",
    "Place",
    "data_fields",
    "first_place",
    "first_places",
    "key_term",
    "memory_ad",
    "next_place",
    "open_contents",
    "open_record",
    "open_vector",
    "pad",
    "padded_size",
    "seal",
    "seal_vector",
    "sealed_data",
    "to_record",
    "vector_ad",
]


#: The smallest sealed payload, in bytes (every payload is padded to at least this).
MIN_PADDED = 256


def padded_size(size: int) -> int:
    """The size bucket of a payload of ``size`` bytes: at least :data:`MIN_PADDED`, else
    ``size`` rounded up to a quarter of its power of two (256, 320, 384, 448, 512, 640, …).

    The sealed length then tells only which bucket a text falls in — four per doubling —
    never its exact length; a payload grows by at most a quarter (ADR 0029).
    """
    if size <= MIN_PADDED:
        return MIN_PADDED
    step = 1 << (size.bit_length() - 3)
    return -(-size // step) * step


def pad(payload: bytes) -> bytes:
    """``payload`` (JSON) with trailing spaces up to its bucket; JSON ignores them."""
    return payload + b" " * (padded_size(len(payload)) - len(payload))


#: The marker of a typed fact's key term: no word's term starts with it.
KEY_MARK = "\x00fact:"


def key_term(data_type: str, fields: dict[str, Any], names: Sequence[str]) -> str:
    """The index term of a typed fact's key: its type and the values of the key fields.

    Blinded like every term and held by each version of the memory, counted in no document
    length (so no BM25 score moves) and produced by no word of a query."""
    values = json.dumps([fields[name] for name in names], sort_keys=True, ensure_ascii=False)
    return f"{KEY_MARK}{data_type}:{values}"


def sealed_data(data: Any) -> Any:
    """A record's ``data`` as the JSON fields that were sealed (a model as its dump)."""
    return data.model_dump(mode="json") if isinstance(data, BaseModel) else data


def data_fields(data: BaseModel | None) -> tuple[dict[str, Any] | None, str | None]:
    """A model instance as the JSON fields and type name that are sealed with a version."""
    if data is None:
        return None, None
    return data.model_dump(mode="json"), validate.type_name(type(data))


@dataclass(frozen=True, slots=True)
class Contents:
    """What one version says: everything that is sealed (its repr hides text and data)."""

    text: str = field(repr=False)
    kind: Kind
    labels: tuple[str, ...]
    source: Source
    trust: Trust
    agent: str
    """The agent that owns the memory (wrote its first version)."""
    author: str
    """The agent (or :data:`~mainsdk_memory._caller.PERSON_AGENT`) that wrote this version."""
    confirmed_by: str | None
    data: dict[str, Any] | None = field(repr=False)
    data_type: str | None
    session: str | None
    """The session's name, as the handle was opened (``MemoryRecord.scope.session``)."""
    session_token: str | None
    """The session the row stores (:meth:`Caller.session_token`, ADR 0045); a version
    written before sessions were tokens stores the name itself, and this equals it."""
    session_only: bool
    valid_from: datetime
    recorded_at: datetime
    language: str = DEFAULT_LANGUAGE
    """The language its index terms were made in (:mod:`mainsdk_memory._text`)."""
    formation: Formation | None = None
    """How ``remember`` formed this version, when it did."""
    status: MemoryStatus = "active"
    revision: Revision | None = None
    derived_from: tuple[str, ...] = ()
    fact_key: tuple[str, ...] = ()
    """The fields of ``data`` that identify its fact (its model's ``fact_key``), if any."""
    forked_from: str | None = None
    """The memory this one was copied from by a fork (:mod:`mainsdk_memory._fork`)."""
    key: str | None = field(default=None, repr=False)
    """The caller's key of the memory (``remember(key=...)``), if it has one."""
    metadata: dict[str, Any] | None = field(default=None, repr=False)
    """The memory's JSON metadata (``remember(metadata=...)``), if any."""

    @property
    def closed(self) -> bool:
        """Whether the version is written closed (a retraction: no version follows it)."""
        return self.status == "retracted"

    def payload(self) -> dict[str, Any]:
        """The JSON document that is sealed (the token only where it is not the name, so a
        version of before ADR 0045 seals as it always did)."""
        document: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind.value,
            "labels": list(self.labels),
            "trust": self.trust.value,
            "confirmed_by": self.confirmed_by,
            "source": self.source.model_dump(mode="json"),
            "agent": self.agent,
            "author": self.author,
            "session": self.session,
            "session_only": self.session_only,
            "valid_from": self.valid_from.isoformat(),
            "recorded_at": self.recorded_at.isoformat(),
            "data": self.data,
            "data_type": self.data_type if self.data is not None else None,
        }
        if self.session_token != self.session:
            document["session_token"] = self.session_token
        if self.language != DEFAULT_LANGUAGE:  # English versions seal as they always did
            document["language"] = self.language
        # Each of these only where it says something, so plain versions seal as before.
        if self.formation is not None:
            document["formation"] = self.formation.model_dump(mode="json")
        if self.status != "active":
            document["status"] = self.status
        if self.revision is not None:
            document["revision"] = self.revision.model_dump(mode="json")
        if self.derived_from:
            document["derived_from"] = list(self.derived_from)
        if self.fact_key and self.data is not None:
            document["fact_key"] = list(self.fact_key)
        if self.forked_from is not None:
            document["forked_from"] = self.forked_from
        if self.key is not None:
            document["key"] = self.key
        if self.metadata is not None:
            document["metadata"] = self.metadata
        return document

    def key_term(self) -> str | None:
        """The index term of this version's fact key (:func:`key_term`), if it has one."""
        if not self.fact_key or self.data is None or self.data_type is None:
            return None
        return key_term(self.data_type, self.data, self.fact_key)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a version goes: its memory, number, subject and the memory's row flags."""

    memory_id: str
    version: int
    subject: str
    """The person's id or :data:`TENANT_SUBJECT` (the row stores the pseudonym)."""
    pinned: bool
    created_at: datetime
    salt: bytes = field(repr=False)
    """The memory's salt, from the key store's anchors (its seal key is derived with it)."""


def first_place(
    caller: Caller,
    subject: str,
    *,
    pinned: bool,
    created_at: datetime,
    labels: tuple[str, ...],
    cap: int | None = None,
) -> Place:
    """Where a new memory's first version goes: a fresh id, anchored in the key store with
    its ``labels`` (the anchors decide retention).

    ``cap`` is the writing agent's memories-per-person limit, counted atomically with the
    anchor (:class:`LimitExceededError` once reached).
    """
    memory_id = validate.new_memory_id()
    salt = anchor_new(
        caller, subject, memory_id, pinned=pinned, created_at=created_at, labels=labels, cap=cap
    )
    return Place(memory_id, 1, subject, pinned, created_at, salt)


def first_places(
    caller: Caller, subject: str, created: Sequence[datetime], labels: tuple[str, ...]
) -> list[Place]:
    """Places of many new unpinned memories of ``subject`` with ``labels``, anchored in one
    transaction (a bulk load that writes every row next; an interrupted load leaves anchors
    of rows never written: a retention sweep or an erase drops them)."""
    services = caller.services
    ids = [validate.new_memory_id() for _ in created]
    name = services.anchor_subject(caller.tenant, subject)
    row_subject = TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.pseudonym()
    salts = services.keys.anchors.anchor_many(
        services.anchor_scope(caller.tenant),
        [
            (memory_id, name, row_subject, caller.agent, when, labels)
            for memory_id, when in zip(ids, created, strict=True)
        ],
    )
    return [
        Place(memory_id, 1, subject, False, when, salts[memory_id])
        for memory_id, when in zip(ids, created, strict=True)
    ]


def next_place(caller: Caller, current: StoredRow) -> Place:
    """Where the version after ``current`` goes: the same memory, subject and salt, with the
    pin and creation time its anchor holds (never the store's columns)."""
    anchor = anchor_of(caller, current)
    return Place(
        memory_id=current.memory_id,
        version=current.version + 1,
        subject=caller.subject_of(current),
        pinned=anchored_pin(anchor, current),
        created_at=anchor.created_at,
        salt=anchor.salt,
    )


def memory_ad(caller: Caller, subject: str, memory_id: str, version: int) -> bytes:
    """The associated data of one version's sealed contents."""
    return associated_data(
        "mainsdk-memory/v1/memory", caller.tenant, caller.app, subject, memory_id, version
    )


def vector_ad(caller: Caller, subject: str, memory_id: str, version: int) -> bytes:
    """The associated data of one version's sealed embedding."""
    return associated_data(
        "mainsdk-memory/v1/vector", caller.tenant, caller.app, subject, memory_id, version
    )


def seal(caller: Caller, contents: Contents, place: Place) -> StoredRow:
    """The row the driver stores for ``contents`` at ``place``: sealed, blinded, pseudonymous
    (with the blinded key term of a typed fact, :meth:`Contents.key_term`, whatever wrote
    the version: a revision, a confirmation, a contest keep the key)."""
    keys = caller.services.subject_keys(caller.tenant, place.subject, create=True)
    assert keys is not None  # noqa: S101 - create=True always returns keys
    sealed = keys.seal_memory(
        place.salt,
        pad(json.dumps(contents.payload(), ensure_ascii=False).encode("utf-8")),
        memory_ad(caller, place.subject, place.memory_id, place.version),
    )
    counts: dict[str, int] = {}
    terms = index_terms(contents.text, contents.language)
    for term in terms:
        token = keys.blind(term)
        counts[token] = counts.get(token, 0) + 1
    fact = contents.key_term()
    if fact is not None:
        counts[keys.blind(fact)] = 1
    return StoredRow(
        tenant=caller.tenant,
        app=caller.app,
        subject=TENANT_SUBJECT if place.subject == TENANT_SUBJECT else caller.pseudonym(),
        memory_id=place.memory_id,
        version=place.version,
        kind=contents.kind.value,
        labels=contents.labels,
        trust=contents.trust.value,
        agent=contents.agent,
        session=contents.session_token,
        session_only=contents.session_only,
        pinned=place.pinned,
        created_at=place.created_at,
        recorded_at=contents.recorded_at,
        valid_from=contents.valid_from,
        valid_to=contents.valid_from if contents.closed else None,
        sealed=sealed,
        terms=counts,
        length=len(terms),
        tags=version_tags(keys.blind, contents.key, contents.metadata),
    )


def open_contents(
    caller: Caller, row: StoredRow, *, versions: Sequence[StoredRow] | None = None
) -> Contents:
    """Open ``row``; :class:`SealError` if it was swapped, edited or its key is gone, and
    :class:`IntegrityError` if it disagrees with its anchor (rolled back, edited, forgotten).

    A closed version's end must be its successor's sealed start (the store keeps ``valid_to``
    in the clear); the successor is taken from ``versions`` (the memory's rows, when the
    caller holds them) or read from the store.
    """
    subject, keys = _keys_of(caller, row)
    anchor = anchor_of(caller, row)
    contents = _decrypt(caller, row, subject, keys, anchor.salt)
    if contents.closed:
        # A retraction is sealed closed at its own start; no version follows it.
        if row.valid_to != contents.valid_from:
            raise IntegrityError(row.memory_id)
    elif row.valid_to is not None:
        rows = versions
        if rows is None:
            rows = caller.services.store.versions(
                caller.tenant, caller.app, (row.subject,), row.memory_id
            )
        following = [other for other in rows if other.version == row.version + 1]
        if not following or following[0].valid_from != row.valid_to:
            raise IntegrityError(row.memory_id)
        # The successor's start as sealed (its plain column could be edited to match).
        if _decrypt(caller, following[0], subject, keys, anchor.salt).valid_from != row.valid_to:
            raise IntegrityError(row.memory_id)
    return contents


def _keys_of(caller: Caller, row: StoredRow) -> tuple[str, SubjectKeys]:
    subject = caller.subject_of(row)
    keys = caller.services.subject_keys(caller.tenant, subject, create=False)
    if keys is None:
        raise SealError(
            "This memory's key does not exist: its person was erased (the key destroyed), "
            "or this store does not belong to this key store. It cannot be opened."
        )
    return subject, keys


def _decrypt(
    caller: Caller, row: StoredRow, subject: str, keys: SubjectKeys, salt: bytes
) -> Contents:
    """The contents sealed in ``row``, once its plain columns agree with them."""
    plain = keys.open_memory(
        salt, row.sealed, memory_ad(caller, subject, row.memory_id, row.version)
    )
    try:
        payload = json.loads(plain)
        contents = Contents(
            text=payload["text"],
            kind=Kind(payload["kind"]),
            labels=tuple(payload["labels"]),
            source=Source.model_validate(payload["source"]),
            trust=Trust(payload["trust"]),
            agent=payload["agent"],
            author=payload.get("author", row.agent),
            confirmed_by=payload.get("confirmed_by"),
            data=payload["data"],
            data_type=payload["data_type"],
            session=payload["session"],
            session_token=payload.get("session_token", payload["session"]),
            session_only=payload["session_only"],
            valid_from=datetime.fromisoformat(payload["valid_from"]),
            recorded_at=datetime.fromisoformat(payload["recorded_at"]),
            language=check_language(payload.get("language", DEFAULT_LANGUAGE)),
            formation=_optional(Formation, payload.get("formation")),
            status=_status(payload.get("status", "active")),
            revision=_optional(Revision, payload.get("revision")),
            derived_from=tuple(str(one) for one in payload.get("derived_from", ())),
            fact_key=tuple(str(one) for one in payload.get("fact_key", ())),
            forked_from=_optional_str(payload.get("forked_from"), "forked_from"),
            key=_optional_str(payload.get("key"), "key"),
            metadata=_metadata(payload.get("metadata")),
        )
    except (KeyError, TypeError, ValueError, ValidationError, InvalidInputError):
        raise SealError from None
    consistent = (
        contents.kind.value == row.kind
        and contents.labels == row.labels
        and contents.trust.value == row.trust
        and contents.agent == row.agent
        and contents.session_token == row.session
        and contents.session_only == row.session_only
        and contents.valid_from == row.valid_from
        and contents.recorded_at == row.recorded_at
    )
    if not consistent:
        # The driver's plain columns disagree with what was sealed: someone edited them.
        raise SealError
    return contents


_Model = TypeVar("_Model", Formation, Revision)


def _optional(model: type[_Model], value: object) -> _Model | None:
    return None if value is None else model.model_validate(value)


def _optional_str(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(what)


def _metadata(value: object) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise ValueError("metadata")


def _status(value: object) -> MemoryStatus:
    if value == "active" or value == "disputed" or value == "retracted":
        return value
    raise ValueError("status")


def to_record(caller: Caller, row: StoredRow, contents: Contents) -> MemoryRecord:
    """The record of ``row`` whose plaintext is ``contents`` (no opening needed)."""
    data: Any = contents.data
    if data is not None and contents.data_type:
        model = caller.services.data_model(contents.data_type)
        if model is not None:
            try:
                data = model.model_validate(data)
            except ValidationError:
                data = contents.data  # the schema changed since; keep the stored fields
    return MemoryRecord(
        id=row.memory_id,
        version=row.version,
        kind=Kind(row.kind),
        text=contents.text,
        data=data,
        source=contents.source,
        trust=Trust(row.trust),
        labels=row.labels,
        pinned=row.pinned,
        session_only=row.session_only,
        scope=Scope(
            tenant=row.tenant,
            app=row.app,
            about=caller.subject_of(row),
            agent=row.agent,
            session=contents.session,
        ),
        valid_from=contents.valid_from,
        valid_to=row.valid_to,
        recorded_at=contents.recorded_at,
        created_at=row.created_at,
        confirmed_by=contents.confirmed_by,
        author=contents.author,
        language=contents.language,
        formation=contents.formation,
        status=contents.status,
        revision=contents.revision,
        derived_from=contents.derived_from,
        forked_from=contents.forked_from,
        key=contents.key,
        metadata=contents.metadata,
    )


def open_record(
    caller: Caller, row: StoredRow, *, versions: Sequence[StoredRow] | None = None
) -> MemoryRecord:
    """Open ``row`` as the record a caller gets (``versions``: see :func:`open_contents`)."""
    return to_record(caller, row, open_contents(caller, row, versions=versions))


# -- embeddings ----------------------------------------------------------------------------


def embedding_index(caller: Caller, *, child: bool) -> VectorIndex | None:
    """The store's vector index, unless there is none or the memory is about a child: a
    child's memories stay text only, whatever the embedder (ADR 0083)."""
    index = caller.services.vectors
    if index is None or child:
        return None
    return index


def seal_vector(
    caller: Caller,
    row: StoredRow,
    place: Place,
    text: str,
    *,
    child: bool,
    vector: npt.NDArray[np.float32] | None = None,
) -> bytes | None:
    """``text``'s embedding sealed for ``row``'s version (at ``place``), or ``None``;
    ``vector`` is the embedding when it was made already."""
    index = embedding_index(caller, child=child)
    if index is None or (row.valid_to is not None and vector is None):
        return None  # no embedder, a child, or a version written closed (never ranked)
    subject = caller.subject_of(row)
    keys = caller.services.subject_keys(caller.tenant, subject, create=True)
    assert keys is not None  # noqa: S101 - create=True always returns keys
    ad = vector_ad(caller, subject, row.memory_id, row.version)
    embedded = index.embed(text) if vector is None else vector
    return index.seal(embedded, lambda plain: keys.seal_memory(place.salt, plain, ad))


def open_vector(caller: Caller, entry: VectorEntry) -> bytes:
    """The plaintext of one stored embedding the caller may read."""
    subject = TENANT_SUBJECT if entry.subject == TENANT_SUBJECT else caller.person
    keys = caller.services.subject_keys(caller.tenant, subject, create=False)
    if keys is None or entry.sealed is None:
        raise SealError
    services = caller.services
    anchor = services.keys.anchors.memory(services.anchor_scope(caller.tenant), entry.memory_id)
    if anchor is None or anchor.subject != services.anchor_subject(caller.tenant, subject):
        raise IntegrityError(entry.memory_id)
    ad = vector_ad(caller, subject, entry.memory_id, entry.version)
    return keys.open_memory(anchor.salt, entry.sealed, ad)
