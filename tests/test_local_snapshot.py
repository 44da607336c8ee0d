"""The local driver's packed snapshot: a cold open decodes only what changed and what it
returns, answers exactly as decoding every file does, and never hides a damaged, restored or
erased memory (ADR 0100).

The threshold of files an open decodes before it writes a snapshot is lowered so that a
few dozen memories get one; the reference is the same store opened without its snapshot.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _db_rows import make_row

import mainsdk_memory.drivers.local._driver as local_driver
from mainsdk_memory import StoreError
from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.drivers.local._snapshot import SNAPSHOT

T0 = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
N = 40
QUERIES = [[{"t_common"}], [{"t_3"}, {"t_common"}], [{"t_7", "t_11"}], [{"t_only_5"}]]


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_driver, "_SNAPSHOT_AFTER", 8)


def _tag(n: int) -> str:
    return f"{n:032x}"  # a blinded tag's shape


def _row(i: int, **fields: Any) -> StoredRow:
    terms = {"t_common": 1 + i % 3, f"t_{i % 13}": 1 + i % 2}
    if i == 5:
        terms["t_only_5"] = 2
    values: dict[str, Any] = {
        "sealed": os.urandom(40),
        "terms": terms,
        "length": sum(terms.values()) + i % 4,
        "created_at": T0 + timedelta(minutes=i),
        "recorded_at": T0 + timedelta(minutes=i),
        "valid_from": T0 + timedelta(minutes=i),
        "tags": frozenset({_tag(i % 4)}) if i % 2 else frozenset(),
        "labels": ("personal", "health") if i % 5 == 0 else ("personal",),
        "kind": "preference" if i % 3 == 0 else "fact",
        "pinned": i % 7 == 0,
    }
    values.update(fields)
    return make_row(memory_id=f"mem_{i:03d}", **values)


def _fill(store: Path) -> None:
    with LocalDriver(store) as driver:
        for i in range(N):
            driver.put(_row(i), vector=b"vec-%d" % i if i % 4 == 0 else None)
        first = _row(1)
        driver.put(replace(first, version=2, valid_from=T0 + timedelta(days=1)), closes=1)


def _where(**fields: Any) -> Filter:
    return Filter(tenant="acme", app="app", subjects=("p_ada",), **fields)


def _folder(store: Path) -> Path:
    return store / "acme" / "app" / "p_ada"


def _answers(driver: LocalDriver) -> list[Any]:
    """What the reads of the driver return, for the same store opened two ways."""
    found: list[Any] = [driver.search(_where(), query, top_k=5) for query in QUERIES]
    found.append(driver.search(_where(tags=(frozenset({_tag(1), _tag(3)}),)), QUERIES[0], top_k=50))
    found.append(driver.search(_where(kinds=frozenset({"preference"})), QUERIES[0], top_k=50))
    found.append(driver.list(_where(pinned=True), limit=100))
    found.append(driver.list(_where(as_of=T0 + timedelta(hours=2)), limit=100))
    found.append(driver.vectors(_where()))
    found.append(driver.versions("acme", "app", ("p_ada",), "mem_001"))
    found.append(driver.expired("acme", "app", [("health", T0 + timedelta(minutes=20))]))
    found.append(sorted(driver.damaged("acme", "app", "p_ada")))
    return found


def _reference(store: Path, tmp_path: Path) -> list[Any]:
    """The answers of the same files with no snapshot: every file decoded."""
    copy = tmp_path / "reference"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy)
    (_folder(copy) / SNAPSHOT).unlink(missing_ok=True)
    with LocalDriver(copy) as driver:
        monkey = pytest.MonkeyPatch()
        monkey.setattr(local_driver, "_SNAPSHOT_AFTER", 10**9)
        try:
            return _answers(driver)
        finally:
            monkey.undo()


def _opened_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The memory files opened from now on (they are still opened)."""
    opened: list[str] = []
    real = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".json") and "/mem_" in str(path):
            opened.append(os.path.basename(str(path)))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    return opened


def test_a_cold_open_from_the_snapshot_decodes_only_what_it_returns_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _fill(store)
    with LocalDriver(store) as first:  # decodes every file, then writes the snapshot
        expected = _answers(first)
    assert (_folder(store) / SNAPSHOT).is_file()
    assert expected == _reference(store, tmp_path)
    opened = _opened_files(monkeypatch)
    with LocalDriver(store) as cold:
        top = cold.search(_where(), QUERIES[1], top_k=3)
        assert len(top) == 3
        assert len(opened) == 3  # the rows returned, nothing else
        expired = cold.expired("acme", "app", [("health", T0 + timedelta(minutes=20))])
        assert expired == [("p_ada", f"mem_{i:03d}") for i in (0, 5, 10, 15)]
        assert len(opened) == 3  # from the columns: no file decoded
        assert _answers(cold) == expected


def test_changes_after_the_snapshot_are_seen_by_the_next_cold_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _fill(store)
    with LocalDriver(store) as driver:
        driver.list(_where(), limit=1)  # writes the snapshot
        snapshot = (_folder(store) / SNAPSHOT).read_bytes()
        driver.put(_row(100, terms={"t_only_5": 9, "t_new": 1}, length=10))
        driver.set_pinned("acme", "app", "p_ada", "mem_002", True)
        driver.put(replace(_row(3), version=2, valid_from=T0 + timedelta(days=2)), closes=1)
        driver.erase("acme", "app", "p_ada", "mem_004")
    # An erase removed the snapshot; put an old one back to play a stale snapshot.
    (_folder(store) / SNAPSHOT).write_bytes(snapshot)
    expected = _reference(store, tmp_path)
    opened = _opened_files(monkeypatch)
    with LocalDriver(store) as cold:
        found = _answers(cold)
        assert [row.memory_id for row, _ in cold.search(_where(), [{"t_new"}], top_k=5)] == [
            "mem_100"
        ]
        assert "mem_004" not in {row.memory_id for row in cold.list(_where(), limit=100)}
    assert found == expected
    assert "mem_004.json" not in opened


def test_a_file_damaged_in_place_after_the_snapshot_is_reported_and_a_restore_heals_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    _fill(store)
    with LocalDriver(store) as driver:
        driver.list(_where(), limit=1)
    path = _folder(store) / "mem_005.json"
    backup = path.read_bytes()
    path.write_bytes(b"{not json" + b" " * len(backup))  # same inode, new size and mtime
    with LocalDriver(store) as cold:
        assert cold.damaged("acme", "app", "p_ada") == ["mem_005"]
        assert "mem_005" not in {row.memory_id for row in cold.list(_where(), limit=100)}
        assert cold.search(_where(), [{"t_only_5"}], top_k=5) == []
        with pytest.raises(StoreError, match="mem_005"):
            cold.versions("acme", "app", ("p_ada",), "mem_005")
    path.write_bytes(backup)  # restored in place, from a backup
    with LocalDriver(store) as cold:
        assert cold.damaged("acme", "app", "p_ada") == []
        assert [r.memory_id for r, _ in cold.search(_where(), [{"t_only_5"}], top_k=5)] == [
            "mem_005"
        ]


def test_erase_leaves_no_byte_of_the_memory_in_the_snapshot(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _fill(store)
    with LocalDriver(store) as driver:
        driver.list(_where(), limit=1)
        assert b"t_only_5" in (_folder(store) / SNAPSHOT).read_bytes()
        driver.erase("acme", "app", "p_ada", "mem_005")
        dump = b"\n".join(data for _, data in driver.raw_dump())
        assert b"mem_005" not in dump
        assert b"t_only_5" not in dump
    with LocalDriver(store) as cold:  # decodes the files again and writes a new snapshot
        assert cold.search(_where(), [{"t_only_5"}], top_k=5) == []
        assert len(cold.list(_where(), limit=100)) == N - 1
    assert b"mem_005" not in (_folder(store) / SNAPSHOT).read_bytes()


@pytest.mark.parametrize("damage", ["torn", "garbage", "empty"])
def test_a_broken_snapshot_is_ignored_and_rewritten(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "store"
    _fill(store)
    with LocalDriver(store) as driver:
        expected = _answers(driver)
    path = _folder(store) / SNAPSHOT
    content = path.read_bytes()
    broken = {"torn": content[: len(content) // 2], "garbage": os.urandom(300), "empty": b""}
    path.write_bytes(broken[damage])
    with LocalDriver(store) as cold:
        assert _answers(cold) == expected
    assert path.read_bytes() != broken[damage]


def test_reading_writes_the_snapshot_without_a_sync_and_a_write_still_makes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _fill(store)
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    with LocalDriver(store) as driver:
        driver.list(_where(), limit=1)
        assert (_folder(store) / SNAPSHOT).is_file()
        assert calls == []
        if local_driver._boot_id() is not None:
            driver.put(_row(200))
            assert len(calls) == 1
