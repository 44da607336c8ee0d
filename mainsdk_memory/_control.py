"""Sealed control records: agent grants, kill switches, limits and pending forget requests.

They live in the memory store beside the memories (they are tenant data too), sealed under the
tenant's key with associated data binding tenant, app and the record's key, so the store can
neither read nor swap them. The key store's anchors hold the digest of each live record (ADR
0047), so the store cannot delete one (a kill switch, a guardian's policy), bring back one
that was removed or replaced (a revoked grant) or keep an old form: each read that finds
anything but the anchored form raises :class:`IntegrityError` (fail closed) and a record
with no anchor and no row simply does not exist.
"""

from __future__ import annotations

import json
from typing import Any

from mainsdk_memory._errors import IntegrityError, SealError
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


class ControlStore:
    """Reads and writes sealed control records through the driver."""

    def __init__(self, driver: Driver, keystore: KeyStore, app: str) -> None:
        self._driver = driver
        self._keystore = keystore
        self._app = app

    def _keys(self, tenant: str) -> SubjectKeys:
        keys = self._keystore.subject_keys(tenant, self._app, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys

    def _ad(self, tenant: str, key: str) -> bytes:
        return associated_data("mainsdk-memory/v1/control", tenant, self._app, key)

    def _scope(self, tenant: str) -> str:
        return self._keystore.anchor_scope(tenant, self._app)

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

    def _open(self, tenant: str, key: str, sealed: bytes) -> dict[str, Any]:
        document = json.loads(self._keys(tenant).open(sealed, self._ad(tenant, key)))
        if not isinstance(document, dict):
            raise SealError
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
    ) -> list[tuple[str, bytes | None]]:
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
                return [(key, stored.get(key)) for key in keys]
            if attempt:
                raise _tampered(bad[0])
            with self._keystore.anchors.control_lock(exclusive=False):
                pass  # wait for a writer in flight, then read again
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, tenant: str, key: str) -> dict[str, Any] | None:
        """The document under ``key``, or ``None``."""
        for found, sealed in self._checked_read(tenant, key, exact=True):
            if found == key and sealed is not None:
                return self._open(tenant, key, sealed)
        return None

    def list(self, tenant: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """Every document whose key starts with ``prefix``, sorted by key."""
        return [
            (key, self._open(tenant, key, sealed))
            for key, sealed in self._checked_read(tenant, prefix, exact=False)
            if sealed is not None
        ]
