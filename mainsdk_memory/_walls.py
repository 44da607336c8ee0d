"""The walls at write and at recall: the injection check, an agent's kill switch and limits.

At write, a text the detector flags raises :class:`MemoryInjectionError` before anything is
stored (a child's text goes to the model-free detector only), and an agent's write must pass
its kill switch, its cap of memories per person and its rate. At recall, every memory is
checked again (:func:`screen`): one verdict per stored version per process, and a flagged
memory is left out and audited by id.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mainsdk_memory import _validate as validate
from mainsdk_memory._errors import MemoryInjectionError
from mainsdk_memory._records import MemoryRecord, Source, Trust
from mainsdk_memory.drivers import TRUST_RANK

if TYPE_CHECKING:
    from mainsdk_memory._caller import Caller
    from mainsdk_memory._services import Services

__all__ = [
    "Verdicts",
    "check_injection",
    "check_write",
    "checked_text",
    "record_clean_verdict",
    "revised_trust",
    "screen",
    "trust_of",
]

VerdictKey = tuple[str, str, str, int, bool]
"""``(tenant, app, memory id, version, child)``: ids only, never text."""


class Verdicts:
    """The injection check's verdict per stored version, kept in this process.

    A version's text never changes, so a memory recalled again is not checked again: the
    value is the sorted rule codes it was flagged for (empty: clean). A write records the
    clean verdict of the check it just ran. At most ``size`` verdicts, least recently used go.
    """

    def __init__(self, size: int = 50_000) -> None:
        self._size = size
        self._verdicts: OrderedDict[VerdictKey, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: VerdictKey) -> tuple[str, ...] | None:
        """The rules ``key``'s version was flagged for (empty: clean), or ``None``."""
        with self._lock:
            rules = self._verdicts.get(key)
            if rules is not None:
                self._verdicts.move_to_end(key)
            return rules

    def put(self, key: VerdictKey, rules: tuple[str, ...]) -> None:
        """Record the verdict of ``key``'s version."""
        with self._lock:
            self._verdicts[key] = rules
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self._size:
                self._verdicts.popitem(last=False)


def trust_of(caller: Caller, source: Source) -> Trust:
    """The trust a write from ``caller`` with ``source`` earns.

    Only the person's own handle confirms, and only what it says of itself: a person source
    written by an agent (or naming another person) is the agent's claim that the person said
    it, recorded as what it is: ``inferred``, with the claim kept in the source.
    """
    if source.kind == "person":
        own = caller.is_person and source.id == caller.person
        return Trust.CONFIRMED if own else Trust.INFERRED
    return source.trust


def revised_trust(caller: Caller, source: Source, current: str, *, shared: bool) -> Trust:
    """The trust of a revision: never above the current version's, unless the person's own
    handle confirms (so quarantined text cannot be laundered by revising it). A revision of
    ``shared`` memory never raises it, whoever writes it: shared memory reaches everyone, so
    only the app confirms it (``Memory.confirm_shared``, ADR 0045)."""
    trust = trust_of(caller, source)
    if (shared or trust is not Trust.CONFIRMED) and TRUST_RANK[current] < TRUST_RANK[trust]:
        return Trust(current)
    return trust


def _rules(services: Services, text: str, *, child: bool) -> tuple[str, ...]:
    settings = services.settings
    detector = settings.child_detector if child else settings.detector
    return tuple(sorted({finding.rule for finding in detector.check(text)}))


def check_injection(services: Services, text: str, *, child: bool = False) -> None:
    """Refuse a text the detector flags (codes only in the error)."""
    rules = _rules(services, text, child=child)
    if rules:
        raise MemoryInjectionError(rules)


def checked_text(text: str, metadata: Mapping[str, Any] | None) -> str:
    """What the injection check reads of a memory: its text, then every string in its
    metadata (names and values, one per line): metadata goes back to the app, and often to
    a model, as much as the text does."""
    if not metadata:
        return text
    strings: list[str] = [text]

    def walk(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, Mapping):
            for name, one in value.items():
                strings.append(str(name))
                walk(one)
        elif isinstance(value, list):
            for one in value:
                walk(one)

    walk(metadata)
    return "\n".join(strings)


def check_write(caller: Caller, *, new_personal_memory: bool) -> int | None:
    """An agent's write: its kill switch and its rate; returns its cap of memories per person
    for a new personal memory (counted when the memory is anchored, atomically across
    processes: :func:`~mainsdk_memory._sealing.first_place`)."""
    if caller.is_person:
        return None
    services = caller.services
    records = caller.agent_records()
    caller.written_by(records)  # the kill switch
    limits = services.agents.limits(records)
    services.agents.count_write(caller.tenant, caller.agent, limits.writes_per_minute)
    return limits.memories_per_person if new_personal_memory else None


def record_clean_verdict(
    services: Services, tenant: str, memory_id: str, version: int, child: bool
) -> None:
    """Record that a version just written passed the check (recalls here skip it)."""
    services.verdicts.put((tenant, services.app, memory_id, version, child), ())


def screen(caller: Caller, records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Leave out recalled memories the injection check flags, and audit each omission."""
    services = caller.services
    kept = []
    for record in records:
        child = validate.CHILD_LABEL in record.labels
        key = (caller.tenant, services.app, record.id, record.version, child)
        rules = services.verdicts.get(key)
        if rules is None:
            rules = _rules(services, checked_text(record.text, record.metadata), child=child)
            services.verdicts.put(key, rules)
        if not rules:
            kept.append(record)
            continue
        codes = ",".join(rules)
        services.audit.omitted(caller.tenant, caller.actor, caller.person, record.id, codes)
    return kept
