"""Working memory (issue 16 item 4): sealed JSON values per person, agent and session.

Every test runs on every driver. What a value holds, its key's name, the agent and the
session never reach the driver: the record key is a blinded token and the value is sealed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _person_records import (
    ATTACK,
    LONG_AGO,
    NoPersonRecords,
    driver_bytes,
    left_in_the_driver,
    open_by_hand,
    put_by_hand,
    swept_by_its_header,
    working_records,
)

from mainsdk_memory import (
    AgentDisabledError,
    AgentLimits,
    ConsentRequiredError,
    InvalidInputError,
    LimitExceededError,
    Memory,
    MemoryCapabilityError,
    MemoryInjectionError,
    ScopeError,
    TenantMismatchError,
    tenant,
)
from mainsdk_memory._scoped import caller_of
from mainsdk_memory._working import Journal, copy_working, undo_working
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.keys import KeyStore

#: The names working memory's records are bound to, as written since the first release.
NAMES = ("mainsdk-memory/v1/working-header", "mainsdk-memory/v1/working")


def test_values_round_trip_upsert_and_a_session_shadows_the_person_wide_value(
    audited: Memory, sink: MemorySink
) -> None:
    with tenant.use("acme"):
        bot = audited.acting_for("ada", agent="bot")
        plan = {"step": 2, "items": ["call", "écrire"], "done": False, "ratio": 0.5, "n": None}
        bot.working.set("plan", plan)
        plan["step"] = 99  # the caller's object is not the stored value
        assert bot.working.get("plan") == {
            "step": 2, "items": ["call", "écrire"], "done": False, "ratio": 0.5, "n": None
        }
        bot.working.set("plan", ["a list now"])  # an upsert: the same key, one value
        bot.working.set("mood", "calm")
        assert bot.working.list() == {"mood": "calm", "plan": ["a list now"]}
        assert len(working_records(audited, "ada")) == 2
        assert bot.working.get("missing") is None
        assert bot.working.get("missing", default=7) == 7

        s1 = audited.acting_for("ada", agent="bot", session="s1")
        s2 = audited.acting_for("ada", agent="bot", session="s2")
        assert s1.working.get("plan") == ["a list now"]  # person-wide values reach sessions
        s1.working.set("plan", "only in s1", session_only=True)
        assert s1.working.get("plan") == "only in s1"
        assert s1.working.list() == {"mood": "calm", "plan": "only in s1"}
        assert s2.working.get("plan") == bot.working.get("plan") == ["a list now"]
        assert bot.working.list() == {"mood": "calm", "plan": ["a list now"]}
        assert s1.working.delete("plan", session_only=True) is True
        assert s1.working.get("plan") == ["a list now"]  # the shadow is gone
        assert s1.working.delete("plan", session_only=True) is False
        assert bot.working.delete("mood") is True
        assert bot.working.list() == {"plan": ["a list now"]}
        with pytest.raises(InvalidInputError, match="session"):
            bot.working.set("plan", 1, session_only=True)  # no session to keep it in

    operations = {event.operation for event in sink.events}
    assert {"working-set", "working-get", "working-list", "working-delete"} <= operations
    for event in sink.events:
        text = json.dumps(event.to_dict())
        assert "plan" not in text and "calm" not in text and "only in s1" not in text


def test_key_names_and_values_never_reach_the_driver(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada-lovelace-1815", agent="helper-bot", session="private-session")
    bot.working.set("favourite-colour", {"shade": "ultramarine-7731"})
    bot.working.set("favourite-colour", "vermilion-5519", session_only=True)
    dump = driver_bytes(memory)
    for plain in ("favourite-colour", "ultramarine-7731", "vermilion-5519", "helper-bot",
                  "private-session", "ada-lovelace-1815"):  # fmt: skip
        # (names long enough that the dump's random bytes, ciphertext and packed postings,
        # cannot hold one by chance: three bytes, "ada", once did in a CI run)
        assert plain.encode() not in dump, plain
    keys = [key for key, _ in working_records(memory, "ada-lovelace-1815")]
    assert len(keys) == 2
    for key in keys:
        _, pseudonym, token = key.split("/")
        assert pseudonym.startswith("p_") and len(token) == 32
        assert all(c in "0123456789abcdef" for c in token)


def test_a_value_keeps_the_byte_layout_records_were_written_in(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="bot")
    bot.working.set("plan", {"step": 1})
    [(key, value)] = working_records(memory, "ada")
    header, document = open_by_hand(memory, "ada", key, value, NAMES)
    assert document == {
        "agent": "bot", "session": None, "key": "plan", "value": {"step": 1}, "labels": [],
        "updated_at": document["updated_at"],
    }  # fmt: skip
    assert header == {"labels": [], "recorded_at": document["updated_at"]}
    # A record written by hand in that layout opens; its header is what the sweep reads.
    by_hand = {**document, "value": "by hand", "updated_at": LONG_AGO}
    put_by_hand(memory, "ada", key, by_hand, NAMES, labels=[])
    assert bot.working.get("plan") == "by hand"
    memory.enforce_retention()
    assert bot.working.list() == {"plan": "by hand"}  # an adult's value: no retention
    assert swept_by_its_header(memory, "ada", key, by_hand, NAMES)


def test_the_walls_hold_for_working_memory(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="bot")
    bot.working.set("topic", "refunds")
    memory.grant("other", read="all")  # a grant to read memories does not open another's
    assert memory.acting_for("ada", agent="other").working.list() == {}
    assert memory.acting_for("ada", agent="other").working.get("topic") is None
    assert memory.acting_for("bob", agent="bot").working.list() == {}
    assert memory.person("ada").working.list() == {}  # the person's own is "@person"'s
    with tenant.use("globex"):
        assert memory.acting_for("ada", agent="bot").working.list() == {}
        with pytest.raises(TenantMismatchError):
            bot.working.get("topic")  # a handle of acme, called in globex

    memory.kill("bot")
    for call in (lambda: bot.working.set("topic", "x"), lambda: bot.working.get("topic"),
                 bot.working.list, lambda: bot.working.delete("topic")):  # fmt: skip
        with pytest.raises(AgentDisabledError):
            call()
    memory.revive("bot")
    assert bot.working.get("topic") == "refunds"

    memory.privacy.set_guardian("tim", guardian="ana")
    tutor = memory.acting_for("tim", agent="tutor")
    with pytest.raises(ConsentRequiredError):
        tutor.working.set("level", 3)
    assert working_records(memory, "tim") == []
    memory.privacy.record_consent("tim", guardian="ana")
    tutor.working.set("level", 3)
    assert tutor.working.get("level") == 3

    memory.set_limits("bot", AgentLimits(writes_per_minute=2))
    bot.working.set("a", 1)
    bot.working.set("b", 2)
    with pytest.raises(LimitExceededError):
        bot.working.set("c", 3)
    assert bot.working.list() == {"a": 1, "b": 2, "topic": "refunds"}


def test_bad_input_and_flagged_values_change_nothing(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="bot")
    bot.working.set("kept", [1, 2])
    before = sorted(memory.driver.raw_dump())
    deep: object = "leaf"
    for _ in range(40):
        deep = [deep]
    looped: list[object] = []
    looped.append(looped)
    bad = [
        ("", 1), ("x" * 201, 1), ("line\nbreak", 1), (5, 1),  # keys
        ("v", float("nan")), ("v", float("inf")), ("v", {1: "a"}), ("v", (1, 2)),
        ("v", {"a": object()}), ("v", {1, 2}), ("v", b"bytes"), ("v", "\ud800"),
        ("v", "x" * (32 * 1024 + 1)), ("v", deep), ("v", looped), ("v", 10**5000),
    ]  # fmt: skip
    for key, value in bad:
        with pytest.raises(InvalidInputError):
            bot.working.set(key, value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        bot.working.set("v", 1, session_only="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        bot.working.get("")
    with pytest.raises(MemoryInjectionError):
        bot.working.set("note", {"steps": ["first", ATTACK]})
    with pytest.raises(MemoryInjectionError):
        bot.working.set("note", {ATTACK: 1})  # object keys are strings too
    assert sorted(memory.driver.raw_dump()) == before
    assert bot.working.list() == {"kept": [1, 2]}
    bot.working.set("big", "x" * (32 * 1024 - 2))  # exactly 32 KiB as JSON: accepted
    assert bot.working.get("big") == "x" * (32 * 1024 - 2)


def test_concurrent_sets_of_one_key_leave_exactly_one_value(
    store_url: str, keys_path: Path
) -> None:
    with (
        Memory.open(store_url, keys=keys_path, app="app") as first,
        Memory.open(store_url, keys=keys_path, app="app") as second,
        tenant.use("acme"),
    ):
        written = [(instance, writer) for instance in range(2) for writer in range(3)]
        errors: list[BaseException] = []

        def write(instance: int, writer: int) -> None:
            try:
                with tenant.use("acme"):
                    handle = (first, second)[instance].acting_for("ada", agent="bot")
                    for round_ in range(5):
                        handle.working.set("cursor", {"by": [instance, writer], "n": round_})
            except BaseException as exc:  # reported by the test below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=pair) for pair in written]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(working_records(first, "ada")) == 1
        value = first.acting_for("ada", agent="bot").working.get("cursor")
        assert value == second.acting_for("ada", agent="bot").working.get("cursor")
        assert isinstance(value, dict) and value["n"] == 4
        assert tuple(value["by"]) in written


WRITER = textwrap.dedent(
    """
    import sys
    from mainsdk_memory import Memory, tenant
    with Memory.open(sys.argv[1], keys=sys.argv[2], app="app") as memory, tenant.use("acme"):
        handle = memory.acting_for("ada", agent="bot")
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(20):
            handle.working.set("cursor", {"by": "child", "n": n})
    """
)


def test_sets_from_two_processes_leave_exactly_one_value(store_url: str, keys_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, store_url, str(keys_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdin is not None
        with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
            handle = memory.acting_for("ada", agent="bot")
            handle.working.set("cursor", {"by": "parent", "n": -1})
            assert child.stdout.readline().strip() == "ready", child.stderr
            child.stdin.write("go\n")
            child.stdin.flush()
            for n in range(20):
                handle.working.set("cursor", {"by": "parent", "n": n})
            assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
            assert len(working_records(memory, "ada")) == 1
            value = handle.working.get("cursor")
            assert value in ({"by": "parent", "n": 19}, {"by": "child", "n": 19})
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def test_export_lists_every_agents_values_and_erase_leaves_no_byte(
    memory: Memory, acme: str
) -> None:
    bot = memory.acting_for("ada", agent="bot", session="s1")
    bot.working.set("topic", "refunds")
    bot.working.set("topic", "refund of order 7", session_only=True)
    memory.acting_for("ada", agent="other").working.set("lang", "pt")
    memory.person("ada").working.set("theme", "dark")
    memory.acting_for("bob", agent="bot").working.set("topic", "bob's topic")
    exported = memory.privacy.export("ada")["working_memory"]
    assert [(v["agent"], v["session"], v["key"], v["value"]) for v in exported] == [
        ("@person", None, "theme", "dark"),
        ("bot", None, "topic", "refunds"),
        ("bot", "s1", "topic", "refund of order 7"),
        ("other", None, "lang", "pt"),
    ]
    sealed = [value for _, value in working_records(memory, "ada")]
    assert len(sealed) == 4
    receipt = memory.privacy.erase("ada")
    assert receipt.claims["working_memory"] == 4
    assert left_in_the_driver(memory, sealed) == []
    assert working_records(memory, "ada") == []
    assert memory.privacy.export("ada")["working_memory"] == []
    assert memory.acting_for("ada", agent="bot").working.list() == {}
    assert memory.acting_for("bob", agent="bot").working.get("topic") == "bob's topic"


def test_copy_working_gives_another_agent_an_independent_copy(memory: Memory, acme: str) -> None:
    source = memory.acting_for("ada", agent="bot", session="s1")
    source.working.set("a", 1)
    source.working.set("a", 3, session_only=True)  # shadows a for source
    source.working.set("b", {"x": [2]}, session_only=True)
    memory.acting_for("ada", agent="bot", session="s9").working.set("c", 9, session_only=True)
    into_session = memory.acting_for("ada", agent="fork", session="f1")
    journal: Journal = []
    assert copy_working(caller_of(source), caller_of(into_session), journal) == (3, 0)
    assert len(journal) == 3 and all(before is None for _, before, _ in journal)
    assert into_session.working.list() == {"a": 3, "b": {"x": [2]}}
    assert memory.acting_for("ada", agent="fork").working.list() == {"a": 1}  # f1's stay in f1
    assert memory.acting_for("ada", agent="fork", session="f2").working.list() == {"a": 1}
    # With no session, the session's values are left out: never made person-wide.
    person_wide = memory.acting_for("ada", agent="fork2")
    assert copy_working(caller_of(source), caller_of(person_wide), []) == (1, 2)
    assert person_wide.working.list() == {"a": 1}
    assert memory.acting_for("ada", agent="fork2", session="s1").working.list() == {"a": 1}
    source.working.set("b", "changed", session_only=True)
    into_session.working.set("a", "mine")
    assert into_session.working.get("b") == {"x": [2]}
    assert source.working.get("a") == 3
    # Undone: each record the copy wrote gets back what it held, unless it changed since.
    undo_working(caller_of(into_session), journal)
    assert into_session.working.list() == {"a": "mine"}
    assert memory.acting_for("ada", agent="fork").working.list() == {"a": "mine"}
    with pytest.raises(ScopeError):
        copy_working(caller_of(source), caller_of(memory.acting_for("bob", agent="fork")), [])


def test_a_childs_values_expire_after_90_days_and_the_sweep_deletes_them(
    store_url: str, keys_path: Path, sink: MemorySink
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    with (
        Memory.open(store_url, keys=keys_path, app="app", clock=lambda: now[0], audit=sink,
                    retention={"personal": timedelta(days=30)}) as memory,
        tenant.use("acme"),
    ):  # fmt: skip
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        tutor = memory.acting_for("tim", agent="tutor", session="lesson-1")
        tutor.working.set("allergy", "nuts; class 3B")
        tutor.working.set("level", 2)
        tutor.working.set("level", 3, session_only=True)
        tutor.working.set("stale", "old")
        adult = memory.acting_for("ada", agent="tutor")
        adult.working.set("topic", "refunds")  # an adult's value has no retention at all
        now[0] += timedelta(days=60)
        tutor.working.set("allergy", "nuts; class 3C")  # set again: counts from now
        helper = tutor.fork(agent="helper", session="h1").handle  # copies keep their times
        assert helper.working.list() == {"allergy": "nuts; class 3C", "level": 3, "stale": "old"}
        now[0] += timedelta(days=31)  # 91 days after the first sets
        assert tutor.working.list() == {"allergy": "nuts; class 3C"}
        assert tutor.working.get("level") is None and tutor.working.get("stale", 0) == 0
        assert helper.working.list() == {"allergy": "nuts; class 3C"}
        assert adult.working.list() == {"topic": "refunds"}
        assert tutor.working.delete("stale") is False  # not there, though its bytes were
        records = len(working_records(memory, "tim"))
        sink.events.clear()

        assert memory.enforce_retention() == []  # no receipt, counted in the audit event
        [event] = [e for e in sink.events if e.operation == "retention"]
        assert dict(event.extra)["working"] == str(records - 2)  # every expired one, any agent's
        assert len(working_records(memory, "tim")) == 2
        assert memory.privacy.export("tim")["working_memory"] == [
            {"agent": "helper", "session": None, "key": "allergy", "value": "nuts; class 3C",
             "updated_at": "2026-03-02T00:00:00+00:00"},
            {"agent": "tutor", "session": None, "key": "allergy", "value": "nuts; class 3C",
             "updated_at": "2026-03-02T00:00:00+00:00"},
        ]  # fmt: skip
        assert adult.working.get("topic") == "refunds"
        assert memory.enforce_retention() == [] and len(working_records(memory, "tim")) == 2
        now[0] += timedelta(days=60)
        memory.enforce_retention()
        assert working_records(memory, "tim") == []
        assert adult.working.list() == {"topic": "refunds"}


def test_a_driver_without_person_records_refuses_working_memory(
    tmp_path: Path, keys_path: Path
) -> None:
    driver = NoPersonRecords(tmp_path / "store")
    with Memory(driver, KeyStore.open(keys_path), app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for call in (lambda: bot.working.set("k", 1), lambda: bot.working.get("k"),
                     bot.working.list, lambda: bot.working.delete("k")):  # fmt: skip
            with pytest.raises(MemoryCapabilityError) as refused:
                call()
            assert refused.value.capability == "person_records"
        assert memory.privacy.export("ada")["working_memory"] == []
