"""A damaged memory affects only itself (issue 13 items 8 and 3, ADR 0046).

One memory is damaged underneath the SDK — its file overwritten with garbage in the local
store, one of its cells set to a value that cannot be decoded in the database — and then:
recall and list return the others, reading it raises a ``StoreError`` that names its id and
holds no content, an audit event says so, the others still read and revise, and a second
process sees the same. PostgreSQL types its columns, so a timestamp there cannot hold text:
its damaged timestamp is ``infinity``, which ``timestamptz`` holds and Python's datetime
cannot (SQLite, which keeps any value in any column, gets text).

An agent's forget request of the damaged memory raises that same ``StoreError`` (asking reads
the memory); the person's own ``forget`` erases it by id (the driver's ``damaged()`` names it),
and a person erase (``privacy.erase``) erases the damaged memories ``damaged()`` names beside
those it lists, so nothing of it stays; a vector recall leaves a damaged hit out.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _db_rows import T0, make_row
from _db_rows import memory_id as nth_id
from _postgres import TestPostgres
from sqlalchemy import text

from mainsdk_memory import (
    DamagedMemoryError,
    Memory,
    MemoryNotFound,
    MemoryRecord,
    StoreError,
    tenant,
)
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import Filter, StoredRow, bm25_rank
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.embeddings import HashingEmbedder

TEXTS = (
    "Ada keeps bees behind the orchard.",
    "Ada's bees make heather honey.",
    "Ada sells the honey at the market.",
)
CONTENT_WORDS = ("ada", "bees", "orchard", "heather", "honey", "market")
GARBAGE = b"\x00\xff{not json at all"

#: A value each column cannot be decoded from, per dialect (PostgreSQL checks types, so its
#: timestamps get ``infinity``: stored by ``timestamptz``, refused by Python's datetime).
BAD_CELLS: dict[str, dict[str, str]] = {
    "sqlite": {
        "created_at": "'garbage'",
        "recorded_at": "'garbage'",
        "valid_from": "'garbage'",
        "labels": "'not json'",
    },
    "postgresql": {
        "created_at": "'infinity'",
        "recorded_at": "'infinity'",
        "valid_from": "'-infinity'",
        "labels": "'not json'",
    },
}


def _is_local(url: str) -> bool:
    return url.startswith("local:")


def _replace_file(path: Path, content: bytes) -> None:
    """Replace ``path`` with ``content`` the way any tool that writes files safely does (a new
    file renamed over it); a reader already holding the folder notices."""
    time.sleep(0.02)  # a new folder mtime, even on coarse clocks
    temp = path.with_name(f".{path.name}.damage")
    temp.write_bytes(content)
    os.replace(temp, path)


def _memory_file(store_url: str, memory_id: str) -> Path:
    return next(Path(store_url.removeprefix("local:")).rglob(f"{memory_id}.json"))


def _db(memory: Memory) -> DbDriver:
    driver = memory.driver
    assert isinstance(driver, DbDriver)
    return driver


def _set_cell(driver: DbDriver, memory_id: str, cell: str) -> None:
    """Set one cell of every version of ``memory_id`` to a value it cannot be decoded from,
    as someone who can write the database would (the URL's own user: past row security)."""
    postgresql = driver.dialect == "postgresql"
    table = "mainsdk_memory.memory_versions" if postgresql else "memory_versions"
    value = BAD_CELLS[driver.dialect][cell]
    with driver.engine.begin() as connection:
        changed = connection.execute(
            text(f"UPDATE {table} SET {cell} = {value} WHERE memory_id = :id"),  # noqa: S608
            {"id": memory_id},
        )
        assert changed.rowcount >= 1


def _damage(memory: Memory, store_url: str, memory_id: str, cell: str = "created_at") -> None:
    """Damage one stored memory: its file overwritten with garbage, or one of its cells."""
    if _is_local(store_url):
        _replace_file(_memory_file(store_url, memory_id), GARBAGE)
    else:
        _set_cell(_db(memory), memory_id, cell)


def _pseudonym(memory: Memory, person: str) -> str:
    return caller_of(memory.person(person)).pseudonym()


def _dump(memory: Memory) -> bytes:
    return b"\n".join(f"{where}\x1f".encode() + blob for where, blob in memory.driver.raw_dump())


def _assert_names_only(error: StoreError, memory_id: str) -> None:
    assert isinstance(error, DamagedMemoryError) and error.memory_id == memory_id  # typed
    message = str(error)
    assert memory_id in message
    rest = message.replace(memory_id, "").lower()  # (an id could spell a word by chance)
    assert not any(word in rest for word in CONTENT_WORDS), message


def _assert_audited_as_damaged(sink: MemorySink, operation: str, memory_id: str) -> None:
    event = sink.events[-1]
    assert (event.operation, event.outcome, event.code, event.memory_ids) == (
        operation,
        "error",
        DamagedMemoryError.code,
        (memory_id,),
    )


@pytest.fixture
def three(
    store_url: str, keys_path: Path, sink: MemorySink
) -> Iterator[tuple[Memory, list[MemoryRecord]]]:
    """A Memory (audited to ``sink``) holding three memories about ada, in tenant acme."""
    with (
        Memory.open(store_url, keys=keys_path, app="app", audit=sink) as memory,
        tenant.use("acme"),
    ):
        ada = memory.acting_for("ada", agent="bot")
        # Stored as they are: formation would read neighbours between the writes, and the
        # local driver's cache does not notice a file replaced behind a logged write (see
        # the closing note of issue 15); these tests are about damage, not formation.
        yield memory, [ada.remember(said, formation=False) for said in TEXTS]


def _check_only_it_is_damaged(
    memory: Memory, sink: MemorySink, kept: list[MemoryRecord], broken: MemoryRecord
) -> None:
    ada = memory.acting_for("ada", agent="bot")
    others = {record.id for record in kept}
    assert {hit.record.id for hit in ada.recall("honey bees", top_k=10)} == others
    assert {record.id for record in ada.list().items} == others
    assert {record.id for record in memory.person("ada").list().items} == others
    first = ada.list(limit=1)  # the pages are full and end where they should
    assert first.next_cursor is not None and len(first.items) == 1
    second = ada.list(limit=1, cursor=first.next_cursor)
    assert {first.items[0].id, second.items[0].id} == others and second.next_cursor is None

    with pytest.raises(StoreError) as raised:
        ada.get(broken.id)
    _assert_names_only(raised.value, broken.id)
    _assert_audited_as_damaged(sink, "get", broken.id)
    with pytest.raises(StoreError, match=broken.id):
        ada.history(broken.id)
    with pytest.raises(StoreError, match=broken.id):
        ada.revise(broken.id, "Ada keeps goats now.")
    assert (sink.events[-1].operation, sink.events[-1].outcome) == ("revise", "error")

    for record in kept:
        assert ada.get(record.id).text == record.text
    revised = ada.revise(kept[-1].id, f"{kept[-1].text} On Saturdays.")
    assert ada.get(kept[-1].id) == revised and revised.version == kept[-1].version + 1
    kept[-1] = revised


def test_a_damaged_memory_leaves_the_others_readable(
    three: tuple[Memory, list[MemoryRecord]],
    store_url: str,
    keys_path: Path,
    sink: MemorySink,
) -> None:
    memory, (first, broken, last) = three
    _damage(memory, store_url, broken.id)
    kept = [first, last]
    _check_only_it_is_damaged(memory, sink, kept, broken)  # the Memory that wrote them
    fresh_sink = MemorySink()
    with Memory.open(store_url, keys=keys_path, app="app", audit=fresh_sink) as fresh:
        _check_only_it_is_damaged(fresh, fresh_sink, kept, broken)  # one that reads afresh


def test_the_person_forgets_a_damaged_memory_and_nothing_of_it_stays(
    three: tuple[Memory, list[MemoryRecord]], store_url: str, sink: MemorySink
) -> None:
    memory, (first, broken, last) = three
    _damage(memory, store_url, broken.id)
    ada = memory.acting_for("ada", agent="bot")
    # An agent only asks, and asking reads the memory: the typed error, audited.
    with pytest.raises(StoreError) as raised:
        ada.forget(broken.id)
    _assert_names_only(raised.value, broken.id)
    _assert_audited_as_damaged(sink, "forget-request", broken.id)
    # The person forgets it at once, by id: a receipt, and no byte of it left.
    receipt = memory.person("ada").forget(broken.id)
    assert receipt.claims["memory_id"] == broken.id and receipt.claims["about"] == "ada"
    assert (sink.events[-1].operation, sink.events[-1].outcome) == ("forget", "ok")
    subject = _pseudonym(memory, "ada")
    driver: Any = memory.driver
    assert driver.damaged("acme", "app", subject) == []
    assert broken.id.encode() not in _dump(memory)
    with pytest.raises(MemoryNotFound):
        ada.get(broken.id)
    assert {record.id for record in ada.list().items} == {first.id, last.id}
    memory.person("ada").forget(first.id)  # and the person forgets the others as ever
    assert [record.id for record in ada.list().items] == [last.id]


def test_a_person_erase_goes_through_the_others(
    three: tuple[Memory, list[MemoryRecord]], store_url: str
) -> None:
    memory, (first, broken, last) = three
    _damage(memory, store_url, broken.id)
    receipt = memory.privacy.erase("ada")
    assert {first.id, last.id} <= set(receipt.claims["memory_ids"])
    assert first.id.encode() not in _dump(memory) and last.id.encode() not in _dump(memory)


def test_a_person_erase_leaves_nothing_of_a_damaged_memory(
    three: tuple[Memory, list[MemoryRecord]], store_url: str
) -> None:
    memory, (_first, broken, _last) = three
    _damage(memory, store_url, broken.id)
    receipt = memory.privacy.erase("ada")
    assert broken.id.encode() not in _dump(memory)
    assert broken.id in receipt.claims["memory_ids"]  # the receipt says so


def test_a_retention_sweep_erases_a_damaged_memory_with_the_others(
    store_url: str, keys_path: Path
) -> None:
    now = [T0]
    with (
        Memory.open(
            store_url,
            keys=keys_path,
            app="app",
            clock=lambda: now[0],
            retention={"personal": timedelta(days=30)},
        ) as memory,
        tenant.use("acme"),
    ):
        ada = memory.acting_for("ada", agent="bot")
        first, broken, last = (ada.remember(said, formation=False) for said in TEXTS)
        _damage(memory, store_url, broken.id, cell="recorded_at")
        now[0] += timedelta(days=31)
        erased = {receipt.memory_id for receipt in memory.enforce_retention()}
        # The key store's anchors hold each memory's labels and creation time (ADR 0047):
        # the sweep needs nothing of the damaged row to know it expired.
        assert erased == {first.id, broken.id, last.id}
        driver: Any = memory.driver
        assert driver.damaged("acme", "app", _pseudonym(memory, "ada")) == []


def test_a_vector_recall_leaves_a_damaged_memory_out(
    store_url: str, keys_path: Path
) -> None:
    """The db driver's vectors() reads no row, so it returns a damaged row's embedding; the
    core leaves the hit out when its row cannot be decoded, as one erased meanwhile."""
    with (
        Memory.open(store_url, keys=keys_path, app="app", embedder=HashingEmbedder()) as memory,
        tenant.use("acme"),
    ):
        ada = memory.acting_for("ada", agent="bot")
        first, broken, last = (ada.remember(said, formation=False) for said in TEXTS)
        _damage(memory, store_url, broken.id)
        for mode in ("vector", "hybrid"):
            found = {hit.record.id for hit in ada.recall("honey bees", top_k=10, mode=mode)}
            assert found == {first.id, last.id}, mode


SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    from mainsdk_memory import Memory, StoreError, tenant
    url, keys, broken = sys.argv[1:4]
    with Memory.open(url, keys=keys, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        seen = {
            "listed": sorted(record.id for record in ada.list().items),
            "recalled": sorted(hit.record.id for hit in ada.recall("honey bees", top_k=10)),
        }
        try:
            ada.get(broken)
            seen["get"] = "read"
        except StoreError as exc:
            seen["get"] = "names it" if broken in str(exc) else "does not name it"
    print(json.dumps(seen))
    """
)


def test_a_second_process_sees_the_same(
    three: tuple[Memory, list[MemoryRecord]], store_url: str, keys_path: Path
) -> None:
    memory, (first, broken, last) = three
    _damage(memory, store_url, broken.id)
    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, store_url, str(keys_path), broken.id],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "listed": sorted([first.id, last.id]),
        "recalled": sorted([first.id, last.id]),
        "get": "names it",
    }


# -- the local store: every way a file can be damaged --------------------------------------


def _versions_of(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_bytes())
    return document


def _wrong(path: Path, damage: str) -> bytes:
    """The file at ``path`` damaged one way."""
    original = path.read_bytes()
    document = _versions_of(path)
    version = document["versions"][0]
    if damage == "not json":
        return GARBAGE
    if damage == "torn":
        return original[: len(original) // 2]
    if damage == "not an object":
        return b"[1, 2, 3]"
    if damage == "versions not a list":
        document["versions"] = 5
    elif damage == "no versions":
        document["versions"] = []
    elif damage == "bad timestamp":
        version["created_at"] = "yesterday"
    elif damage == "timestamp of the wrong type":
        version["recorded_at"] = 20260301
    elif damage == "another memory's id":
        version["memory_id"] = "mem_" + "a" * 26
    elif damage == "labels not strings":
        version["labels"] = [["child"]]
    elif damage == "terms not counts":
        version["terms"] = {"t": "many"}
    elif damage == "sealed not base64":
        version["sealed"] = "***"
    elif damage == "missing field":
        del version["trust"]
    elif damage == "kind not a string":
        version["kind"] = {"fact": True}
    return json.dumps(document).encode()


DAMAGES = (
    "not json",
    "torn",
    "not an object",
    "versions not a list",
    "no versions",
    "bad timestamp",
    "timestamp of the wrong type",
    "another memory's id",
    "labels not strings",
    "terms not counts",
    "sealed not base64",
    "missing field",
    "kind not a string",
)


@pytest.mark.parametrize("damage", DAMAGES)
def test_any_damaged_local_file_affects_only_its_memory(
    tmp_path: Path, keys_path: Path, damage: str
) -> None:
    store_url = f"local:{tmp_path / 'store'}"
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first, broken, last = (ada.remember(said, formation=False) for said in TEXTS)
        path = _memory_file(store_url, broken.id)
        _replace_file(path, _wrong(path, damage))
        others = {first.id, last.id}
        assert {hit.record.id for hit in ada.recall("honey bees", top_k=10)} == others
        assert {record.id for record in ada.list().items} == others
        with pytest.raises(StoreError) as raised:
            ada.get(broken.id)
        _assert_names_only(raised.value, broken.id)


def test_a_local_file_damaged_in_place_is_seen_by_the_next_reader_and_a_restore_heals_it(
    tmp_path: Path, keys_path: Path
) -> None:
    store_url = f"local:{tmp_path / 'store'}"
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first, broken, last = (ada.remember(said, formation=False) for said in TEXTS)
        path = _memory_file(store_url, broken.id)
        backup = path.read_bytes()
        path.write_bytes(GARBAGE)  # the same file changed in place (a disk, a bad edit)
        with Memory.open(store_url, keys=keys_path, app="app") as fresh:
            reader = fresh.acting_for("ada", agent="bot")
            assert {record.id for record in reader.list().items} == {first.id, last.id}
            with pytest.raises(StoreError, match=broken.id):
                reader.get(broken.id)
            _replace_file(path, backup)  # restored from a backup: a new file, read again
            assert reader.get(broken.id) == broken
            assert len(reader.list().items) == 3
        assert ada.get(broken.id) == broken


def _local_row(memory_id: str, **changes: Any) -> StoredRow:
    return make_row(memory_id=memory_id, **changes)


def test_the_local_driver_refuses_to_write_over_a_damaged_file(tmp_path: Path) -> None:
    with LocalDriver(tmp_path / "store") as driver:
        for n in range(3):
            driver.put(_local_row(nth_id(n)))
        broken = nth_id(1)
        _replace_file(next((tmp_path / "store").rglob(f"{broken}.json")), GARBAGE)
        where = Filter(tenant="acme", app="app", subjects=("p_ada",))
        assert {row.memory_id for row in driver.list(where, limit=10)} == {nth_id(0), nth_id(2)}
        assert {row.memory_id for row in driver.rows("acme", "app")} == {nth_id(0), nth_id(2)}
        with pytest.raises(StoreError, match=broken):
            driver.versions("acme", "app", ["p_ada"], broken)
        revision = _local_row(broken, version=2, valid_from=T0, recorded_at=T0)
        for write in (
            lambda: driver.put(_local_row(broken)),
            lambda: driver.put(revision, closes=1),
            lambda: driver.set_pinned("acme", "app", "p_ada", broken, True),
        ):
            with pytest.raises(StoreError, match=broken):
                write()
        assert next((tmp_path / "store").rglob(f"{broken}.json")).read_bytes() == GARBAGE
        assert driver.damaged("acme", "app", "p_ada") == [broken]
        assert driver.erase("acme", "app", "p_ada", broken).versions == ()
        assert driver.damaged("acme", "app", "p_ada") == []
        assert not list((tmp_path / "store").rglob(f"{broken}.json"))


# -- the database: every cell that cannot be decoded -----------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh db store on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'memory.db'}"
        return
    postgres: TestPostgres = request.getfixturevalue("postgres")
    url = postgres.new_database()
    try:
        yield url
    finally:
        postgres.drop(url)


@pytest.mark.parametrize("cell", ["created_at", "recorded_at", "valid_from", "labels"])
def test_a_damaged_cell_of_a_row_affects_only_its_memory(
    db_url: str, keys_path: Path, cell: str
) -> None:
    with Memory.open(db_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first, broken, last = (ada.remember(said, formation=False) for said in TEXTS)
        _set_cell(_db(memory), broken.id, cell)
        others = {first.id, last.id}
        assert {hit.record.id for hit in ada.recall("honey bees", top_k=10)} == others
        assert {hit.record.id for hit in ada.recall("honey bees", top_k=1)} <= others
        assert {record.id for record in ada.list().items} == others
        with pytest.raises(StoreError) as raised:
            ada.get(broken.id)
        _assert_names_only(raised.value, broken.id)
        assert _db(memory).damaged("acme", "app", _pseudonym(memory, "ada")) == [broken.id]
        assert {row.memory_id for row in memory.driver.rows("acme", "app")} == others


@pytest.mark.parametrize("groups", [3, 70])  # the SQL ranking, and the plain path (> 64)
def test_search_and_list_fill_up_with_healthy_rows_around_many_damaged_ones(
    db_url: str, groups: int
) -> None:
    vocabulary = [f"t_{i:02d}" for i in range(groups)]
    rows = []
    for n in range(40):
        terms = {token: 1 + (n * 7 + i) % 3 for i, token in enumerate(vocabulary) if (n + i) % 4}
        when = T0 + timedelta(hours=n)  # list order is n
        rows.append(
            make_row(
                memory_id=nth_id(n),
                created_at=when,
                recorded_at=when,
                valid_from=when,
                terms=terms,
                length=sum(terms.values()),
            )
        )
    query = [{token} for token in vocabulary]
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    with DbDriver(db_url) as driver:
        for row in rows:
            driver.put(row)
        ranked = bm25_rank(rows, query, top_k=40)
        # The best-ranked and the newest rows are damaged: tie keys, list keys, loading.
        broken = {row.memory_id for row, _ in ranked[:6:2]} | {nth_id(39), nth_id(37)}
        for n, memory_id in enumerate(sorted(broken)):
            _set_cell(driver, memory_id, ("recorded_at", "created_at", "labels")[n % 3])
        # A damaged row still counts in the corpus (it is stored): the others keep their scores.
        expected = [(row, score) for row, score in ranked if row.memory_id not in broken]
        assert driver.search(where, query, top_k=10) == expected[:10]
        newest = sorted(
            (row for row in rows if row.memory_id not in broken),
            key=lambda row: row.created_at,
            reverse=True,
        )
        assert driver.list(where, limit=5) == newest[:5]
        after = (newest[4].created_at, newest[4].memory_id)
        assert driver.list(where, limit=5, after=after) == newest[5:10]
        assert sorted(driver.damaged("acme", "app", "p_ada")) == sorted(broken)
        for memory_id in broken:
            with pytest.raises(StoreError, match=memory_id):
                driver.versions("acme", "app", ["p_ada"], memory_id)
        unchanged = dataclasses.replace(rows[0])
        assert driver.versions("acme", "app", ["p_ada"], unchanged.memory_id) == [unchanged]


def _damage_postings(driver: DbDriver, memory_id: str) -> None:
    """Set the term counts of the memory's index entries to text (SQLite keeps anything)."""
    with driver.engine.begin() as connection:
        changed = connection.execute(
            text(
                "UPDATE memory_postings SET tf = 'x' WHERE doc IN "
                "(SELECT doc FROM memory_versions WHERE memory_id = :id)"
            ),
            {"id": memory_id},
        )
        assert changed.rowcount >= 1


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_damaged_index_entries_are_named_and_the_person_erase_removes_them(
    three: tuple[Memory, list[MemoryRecord]],
) -> None:
    memory, (first, broken, last) = three
    _damage_postings(_db(memory), broken.id)
    subject = _pseudonym(memory, "ada")
    driver: Any = memory.driver
    assert driver.damaged("acme", "app", subject) == [broken.id]
    receipt = memory.privacy.erase("ada")
    assert set(receipt.claims["memory_ids"]) == {first.id, broken.id, last.id}
    assert broken.id.encode() not in _dump(memory)
