"""The local driver: atomic files, crash safety, two processes at once, 10,000 memories a person."""

from __future__ import annotations

import base64
import builtins
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Collection
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _db_rows import make_row

import mainsdk_memory.drivers._bm25 as bm25
import mainsdk_memory.drivers._protocol as protocol
import mainsdk_memory.drivers.local._driver as local_driver
from mainsdk_memory import ConfigurationError, Memory, tenant
from mainsdk_memory._files import write_private
from mainsdk_memory._recall import query_groups
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.drivers import (
    TENANT_SUBJECT,
    Filter,
    StoredRow,
    VectorEntry,
    bm25_rank,
)
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
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    with _open(store, keys_path) as first, _open(store, keys_path) as second, tenant.use("acme"):
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
    with (
        _open(store, keys_path) as writer_mem,
        _open(store, keys_path) as reader_mem,
        tenant.use("acme"),
    ):
        writer = writer_mem.acting_for("ada", agent="a")
        reader = reader_mem.person("ada")
        ids = []
        for i in range(25):  # as they are: this tests the change log, not formation
            ids.append(writer.remember(f"Ada planted tree number {i}.", formation=False).id)
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
            for i in range(10_000):  # as they are: this is the driver's scale, not formation's
                ada.remember(
                    f"Daily log {i}: walked {i % 37} km near river {i % 101}.", formation=False
                )
        needle = ada.remember("Ada found a rare blue heron feather.", formation=False)
        files = {p: p.stat().st_mtime_ns for p in store.rglob("mem_*.json")}
        assert len(files) == 10_001
        time.sleep(0.01)
        extra = ada.remember("Ada saw the heron again.", formation=False)
        changed = [p for p in store.rglob("mem_*.json") if files.get(p) != p.stat().st_mtime_ns]
        assert [p.stem for p in changed] == [extra.id]  # one write touches one memory file
        hits = ada.recall("blue heron feather", top_k=2)
        assert [hit.record.id for hit in hits] == [needle.id, extra.id]
        assert ada.list(limit=1).items[0].id == extra.id
        # At this size the indexed search still equals the reference exactly (its speed is
        # measured by the benchmarks, not asserted here).
        where = caller_of(ada).filter()
        query = query_groups(caller_of(ada), "walked near river 7")
        rows = memory.driver.list(where, limit=20_000)
        assert memory.driver.search(where, query, top_k=10) == bm25_rank(rows, query, 10)


def test_a_store_another_process_is_creating_is_not_refused(tmp_path: Path) -> None:
    # The creator makes the folder, then writes the marker through a temp file: an opener in
    # between sees only that temp file, which is not "a folder that is not a store".
    root = tmp_path / "store"
    root.mkdir()
    (root / ".mainsdk-memory-store.json.0123456789abcdef.tmp").write_bytes(b"{")
    with LocalDriver(root) as driver:
        assert driver.list(Filter(tenant="acme", app="app", subjects=("p_ada",)), limit=1) == []


def test_a_non_store_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ConfigurationError, match="not a memory store"):
        LocalDriver(tmp_path / "photos")


# -- driver level: sealed vectors, the index against the reference, the change log --------

T0 = datetime(2026, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
SUBJECTS = ("p_ada", "p_bob", TENANT_SUBJECT)


def _row(memory_id: str, **fields: Any) -> StoredRow:
    """A version-1 row (the db tests' defaults) with random sealed bytes and token ``tok_a``."""
    values: dict[str, Any] = {
        "sealed": os.urandom(48),
        "terms": {"tok_a": 1},
        "created_at": T0,
        "recorded_at": T0,
        "valid_from": T0,
    }
    values.update(fields)
    return make_row(memory_id=memory_id, **values)


def _where(**options: Any) -> Filter:
    options.setdefault("subjects", ("p_ada",))
    return Filter(tenant="acme", app="app", **options)


def _everything(driver: LocalDriver) -> bytes:
    return b"\n".join(data for _, data in driver.raw_dump())


def test_vectors_round_trip_with_the_version_they_were_put_with(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        first, second = os.urandom(64), os.urandom(64)
        driver.put(_row("mem_a"), vector=first)
        driver.put(_row("mem_plain"))  # no vector: no entry, and no field in its file
        later = T0 + timedelta(hours=1)
        driver.put(
            _row("mem_a", version=2, valid_from=later, recorded_at=later), closes=1, vector=second
        )
        assert driver.capabilities.vectors
        assert driver.vectors(_where()) == [VectorEntry("p_ada", "mem_a", 2, second)]
        # Closing version 1 kept its vector: the past still has it.
        past = _where(as_of=T0 + timedelta(minutes=1))
        assert driver.vectors(past) == [VectorEntry("p_ada", "mem_a", 1, first)]
        driver.set_pinned("acme", "app", "p_ada", "mem_a", True)  # a rewrite keeps both
        assert driver.vectors(_where()) == [VectorEntry("p_ada", "mem_a", 2, second)]
        assert driver.vectors(past) == [VectorEntry("p_ada", "mem_a", 1, first)]
        plain = json.loads(next((tmp_path / "store").rglob("mem_plain.json")).read_bytes())
        assert "vector" not in plain["versions"][0]
    with LocalDriver(tmp_path / "store") as fresh:  # read back from the files
        assert fresh.vectors(_where()) == [VectorEntry("p_ada", "mem_a", 2, second)]
        assert fresh.vectors(past) == [VectorEntry("p_ada", "mem_a", 1, first)]


def test_vectors_are_sorted_and_known_ones_come_back_empty(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        sealed = {}
        for subject in ("p_bob", "p_ada", TENANT_SUBJECT):
            for memory_id in ("mem_c", "mem_a", "mem_b"):
                sealed[subject, memory_id] = os.urandom(32)
                driver.put(_row(memory_id, subject=subject), vector=sealed[subject, memory_id])
        where = _where(subjects=("p_bob", TENANT_SUBJECT, "p_ada"))
        entries = driver.vectors(where, known={("mem_b", 1), ("mem_a", 2)})
        assert [(e.subject, e.memory_id, e.version) for e in entries] == sorted(
            (s, m, 1)
            for s in ("p_bob", "p_ada", TENANT_SUBJECT)
            for m in ("mem_a", "mem_b", "mem_c")
        )
        for entry in entries:
            want = None if entry.memory_id == "mem_b" else sealed[entry.subject, entry.memory_id]
            assert entry.sealed == want


def test_vectors_follow_the_filter_rules(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        rows = {
            "mem_open": _row("mem_open"),
            "mem_mine": _row("mem_mine", session="s1", session_only=True),
            "mem_theirs": _row("mem_theirs", session="s2", session_only=True),
            "mem_quarantined": _row("mem_quarantined", trust="untrusted", session="s1"),
            "mem_other_agent": _row("mem_other_agent", agent="other", kind="preference"),
            "mem_old_health": _row("mem_old_health", labels=("health",)),
            "mem_pinned": _row("mem_pinned", pinned=True),
        }
        for row in rows.values():
            driver.put(row, vector=row.memory_id.encode())

        def ids(**options: Any) -> set[str]:
            where = _where(**options)
            got = {e.memory_id for e in driver.vectors(where)}
            assert got == {r.memory_id for r in rows.values() if where.matches(r)}
            return got

        assert ids(session="s1") == set(rows) - {"mem_theirs"}
        assert ids(session="s2") == set(rows) - {"mem_mine", "mem_quarantined"}
        assert ids() == set(rows) - {"mem_mine", "mem_theirs", "mem_quarantined"}
        assert ids(any_session=True) == set(rows)
        assert ids(written_by="other") == {"mem_other_agent"}
        assert ids(kinds=frozenset({"preference"})) == {"mem_other_agent"}
        assert ids(pinned=True) == {"mem_pinned"}
        assert "mem_old_health" not in ids(retention=(("health", T0 + timedelta(days=1)),))
        assert ids(subjects=("p_bob",)) == set()


def test_an_erase_leaves_no_vector_bytes_in_files_or_in_the_cache(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        kept, gone = os.urandom(64), os.urandom(64)
        driver.put(_row("mem_kept"), vector=kept)
        driver.put(_row("mem_gone"), vector=gone)
        driver.put(
            _row("mem_gone", version=2, valid_from=T0 + timedelta(1)), closes=1, vector=gone[::-1]
        )
        assert len(driver.vectors(_where())) == 2
        encoded = [base64.b64encode(v) for v in (gone, gone[::-1])]
        assert all(e in _everything(driver) for e in encoded)
        result = driver.erase("acme", "app", "p_ada", "mem_gone")
        assert result.versions == (1, 2)
        dump = _everything(driver)
        for needle in (gone, gone[::-1], *encoded, b"mem_gone"):
            assert needle not in dump
        assert base64.b64encode(kept) in dump
        cache = next(iter(driver._caches.values()))
        assert gone not in cache.index.vectors and gone[::-1] not in cache.index.vectors
        assert "mem_gone" not in cache.memories
        assert driver.vectors(_where()) == [VectorEntry("p_ada", "mem_kept", 1, kept)]


def test_tags_survive_a_reopen_and_leave_the_index_with_their_version(tmp_path: Path) -> None:
    key, color = "ab" * 16, "cd" * 16
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        first = _row("mem_a", tags=frozenset({key, color}))
        driver.put(first)
        driver.put(_row("mem_b"))  # no tags: its file has no "tags" field, as files before
        revised = _row("mem_a", version=2, valid_from=T0 + timedelta(1), tags=frozenset({key}))
        driver.put(revised, closes=1)
    files = {path.name: json.loads(path.read_bytes()) for path in store.rglob("mem_*.json")}
    assert [sorted(v.get("tags", ())) for v in files["mem_a.json"]["versions"]] == [
        sorted({key, color}),
        [key],
    ]
    assert "tags" not in files["mem_b.json"]["versions"][0]
    with LocalDriver(store) as reopened:  # a new process: tags from the files, index rebuilt
        assert reopened.versions("acme", "app", ["p_ada"], "mem_a") == [
            replace(first, valid_to=revised.valid_from),
            revised,
        ]
        assert reopened.list(_where(tags=(frozenset({key}),)), limit=5) == [revised]
        assert reopened.list(_where(tags=(frozenset({color}),)), limit=5) == []  # old version's
        at_first = _where(tags=(frozenset({color}),), as_of=T0)
        assert reopened.list(at_first, limit=5) == [replace(first, valid_to=revised.valid_from)]
        untagged = reopened.list(_where(tags_absent=frozenset({key})), limit=5)
        assert [row.memory_id for row in untagged] == ["mem_b"]
        reopened.erase("acme", "app", "p_ada", "mem_a")
        assert reopened.list(_where(tags=(frozenset({key}),)), limit=5) == []
        index = next(iter(reopened._caches.values())).index
        assert index.tagged == {}  # the erased memory's tags left the index with it
        assert key.encode() not in _everything(reopened)


def test_a_file_whose_tags_are_damaged_affects_only_its_memory(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LocalDriver(store) as driver:
        driver.put(_row("mem_a", tags=frozenset({"ab" * 16})))
        driver.put(_row("mem_b", tags=frozenset({"ab" * 16})))
    (path,) = store.rglob("mem_a.json")
    document = json.loads(path.read_bytes())
    document["versions"][0]["tags"] = "ab" * 16  # a string, not a list
    write_private(path, json.dumps(document).encode())
    with LocalDriver(store) as reopened:
        found = reopened.list(_where(tags=(frozenset({"ab" * 16}),)), limit=5)
        assert [row.memory_id for row in found] == ["mem_b"]
        assert reopened.damaged("acme", "app", "p_ada") == ["mem_a"]


VOCABULARY = [f"tok_{i:02d}" for i in range(24)]
TAGS = [f"{i:032x}" for i in range(5)]


def _random_row(rng: random.Random, memory_id: str, at: datetime) -> StoredRow:
    words = rng.choices(VOCABULARY[: rng.choice((6, 24))], k=rng.randint(1, 9))
    terms: dict[str, int] = {}
    for word in words:
        terms[word] = terms.get(word, 0) + 1
    return _row(
        memory_id,
        subject=rng.choice(SUBJECTS),
        kind=rng.choice(("fact", "preference", "event")),
        labels=tuple(rng.sample(("personal", "health", "work"), rng.randint(0, 2))),
        trust=rng.choice(("confirmed", "inferred", "inferred", "untrusted")),
        agent=rng.choice(("bot", "helper")),
        session=rng.choice((None, "s1", "s2")),
        session_only=rng.random() < 0.2,
        pinned=rng.random() < 0.2,
        created_at=at,
        recorded_at=at,
        valid_from=at,
        terms=terms,
        length=len(words) + rng.choice((0, 0, 3)),
        tags=frozenset(rng.sample(TAGS, rng.choice((0, 1, 1, 2)))),
    )


def _random_tags(rng: random.Random) -> frozenset[str]:
    return frozenset(rng.sample(TAGS, rng.choice((0, 1, 1, 2, 3))))


def _random_filter(rng: random.Random, times: list[datetime]) -> Filter:
    return Filter(
        tenant="acme",
        app="app",
        subjects=tuple(rng.sample(SUBJECTS, rng.randint(1, 3))),
        session=rng.choice((None, "s1", "s2")),
        kinds=rng.choice((None, frozenset({"fact"}), frozenset({"preference", "event"}))),
        as_of=rng.choice((None, None, rng.choice(times))),
        pinned=rng.choice((None, None, True, False)),
        written_by=rng.choice((None, None, "bot")),
        any_session=rng.random() < 0.25,
        retention=rng.choice(((), (("health", rng.choice(times)),))),
        tags=rng.choice(((), (), (_random_tags(rng),), (_random_tags(rng), _random_tags(rng)))),
        tags_absent=rng.choice((frozenset(), frozenset(), _random_tags(rng))),
    )


def _random_query(rng: random.Random) -> list[Collection[str]]:
    groups: list[Collection[str]] = []
    for _ in range(rng.randint(1, 4)):
        tokens = rng.sample([*VOCABULARY, "tok_unknown"], rng.randint(1, 2))
        groups.append(set(tokens) if rng.random() < 0.7 else [*tokens, tokens[0]])
    return groups


@pytest.mark.parametrize("seed", range(6))
def test_search_list_and_vectors_equal_the_reference_on_random_stores(
    tmp_path: Path, seed: int
) -> None:
    """search() is bm25_rank over the rows the filter matches, exactly, through writes,
    revisions, pins and erases seen by the writing driver and by a second reader."""
    rng = random.Random(seed)
    model: dict[str, list[StoredRow]] = {}
    vectors: dict[tuple[str, int], bytes] = {}
    times: list[datetime] = []
    clock = T0
    with LocalDriver(tmp_path / "store") as writer, LocalDriver(tmp_path / "store") as reader:
        for step in range(260):
            # Equal times now and then: ties must fall back to the memory id.
            clock += timedelta(seconds=rng.choice((0, 1, 1, 7)))
            times.append(clock)
            live = [m for m in model if model[m][-1].valid_to is None]
            action = rng.random()
            if action < 0.6 or not live:
                memory_id = f"mem_{step:04d}_{rng.randrange(10**6):06d}"
                row = _random_row(rng, memory_id, clock)
                vector = os.urandom(16) if rng.random() < 0.7 else None
                writer.put(row, vector=vector)
                model[memory_id] = [row]
            elif action < 0.75:
                memory_id = rng.choice(live)
                current = model[memory_id][-1]
                fresh = _random_row(rng, memory_id, clock)
                row = replace(
                    fresh,
                    subject=current.subject,
                    version=current.version + 1,
                    created_at=current.created_at,
                )
                vector = os.urandom(16) if rng.random() < 0.7 else None
                writer.put(row, closes=current.version, vector=vector)
                model[memory_id][-1] = replace(current, valid_to=clock)
                model[memory_id].append(row)
            elif action < 0.85:
                memory_id = rng.choice(live)
                current = model[memory_id][-1]
                writer.set_pinned("acme", "app", current.subject, memory_id, not current.pinned)
                model[memory_id][-1] = replace(current, pinned=not current.pinned)
                vector = None
            else:
                memory_id = rng.choice(live)
                writer.erase("acme", "app", model[memory_id][0].subject, memory_id)
                del model[memory_id]
                vector = None
            if vector is not None:
                vectors[memory_id, model[memory_id][-1].version] = vector
            if step % 5:
                continue
            stored = [row for rows in model.values() for row in rows]
            for driver in (writer, reader):
                for _ in range(4):
                    where = _random_filter(rng, times)
                    matching = [row for row in stored if where.matches(row)]
                    query = _random_query(rng)
                    top_k = rng.choice((1, 3, 10, 1000))
                    got = driver.search(where, query, top_k=top_k)
                    want = bm25_rank(matching, query, top_k)
                    assert [(r.memory_id, r.version, s) for r, s in got] == [
                        (r.memory_id, r.version, s) for r, s in want
                    ]
                    assert [r for r, _ in got] == [r for r, _ in want]
                    ordered = sorted(
                        matching, key=lambda r: (r.created_at, r.memory_id), reverse=True
                    )
                    after = None
                    for _page in range(3):
                        page = driver.list(where, limit=4, after=after)
                        expected = [
                            r
                            for r in ordered
                            if after is None or (r.created_at, r.memory_id) < after
                        ][:4]
                        assert page == expected
                        if not page:
                            break
                        after = (page[-1].created_at, page[-1].memory_id)
                    known = {(r.memory_id, r.version) for r in matching[::2]}
                    assert driver.vectors(where, known=known) == sorted(
                        VectorEntry(
                            r.subject,
                            r.memory_id,
                            r.version,
                            None
                            if (r.memory_id, r.version) in known
                            else vectors[r.memory_id, r.version],
                        )
                        for r in matching
                        if (r.memory_id, r.version) in vectors
                    )


def test_naive_datetimes_take_the_row_by_row_path_and_still_match(tmp_path: Path) -> None:
    naive = datetime(2026, 1, 1, 12, 0)
    with LocalDriver(tmp_path / "store") as driver:
        rows = [
            _row(
                f"mem_{i}",
                created_at=naive + timedelta(seconds=i),
                recorded_at=naive,
                valid_from=naive,
                terms={"tok_a": i % 3 + 1, "tok_b": 1},
                length=i % 5 + 2,
            )
            for i in range(12)
        ]
        for row in rows:
            driver.put(row, vector=b"v")
        for where in (_where(), _where(as_of=naive + timedelta(hours=1))):
            query = [{"tok_a"}, {"tok_b", "tok_x"}]
            assert driver.search(where, query, top_k=5) == bm25_rank(rows, query, 5)
            assert (
                driver.list(where, limit=3)
                == sorted(rows, key=lambda r: (r.created_at, r.memory_id), reverse=True)[:3]
            )
            assert len(driver.vectors(where)) == 12


def _counting(driver: LocalDriver, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the memory files ``driver`` reads and the full rescans it makes."""
    counts = {"loads": 0, "rescans": 0}
    load, rescan = driver._load, driver._rescan

    def counted_load(*args: Any) -> Any:
        counts["loads"] += 1
        return load(*args)

    def counted_rescan(*args: Any) -> Any:
        counts["rescans"] += 1
        return rescan(*args)

    monkeypatch.setattr(driver, "_load", counted_load)
    monkeypatch.setattr(driver, "_rescan", counted_rescan)
    return counts


def test_an_erase_elsewhere_costs_a_reader_no_rescan_and_leaves_no_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalDriver(tmp_path / "store") as writer, LocalDriver(tmp_path / "store") as reader:
        for i in range(40):
            writer.put(_row(f"mem_{i:03d}", terms={"tok_a": 1}))
        query = [{"tok_a"}]
        assert len(reader.search(_where(), query, top_k=100)) == 40
        counts = _counting(reader, monkeypatch)
        writer.erase("acme", "app", "p_ada", "mem_007")
        writer.put(_row("mem_new", terms={"tok_a": 1}))
        writer.erase("acme", "app", "p_ada", "mem_011")
        hits = {row.memory_id for row, _ in reader.search(_where(), query, top_k=100)}
        assert hits == {f"mem_{i:03d}" for i in range(40)} - {"mem_007", "mem_011"} | {"mem_new"}
        assert counts == {"loads": 1, "rescans": 0}  # only the new memory was read
        dump = _everything(writer)
        assert b"mem_007" not in dump and b"mem_011" not in dump
        assert b"mem_new" in dump and b"mem_012" in dump  # the log kept the other lines
        writer.erase("acme", "app", "p_ada", "mem_new")  # an id that is after the reader
        assert len(reader.search(_where(), query, top_k=100)) == 38
        assert counts == {"loads": 1, "rescans": 0}


def test_the_erasing_driver_goes_on_without_listing_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        for i in range(20):
            driver.put(_row(f"mem_{i:03d}"))
        assert len(driver.list(_where(), limit=100)) == 20
        listings = []
        names = driver._names
        monkeypatch.setattr(driver, "_names", lambda path: listings.append(path) or names(path))
        counts = _counting(driver, monkeypatch)
        driver.erase("acme", "app", "p_ada", "mem_003")
        assert {r.memory_id for r in driver.list(_where(), limit=100)} == {
            f"mem_{i:03d}" for i in range(20) if i != 3
        }
        driver.put(_row("mem_new"))  # after its own erase, it follows the new log file
        assert len(driver.list(_where(), limit=100)) == 20
        # Reads: the erase's own (its versions), the put's check and the replayed new memory.
        assert listings == [] and counts == {"loads": 3, "rescans": 0}


def test_a_restarted_log_keeps_readers_close_behind_incremental(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_driver, "_COMPACT_LOG_AT", 400)
    store = tmp_path / "store"
    with LocalDriver(store) as writer, LocalDriver(store) as close, LocalDriver(store) as far:
        writer.put(_row("mem_first"))
        assert close.list(_where(), limit=100) and far.list(_where(), limit=100)
        counts = {"close": _counting(close, monkeypatch), "far": _counting(far, monkeypatch)}
        for i in range(60):
            writer.put(_row(f"mem_{i:03d}", created_at=T0 + timedelta(seconds=i + 1)))
            assert len(close.list(_where(), limit=100)) == i + 2
        log = next(store.rglob(".changes")).read_bytes()
        assert log.startswith(b"#mainsdk-memory-changes ") and len(log) <= 400 + 40
        assert counts["close"] == {"loads": 60, "rescans": 0}
        assert len(far.list(_where(), limit=100)) == 61  # far behind the kept tail
        assert counts["far"]["rescans"] == 1


def test_a_torn_log_line_does_not_swallow_the_next_write(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as writer, LocalDriver(tmp_path / "store") as reader:
        writer.put(_row("mem_a"))
        assert len(reader.list(_where(), limit=10)) == 1
        log = next((tmp_path / "store").rglob(".changes"))
        with open(log, "ab") as torn:
            torn.write(b"mem_half_writ")  # a writer died in the middle of its line
        writer.put(_row("mem_b"))
        assert {r.memory_id for r in reader.list(_where(), limit=10)} == {"mem_a", "mem_b"}


def test_a_write_that_never_reached_the_log_is_still_seen(tmp_path: Path) -> None:
    """An older writer renamed its file and died before its log line: readers notice the
    folder changed with nothing logged, and compare file identities."""
    with LocalDriver(tmp_path / "store") as writer, LocalDriver(tmp_path / "store") as reader:
        writer.put(_row("mem_a", pinned=False))
        assert reader.list(_where(pinned=True), limit=10) == []
        time.sleep(0.02)  # a new folder mtime, even on coarse clocks
        folder = next((tmp_path / "store").rglob("mem_a.json")).parent
        row = replace(_row("mem_a"), pinned=True)
        write_private(
            folder / "mem_a.json",
            json.dumps({"versions": [local_driver._row_to_json(row)]}).encode(),
        )
        assert [r.memory_id for r in reader.list(_where(pinned=True), limit=10)] == ["mem_a"]


CHURN = textwrap.dedent(
    """
    import os, random, sys
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta
    from mainsdk_memory import MemoryConflictError
    from mainsdk_memory.drivers import StoredRow
    from mainsdk_memory.drivers.local import LocalDriver
    import mainsdk_memory.drivers.local._driver as local_driver
    local_driver._COMPACT_LOG_AT = 2000  # restart the log now and then, too
    store, name, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    mine = []
    with LocalDriver(store) as driver:
        for step in range(150):
            at += timedelta(seconds=1)
            if not mine or rng.random() < 0.5:
                memory_id = f"mem_{name}_{step:04d}"
                driver.put(StoredRow("acme", "app", "p_ada", memory_id, 1, "fact", (),
                                     "inferred", name, None, False, False, at, at, at, None,
                                     os.urandom(16), {"tok_a": 1}, 1), vector=b"v")
                mine.append(memory_id)
            elif rng.random() < 0.5:
                memory_id = rng.choice(mine)
                current = driver.versions("acme", "app", ["p_ada"], memory_id)[-1]
                driver.put(replace(current, version=current.version + 1, valid_from=at,
                                   recorded_at=at), closes=current.version)
            else:
                memory_id = mine.pop(rng.randrange(len(mine)))
                driver.erase("acme", "app", "p_ada", memory_id)
    """
)


def test_a_reader_following_writers_and_erasers_elsewhere_ends_like_a_fresh_one(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    where = _where(subjects=("p_ada",))
    with LocalDriver(store) as follower:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CHURN, str(store), name, str(seed)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for seed, name in enumerate(("w1", "w2"))
        ]
        while any(proc.poll() is None for proc in procs):
            follower.search(where, [{"tok_a"}], top_k=5)
            follower.list(where, limit=3)
        assert [proc.wait() for proc in procs] == [0, 0], [p.stderr.read() for p in procs]
        with LocalDriver(store) as fresh:
            assert follower.list(where, limit=10_000) == fresh.list(where, limit=10_000)
            assert follower.vectors(where) == fresh.vectors(where)
            query = [{"tok_a"}]
            assert follower.search(where, query, top_k=500) == fresh.search(where, query, top_k=500)
            past = _where(as_of=datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
            assert follower.list(past, limit=10_000) == fresh.list(past, limit=10_000)


def _compensated_sum(items: Any, start: Any = 0) -> Any:
    """``sum`` as Python 3.12 and later do it for floats (compensated), for this test on 3.11."""
    items = list(items)
    if any(isinstance(item, float) for item in items):
        return math.fsum([start, *items])
    return builtins.sum(items, start)


def test_search_equals_the_reference_when_sum_compensates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Array arithmetic sums a row's terms one by one; the reference's ``sum`` rounds
    differently on newer Pythons. The driver must still return the reference's scores."""
    monkeypatch.setattr(bm25, "sum", _compensated_sum, raising=False)
    monkeypatch.setattr(local_driver, "sum", _compensated_sum, raising=False)
    rng = random.Random(11)
    rows = []
    with LocalDriver(tmp_path / "store") as driver:
        for i in range(300):
            row = _random_row(rng, f"mem_{i:04d}", T0 + timedelta(seconds=i // 3))
            row = replace(row, subject="p_ada", trust="inferred", session_only=False)
            driver.put(row)
            rows.append(row)
        for _ in range(200):
            query = [{rng.choice(VOCABULARY)} for _ in range(rng.randint(2, 5))]
            top_k = rng.choice((1, 5, 20))
            got = driver.search(_where(), query, top_k=top_k)
            assert got == protocol.bm25_rank(rows, query, top_k)
