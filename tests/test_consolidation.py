"""Consolidation (issue 16): repeated evidence about a person becomes one insight derived from
it, near-duplicates merge, and nothing others may not rely on is ever used: quarantined,
session-only, a child's, another person's, another agent's under an ``own`` grant. A second
run changes nothing, an interrupted one resumes, and forgetting a source forgets the insight.

The rule's cases come first (no store: they chose the thresholds); the rest runs on every
driver in conftest.STORES.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_base_driver import DictDriver

from mainsdk_memory import (
    AgentDisabledError,
    InvalidInputError,
    Link,
    Memory,
    MemoryCapabilityError,
    MemoryNotFound,
    Source,
    TenantMismatchError,
    Trust,
    tenant,
)
from mainsdk_memory._cli import main
from mainsdk_memory._consolidation import (
    CONSOLIDATION_SOURCE,
    ConsolidationReport,
    relation,
)
from mainsdk_memory._formation import Neighbour
from mainsdk_memory._forming import word_similarity
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.embeddings import StaticEmbedder
from mainsdk_memory.keys import KeyStore

# -- the rule's cases (older ~ newer) ------------------------------------------------------

RESTATES = [
    ("Ada prefers aisle seats.", "Ada asked for an aisle seat on the flight."),
    ("Ada prefers aisle seats.", "Ada wants an aisle seat again."),
    ("Ada prefers aisle seats.", "Ada picked an aisle seat for the trip."),
    ("I like an aisle seat.", "Ada prefers aisle seats."),
    ("Ada had a migraine on Monday.", "Ada had another migraine on Friday."),
    ("Ada had a migraine on Monday.", "Ada got a migraine again in March."),
    ("I went running on Monday.", "I went running on Thursday."),
    ("I drink green tea every morning.", "I had my usual green tea."),
    ("Ada likes jazz.", "Ada listens to jazz most evenings."),
    ("Ada loves jazz.", "Ada is a big jazz fan."),
    ("I hate aisle seats.", "I really dislike aisle seats."),
]
#: Alike in words or vectors, and still not the same evidence.
DIFFERENT = [
    ("Ada likes jazz.", "Ada went to a jazz concert in Lisbon with Tom."),  # 1 of 4 core terms
    ("Ada likes jazz.", "Ada listens to old jazz records."),  # 1 of 3: not sure, so no
    ("Ada prefers aisle seats.", "Ada hates aisle seats."),  # an aversion
    ("Ada prefers aisle seats.", "Ada doesn't want an aisle seat."),  # a negation
    ("Ada prefers aisle seats.", "Ada prefers window seats."),  # another value
    ("Ada went running on Monday.", "Ada went swimming on Monday."),  # another activity
    ("My sister lives in Lisbon.", "I live in Lisbon."),  # another holder
    ("Ada likes jazz.", "Ben likes jazz."),  # another person
    ("Ada plays tennis on Sundays.", "Ada plays the piano on Sundays."),
    ("Ada has a meeting with Tom on Monday.", "Ada has a dentist appointment on Monday."),
    ("Ada is allergic to peanuts.", "Ada is allergic to shellfish."),
    ("Ada flew to Lisbon on Monday.", "Ada flew to Paris on Friday."),
    ("I like green tea.", "I like green apples."),
]


def test_the_rule_on_its_cases() -> None:
    index = VectorIndex(StaticEmbedder())
    similar = word_similarity(index)

    def related(older: str, newer: str, *, vectors: bool) -> str | None:
        cosine = float(index.embed(older) @ index.embed(newer)) if vectors else None
        return relation(newer, Neighbour("mem_older", older, cosine),
                        similar=similar if vectors else None)

    assert [related(*case, vectors=True) for case in RESTATES] == ["restates"] * len(RESTATES)
    for case in DIFFERENT:  # never the same evidence, with or without an embedder
        assert (related(*case, vectors=True), related(*case, vectors=False)) == (None, None)
    same = "Ada is allergic to penicillin."
    assert related(same, same, vectors=True) == related(same, same, vectors=False) == "duplicate"
    assert related("My sister lives in Lisbon.", "I live in Lisbon.", vectors=True) is None


# -- on every driver -----------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("acme")

AISLE = [
    ("s1", "Ada prefers aisle seats.", 3),
    ("s2", "Ada asked for an aisle seat on the flight.", 4),
    ("s3", "Ada wants an aisle seat again.", 6),
]
MIGRAINES = [
    ("Ada had a migraine on Monday.", 1),
    ("Ada had another migraine on Friday.", 2),
    ("Ada got a migraine again in March.", 3),
]


def _month(month: int) -> datetime:
    return datetime(2026, month, 2, tzinfo=UTC)


def _aisle(memory: Memory, person: str = "ada", agent: str = "bot") -> list[str]:
    """The aisle-seat preference said in three sessions (formation keeps three memories)."""
    ids = []
    for session, text, month in AISLE:
        handle = memory.acting_for(person, agent=agent, session=session)
        record = handle.remember(text.replace("Ada", person.title()), kind="preference",
                                 valid_from=_month(month))
        assert record.formation is not None and record.formation.outcome in ("novel", "related")
        ids.append(record.id)
    return ids


def _held(memory: Memory, person: str = "ada") -> list[tuple[str, int, str]]:
    items = memory.person(person).list(limit=100).items
    return sorted((record.id, record.version, record.status) for record in items)


def test_a_preference_said_in_three_sessions_becomes_one_insight(
    audited: Memory, sink: MemorySink
) -> None:
    ids = _aisle(audited)
    cello = audited.acting_for("ada", agent="bot").remember("Ada plays the cello.")
    ada = audited.person("ada")
    seen: list[tuple[int, int]] = []
    report = ada.consolidate(progress=lambda done, total: seen.append((done, total)))
    assert isinstance(report, ConsolidationReport)
    assert (report.memories, report.groups, report.insights, report.merged) == (4, 1, 1, 0)
    assert seen == [(1, 1)]
    insight = ada.get(report.insight_ids[0])
    assert insight.text == (
        "Ada wants an aisle seat again (said in 3 conversations, 2026-03 to 2026-06)."
    )
    assert (insight.kind, insight.trust) == ("insight", Trust.INFERRED)
    assert insight.source == Source.agent(CONSOLIDATION_SOURCE)
    assert insight.derived_from == tuple(ids)
    assert {Link(kind="derived_from", target=one) for one in ids} <= set(ada.links(insight.id))
    for one in ids:
        assert Link(kind="derived_from", target=insight.id, direction="in") in ada.links(one)
    assert cello.id not in insight.derived_from

    held = _held(audited)
    again = ada.consolidate(progress=lambda done, total: seen.append((done, total)))
    assert (again.groups, again.insights, again.covered) == (0, 0, 1)
    assert _held(audited) == held and seen == [(1, 1)]  # a no-op: nothing written, no group
    ada.retract(insight.id)  # the person says it is wrong: it is not written again
    assert ada.consolidate().covered == 1
    assert all(record.kind != "insight" for record in ada.list(limit=100).items)

    events = [event for event in sink.events if event.operation == "consolidate"]
    assert [(event.outcome, event.count) for event in events] == [("ok", 1), ("ok", 0), ("ok", 0)]
    assert events[0].memory_ids == (insight.id,)
    assert ("insights", "1") in events[0].extra
    assert "aisle" not in json.dumps([event.to_dict() for event in events]).lower()


def test_near_duplicates_merge_into_the_older(memory: Memory) -> None:
    ada = memory.person("ada")
    said = ada.remember("Ada is allergic to penicillin.")  # confirmed: another trust
    # One agent wrote the same fact twice (formation off); another agent wrote it too.
    a1 = memory.acting_for("ada", agent="a1")
    first = a1.remember("Ada is allergic to penicillin.")
    second = a1.remember("Ada is allergic to penicillin.", formation=False)
    other = memory.acting_for("ada", agent="a2").remember("Ada is allergic to penicillin.")
    oat = ada.remember("Ada drinks oat milk.")
    oat_again = ada.remember("Ada drinks oat milk.", formation=False)
    memory.grant("tidy", read="all")
    tidy = memory.acting_for("ada", agent="tidy").consolidate()
    # The agent merges the inferred pair of one owner, and leaves the confirmed one to the
    # person: its merge would make the person's words the agent's. a2's copy of the fact is
    # a2's: merging it would retract it from an agent that sees only its own memories.
    assert (tidy.merged, tidy.merge_ids, tidy.left_for_person) == (1, (first.id,), 1)
    assert memory.acting_for("ada", agent="a2").get(other.id).status == "active"
    with pytest.raises(MemoryNotFound):
        ada.get(second.id)
    assert ada.history(second.id)[-1].status == "retracted"
    assert Link(kind="supersedes", target=second.id) in ada.links(first.id)
    assert ada.get(first.id).text == "Ada is allergic to penicillin."
    assert ada.get(said.id).version == 1  # another trust: not merged
    mine = ada.consolidate()
    assert (mine.merged, mine.merge_ids, mine.insights) == (1, (oat.id,), 0)
    assert ada.get(oat.id).trust is Trust.CONFIRMED
    with pytest.raises(MemoryNotFound):
        ada.get(oat_again.id)
    assert ada.consolidate().groups == 0


def test_quarantined_session_only_and_other_peoples_memories_are_never_evidence(
    memory: Memory,
) -> None:
    bot = memory.acting_for("ada", agent="bot", session="s1")
    for _, text, _ in AISLE:
        bot.remember(text, kind="preference", source=Source.tool("crm"))
    for text in ("Ada likes jazz.", "Ada listens to jazz most evenings.", "Ada loves jazz."):
        bot.remember(text, kind="preference", session_only=True)
    _aisle(memory, person="bob")  # bob's would be an insight: never in ada's
    held = _held(memory)
    for handle in (bot, memory.person("ada")):  # both see all six
        report = handle.consolidate()
        assert (report.memories, report.left_out, report.groups) == (0, 6, 0)
    assert _held(memory) == held
    assert memory.person("bob").consolidate().insights == 1


def test_a_childs_memories_are_never_consolidated(memory: Memory) -> None:
    memory.privacy.set_guardian("tim", guardian="ana")
    memory.privacy.record_consent("tim", guardian="ana")
    for session, text in (("s1", "Tim loves dinosaurs."), ("s2", "Tim drew a dinosaur."),
                          ("s3", "Tim talked about dinosaurs again.")):
        memory.acting_for("tim", agent="tutor", session=session).remember(text)
    memory.acting_for("tim", agent="coach").remember("Tim loves dinosaurs.")  # a duplicate
    held = _held(memory, "tim")
    for handle in (memory.person("tim"), memory.acting_for("tim", agent="tutor")):
        report = handle.consolidate()
        assert report.child and (report.memories, report.groups) == (0, 0)
    assert _held(memory, "tim") == held


def test_an_agent_sees_only_what_its_grant_lets_it(memory: Memory) -> None:
    memory.acting_for("ada", agent="bot1", session="s1").remember(
        "Ada prefers aisle seats.", kind="preference"
    )
    other = memory.acting_for("ada", agent="bot2", session="s2")
    for text in ("Ada asked for an aisle seat on the flight.", "Ada wants an aisle seat again."):
        other.remember(text, kind="preference")
    bot1 = memory.acting_for("ada", agent="bot1")
    report = bot1.consolidate()  # "own": its one memory, no group
    assert (report.memories, report.insights) == (1, 0)
    assert other.consolidate().insights == 0  # two memories in one session: not enough
    memory.grant("bot1", read="all")
    report = bot1.consolidate()
    assert (report.memories, report.insights) == (3, 1)
    assert len(bot1.get(report.insight_ids[0]).derived_from) == 3
    memory.kill("bot1")
    held = _held(memory)
    with pytest.raises(AgentDisabledError):
        bot1.consolidate()
    with tenant.use("globex"), pytest.raises(TenantMismatchError):
        other.consolidate()
    with pytest.raises(InvalidInputError):
        other.consolidate(progress=3)  # type: ignore[arg-type]
    assert _held(memory) == held


class _Stop(Exception):
    pass


def test_an_interrupted_run_resumes(memory: Memory) -> None:
    _aisle(memory)
    bot = memory.acting_for("ada", agent="bot")
    for text, month in MIGRAINES:
        bot.remember(text, kind="event", valid_from=_month(month))
    a1 = memory.acting_for("ada", agent="a1")
    first = a1.remember("Ada is allergic to penicillin.")
    second = a1.remember("Ada is allergic to penicillin.", formation=False)
    ada = memory.person("ada")

    def stop(done: int, total: int) -> None:
        assert (done, total) == (1, 3)
        raise _Stop

    with pytest.raises(_Stop):
        ada.consolidate(progress=stop)
    # The first group (the merge) is done; no insight was written yet.
    with pytest.raises(MemoryNotFound):
        ada.get(second.id)
    assert all(record.kind != "insight" for record in ada.list(limit=100).items)
    seen: list[tuple[int, int]] = []
    report = ada.consolidate(progress=lambda done, total: seen.append((done, total)))
    assert (report.groups, report.merged, report.insights) == (2, 0, 2)
    assert seen == [(1, 2), (2, 2)]
    texts = {ada.get(one).text for one in report.insight_ids}
    assert "Ada got a migraine again in March (happened 3 times, 2026-01 to 2026-03)." in texts
    assert ada.get(first.id).is_current
    assert (ada.consolidate().groups, ada.consolidate().covered) == (0, 2)


def test_a_group_that_grew_gets_a_new_insight_that_supersedes_the_old(memory: Memory) -> None:
    ids = _aisle(memory)
    ada = memory.person("ada")
    old = ada.consolidate().insight_ids[0]
    more = memory.acting_for("ada", agent="bot", session="s4").remember(
        "Ada picked an aisle seat for the trip.", kind="preference", valid_from=_month(7)
    )
    report = ada.consolidate()
    assert (report.insights, report.superseded) == (1, 1)
    new = ada.get(report.insight_ids[0])
    assert new.text == (
        "Ada picked an aisle seat for the trip (said in 4 conversations, 2026-03 to 2026-07)."
    )
    assert set(new.derived_from) == {*ids, more.id}
    assert Link(kind="supersedes", target=old) in ada.links(new.id)
    with pytest.raises(MemoryNotFound):
        ada.get(old)
    assert ada.consolidate().groups == 0


def test_forgetting_a_source_forgets_the_insight(memory: Memory) -> None:
    ids = _aisle(memory)
    ada = memory.person("ada")
    insight = ada.consolidate().insight_ids[0]
    receipt = ada.forget(ids[1])
    assert receipt.claims["derived_ids"] == [insight]
    with pytest.raises(MemoryNotFound):
        ada.get(insight)
    assert {record.id for record in ada.list(limit=100).items} == {ids[0], ids[2]}


def test_the_cli_consolidates_the_people_named(
    store_url: str, keys_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as memory:
        _aisle(memory)
        memory.acting_for("bob", agent="a1").remember("Bob is a nurse.")
        memory.acting_for("bob", agent="a1").remember("Bob is a nurse.", formation=False)
    people = tmp_path / "people.txt"
    people.write_text("bob\n", encoding="utf-8")
    command = ["consolidate", "--store", store_url, "--keys", str(keys_path), "--app", "app",
               "--tenant", "acme"]
    assert main([*command, "--person", "ada", "--people", str(people)]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)["tenants"]["acme"]
    assert (summary["people"], summary["insights"], summary["merged"]) == (2, 1, 1)
    assert [one["insights"] for one in summary["each"]] == [1, 0]
    assert "consolidate acme: person 1/2: 1/1 groups" in err
    assert "ada" not in err and "bob" not in err  # progress names no person
    assert main([*command, "--person", "ada", "--person", "bob"]) == 0
    assert json.loads(capsys.readouterr()[0])["tenants"]["acme"]["groups"] == 0
    assert main([*command, "--person", "ada", "--agent", "bot"]) == 0  # bot's own: covered
    assert json.loads(capsys.readouterr()[0])["tenants"]["acme"]["memories"] == 3
    assert main(command) == 1
    assert "--person" in capsys.readouterr()[1]


def test_consolidation_needs_relations(tmp_path: Path) -> None:
    keys = KeyStore.create(tmp_path / "keys")
    with Memory(DictDriver(), keys, app="app") as memory:
        with pytest.raises(MemoryCapabilityError) as refused:
            memory.person("ada").consolidate()
        assert refused.value.capability == "relations"


def test_a_forks_copies_are_never_merged_into_or_counted_beside_their_originals(
    memory: Memory,
) -> None:
    bot = memory.acting_for("ada", agent="bot")
    kept = [bot.remember("Ada is allergic to penicillin."), bot.remember("Ada lives in Lyon.")]
    forked = bot.fork(agent="helper")
    report = memory.person("ada").consolidate()
    assert (report.merged, report.insights) == (0, 0)
    assert {record.id for record in bot.list(limit=10).items} == {one.id for one in kept}
    helper = [record for record in forked.handle.list(limit=10).items]
    assert len(helper) == 2 and all(record.status == "active" for record in helper)


def test_a_fork_copy_revised_since_is_evidence_of_its_own(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot", session="s1")
    bot.remember("Ada prefers window seats.", kind="preference")
    forked = bot.fork(agent="helper", session="s2")
    helper = forked.handle
    copy = helper.list(limit=10).items[0]
    helper.revise(copy.id, "Ada prefers aisle seats.")
    memory.acting_for("ada", agent="helper", session="s3").remember(
        "Ada asked for an aisle seat.", kind="preference"
    )
    report = memory.person("ada").consolidate()
    assert report.insights == 1
    insight = memory.person("ada").get(report.insight_ids[0])
    assert copy.id in insight.derived_from
