"""The episodic ledger (issue 16 item 5): append-only, sealed, time-ordered, per session.

Every test runs on every driver. The driver sees a record per entry, keyed by the person's
pseudonym and the entry's time; role, text, session, agent and labels are sealed.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from _person_records import (
    ATTACK,
    LONG_AGO,
    NoPersonRecords,
    driver_bytes,
    episode_records,
    left_in_the_driver,
    open_by_hand,
    put_by_hand,
    swept_by_its_header,
)

from mainsdk_memory import (
    AgentDisabledError,
    ConsentRequiredError,
    InvalidInputError,
    Memory,
    MemoryCapabilityError,
    tenant,
)
from mainsdk_memory._episodes import Episode
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.keys import KeyStore

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
#: The names the ledger's records are bound to, as written since the first release.
NAMES = ("mainsdk-memory/v1/episode-header", "mainsdk-memory/v1/episode-entry")


def test_entries_list_in_time_order_latest_first_cut_and_strictly_before(
    audited: Memory, sink: MemorySink
) -> None:
    with tenant.use("acme"):
        bot = audited.acting_for("ada", agent="bot", session="s1")
        lisbon = timezone(timedelta(hours=1))
        second = bot.episodes.append("assistant", "Which order?", at=T0 + timedelta(minutes=1))
        first = bot.episodes.append("user", "My parcel is late.", at=T0.astimezone(lisbon))
        tool = bot.episodes.append("tool", "order 7: in transit", at=T0 + timedelta(minutes=2))
        tie = bot.episodes.append("system", "escalated", at=T0 + timedelta(minutes=2))
        assert first == Episode(
            id=first.id, role="user", text="My parcel is late.", at=T0, session="s1",
            agent="bot", labels=("personal",), flagged=False,
        )  # fmt: skip
        assert first.at.utcoffset() == timedelta(0) and first.id.startswith("ep_")
        assert "My parcel" not in repr(first)
        listed = bot.episodes.list()
        assert listed == [first, second, *sorted([tool, tie], key=lambda e: e.id)]
        assert bot.episodes.list(limit=2) == listed[2:]  # the latest two, oldest first
        assert bot.episodes.list(before=T0 + timedelta(minutes=2)) == [first, second]
        assert bot.episodes.list(before=T0 + timedelta(minutes=1), limit=5) == [first]
        assert bot.episodes.list(before=T0) == []
        now = bot.episodes.append("user", "Thanks!")  # at defaults to now
        assert abs(now.at - datetime.now(UTC)) < timedelta(minutes=1)
        assert bot.episodes.list(limit=1) == [now]

    appends = [e for e in sink.events if e.operation == "episode-append"]
    assert len(appends) == 5 and all(e.count == 1 for e in appends)
    assert ("episode", first.id) in appends[1].extra
    lists = [e for e in sink.events if e.operation == "episode-list"]
    assert [e.count for e in lists[:2]] == [4, 2]
    for event in sink.events:
        text = json.dumps(event.to_dict())
        assert "parcel" not in text and "transit" not in text and "s1" not in text


def test_entries_are_sealed_and_keyed_by_pseudonym_and_time(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="helper-bot", session="private-session")
    entry = bot.episodes.append("user", "My locker code is 4471.", at=T0, labels=["workplace"])
    dump = driver_bytes(memory)
    for plain in ("locker code", "4471", "helper-bot", "private-session", "workplace",
                  "ada", entry.id):  # fmt: skip
        assert plain.encode() not in dump, plain
    [(key, _)] = episode_records(memory, "ada")
    assert re.fullmatch(r"episode/p_[0-9a-f]{32}/20260301T090000\.000000Z-[0-9a-f]{24}", key)
    assert key.endswith(entry.id.removeprefix("ep_"))


def test_an_entry_keeps_the_byte_layout_records_were_written_in(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="bot", session="s1")
    entry = bot.episodes.append("user", "My parcel is late.", at=T0)
    [(key, value)] = episode_records(memory, "ada")
    header, document = open_by_hand(memory, "ada", key, value, NAMES)
    recorded = document["recorded_at"]
    assert document == {
        "id": entry.id, "role": "user", "text": "My parcel is late.", "at": T0.isoformat(),
        "session": "s1", "agent": "bot", "labels": ["personal"], "flagged": False,
        "recorded_at": recorded,
    }  # fmt: skip
    assert header == {"labels": ["personal"], "recorded_at": recorded}
    # An entry written by hand in that layout opens; its header is what the sweep reads.
    by_hand = {**document, "text": "Written by hand.", "recorded_at": LONG_AGO}
    put_by_hand(memory, "ada", key, by_hand, NAMES, labels=["personal"])
    assert bot.episodes.list() == [entry.model_copy(update={"text": "Written by hand."})]
    memory.enforce_retention()
    assert len(episode_records(memory, "ada")) == 1  # "personal" has no retention here
    assert swept_by_its_header(memory, "ada", key, by_hand, NAMES)


def test_bad_input_records_nothing(store_url: str, keys_path: Path) -> None:
    with (
        Memory.open(store_url, keys=keys_path, app="app", labels=["personal", "work"]) as memory,
        tenant.use("acme"),
    ):
        bot = memory.acting_for("ada", agent="bot")
        bot.episodes.append("user", "kept")
        before = sorted(memory.driver.raw_dump())
        bad = [
            {"role": "robot"}, {"role": 1}, {"text": ""}, {"text": "   "}, {"text": 5},
            {"text": "x" * 8_001}, {"text": "\ud800"}, {"at": datetime(2026, 1, 1)},
            {"at": "2026-01-01"}, {"labels": ["Bad Label"]}, {"labels": ["health"]},
            {"labels": [1]},
        ]  # fmt: skip
        for change in bad:
            arguments: dict[str, object] = {"role": "user", "text": "fine", **change}
            with pytest.raises(InvalidInputError):
                bot.episodes.append(**arguments)  # type: ignore[arg-type]
        for listing in ({"limit": 0}, {"limit": 1001}, {"limit": True},
                        {"before": datetime(2026, 1, 1)}, {"session": "no spaces"}):  # fmt: skip
            with pytest.raises(InvalidInputError):
                bot.episodes.list(**listing)  # type: ignore[arg-type]
        assert sorted(memory.driver.raw_dump()) == before
        assert [e.text for e in bot.episodes.list()] == ["kept"]
        assert bot.episodes.append("user", "ok", labels=["work"]).labels == ("work",)


def test_who_sees_which_entries(memory: Memory, acme: str) -> None:
    bot1 = memory.acting_for("ada", agent="bot", session="s1")
    bot2 = memory.acting_for("ada", agent="bot", session="s2")
    other = memory.acting_for("ada", agent="other", session="s1")
    a = bot1.episodes.append("user", "in bot's s1", at=T0)
    b = bot2.episodes.append("user", "in bot's s2", at=T0 + timedelta(seconds=1))
    c = other.episodes.append("user", "in other's s1", at=T0 + timedelta(seconds=2))
    assert bot1.episodes.list() == [a, b]  # its own, in any of its sessions
    assert memory.acting_for("ada", agent="bot").episodes.list(session="s1") == [a]
    assert other.episodes.list() == [c]  # "own" by default
    memory.grant("other", read="all")
    assert other.episodes.list() == [a, b, c]
    assert other.episodes.list(session="s1") == [c]  # one of *its* sessions
    ada = memory.person("ada")
    assert ada.episodes.list() == [a, b, c]
    assert ada.episodes.list(session="s1") == [a, c]  # every agent's session of that name
    assert memory.acting_for("bob", agent="bot").episodes.list() == []
    assert memory.person("bob").episodes.list() == []
    with tenant.use("globex"):
        assert memory.acting_for("ada", agent="bot").episodes.list() == []

    memory.kill("bot")
    with pytest.raises(AgentDisabledError):
        bot1.episodes.append("user", "refused")
    with pytest.raises(AgentDisabledError):
        bot1.episodes.list()
    memory.revive("bot")

    memory.privacy.set_guardian("tim", guardian="ana")
    tutor = memory.acting_for("tim", agent="tutor")
    with pytest.raises(ConsentRequiredError):
        tutor.episodes.append("user", "I like dinosaurs.")
    assert episode_records(memory, "tim") == []
    memory.privacy.record_consent("tim", guardian="ana")
    assert tutor.episodes.append("user", "I like dinosaurs.").labels == ("personal", "child")


def test_a_flagged_text_is_recorded_as_flagged(audited: Memory, sink: MemorySink) -> None:
    with tenant.use("acme"):
        bot = audited.acting_for("ada", agent="bot")
        entry = bot.episodes.append("tool", ATTACK, at=T0)
        clean = bot.episodes.append("user", "Where is my parcel?", at=T0 + timedelta(seconds=1))
        assert entry.flagged is True and clean.flagged is False
        assert [(e.text, e.flagged) for e in bot.episodes.list()] == [
            (ATTACK, True), ("Where is my parcel?", False)
        ]
    event = next(e for e in sink.events if e.operation == "episode-append")
    assert event.outcome == "ok"
    codes = dict(event.extra)["flagged"]
    assert codes and "instructions" not in codes


def test_retention_hides_expired_entries_and_the_sweep_deletes_them(
    store_url: str, keys_path: Path
) -> None:
    now = [T0]
    with (
        Memory.open(store_url, keys=keys_path, app="app", clock=lambda: now[0],
                    retention={"personal": timedelta(days=30)}) as memory,
        tenant.use("acme"),
    ):  # fmt: skip
        bot = memory.acting_for("ada", agent="bot")
        old = bot.episodes.append("user", "An old turn.")
        lasting = bot.episodes.append("user", "A work turn.", labels=["work"])
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        child = memory.acting_for("tim", agent="tutor").episodes.append(
            "user", "A child's turn.", labels=["work"]
        )
        now[0] += timedelta(days=20)
        fresh = bot.episodes.append("user", "A fresh turn.", at=T0 - timedelta(days=400))
        now[0] += timedelta(days=11)  # old is 31 days old; fresh was recorded 11 days ago
        # Retention counts from when an entry was recorded, not from the time it tells of.
        assert bot.episodes.list() == memory.person("ada").episodes.list() == [fresh, lasting]
        assert old.id in {e["id"] for e in memory.privacy.export("ada")["episodes"]}
        assert memory.enforce_retention() == []  # episodes get no receipt...
        assert len(episode_records(memory, "ada")) == 2  # ...but their records are gone
        assert old.id not in {e["id"] for e in memory.privacy.export("ada")["episodes"]}
        assert [e.id for e in memory.person("tim").episodes.list()] == [child.id]
        now[0] += timedelta(days=60)  # the child's entry is 91 days old: capped at 90
        assert memory.person("tim").episodes.list() == []
        memory.enforce_retention()
        assert episode_records(memory, "tim") == []
        assert [e.id for e in bot.episodes.list()] == [lasting.id]


def test_export_holds_every_entry_and_erase_leaves_no_byte(memory: Memory, acme: str) -> None:
    bot = memory.acting_for("ada", agent="bot", session="s1")
    first = bot.episodes.append("user", "My parcel is late.", at=T0)
    memory.acting_for("ada", agent="other").episodes.append("assistant", "On it.", at=T0)
    memory.person("ada").episodes.append("system", "Ada opened the app.", at=T0)
    memory.acting_for("bob", agent="bot").episodes.append("user", "Bob's turn.", at=T0)
    exported = memory.privacy.export("ada")["episodes"]
    assert sorted((e["agent"], e["role"], e["text"], e["session"]) for e in exported) == [
        ("@person", "system", "Ada opened the app.", None),
        ("bot", "user", "My parcel is late.", "s1"),
        ("other", "assistant", "On it.", None),
    ]
    mine = next(e for e in exported if e["id"] == first.id)
    assert Episode.model_validate(mine) == first
    assert json.loads(json.dumps(exported)) == exported
    sealed = [value for _, value in episode_records(memory, "ada")]
    receipt = memory.privacy.erase("ada")
    assert receipt.claims["episodes"] == 3
    assert left_in_the_driver(memory, sealed) == []
    assert episode_records(memory, "ada") == []
    assert memory.person("ada").episodes.list() == []
    assert [e.text for e in memory.person("bob").episodes.list()] == ["Bob's turn."]


def test_a_driver_without_person_records_refuses_the_ledger(
    tmp_path: Path, keys_path: Path
) -> None:
    driver = NoPersonRecords(tmp_path / "store")
    with Memory(driver, KeyStore.open(keys_path), app="app") as memory, tenant.use("acme"):
        ada = memory.person("ada")
        for call in (lambda: ada.episodes.append("user", "hi"), ada.episodes.list):
            with pytest.raises(MemoryCapabilityError) as refused:
                call()
            assert refused.value.capability == "person_records"
        assert memory.privacy.export("ada")["episodes"] == []
        assert memory.enforce_retention() == []
