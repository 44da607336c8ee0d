"""One transaction per call on the db drivers; control records kept, with invalidation (ADR 0096).

On SQLite and PostgreSQL: a ``remember`` without formation is one transaction (counted on the
driver's engine); a unit of work that fails leaves nothing; a grant, revoke or kill switch
written by another ``Memory`` on the same store, or by another process, is seen on the very
next call; a control record written behind the core's back is still caught; the generation
record holds random bytes only.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _db_rows import make_row
from _postgres import postgres_store, release_store
from sqlalchemy import event

from mainsdk_memory import (
    AgentDisabledError,
    IntegrityError,
    Memory,
    MemoryConflictError,
    StoreError,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory.drivers.db._driver import CONTROL_GENERATION, DbDriver
from mainsdk_memory.keys import KeyStore


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = (
        f"sqlite:///{tmp_path / 'memory.db'}" if request.param == "sqlite" else postgres_store()
    )
    yield url
    release_store(url)


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    path = tmp_path / "keys"
    KeyStore.create(path)
    return path


class _Count:
    """Transactions begun and statements run on an engine while it listens."""

    def __init__(self, driver: DbDriver) -> None:
        self.begins = 0
        self.statements: list[str] = []
        engine = driver.engine
        event.listen(engine, "begin", self._begin)
        event.listen(engine, "before_cursor_execute", self._statement)

    def _begin(self, _connection: object) -> None:
        self.begins += 1

    def _statement(self, *args: object) -> None:
        self.statements.append(str(args[2]))

    def clear(self) -> None:
        self.begins = 0
        self.statements.clear()


def _driver(memory: Memory) -> DbDriver:
    driver = services_of(memory).driver
    assert isinstance(driver, DbDriver)
    return driver


def test_remember_without_formation_is_one_transaction(db_url: str, keys: Path) -> None:
    with Memory.open(db_url, keys=keys, app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("Ada's first order shipped.", formation=False)  # the records are read
        count = _Count(_driver(memory))
        for n in range(3):
            count.clear()
            bot.remember(f"Ada's order {n} shipped to dock {n}.", formation=False)
            assert count.begins == 1
            if db_url.startswith("postgresql"):
                # The role and the tenant of row-level security, set once, first.
                assert "set_config" in count.statements[0]
                assert sum("set_config" in one for one in count.statements) == 1
        assert len(bot.list(limit=10).items) == 4


def test_a_failed_unit_of_work_leaves_nothing(db_url: str, keys: Path) -> None:
    with Memory.open(db_url, keys=keys, app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        store = services_of(memory).store
        def fail_after_writes() -> None:
            with store.unit():
                bot.remember("Ada's locker code is 4711.", formation=False)  # the outer unit's
                memory.driver.control_put("acme", "app", "scratch/one", b"x")
                raise RuntimeError("after the writes")

        with pytest.raises(RuntimeError, match="after the writes"):
            fail_after_writes()
        assert bot.list(limit=10).items == []
        assert memory.driver.control_get("acme", "app", "scratch/one") is None
        scope = services_of(memory).anchor_scope("acme")
        assert services_of(memory).keys.anchors.memories(scope) == []  # the anchor went too
        bot.remember("Ada's locker code is 4712.", formation=False)
        assert [r.text for r in bot.list(limit=10).items] == ["Ada's locker code is 4712."]


def test_a_failed_step_inside_a_unit_rolls_back_the_steps_before(db_url: str) -> None:
    driver = DbDriver(db_url)
    try:
        row = make_row()
        def put_twice() -> None:
            with driver.unit():
                driver.put(row)
                with contextlib.suppress(MemoryConflictError):
                    driver.put(row)  # the same version twice, its error caught
                # The unit still ends rolled back, and says so.

        with pytest.raises(StoreError, match="rolled back"):
            put_twice()
        assert driver.rows("acme", "app") == []
        with driver.unit(), driver.unit():  # a unit inside a unit is the outer one
            driver.put(row)
        assert [r.memory_id for r in driver.rows("acme", "app")] == [row.memory_id]
    finally:
        driver.close()


def test_a_kill_switch_from_another_memory_stops_the_next_call(db_url: str, keys: Path) -> None:
    with (
        Memory.open(db_url, keys=keys, app="app") as first,
        Memory.open(db_url, keys=keys, app="app") as second,
        tenant.use("acme"),
    ):
        bot = first.acting_for("ada", agent="bot")
        bot.remember("Ada's parcel is at the depot.", formation=False)
        bot.remember("Ada's parcel left the depot.", formation=False)  # kept by now
        second.kill("bot")
        with pytest.raises(AgentDisabledError):
            bot.remember("Ada said to send everything elsewhere.", formation=False)
        with pytest.raises(AgentDisabledError):
            bot.recall("parcel")
        second.revive("bot")
        bot.remember("Ada's parcel arrived.", formation=False)


def test_a_grant_and_its_revoke_from_another_memory_hold_on_the_next_call(
    db_url: str, keys: Path
) -> None:
    with (
        Memory.open(db_url, keys=keys, app="app") as first,
        Memory.open(db_url, keys=keys, app="app") as second,
        tenant.use("acme"),
    ):
        first.acting_for("ada", agent="writer").remember("Ada's son is called Tom.")
        reader = first.acting_for("ada", agent="reader")
        assert reader.recall("son") == []
        second.grant("reader", read="all")
        assert [hit.record.text for hit in reader.recall("son")] == ["Ada's son is called Tom."]
        second.revoke("reader")
        assert reader.recall("son") == []


def test_a_kill_switch_from_another_process_stops_the_next_call(
    db_url: str, keys: Path
) -> None:
    with Memory.open(db_url, keys=keys, app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("Ada's parcel is at the depot.", formation=False)
        bot.remember("Ada's parcel left the depot.", formation=False)
        script = textwrap.dedent(
            """
            import sys
            from mainsdk_memory import Memory, tenant
            with Memory.open(sys.argv[1], keys=sys.argv[2], app="app") as other:
                with tenant.use("acme"):
                    other.kill("bot")
            """
        )
        subprocess.run([sys.executable, "-c", script, db_url, str(keys)], check=True,
                       timeout=120)
        with pytest.raises(AgentDisabledError):
            bot.remember("Ada said to send everything elsewhere.", formation=False)


def test_a_record_written_behind_the_cores_back_is_still_caught(
    db_url: str, keys: Path
) -> None:
    with Memory.open(db_url, keys=keys, app="app") as memory, tenant.use("acme"):
        memory.grant("reader", read="all")
        reader = memory.acting_for("ada", agent="reader")
        reader.recall("anything")
        reader.recall("anything")  # the grant is kept by now
        old = memory.driver.control_get("acme", "app", "agent/reader/grant")
        memory.revoke("reader")
        memory.driver.control_put("acme", "app", "agent/reader/grant", old)  # replayed
        with pytest.raises(IntegrityError):
            reader.recall("anything")


def test_the_generation_record_holds_random_bytes_only(db_url: str, keys: Path) -> None:
    with Memory.open(db_url, keys=keys, app="app") as memory, tenant.use("acme"):
        driver = _driver(memory)
        assert driver.control_generation("acme", "app") is None
        memory.kill("agent-with-a-telling-name")
        first = driver.control_generation("acme", "app")
        memory.revive("agent-with-a-telling-name")
        second = driver.control_generation("acme", "app")
        assert first is not None and second is not None
        assert len(first) == len(second) == 16 and first != second
        # Never shown as a control record, and never written by anyone but the driver.
        assert driver.control_get("acme", "app", CONTROL_GENERATION) is None
        assert all(key != CONTROL_GENERATION for key, _ in driver.control_list("acme", "app", ""))
        with pytest.raises(ValueError, match="the driver's own"):
            driver.control_put("acme", "app", CONTROL_GENERATION, b"x")
        for word in (b"agent", b"telling", b"kill", b"acme"):
            assert word not in second


def test_a_recall_is_one_read_transaction_on_postgresql(db_url: str, keys: Path) -> None:
    """On PostgreSQL a recall reads the agent's records, the statistics, the postings and
    the rows in one transaction (one snapshot, read only); on SQLite each read stays its own
    (ADR 0101); on both nothing is written in it."""
    with Memory.open(db_url, keys=keys, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for n in range(3):
            bot.remember(f"Ada's order {n} shipped to dock {n}.", formation=False)
        bot.recall("order shipped")
        count = _Count(_driver(memory))
        for _ in range(3):
            count.clear()
            assert len(bot.recall("order shipped")) == 3
            if db_url.startswith("postgresql"):
                assert count.begins == 1
                assert sum("set_config" in one for one in count.statements) == 1
            else:
                assert count.begins > 1
            assert not [one for one in count.statements
                        if one.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]


def test_nothing_writes_inside_a_read_unit(db_url: str, keys: Path) -> None:
    """A write inside a read unit, or a write unit inside one, is refused before it runs,
    and nothing is stored."""
    driver = DbDriver(db_url)
    try:
        row = make_row()

        def write_in_a_read() -> None:
            with driver.unit(write=False):
                driver.rows("acme", "app")
                driver.put(row)

        def write_unit_in_a_read() -> None:
            with driver.unit(write=False):
                driver.rows("acme", "app")
                with driver.unit():
                    driver.put(row)

        with pytest.raises(ValueError, match="read unit"):
            write_in_a_read()
        with pytest.raises(ValueError, match="read unit"):
            write_unit_in_a_read()
        assert driver.rows("acme", "app") == []
        with driver.unit(), driver.unit(write=False):  # a read inside a write unit joins it
            driver.put(row)
            assert [r.memory_id for r in driver.rows("acme", "app")] == [row.memory_id]
    finally:
        driver.close()
    with Memory.open(db_url, keys=keys, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        store = services_of(memory).store
        bot = memory.acting_for("ada", agent="bot")

        def remember_in_a_read() -> None:
            with store.unit(write=False):
                bot.remember("Ada's locker code is 4711.", formation=False)

        with pytest.raises(ValueError, match="read unit"):
            remember_in_a_read()
        assert bot.list(limit=10).items == []


def test_a_forget_between_the_search_and_the_opening_is_no_tampering(
    db_url: str, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's forget that commits after a recall's snapshot was taken (its anchor gone,
    its rows still in the snapshot) is a race, not tampering: the recall reads again outside
    the snapshot, leaves the memory out and audits no integrity error."""
    import threading

    from mainsdk_memory.audit import MemorySink

    sink = MemorySink()
    with Memory.open(db_url, keys=keys, app="app", embedder=None, audit=sink) as memory, \
            tenant.use("acme"):
        ada = memory.person("ada")
        gone = ada.remember("Ada's locker code is 4711.", formation=False)
        kept = ada.remember("Ada's locker is in hall B.", formation=False)
        store = services_of(memory).store
        search = store.search
        forgotten: list[bool] = []

        def search_then_forget(*args: object, **kwargs: object) -> object:
            found = search(*args, **kwargs)  # type: ignore[arg-type]
            if not forgotten:
                def forget() -> None:
                    with tenant.use("acme"):
                        memory.person("ada").forget(gone.id)
                worker = threading.Thread(target=forget)  # another transaction, committed
                worker.start()
                worker.join()
                forgotten.append(True)
            return found

        monkeypatch.setattr(store, "search", search_then_forget)
        hits = ada.recall("locker", top_k=5)
        assert forgotten == [True]
        assert [hit.record.id for hit in hits] == [kept.id]
        assert not [e for e in sink.events if e.operation == "integrity"]
