"""The local driver: atomic files, crash safety, two processes at once, 10,000 memories a person."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import mainsdk_memory.drivers.local._driver as local_driver
from mainsdk_memory import ConfigurationError, Memory, tenant
from mainsdk_memory.drivers.local import LocalDriver

WRITER = textwrap.dedent(
    """
    import sys
    from mainsdk_memory import Memory, tenant
    store, keys, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with Memory.open("local:" + store, keys=keys, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent=name)
        for i in range(count):
            record = ada.remember(f"{name} wrote note {i} about the orchard")
            print(record.id, flush=True)
    """
)


def _writer(store: Path, keys: Path, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(keys), name, str(count)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _open(store: Path, keys: Path) -> Memory:
    return Memory.open(f"local:{store}", keys=keys, app="app")


def test_two_processes_writing_one_person_lose_nothing(tmp_path: Path, keys_path: Path) -> None:
    store = tmp_path / "store"
    procs = [_writer(store, keys_path, f"writer-{n}", 60) for n in range(2)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outputs]
    written = {line for out, _ in outputs for line in out.split()}
    assert len(written) == 120
    with _open(store, keys_path) as memory, tenant.use("acme"):
        ada = memory.person("ada")  # the person sees every agent's memories
        seen: set[str] = set()
        cursor = None
        while True:
            page = ada.list(limit=50, cursor=cursor)
            seen |= {record.id for record in page.items}
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert seen == written
        assert len(ada.recall("orchard note", top_k=100)) == 100


def test_a_killed_writer_loses_nothing_it_reported_and_leaves_no_half_record(
    tmp_path: Path, keys_path: Path
) -> None:
    store = tmp_path / "store"
    proc = _writer(store, keys_path, "doomed", 100_000)
    assert proc.stdout is not None
    reported = [proc.stdout.readline().strip() for _ in range(30)]
    proc.send_signal(signal.SIGKILL)  # mid-write, somewhere in the next remember
    rest, _ = proc.communicate(timeout=60)
    reported += rest.split()
    reported = [line for line in reported if line]
    for path in store.rglob("mem_*.json"):
        json.loads(path.read_bytes())  # every stored file is whole
    with _open(store, keys_path) as memory, tenant.use("acme"):
        ada = memory.person("ada")  # the person sees every agent's memories
        for memory_id in reported:
            assert ada.get(memory_id).text.startswith("doomed wrote note")
        assert ada.remember("Life goes on after the crash.").version == 1


def test_stray_temp_files_and_a_torn_log_line_are_ignored(tmp_path: Path, keys_path: Path) -> None:
    store = tmp_path / "store"
    with _open(store, keys_path) as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        record = ada.remember("Ada grows chillies.")
        folder = next(store.rglob(f"{record.id}.json")).parent
        (folder / f".{record.id}.json.dead.tmp").write_bytes(b'{"versions": [{"trunc')
        with open(folder / ".changes", "ab") as log:
            log.write(b"mem_torn_line_without_newl")
        assert [hit.record.id for hit in ada.recall("chillies")] == [record.id]
    with _open(store, keys_path) as fresh, tenant.use("acme"):
        assert fresh.acting_for("ada", agent="bot").get(record.id).text == "Ada grows chillies."


def test_a_second_opener_sees_new_writes_and_forgets(tmp_path: Path, keys_path: Path) -> None:
    store = tmp_path / "store"
    with _open(store, keys_path) as first, _open(store, keys_path) as second, \
            tenant.use("acme"):
        writer = first.acting_for("ada", agent="a")
        reader = second.person("ada")
        assert reader.recall("kayak") == []
        record = writer.remember("Ada bought a kayak.")
        assert [hit.record.id for hit in reader.recall("kayak")] == [record.id]
        writer.revise(record.id, "Ada sold her kayak.")
        assert reader.get(record.id).version == 2
        first.person("ada").forget(record.id)
        assert reader.recall("kayak") == []


def test_the_change_log_is_restarted_without_losing_memories(
    tmp_path: Path, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_driver, "_COMPACT_LOG_AT", 200)
    store = tmp_path / "store"
    with _open(store, keys_path) as writer_mem, _open(store, keys_path) as reader_mem, \
            tenant.use("acme"):
        writer = writer_mem.acting_for("ada", agent="a")
        reader = reader_mem.person("ada")
        ids = []
        for i in range(25):
            ids.append(writer.remember(f"Ada planted tree number {i}.").id)
            assert len(reader.recall("tree planted", top_k=100)) == i + 1
        log = next(store.rglob(".changes"))
        assert log.stat().st_size <= 200 + 40  # it was restarted along the way
        assert {r.id for r in reader.list(limit=100).items} == set(ids)


def test_ten_thousand_memories_a_person_stay_usable(
    tmp_path: Path, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with _open(store, keys_path) as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        with monkeypatch.context() as fast:
            # Loading only: durability of each write is tested elsewhere.
            fast.setattr(os, "fsync", lambda fd: None)
            for i in range(10_000):
                ada.remember(f"Daily log {i}: walked {i % 37} km near river {i % 101}.")
        needle = ada.remember("Ada found a rare blue heron feather.")
        files = {p: p.stat().st_mtime_ns for p in store.rglob("mem_*.json")}
        assert len(files) == 10_001
        time.sleep(0.01)
        extra = ada.remember("Ada saw the heron again.")
        changed = [p for p in store.rglob("mem_*.json") if files.get(p) != p.stat().st_mtime_ns]
        assert [p.stem for p in changed] == [extra.id]  # one write touches one memory file
        hits = ada.recall("blue heron feather", top_k=2)
        assert [hit.record.id for hit in hits] == [needle.id, extra.id]
        assert ada.list(limit=1).items[0].id == extra.id


def test_a_non_store_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ConfigurationError, match="not a memory store"):
        LocalDriver(tmp_path / "photos")
