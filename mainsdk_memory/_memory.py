"""``Memory``, the recipe: tenant and scope resolution, sealing, blinding, and the driver call.

Every call resolves the tenant from :func:`mainsdk_memory.tenant.current`, checks its input
before anything changes, seals content under the subject's own key, blinds search terms, and
hands the driver only sealed, blinded, pseudonymous rows.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._context import ContextEntry, render_context
from mainsdk_memory._errors import (
    ConfigurationError,
    ErasePolicyError,
    InvalidInputError,
    MemoryCapabilityError,
    MemoryNotFound,
    ScopeError,
    SealError,
    TenantMismatchError,
)
from mainsdk_memory._records import Hit, Kind, MemoryRecord, Page, Scope, Source, Trust
from mainsdk_memory._text import index_terms
from mainsdk_memory.drivers import TENANT_SUBJECT, Capabilities, Driver, Filter, StoredRow
from mainsdk_memory.drivers import open_driver as _open_driver
from mainsdk_memory.keys import KeyStore, SubjectKeys, associated_data

__all__ = ["Memory", "ScopedMemory"]

MAX_TEXT_CHARS = 8_000
MAX_TOP_K = 100
MAX_PINNED_IN_CONTEXT = 20
DEFAULT_LABELS = ("personal",)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
_LABEL = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_MEMORY_ID = re.compile(r"mem_[a-z2-7]{26}")
_KINDS = frozenset(kind.value for kind in Kind)


def _new_memory_id() -> str:
    return "mem_" + base64.b32encode(os.urandom(16)).decode("ascii").rstrip("=").lower()


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInputError(
            f"{what} must be 1 to 128 characters of letters, digits, '.', '_', ':', '@' or '-', "
            "starting with a letter or digit."
        )
    return value


def _person(value: object) -> str:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= 256
        or value.strip() != value
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise InvalidInputError(
            "A person id must be a string of 1 to 256 characters without control characters "
            "or surrounding spaces."
        )
    if value == TENANT_SUBJECT:
        raise InvalidInputError("'tenant' is reserved for shared memory; it is not a person id.")
    return value


def _aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{what} must be timezone-aware (for example datetime.now(UTC)); a naive datetime "
            "is ambiguous."
        )
    return value.astimezone(UTC)


def _text(value: object, limit: int, what: str = "text") -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"The {what} must be a string.")
    if not value.strip():
        raise InvalidInputError(f"The {what} is empty; nothing was stored.")
    if len(value) > limit:
        raise InvalidInputError(
            f"The {what} is {len(value)} characters; the limit is {limit}. Split it into "
            "several memories."
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"The {what} is not valid Unicode (lone surrogates).") from None
    return value


def _kind(value: object) -> Kind:
    if not isinstance(value, str) or value not in _KINDS:
        raise InvalidInputError(f"kind must be one of: {', '.join(sorted(_KINDS))}.")
    return Kind(value)


def _kinds(values: Iterable[object] | None) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    return frozenset(_kind(v).value for v in values)


def _labels(values: Iterable[object] | None) -> tuple[str, ...]:
    if values is None:
        return DEFAULT_LABELS
    if isinstance(values, str):
        values = [values]
    labels = tuple(dict.fromkeys(values))
    if not labels or len(labels) > 16:
        raise InvalidInputError("Give 1 to 16 labels (the default is 'personal').")
    for label in labels:
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise InvalidInputError(
                "A label is 1 to 64 characters: lowercase letters, digits, '_' or '-', "
                "starting with a letter."
            )
    return labels


def _top_k(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOP_K:
        raise InvalidInputError(f"top_k must be a whole number from 1 to {MAX_TOP_K}.")
    return value


def _type_name(model: type[BaseModel]) -> str:
    return f"{model.__module__}:{model.__qualname__}"


class Memory:
    """A memory store for one app, sealed with one project key store.

    Open it with :meth:`open`, set the tenant with ``tenant.use(...)``, and act for a person
    with :meth:`acting_for`.
    """

    def __init__(
        self,
        driver: Driver,
        keystore: KeyStore,
        *,
        app: str,
        schemas: Iterable[type[BaseModel]] = (),
        clock: Callable[[], datetime] | None = None,
        labels: Iterable[str] | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        self._driver = driver
        self._keys = keystore
        self.app = _name(app, "app")
        self.labels: frozenset[str] | None = None if labels is None else frozenset(_labels(labels))
        if driver.capabilities.erase != "hard" and self.labels != frozenset({"none"}):
            raise ErasePolicyError
        self._clock = clock or (lambda: datetime.now(UTC))
        self._max_text = max_text_chars
        self._schemas: dict[str, type[BaseModel]] = {}
        for schema in schemas:
            self.register_schema(schema)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        keys: str | os.PathLike[str],
        app: str,
        schemas: Iterable[type[BaseModel]] = (),
        clock: Callable[[], datetime] | None = None,
        labels: Iterable[str] | None = None,
    ) -> Memory:
        """Open the store at ``url`` (``local:PATH``, …) sealed with the key store at ``keys``.

        The key store is opened first, so a missing one fails before anything is created.
        ``schemas`` lists the pydantic models used as ``data=``, so typed facts come back as
        those models. ``clock`` (returning aware datetimes) replaces the system time.
        ``labels`` declares the only labels this store may hold (default: any); a driver that
        can only soft-delete is refused (MAIN-MEM-0020) unless that is exactly ``["none"]``.
        """
        app = _name(app, "app")
        keystore = KeyStore.open(keys)
        driver = _open_driver(url)
        root = getattr(driver, "root", None)
        if isinstance(root, Path):
            key_path = Path(keys).resolve()
            store_path = root.resolve()
            if key_path.is_relative_to(store_path) or store_path.is_relative_to(key_path):
                driver.close()
                raise ConfigurationError(
                    "The key store must live outside the memory store (and the store outside "
                    "the key store), so a copy or backup of the store never carries its keys."
                )
        try:
            return cls(driver, keystore, app=app, schemas=schemas, clock=clock, labels=labels)
        except BaseException:
            driver.close()
            raise

    def __repr__(self) -> str:
        return f"<Memory app={self.app!r} driver={self._driver.name!r}>"

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the driver."""
        self._driver.close()

    @property
    def capabilities(self) -> Capabilities:
        """What the store's driver declares it can do."""
        return self._driver.capabilities

    @property
    def driver(self) -> Driver:
        """The storage driver (it holds only sealed, blinded rows)."""
        return self._driver

    def _check_labels(self, labels: tuple[str, ...]) -> tuple[str, ...]:
        if self.labels is not None and not set(labels) <= self.labels:
            raise InvalidInputError(
                f"This store holds only the labels {sorted(self.labels)}; nothing was stored."
            )
        return labels

    def register_schema(self, model: type[BaseModel]) -> None:
        """Let typed facts of ``model`` come back as instances of it."""
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise InvalidInputError("A schema is a pydantic model class.")
        self._schemas[_type_name(model)] = model

    def acting_for(
        self, person_id: str, *, agent: str, session: str | None = None
    ) -> ScopedMemory:
        """A handle that reads and writes as ``agent`` for ``person_id`` in the current tenant."""
        tenant_id = _tenant.current()
        return ScopedMemory(
            self,
            tenant_id,
            _person(person_id),
            _name(agent, "agent"),
            None if session is None else _name(session, "session"),
        )

    # -- used by ScopedMemory -------------------------------------------------------------

    def _now(self) -> datetime:
        return _aware(self._clock(), "The clock's time")

    def _subject_keys(self, tenant_id: str, subject: str, *, create: bool) -> SubjectKeys | None:
        name = subject if subject == TENANT_SUBJECT else f"person:{subject}"
        return self._keys.subject_keys(tenant_id, self.app, name, create=create)

    def _data_model(self, name: str) -> type[BaseModel] | None:
        model = self._schemas.get(name)
        if model is None:
            # A model already imported by the app is used; stored names never trigger imports.
            module_name, _, qualname = name.partition(":")
            obj: Any = sys.modules.get(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, type) and issubclass(obj, BaseModel):
                model = obj
        return model


class ScopedMemory:
    """Memory calls as one agent, for one person, in one tenant (and optionally one session)."""

    def __init__(
        self, memory: Memory, tenant_id: str, person: str, agent: str, session: str | None
    ) -> None:
        self._memory = memory
        self._tenant = tenant_id
        self.person = person
        self.agent = agent
        self.session = session

    def __repr__(self) -> str:
        return f"<ScopedMemory agent={self.agent!r} session={self.session!r}>"

    # -- scope ----------------------------------------------------------------------------

    def _tenant_id(self) -> str:
        if _tenant.current() != self._tenant:
            raise TenantMismatchError
        return self._tenant

    def _pseudonym(self, tenant_id: str) -> str:
        keys = self._memory._subject_keys(tenant_id, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys.pseudonym(self.person)

    def _subject_of(self, row: StoredRow) -> str:
        return TENANT_SUBJECT if row.subject == TENANT_SUBJECT else self.person

    def _filter(
        self,
        tenant_id: str,
        *,
        kinds: frozenset[str] | None = None,
        as_of: datetime | None = None,
        pinned: bool | None = None,
    ) -> Filter:
        return Filter(
            tenant=tenant_id,
            app=self._memory.app,
            subjects=(self._pseudonym(tenant_id), TENANT_SUBJECT),
            session=self.session,
            kinds=kinds,
            as_of=as_of,
            pinned=pinned,
        )

    def _about(self, about: str | None) -> str:
        if about is None or about == self.person:
            return self.person
        if about == TENANT_SUBJECT:
            return TENANT_SUBJECT
        raise ScopeError(
            "A handle writes about the person it acts for, or about='tenant' for shared "
            "memory. Use memory.acting_for(<that person>) to write about someone else."
        )

    # -- sealing --------------------------------------------------------------------------

    def _ad(self, tenant_id: str, subject: str, memory_id: str, version: int) -> bytes:
        return associated_data(
            "mainsdk-memory/v1/memory", tenant_id, self._memory.app, subject, memory_id, version
        )

    def _seal_row(
        self,
        tenant_id: str,
        *,
        subject: str,
        memory_id: str,
        version: int,
        text: str,
        kind: Kind,
        labels: tuple[str, ...],
        source: Source,
        data: BaseModel | None,
        session_only: bool,
        session: str | None,
        pinned: bool,
        created_at: datetime,
        recorded_at: datetime,
        valid_from: datetime,
    ) -> StoredRow:
        keys = self._memory._subject_keys(tenant_id, subject, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        trust = source.trust
        payload = {
            "text": text,
            "kind": kind.value,
            "labels": list(labels),
            "trust": trust.value,
            "source": source.model_dump(mode="json"),
            "agent": self.agent,
            "session": session,
            "session_only": session_only,
            "valid_from": valid_from.isoformat(),
            "recorded_at": recorded_at.isoformat(),
            "data": None if data is None else data.model_dump(mode="json"),
            "data_type": None if data is None else _type_name(type(data)),
        }
        sealed = keys.seal(
            json.dumps(payload, ensure_ascii=False).encode("utf-8"),
            self._ad(tenant_id, subject, memory_id, version),
        )
        counts: dict[str, int] = {}
        terms = index_terms(text)
        for term in terms:
            token = keys.blind(term)
            counts[token] = counts.get(token, 0) + 1
        return StoredRow(
            tenant=tenant_id,
            app=self._memory.app,
            subject=TENANT_SUBJECT if subject == TENANT_SUBJECT else self._pseudonym(tenant_id),
            memory_id=memory_id,
            version=version,
            kind=kind.value,
            labels=labels,
            trust=trust.value,
            agent=self.agent,
            session=session,
            session_only=session_only,
            pinned=pinned,
            created_at=created_at,
            recorded_at=recorded_at,
            valid_from=valid_from,
            valid_to=None,
            sealed=sealed,
            terms=counts,
            length=len(terms),
        )

    def _open_row(self, row: StoredRow) -> MemoryRecord:
        subject = self._subject_of(row)
        keys = self._memory._subject_keys(row.tenant, subject, create=False)
        if keys is None:
            raise SealError
        plain = keys.open(row.sealed, self._ad(row.tenant, subject, row.memory_id, row.version))
        try:
            payload = json.loads(plain)
            source = Source.model_validate(payload["source"])
            valid_from = datetime.fromisoformat(payload["valid_from"])
            recorded_at = datetime.fromisoformat(payload["recorded_at"])
            consistent = (
                payload["kind"] == row.kind
                and tuple(payload["labels"]) == row.labels
                and payload["trust"] == row.trust
                and payload["agent"] == row.agent
                and payload["session"] == row.session
                and payload["session_only"] == row.session_only
                and valid_from == row.valid_from
                and recorded_at == row.recorded_at
            )
        except (KeyError, TypeError, ValueError, ValidationError):
            raise SealError from None
        if not consistent:
            # The driver's plain columns disagree with what was sealed: someone edited them.
            raise SealError
        data: Any = payload["data"]
        if data is not None and payload["data_type"]:
            model = self._memory._data_model(payload["data_type"])
            if model is not None:
                try:
                    data = model.model_validate(data)
                except ValidationError:
                    data = payload["data"]  # the schema changed since; keep the stored fields
        return MemoryRecord(
            id=row.memory_id,
            version=row.version,
            kind=Kind(row.kind),
            text=payload["text"],
            data=data,
            source=source,
            trust=Trust(row.trust),
            labels=row.labels,
            pinned=row.pinned,
            session_only=row.session_only,
            scope=Scope(
                tenant=row.tenant,
                app=row.app,
                about=subject,
                agent=row.agent,
                session=row.session,
            ),
            valid_from=valid_from,
            valid_to=row.valid_to,
            recorded_at=recorded_at,
            created_at=row.created_at,
        )

    def _current_row(self, tenant_id: str, memory_id: object) -> tuple[list[StoredRow], StoredRow]:
        if not isinstance(memory_id, str):
            raise InvalidInputError("A memory id is a string like 'mem_…'.")
        if not _MEMORY_ID.fullmatch(memory_id):
            raise MemoryNotFound
        where = self._filter(tenant_id)
        rows = self._memory._driver.versions(tenant_id, self._memory.app, where.subjects, memory_id)
        current = rows[-1] if rows else None
        if current is None or current.valid_to is not None or not where.visible(current):
            raise MemoryNotFound
        return rows, current

    # -- writes ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        about: str | None = None,
        source: Source | None = None,
        valid_from: datetime | None = None,
        labels: Sequence[str] | None = None,
        pinned: bool = False,
        session_only: bool = False,
        data: BaseModel | None = None,
    ) -> MemoryRecord:
        """Store a new memory and return it (version 1, id ``mem_…``).

        ``about`` defaults to the person acted for; ``"tenant"`` stores shared memory.
        ``source`` defaults to this agent (trust ``inferred``); ``Source.person(...)`` makes it
        ``confirmed``. ``session_only`` memories are seen only in this session. ``data`` is
        a pydantic model instance kept with the text and returned as that model.
        """
        tenant_id = self._tenant_id()
        text = _text(text, self._memory._max_text)
        checked_kind = _kind(kind)
        subject = self._about(about)
        if source is None:
            source = Source.agent(self.agent)
        elif not isinstance(source, Source):
            raise InvalidInputError("source must be a Source, for example Source.person(id).")
        checked_labels = self._memory._check_labels(_labels(labels))
        if not isinstance(pinned, bool) or not isinstance(session_only, bool):
            raise InvalidInputError("pinned and session_only are True or False.")
        if session_only and self.session is None:
            raise InvalidInputError(
                "session_only needs a session: use memory.acting_for(..., session=...)."
            )
        if data is not None and not isinstance(data, BaseModel):
            raise InvalidInputError("data must be a pydantic model instance.")
        if source.at is not None:
            _aware(source.at, "source.at")
        now = self._memory._now()
        start = now if valid_from is None else _aware(valid_from, "valid_from")
        if data is not None:
            self._memory.register_schema(type(data))
        row = self._seal_row(
            tenant_id,
            subject=subject,
            memory_id=_new_memory_id(),
            version=1,
            text=text,
            kind=checked_kind,
            labels=checked_labels,
            source=source,
            data=data,
            session_only=session_only,
            session=self.session,
            pinned=pinned,
            created_at=now,
            recorded_at=now,
            valid_from=start,
        )
        self._memory._driver.put(row)
        return self._open_row(row)

    def revise(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        source: Source | None = None,
        valid_from: datetime | None = None,
        labels: Sequence[str] | None = None,
        data: BaseModel | None = None,
    ) -> MemoryRecord:
        """Write the memory's next version and close the current one at ``valid_from``.

        Unset arguments keep the current version's kind and labels; ``data`` belongs to the
        text it comes with, so it is not carried over. Raises
        :class:`MemoryConflictError` if another writer revised it first.
        """
        tenant_id = self._tenant_id()
        text = _text(text, self._memory._max_text)
        rows, current = self._current_row(tenant_id, memory_id)
        checked_kind = Kind(current.kind) if kind is None else _kind(kind)
        checked_labels = self._memory._check_labels(
            current.labels if labels is None else _labels(labels)
        )
        if source is None:
            source = Source.agent(self.agent)
        elif not isinstance(source, Source):
            raise InvalidInputError("source must be a Source, for example Source.person(id).")
        if data is not None and not isinstance(data, BaseModel):
            raise InvalidInputError("data must be a pydantic model instance.")
        now = self._memory._now()
        start = now if valid_from is None else _aware(valid_from, "valid_from")
        if start < current.valid_from:
            raise InvalidInputError(
                "valid_from of a revision cannot be before the current version's valid_from."
            )
        if data is not None:
            self._memory.register_schema(type(data))
        row = self._seal_row(
            tenant_id,
            subject=self._subject_of(current),
            memory_id=current.memory_id,
            version=current.version + 1,
            text=text,
            kind=checked_kind,
            labels=checked_labels,
            source=source,
            data=data,
            session_only=current.session_only,
            session=current.session,
            pinned=current.pinned,
            created_at=rows[0].created_at,
            recorded_at=now,
            valid_from=start,
        )
        self._memory._driver.put(row, closes=current.version)
        return self._open_row(row)

    def _set_pinned(self, memory_id: str, pinned: bool) -> MemoryRecord:
        tenant_id = self._tenant_id()
        _, current = self._current_row(tenant_id, memory_id)
        self._memory._driver.set_pinned(
            tenant_id, self._memory.app, current.subject, current.memory_id, pinned
        )
        return self.get(memory_id)

    def pin(self, memory_id: str) -> MemoryRecord:
        """Pin the memory: ``context()`` always puts it first."""
        return self._set_pinned(memory_id, True)

    def unpin(self, memory_id: str) -> MemoryRecord:
        """Unpin the memory."""
        return self._set_pinned(memory_id, False)

    def forget(self, memory_id: str) -> _receipts.Receipt:
        """Hard-delete every version of the memory and return a signed, id-only receipt."""
        tenant_id = self._tenant_id()
        _, current = self._current_row(tenant_id, memory_id)
        driver = self._memory._driver
        result = driver.erase(tenant_id, self._memory.app, current.subject, current.memory_id)
        return _receipts.issue(
            {
                "op": "forget",
                "tenant": tenant_id,
                "app": self._memory.app,
                "about": self._subject_of(current),
                "agent": self.agent,
                "memory_id": current.memory_id,
                "version_ids": [f"{current.memory_id}.v{v}" for v in result.versions],
                "driver": driver.name,
                "erase": result.mode,
            },
            self._memory._keys.signing_key,
            now=self._memory._now(),
        )

    # -- reads ----------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory's current version."""
        tenant_id = self._tenant_id()
        _, current = self._current_row(tenant_id, memory_id)
        return self._open_row(current)

    def history(self, memory_id: str) -> list[MemoryRecord]:
        """Every version of the memory, oldest first."""
        tenant_id = self._tenant_id()
        if not self._memory.capabilities.time_travel:
            raise MemoryCapabilityError("time_travel")
        rows, _ = self._current_row(tenant_id, memory_id)
        return [self._open_row(row) for row in rows]

    def list(
        self,
        *,
        kinds: Iterable[str] | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page:
        """Current memories in scope, newest first, ``limit`` at a time."""
        tenant_id = self._tenant_id()
        where = self._filter(tenant_id, kinds=_kinds(kinds))
        limit = _top_k(limit)
        after = None if cursor is None else _decode_cursor(cursor)
        rows = self._memory._driver.list(where, limit=limit + 1, after=after)
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = _encode_cursor(rows[-1]) if more and rows else None
        return Page(items=[self._open_row(row) for row in rows], next_cursor=next_cursor)

    def _query_groups(self, tenant_id: str, query: str) -> list[set[str]]:
        vocabularies = [
            keys
            for keys in (
                self._memory._subject_keys(tenant_id, self.person, create=False),
                self._memory._subject_keys(tenant_id, TENANT_SUBJECT, create=True),
            )
            if keys is not None
        ]
        return [{keys.blind(term) for keys in vocabularies} for term in index_terms(query)]

    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        kinds: Iterable[str] | None = None,
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The memories that best match ``query``, best first, each with a score in [0, 1].

        With ``as_of``, the versions valid at that time answer ("where did she live in
        September?"). A query of only stopwords matches nothing.
        """
        tenant_id = self._tenant_id()
        query = _text(query, self._memory._max_text, "query")
        top_k = _top_k(top_k)
        checked_kinds = _kinds(kinds)
        when = None if as_of is None else _aware(as_of, "as_of")
        capabilities = self._memory.capabilities
        if not capabilities.text_search:
            raise MemoryCapabilityError("text_search")
        if when is not None and not capabilities.time_travel:
            raise MemoryCapabilityError("time_travel")
        groups = self._query_groups(tenant_id, query)
        if not groups:
            return []
        where = self._filter(tenant_id, kinds=checked_kinds, as_of=when)
        found = self._memory._driver.search(where, groups, top_k=top_k)
        return [Hit(record=self._open_row(row), score=score) for row, score in found]

    def context(self, query: str, *, top_k: int = 5, max_chars: int | None = None) -> str:
        """One untrusted-data block for a user message: pinned memories first, then matches.

        Every memory's text is escaped so nothing inside it can close the block or forge an
        entry; with ``max_chars`` whole entries are dropped from the end to fit.
        """
        tenant_id = self._tenant_id()
        if max_chars is not None and (
            not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1
        ):
            raise InvalidInputError("max_chars must be a positive whole number.")
        hits = self.recall(query, top_k=top_k)
        pinned_rows = self._memory._driver.list(
            self._filter(tenant_id, pinned=True), limit=MAX_PINNED_IN_CONTEXT
        )
        records = [self._open_row(row) for row in pinned_rows]
        seen = {record.id for record in records}
        records += [hit.record for hit in hits if hit.record.id not in seen]
        entries = [
            ContextEntry(
                id=record.id,
                kind=record.kind.value,
                text=record.text,
                recorded_at=record.recorded_at,
                valid_from=record.valid_from,
                valid_to=record.valid_to,
                trust=record.trust.value,
                source=record.source.kind,
                pinned=record.pinned,
            )
            for record in records
        ]
        try:
            return render_context(entries, max_chars=max_chars)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None


def _encode_cursor(row: StoredRow) -> str:
    raw = json.dumps([row.created_at.isoformat(), row.memory_id]).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: object) -> tuple[datetime, str]:
    try:
        if not isinstance(cursor, str):
            raise TypeError
        created, memory_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        when = datetime.fromisoformat(created)
        if when.tzinfo is None or not _MEMORY_ID.fullmatch(memory_id):
            raise ValueError
    except (TypeError, ValueError, UnicodeError):
        raise InvalidInputError(
            "The cursor is not one that list() returned; pass next_cursor back unchanged."
        ) from None
    return when, memory_id
