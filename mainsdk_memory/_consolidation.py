"""Consolidation: repeated evidence about a person becomes an insight, and near-duplicates merge.

:func:`consolidate` (``handle.consolidate()``, ``memory consolidate``) reads the current
memories about the handle's person that the handle may see — through the handle's own filter
(its grant, its session, the kill switch), each opened through the integrity check and the
injection screen — and keeps as *evidence* only what others may rely on: never shared
(tenant) memory, never a quarantined (untrusted) or session-only memory, never a child's,
never a disputed one, never an insight. For a child (a guardian policy) it reads nothing.
No model runs: evidence is compared with formation's own classifier
(:func:`mainsdk_memory._formation.classify`), the store's embedder (cosines, and
:func:`mainsdk_memory._forming.word_similarity` for near-synonyms) and the rule below.

Two passes, each a list of *groups*; ``progress(done, total)`` is called after each group:

1. **Merges.** Two memories of one kind and one trust (``confirmed`` or ``inferred``), with
   the same typed data, of which formation would call the newer a ``duplicate`` of the older,
   are one memory twice: the stronger (pinned first, then the older) absorbs the others with
   ``handle.merge(..., text=<its own text>)``, which retracts them and carries their links.
   An agent's handle leaves a group whose survivor the person confirmed (a merge by an agent
   would make the text the agent's, ``inferred``): the person's handle merges it.
2. **Insights.** What remains is grouped: a memory and those that *restate* it
   (:func:`relation`) — another wording of one preference, one event on other dates.
   A group of at least :data:`MIN_MEMORIES` memories, or from at least :data:`MIN_SESSIONS`
   sessions, becomes one insight: ``remember(text, kind="insight", derived_from=[...],
   formation=False, source=Source.agent("consolidation"))`` (trust ``inferred``; the labels
   of its sources), whose text is the group's most recent statement and how it recurs:
   "Ada wants an aisle seat (said in 3 conversations, 2026-03 to 2026-06)."

Idempotent and resumable: a group is *covered* when an insight derived from all of its
memories exists — current and seen by this handle, or retracted (a person who retracted an
insight is not given it again; a forget leaves no trace, so a later run may find the
evidence again). Covered groups and finished merges are not work, so a second run changes
nothing and an interrupted run finishes the rest. A group that grew gets a *new* insight,
derived from the whole group, which then absorbs (``merge``) the earlier consolidation
insights about part of it: the lineage (``supersedes``) says which it replaced.

A forget of any source erases the insight with it (``derived_from``: :mod:`._relations`).
Run one consolidation per person at a time: two at once may both write a group's insight.
Formation's cues are English; in other languages the rule compares terms and vectors alone.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import (
    MemoryConflictError,
    MemoryNotFound,
    ScopeError,
)

# Formation's own reading of a text (its terms, names, negation, whose fact it is), so
# consolidation decides from what formation sees.
from mainsdk_memory._formation import (
    RELATED,
    SYNONYM,
    Neighbour,
    WordSimilarity,
    _holders,
    _read,
    _Text,
    _unmatched,
    classify,
)
from mainsdk_memory._forming import scope_filter, word_similarity
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._options import Settings
from mainsdk_memory._progress import Progress, checked
from mainsdk_memory._records import Kind, MemoryRecord, Source, Trust
from mainsdk_memory._relations import links_of, require_relations
from mainsdk_memory._sealing import embedding_index, open_record
from mainsdk_memory._text import DEFAULT_LANGUAGE, index_terms
from mainsdk_memory._walls import screen
from mainsdk_memory.drivers import StoredRow

if TYPE_CHECKING:
    from mainsdk_memory._scoped import _Handle

__all__ = [
    "CONSOLIDATION_SOURCE",
    "CORE_SHARE",
    "MAX_SOURCES",
    "MIN_MEMORIES",
    "MIN_SESSIONS",
    "ConsolidationReport",
    "Progress",
    "consolidate",
    "relation",
]

# -- thresholds (chosen on the cases of tests/test_consolidation.py) -------------------------

#: Memories that restate one thing from which they are repeated evidence, in any sessions.
MIN_MEMORIES: Final = 3
#: Sessions (conversations) from which restatements are repeated evidence, however few.
MIN_SESSIONS: Final = 2
#: The least share of the larger side's core terms the smaller side's must be: "likes jazz"
#: restates "listens to jazz most evenings" (1 of 2), not "went to a jazz concert in Lisbon
#: with Tom" (1 of 4).
CORE_SHARE: Final = 0.5
#: The most memories one insight is derived from (the most recent of a larger group).
MAX_SOURCES: Final = 64
#: The source id of every insight consolidation writes (``Source.agent(...)``).
CONSOLIDATION_SOURCE: Final = "consolidation"
#: Rows read per page of the listing.
_PAGE: Final = 500
#: Rows of the cosine matrix computed at once.
_CHUNK: Final = 256

Relation = Literal["duplicate", "restates"]


def _stems(words: str) -> frozenset[str]:
    return frozenset(term for word in words.split() for term in index_terms(word, DEFAULT_LANGUAGE))


#: Words that frame a statement without saying what it is about: how it was said ("prefer",
#: "asked for", "again"), not its subject ("aisle seat", "migraine").
_STANCE: Final = _stems(
    "prefer prefers like likes love loves enjoy enjoys want wants wanted favourite favorite "
    "always usually usual please book booked pick picked choose chose order ordered ask "
    "asked get got take took went go tend really best often every whenever need needs again "
    "once more still had having fan keen drink drinks eat eats listen listens watch watches "
    "another big"
)
#: Words of aversion: "hates aisle seats" never restates "prefers aisle seats".
_AVERSE: Final = _stems("hate hates dislike dislikes avoid avoids loathe loathes detest detests")


class ConsolidationReport(BaseModel):
    """What one :func:`consolidate` did for one person (ids and counts only)."""

    model_config = ConfigDict(frozen=True)

    memories: int = 0
    """Memories used as evidence."""
    left_out: int = 0
    """Memories seen but never used: quarantined, session-only, a child's, disputed."""
    groups: int = 0
    """Groups with work in this run (the ``total`` of ``progress``)."""
    merged: int = 0
    """Memories merged into another (retracted, their links carried)."""
    insights: int = 0
    """Insights written."""
    superseded: int = 0
    """Earlier consolidation insights absorbed by the new insight of a group that grew."""
    covered: int = 0
    """Groups an insight already covered: nothing to do."""
    left_for_person: int = 0
    """Groups of duplicates an agent left: their survivor is confirmed (the person merges)."""
    changed: int = 0
    """Groups skipped because one of their memories changed or went meanwhile."""
    child: bool = False
    """The person is a child: nothing was read."""
    merge_ids: tuple[str, ...] = ()
    """The memories that absorbed others."""
    insight_ids: tuple[str, ...] = ()
    """The insights written."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return self.model_dump(mode="json")


# -- the rule ------------------------------------------------------------------------------


def relation(
    candidate: str,
    held: Neighbour,
    *,
    language: str = DEFAULT_LANGUAGE,
    similar: WordSimilarity | None = None,
) -> Relation | None:
    """How ``candidate`` (the newer memory's text) relates to ``held`` (an older memory of
    the same kind) as evidence: ``"duplicate"`` (formation would call it one), ``"restates"``
    (another wording of the same thing, or the same event on another date), or ``None``.

    Both must be about the same holder (no relative or other name on one side only), with
    the same polarity (a negation, an aversion) — a guard formation's duplicates pass too.
    The *core* terms of one side (what is left without the words of :data:`_STANCE` and the
    dates) must all be held by the other (alike or near-synonym words count): without that
    neither is a duplicate, so formation's classifier runs only then, and a supersession or
    a contradiction is never repeated evidence. To restate, the smaller core is also at
    least :data:`CORE_SHARE` of the larger."""
    if language != held.language:
        return None
    new, old = _read(candidate, language), _read(held.text, held.language)
    english = language == DEFAULT_LANGUAGE
    if not _same_holder(new, old) or new.negated != old.negated:
        return None
    if english and bool(new.terms & _AVERSE) != bool(old.terms & _AVERSE):
        return None
    share = _core_share(new, old, english, similar)
    if share == 0.0:
        return None
    decision = classify(candidate, [held], language=language, similar=similar)
    if decision.outcome in ("supersession", "contradiction"):
        return None
    if decision.outcome == "duplicate":
        return "duplicate"
    return "restates" if share is not None and share >= CORE_SHARE else None


def _same_holder(one: _Text, other: _Text) -> bool:
    """Whether both texts state a fact of one holder: the same relatives named, and not two
    different names starting them ("Ada likes jazz", "Ben likes jazz")."""
    if _holders(one) - one.first != _holders(other) - other.first:
        return False
    return not (one.first and other.first and one.first != other.first)


def _core(text: _Text, english: bool) -> frozenset[str]:
    dated = {term for term, word in text.written.items() if word in text.dated}
    return text.terms - (_STANCE if english else frozenset()) - dated


def _core_share(
    one: _Text, other: _Text, english: bool, similar: WordSimilarity | None
) -> float | None:
    """The smaller core's share of the larger when the larger holds all of it, ``0.0`` when
    it does not, ``None`` when a side has no core (only the classifier can tell)."""
    sides = sorted(((_core(one, english), one), (_core(other, english), other)),
                   key=lambda side: len(side[0]))
    (small, small_text), (large, large_text) = sides
    if not small:
        return None
    left = _unmatched(small, large)
    if left and similar is not None:
        left = frozenset(
            term for term in left
            if not any(
                similar(small_text.written[term], large_text.written[other]) >= SYNONYM
                for other in large
            )
        )
    return 0.0 if left else len(small) / len(large)


# -- the evidence ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Evidence:
    record: MemoryRecord
    row: StoredRow

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def when(self) -> datetime:
        """When it was said: its source's time, else the earlier of its first recording and
        its validity (a past conversation remembered later is dated by the conversation)."""
        record = self.record
        if record.source.at is not None:
            return record.source.at
        return min(record.created_at, record.valid_from)

    def strength(self) -> tuple[bool, datetime, str]:
        """Sorts the one a merge keeps first: pinned, then the older."""
        return (not self.record.pinned, self.record.created_at, self.id)

    def order(self) -> tuple[datetime, datetime, str]:
        return (self.when, self.record.created_at, self.id)


def _read_all(caller: Caller) -> tuple[list[_Evidence], list[MemoryRecord], int]:
    """The evidence, the insights and how many memories were left out, from every memory
    about the person this handle may see (opened, checked, screened)."""
    store = caller.services.store
    where = scope_filter(caller, caller.person)  # the handle's filter: grant, session, kill
    rows: list[StoredRow] = []
    after: tuple[datetime, str] | None = None
    while True:
        page = store.list(where, limit=_PAGE, after=after)
        rows += page
        if len(page) < _PAGE:
            break
        after = (page[-1].created_at, page[-1].memory_id)
    opened = leave_out_tampered(caller, rows, lambda row: (row, open_record(caller, row)))
    kept = {record.id for record in screen(caller, [record for _, record in opened])}
    evidence: list[_Evidence] = []
    insights: list[MemoryRecord] = []
    left_out = 0
    for row, record in opened:
        if record.id not in kept:
            continue
        if record.trust is Trust.UNTRUSTED or record.session_only or record.key is not None:
            left_out += 1  # (a keyed memory is the app's: never merged away from its key)
        elif record.kind is Kind.INSIGHT:
            insights.append(record)
        elif validate.CHILD_LABEL in record.labels or record.status != "active":
            left_out += 1
        else:
            evidence.append(_Evidence(record, row))
    # A fork's copy is the same evidence as the memory it was copied from: where both are
    # seen (the person's handle, a grant to read all), only the original counts, so a copy
    # is never merged into or counted beside its original.
    seen = {one.id: one.record.text for one in evidence}
    copies = [  # a copy its fork revised since says something of its own: evidence too
        one for one in evidence
        if one.record.forked_from in seen and seen[one.record.forked_from] == one.record.text
    ]
    return [one for one in evidence if one not in copies], insights, left_out + len(copies)


def _pairs(
    evidence: Sequence[_Evidence], vectors: dict[str, npt.NDArray[np.float32]]
) -> set[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of memories of one kind worth comparing: sharing a
    core term (:func:`relation`), or with a cosine at least formation's ``RELATED``."""
    found: set[tuple[int, int]] = set()
    by_term: dict[tuple[str, str], list[int]] = {}
    for index, one in enumerate(evidence):
        language = one.record.language
        for term in _core(_read(one.record.text, language), language == DEFAULT_LANGUAGE):
            by_term.setdefault((one.record.kind.value, term), []).append(index)
    for indices in by_term.values():
        found.update(
            (first, second)
            for position, first in enumerate(indices)
            for second in indices[position + 1 :]
        )
    with_vectors = [index for index, one in enumerate(evidence) if one.id in vectors]
    if len(with_vectors) > 1:
        matrix = np.stack([vectors[evidence[index].id] for index in with_vectors])
        kinds = np.array([evidence[index].record.kind.value for index in with_vectors])
        for start in range(0, len(with_vectors), _CHUNK):
            block = matrix[start : start + _CHUNK] @ matrix.T
            rows, columns = np.nonzero(block >= RELATED)
            for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
                first, second = start + row, column
                if first < second and kinds[first] == kinds[second]:
                    found.add((with_vectors[first], with_vectors[second]))
    return found


@dataclass(frozen=True, slots=True)
class _Merge:
    survivor: _Evidence
    absorbed: tuple[_Evidence, ...]


@dataclass(frozen=True, slots=True)
class _Group:
    members: tuple[_Evidence, ...]
    """Oldest first."""
    stale: tuple[str, ...]
    """Other consolidation insights about part of it: absorbed by its insight."""
    insight: MemoryRecord | None = None
    """The consolidation insight that covers it already (only ``stale`` is left to do)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    merges: list[_Merge]
    groups: list[_Group]
    covered: int
    left_for_person: int


def _plan(caller: Caller, evidence: list[_Evidence], insights: list[MemoryRecord]) -> _Plan:
    index = embedding_index(caller, child=False)  # children never get here
    similar = None if index is None else word_similarity(index)
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    if index is not None and evidence:
        embedded = index.embed_many([one.record.text for one in evidence])
        vectors = {one.id: vector for one, vector in zip(evidence, embedded, strict=True)}
    duplicates: dict[str, set[str]] = {one.id: set() for one in evidence}
    restates: dict[str, set[str]] = {one.id: set() for one in evidence}
    for first, second in _pairs(evidence, vectors):
        older, newer = sorted((evidence[first], evidence[second]), key=_Evidence.order)
        cosine = None
        if older.id in vectors and newer.id in vectors:
            cosine = float(vectors[older.id] @ vectors[newer.id])
        held = Neighbour(older.id, older.record.text, cosine, older.record.language)
        found = relation(newer.record.text, held, language=newer.record.language,
                         similar=similar)
        if found is not None:
            (duplicates if found == "duplicate" else restates)[older.id].add(newer.id)
            (duplicates if found == "duplicate" else restates)[newer.id].add(older.id)
    by_id = {one.id: one for one in evidence}
    merges, left_for_person = _merges(caller, evidence, duplicates, by_id)
    absorbed = {one.id for merge in merges for one in merge.absorbed}
    remaining = [one for one in evidence if one.id not in absorbed]
    groups, covered = _groups(caller, remaining, duplicates, restates, insights)
    return _Plan(merges, groups, covered, left_for_person)


def _merges(
    caller: Caller,
    evidence: list[_Evidence],
    duplicates: dict[str, set[str]],
    by_id: dict[str, _Evidence],
) -> tuple[list[_Merge], int]:
    """Each memory with duplicates, strongest first, and the duplicates it absorbs."""
    merges: list[_Merge] = []
    used: set[str] = set()
    left = 0
    for survivor in sorted(evidence, key=_Evidence.strength):
        if survivor.id in used:
            continue
        mine = [by_id[one] for one in duplicates[survivor.id] - used]
        alike = [one for one in sorted(mine, key=_Evidence.strength) if _mergeable(survivor, one)]
        if not alike:
            continue
        used.update(one.id for one in (survivor, *alike))
        if survivor.record.trust is Trust.CONFIRMED and not caller.is_person:
            left += 1
            continue
        merges.append(_Merge(survivor, tuple(alike)))
    return merges, left


def _mergeable(survivor: _Evidence, other: _Evidence) -> bool:
    """Whether ``other`` may be merged into ``survivor``: same kind, trust and data, and
    the same owner (a merge retracts the absorbed memory: one agent's is never retracted
    into another's, whose handle may be independent of it, a fork's)."""
    one, two = survivor.record, other.record
    return (
        one.kind is two.kind
        and one.trust is two.trust
        and one.data == two.data
        and one.scope.agent == two.scope.agent
    )


def _groups(
    caller: Caller,
    remaining: list[_Evidence],
    duplicates: dict[str, set[str]],
    restates: dict[str, set[str]],
    insights: list[MemoryRecord],
) -> tuple[list[_Group], int]:
    """Each memory, oldest first, with those that restate it (a duplicate left unmerged
    restates it too), when they are repeated evidence; covered groups are counted."""
    by_id = {one.id: one for one in remaining}
    assigned: set[str] = set()
    groups: list[_Group] = []
    covered = 0
    for seed in sorted(remaining, key=_Evidence.order):
        if seed.id in assigned:
            continue
        linked = (duplicates[seed.id] | restates[seed.id]) & by_id.keys()
        members = [seed, *sorted((by_id[one] for one in linked - assigned),
                                 key=_Evidence.order)]
        sessions = {one.row.session for one in members if one.row.session is not None}
        if len(members) < MIN_MEMORIES and len(sessions) < MIN_SESSIONS:
            continue
        assigned.update(one.id for one in members)
        members = members[-MAX_SOURCES:]
        ids = {one.id for one in members}
        group = _covering(caller, tuple(members), ids, insights)
        if group is None:
            covered += 1
        else:
            groups.append(group)
    return groups, covered


def _covering(
    caller: Caller, members: tuple[_Evidence, ...], ids: set[str], insights: list[MemoryRecord]
) -> _Group | None:
    """The work a group needs: a new insight (absorbing the consolidation insights about part
    of it), only the absorbing (one of ours covers it already), or nothing (``None``)."""
    ours = [insight for insight in insights if _ours(insight) and ids & set(insight.derived_from)]
    covering = [insight for insight in insights if ids <= set(insight.derived_from)]
    if covering:
        # The covering insight of ours with the most sources absorbs the other ones of ours
        # (two runs at once, or one about a part of the group); another's is left as it is.
        mine = sorted((insight for insight in covering if _ours(insight)),
                      key=lambda insight: (-len(insight.derived_from), insight.created_at))
        if not mine:
            return None
        stale = tuple(insight.id for insight in ours if insight.id != mine[0].id)
        return _Group(members, stale, mine[0]) if stale else None
    if _derived_from_all(caller, ids):
        return None  # retracted (the person said no), or one this handle may not see
    return _Group(members, tuple(insight.id for insight in ours))


def _ours(record: MemoryRecord) -> bool:
    source = record.source
    return (
        record.kind is Kind.INSIGHT
        and source.kind == "agent"
        and source.id == CONSOLIDATION_SOURCE
    )


def _derived_from_all(caller: Caller, ids: set[str]) -> bool:
    """Whether a memory was derived from all of ``ids``, read from their links (which a
    forget erases): a retracted insight, or one this handle's grant does not show."""
    derived: set[str] | None = None
    for memory_id in sorted(ids):
        found = {
            link.target for link in links_of(caller, memory_id)
            if link.kind == "derived_from" and link.direction == "in"
        }
        derived = found if derived is None else derived & found
        if not derived:
            return False
    return bool(derived)


# -- the writes ------------------------------------------------------------------------------


def _month(when: datetime) -> str:
    return f"{when.year:04d}-{when.month:02d}"


def _insight_text(members: Sequence[MemoryRecord], whens: Sequence[datetime],
                 sessions: int, max_chars: int) -> str:
    """The text of a group's insight: its most recent statement and how it recurs."""
    statement = unicodedata.normalize("NFC", members[-1].text).strip().rstrip(".").rstrip()
    first, last = _month(min(whens)), _month(max(whens))
    span = first if first == last else f"{first} to {last}"
    if members[-1].kind is Kind.EVENT:
        how = f"happened {len(members)} times"
    elif sessions >= MIN_SESSIONS and sessions == len(members):
        how = f"said in {sessions} conversations"
    else:
        how = f"said {len(members)} times"
    tail = f" ({how}, {span})."
    if len(statement) + len(tail) > max_chars:
        statement = statement[: max_chars - len(tail) - 1].rstrip() + "…"
    return statement + tail


def _write_insight(
    handle: _Handle, group: _Group, settings: Settings
) -> MemoryRecord | None:
    """Remember the group's insight (``None`` if one of its memories went meanwhile)."""
    records = [one.record for one in group.members]
    sessions = {one.row.session for one in group.members if one.row.session is not None}
    text = _insight_text(records, [one.when for one in group.members], len(sessions),
                        settings.max_text_chars)
    try:
        return handle.remember(
            text,
            kind=Kind.INSIGHT.value,
            source=Source.agent(CONSOLIDATION_SOURCE),
            # the latest statement's labels; remember adds the others' (derived_from)
            labels=list(records[-1].labels) or None,
            language=records[-1].language,
            formation=False,
            derived_from=[record.id for record in records],
        )
    except (MemoryNotFound, ScopeError):
        return None


def consolidate(
    handle: _Handle, *, progress: Progress | None = None
) -> ConsolidationReport:
    """Merge the near-duplicates and promote the repeated evidence about ``handle``'s person
    (see the module); one audit event, with ids and counts only."""
    caller = handle._caller
    services = caller.services
    tenant_id = caller.tenant_id()
    with services.audit.call(
        tenant_id, "consolidate", actor=caller.actor, person=caller.person
    ) as note:
        require_relations(caller, "consolidate")
        progress = checked(progress)
        if caller.is_child():
            note.count = 0
            note.extra.append(("child", "skipped"))
            return ConsolidationReport(child=True)
        evidence, insights, left_out = _read_all(caller)
        plan = _plan(caller, evidence, insights)
        total = len(plan.merges) + len(plan.groups)
        counts = {"merged": 0, "insights": 0, "superseded": 0, "changed": 0}
        merge_ids: list[str] = []
        insight_ids: list[str] = []
        retired: set[str] = set()
        done = note.count = 0

        def finished() -> None:
            nonlocal done
            done += 1
            note.count = done
            if progress is not None:
                progress(done, total)

        try:
            for merge in plan.merges:
                try:
                    handle.merge(
                        merge.survivor.id,
                        [one.id for one in merge.absorbed],
                        text=merge.survivor.record.text,
                    )
                except (MemoryNotFound, MemoryConflictError, ScopeError):
                    counts["changed"] += 1  # changed, forgotten or revised meanwhile
                else:
                    counts["merged"] += len(merge.absorbed)
                    merge_ids.append(merge.survivor.id)
                finished()
            for group in plan.groups:
                target = group.insight
                if target is None:
                    target = _write_insight(handle, group, services.settings)
                    if target is None:
                        counts["changed"] += 1
                        finished()
                        continue
                    counts["insights"] += 1
                    insight_ids.append(target.id)
                stale = [one for one in group.stale if one not in retired]
                if stale:
                    try:
                        handle.merge(target.id, stale, text=target.text)
                    except (MemoryNotFound, MemoryConflictError, ScopeError):
                        counts["changed"] += 1
                    else:
                        counts["superseded"] += len(stale)
                        retired.update(stale)
                finished()
        finally:
            note.memory_ids.extend([*merge_ids, *insight_ids])
            note.extra.extend(
                (name, str(value)) for name, value in (
                    ("merged", counts["merged"]), ("insights", counts["insights"]),
                    ("covered", plan.covered),
                )
            )
        return ConsolidationReport(
            memories=len(evidence),
            left_out=left_out,
            groups=total,
            merged=counts["merged"],
            insights=counts["insights"],
            superseded=counts["superseded"],
            covered=plan.covered,
            left_for_person=plan.left_for_person,
            changed=counts["changed"],
            merge_ids=tuple(merge_ids),
            insight_ids=tuple(insight_ids),
        )

