"""Relations between memories: links sealed per subject, read both ways, gone with either end.

A link goes from a memory (its *source*) to a memory or an entity (its *target*) and has a
kind: ``derived_from`` (an insight and each memory it was derived from), ``related`` and
``contradicts`` (formation at write; stored both ways), ``supersedes`` (a merge: the memory
that absorbed another) and ``mentions`` (a memory and an entity it names). The driver stores
:class:`~mainsdk_memory.drivers.StoredLink` values: the two ids, an opaque key (a keyed hash
of both ids and the kind, so writing a link twice is one link) and the kind, weight and time
sealed under the key of the source's subject, bound to both ids. The driver sees which ids
are linked, never how.

A driver that declares ``relations`` erases every link of a memory with it, whichever end
the memory is; :func:`derived_closure` finds what a forget must take with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final, Literal, cast, get_args

from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import MemoryCapabilityError, SealError
from mainsdk_memory._guard import GuardedStore
from mainsdk_memory._records import Link, LinkKind
from mainsdk_memory.drivers import TENANT_SUBJECT, RelationDriver, StoredLink
from mainsdk_memory.keys import associated_data

__all__ = [
    "LINK_KINDS",
    "SYMMETRIC",
    "add_links",
    "derived_closure",
    "links_of",
    "relation_store",
    "require_relations",
]

LINK_KINDS: Final[tuple[LinkKind, ...]] = get_args(LinkKind)
#: Kinds stored both ways: each end reads the link as its own.
SYMMETRIC: Final = frozenset({"related", "contradicts"})
#: How many links one read returns at most (a memory related to thousands reads the first).
MAX_LINKS: Final = 1000


def relation_store(caller: Caller) -> GuardedStore | None:
    """The store, when its driver declares ``relations``; else ``None``."""
    store = caller.services.store
    if store.capabilities.relations and isinstance(store.driver, RelationDriver):
        return store
    return None


def require_relations(caller: Caller, what: str) -> GuardedStore:
    """The store, or :class:`MemoryCapabilityError` naming ``what`` needs relations."""
    store = relation_store(caller)
    if store is None:
        raise MemoryCapabilityError(
            "relations",
            f"{what} needs a driver that stores relations, and this one does not declare "
            "'relations'; nothing was changed. Use the local or db driver.",
        )
    return store


def _core_subject(caller: Caller, row_subject: str) -> str:
    return TENANT_SUBJECT if row_subject == TENANT_SUBJECT else caller.person


def _ad(caller: Caller, row_subject: str, key: str, source: str, target: str) -> bytes:
    return associated_data("link", caller.tenant, caller.app, row_subject, key, source, target)


def _sealed_link(
    caller: Caller,
    row_subject: str,
    source: str,
    target: str,
    kind: LinkKind,
    *,
    weight: float | None,
    now: datetime,
) -> StoredLink:
    keys = caller.services.subject_keys(
        caller.tenant, _core_subject(caller, row_subject), create=True
    )
    assert keys is not None  # noqa: S101 - create=True always returns keys
    key = keys.blind(f"\x00link:{source}>{target}:{kind}")
    document: dict[str, Any] = {"kind": kind, "at": now.isoformat()}
    if weight is not None:
        document["weight"] = weight
    # Padded to one size: the sealed length says nothing of the kind or the weight.
    plain = json.dumps(document, separators=(",", ":")).encode().ljust(96)
    sealed = keys.seal(plain, _ad(caller, row_subject, key, source, target))
    return StoredLink(
        tenant=caller.tenant,
        app=caller.app,
        subject=row_subject,
        source=source,
        target=target,
        key=key,
        sealed=sealed,
    )


def add_links(
    caller: Caller,
    links: Iterable[tuple[str, str, str, LinkKind, float | None]],
    *,
    subjects: dict[str, str],
    now: datetime,
) -> list[StoredLink]:
    """Store links ``(source, target, kind, weight)`` given as ``(source, target, source's
    row subject, kind, weight)`` in one atomic step; a symmetric kind is stored both ways
    (``subjects`` maps a memory id to its row subject, for the way back). Returns what was
    put."""
    store = require_relations(caller, "A link")
    stored: list[StoredLink] = []
    for source, target, row_subject, kind, weight in links:
        stored.append(
            _sealed_link(caller, row_subject, source, target, kind, weight=weight, now=now)
        )
        if kind in SYMMETRIC:
            back = subjects.get(target, row_subject)
            stored.append(
                _sealed_link(caller, back, target, source, kind, weight=weight, now=now)
            )
    if stored:
        store.put_links(stored)
    return stored


def _open(caller: Caller, link: StoredLink) -> dict[str, Any] | None:
    keys = caller.services.subject_keys(
        caller.tenant, _core_subject(caller, link.subject), create=False
    )
    if keys is None:
        return None
    try:
        plain = keys.open(link.sealed, _ad(caller, link.subject, link.key, link.source,
                                           link.target))
        document = json.loads(plain)
    except (SealError, ValueError, UnicodeError):
        return None
    if not isinstance(document, dict) or document.get("kind") not in LINK_KINDS:
        return None
    return cast(dict[str, Any], document)


def opened_links(
    caller: Caller, ids: Sequence[str]
) -> list[tuple[StoredLink, LinkKind, float | None]]:
    """Every link within the caller's subjects with an end in ``ids``, opened, with its
    kind and weight: a link whose seal does not open under the caller's keys (another
    person's, or forged) is left out."""
    store = relation_store(caller)
    if store is None or not ids:
        return []
    subjects = caller.filter().subjects
    out: list[tuple[StoredLink, LinkKind, float | None]] = []
    for link in store.links(caller.tenant, caller.app, subjects, ids):
        document = _open(caller, link)
        if document is not None:
            weight = document.get("weight")
            weight = float(weight) if isinstance(weight, int | float) and 0 <= weight <= 1 else None
            out.append((link, cast(LinkKind, document["kind"]), weight))
    return out


def stored_links(caller: Caller, ids: Sequence[str]) -> list[tuple[StoredLink, LinkKind]]:
    """:func:`opened_links` without the weights."""
    return [(link, kind) for link, kind, _ in opened_links(caller, ids)]


def links_of(caller: Caller, memory_id: str, visible: set[str] | None = None) -> list[Link]:
    """The links of one memory as its handle reads them: outgoing ones, then incoming ones
    (a symmetric kind once); ``visible``, when given, keeps only links whose other end is in
    it (or is an entity)."""
    out: list[Link] = []
    seen: set[tuple[str, str, str]] = set()
    direction: Literal["out", "in"]
    for link, kind, weight in opened_links(caller, [memory_id]):
        if link.source == memory_id:
            other, direction = link.target, "out"
        elif link.target == memory_id:
            if kind in SYMMETRIC:
                continue  # its own way is stored too
            other, direction = link.source, "in"
        else:
            continue
        if visible is not None and other.startswith("mem_") and other not in visible:
            continue
        mark = (kind, other, direction)
        if mark in seen:
            continue
        seen.add(mark)
        out.append(Link(kind=kind, target=other, direction=direction, weight=weight))
        if len(out) >= MAX_LINKS:
            break
    out.sort(key=lambda link: (link.direction != "out", link.kind, link.target))
    return out


def derived_closure(caller: Caller, memory_id: str) -> list[tuple[str, str]]:
    """``(row subject, memory id)`` of every memory derived from ``memory_id``, transitively
    (an insight of an insight), in the order found; ``memory_id`` itself is not in it."""
    found: dict[str, str] = {}
    frontier = [memory_id]
    while frontier:
        derived = [
            (link.subject, link.source)
            for link, kind in stored_links(caller, frontier)
            if kind == "derived_from" and link.target in frontier and link.source != memory_id
        ]
        frontier = []
        for subject, source in derived:
            if source not in found:
                found[source] = subject
                frontier.append(source)
    return [(subject, source) for source, subject in found.items()]
