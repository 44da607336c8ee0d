"""A stored time without its offset is damage, whichever driver returned it (ADR 0046).

A hand-edited local file, a cell edited in SQLite or a third-party driver that drops the
offset can hand the core a row whose ``created_at``, ``recorded_at``, ``valid_from`` or
``valid_to`` is naive. Before, the core raised an untyped ``TypeError`` wherever it compared
times (list order, cursors, time travel, retention), so one such row broke every read of
the person and their erase. Now (``GuardedStore``, the core's check of every driver read)
that memory alone is damaged: reading it raises :class:`DamagedMemoryError` naming it, and
audited as such; list and recall return the others; a retention sweep erases the others;
the person's forget and a person erase leave nothing of it.

SQLite keeps times as integers, so an ISO text there is already damage to the db driver;
the local driver reads a naive time as it is (its own test of naive rows), and the
third-party driver here returns naive rows in the order the local driver chose, comparing
nothing itself.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import os
import time
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _db_rows import T0
from sqlalchemy import text

from mainsdk_memory import DamagedMemoryError, Memory, MemoryRecord, tenant
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.keys import KeyStore

KEPT = "Ada keeps bees behind the orchard."
BROKEN = "Ada's bees make heather honey; the bees love the heather."
QUERY = "heather honey bees"  # the damaged memory ranks first, the kept one second
FIELDS = ("created_at", "recorded_at", "valid_from", "valid_to")
KINDS = ("local", "sqlite", "third-party")


class NaiveTimes:
    """A third-party driver over the local one that hands back the times of the memories
    in ``ids`` without their offset (one field), in the local driver's order."""

    name = "naive-times"

    def __init__(self, inner: LocalDriver, field: str) -> None:
        self.inner = inner
        self.field = field
        self.ids: set[str] = set()
        self.capabilities = inner.capabilities

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _naive(self, row: StoredRow) -> StoredRow:
        value = getattr(row, self.field)
        if row.memory_id not in self.ids or value is None:
            return row
        return dataclasses.replace(row, **{self.field: value.replace(tzinfo=None)})

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        return [self._naive(row) for row in self.inner.versions(tenant, app, subjects, memory_id)]

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        return [self._naive(row) for row in self.inner.list(where, limit=limit, after=after)]

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        found = self.inner.search(where, query, top_k=top_k)
        return [(self._naive(row), score) for row, score in found]


@dataclasses.dataclass
class Store:
    """One open Memory (audited to ``sink``, on a clock the test moves) and its raw side."""

    kind: str
    memory: Memory
    sink: MemorySink
    now: list[datetime]
    path: Path

    def tick(self, by: timedelta = timedelta(minutes=1)) -> datetime:
        self.now[0] += by
        return self.now[0]

    def make_naive(self, memory_id: str, field: str) -> None:
        """Cut the offset off ``field`` of every version of ``memory_id`` that has it, as
        someone editing the store underneath the SDK would."""
        if self.kind == "third-party":
            driver = self.memory.driver
            assert isinstance(driver, NaiveTimes)
            driver.ids.add(memory_id)
        elif self.kind == "local":
            path = next(self.path.rglob(f"{memory_id}.json"))
            document = json.loads(path.read_bytes())
            for version in document["versions"]:
                if version[field] is not None:
                    naive = datetime.fromisoformat(version[field]).replace(tzinfo=None)
                    version[field] = naive.isoformat()
                    assert "+" not in version[field]
            time.sleep(0.02)  # a new folder mtime, so a reader holding the folder notices
            temp = path.with_name(f".{path.name}.edit")
            temp.write_text(json.dumps(document))
            os.replace(temp, path)
        else:
            driver = self.memory.driver
            assert isinstance(driver, DbDriver)
            with driver.engine.begin() as connection:
                changed = connection.execute(
                    text(
                        f"UPDATE memory_versions SET {field} = '2026-03-01T12:00:00' "  # noqa: S608
                        f"WHERE memory_id = :id AND {field} IS NOT NULL"
                    ),
                    {"id": memory_id},
                )
                assert changed.rowcount >= 1

    def dump(self) -> bytes:
        return b"\n".join(
            f"{where}\x1f".encode() + blob for where, blob in self.memory.driver.raw_dump()
        )


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, keys_path: Path) -> Iterator[Store]:
    kind: str = request.param
    now = [T0]
    sink = MemorySink()
    options: dict[str, Any] = {
        "app": "app",
        "audit": sink,
        "clock": lambda: now[0],
        "retention": {"personal": timedelta(days=30)},
    }
    if kind == "sqlite":
        path = tmp_path / "memory.db"
        memory = Memory.open(f"sqlite:///{path}", keys=keys_path, **options)
    else:
        path = tmp_path / "store"
        local = LocalDriver(path)
        driver: Any = local if kind == "local" else NaiveTimes(local, "created_at")
        memory = Memory(driver, KeyStore.open(keys_path), **options)
    with memory, tenant.use("acme"):
        yield Store(kind, memory, sink, now, path)


def _write(store: Store, field: str) -> tuple[MemoryRecord, MemoryRecord, datetime]:
    """The kept and the broken memory about ada, and a time when the version of the broken
    one that gets damaged is the one valid (a closed version, for ``valid_to``)."""
    ada = store.memory.acting_for("ada", agent="bot")
    kept = ada.remember(KEPT)
    store.tick()
    broken = ada.remember(BROKEN)
    when = store.tick()
    if field == "valid_to":  # only a closed version has one
        store.tick()
        broken = ada.revise(broken.id, f"{BROKEN} And the honey.")
    store.tick()
    return kept, broken, when


def _use_field(store: Store, field: str) -> None:
    driver = store.memory.driver
    if isinstance(driver, NaiveTimes):
        driver.field = field


@pytest.mark.parametrize("field", FIELDS)
def test_a_naive_time_damages_only_its_memory(store: Store, field: str) -> None:
    _use_field(store, field)
    kept, broken, when = _write(store, field)
    store.make_naive(broken.id, field)
    memory, sink = store.memory, store.sink
    ada = memory.acting_for("ada", agent="bot")

    # Reading it: the typed error naming it, and an audit event that says so.
    with pytest.raises(DamagedMemoryError) as raised:
        ada.get(broken.id)
    assert raised.value.memory_id == broken.id and broken.id in str(raised.value)
    event = sink.events[-1]
    assert (event.operation, event.outcome, event.code, event.memory_ids) == (
        "get",
        "error",
        DamagedMemoryError.code,
        (broken.id,),
    )
    with pytest.raises(DamagedMemoryError):
        ada.history(broken.id)
    with pytest.raises(DamagedMemoryError):
        ada.revise(broken.id, "Ada keeps goats now.")

    # The others: read, listed, recalled, a page filled, time travel.
    assert ada.get(kept.id).text == KEPT
    assert [hit.record.id for hit in ada.recall(QUERY, top_k=10, as_of=when)] == [kept.id]
    if field != "valid_to":  # (a damaged closed version leaves the current one readable)
        assert [record.id for record in ada.list().items] == [kept.id]
        assert [record.id for record in memory.person("ada").list().items] == [kept.id]
        page = ada.list(limit=1)  # the newest row is the damaged one: the page is filled
        assert [record.id for record in page.items] == [kept.id] and page.next_cursor is None
        assert [hit.record.id for hit in ada.recall(QUERY, top_k=1)] == [kept.id]
        assert [hit.record.id for hit in ada.recall(QUERY, top_k=10)] == [kept.id]
    assert ada.revise(kept.id, f"{KEPT} On Saturdays.").version == 2

    # A person erase leaves nothing of either, and its receipt names both.
    receipt = memory.privacy.erase("ada")
    assert {kept.id, broken.id} <= set(receipt.claims["memory_ids"])
    dump = store.dump()
    assert kept.id.encode() not in dump and broken.id.encode() not in dump
    assert memory.person("ada").list().items == []


@pytest.mark.parametrize("field", FIELDS)
def test_the_person_forgets_a_memory_with_a_naive_time(store: Store, field: str) -> None:
    _use_field(store, field)
    kept, broken, _ = _write(store, field)
    store.make_naive(broken.id, field)
    receipt = store.memory.person("ada").forget(broken.id)
    assert receipt.claims["memory_id"] == broken.id
    assert broken.id.encode() not in store.dump()
    ada = store.memory.acting_for("ada", agent="bot")
    assert [record.id for record in ada.list().items] == [kept.id]


@pytest.mark.parametrize("field", ["created_at", "recorded_at", "valid_from"])
def test_a_retention_sweep_erases_the_others(store: Store, field: str) -> None:
    _use_field(store, field)
    kept, broken, _ = _write(store, field)
    store.make_naive(broken.id, field)
    store.tick(timedelta(days=31))
    erased = {receipt.memory_id for receipt in store.memory.enforce_retention()}
    # The anchors know both expired (ADR 0047): the damaged one goes with the other.
    assert erased == {kept.id, broken.id}
    assert broken.id.encode() not in store.dump()
