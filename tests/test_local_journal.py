"""The local driver's journal: one fsync a write, memory files put right after a power loss.

A power loss is played by what it leaves: memory files written since the last sync missing,
torn or old, and a journal written under another boot id (the driver reads the boot id from
the system; the tests hand it a different one). Hard erase still leaves no byte of the memory
anywhere, the journal included, and stores written before the journal keep opening.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _db_rows import make_row

import mainsdk_memory.drivers.local._driver as local_driver
from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.drivers.local import LocalDriver

T0 = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
BOOT = local_driver._boot_id()

pytestmark = pytest.mark.skipif(BOOT is None, reason="this system does not give a boot id")


def _row(memory_id: str, **fields: Any) -> StoredRow:
    values: dict[str, Any] = {"sealed": os.urandom(48), "terms": {"tok_a": 1}}
    values.update(fields)
    return make_row(memory_id=memory_id, **values)


def _where() -> Filter:
    return Filter(tenant="acme", app="app", subjects=("p_ada",))


def _folder(store: Path) -> Path:
    return store / "acme" / "app" / "p_ada"


def _dump(driver: LocalDriver) -> bytes:
    return b"\n".join(data for _, data in driver.raw_dump())


def _fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count os.fsync calls from now on (they still happen)."""
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return calls


def _another_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the driver runs in a later boot of the machine (after a power loss)."""
    monkeypatch.setattr(local_driver, "_boot_id", lambda: "00000000-later-boot-0000")


def test_a_write_makes_one_fsync_and_journals_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        driver.put(_row("mem_first"))  # the folder and its journal are made once
        calls = _fsyncs(monkeypatch)
        row = _row("mem_a")
        driver.put(row)
        assert len(calls) == 1
        revised = replace(row, version=2, valid_from=T0 + timedelta(days=1))
        driver.put(revised, closes=1)
        driver.set_pinned("acme", "app", "p_ada", "mem_a", True)
        driver.put_vector("acme", "app", "p_ada", "mem_a", 2, b"sealed-vector")
        assert len(calls) == 4  # one for each write
        with pytest.raises(MemoryConflictError):
            driver.put(_row("mem_a"))  # refused: nothing written, nothing synced
        assert len(calls) == 4
        journal = (_folder(tmp_path / "store") / ".journal").read_bytes()
        file = (_folder(tmp_path / "store") / "mem_a.json").read_bytes()
        assert journal.startswith(b"#mainsdk-memory-journal " + BOOT.encode() + b"\n")
        assert journal.endswith(b" " + file + b"\n")  # the last record is the file as it is
        assert (tmp_path / "store" / "mainsdk-memory-store.json").read_bytes() == json.dumps(
            {"format": "mainsdk-memory-local/2"}
        ).encode()


@pytest.mark.parametrize("loss", ["missing", "torn", "old", "zeros"])
def test_files_lost_in_a_power_loss_come_back_from_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loss: str
) -> None:
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        first = _row("mem_a")
        driver.put(first)
        old = (_folder(store) / "mem_a.json").read_bytes()
        revised = replace(first, version=2, valid_from=T0 + timedelta(days=1))
        driver.put(revised, closes=1)
        driver.put(_row("mem_b"))
        expected = driver.versions("acme", "app", ["p_ada"], "mem_a")
    path = _folder(store) / "mem_a.json"
    new = path.read_bytes()
    if loss == "missing":
        path.unlink()
    elif loss == "torn":
        path.write_bytes(new[: len(new) // 2])
    elif loss == "old":
        path.write_bytes(old)
    else:
        path.write_bytes(b"\0" * len(new))
    _another_boot(monkeypatch)
    with LocalDriver(store) as reader:  # the first reader after the crash puts it right
        assert reader.versions("acme", "app", ["p_ada"], "mem_a") == expected
        assert reader.damaged("acme", "app", "p_ada") == []
        assert {row.memory_id for row in reader.list(_where(), limit=10)} == {"mem_a", "mem_b"}
    assert path.read_bytes() == new
    journal = (_folder(store) / ".journal").read_bytes()
    assert journal == b"#mainsdk-memory-journal 00000000-later-boot-0000\n"  # started afresh


def test_a_writer_after_the_crash_recovers_before_it_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        driver.put(_row("mem_a"))
    (_folder(store) / "mem_a.json").unlink()  # its new file never reached the disk
    _another_boot(monkeypatch)
    with LocalDriver(store) as writer:
        with pytest.raises(MemoryConflictError):  # the memory is there: the put is refused
            writer.put(_row("mem_a"))
        assert [r.memory_id for r in writer.list(_where(), limit=5)] == ["mem_a"]


def test_a_torn_last_record_is_skipped_and_the_next_write_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        driver.put(_row("mem_a"))
        with open(_folder(store) / ".journal", "ab") as journal:
            journal.write(b"mem_b 0123abcd {\"versions\": [{\"tru")  # died mid-append
        driver.put(_row("mem_c"))
    (_folder(store) / "mem_c.json").unlink()
    _another_boot(monkeypatch)
    with LocalDriver(store) as reader:
        found = {row.memory_id for row in reader.list(_where(), limit=10)}
        assert found == {"mem_a", "mem_c"}  # mem_b's put never returned: not made up


def test_in_the_same_boot_a_damaged_file_is_reported_not_replaced(tmp_path: Path) -> None:
    """No crash, no recovery: the journal never overrides a file while the boot lasts."""
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        driver.put(_row("mem_a"))
    (_folder(store) / "mem_a.json").write_bytes(b"\0garbage")
    with LocalDriver(store) as reader:
        assert reader.damaged("acme", "app", "p_ada") == ["mem_a"]
    assert (_folder(store) / "mem_a.json").read_bytes() == b"\0garbage"


def test_an_erase_leaves_no_record_and_no_crash_brings_the_memory_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    gone = _row("mem_gone", sealed=os.urandom(64), terms={"tok_secret_term": 2})
    with LocalDriver(store) as driver:
        driver.put(_row("mem_kept"))
        driver.put(gone)
        assert gone.sealed.hex().encode() not in _dump(driver)  # base64 in the files
        assert b"mem_gone" in (_folder(store) / ".journal").read_bytes()
        driver.erase("acme", "app", "p_ada", "mem_gone")
        dump = _dump(driver)
        for needle in (b"mem_gone", b"tok_secret_term"):
            assert needle not in dump
        assert b"mem_kept" in dump
    _another_boot(monkeypatch)
    with LocalDriver(store) as reader:
        assert [row.memory_id for row in reader.list(_where(), limit=10)] == ["mem_kept"]
        assert b"mem_gone" not in _dump(reader)


def test_a_full_journal_is_emptied_after_a_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_driver, "_JOURNAL_LIMIT", 3000)
    synced: list[Path] = []
    real = local_driver._sync_filesystem
    monkeypatch.setattr(
        local_driver, "_sync_filesystem", lambda folder: synced.append(folder) or real(folder)
    )
    with LocalDriver(tmp_path / "store") as driver:
        for i in range(30):
            driver.put(_row(f"mem_{i:02d}"))
        journal = (_folder(tmp_path / "store") / ".journal").stat().st_size
        assert journal <= 3000 + 1000 and synced  # emptied along the way, each time after a sync
        assert len(driver.list(_where(), limit=100)) == 30


def _old_store(store: Path) -> None:
    """A store as the driver wrote it before the journal: format /1, every file synced, a
    change log of ids, no journal."""
    folder = _folder(store)
    folder.mkdir(parents=True)
    (store / "mainsdk-memory-store.json").write_bytes(
        json.dumps({"format": "mainsdk-memory-local/1"}).encode()
    )
    for memory_id in ("mem_old_a", "mem_old_b"):
        row = _row(memory_id)
        document = {"versions": [local_driver._row_to_json(row)]}
        (folder / f"{memory_id}.json").write_bytes(json.dumps(document).encode())
    (folder / ".changes").write_bytes(b"mem_old_a\nmem_old_b\n")


def test_a_store_written_before_the_journal_opens_and_is_raised_by_its_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _old_store(store)
    _another_boot(monkeypatch)  # whatever the boot: no journal, nothing to recover
    with LocalDriver(store) as driver:
        assert {r.memory_id for r in driver.list(_where(), limit=5)} == {"mem_old_a", "mem_old_b"}
        assert not (_folder(store) / ".journal").exists()  # reading changes nothing
        marker = store / "mainsdk-memory-store.json"
        assert b"local/1" in marker.read_bytes()
        driver.put(_row("mem_new"))
        assert json.loads(marker.read_bytes()) == {"format": "mainsdk-memory-local/2"}
        assert (_folder(store) / ".journal").exists()
    with LocalDriver(store) as fresh:
        assert len(fresh.list(_where(), limit=5)) == 3


def test_without_a_boot_id_every_file_is_synced_and_a_left_journal_is_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        driver.put(_row("mem_a"))
    (_folder(store) / "mem_a.json").unlink()
    monkeypatch.setattr(local_driver, "_boot_id", lambda: None)
    with LocalDriver(store) as driver:
        assert [r.memory_id for r in driver.list(_where(), limit=5)] == ["mem_a"]
        assert not (_folder(store) / ".journal").exists()  # applied, then removed
        calls = _fsyncs(monkeypatch)
        driver.put(_row("mem_b"))
        assert len(calls) == 2  # the file and its folder: no journal to lean on
        assert not (_folder(store) / ".journal").exists()
