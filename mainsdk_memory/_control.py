"""Sealed control records: agent grants, kill switches, limits and pending forget requests.

They live in the memory store beside the memories (they are tenant data too), sealed under the
tenant's key with associated data binding tenant, app and the record's key, so the store can
neither read nor swap them.
"""

from __future__ import annotations

import json
from typing import Any

from mainsdk_memory._errors import SealError
from mainsdk_memory.drivers import TENANT_SUBJECT, Driver
from mainsdk_memory.keys import KeyStore, SubjectKeys, associated_data

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

    def put(self, tenant: str, key: str, document: dict[str, Any] | None) -> None:
        """Store ``document`` under ``key`` (``None`` deletes it)."""
        if document is None:
            self._driver.control_put(tenant, self._app, key, None)
            return
        sealed = self._keys(tenant).seal(json.dumps(document).encode(), self._ad(tenant, key))
        self._driver.control_put(tenant, self._app, key, sealed)

    def _open(self, tenant: str, key: str, sealed: bytes) -> dict[str, Any]:
        document = json.loads(self._keys(tenant).open(sealed, self._ad(tenant, key)))
        if not isinstance(document, dict):
            raise SealError
        return document

    def get(self, tenant: str, key: str) -> dict[str, Any] | None:
        """The document under ``key``, or ``None``."""
        sealed = self._driver.control_get(tenant, self._app, key)
        return None if sealed is None else self._open(tenant, key, sealed)

    def list(self, tenant: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """Every document whose key starts with ``prefix``, sorted by key."""
        return [
            (key, self._open(tenant, key, sealed))
            for key, sealed in sorted(self._driver.control_list(tenant, self._app, prefix))
            if key.startswith(prefix)  # the core checks what the driver returns (ADR 0026)
        ]
