"""``Memory``, the recipe: opening a store, administering agents, and handing out handles.

Every call resolves the tenant from :func:`mainsdk_memory.tenant.current`. A handle from
:meth:`Memory.acting_for` reads and writes as one agent for one person; a handle from
:meth:`Memory.person` is the person themself (confirming, approving, forgetting at once).
The handles live in :mod:`mainsdk_memory._scoped`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Unpack

from pydantic import BaseModel

from mainsdk_memory import _reindex
from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._agents import ReadPolicy
from mainsdk_memory._caller import PERSON_AGENT, Caller
from mainsdk_memory._episodes import sweep_expired_episodes
from mainsdk_memory._errors import (
    ConfigurationError,
    ErasePolicyError,
    InvalidInputError,
    MemoryCapabilityError,
)
from mainsdk_memory._options import Options, Settings, resolve_embedder, settle
from mainsdk_memory._privacy import Privacy
from mainsdk_memory._records import AgentLimits, MemoryRecord
from mainsdk_memory._reindex import ReindexReport
from mainsdk_memory._residency import Residency, refuse_keys_inside, residency_of
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory._services import Services
from mainsdk_memory._shared import confirm_shared
from mainsdk_memory._working import sweep_expired_working
from mainsdk_memory.audit import AuditSink
from mainsdk_memory.drivers import Capabilities, Driver, VectorDriver
from mainsdk_memory.drivers import open_driver as _open_driver
from mainsdk_memory.embeddings import Embedder
from mainsdk_memory.injection import Detector
from mainsdk_memory.keys import KeyStore

__all__ = ["Memory", "services_of"]


class Memory:
    """A memory store for one app, sealed with one project key store.

    Open it with :meth:`open`, set the tenant with ``tenant.use(...)``, and act for a person
    with :meth:`acting_for` (as an agent) or :meth:`person` (as the person themself).
    """

    def __init__(
        self, driver: Driver, keystore: KeyStore, *, app: str, **options: Unpack[Options]
    ) -> None:
        """A memory over an open ``driver`` and ``keystore``; see :meth:`open` for the options.

        Prefer :meth:`open`, which also opens the driver by URL and the key store by path.
        """
        self._start(driver, keystore, settle(app, options))

    def _start(self, driver: Driver, keystore: KeyStore, settings: Settings) -> None:
        if driver.capabilities.erase != "hard" and settings.labels != frozenset({"none"}):
            raise ErasePolicyError
        stores_vectors = driver.capabilities.vectors and isinstance(driver, VectorDriver)
        settings = resolve_embedder(settings, stores_vectors)
        if settings.embedder is not None and not stores_vectors:
            raise MemoryCapabilityError(
                "vectors",
                f"The {driver.name!r} driver does not store vectors, so it cannot be "
                "opened with an embedder. Open it without one, or use a driver that "
                "declares vectors (local, sqlite, postgresql).",
            )
        self._services = Services(driver, keystore, settings)
        self.privacy = Privacy(self._services)
        """Erase, export, children, the receipts log and procedures: :class:`Privacy`."""

    @classmethod
    def open(
        cls,
        url: str | Residency,
        *,
        keys: str | os.PathLike[str],
        app: str,
        **options: Unpack[Options],
    ) -> Memory:
        """Open the store at ``url`` (``local:PATH``, …) sealed with the key store at ``keys``.

        ``regions:PATH`` (or a :class:`~mainsdk_memory.Residency`) opens one store per region
        and places each tenant in one (docs/scaling.md, "Residency"); ``keys`` is then the
        key store of the regions that name none of their own.

        The key store is opened first, so a missing one fails before anything is created.
        The options (:class:`~mainsdk_memory.Options`, every one optional):
        ``schemas`` lists the pydantic models used as ``data=``, so typed facts come back as
        those models. ``clock`` (returning aware datetimes) replaces the system time.
        ``labels`` declares the only labels this store may hold (default: any); a driver that
        can only soft-delete is refused (MAIN-MEM-0020) unless that is exactly ``["none"]``.
        ``detector`` replaces the injection check (default: :data:`DEFAULT_DETECTOR`);
        ``audit`` receives one event per call (default: the ``mainsdk_memory.audit`` logger);
        ``limits`` are the default limits of every agent. ``retention`` caps the lifetime of
        memories per label (``{"personal": timedelta(days=365)}``): an expired memory is never
        returned, and :meth:`enforce_retention` erases it; memories about a child are capped
        at 90 days whatever the configuration. ``max_text_chars`` is the longest text
        accepted (default 8,000). ``embedder`` (see :mod:`mainsdk_memory.embeddings`) gives
        every new version a sealed embedding for vector and hybrid recall: left out, it is
        :class:`~mainsdk_memory.embeddings.StaticEmbedder` on a driver that stores vectors;
        ``None`` makes recall BM25 only. ``language`` (default ``"english"``) is the one
        memories and queries are stemmed in unless a call names one. ``signals``
        (:class:`~mainsdk_memory.RankingSignals`) sets how far a memory's kind, uses, pin and
        feedback move its recall score (default: the weights and half-lives in
        docs/concepts.md). ``formation`` (default ``True``) is whether ``remember`` forms a
        text against the memories held (docs/concepts.md, "Formation"); ``False`` stores every
        text as it is unless a call passes ``formation=True``. An unknown option raises
        :class:`ConfigurationError`.
        """
        settings = settle(app, options)  # every option is checked before anything is opened
        if not isinstance(keys, str | os.PathLike) or not str(keys):
            raise ConfigurationError(
                "keys is the path of the key store folder (memory keys init --keys PATH)."
            )
        residency = residency_of(url)  # a regions: file is read and checked whole first
        if residency is None:
            keystore = KeyStore.open(keys, allow_readable=settings.allow_readable_keys)
            driver = _open_driver(url)  # type: ignore[arg-type] # open_driver checks it is a str
        else:  # a router over the regions' stores, and one over their key stores
            readable = settings.allow_readable_keys
            driver, keystore = residency.open(keys=keys, allow_readable=readable)
        try:
            refuse_keys_inside(driver, keys)
            memory = cls.__new__(cls)
            memory._start(driver, keystore, settings)  # the options were checked once, above
            return memory
        except BaseException:
            driver.close()
            raise

    def __repr__(self) -> str:
        return f"<Memory app={self.app!r} driver={self.driver.name!r}>"

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Write the ranking uses counted and not written yet, and close the driver."""
        self._services.close()

    @property
    def app(self) -> str:
        """The app name given to :meth:`open`."""
        return self._services.app

    @property
    def labels(self) -> frozenset[str] | None:
        """The only labels this store may hold, or ``None`` (any)."""
        return self._services.settings.labels

    @property
    def detector(self) -> Detector:
        """The injection check run at write and at recall."""
        return self._services.settings.detector

    @property
    def audit(self) -> AuditSink:
        """The sink that receives one audit event per call."""
        return self._services.audit.sink

    @audit.setter
    def audit(self, sink: AuditSink) -> None:
        self._services.audit.sink = sink

    @property
    def retention(self) -> Mapping[str, timedelta]:
        """The lifetime of memories per label (a child's capped at 90 days)."""
        return MappingProxyType(dict(self._services.settings.retention))

    @property
    def capabilities(self) -> Capabilities:
        """What the store's driver declares it can do."""
        return self._services.driver.capabilities

    @property
    def embedder(self) -> Embedder | None:
        """The store's embedder (the default one unless :meth:`open` named another), or
        ``None`` (opened with ``embedder=None``, or a driver without vectors: BM25 only)."""
        vectors = self._services.vectors
        return None if vectors is None else vectors.embedder

    @property
    def driver(self) -> Driver:
        """The storage driver (it holds only sealed, blinded rows)."""
        return self._services.driver

    def register_schema(self, model: type[BaseModel]) -> None:
        """Let typed facts of ``model`` come back as instances of it."""
        self._services.register_schema(model)

    # -- handles --------------------------------------------------------------------------

    def acting_for(self, person_id: str, *, agent: str, session: str | None = None) -> ScopedMemory:
        """A handle that reads and writes as ``agent`` for ``person_id`` in the current tenant.

        What the agent reads follows its grant (:meth:`grant`): ``"own"`` (the default) sees
        only what this agent wrote; ``"all"`` sees every agent's memories about the person.
        Its ``forget`` only asks: the person approves or rejects (:meth:`person`).
        """
        tenant_id = _tenant.current()
        return ScopedMemory(
            Caller(
                self._services,
                tenant_id,
                validate.person(person_id),
                validate.name(agent, "agent"),
                None if session is None else validate.name(session, "session"),
            )
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
            Caller(
                self._services,
                tenant_id,
                validate.person(person_id),
                PERSON_AGENT,
                None if session is None else validate.name(session, "session"),
            )
        )

    # -- administration of agents (in the current tenant) ------------------------------------

    def _admin(
        self, operation: str, agent: str, record: str, document: dict[str, Any] | None
    ) -> None:
        tenant_id = _tenant.current()
        with self._services.audit.call(tenant_id, operation, actor="app") as note:
            note.extra.append(("target_agent", agent))
            self._services.agents.put(tenant_id, agent, record, document)

    def grant(self, agent: str, *, read: ReadPolicy) -> None:
        """Let ``agent`` read ``"own"`` (only what it wrote) or ``"all"`` (every agent's)."""
        agent = validate.name(agent, "agent")
        if read not in ("own", "all"):
            raise InvalidInputError("read is 'own' or 'all'.")
        self._admin("grant", agent, "grant", {"read": read})

    def revoke(self, agent: str) -> None:
        """Remove ``agent``'s grant: it reads only what it wrote again."""
        agent = validate.name(agent, "agent")
        self._admin("revoke", agent, "grant", None)

    def kill(self, agent: str) -> None:
        """Turn on ``agent``'s kill switch: from its next call on it can neither read nor write."""
        agent = validate.name(agent, "agent")
        self._admin("kill", agent, "kill", {"killed": True})

    def revive(self, agent: str) -> None:
        """Turn ``agent``'s kill switch off."""
        agent = validate.name(agent, "agent")
        self._admin("revive", agent, "kill", None)

    def set_limits(self, agent: str, limits: AgentLimits | None) -> None:
        """Store ``agent``'s limits (``None``: back to the defaults given to :meth:`open`)."""
        agent = validate.name(agent, "agent")
        if limits is not None and not isinstance(limits, AgentLimits):
            raise InvalidInputError("limits must be an AgentLimits or None.")
        document = None if limits is None else limits.model_dump(mode="json")
        self._admin("limits", agent, "limits", document)

    def read_policy(self, agent: str) -> ReadPolicy:
        """What ``agent`` may read in the current tenant: ``"own"`` or ``"all"``."""
        tenant_id = _tenant.current()
        agents = self._services.agents
        return agents.read_policy(agents.records(tenant_id, validate.name(agent, "agent")))

    def is_killed(self, agent: str) -> bool:
        """Whether ``agent``'s kill switch is on in the current tenant."""
        tenant_id = _tenant.current()
        return "kill" in self._services.agents.records(tenant_id, validate.name(agent, "agent"))

    # -- shared memory ------------------------------------------------------------------

    def confirm_shared(self, memory_id: str) -> MemoryRecord:
        """Confirm a shared (``about="tenant"``) memory as the app: it leaves quarantine and
        reaches every person's agents in the current tenant.

        Shared memory reaches everyone, so no person confirms it (``PersonMemory.confirm``
        raises :class:`ScopeError`); the app decides, after checking what it says. Its text,
        kind, labels, data and source stay; ``confirmed_by`` is ``"@app"``. Confirming a
        confirmed memory changes nothing; a personal memory's id raises
        :class:`MemoryNotFound`. Audited with actor ``app`` (ADR 0045).
        """
        tenant_id = _tenant.current()
        ids = [memory_id] if isinstance(memory_id, str) else []
        with self._services.audit.call(
            tenant_id, "confirm-shared", actor="app", memory_ids=ids
        ):
            return confirm_shared(self._services, tenant_id, memory_id)

    # -- embeddings ---------------------------------------------------------------------

    def reindex(
        self,
        people: Iterable[str] = (),
        *,
        batch: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReindexReport:
        """Give every version of the current tenant's memories this store's embedder's vector.

        Versions written before an embedder was configured, or under another one, are opened,
        embedded and given a sealed vector (:meth:`VectorDriver.put_vector`); versions that
        hold this embedder's vector already are left alone, so a second run embeds nothing
        and an interrupted run resumes. Shared (``about="tenant"``) memories are always
        walked; a person's memories only when ``people`` names them, as no store or key store
        can turn a row's pseudonym back into the person's id (their memories are counted as
        ``unreached``). A memory that fails its integrity check or is damaged is skipped and
        counted; a child's memories are never embedded.
        ``progress(done, total)`` is called after each ``batch`` memories. Audited once,
        with counts only (actor ``app``).
        """
        tenant_id = _tenant.current()
        index = self._services.vectors
        if index is None:
            raise MemoryCapabilityError(
                "vectors",
                "This store was opened with embedder=None (or on a driver without vectors), so "
                "there is nothing to reindex with. Open it without embedder=None (the default "
                "embedder) or with another embedder, and call reindex again.",
            )
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise InvalidInputError("batch is a positive integer.")
        if isinstance(people, str):
            raise InvalidInputError("people is a list of person ids, not one string.")
        named = list(people)
        with self._services.audit.call(tenant_id, "reindex", actor="app") as note:
            report = _reindex.reindex(
                self._services, index, tenant_id, named, batch=batch, progress=progress
            )
            note.count = report.embedded
            note.extra.extend(
                [
                    ("embedder", report.embedder),
                    ("people", str(len(set(named)))),
                    ("scanned", str(report.scanned)),
                    ("skipped", str(
                        report.skipped_damaged + report.skipped_child + report.skipped_unseen
                    )),
                    ("unreached", str(report.unreached)),
                ]
            )
            return report

    # -- retention ----------------------------------------------------------------------

    def enforce_retention(self) -> list[_receipts.Receipt]:
        """Erase every memory of the current tenant and app that outlived its retention.

        One receipt per erased memory (op ``retention``), also kept in the receipts log.
        Expired memories are hidden from every read already; this removes their bytes. The
        episodic ledger's expired entries (every person's) are deleted too, counted in the
        audit event (``episodes``), and so are the working-memory values about a child last
        set longer ago than the ``child`` retention (``working``); they get no receipt.
        """
        tenant_id = _tenant.current()
        services = self._services
        app = services.app
        with services.audit.call(tenant_id, "retention", actor="app") as note:
            cutoffs = services.retention_cutoffs()
            issued = []
            # The key store's anchors decide (labels and creation time as written), not the
            # store's columns, which whoever writes the store could edit (ADR 0047).
            anchors = services.keys.anchors
            for subject, memory_id, label in anchors.expired(
                services.anchor_scope(tenant_id), cutoffs
            ):
                result = services.erase_memory(tenant_id, subject, memory_id)
                receipt = services.issue_receipt(
                    tenant_id,
                    {
                        "op": "retention",
                        "tenant": tenant_id,
                        "app": app,
                        "subject": subject,
                        "memory_id": memory_id,
                        "label": label,
                        "version_ids": [f"{memory_id}.v{v}" for v in result.versions],
                        "driver": services.driver.name,
                        "erase": result.mode,
                        "copies": "unopenable",
                    },
                )
                note.memory_ids.append(memory_id)
                issued.append(receipt)
            note.count = len(issued)
            note.extra.append(("episodes", str(sweep_expired_episodes(services, tenant_id))))
            note.extra.append(("working", str(sweep_expired_working(services, tenant_id))))
            return issued


def services_of(memory: Memory) -> Services:
    """The services behind ``memory``: for the project's own benchmarks and tests only.

    Not public API: what :class:`Services` holds may change in any release.
    """
    return memory._services
