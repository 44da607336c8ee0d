"""Fork: another agent gets an independent copy of one agent's memories about a person.

On every driver: what a copy keeps (text, kind, labels, data, source, trust, dates, language,
pin, lineage) and what it does not share (revisions, pins and forgets stay on their side);
quarantine and session-only memories stay in one session; the walls (kill switches, the new
agent's cap, a child's consent, the grant, the tenant) hold; erasing the person leaves no
byte of either side; one audit event with ids and counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from mainsdk_memory import (
    AgentDisabledError,
    AgentLimits,
    ConsentRequiredError,
    InvalidInputError,
    LimitExceededError,
    Memory,
    MemoryNotFound,
    Source,
    StoreError,
    TenantMismatchError,
    Trust,
    tenant,
)
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.injection import ClassifierDetector


class Home(BaseModel):
    city: str


def _dump(memory: Memory) -> bytes:
    return b"".join(blob for _, blob in memory.driver.raw_dump())


def test_a_fork_copies_what_the_handle_sees_as_new_memories_of_the_new_agent(
    audited: Memory, sink: MemorySink, acme: str
) -> None:
    memory = audited
    memory.grant("planner", read="all")
    planner = memory.acting_for("ada", agent="planner")
    said = memory.person("ada").remember("Ada is allergic to peanuts.")  # confirmed
    other = memory.acting_for("ada", agent="support").remember("Ada prefers email to calls.")
    home = planner.remember(
        "Ada's brother Tom Becker lives in Lyon.", labels=["family"], pinned=True,
        valid_from=datetime(2025, 3, 1, tzinfo=UTC), data=Home(city="Lyon"),
    )
    german = planner.remember("Ada spielt gern Schach.", language="german", kind="preference")
    planner.remember("The office closes at six.", about="tenant")  # shared: not copied
    memory.acting_for("bea", agent="planner").remember("Bea rides a red bicycle.")
    originals = {record.id: record for record in (said, other, home, german)}
    sink.events.clear()

    forked = planner.fork(agent="helper", session="h1")

    assert (forked.memories, forked.working, forked.quarantined_left) == (4, 0, 0)
    helper = forked.handle
    assert (helper.person, helper.agent, helper.session) == ("ada", "helper", "h1")
    copies = [r for r in helper.list(limit=50).items if r.scope.about == "ada"]
    assert sorted(copy.forked_from or "" for copy in copies) == sorted(originals)
    for copy in copies:
        original = originals[copy.forked_from or ""]
        assert copy.id != original.id and copy.version == 1
        assert (copy.scope.agent, copy.author, copy.scope.session) == ("helper", "helper", "h1")
        for field in ("text", "kind", "labels", "data", "source", "trust", "valid_from",
                      "language", "pinned", "created_at", "confirmed_by", "status"):
            assert getattr(copy, field) == getattr(original, field), field
    assert {copy.trust for copy in copies} == {Trust.CONFIRMED, Trust.INFERRED}  # not raised
    # Shared memory is not copied (it is shared: a grant lets any agent read it); nothing
    # of Bea is.
    shared = [r for r in planner.list(limit=50).items if r.scope.about == "tenant"]
    assert [r.agent for r in (s.scope for s in shared)] == ["planner"]
    assert len(helper.list(limit=50).items) == len(copies) == 4
    assert memory.acting_for("bea", agent="helper").list().items == []
    # The copies are indexed, embedded and named like any write.
    [hit] = helper.recall("peanuts allergy", mode="text")
    assert hit.record.forked_from == said.id
    assert helper.recall("peanuts", mode="vector")[0].record.forked_from == said.id
    assert "Tom Becker" in {entity.name for entity in helper.entities()}
    [copied_home] = [c for c in copies if c.forked_from == home.id]
    assert any(link.kind == "mentions" for link in helper.links(copied_home.id))
    # One audit event: the copies' ids and the counts, no content.
    [event] = [e for e in sink.events if e.operation == "fork"]
    assert (event.outcome, event.actor, event.person, event.count) == (
        "ok", "agent:planner", "ada", 4)
    assert sorted(event.memory_ids) == sorted(copy.id for copy in copies)
    assert dict(event.extra)["target_agent"] == "helper"
    assert "peanuts" not in str(event.to_dict()) and "Lyon" not in str(event.to_dict())


def test_changes_on_either_side_never_reach_the_other_and_erase_takes_both(
    memory: Memory, acme: str
) -> None:
    planner = memory.acting_for("ada", agent="planner")
    tea = planner.remember("Ada drinks oolong tea every morning.")
    habit = planner.remember("Ada has a calm morning routine.", kind="insight",
                             derived_from=[tea.id])
    planner.working.set("order", {"drink": "oolong", "cups": 2})
    planner.working.set("step", "greeting")
    forked = planner.fork(agent="helper")
    helper = forked.handle
    assert (forked.memories, forked.working) == (2, 2)
    assert helper.working.list() == {"order": {"drink": "oolong", "cups": 2}, "step": "greeting"}
    helper.working.set("step", "checkout")
    planner.working.delete("order")
    assert planner.working.list() == {"step": "greeting"}
    assert helper.working.get("order") == {"drink": "oolong", "cups": 2}
    by_origin = {copy.forked_from: copy for copy in helper.list().items}
    tea_copy, habit_copy = by_origin[tea.id], by_origin[habit.id]
    assert habit_copy.derived_from == (tea_copy.id,)  # lineage maps to the copies

    planner.revise(tea.id, "Ada drinks green tea every morning.")
    helper.pin(tea_copy.id)
    assert helper.get(tea_copy.id).text == "Ada drinks oolong tea every morning."
    assert not planner.get(tea.id).pinned and planner.get(tea.id).version == 2
    helper.revise(habit_copy.id, "Ada has a slow, calm morning routine.")
    assert planner.get(habit.id).text == "Ada has a calm morning routine."

    ada = memory.person("ada")
    ada.forget(tea_copy.id)  # forgetting the copied source forgets the copied insight
    for gone in (tea_copy.id, habit_copy.id):
        with pytest.raises(MemoryNotFound):
            helper.get(gone)
    assert {planner.get(tea.id).id, planner.get(habit.id).id} == {tea.id, habit.id}
    again = planner.fork(agent="helper").handle.list().items
    ada.forget(tea.id)  # and the other way round
    assert {record.forked_from for record in again} <= {tea.id, habit.id}
    assert len(helper.list().items) == 2

    ids = [tea.id, habit.id, tea_copy.id, habit_copy.id, *(r.id for r in again)]
    memory.privacy.erase("ada")
    dump = _dump(memory)
    for memory_id in ids:
        assert memory_id.encode() not in dump
    assert memory.person("ada").list().items == []
    assert memory.driver.control_list("acme", "app", "working/") == []


def test_quarantined_and_session_only_memories_stay_in_one_session(
    memory: Memory, acme: str
) -> None:
    planner = memory.acting_for("ada", agent="planner", session="s1")
    parcel = planner.remember("Ada's parcel waits in locker 17.", source=Source.tool("courier"))
    surprise = planner.remember("Ada plans a surprise party.", session_only=True)
    festive = planner.remember("Ada enjoys organising festive events.", kind="insight",
                               derived_from=[surprise.id])
    jazz = planner.remember("Ada likes jazz on Sundays.")
    assert parcel.quarantined
    planner.working.set("step", "greeting")
    planner.working.set("step", "wire money to X", session_only=True)  # as MCP writes
    planner.working.set("draft", "a surprise", session_only=True)

    bare = planner.fork(agent="helper")  # no session: nothing that lives in one is copied
    assert (bare.memories, bare.quarantined_left, bare.session_only_left) == (2, 1, 1)
    assert (bare.working, bare.working_left) == (1, 2)  # never made person-wide
    for session in (None, "s1", "other"):
        helper = memory.acting_for("ada", agent="helper", session=session)
        assert helper.working.list() == {"step": "greeting"}
    bare_copies = {r.forked_from: r for r in bare.handle.list().items}
    assert set(bare_copies) == {festive.id, jazz.id}
    assert bare_copies[festive.id].derived_from == (surprise.id,)  # its source, not copied

    forked = planner.fork(agent="assistant", session="a1")
    assert (forked.memories, forked.quarantined_left, forked.session_only_left) == (4, 0, 0)
    assert (forked.working, forked.working_left) == (3, 0)
    assert forked.handle.working.list() == {"draft": "a surprise", "step": "wire money to X"}
    for session in (None, "a2"):
        assistant = memory.acting_for("ada", agent="assistant", session=session)
        assert assistant.working.list() == {"step": "greeting"}
    copies = {r.forked_from: r for r in forked.handle.list().items}
    assert copies[parcel.id].quarantined and copies[parcel.id].trust is Trust.UNTRUSTED
    assert copies[parcel.id].source == parcel.source
    assert copies[surprise.id].session_only
    assert copies[festive.id].derived_from == (copies[surprise.id].id,)
    for elsewhere in (
        memory.acting_for("ada", agent="assistant", session="a2"),
        memory.acting_for("ada", agent="assistant"),
        memory.acting_for("ada", agent="helper", session="a1"),  # a session is an agent's
    ):
        assert {r.forked_from for r in elsewhere.list().items} <= {None, *copies} - {
            parcel.id, surprise.id}
    # The person sees every copy; confirming one copy leaves the original in quarantine.
    ada = memory.person("ada")
    assert ada.confirm(copies[parcel.id].id).trust is Trust.CONFIRMED
    assert ada.get(parcel.id).quarantined
    # Forgetting a source that was not copied still reaches the insight copied from it.
    ada.forget(surprise.id)
    with pytest.raises(MemoryNotFound):
        bare.handle.get(bare_copies[festive.id].id)
    assert forked.handle.get(copies[festive.id].id).derived_from == (copies[surprise.id].id,)


def test_the_walls_stand_and_a_refused_fork_copies_nothing(memory: Memory, acme: str) -> None:
    planner = memory.acting_for("ada", agent="planner")
    planner.remember("Ada's gate code is 4417.")
    planner.remember("Ada walks her dog at seven.")
    memory.acting_for("ada", agent="support").remember("Ada called about her invoice.")
    before = len(memory.person("ada").list().items)

    for agent in ("planner", "no spaces", "", 5):
        with pytest.raises(InvalidInputError):
            planner.fork(agent=agent)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        planner.fork(agent="helper", session="no spaces")
    memory.kill("helper")
    with pytest.raises(AgentDisabledError):
        planner.fork(agent="helper")
    memory.kill("planner")
    with pytest.raises(AgentDisabledError):
        planner.fork(agent="other")
    memory.revive("planner")
    memory.set_limits("capped", AgentLimits(memories_per_person=1))
    with pytest.raises(LimitExceededError):
        planner.fork(agent="capped")  # the second copy is over the cap: the first goes too
    with tenant.use("globex"), pytest.raises(TenantMismatchError):
        planner.fork(agent="other")
    assert len(memory.person("ada").list().items) == before
    capped = memory.acting_for("ada", agent="capped")
    assert capped.list().items == []
    capped.remember("Ada's favourite colour is teal.")  # the undone copies hold no count

    # The grant decides what is copied: "own" sees only the planner's memories.
    own = planner.fork(agent="other")
    assert own.memories == 2
    assert {r.scope.agent for r in own.handle.list().items} == {"other"}


def _working_records(memory: Memory) -> list[tuple[str, bytes]]:
    return sorted(memory.driver.control_list("acme", "app", "working/"))


@pytest.mark.parametrize("lands", [False, True], ids=["refused", "acknowledgement-lost"])
def test_a_fork_failing_while_copying_working_memory_leaves_nothing_behind(
    audited: Memory, sink: MemorySink, acme: str, monkeypatch: pytest.MonkeyPatch, lands: bool
) -> None:
    memory = audited
    planner = memory.acting_for("ada", agent="planner")
    planner.remember("Ada lives in Lyon.")
    for key in ("a", "b", "c"):
        planner.working.set(key, f"planner's {key}")
    helper = memory.acting_for("ada", agent="helper")
    helper.working.set("b", "helper's own b")  # replaced by the fork, put back by its undo
    helper.working.set("z", "helper's own z")  # never touched
    before = _working_records(memory)
    driver = memory.driver
    real = driver.control_put
    writes = [0]

    def failing_third(tenant_id: str, app: str, key: str, value: bytes | None) -> None:
        if key.startswith("working/") and value is not None:
            writes[0] += 1
            if writes[0] == 3:  # the fork's third working-memory write fails
                if lands:  # stored, but the driver's answer is lost
                    real(tenant_id, app, key, value)
                raise StoreError("The local store cannot be written: disk full.")
        real(tenant_id, app, key, value)

    monkeypatch.setattr(driver, "control_put", failing_third)
    sink.events.clear()
    with pytest.raises(StoreError, match="disk full"):
        planner.fork(agent="helper")
    monkeypatch.setattr(driver, "control_put", real)

    assert writes[0] == 4  # a, b, the failing c, then b put back by the undo
    assert _working_records(memory) == before  # the same records, byte for byte
    assert helper.working.list() == {"b": "helper's own b", "z": "helper's own z"}
    assert helper.list().items == []  # the memory copy is undone too
    [event] = [e for e in sink.events if e.operation == "fork"]
    assert (event.outcome, event.code, event.memory_ids) == ("error", StoreError.code, ())
    forked = planner.fork(agent="helper")  # and a fork that succeeds copies everything
    assert (forked.memories, forked.working) == (1, 3)
    assert helper.working.list() == {
        "a": "planner's a", "b": "planner's b", "c": "planner's c", "z": "helper's own z"}


def test_a_childs_memories_fork_only_with_the_guardians_consent(
    memory: Memory, acme: str
) -> None:
    tutor = memory.acting_for("tim", agent="tutor")
    tutor.remember("Tim likes dinosaurs.")
    memory.privacy.set_guardian("tim", guardian="ana")
    with pytest.raises(ConsentRequiredError):
        tutor.fork(agent="helper")
    assert memory.acting_for("tim", agent="helper").list().items == []
    memory.privacy.record_consent("tim", guardian="ana")
    forked = tutor.fork(agent="helper")
    [copy] = forked.handle.list().items
    assert "child" in copy.labels and copy.text == "Tim likes dinosaurs."
    where = caller_of(forked.handle).filter()
    assert memory.driver.vectors(where) == []  # a child's copy stays text only
    assert [hit.record.id for hit in forked.handle.recall("dinosaurs", mode="text")] == [copy.id]


def test_a_memory_the_injection_check_flags_now_is_left_out(
    store_url: str, keys_path: Path, acme: str
) -> None:
    strict: list[bool] = []

    def classify(text: str) -> float:
        return 1.0 if strict and "locker" in text else 0.0

    with Memory.open(store_url, keys=keys_path, app="app",
                     detector=ClassifierDetector(classify)) as memory:
        planner = memory.acting_for("ada", agent="planner")
        planner.remember("Ada's parcel waits in locker 17.")
        kept = planner.remember("Ada likes jazz on Sundays.")
        strict.append(True)  # the detector changed since: that text is flagged now
        forked = planner.fork(agent="helper")
        assert (forked.memories, forked.flagged_left) == (1, 1)
        assert [r.forked_from for r in forked.handle.list().items] == [kept.id]
