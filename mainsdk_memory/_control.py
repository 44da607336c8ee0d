"""Sealed control records: agent grants, kill switches, limits and pending forget requests.

They live in the memory store beside the memories (they are tenant data too), sealed under the
tenant's key with associated data binding tenant, app and the record's key, so the store can
neither read nor swap them. The key store's anchors hold the digest of each live record (ADR
0047), so the store cannot delete one (a kill switch, a guardian's policy), bring back one
that was removed or replaced (a revoked grant) or keep an old form: each read that finds
anything but the anchored form raises :class:`IntegrityError` (fail closed) and a record
with no anchor and no row simply does not exist.

What was opened is kept (ADR 0096), keyed by tenant, record key and the SHA-256 of the sealed
form it was opened from, on a driver with ``control_generation`` (bytes it rewrites in the
transaction of every control record's write; the db driver). A read first reads that
generation (once per call's unit of work): if it moved, everything kept of the tenant is
dropped. It then reads the anchors (the key store, which every process on the store shares
and which every write of a control record goes through): when each record under the key or
prefix has exactly one accepted form, and that form was opened here since, the answer comes
from what was kept and the records are not read. A record written, replaced or removed
anywhere (another process, another ``Memory``) has another form or none in the anchors, so
the next read reads the store; nothing the memory store says can keep an old answer alive,
since the anchors decide, and a record written through the driver behind the core's back
moves the generation, so it is read (and caught) as before. A driver without
``control_generation`` (the local one) is read on every call, as before.

:meth:`ControlStore.put` is never called inside a call's unit of work: the anchors accept
the new form once the store's write is done, which inside a unit would be before its commit.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from mainsdk_memory._errors import IntegrityError, SealError
from mainsdk_memory._guard import GuardedStore, StaleSnapshot
from mainsdk_memory.drivers import TENANT_SUBJECT, Driver
from mainsdk_memory.keys import KeyStore, SubjectKeys, associated_data
from mainsdk_memory.keys._anchors import digest


def _tampered(key: str) -> IntegrityError:
    return IntegrityError(
        None,
        f"The control record {key!r} (an agent's grant, kill switch or limits, a guardian's "
        "policy, a forget request or a receipt) in the memory store disagrees with the key "
        "store: it was deleted, replayed or edited by someone who can write the store. "
        "Nothing was decided on it. Restore the store from a backup taken together with the "
        "key store, or write the record again.",
    )


__all__ = ["ControlStore"]

#: How many opened control records one ``Memory`` keeps (least recently used go first).
_KEPT = 4096

_Anchored = dict[str, frozenset[bytes | None]]


class ControlStore:
    """Reads and writes sealed control records through the driver."""

    def __init__(
        self, driver: Driver, keystore: KeyStore, app: str, store: GuardedStore | None = None
    ) -> None:
        self._driver = driver
        self._store = store
        self._seen: dict[str, bytes | None] = {}  # tenant -> generation of what is kept
        # (tenant, prefix, exact) read from the store with no record at all, since _seen.
        self._empty: set[tuple[str, str, bool]] = set()
        self._keystore = keystore
        self._app = app
        # (tenant, key, digest of the sealed form) -> the opened document's JSON.
        self._opened: OrderedDict[tuple[str, str, bytes], bytes] = OrderedDict()
        self._opened_lock = threading.Lock()
        self._scopes: dict[str, str] = {}

    def _keys(self, tenant: str) -> SubjectKeys:
        keys = self._keystore.subject_keys(tenant, self._app, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys

    def _ad(self, tenant: str, key: str) -> bytes:
        return associated_data("mainsdk-memory/v1/control", tenant, self._app, key)

    def _scope(self, tenant: str) -> str:
        scope = self._scopes.get(tenant)
        if scope is None:
            scope = self._scopes[tenant] = self._keystore.anchor_scope(tenant, self._app)
        return scope

    def _keep(self, tenant: str, key: str, form: bytes, plaintext: bytes) -> None:
        with self._opened_lock:
            self._opened[(tenant, key, form)] = plaintext
            self._opened.move_to_end((tenant, key, form))
            while len(self._opened) > _KEPT:
                self._opened.popitem(last=False)

    def _anchored(self, tenant: str, prefix: str, *, exact: bool) -> _Anchored:
        """The accepted forms of the records under ``prefix`` (``exact``: ``prefix`` only)."""
        found = self._keystore.anchors.control(self._scope(tenant), prefix)
        return {key: forms for key, forms in found.items() if key == prefix} if exact else found

    def _kept(self, tenant: str, anchored: _Anchored) -> list[tuple[str, dict[str, Any]]] | None:
        """The documents of ``anchored`` from what was opened here, or ``None`` if one of
        them has no single accepted form (a write in flight) or was not opened here in it."""
        documents = []
        with self._opened_lock:
            for key in sorted(anchored):
                forms = anchored[key]
                form = next(iter(forms)) if len(forms) == 1 else None
                plaintext = None if form is None else self._opened.get((tenant, key, form))
                if plaintext is None:
                    return None
                assert form is not None  # noqa: S101 - plaintext implies a form
                self._opened.move_to_end((tenant, key, form))
                documents.append((key, plaintext))
        return [(key, json.loads(plaintext)) for key, plaintext in documents]

    def put(self, tenant: str, key: str, document: dict[str, Any] | None) -> None:
        """Store ``document`` under ``key`` (``None`` deletes it), anchored in the key store.

        Writers of control records take turns (a lock beside the anchors, across processes),
        so the anchors end with the form the store ends with. Until the store's write is done
        both forms are accepted; an interrupted write leaves both accepted until the record
        is written again.
        """
        scope = self._scope(tenant)
        anchors = self._keystore.anchors
        sealed = None
        if document is not None:
            sealed = self._keys(tenant).seal(
                json.dumps(document).encode(), self._ad(tenant, key)
            )
        form = None if sealed is None else digest(sealed)
        with anchors.control_lock(exclusive=True):
            anchors.control_begin(scope, key, form)
            self._driver.control_put(tenant, self._app, key, sealed)
            anchors.control_commit(scope, key, form)

    def _open(
        self, tenant: str, key: str, sealed: bytes, forms: frozenset[bytes | None] | None
    ) -> dict[str, Any]:
        """The document ``sealed`` holds, kept when it is the one form the anchors accept."""
        plaintext = self._keys(tenant).open(sealed, self._ad(tenant, key))
        document = json.loads(plaintext)
        if not isinstance(document, dict):
            raise SealError
        form = digest(sealed)
        if forms == frozenset({form}):
            self._keep(tenant, key, form, plaintext)
        return document

    @staticmethod
    def _agrees(sealed: bytes | None, accepted: frozenset[bytes | None] | None) -> bool:
        """Whether ``sealed`` (``None``: no record) is a form the anchors accept."""
        if accepted is None:  # no anchor: the record does not exist
            return sealed is None
        return (None if sealed is None else digest(sealed)) in accepted

    def _read(
        self, tenant: str, prefix: str
    ) -> tuple[dict[str, bytes], dict[str, frozenset[bytes | None]]]:
        stored = {
            key: sealed
            for key, sealed in self._driver.control_list(tenant, self._app, prefix)
            if key.startswith(prefix)  # the core checks what the driver returns (ADR 0026)
        }
        return stored, self._keystore.anchors.control(self._scope(tenant), prefix)

    def _checked_read(
        self, tenant: str, prefix: str, *, exact: bool
    ) -> list[tuple[str, bytes | None, frozenset[bytes | None] | None]]:
        """The stored form of each record under ``prefix`` (``exact``: only ``prefix`` itself),
        each one a form the anchors accept; a read that raced a writer is read again, after
        the writer is done, before anything is called tampering."""
        for attempt in range(2):
            if exact:
                sealed = self._driver.control_get(tenant, self._app, prefix)
                stored = {} if sealed is None else {prefix: sealed}
                anchored = {
                    key: forms
                    for key, forms in self._keystore.anchors.control(
                        self._scope(tenant), prefix
                    ).items()
                    if key == prefix
                }
            else:
                stored, anchored = self._read(tenant, prefix)
            keys = sorted(stored.keys() | anchored.keys())
            bad = [key for key in keys if not self._agrees(stored.get(key), anchored.get(key))]
            if not bad:
                return [(key, stored.get(key), anchored.get(key)) for key in keys]
            if attempt:
                raise _tampered(bad[0])
            if self._store is not None and self._store.in_snapshot():
                raise StaleSnapshot  # a writer may be in flight: read again outside it
            with self._keystore.anchors.control_lock(exclusive=False):
                pass  # wait for a writer in flight, then read again
        raise AssertionError("unreachable")  # pragma: no cover

    def _current(self, tenant: str) -> bool:
        """Whether what is kept of ``tenant`` may be used: the driver tells when its control
        records changed, and what was kept before the last change is dropped here."""
        read: Any = getattr(self._driver, "control_generation", None)
        if not callable(read):
            return False
        memo = None if self._store is None else self._store.memo()
        noted = ("control-generation", tenant)
        if memo is not None and noted in memo:
            generation = memo[noted]
        else:
            generation = read(tenant, self._app)
            if memo is not None:
                memo[noted] = generation
        if not (generation is None or isinstance(generation, bytes)):
            return False
        with self._opened_lock:
            if tenant not in self._seen or self._seen[tenant] != generation:
                for stale in [entry for entry in self._opened if entry[0] == tenant]:
                    del self._opened[stale]
                self._empty = {entry for entry in self._empty if entry[0] != tenant}
                self._seen[tenant] = generation
        return True

    def _documents(
        self, tenant: str, prefix: str, *, exact: bool
    ) -> list[tuple[str, dict[str, Any]]]:
        """The documents under ``prefix`` (``exact``: ``prefix`` only), sorted by key: from
        what was opened here when the generation and the anchors allow it (module
        docstring), else read."""
        keep = self._current(tenant)
        if keep:
            anchored = self._anchored(tenant, prefix, exact=exact)
            if anchored:
                kept = self._kept(tenant, anchored)
                if kept is not None:
                    return kept
            elif (tenant, prefix, exact) in self._empty:
                return []  # no record, and none written through the driver since
        found = self._checked_read(tenant, prefix, exact=exact)
        if keep and not found:
            with self._opened_lock:
                if len(self._empty) >= _KEPT:
                    self._empty.clear()
                self._empty.add((tenant, prefix, exact))
        return [
            (key, self._open(tenant, key, sealed, forms if keep else None))
            for key, sealed, forms in found
            if sealed is not None
        ]

    def get(self, tenant: str, key: str) -> dict[str, Any] | None:
        """The document under ``key``, or ``None``."""
        for found, document in self._documents(tenant, key, exact=True):
            if found == key:
                return document
        return None

    def list(self, tenant: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """Every document whose key starts with ``prefix``, sorted by key."""
        return self._documents(tenant, prefix, exact=False)
