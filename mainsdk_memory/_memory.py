"""``Memory``, the recipe: opening a store, administering agents, and handing out handles.

Every call resolves the tenant from :func:`mainsdk_memory.tenant.current`. A handle from
:meth:`Memory.acting_for` reads and writes as one agent for one person; a handle from
:meth:`Memory.person` is the person themself (confirming, approving, forgetting at once).
The handles live in :mod:`mainsdk_memory._scoped`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from mainsdk_memory import _validate as check
from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._control import ControlStore
from mainsdk_memory._errors import (
    ConfigurationError,
    ErasePolicyError,
    InvalidInputError,
    KeyStoreError,
    LimitExceededError,
    MemoryCapabilityError,
    MemoryConflictError,
    MemoryNotFound,
    MemorySDKError,
    SealError,
    StoreError,
)
from mainsdk_memory._privacy import Privacy
from mainsdk_memory._records import AgentLimits
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory.audit import AuditEvent, AuditSink, LoggingSink
from mainsdk_memory.drivers import TENANT_SUBJECT, Capabilities, Driver, VectorDriver
from mainsdk_memory.drivers import open_driver as _open_driver
from mainsdk_memory.embeddings import Embedder
from mainsdk_memory.injection import DEFAULT_DETECTOR, AnyOf, Detector, RuleDetector
from mainsdk_memory.keys import KeyStore, SubjectKeys

__all__ = ["Memory"]

ReadPolicy = Literal["own", "all"]


class _AuditNote:
    """What an audited call found out, filled in as it runs."""

    __slots__ = ("count", "extra", "memory_ids", "outcome", "person")

    def __init__(self, person: str | None, memory_ids: Iterable[str]) -> None:
        self.person = person
        self.memory_ids = list(memory_ids)
        self.outcome = "ok"
        self.count: int | None = None
        self.extra: list[tuple[str, str]] = []


def _outcome_of(error: MemorySDKError) -> str:
    if isinstance(error, MemoryNotFound):
        return "not-found"
    if isinstance(error, MemoryConflictError):
        return "conflict"
    if isinstance(error, ConfigurationError | StoreError | SealError | KeyStoreError):
        return "error"
    return "refused"


def _strip_models(detector: Detector) -> Detector | None:
    if isinstance(detector, AnyOf):
        kept = [part for part in map(_strip_models, detector.detectors) if part is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else AnyOf(*kept)
    if isinstance(detector, RuleDetector) or getattr(detector, "uses_model", True) is False:
        return detector
    return None  # a classifier, or a detector of unknown make: it may call a model


def _model_free(detector: Detector) -> Detector:
    """``detector`` without any part that may call a model (for children's memories).

    Rule detectors stay; classifiers go; a detector of unknown make counts as a model unless
    it says ``uses_model = False``; when nothing is left, the default rule detector runs.
    """
    return _strip_models(detector) or DEFAULT_DETECTOR


class _Verdicts:
    """The injection check's verdict per stored version, kept in this process.

    A version's text never changes, so a memory recalled again is not checked again: the
    key is ``(tenant, app, memory id, version, child)`` (ids only, never text) and the value
    the sorted rule codes it was flagged for (empty: clean). A write records the clean
    verdict of the check it just ran. At most ``size`` verdicts, least recently used go.
    """

    def __init__(self, size: int = 50_000) -> None:
        self._size = size
        self._verdicts: OrderedDict[tuple[str, str, str, int, bool], tuple[str, ...]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str, int, bool]) -> tuple[str, ...] | None:
        with self._lock:
            rules = self._verdicts.get(key)
            if rules is not None:
                self._verdicts.move_to_end(key)
            return rules

    def put(self, key: tuple[str, str, str, int, bool], rules: tuple[str, ...]) -> None:
        with self._lock:
            self._verdicts[key] = rules
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self._size:
                self._verdicts.popitem(last=False)


def _agent_key(agent: str, record: str) -> str:
    """The control key of one of an agent's records (all share the prefix ``agent/<name>/``,
    so one read fetches them together)."""
    return f"agent/{agent}/{record}"


class Memory:
    """A memory store for one app, sealed with one project key store.

    Open it with :meth:`open`, set the tenant with ``tenant.use(...)``, and act for a person
    with :meth:`acting_for` (as an agent) or :meth:`person` (as the person themself).
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
        detector: Detector | None = None,
        audit: AuditSink | None = None,
        limits: AgentLimits | None = None,
        retention: Mapping[str, timedelta] | None = None,
        max_text_chars: int = check.MAX_TEXT_CHARS,
        embedder: Embedder | None = None,
    ) -> None:
        self._driver = driver
        self._keys = keystore
        self.app = check.name(app, "app")
        self.labels: frozenset[str] | None = (
            None if labels is None else frozenset(check.labels(labels))
        )
        if driver.capabilities.erase != "hard" and self.labels != frozenset({"none"}):
            raise ErasePolicyError
        self._clock = clock or (lambda: datetime.now(UTC))
        self._max_text = max_text_chars
        self._schemas: dict[str, type[BaseModel]] = {}
        for schema in schemas:
            self.register_schema(schema)
        self.detector: Detector = detector if detector is not None else DEFAULT_DETECTOR
        if not callable(getattr(self.detector, "check", None)):
            raise ConfigurationError("detector must have a check(text) method (see injection).")
        self.audit: AuditSink = audit if audit is not None else LoggingSink()
        if limits is not None and not isinstance(limits, AgentLimits):
            raise ConfigurationError("limits must be an AgentLimits.")
        self._default_limits = limits or AgentLimits()
        self.retention: dict[str, timedelta] = {}
        for label, lifetime in (retention or {}).items():
            check.labels([label])
            if not isinstance(lifetime, timedelta) or lifetime <= timedelta(0):
                raise ConfigurationError("Each retention is a positive timedelta, per label.")
            self.retention[label] = lifetime
        child_cap = self.retention.get(check.CHILD_LABEL, check.CHILD_RETENTION)
        self.retention[check.CHILD_LABEL] = min(child_cap, check.CHILD_RETENTION)
        self._child_detector = _model_free(self.detector)
        self._verdicts = _Verdicts()
        self._control = ControlStore(driver, keystore, self.app)
        self._vectors: VectorIndex | None = None
        if embedder is not None:
            if not (driver.capabilities.vectors and isinstance(driver, VectorDriver)):
                raise MemoryCapabilityError(
                    "vectors",
                    f"The {driver.name!r} driver does not store vectors, so it cannot be "
                    "opened with an embedder. Open it without one, or use a driver that "
                    "declares vectors (local, sqlite, postgresql).",
                )
            self._vectors = VectorIndex(embedder)
        self.privacy = Privacy(self)
        """Erase, export, children, the receipts log and procedures: :class:`Privacy`."""
        self._writes: dict[tuple[str, str], deque[datetime]] = {}
        self._writes_lock = threading.Lock()

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
        detector: Detector | None = None,
        audit: AuditSink | None = None,
        limits: AgentLimits | None = None,
        retention: Mapping[str, timedelta] | None = None,
        embedder: Embedder | None = None,
    ) -> Memory:
        """Open the store at ``url`` (``local:PATH``, …) sealed with the key store at ``keys``.

        The key store is opened first, so a missing one fails before anything is created.
        ``schemas`` lists the pydantic models used as ``data=``, so typed facts come back as
        those models. ``clock`` (returning aware datetimes) replaces the system time.
        ``labels`` declares the only labels this store may hold (default: any); a driver that
        can only soft-delete is refused (MAIN-MEM-0020) unless that is exactly ``["none"]``.
        ``detector`` replaces the injection check (default: :data:`DEFAULT_DETECTOR`);
        ``audit`` receives one event per call (default: the ``mainsdk_memory.audit`` logger);
        ``limits`` are the default limits of every agent. ``retention`` caps the lifetime of
        memories per label (``{"personal": timedelta(days=365)}``): an expired memory is never
        returned, and :meth:`enforce_retention` erases it; memories about a child are capped
        at 90 days whatever the configuration. ``embedder`` (see
        :mod:`mainsdk_memory.embeddings`) gives every new version a sealed embedding and turns
        on vector and hybrid recall; without it recall is BM25 only.
        """
        app = check.name(app, "app")
        keystore = KeyStore.open(keys)
        driver = _open_driver(url)
        try:
            root = getattr(driver, "root", None)
            if isinstance(root, Path):
                key_path = Path(keys).resolve()
                store_path = root.resolve()
                if key_path.is_relative_to(store_path) or store_path.is_relative_to(key_path):
                    raise ConfigurationError(
                        "The key store must live outside the memory store (and the store "
                        "outside the key store), so a copy or backup of the store never "
                        "carries its keys."
                    )
            return cls(
                driver,
                keystore,
                app=app,
                schemas=schemas,
                clock=clock,
                labels=labels,
                detector=detector,
                audit=audit,
                limits=limits,
                retention=retention,
                embedder=embedder,
            )
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
    def embedder(self) -> Embedder | None:
        """The embedder given to :meth:`open`, or ``None`` (recall is BM25 only)."""
        return None if self._vectors is None else self._vectors.embedder

    @property
    def driver(self) -> Driver:
        """The storage driver (it holds only sealed, blinded rows)."""
        return self._driver

    def register_schema(self, model: type[BaseModel]) -> None:
        """Let typed facts of ``model`` come back as instances of it."""
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise InvalidInputError("A schema is a pydantic model class.")
        self._schemas[check.type_name(model)] = model

    # -- handles --------------------------------------------------------------------------

    def acting_for(self, person_id: str, *, agent: str, session: str | None = None) -> ScopedMemory:
        """A handle that reads and writes as ``agent`` for ``person_id`` in the current tenant.

        What the agent reads follows its grant (:meth:`grant`): ``"own"`` (the default) sees
        only what this agent wrote; ``"all"`` sees every agent's memories about the person.
        Its ``forget`` only asks: the person approves or rejects (:meth:`person`).
        """
        tenant_id = _tenant.current()
        return ScopedMemory(
            self,
            tenant_id,
            check.person(person_id),
            check.name(agent, "agent"),
            None if session is None else check.name(session, "session"),
        )

    def person(self, person_id: str, *, session: str | None = None) -> PersonMemory:
        """A handle for the person themself, in the current tenant.

        It sees everything held about the person (every agent, every session, quarantined
        memories included), writes with trust ``confirmed``, confirms memories, approves or
        rejects agents' forget requests, and forgets at once. Give it to the person's own
        interface, never to an agent.
        """
        tenant_id = _tenant.current()
        return PersonMemory(
            self,
            tenant_id,
            check.person(person_id),
            None,
            None if session is None else check.name(session, "session"),
        )

    # -- administration of agents (in the current tenant) ------------------------------------

    def _admin(self, operation: str, agent: str, key: str, document: dict[str, Any] | None) -> None:
        tenant_id = _tenant.current()
        with self._audited(tenant_id, operation, actor="app") as note:
            note.extra.append(("target_agent", agent))
            self._control.put(tenant_id, key, document)

    def grant(self, agent: str, *, read: ReadPolicy) -> None:
        """Let ``agent`` read ``"own"`` (only what it wrote) or ``"all"`` (every agent's)."""
        agent = check.name(agent, "agent")
        if read not in ("own", "all"):
            raise InvalidInputError("read is 'own' or 'all'.")
        self._admin("grant", agent, _agent_key(agent, "grant"), {"read": read})

    def revoke(self, agent: str) -> None:
        """Remove ``agent``'s grant: it reads only what it wrote again."""
        agent = check.name(agent, "agent")
        self._admin("revoke", agent, _agent_key(agent, "grant"), None)

    def kill(self, agent: str) -> None:
        """Turn on ``agent``'s kill switch: from its next call on it can neither read nor write."""
        agent = check.name(agent, "agent")
        self._admin("kill", agent, _agent_key(agent, "kill"), {"killed": True})

    def revive(self, agent: str) -> None:
        """Turn ``agent``'s kill switch off."""
        agent = check.name(agent, "agent")
        self._admin("revive", agent, _agent_key(agent, "kill"), None)

    def set_limits(self, agent: str, limits: AgentLimits | None) -> None:
        """Store ``agent``'s limits (``None``: back to the defaults given to :meth:`open`)."""
        agent = check.name(agent, "agent")
        if limits is not None and not isinstance(limits, AgentLimits):
            raise InvalidInputError("limits must be an AgentLimits or None.")
        document = None if limits is None else limits.model_dump(mode="json")
        self._admin("limits", agent, _agent_key(agent, "limits"), document)

    def read_policy(self, agent: str) -> ReadPolicy:
        """What ``agent`` may read in the current tenant: ``"own"`` or ``"all"``."""
        tenant_id = _tenant.current()
        return self._read_policy(tenant_id, check.name(agent, "agent"))

    def is_killed(self, agent: str) -> bool:
        """Whether ``agent``'s kill switch is on in the current tenant."""
        tenant_id = _tenant.current()
        return "kill" in self._agent_records(tenant_id, check.name(agent, "agent"))

    # -- retention ----------------------------------------------------------------------

    def _retention_cutoffs(self) -> tuple[tuple[str, datetime], ...]:
        now = self._now()
        return tuple(sorted((label, now - life) for label, life in self.retention.items()))

    def enforce_retention(self) -> list[_receipts.Receipt]:
        """Erase every memory of the current tenant and app that outlived its retention.

        One receipt per erased memory (op ``retention``), also kept in the receipts log.
        Expired memories are hidden from every read already; this removes their bytes.
        """
        tenant_id = _tenant.current()
        with self._audited(tenant_id, "retention", actor="app") as note:
            cutoffs = self._retention_cutoffs()
            issued = []
            for subject, memory_id in self._driver.expired(tenant_id, self.app, cutoffs):
                rows = self._driver.versions(tenant_id, self.app, (subject,), memory_id)
                if not rows:
                    continue
                label = next(
                    label
                    for label, cutoff in cutoffs
                    if label in rows[-1].labels and rows[-1].created_at < cutoff
                )
                result = self._driver.erase(tenant_id, self.app, subject, memory_id)
                if self._vectors is not None:
                    self._vectors.discard(tenant_id, self.app, subject, memory_id)
                receipt = _receipts.issue(
                    {
                        "op": "retention",
                        "tenant": tenant_id,
                        "app": self.app,
                        "subject": subject,
                        "memory_id": memory_id,
                        "label": label,
                        "version_ids": [f"{memory_id}.v{v}" for v in result.versions],
                        "driver": self._driver.name,
                        "erase": result.mode,
                    },
                    self._keys.signing_key,
                    now=self._now(),
                )
                self._log_receipt(tenant_id, receipt)
                note.memory_ids.append(memory_id)
                issued.append(receipt)
            note.count = len(issued)
            return issued

    def _log_receipt(self, tenant_id: str, receipt: _receipts.Receipt) -> None:
        """Append ``receipt`` to the tenant's receipts log (ids only, never rewritten)."""
        # Wall-clock nanoseconds order the log even when receipts share a second.
        key = f"receipt/{time.time_ns():020d}-{receipt.id}"
        self._control.put(tenant_id, key, {"token": receipt.token, "claims": dict(receipt.claims)})

    # -- used by the handles --------------------------------------------------------------

    def _agent_records(self, tenant_id: str, agent: str) -> dict[str, dict[str, Any]]:
        """The agent's stored ``grant``, ``kill`` and ``limits`` records, in one read."""
        prefix = _agent_key(agent, "")
        return {key[len(prefix) :]: doc for key, doc in self._control.list(tenant_id, prefix)}

    def _read_policy(
        self, tenant_id: str, agent: str, records: dict[str, dict[str, Any]] | None = None
    ) -> ReadPolicy:
        if records is None:
            records = self._agent_records(tenant_id, agent)
        return "all" if records.get("grant", {}).get("read") == "all" else "own"

    def _limits(
        self, tenant_id: str, agent: str, records: dict[str, dict[str, Any]] | None = None
    ) -> AgentLimits:
        if records is None:
            records = self._agent_records(tenant_id, agent)
        stored = records.get("limits")
        return self._default_limits if stored is None else AgentLimits.model_validate(stored)

    def _count_write(self, tenant_id: str, agent: str, per_minute: int | None) -> None:
        """Refuse a write over the agent's rate; otherwise count it (sliding minute)."""
        if per_minute is None:
            return
        now = self._now()
        with self._writes_lock:
            window = self._writes.setdefault((tenant_id, agent), deque())
            while window and window[0] <= now - timedelta(minutes=1):
                window.popleft()
            if len(window) >= per_minute:
                raise LimitExceededError(
                    f"The agent reached its limit of {per_minute} writes per minute; nothing "
                    "was stored. Wait, or raise the limit with memory.set_limits(...)."
                )
            window.append(now)

    def _now(self) -> datetime:
        return check.aware(self._clock(), "The clock's time")

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

    def _emit(self, event: AuditEvent) -> None:
        self.audit.emit(event)

    @contextmanager
    def _audited(
        self,
        tenant_id: str,
        operation: str,
        *,
        actor: str,
        person: str | None = None,
        memory_ids: Iterable[str] = (),
    ) -> Iterator[_AuditNote]:
        """Emit one audit event for the enclosed call: its outcome, ids and counts only."""
        note = _AuditNote(person, memory_ids)
        try:
            yield note
        except MemorySDKError as error:
            self._emit(
                AuditEvent(
                    at=self._now(),
                    tenant=tenant_id,
                    app=self.app,
                    operation=operation,
                    outcome=_outcome_of(error),
                    actor=actor,
                    person=note.person,
                    memory_ids=tuple(note.memory_ids),
                    code=",".join(getattr(error, "rules", ())) or error.code,
                    extra=tuple(note.extra),
                )
            )
            raise
        self._emit(
            AuditEvent(
                at=self._now(),
                tenant=tenant_id,
                app=self.app,
                operation=operation,
                outcome=note.outcome,
                actor=actor,
                person=note.person,
                memory_ids=tuple(note.memory_ids),
                count=note.count,
                extra=tuple(note.extra),
            )
        )
