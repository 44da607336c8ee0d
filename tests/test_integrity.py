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
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mainsdk_memory import (
    AgentLimits,
    IntegrityError,
    Memory,
    MemoryRecord,
    SealError,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory._sealing import memory_ad, open_contents
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.keys._anchors import ANCHORS_FILE

pytestmark = pytest.mark.usefixtures("acme")


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
def audited(store_url: str, keys_path: Path, sink: MemorySink) -> Iterator[Memory]:
    with Memory.open(store_url, keys=keys_path, app="app", audit=sink) as memory:
        yield memory


def _versions(memory: Memory, record: MemoryRecord) -> list[StoredRow]:
    subject = caller_of(memory.person("ada")).pseudonym()
    return memory.driver.versions("acme", "app", (subject,), record.id)


def _replace(memory: Memory, rows: list[StoredRow]) -> None:
    """The store's writer puts ``rows`` in place of every version of their memory."""
    first = rows[0]
    memory.driver.erase(first.tenant, first.app, first.subject, first.memory_id)
    for row in rows:
        memory.driver.put(row)


def _refused(sink: MemorySink, operation: str) -> bool:
    return any(
        event.operation == operation and event.code == IntegrityError.code
        for event in sink.events
    )


def test_a_memory_rolled_back_to_an_older_version_is_refused(
    audited: Memory, sink: MemorySink
) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada's locker code is 1234.")
    first = _versions(audited, record)
    bot.revise(record.id, "Ada's locker code changed to 9876.")
    # The writer deletes version 2 and reopens version 1 (an old backup, restored in place).
    _replace(audited, [dataclasses.replace(first[0], valid_to=None)])
    for call in (
        lambda: bot.get(record.id),
        lambda: audited.person("ada").list(),
        lambda: bot.recall("locker code"),
        lambda: bot.context("locker code"),
        lambda: bot.revise(record.id, "Ada's locker code is 1234 again."),
        lambda: audited.person("ada").history(record.id),
    ):
        with pytest.raises(IntegrityError) as error:
            call()
        assert error.value.memory_id == record.id
        assert "1234" not in str(error.value)
    assert _refused(sink, "get") and _refused(sink, "recall")
    # Nothing older came back, and the owner can still forget it.
    audited.person("ada").forget(record.id)
    assert audited.person("ada").list().items == []


def test_an_edited_creation_time_does_not_escape_retention(
    store_url: str, keys_path: Path
) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: clock[0],
                     retention={"temp": timedelta(days=90)}) as memory:
        bot = memory.acting_for("ada", agent="bot")
        record = bot.remember("Ada's trial ends soon.", labels=["temp"])
        [row] = _versions(memory, record)
        clock[0] += timedelta(days=120)
        # The writer moves its creation time forward, so no sweep ever finds it expired.
        _replace(memory, [dataclasses.replace(row, created_at=clock[0])])
        assert memory.enforce_retention() == []  # the sweep's driver query no longer finds it
        with pytest.raises(IntegrityError):
            memory.person("ada").get(record.id)
        with pytest.raises(IntegrityError):
            bot.recall("trial ends")


def test_a_pinned_flag_set_in_the_store_is_refused(audited: Memory, sink: MemorySink) -> None:
    bot = audited.acting_for("ada", agent="bot")
    record = bot.remember("Ada likes window seats.")
    [row] = _versions(audited, record)
    audited.driver.set_pinned("acme", "app", row.subject, record.id, True)
    with pytest.raises(IntegrityError):
        bot.context("anything at all")  # a pinned memory would go into every context
    with pytest.raises(IntegrityError):
        bot.get(record.id)
    assert _refused(sink, "context")
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
            try:
                bot.remember(f"Ada note {name} {i}.")
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
