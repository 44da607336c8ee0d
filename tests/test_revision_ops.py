"""Revision operations (contest, retract, merge) and contradictions side by side in context.

Runs on every driver in conftest.STORES.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mainsdk_memory import (
    InvalidInputError,
    Link,
    Memory,
    MemoryNotFound,
    Revision,
    ScopeError,
    Source,
)
from mainsdk_memory._context import parse_context

pytestmark = pytest.mark.usefixtures("acme")


def test_contest_marks_a_memory_disputed_until_it_is_revised(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    home = ada.remember("Ada lives in Lisbon.")
    disputed = ada.contest(home.id)
    assert (disputed.id, disputed.version, disputed.status) == (home.id, 2, "disputed")
    assert disputed.text == home.text and disputed.revision == Revision(op="contest")
    (entry,) = parse_context(ada.context("Lisbon"))
    assert entry.status == "disputed"
    revised = ada.revise(home.id, "Ada lives in Porto.")
    assert revised.status == "active"
    assert [record.status for record in ada.history(home.id)] == ["active", "disputed", "active"]


def test_retract_closes_a_memory_with_no_successor(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    home = ada.remember("Ada lives in Lisbon.")
    before = datetime.now(UTC)
    last = ada.retract(home.id)
    assert (last.version, last.status, last.revision) == (2, "retracted", Revision(op="retract"))
    assert last.valid_to == last.valid_from  # closed as it is written
    with pytest.raises(MemoryNotFound):
        ada.get(home.id)
    assert ada.recall("Lisbon") == []
    assert ada.list().items == []
    with pytest.raises(MemoryNotFound):
        ada.revise(home.id, "Ada lives in Porto.")
    history = ada.history(home.id)
    assert [(record.version, record.status) for record in history] == [
        (1, "active"), (2, "retracted"),
    ]
    # What was held before the retraction is still what was held then.
    then = [hit.record.id for hit in ada.recall("Lisbon", as_of=before)]
    assert then == [home.id]
    # The person can still forget it.
    receipt = memory.person("ada").forget(home.id)
    assert receipt.claims["memory_id"] == home.id
    with pytest.raises(MemoryNotFound):
        ada.history(home.id)


def test_merge_folds_memories_into_one_with_lineage(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    first = ada.remember("Ada has a beagle.", formation=False)
    second = ada.remember("The beagle is called Rex.", formation=False)
    merged = ada.merge(first.id, [second.id])
    assert (merged.id, merged.version) == (first.id, 2)
    assert merged.text == "Ada has a beagle. The beagle is called Rex."
    assert merged.revision == Revision(op="merge", memories=(second.id,))
    assert Link(kind="supersedes", target=second.id) in ada.links(first.id)
    with pytest.raises(MemoryNotFound):
        ada.get(second.id)
    absorbed = ada.history(second.id)
    assert absorbed[-1].status == "retracted"
    assert absorbed[-1].revision == Revision(op="merge", memories=(first.id,))
    chosen = ada.remember("Ada walks the dog.", formation=False)
    other = ada.remember("Ada walks every morning.", formation=False)
    told = ada.merge(chosen.id, [other.id], text="Ada walks the dog every morning.")
    assert told.text == "Ada walks the dog every morning."


def test_merge_refuses_what_it_cannot_do_and_changes_nothing(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    first = ada.remember("Ada has a beagle.", formation=False)
    shared = ada.remember("The office has a dog policy.", about="tenant", formation=False)
    with pytest.raises(InvalidInputError):
        ada.merge(first.id, [])
    with pytest.raises(InvalidInputError):
        ada.merge(first.id, [first.id])
    with pytest.raises(ScopeError):
        ada.merge(first.id, [shared.id])
    with pytest.raises(MemoryNotFound):
        ada.merge(first.id, ["mem_" + "b" * 26])
    assert ada.get(first.id).version == 1 and ada.get(shared.id).version == 1


def test_context_puts_contradictions_side_by_side(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    allergic = ada.remember("Ada is allergic to penicillin.")
    ada.remember("Ada plays the cello.")
    denied = ada.remember("Ada is not allergic to penicillin.")
    assert denied.formation is not None and denied.formation.outcome == "contradiction"
    entries = parse_context(ada.context("penicillin", top_k=1))
    # Only one matched (top_k=1), but its contradiction follows it, and both are marked.
    assert [entry.id for entry in entries] in ([allergic.id, denied.id], [denied.id, allergic.id])
    marks = {entry.id: entry.contradicts for entry in entries}
    assert marks == {allergic.id: (denied.id,), denied.id: (allergic.id,)}
    cello = parse_context(ada.context("cello"))
    assert all(not entry.contradicts for entry in cello)


def test_a_retracted_memory_is_exported_and_erased(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    home = ada.remember("Ada lives in Lisbon with Tom Becker.")
    ada.retract(home.id)
    exported = memory.privacy.export("ada")
    (held,) = [entry for entry in exported["memories"] if entry["id"] == home.id]
    assert held["status"] == "retracted"
    assert [version["text"] for version in held["versions"]] == [home.text, home.text]
    assert "Tom Becker" in {entity["name"] for entity in exported["entities"]}
    receipt = memory.privacy.erase("ada")
    assert home.id in receipt.claims["memory_ids"]
    assert all(
        home.id not in where and home.id.encode() not in data
        for where, data in memory.driver.raw_dump()
    )


def test_merge_keeps_quarantine_and_sessions_apart(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot", session="s1")
    trusted = ada.remember("Ada has a beagle.", formation=False)
    page = ada.remember("Beagles need long walks.", source=Source.web("https://example.org"),
                        formation=False)
    private = ada.remember("Ada walks the beagle at dawn.", session_only=True, formation=False)
    for other in (page, private):
        with pytest.raises(ScopeError):
            ada.merge(trusted.id, [other.id])
    assert ada.get(trusted.id).version == 1
    assert Link(kind="supersedes", target=page.id) not in ada.links(trusted.id)


def test_a_confirmation_ends_a_dispute(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    home = ada.remember("Ada lives in Lisbon.")
    ada.contest(home.id)
    confirmed = memory.person("ada").confirm(home.id)
    assert (confirmed.status, confirmed.revision) == ("active", None)
