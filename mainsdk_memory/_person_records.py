"""The sealed two-part record of working memory and the episodic ledger, and its retention sweep.

Working memory (``_working.py``) and the episodic ledger (``_episodes.py``) keep one control
record of the driver per value or entry, keyed under the person's pseudonym. Both write the
same record: a small retention header (labels and time) sealed under the tenant's key, so
``Memory.enforce_retention`` can judge a record without knowing whose it is, and the document
sealed under the person's key. :class:`PersonRecords` is that record, for one kind; the
functions below are what both kinds' calls share: the driver's capability, the audit, the
person's keys, the listing of a prefix and a child's consent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, cast

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import (
    InvalidInputError,
    MemoryCapabilityError,
    SealError,
)
from mainsdk_memory.drivers import TENANT_SUBJECT
from mainsdk_memory.keys import SubjectKeys, associated_data

if TYPE_CHECKING:
    from mainsdk_memory._services import Services

__all__ = [
    "PERSON_RECORD_BYTES",
    "PersonRecords",
    "expired",
    "person_keys",
    "require_person_records",
]

#: The largest control record a driver that declares ``person_records`` keeps.
PERSON_RECORD_BYTES: Final = 64 * 1024
_LAYOUT: Final = b"\x01"


# -- the record ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PersonRecords:
    """One kind of sealed per-person control record: where its keys live and the names its
    two envelopes are bound to.

    A record's value, byte by byte::

        0      1 byte    layout version, 0x01
        1      4 bytes   n, big-endian: the length of the header envelope
        5      n bytes   the retention header, ``{"labels": [...], "recorded_at": "..."}``
                         padded, sealed under the tenant's key (a retention sweep knows no
                         person's id, so it cannot open their key)
        5+n    …         the document (compact JSON) padded, sealed under the person's key

    The header's associated data is ``(header_ad, tenant, app, record key)``, the document's
    ``(document_ad, tenant, app, record key)``, so a record moved to another key does not
    open. Records already written depend on these names: never change one of a kind in use.
    """

    prefix: str
    """What every record key of this kind starts with: ``<prefix><pseudonym>/…``."""
    header_ad: str
    """The name in the header envelope's associated data."""
    document_ad: str
    """The name in the document envelope's associated data."""

    def of(self, pseudonym: str) -> str:
        """The key prefix of one person's records of this kind."""
        return f"{self.prefix}{pseudonym}/"

    def seal(
        self,
        caller: Caller,
        keys: SubjectKeys,
        key: str,
        document: dict[str, Any],
        *,
        labels: Sequence[str],
        recorded_at: str,
    ) -> bytes:
        """The value of the record ``key`` holding ``document`` (sealed under the person's
        ``keys``), with the retention header of ``labels`` and ``recorded_at`` (under the
        tenant's key, made if it is not yet)."""
        services = caller.services
        tenant_keys = services.subject_keys(caller.tenant, TENANT_SUBJECT, create=True)
        assert tenant_keys is not None  # noqa: S101 - create=True always returns keys
        header = _sealed_json(
            tenant_keys,
            {"labels": list(labels), "recorded_at": recorded_at},
            associated_data(self.header_ad, caller.tenant, caller.app, key),
        )
        body = _sealed_json(
            keys, document, associated_data(self.document_ad, caller.tenant, caller.app, key)
        )
        return _LAYOUT + len(header).to_bytes(4, "big") + header + body

    def open(
        self, caller: Caller, keys: SubjectKeys, key: str, value: bytes
    ) -> dict[str, Any] | None:
        """The document of the record ``key`` holding ``value``, opened with the person's
        ``keys`` (``None``: not this layout, or it does not open here)."""
        parts = _split(value)
        if parts is None:
            return None
        ad = associated_data(self.document_ad, caller.tenant, caller.app, key)
        return _opened_json(keys, parts[1], ad)

    def documents(self, caller: Caller, keys: SubjectKeys) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every record of this kind about the caller's person that opens, as ``(key,
        document)`` in key order (any agent's; expired ones not yet swept included)."""
        for key, value in sorted(caller.control_records(self.of(caller.pseudonym()))):
            document = self.open(caller, keys, key, value)
            if document is not None:
                yield key, document

    def erase(self, caller: Caller, pseudonym: str) -> list[str]:
        """Delete every record of this kind under ``pseudonym`` (a person's erase); their
        keys."""
        if pseudonym == TENANT_SUBJECT:
            return []
        erased = []
        for key, _ in caller.control_records(self.of(pseudonym)):
            caller.services.driver.control_put(caller.tenant, caller.app, key, None)
            erased.append(key)
        return erased

    def sweep(self, services: Services, tenant_id: str) -> int:
        """Delete every record of this kind of the tenant and app, any person's, whose
        labels' retention ran out, read from the header under the tenant's key; how many."""
        if not services.driver.capabilities.person_records:
            return 0
        keys = services.subject_keys(tenant_id, TENANT_SUBJECT, create=False)
        if keys is None:
            return 0
        cutoffs = services.retention_cutoffs()
        driver, app = services.driver, services.app
        erased = 0
        for key, value in driver.control_list(tenant_id, app, self.prefix):
            parts = _split(value) if key.startswith(self.prefix) else None
            ad = associated_data(self.header_ad, tenant_id, app, key)
            header = None if parts is None else _opened_json(keys, parts[0], ad)
            if header is None:
                continue  # not a record this key store can read: not ours to judge
            if expired(header.get("labels"), header.get("recorded_at"), cutoffs):
                driver.control_put(tenant_id, app, key, None)
                erased += 1
        return erased


def _sealed_json(keys: SubjectKeys, document: dict[str, Any], ad: bytes) -> bytes:
    from mainsdk_memory._sealing import pad  # _sealing imports the caller's services

    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return keys.seal(pad(text.encode("utf-8")), ad)


def _opened_json(keys: SubjectKeys, sealed: bytes, ad: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(keys.open(sealed, ad))
    except (SealError, ValueError, UnicodeError):
        return None  # moved, edited, or sealed under a destroyed key
    return cast(dict[str, Any], document) if isinstance(document, dict) else None


def _split(value: bytes) -> tuple[bytes, bytes] | None:
    """The header and document envelopes of a record's value (``None``: not this layout)."""
    if len(value) < 5 or value[:1] != _LAYOUT:
        return None
    size = int.from_bytes(value[1:5], "big")
    if len(value) < 5 + size:
        return None
    return value[5 : 5 + size], value[5 + size :]


# -- retention -----------------------------------------------------------------------------


def expired(labels: object, recorded: object, cutoffs: Sequence[tuple[str, datetime]]) -> bool:
    """Whether a record of ``labels`` (a list or tuple) recorded at ``recorded`` (ISO 8601
    text) outlived one of the retention ``cutoffs``. A record without labels (an adult's
    working-memory value) has no retention, nor one whose time does not read."""
    try:
        when = validate.aware(datetime.fromisoformat(str(recorded)), "at")
    except (ValueError, InvalidInputError):
        return False
    if not isinstance(labels, list | tuple):
        return False
    return any(label in labels and when < cutoff for label, cutoff in cutoffs)


# -- shared by the calls of both kinds -----------------------------------------------------


def require_person_records(caller: Caller) -> None:
    """Refuse the call on a driver that does not declare ``person_records``."""
    driver = caller.services.driver
    if not driver.capabilities.person_records:
        raise MemoryCapabilityError(
            "person_records",
            f"The {driver.name!r} driver does not declare person_records, so it cannot hold "
            "working memory or episodes. Open the memory with a driver that declares it "
            "(local, sqlite, postgresql).",
        )






def person_keys(caller: Caller, *, create: bool) -> SubjectKeys | None:
    """The person's keys (``None``: none yet, and ``create`` is false)."""
    return caller.services.subject_keys(caller.tenant, caller.person, create=create)

