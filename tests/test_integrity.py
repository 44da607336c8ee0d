"""Integrity against whoever can write the memory store but not the key store (ADR 0047).

Each test plays the store's writer through the driver's own calls — the same power as editing
rows or restoring an old backup of them in place — and tries to get an older, edited or
deleted state believed: a memory rolled back to its first version, its creation time moved to
escape retention, its pinned flag set, a forgotten memory brought back, a kill switch or a
guardian's policy deleted, a revoked grant replayed. Every attempt is an
:class:`IntegrityError` (a :class:`SealError` with its own code) and an audit event, never
the older data; on every driver. The salt a forgotten memory was sealed with is gone from the
key store's anchors file, so no copy of its rows — a PostgreSQL dead tuple, a backup — opens
with the live keys. Limits hold across processes: four writers never pass a cap together.
"""

from __future__ import annotations

import dataclasses
import stat
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mainsdk_memory import (
    AgentLimits,
    IntegrityError,
    KeyStoreError,
    Memory,
    MemoryRecord,
    SealError,
    StoreError,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory._sealing import memory_ad, open_contents
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.keys._anchors import ANCHORS_FILE

pytestmark = pytest.mark.usefixtures("acme")


def _versions(memory: Memory, record: MemoryRecord) -> list[StoredRow]:
    subject = caller_of(memory.person("ada")).pseudonym()
    return memory.driver.versions("acme", "app", (subject,), record.id)


def _replace(memory: Memory, rows: list[StoredRow]) -> None:
    """The store's writer puts ``rows`` in place of every version of their memory."""
    first = rows[0]
    memory.driver.erase(first.tenant, first.app, first.subject, first.memory_id)
    memory.driver.bulk_put(rows)  # each row as it is (both drivers load rows this way)


def _refused(sink: MemorySink, operation: str) -> bool:
    return any(
        event.operation == operation and event.code == IntegrityError.code
        for event in sink.events
    )


def _integrity_events(sink: MemorySink, memory_id: str) -> int:
    return sum(
        1
        for event in sink.events
        if event.operation == "integrity" and event.memory_ids == (memory_id,)
        and event.code == IntegrityError.code
    )


def test_a_memory_rolled_back_to_an_older_version_is_refused(
    audited: Memory, sink: MemorySink
) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada's locker code is 1234.", pinned=True)
    other = bot.remember("Ada's locker is in the basement.")
    first = _versions(audited, record)
    bot.revise(record.id, "Ada's locker code changed to 9876.")
    # The writer deletes version 2 and reopens version 1 (an old backup, restored in place).
    _replace(audited, [dataclasses.replace(first[0], valid_to=None)])
    for call in (
        lambda: bot.get(record.id),
        lambda: bot.revise(record.id, "Ada's locker code is 1234 again."),
        lambda: audited.person("ada").history(record.id),
    ):
        with pytest.raises(IntegrityError) as error:
            call()
        assert error.value.memory_id == record.id
        assert "1234" not in str(error.value)
    assert _refused(sink, "get")
    # A listing, a recall or a context leaves it out (audited) and still serves the others.
    assert [r.id for r in audited.person("ada").list().items] == [other.id]
    assert [h.record.id for h in bot.recall("locker code basement")] == [other.id]
    block = bot.context("locker")
    assert "1234" not in block and "basement" in block
    assert _integrity_events(sink, record.id) >= 3
    # Nothing older came back, and the owner can still forget it.
    audited.person("ada").forget(record.id)
    assert [r.id for r in audited.person("ada").list().items] == [other.id]


def test_an_old_version_reopened_beside_a_stripped_current_one_is_refused(
    audited: Memory,
) -> None:
    """The writer reopens version 1 and keeps version 2 current, but strips its search terms,
    its pin and its kind, so that only version 1 matches: still nothing of version 1."""
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada's locker code is 1234.", pinned=True)
    bot.revise(record.id, "Ada's locker code changed to 9876.")
    v1, v2 = _versions(audited, record)
    _replace(audited, [dataclasses.replace(v1, valid_to=None),
                       dataclasses.replace(v2, terms={}, length=0, pinned=False, kind="event")])
    assert bot.recall("locker code") == []
    assert bot.list(kinds=["fact"]).items == []
    assert "1234" not in bot.context("anything")


def test_a_closed_versions_end_moved_into_the_future_is_refused(
    store_url: str, keys_path: Path
) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: clock[0]) as memory:
        bot = memory.acting_for("ada", agent="bot")
        record = bot.remember("Ada lives in Leeds.")
        clock[0] += timedelta(days=10)
        bot.revise(record.id, "Ada lives in York now.")
        clock[0] += timedelta(days=10)
        v1, v2 = _versions(memory, record)
        # v1 "valid until 2100": a time-travel read at today would return Leeds as current.
        _replace(memory, [dataclasses.replace(v1, valid_to=datetime(2100, 1, 1, tzinfo=UTC)),
                          v2])
        texts = [h.record.text for h in bot.recall("Ada lives", as_of=clock[0])]
        assert "Ada lives in Leeds." not in texts
        with pytest.raises(IntegrityError):
            memory.person("ada").history(record.id)


def test_retention_follows_the_anchors_not_the_stores_columns(
    store_url: str, keys_path: Path
) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: clock[0],
                     retention={"temp": timedelta(days=90)}) as memory:
        bot = memory.acting_for("ada", agent="bot")
        expiring = bot.remember("Ada's trial ends soon.", labels=["temp"])
        lasting = bot.remember("Ada's birthday is in May.", labels=["personal"])
        [expiring_row] = _versions(memory, expiring)
        [lasting_row] = _versions(memory, lasting)
        clock[0] += timedelta(days=120)
        # The writer moves the expiring memory's creation time forward (to escape the sweep)
        # and labels the lasting one "temp" (to have the sweep destroy it).
        _replace(memory, [dataclasses.replace(expiring_row, created_at=clock[0])])
        _replace(memory, [dataclasses.replace(lasting_row, labels=("temp",))])
        receipts = memory.enforce_retention()
        assert [receipt.memory_ids for receipt in receipts] == [(expiring.id,)]
        assert _versions(memory, expiring) == []
        assert len(_versions(memory, lasting)) == 1  # still there (it reads as edited)


def test_a_first_versions_labels_cleared_in_the_store_do_not_lift_retention(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app",
                     retention={"temp": timedelta(days=90)}) as memory:
        bot = memory.acting_for("ada", agent="bot")
        record = bot.remember("Ada's trial ends soon.", labels=["temp"])
        bot.revise(record.id, "Ada's trial ends on Friday.")
        v1, v2 = _versions(memory, record)
        _replace(memory, [dataclasses.replace(v1, labels=()), v2])
        with pytest.raises(SealError):  # the cleared column does not steer the revision
            bot.revise(record.id, "Ada's trial was extended.", labels=["other"])
        assert bot.get(record.id).labels == ("temp",)


def test_a_pinned_flag_set_in_the_store_is_refused(audited: Memory, sink: MemorySink) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada likes window seats.")
    [row] = _versions(audited, record)
    audited.driver.set_pinned("acme", "app", row.subject, record.id, True)
    # A pinned memory would go into every context: it is left out, and the audit says why.
    assert "window seats" not in bot.context("anything at all")
    assert _integrity_events(sink, record.id) == 1
    with pytest.raises(IntegrityError):
        bot.get(record.id)
    # A pin through the SDK is anchored: it reads.
    audited.driver.set_pinned("acme", "app", row.subject, record.id, False)
    assert bot.pin(record.id).pinned
    assert "window seats" in bot.context("anything at all")


def _anchor_bytes(keys_path: Path) -> bytes:
    """Every byte of the anchors database and its write-ahead log."""
    return b"".join(
        path.read_bytes() for path in sorted(keys_path.glob(ANCHORS_FILE + "*")) if path.is_file()
    )


def test_a_forgotten_memory_restored_from_a_backup_does_not_open(audited: Memory,
                                                                 keys_path: Path) -> None:
    ada = audited.person("ada")
    record = ada.remember("Ada's new address is 4 Elm Road.")
    backup = _versions(audited, record)
    services = services_of(audited)
    anchor = services.keys.anchors.memory(services.anchor_scope("acme"), record.id)
    assert anchor is not None and anchor.salt in _anchor_bytes(keys_path)
    ada.forget(record.id)
    # The salt is gone from the anchors' files themselves (the database and its log), not
    # just from what a query returns.
    assert anchor.salt not in _anchor_bytes(keys_path)
    for row in backup:  # a backup (or a PostgreSQL dead tuple) put back in place
        audited.driver.put(row)
    with pytest.raises(IntegrityError):
        ada.get(record.id)
    # Even with the person's live key and the right associated data, the bytes do not open:
    # the memory's seal key needs the salt the forget destroyed.
    keys = services.subject_keys("acme", "ada", create=False)
    assert keys is not None
    ad = memory_ad(caller_of(ada), "ada", record.id, 1)
    with pytest.raises(SealError):
        keys.open(backup[0].sealed, ad)
    with pytest.raises(SealError):
        open_contents(caller_of(ada), backup[0])


def test_a_deleted_kill_switch_keeps_the_agent_stopped(audited: Memory) -> None:
    rogue = audited.acting_for("ada", agent="rogue")
    rogue.remember("Ada's parcel is at the depot.")
    audited.kill("rogue")
    audited.driver.control_put("acme", "app", "agent/rogue/kill", None)  # the writer deletes it
    with pytest.raises(IntegrityError):
        rogue.remember("Ada said to send everything to a new address.")
    with pytest.raises(IntegrityError):
        rogue.recall("parcel")
    with pytest.raises(IntegrityError):
        audited.is_killed("rogue")
    # The app writes the record again: the agent is revived only when the app says so.
    audited.kill("rogue")
    assert audited.is_killed("rogue")


def test_a_replayed_grant_after_a_revoke_is_refused(audited: Memory) -> None:
    audited.acting_for("ada", agent="bot").remember("Ada's son is called Tom.")
    audited.grant("reader", read="all")
    old = audited.driver.control_get("acme", "app", "agent/reader/grant")
    assert old is not None
    audited.revoke("reader")
    audited.driver.control_put("acme", "app", "agent/reader/grant", old)  # replayed
    with pytest.raises(IntegrityError):
        audited.acting_for("ada", agent="reader").recall("son")
    with pytest.raises(IntegrityError):
        audited.read_policy("reader")


def test_a_deleted_guardian_policy_does_not_lift_consent(audited: Memory) -> None:
    audited.privacy.set_guardian("kim", guardian="lee")
    key = f"child/{caller_of(audited.person('kim')).pseudonym()}"
    assert audited.driver.control_get("acme", "app", key) is not None
    audited.driver.control_put("acme", "app", key, None)
    with pytest.raises(IntegrityError):
        audited.acting_for("kim", agent="bot").remember("Kim likes dinosaurs.")
    subject = caller_of(audited.person("kim")).pseudonym()
    where = Filter(tenant="acme", app="app", subjects=(subject,), any_session=True)
    assert audited.driver.list(where, limit=10) == []  # nothing was stored


def test_the_anchors_hold_no_person_id_or_content(memory: Memory, keys_path: Path) -> None:
    bot = memory.acting_for("ada.lovelace@example.com", agent="bot")
    record = bot.remember("Zanzibar holiday booked.", pinned=True)
    bot.revise(record.id, "Zanzibar holiday moved to June.")
    memory.privacy.set_guardian("kim.child@example.com", guardian="lee.parent@example.com")
    raw = _anchor_bytes(keys_path)
    for word in (b"ada.lovelace", b"kim.child", b"lee.parent", b"Zanzibar", b"zanzibar",
                 b"holiday"):
        assert word not in raw


# -- limits across processes ----------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from mainsdk_memory import AgentLimits, LimitExceededError, Memory, tenant
    url, keys, name = sys.argv[1:4]
    stored = 0
    with Memory.open(url, keys=keys, app="app",
                     limits=AgentLimits(memories_per_person=10)) as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for i in range(6):
            try:  # as they are: this tests the cap, not formation (a duplicate stores nothing)
                bot.remember(f"Ada note {name} {i}.", formation=False)
                stored += 1
            except LimitExceededError:
                pass
    print(stored)
    """
)


def test_four_writer_processes_never_pass_a_memory_cap_together(
    store_url: str, keys_path: Path, tmp_path: Path
) -> None:
    # Open once first, so every writer finds the store (and PostgreSQL schema) ready.
    with Memory.open(store_url, keys=keys_path, app="app"):
        pass
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, store_url, str(keys_path), str(n)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in range(4)
    ]
    stored = 0
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        stored += int(out.strip())
    assert stored == 10
    with Memory.open(store_url, keys=keys_path, app="app") as memory:
        assert len(memory.person("ada").list(limit=100).items) == 10


def test_a_write_rate_is_one_count_for_every_instance(store_url: str, keys_path: Path) -> None:
    from mainsdk_memory import LimitExceededError

    clock = [datetime(2026, 11, 30, 9, 0, tzinfo=UTC)]
    limits = AgentLimits(writes_per_minute=4)
    with (
        Memory.open(store_url, keys=keys_path, app="app", clock=lambda: clock[0],
                    limits=limits) as one,
        Memory.open(store_url, keys=keys_path, app="app", clock=lambda: clock[0],
                    limits=limits) as two,
    ):
        for i in range(2):
            one.acting_for("ada", agent="bot").remember(f"Ada note one {i}.")
            two.acting_for("bea", agent="bot").remember(f"Bea note two {i}.")
        for instance in (one, two):
            with pytest.raises(LimitExceededError, match="4 writes per minute"):
                instance.acting_for("cy", agent="bot").remember("One too many.")
        clock[0] += timedelta(seconds=61)
        two.acting_for("cy", agent="bot").remember("After a minute.")


def test_the_anchors_files_are_private(memory: Memory, keys_path: Path) -> None:
    bot = memory.acting_for("ada", agent="bot")
    record = bot.remember("Ada's flat is on the third floor.")
    bot.revise(record.id, "Ada's flat is on the fourth floor.")
    files = sorted(keys_path.glob(ANCHORS_FILE + "*"))
    assert [path.name for path in files][:1] == [ANCHORS_FILE]
    for path in [*files, keys_path / "anchors.lock"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


# -- honest use under failures and races ----------------------------------------------------


def test_a_memory_hidden_in_the_store_is_still_forgotten_for_good(
    audited: Memory, keys_path: Path
) -> None:
    ada = audited.person("ada")
    record = ada.remember("Ada's new address is 4 Elm Road.")
    backup = _versions(audited, record)
    audited.driver.erase("acme", "app", backup[0].subject, record.id)  # the writer hides it
    receipt = ada.forget(record.id)  # the person still forgets it: its salt goes
    assert receipt.memory_ids == (record.id,)
    audited.driver.bulk_put(backup)  # and un-hides it later
    with pytest.raises(IntegrityError):
        ada.get(record.id)


def test_a_failed_pin_leaves_the_pin_anchored(audited: Memory) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada likes tea.")
    [row] = _versions(audited, record)
    real = audited.driver.set_pinned

    def failing(*args: object, **kwargs: object) -> None:
        raise StoreError("simulated")

    audited.driver.set_pinned = failing  # type: ignore[method-assign]
    with pytest.raises(StoreError):
        bot.pin(record.id)
    audited.driver.set_pinned = real  # type: ignore[method-assign]
    assert bot.get(record.id).pinned is False
    real("acme", "app", row.subject, record.id, True)  # the writer's pin is still refused
    assert "Ada likes tea" not in bot.context("zzz unrelated")


def test_a_pin_that_lands_during_a_revision_is_kept(
    audited: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mainsdk_memory import _scoped

    bot = audited.acting_for("ada", agent="bot")
    other = audited.acting_for("ada", agent="bot")  # stands for another process
    record = bot.remember("Ada likes tea.")
    real = _scoped.seal_vector

    def racing(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(_scoped, "seal_vector", real)
        other.pin(record.id)  # between the revision's read and its write
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_scoped, "seal_vector", racing)
    bot.revise(record.id, "Ada likes green tea.")
    current = bot.get(record.id)
    assert (current.version, current.pinned) == (2, True)
    assert bot.unpin(record.id).pinned is False


def test_two_writers_of_one_control_record_end_as_the_store_ends(
    store_url: str, keys_path: Path
) -> None:
    with (
        Memory.open(store_url, keys=keys_path, app="app") as first,
        Memory.open(store_url, keys=keys_path, app="app") as second,
    ):
        real = first.driver.control_put
        started = threading.Event()
        done: list[BaseException | None] = []

        def second_writer() -> None:
            try:
                with tenant.use("acme"):
                    second.set_limits("bot", AgentLimits(writes_per_minute=50))
                done.append(None)
            except BaseException as error:
                done.append(error)

        def slow(*args: object, **kwargs: object) -> None:
            real(*args, **kwargs)  # type: ignore[arg-type]
            first.driver.control_put = real  # type: ignore[method-assign]
            thread.start()
            started.wait(0.2)  # the second writer waits for this one to finish

        thread = threading.Thread(target=second_writer)
        first.driver.control_put = slow  # type: ignore[method-assign]
        first.set_limits("bot", AgentLimits(writes_per_minute=10))
        thread.join(30)
        assert done == [None]
        for instance in (first, second):
            assert instance.is_killed("bot") is False
            instance.acting_for("ada", agent="bot").remember("Ada likes tea.")


def test_another_persons_damaged_forget_request_does_not_block_a_forget(
    audited: Memory,
) -> None:
    bea = audited.acting_for("bea", agent="bot")
    bea_memory = bea.remember("Bea's spare key is under the mat.")
    request = bea.forget(bea_memory.id)
    key = f"forget/{caller_of(audited.person('bea')).pseudonym()}/{request.id}"
    audited.driver.control_put("acme", "app", key, None)  # the writer deletes Bea's request
    ada = audited.person("ada")
    record = ada.remember("Ada's locker is in the basement.")
    assert ada.forget(record.id).memory_ids == (record.id,)


def test_failed_writes_hold_no_place_under_a_memory_cap(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app",
                     limits=AgentLimits(memories_per_person=3)) as memory:
        bot = memory.acting_for("ada", agent="bot")
        real = memory.driver.put

        def failing(*args: object, **kwargs: object) -> None:
            raise StoreError("simulated")

        memory.driver.put = failing  # type: ignore[method-assign]
        for i in range(3):
            with pytest.raises(StoreError):
                bot.remember(f"Ada note {i}.")
        memory.driver.put = real  # type: ignore[method-assign]
        for i in range(3):
            bot.remember(f"Ada real note {i}.")
        assert len(memory.person("ada").list().items) == 3


def test_a_key_store_without_its_anchors_is_refused(store_url: str, keys_path: Path) -> None:
    for path in keys_path.glob(ANCHORS_FILE + "*"):
        path.unlink()
    with pytest.raises(KeyStoreError, match="anchors"):
        Memory.open(store_url, keys=keys_path, app="app")


def test_a_revision_that_lands_inside_a_pin_keeps_the_memory_readable(audited: Memory) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada likes tea.")
    driver = audited.driver
    real = driver.set_pinned

    def pin_then_revision(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)  # type: ignore[arg-type]
        driver.set_pinned = real  # type: ignore[method-assign]
        # Another caller's revision, between the pin's store write and its anchor update:
        # it read the old flag and writes version 2 with it.
        audited.acting_for("ada", agent="bot").revise(record.id, "Ada likes green tea.")

    driver.set_pinned = pin_then_revision  # type: ignore[method-assign]
    assert bot.pin(record.id).pinned is True
    current = bot.get(record.id)
    assert (current.version, current.pinned, current.text) == (2, True, "Ada likes green tea.")
    assert bot.unpin(record.id).pinned is False


def test_a_staged_race_never_serves_the_older_version(tmp_path: Path, keys_path: Path) -> None:
    """SQLite's writer drops the unique index, reopens version 1 beside a closed copy of it
    and moves version 2's creation time so the reopened row sorts first: the picture of a
    reader that raced a revision. The older text is never served."""
    import sqlite3

    sink = MemorySink()
    db = tmp_path / "memory.db"
    with Memory.open(f"sqlite:///{db}", keys=keys_path, app="app", audit=sink) as memory:
        bot = memory.acting_for("ada", agent="bot")
        record = bot.remember("Ada's locker code is 1234.")
        bot.revise(record.id, "Ada's locker code changed to 9876.")
    connection = sqlite3.connect(db)
    columns = [row[1] for row in connection.execute("PRAGMA table_info(memory_versions)")]
    others = ",".join(name for name in columns if name != "doc")
    rows = connection.execute("SELECT doc, version FROM memory_versions").fetchall()
    v1 = next(doc for doc, version in rows if version == 1)
    v2 = next(doc for doc, version in rows if version == 2)
    connection.execute("DROP INDEX memory_versions_key")
    connection.execute(
        f"INSERT INTO memory_versions (doc, {others}) "  # noqa: S608 - column names from SQLite
        f"SELECT 1000, {others} FROM memory_versions WHERE doc = ?", (v1,)
    )
    connection.execute("UPDATE memory_versions SET valid_to = NULL WHERE doc = ?", (v1,))
    connection.execute(
        "UPDATE memory_versions SET created_at = created_at - 1 WHERE doc = ?", (v2,)
    )
    connection.commit()
    connection.close()
    with Memory.open(f"sqlite:///{db}", keys=keys_path, app="app", audit=sink) as memory:
        bot = memory.acting_for("ada", agent="bot")
        served = [item.text for item in memory.person("ada").list().items]
        served += [hit.record.text for hit in bot.recall("locker code")]
        assert "Ada's locker code is 1234." not in served
        assert "1234" not in bot.context("locker code")


def test_deleted_old_versions_do_not_vanish_unnoticed(audited: Memory) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada lives in Leeds.")
    bot.revise(record.id, "Ada lives in York.")
    bot.revise(record.id, "Ada lives in Hull.")
    _, v2, v3 = _versions(audited, record)
    _replace(audited, [v2, v3])  # the writer deletes version 1
    with pytest.raises(IntegrityError):
        audited.person("ada").history(record.id)
    with pytest.raises(IntegrityError):
        bot.revise(record.id, "Ada lives in Bath.")
