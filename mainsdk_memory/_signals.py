"""Ranking signals of a living memory: kind, use, pin and feedback, sealed per subject.

Recall gives each candidate a relevance ``r`` in [0, 1] (BM25, cosine or both fused); unless
it is asked for ``ranking="relevance"``, :func:`rank` then multiplies it by what the memory
has become::

    a = w_kind · 0.5^(age / h_kind)        age = now - valid_from (never below 0);
                                           h_kind None: never fades, a = w_kind
    u = w_use · (1 - 0.5^n) · 0.5^(since_last_use / h_use)
                                           n = uses (recalls that returned it); 0 if never used
    p = w_pin if pinned else 0
    f = w_fb · tanh(s / 2)                 s = sum of feedback (+1 / -1 each), clamped to
                                           [-10, 10]; f can be negative
    m = 1 + a + u + p + f
    M = 1 + max over kinds of w_kind + w_use + w_pin + w_fb
    score = r · m / M                      in [0, 1]; r = 0 stays 0

Defaults (:class:`RankingSignals`, the ``signals=`` option of ``Memory.open``)::

    kind        w_kind   h_kind          signal        weight   half-life
    preference  0.10     never fades     use           0.10     30 days
    fact        0.05     never fades     pin           0.15
    event       0.10     30 days         feedback      0.20
    procedure   0.05     never fades
    note        0.05     90 days
    insight     0.05     90 days

so ``M = 1.55`` and ``m / M`` lies in ``[0.8 / 1.55, 1]``: a memory's signals can move its
score between about 52 % and 100 % of its relevance, never above it, never to 0. The age is
the current version's (a revision's ``valid_from`` starts it again). Recall then orders
equal scores as BM25 does (the more trusted first) and never lets the signals lift a memory
above a more trusted one of the same relevance. A use is counted by :func:`count_uses` for the
memories a handle's ``recall`` returns (``context`` and searches made while forming memories
do not count); feedback comes from ``handle.feedback(memory_id, +1 | -1)``.

Storage. Per memory the uses ``n``, the time of the last use and the feedback sum ``s``; one
document per *subject* as the store's rows name it (a person's pseudonym, or the tenant for
shared memory), kept as the driver's control record ``signals/<subject>``, so the driver sees
only the pseudonym it already stores. The document is JSON, padded like a memory's payload
(``_sealing.pad``) and sealed (AES-256-GCM) under that subject's key, with associated data
``("mainsdk-memory/v1/signals", tenant, app, subject, "signals")``: the store reads no memory
id, count or date in it (its length says only its size bucket, roughly how many memories it
holds), a document moved to another subject, app or tenant does not open, and destroying the
person's key (``Privacy.erase``) leaves every copy of it unreadable.
Shape, once opened::

    {"v": 1, "pruned": <µs since the epoch, or null>,
     "ids": ["<memory id>", ...], "uses": [<int>, ...],
     "last": [<last use in µs since the epoch, or null>, ...], "feedback": [<int>, ...]}

(one column per field, the i-th of each about the i-th id: flat lists are what JSON writes
and reads fastest).

A document holds at most :data:`CAP` memories; beyond that the entries without feedback
whose use boost faded most go first, then those with the least feedback. A change (a use,
a feedback, a forget) is a read-modify-write under a lock of this process and the key
store's control lock (``control.lock``, shared with the writers of control records, in every
process), so two writers never lose each other's update; a use or a feedback is recorded only
for a memory the key store's anchors still hold, so one racing a forget is dropped. An
unchanged document is not opened twice: the opened form is kept in process, keyed by its
sealed bytes. Uses are the exception to writing at once: :meth:`SignalBook.add_uses` counts
them in the process (ranked with at once) and the first recall (of any subject) after a
subject's oldest unwritten use is :data:`WRITE_USES_AFTER` old writes them, as do the
subject's next feedback or export, more than :data:`MAX_PENDING` subjects waiting (then the
oldest until half of them are left) and ``Memory.close`` (best effort); the subjects written
together are one transaction on a driver with units of work. So a recall pays no durable
write of its own, and a crash loses the uses not written yet (a soft signal).

Not anchored in the key store, unlike control records (ADR 0047), on purpose: whoever can
write the memory store can delete a signals document or put an older sealed copy back
(resetting or rolling back uses and feedback), but can neither read nor forge one, and all a
rollback does is re-order within the bounded factor above (a memory that did not match still
scores 0; none drops below 52 % of its relevance). Anchoring would make every recall a
durable key-store write.

Forgetting one memory (the person's forget, an approved request, the retention sweep: all go
through ``Services.erase_memory``) removes its entry; the retention sweep knows a person only
by pseudonym, so it cannot open their document: the entry of a personal memory it erased
goes at the next change of that document a day or more after its last pruning (entries whose
memory the anchors no longer hold are dropped) and at the person's next export. Erasing a
person deletes their documents; exporting a person lists their signals.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from mainsdk_memory._errors import ConfigurationError, InvalidInputError, SealError
from mainsdk_memory._records import Kind, MemoryRecord
from mainsdk_memory.drivers import TENANT_SUBJECT, Driver
from mainsdk_memory.keys import KeyStore, SubjectKeys, associated_data

if TYPE_CHECKING:
    from mainsdk_memory._caller import Caller

__all__ = [
    "CAP",
    "FEEDBACK_LIMIT",
    "Held",
    "RankingSignals",
    "SignalBook",
    "count_uses",
    "document_key",
    "export_signals",
    "feedback",
    "feedback_value",
    "rank",
    "score",
]

#: The most memories one subject's document holds.
CAP = 4096
#: The feedback sum of a memory is clamped to ``[-FEEDBACK_LIMIT, FEEDBACK_LIMIT]``.
FEEDBACK_LIMIT = 10
#: How often a change of a document also drops the entries of memories that are gone.
PRUNE_EVERY = timedelta(days=1)

KindSignal = tuple[float, timedelta | None]
"""A kind's boost: its weight, and its half-life (``None``: it never fades)."""

_DEFAULT_KINDS: Mapping[str, KindSignal] = MappingProxyType(
    {
        Kind.PREFERENCE: (0.10, None),
        Kind.FACT: (0.05, None),
        Kind.EVENT: (0.10, timedelta(days=30)),
        Kind.PROCEDURE: (0.05, None),
        Kind.NOTE: (0.05, timedelta(days=90)),
        Kind.INSIGHT: (0.05, timedelta(days=90)),
    }
)
_KIND_NAMES = ", ".join(kind.value for kind in Kind)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _default_kinds() -> Mapping[str, KindSignal]:
    return _DEFAULT_KINDS


def _weight(value: object, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise ConfigurationError(f"{what} is a number from 0 to 1.")
    return float(value)


def _half_life(value: object, what: str) -> timedelta | None:
    if value is None:
        return None
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise ConfigurationError(f"{what} is a positive timedelta, or None (it never fades).")
    return value


@dataclass(frozen=True, slots=True)
class RankingSignals:
    """How far a memory's kind, uses, pin and feedback move its recall score.

    ``kinds`` maps a kind (``Kind`` or its name) to ``(weight, half_life)``: a weight from 0
    to 1, and a positive ``timedelta`` after which the boost has halved, or ``None`` for a
    boost that never fades; kinds left out keep their defaults. ``use_weight`` and
    ``use_half_life`` (time since the last use) shape the boost of recalls that returned the
    memory, ``pin_weight`` that of a pinned memory, ``feedback_weight`` that of feedback
    (negative feedback lowers the score by up to as much). Setting a weight to 0 turns that
    signal off. The formula and the defaults are in docs/concepts.md; a bad value raises
    :class:`ConfigurationError`.
    """

    kinds: Mapping[str, KindSignal] = field(default_factory=_default_kinds)
    use_weight: float = 0.10
    use_half_life: timedelta | None = timedelta(days=30)
    pin_weight: float = 0.15
    feedback_weight: float = 0.20

    def __post_init__(self) -> None:
        given: object = self.kinds
        if not isinstance(given, Mapping):
            raise ConfigurationError(
                f"RankingSignals.kinds maps a kind ({_KIND_NAMES}) to (weight, half_life)."
            )
        kinds = dict(_DEFAULT_KINDS)
        for name, pair in given.items():
            try:
                kind = Kind(name)
            except ValueError:
                raise ConfigurationError(
                    f"RankingSignals.kinds names a kind that does not exist; the kinds are "
                    f"{_KIND_NAMES}."
                ) from None
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ConfigurationError(
                    f"The signal of kind {kind.value!r} is a pair (weight, half_life): a "
                    "number from 0 to 1 and a positive timedelta, or None (it never fades)."
                )
            kinds[kind] = (
                _weight(pair[0], f"The weight of kind {kind.value!r}"),
                _half_life(pair[1], f"The half-life of kind {kind.value!r}"),
            )
        object.__setattr__(self, "kinds", MappingProxyType(kinds))
        object.__setattr__(self, "use_weight", _weight(self.use_weight, "use_weight"))
        object.__setattr__(self, "use_half_life", _half_life(self.use_half_life, "use_half_life"))
        object.__setattr__(self, "pin_weight", _weight(self.pin_weight, "pin_weight"))
        object.__setattr__(
            self, "feedback_weight", _weight(self.feedback_weight, "feedback_weight")
        )

    @property
    def ceiling(self) -> float:
        """``M``: the largest ``m`` any memory can reach, which every score is divided by."""
        most = max(weight for weight, _ in self.kinds.values())
        return 1 + most + self.use_weight + self.pin_weight + self.feedback_weight


# -- the formula ---------------------------------------------------------------------------


def _fade(elapsed: timedelta | None, half_life: timedelta | None) -> float:
    """``0.5^(elapsed / half_life)``; 1 with no half-life; no time before now counts."""
    if half_life is None:
        return 1.0
    if elapsed is None or elapsed <= timedelta(0):
        return 1.0
    return float(0.5 ** (elapsed / half_life))


def _use_boost(signals: RankingSignals, uses: int, since_last_use: timedelta | None) -> float:
    if uses <= 0 or since_last_use is None:
        return 0.0
    return signals.use_weight * (1 - 0.5**uses) * _fade(since_last_use, signals.use_half_life)


def score(
    signals: RankingSignals,
    relevance: float,
    *,
    kind: Kind,
    age: timedelta,
    pinned: bool,
    uses: int = 0,
    since_last_use: timedelta | None = None,
    feedback: int = 0,
) -> float:
    """``r · m / M`` (the module docstring's formula) of one candidate, in [0, 1]."""
    weight, half_life = signals.kinds[kind]
    kind_boost = weight * _fade(age, half_life)
    use = _use_boost(signals, uses, since_last_use)
    pin = signals.pin_weight if pinned else 0.0
    clamped = max(-FEEDBACK_LIMIT, min(FEEDBACK_LIMIT, feedback))
    opinion = signals.feedback_weight * math.tanh(clamped / 2)
    factor = 1 + kind_boost + use + pin + opinion
    return min(1.0, max(0.0, relevance * factor / signals.ceiling))


# -- the sealed documents ------------------------------------------------------------------


class Held(NamedTuple):
    """One memory's stored signals."""

    uses: int
    last_use: int | None
    """Microseconds since the epoch (UTC) of the last use, or ``None``."""
    feedback: int


@dataclass(frozen=True, slots=True)
class _Document:
    entries: Mapping[str, Held]
    pruned: int | None


_EMPTY = _Document(MappingProxyType({}), None)
_NEVER = Held(0, None, 0)
_PRUNE_EVERY_US = PRUNE_EVERY // timedelta(microseconds=1)


def document_key(subject: str) -> str:
    """The control key of one subject's signals (the pseudonym the rows carry, or the tenant)."""
    return f"signals/{subject}"


def _micros(when: datetime) -> int:
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _when(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode(plain: bytes) -> _Document:
    """The opened document, checked field by field (:class:`SealError` if it is not one)."""
    document: Any = json.loads(plain)
    if not isinstance(document, dict) or document.get("v") != 1:
        raise SealError
    pruned = document.get("pruned")
    columns: list[Any] = [document.get(name) for name in ("ids", "uses", "last", "feedback")]
    if not (pruned is None or _is_int(pruned)) or not all(
        isinstance(column, list) and len(column) == len(columns[0]) for column in columns
    ):
        raise SealError
    entries: dict[str, Held] = {}
    for memory_id, uses, last_use, opinion in zip(*columns, strict=True):
        if not (isinstance(memory_id, str) and _is_int(uses) and uses >= 0 and _is_int(opinion)):
            raise SealError
        if not (last_use is None or _is_int(last_use)):
            raise SealError
        entries[memory_id] = Held(
            uses, last_use, max(-FEEDBACK_LIMIT, min(FEEDBACK_LIMIT, opinion))
        )
    return _Document(MappingProxyType(entries), pruned)


def _encode(entries: dict[str, Held], pruned: int | None) -> bytes:
    # Imported here: _sealing imports the caller, which imports the services, which import
    # this module.
    from mainsdk_memory._sealing import pad

    held = entries.values()
    document = {
        "v": 1,
        "pruned": pruned,
        "ids": list(entries),
        "uses": [one.uses for one in held],
        "last": [one.last_use for one in held],
        "feedback": [one.feedback for one in held],
    }
    text = json.dumps(document, separators=(",", ":"))
    return pad(text.encode("ascii"))


def _capped(entries: dict[str, Held], signals: RankingSignals, now: datetime) -> dict[str, Held]:
    """``entries`` cut to :data:`CAP`: first out the entries without feedback whose use boost
    faded most, then those with the least feedback."""

    def worth(item: tuple[str, Held]) -> tuple[bool, int, float, int, str]:
        memory_id, held = item
        since = None if held.last_use is None else now - _when(held.last_use)
        use = _use_boost(signals, held.uses, since)
        return (held.feedback != 0, abs(held.feedback), use, held.last_use or 0, memory_id)

    ranked = sorted(entries.items(), key=worth)
    return dict(ranked[len(ranked) - CAP :])


#: Seconds a use counted in process waits before the next recall writes it (uses are a soft
#: signal: a crash loses the unwritten ones; a recall does not pay a durable write).
WRITE_USES_AFTER: Final = 10.0
#: Subjects whose unwritten uses this process keeps at most (the oldest are written first).
MAX_PENDING: Final = 256


@dataclass
class _Pending:
    """Uses counted in this process and not written yet, for one subject."""

    keys: SubjectKeys
    since: float
    """``time.monotonic()`` of the oldest unwritten use."""
    uses: dict[str, tuple[int, int]] = field(default_factory=dict)
    """memory id → (uses, last use in µs)."""


def _used(held: Held | None, count: int, at: int) -> Held:
    """``held`` (or a memory never used) with ``count`` more uses, the last at ``at``."""
    uses, last_use, opinion = held or _NEVER
    return Held(uses + count, max(at, last_use or 0), opinion)


def _merged(entries: dict[str, Held], pending: _Pending, live: set[str]) -> dict[str, Held]:
    """``entries`` with ``pending``'s uses of the memories in ``live`` added."""
    for memory_id, (count, at) in pending.uses.items():
        if memory_id in live:
            entries[memory_id] = _used(entries.get(memory_id), count, at)
    return entries


class _WithPending(Mapping[str, Held]):
    """The stored entries with this process's unwritten uses added, key by key (a recall
    looks up about twenty memories: no copy of a document of thousands)."""

    def __init__(self, stored: Mapping[str, Held], uses: dict[str, tuple[int, int]]) -> None:
        self._stored = stored
        self._uses = uses

    def __getitem__(self, memory_id: str) -> Held:
        held = self._stored.get(memory_id)
        added = self._uses.get(memory_id)
        if added is None:
            if held is None:
                raise KeyError(memory_id)
            return held
        return _used(held, *added)

    def __iter__(self) -> Iterator[str]:
        yield from self._stored
        yield from (memory_id for memory_id in self._uses if memory_id not in self._stored)

    def __len__(self) -> int:
        return len(self._stored) + sum(1 for key in self._uses if key not in self._stored)


class SignalBook:
    """The sealed signals documents of one open store (``Services.signals``)."""

    _OPENED_KEPT = 256
    """Opened documents kept in process (the least recently used goes first)."""

    def __init__(
        self,
        driver: Driver,
        keystore: KeyStore,
        app: str,
        signals: RankingSignals,
        anchor_scope: Callable[[str], str],
    ) -> None:
        self._driver = driver
        self._keystore = keystore
        self._app = app
        self._signals = signals
        self._anchor_scope = anchor_scope
        self._writing = threading.Lock()
        self._opened_lock = threading.Lock()
        self._opened: OrderedDict[tuple[str, str], tuple[bytes, _Document]] = OrderedDict()
        self._pending: dict[tuple[str, str], _Pending] = {}
        """Uses counted here and not written yet, per ``(tenant, subject)``."""

    @property
    def signals(self) -> RankingSignals:
        """The weights and half-lives this store ranks with."""
        return self._signals

    def _ad(self, tenant: str, subject: str) -> bytes:
        return associated_data("mainsdk-memory/v1/signals", tenant, self._app, subject, "signals")

    def _read(self, tenant: str, subject: str, keys: SubjectKeys) -> _Document:
        """The subject's document; one that does not open counts as none (the store can
        delete one anyway, and it only re-orders: see the module docstring)."""
        sealed = self._driver.control_get(tenant, self._app, document_key(subject))
        if sealed is None:
            return _EMPTY
        slot = (tenant, subject)
        with self._opened_lock:
            kept = self._opened.get(slot)
            if kept is not None and kept[0] == sealed:
                self._opened.move_to_end(slot)
                return kept[1]
        try:
            document = _decode(keys.open(sealed, self._ad(tenant, subject)))
        except (SealError, ValueError):
            return _EMPTY
        self._keep(slot, sealed, document)
        return document

    def _keep(self, slot: tuple[str, str], sealed: bytes, document: _Document) -> None:
        with self._opened_lock:
            self._opened[slot] = (sealed, document)
            self._opened.move_to_end(slot)
            while len(self._opened) > self._OPENED_KEPT:
                self._opened.popitem(last=False)

    def _forget_opened(self, tenant: str, subject: str) -> None:
        with self._opened_lock:
            self._opened.pop((tenant, subject), None)

    def _live(self, tenant: str, memory_ids: Iterable[str]) -> set[str]:
        """Those of ``memory_ids`` whose memory the key store's anchors still hold."""
        scope = self._anchor_scope(tenant)
        anchors = self._keystore.anchors
        return {memory_id for memory_id in memory_ids if anchors.memory(scope, memory_id)}

    def entries(self, tenant: str, subject: str, keys: SubjectKeys) -> Mapping[str, Held]:
        """The signals of the subject's memories, by memory id (read-only): the stored ones
        with the uses this process counted and has not written yet."""
        stored = self._read(tenant, subject, keys).entries
        with self._opened_lock:
            pending = self._pending.get((tenant, subject))
            if pending is None or not pending.uses:
                return stored
            return _WithPending(stored, dict(pending.uses))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer of the signals documents at a time: in this process, and across
        processes through the key store's control lock (shared with the control records)."""
        with self._writing, self._keystore.anchors.control_lock(exclusive=True):
            yield

    def _change(
        self,
        tenant: str,
        subject: str,
        keys: SubjectKeys,
        now: datetime,
        change: Callable[[dict[str, Held]], bool],
        *,
        prune: bool = False,
    ) -> Mapping[str, Held]:
        """Read, ``change`` (it says whether it changed anything) and write back the subject's
        document, one writer at a time (in this process and across processes); returns the
        entries as written."""
        with self._locked():
            return self._changed(tenant, subject, keys, now, change, prune=prune)

    def _changed(
        self,
        tenant: str,
        subject: str,
        keys: SubjectKeys,
        now: datetime,
        change: Callable[[dict[str, Held]], bool],
        *,
        prune: bool = False,
        taken: dict[tuple[str, str], _Pending] | None = None,
    ) -> Mapping[str, Held]:
        """:meth:`_change`'s work, under its locks (``taken`` gets the unwritten uses it
        took, to give back if a batch rolls back)."""
        current = self._read(tenant, subject, keys)
        entries = dict(current.entries)
        with self._opened_lock:
            pending = self._pending.pop((tenant, subject), None)
            if pending is not None and taken is not None:
                taken[(tenant, subject)] = pending
        if pending is not None and pending.uses:
            live = self._live(tenant, pending.uses)  # a use racing a forget is dropped
            _merged(entries, pending, live)
        changed = change(entries) or bool(pending and pending.uses)
        at = _micros(now)
        pruned = current.pruned
        if prune or pruned is None or at - pruned >= _PRUNE_EVERY_US:
            live = self._live(tenant, entries)
            if len(live) < len(entries):
                entries = {key: held for key, held in entries.items() if key in live}
                changed = True
            pruned = at
        if len(entries) > CAP:
            entries = _capped(entries, self._signals, now)
            changed = True
        if not changed and (pruned == current.pruned or not entries):
            return current.entries
        key = document_key(subject)
        if not entries:
            self._driver.control_put(tenant, self._app, key, None)
            self._forget_opened(tenant, subject)
            return _EMPTY.entries
        sealed = keys.seal(_encode(entries, pruned), self._ad(tenant, subject))
        self._driver.control_put(tenant, self._app, key, sealed)
        document = _Document(MappingProxyType(entries), pruned)
        self._keep((tenant, subject), sealed, document)
        return document.entries

    def add_uses(
        self,
        tenant: str,
        subject: str,
        keys: SubjectKeys,
        memory_ids: Sequence[str],
        now: datetime,
    ) -> None:
        """One more use, now, of each of ``memory_ids``: counted in this process at once (and
        ranked with), written to the sealed document when the subject's oldest unwritten use
        is :data:`WRITE_USES_AFTER` old, at a feedback, forget or export of the subject, and
        at :meth:`flush` (``Memory.close``). A use of a memory forgotten meanwhile is dropped
        when written."""
        at = _micros(now)
        slot = (tenant, subject)
        live = self._live(tenant, dict.fromkeys(memory_ids))  # checked again when written
        if not live:
            return
        with self._opened_lock:
            pending = self._pending.get(slot)
            if pending is None:
                pending = self._pending[slot] = _Pending(keys=keys, since=time.monotonic())
            for memory_id in live:
                count, _ = pending.uses.get(memory_id, (0, at))
                pending.uses[memory_id] = (count + 1, at)
            # Every subject's uses that are due, not only this one's (a person recalled once
            # is written by whoever recalls next); past MAX_PENDING subjects, the oldest
            # until half of it is left, so the writes come in batches, one transaction each.
            clock = time.monotonic()
            ordered = sorted(self._pending.items(), key=lambda item: item[1].since)
            over = len(ordered) - MAX_PENDING // 2 if len(ordered) > MAX_PENDING else 0
            due = [
                (slot, held.keys)
                for number, (slot, held) in enumerate(ordered)
                if clock - held.since >= WRITE_USES_AFTER or number < over
            ]
        if due:
            self._write_pending(due, now)

    def flush(self, now: datetime) -> None:
        """Write every use counted here and not written yet (``Memory.close`` calls it).
        Best effort, never raising: a subject that cannot be written loses its unwritten
        uses (a soft signal) and the others are still written."""
        with self._opened_lock:
            slots = [(slot, pending.keys) for slot, pending in self._pending.items()]
        self._write_pending(slots, now)

    def _write_pending(
        self, slots: Sequence[tuple[tuple[str, str], SubjectKeys]], now: datetime
    ) -> None:
        """Write the uses of ``slots``: per tenant, all of that tenant's in one unit of work
        under the locks once when the driver's unit is a transaction; if it fails (it rolled
        back whole), and on other drivers, one subject at a time."""
        by_tenant: dict[str, list[tuple[tuple[str, str], SubjectKeys]]] = {}
        for slot, keys in slots:
            by_tenant.setdefault(slot[0], []).append((slot, keys))
        for group in by_tenant.values():
            if len(group) < 2 or not self._write_together(group, now):
                for (tenant, subject), keys in group:
                    try:
                        self._change(tenant, subject, keys, now, lambda entries: False)
                    except Exception:  # uses are a soft signal: never fail a call for them
                        with self._opened_lock:
                            self._pending.pop((tenant, subject), None)

    def _write_together(
        self, group: Sequence[tuple[tuple[str, str], SubjectKeys]], now: datetime
    ) -> bool:
        """Write one tenant's ``group`` in one transaction; whether it was written. Not
        written (a driver whose unit is not a transaction, or a failure): nothing of it is
        stored, and the uses it took are given back."""
        opener: Any = getattr(self._driver, "unit", None)
        if not callable(opener):
            return False
        unit = opener()
        if isinstance(unit, contextlib.nullcontext):
            return False  # each write its own step: a failure half way could not be undone
        taken: dict[tuple[str, str], _Pending] = {}
        with self._locked():
            try:
                with unit:
                    for (tenant, subject), keys in group:
                        self._changed(
                            tenant, subject, keys, now, lambda entries: False, taken=taken
                        )
                return True
            except Exception:  # rolled back whole: retried subject by subject
                with self._opened_lock:
                    for slot, pending in taken.items():
                        self._opened.pop(slot, None)  # may hold what was rolled back
                        later = self._pending.get(slot)
                        if later is not None:  # counted meanwhile: both are kept
                            for memory_id, (count, at) in later.uses.items():
                                before, last = pending.uses.get(memory_id, (0, at))
                                pending.uses[memory_id] = (before + count, max(at, last))
                        self._pending[slot] = pending
                return False

    def add_feedback(
        self,
        tenant: str,
        subject: str,
        keys: SubjectKeys,
        memory_id: str,
        value: int,
        now: datetime,
    ) -> None:
        """Add ``value`` (+1 or -1) to the memory's feedback sum, clamped, if it is anchored."""

        def rate(entries: dict[str, Held]) -> bool:
            if not self._live(tenant, [memory_id]):
                return False
            uses, last_use, opinion = entries.get(memory_id, _NEVER)
            summed = max(-FEEDBACK_LIMIT, min(FEEDBACK_LIMIT, opinion + value))
            if uses == 0 and summed == 0:
                entries.pop(memory_id, None)  # nothing left to remember about it
            else:
                entries[memory_id] = Held(uses, last_use, summed)
            return summed != opinion or memory_id not in entries

        self._change(tenant, subject, keys, now, rate)

    def discard(
        self, tenant: str, subject: str, keys: SubjectKeys, memory_id: str, now: datetime
    ) -> None:
        """Remove the signals of one memory (it is being forgotten)."""
        with self._opened_lock:
            pending = self._pending.get((tenant, subject))
            if pending is not None:
                pending.uses.pop(memory_id, None)
        if self._driver.control_get(tenant, self._app, document_key(subject)) is None:
            return  # nothing stored for the subject: no lock, no write

        def drop(entries: dict[str, Held]) -> bool:
            return entries.pop(memory_id, None) is not None

        self._change(tenant, subject, keys, now, drop)

    def prune(
        self, tenant: str, subject: str, keys: SubjectKeys, now: datetime
    ) -> Mapping[str, Held]:
        """Write the uses counted here, drop the entries of memories that are gone, now;
        returns what is left."""
        with self._opened_lock:
            pending = self._pending.get((tenant, subject))
        stored = self._driver.control_get(tenant, self._app, document_key(subject))
        if stored is None and (pending is None or not pending.uses):
            return _EMPTY.entries
        return self._change(tenant, subject, keys, now, lambda entries: False, prune=True)

    def delete(self, tenant: str, subjects: Iterable[str]) -> None:
        """Delete the documents of ``subjects`` (their person is being erased)."""
        with self._locked():
            for subject in subjects:
                with self._opened_lock:
                    self._pending.pop((tenant, subject), None)
                self._driver.control_put(tenant, self._app, document_key(subject), None)
                self._forget_opened(tenant, subject)


# -- what recall, the handles and Privacy call ---------------------------------------------


def _keys_of(caller: Caller, subject: str) -> SubjectKeys | None:
    """The key of a subject the caller may rank: the tenant's, or the caller's person's."""
    services = caller.services
    if subject == TENANT_SUBJECT:
        return services.subject_keys(caller.tenant, TENANT_SUBJECT, create=True)
    if subject == caller.pseudonym():
        return services.subject_keys(caller.tenant, caller.person, create=False)
    return None  # a row of no subject this caller reads: it ranks by relevance alone


def rank(
    caller: Caller, scored: Sequence[tuple[MemoryRecord, str, float]], *, now: datetime
) -> list[tuple[MemoryRecord, str, float]]:
    """``scored`` (record, its row's subject, relevance ``r``) re-scored with the signals, best
    first (recall then orders ties and keeps trust first: ``_recall._ordered``)."""
    services = caller.services
    book: SignalBook = services.signals
    signals = book.signals
    documents: dict[str, Mapping[str, Held]] = {}
    ranked: list[tuple[float, float, MemoryRecord, str]] = []
    for record, subject, relevance in scored:
        entries = documents.get(subject)
        if entries is None:
            keys = _keys_of(caller, subject)
            entries = documents[subject] = (
                _EMPTY.entries if keys is None else book.entries(caller.tenant, subject, keys)
            )
        held = entries.get(record.id, _NEVER)
        since = None if held.last_use is None else now - _when(held.last_use)
        value = score(
            signals,
            relevance,
            kind=record.kind,
            age=now - record.valid_from,
            pinned=record.pinned,
            uses=held.uses,
            since_last_use=since,
            feedback=held.feedback,
        )
        ranked.append((value, relevance, record, subject))
    ranked.sort(key=lambda item: (-item[0], -item[1], item[2].id))
    return [(record, subject, value) for value, _, record, subject in ranked]


def count_uses(caller: Caller, used: Sequence[tuple[MemoryRecord, str]], *, now: datetime) -> None:
    """Count one use, at ``now``, of each memory a ``recall`` returned (record, subject)."""
    by_subject: dict[str, list[str]] = {}
    for record, subject in used:
        by_subject.setdefault(subject, []).append(record.id)
    for subject, memory_ids in by_subject.items():
        keys = _keys_of(caller, subject)
        if keys is not None:
            caller.services.signals.add_uses(caller.tenant, subject, keys, memory_ids, now)


def feedback_value(value: object) -> int:
    """``value`` if it is ``1`` or ``-1`` (an int); anything else raises InvalidInputError."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in (1, -1):
        raise InvalidInputError("Feedback is +1 or -1 (an int); nothing was changed.")
    return value


def feedback(caller: Caller, memory_id: str, subject: str, value: int) -> None:
    """Add feedback ``value`` (+1 or -1) to a memory the caller found (its row's subject)."""
    checked = feedback_value(value)
    keys = _keys_of(caller, subject)
    if keys is not None:
        caller.services.signals.add_feedback(
            caller.tenant, subject, keys, memory_id, checked, caller.services.now()
        )


def export_signals(
    caller: Caller, pseudonym: str, memory_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """The signals of the person's memories ``memory_ids`` (in that order), for an export;
    entries of memories that are gone are dropped from the document first."""
    services = caller.services
    keys = services.subject_keys(caller.tenant, caller.person, create=False)
    if keys is None:
        return []
    entries = services.signals.prune(caller.tenant, pseudonym, keys, services.now())
    found = []
    for memory_id in memory_ids:
        held = entries.get(memory_id)
        if held is not None:
            found.append(
                {
                    "id": memory_id,
                    "uses": held.uses,
                    "last_use": None if held.last_use is None else _when(held.last_use).isoformat(),
                    "feedback": held.feedback,
                }
            )
    return found
