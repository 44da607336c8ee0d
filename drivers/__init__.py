"""Storage drivers and the protocol they implement.

A driver stores sealed, blinded, pseudonymous rows (:class:`StoredRow`), and with
``relations`` declared the links between them (:class:`StoredLink`), and declares what it can
do (:class:`Capabilities`). The quickest way to write one is :class:`BaseDriver`: implement
storage, inherit search, list, expiry and pinning. Drivers are found by URL scheme through
the entry-point group ``mainsdk_memory.drivers``; ``local`` ships here, and a third party adds
one by registering a factory that takes the URL.
"""

from mainsdk_memory.drivers._base import BaseDriver
from mainsdk_memory.drivers._protocol import (
    BM25_B,
    BM25_K1,
    MAX_TAGS,
    QUARANTINED_TRUST,
    TENANT_SUBJECT,
    TRUST_RANK,
    Capabilities,
    Driver,
    EraseResult,
    Filter,
    RelationDriver,
    StoredLink,
    StoredRow,
    VectorDriver,
    VectorEntry,
    bm25_rank,
)
from mainsdk_memory.drivers._registry import open_driver

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_TAGS",
    "QUARANTINED_TRUST",
    "TENANT_SUBJECT",
    "TRUST_RANK",
    "BaseDriver",
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
    "open_driver",
]
