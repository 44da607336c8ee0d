"""A driver that leaks: on every read it returns every row it holds. The core still lets
nothing through that the caller may not see (tenant, app, person, session, quarantine,
retention, agent grant, time), through recall, list, context, history or get."""

from __future__ import annotations

import builtins
from collections.abc import Collection, Container, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mainsdk_memory import Memory, MemoryNotFound, Source, tenant
from mainsdk_memory._memory import services_of
from mainsdk_memory.drivers import (
    Capabilities,
    Driver,
    EraseResult,
    Filter,
    StoredRow,
    VectorDriver,
    VectorEntry,
    open_driver,
)
from mainsdk_memory.embeddings import HashingEmbedder
from mainsdk_memory.keys import KeyStore

RowKey = tuple[str, str, str, str, int]


def _key(row: StoredRow) -> RowKey:
    return (row.tenant, row.app, row.subject, row.memory_id, row.version)


class LeakyDriver:
    """Stores through a real driver, and answers every read with everything it holds."""

    name = "leaky"

    def __init__(self, inner: Driver) -> None:
        assert isinstance(inner, VectorDriver)
        self.inner = inner
        self.capabilities: Capabilities = inner.capabilities
        self.rows: dict[RowKey, StoredRow] = {}
        self.vectors_held: dict[RowKey, bytes] = {}

    def _sync(self, tenant_id: str, app: str, subject: str, memory_id: str) -> None:
        for row in self.inner.versions(tenant_id, app, (subject,), memory_id):
            self.rows[_key(row)] = row  # closed versions get their valid_to here

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        self.inner.put(row, closes=closes, vector=vector)
        self._sync(row.tenant, row.app, row.subject, row.memory_id)
        if vector is not None:
            self.vectors_held[_key(row)] = vector

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        self.inner.put_vector(tenant, app, subject, memory_id, version, sealed)
        self.vectors_held[(tenant, app, subject, memory_id, version)] = sealed

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        self.inner.set_pinned(tenant, app, subject, memory_id, pinned)
        self._sync(tenant, app, subject, memory_id)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        result = self.inner.erase(tenant, app, subject, memory_id)
        for held in (self.rows, self.vectors_held):
            for key in [k for k in held if k[:4] == (tenant, app, subject, memory_id)]:
                del held[key]
        return result

    # -- the leaks ------------------------------------------------------------------------

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        return sorted(self.rows.values(), key=lambda row: row.version)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        return builtins.list(self.rows.values())

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        return [(row, 1.0) for row in self.rows.values()]

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        return [
            VectorEntry(k[2], k[3], k[4], None if (k[3], k[4]) in known else sealed)
            for k, sealed in sorted(self.vectors_held.items())
        ]

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        return sorted({(row.subject, row.memory_id) for row in self.rows.values()})

    def control_list(self, tenant: str, app: str, prefix: str) -> builtins.list[tuple[str, bytes]]:
        return self.inner.control_list(tenant, app, "")  # every record, whatever the prefix

    # -- honest -----------------------------------------------------------------------------

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        self.inner.control_put(tenant, app, key, value)

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        return self.inner.control_get(tenant, app, key)

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        return self.inner.raw_dump()

    def close(self) -> None:
        self.inner.close()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def leaky(store_url: str, keys_path: Path) -> Iterator[tuple[Memory, LeakyDriver, Clock]]:
    driver = LeakyDriver(open_driver(store_url))
    clock = Clock()
    memory = Memory(
        driver,  # type: ignore[arg-type]
        KeyStore.open(keys_path),
        app="app",
        clock=clock,
        retention={"short": timedelta(days=1)},
        embedder=HashingEmbedder(),
    )
    with memory:
        yield memory, driver, clock


QUERY = "Ada likes the harbour"


def _fill(memory: Memory, driver: LeakyDriver, clock: Clock) -> tuple[set[str], set[str]]:
    """Memories the caller (agent ``bot`` for ada, session ``s1``) may and may not see."""
    allowed: set[str] = set()
    hidden: set[str] = set()
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot", session="s1")
        allowed.add(bot.remember("Ada likes the harbour at dawn.").id)
        allowed.add(bot.remember("Ada likes the harbour cafe.", pinned=True).id)
        revised = bot.remember("Ada likes the harbour in winter.")
        bot.revise(revised.id, "Ada likes the harbour in summer.")
        allowed.add(revised.id)
        allowed.add(bot.remember("The harbour opens at six.", about="tenant").id)
        other_session = memory.acting_for("ada", agent="bot", session="s2")
        hidden.add(other_session.remember("Ada likes the harbour, session two only.",
                                          session_only=True, pinned=True).id)
        hidden.add(other_session.remember("Ada likes the harbour, says a web page.",
                                          source=Source.web("https://example.org"),
                                          pinned=True).id)
        other_agent = memory.acting_for("ada", agent="other")
        hidden.add(other_agent.remember("Ada likes the harbour, says another agent.",
                                        pinned=True).id)
        bob = memory.acting_for("bob", agent="bot", session="s1")
        hidden.add(bob.remember("Bob likes the harbour too.", pinned=True).id)
        short = bot.remember("Ada likes the harbour this week.", labels=["short"], pinned=True)
        hidden.add(short.id)
    with tenant.use("globex"):
        there = memory.acting_for("ada", agent="bot", session="s1")
        hidden.add(there.remember("Ada likes the harbour in another tenant.", pinned=True).id)
    clock.now += timedelta(days=2)  # "short" has expired; nothing swept it yet
    assert len(driver.rows) >= len(allowed) + len(hidden)  # the driver holds them all
    return allowed, hidden


def test_nothing_leaks_through_any_read(leaky: tuple[Memory, LeakyDriver, Clock]) -> None:
    memory, driver, clock = leaky
    allowed, hidden = _fill(memory, driver, clock)
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot", session="s1")
        for mode in ("text", "vector", "hybrid"):
            found = {hit.record.id for hit in bot.recall(QUERY, top_k=50, mode=mode)}
            assert found and found <= allowed, mode
        listed = {record.id for record in bot.list(limit=100).items}
        assert listed == allowed
        block = bot.context(QUERY, top_k=50)
        assert all(memory_id not in block for memory_id in hidden)
        assert any(memory_id in block for memory_id in allowed)
        for memory_id in hidden:
            with pytest.raises(MemoryNotFound):
                bot.get(memory_id)
            with pytest.raises(MemoryNotFound):
                bot.history(memory_id)
        for memory_id in allowed:
            assert bot.get(memory_id).id == memory_id
            history = bot.history(memory_id)
            assert {record.id for record in history} == {memory_id}
            assert [record.version for record in history] == list(range(1, len(history) + 1))
        # The past: as_of sees the first version of the revised memory, nothing hidden.
        past = {hit.record.id for hit in bot.recall(QUERY, top_k=50, as_of=clock.now,
                                                     mode="text")}
        assert past <= allowed


def test_retention_sweeps_only_what_expired(leaky: tuple[Memory, LeakyDriver, Clock]) -> None:
    memory, driver, clock = leaky
    allowed, _hidden = _fill(memory, driver, clock)
    with tenant.use("acme"):
        receipts = memory.enforce_retention()  # the driver names every memory as expired
        assert len(receipts) == 1 and receipts[0].claims["label"] == "short"
        person = memory.person("ada")
        for memory_id in allowed:
            assert person.get(memory_id).id == memory_id


def test_another_tenants_shared_vector_does_not_open(
    leaky: tuple[Memory, LeakyDriver, Clock],
) -> None:
    """A vector entry names no tenant, so the core cannot drop another tenant's shared one by
    its columns: it has no anchor in this tenant (ADR 0047), so it is left out, nothing of it
    is read, and the recall serves this tenant's own."""
    memory, _, _ = leaky
    with tenant.use("globex"):
        theirs = memory.acting_for("ada", agent="bot").remember(
            "Globex's harbour note.", about="tenant"
        )
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot", session="s1")
        mine = bot.remember("Ada likes the harbour at dawn.")
        found = [hit.record.id for hit in bot.recall(QUERY, mode="vector", top_k=10)]
        assert found == [mine.id] and theirs.id not in found
        # It has no anchor here, so no seal key to open it with in this tenant.
        services = services_of(memory)
        assert services.keys.anchors.memory(services.anchor_scope("acme"), theirs.id) is None


def test_control_records_of_others_do_not_leak(leaky: tuple[Memory, LeakyDriver, Clock]) -> None:
    """The driver ignores the prefix of every control read: the core keeps to its own."""
    memory, _, _ = leaky
    with tenant.use("acme"):
        bob_bot = memory.acting_for("bob", agent="bot")
        bobs = bob_bot.remember("Bob's locker is 9.")
        request = bob_bot.forget(bobs.id)
        memory.privacy.set_guardian("bob", guardian="ann")
        memory.grant("other", read="all")
        ada = memory.person("ada")
        assert ada.pending() == []
        exported = memory.privacy.export("ada")
        assert exported["pending_forget_requests"] == [] and exported["guardian_policy"] is None
        assert memory.read_policy("bot") == "own" and not memory.is_killed("bot")
        receipt = memory.privacy.erase("ada")
        assert receipt.memory_ids == ()
        assert [r.id for r in memory.person("bob").pending()] == [request.id]  # bob's stays
        assert memory.privacy.guardian_policy("bob") is not None
