"""The core's services: one object that ``Memory``, the handles and ``Privacy`` all hold.

``Memory`` is the public recipe; everything it builds when a store opens lives here: the
guarded driver, the key store, the sealed control records, the agents' records and write
counts, the opened-vector and injection-verdict caches, the clock, the audit and the checked
options. Nothing in it is public API; :func:`mainsdk_memory._memory.services_of` hands it to
the project's own benchmarks and tests.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory._agents import AgentControl
from mainsdk_memory._auditing import Auditor
from mainsdk_memory._control import ControlStore
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._guard import GuardedStore
from mainsdk_memory._options import DefaultEmbedder, Settings
from mainsdk_memory._residency import region_keys
from mainsdk_memory._signals import SignalBook
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory._walls import Verdicts
from mainsdk_memory.drivers import TENANT_SUBJECT, Driver, EraseResult
from mainsdk_memory.keys import KeyStore, SubjectKeys

__all__ = ["Services"]


class Services:
    """What one open store runs on (see the module docstring)."""

    def __init__(self, driver: Driver, keys: KeyStore, settings: Settings) -> None:
        self.settings = settings
        self.app = settings.app
        self.driver = driver
        """The driver itself (for its name and raw storage)."""
        self.store = GuardedStore(driver)
        """The driver as the core reads it: every returned row is filtered again."""
        self.keys = keys
        self.control = ControlStore(driver, keys, settings.app, self.store)
        self.agents = AgentControl(self.control, settings.limits, self.now, self._count_write)
        self.audit = Auditor(settings.audit, settings.app, self.now)
        self.verdicts = Verdicts()
        embedder = settings.embedder  # resolved by Memory before (resolve_embedder)
        self.vectors: VectorIndex | None = (
            None
            if embedder is None or isinstance(embedder, DefaultEmbedder)
            else VectorIndex(embedder)
        )
        self._schemas: dict[str, type[BaseModel]] = {}
        self._scopes: dict[str, str] = {}
        self.signals = SignalBook(driver, keys, settings.app, settings.signals, self.anchor_scope)
        """The sealed ranking signals of each subject (uses, feedback)."""
        for schema in settings.schemas:
            self.register_schema(schema)

    # -- time -----------------------------------------------------------------------------

    def now(self) -> datetime:
        """The clock's time (checked: timezone-aware)."""
        return validate.aware(self.settings.clock(), "The clock's time")

    def retention_cutoffs(self) -> tuple[tuple[str, datetime], ...]:
        """``(label, cutoff)``: memories with ``label`` created before ``cutoff`` expired."""
        now = self.now()
        return tuple(sorted((label, now - life) for label, life in self.settings.retention.items()))

    # -- keys -----------------------------------------------------------------------------

    def subject_keys(self, tenant_id: str, subject: str, *, create: bool) -> SubjectKeys | None:
        """The keys of a person (by id) or of the tenant (:data:`TENANT_SUBJECT`)."""
        name = subject if subject == TENANT_SUBJECT else f"person:{subject}"
        return self.keys.subject_keys(tenant_id, self.app, name, create=create)

    def anchor_scope(self, tenant_id: str) -> str:
        """The key store's anchors' name of this tenant and app (ADR 0047)."""
        scope = self._scopes.get(tenant_id)
        if scope is None:
            scope = self._scopes[tenant_id] = self.keys.anchor_scope(tenant_id, self.app)
        return scope

    def anchor_subject(self, tenant_id: str, subject: str) -> str:
        """The anchors' name of a person (by id) or of the tenant (:data:`TENANT_SUBJECT`)."""
        name = subject if subject == TENANT_SUBJECT else f"person:{subject}"
        return self.keys.anchor_name(tenant_id, self.app, name)

    def _count_write(self, tenant_id: str, agent: str, per_minute: int, now: datetime) -> bool:
        """Count one of ``agent``'s writes unless it made ``per_minute`` in the last minute."""
        scope = f"{self.anchor_scope(tenant_id)}/{agent}"
        return self.keys.anchors.count_write(scope, per_minute, now.timestamp())

    def pseudonym_keys(self, tenant_id: str, person: str) -> SubjectKeys:
        """The key that names a person to the driver; never creates one (ADR 0039).

        A person who was erased has a pseudonym key of their own, replaced by each erase, so
        the rows of one life cannot be linked to those of the next; until a first erase the
        tenant's key names them, as it always did, so stores written before keep their names.
        """
        own = self.keys.subject_keys(tenant_id, self.app, f"pseudonym:{person}", create=False)
        if own is not None:
            return own
        keys = self.subject_keys(tenant_id, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys

    def destroy_person_keys(self, tenant_id: str, person: str) -> bool:
        """Destroy a person's secret and replace their pseudonym key (ADR 0039).

        Every open handle of the secret, in any process, stops sealing and opening; the person
        is named by a fresh pseudonym from now on. Returns whether a secret existed.
        """
        destroyed = self.keys.destroy_subject(tenant_id, self.app, f"person:{person}")
        self.keys.destroy_subject(tenant_id, self.app, f"pseudonym:{person}")
        self.keys.subject_keys(tenant_id, self.app, f"pseudonym:{person}", create=True)
        return destroyed

    def issue_receipt(self, tenant_id: str, claims: dict[str, Any]) -> _receipts.Receipt:
        """Sign ``claims`` (ids only) and append the receipt to the tenant's receipts log."""
        # The tenant's region's signing key (residency: each region's key store signs its own).
        signing = region_keys(self.keys, tenant_id).signing_key
        receipt = _receipts.issue(claims, signing, now=self.now())
        # Wall-clock nanoseconds order the log even when receipts share a second.
        key = f"receipt/{time.time_ns():020d}-{receipt.id}"
        self.control.put(tenant_id, key, {"token": receipt.token, "claims": dict(receipt.claims)})
        return receipt

    # -- typed data -----------------------------------------------------------------------

    def register_schema(self, model: type[BaseModel]) -> None:
        """Let typed facts of ``model`` come back as instances of it."""
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise InvalidInputError("A schema is a pydantic model class.")
        self._schemas[validate.type_name(model)] = model

    def data_model(self, name: str) -> type[BaseModel] | None:
        """The model a stored ``data_type`` names, if registered or already imported."""
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

    def erase_memory(
        self, tenant_id: str, subject: str, memory_id: str, *, person: str | None = None
    ) -> EraseResult:
        """Erase every version of one memory: first its anchor in the key store (with its
        salt, so no copy of it anywhere opens again, even if what follows is interrupted),
        then its rows, its opened vectors here, and its ranking signals.

        ``subject`` is the rows' (a pseudonym, or the tenant); ``person`` names whose
        pseudonym it is, when known, so their sealed signals can be opened (a retention
        sweep knows only the pseudonym: the entry goes at a later pruning, ``_signals``)."""
        self.keys.anchors.drop(self.anchor_scope(tenant_id), memory_id)
        # After the anchor: a use or feedback racing this erase is no longer recorded.
        result = self.store.erase(tenant_id, self.app, subject, memory_id)
        if self.vectors is not None:
            self.vectors.discard(tenant_id, self.app, subject, memory_id)
        # After the rows: a signals write that fails leaves an entry a later pruning drops,
        # never a memory that is unopenable yet still stored.
        owner = TENANT_SUBJECT if subject == TENANT_SUBJECT else person
        signal_keys = None if owner is None else self.subject_keys(tenant_id, owner, create=False)
        if signal_keys is not None:
            self.signals.discard(tenant_id, subject, signal_keys, memory_id, self.now())
        return result

    def close(self) -> None:
        """Write the uses counted and not written yet, then close the driver and this
        handle's connection to the anchors."""
        try:
            self.signals.flush(self.now())
        finally:
            self.driver.close()
            self.keys.anchors.close()

