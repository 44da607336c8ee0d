"""Ranking signals (issue 14 item 4): kind and age, use, pin and feedback; sealed per subject."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mainsdk_memory import (
    AgentDisabledError,
    ConfigurationError,
    InvalidInputError,
    Kind,
    Memory,
    MemoryNotFound,
    RankingSignals,
    ScopedMemory,
    SealError,
    Source,
    StoreError,
    tenant,
)
from mainsdk_memory import _signals as signals
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import PersonMemory, caller_of
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import TENANT_SUBJECT

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULTS = RankingSignals()


@pytest.fixture(params=["local", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store URL (signals live in the driver's control records: local and SQLite)."""
    if request.param == "local":
        return f"local:{tmp_path / 'store'}"
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def clock() -> list[datetime]:
    """The time the test's Memory sees; move it with ``clock[0] += ...``."""
    return [NOW]


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
def memory(
    store: str, keys_path: Path, clock: list[datetime], sink: MemorySink
) -> Iterator[Memory]:
    """A text-only Memory (plain BM25, so equal texts tie) in tenant ``acme``."""
    with (
        Memory.open(
            store, keys=keys_path, app="app", clock=lambda: clock[0], embedder=None, audit=sink
        ) as opened,
        tenant.use("acme"),
    ):
        yield opened


def _document(memory: Memory, handle: ScopedMemory | PersonMemory) -> bytes | None:
    """The sealed signals document of the handle's person, as the driver holds it."""
    key = signals.document_key(caller_of(handle).pseudonym())
    return memory.driver.control_get("acme", "app", key)


def _entries(memory: Memory, subject: str, person: str | None) -> dict[str, signals.Held]:
    """The opened entries of one subject's document (``person``: whose pseudonym it is)."""
    services = services_of(memory)
    keys = services.subject_keys("acme", person or TENANT_SUBJECT, create=False)
    assert keys is not None
    return dict(services.signals.entries("acme", subject, keys))


def _twins(handle: ScopedMemory | PersonMemory) -> tuple[str, str]:
    """Two memories equally relevant to "tea", in the order recall ranks them first."""
    handle.remember("Ada's tea is green.")
    handle.remember("Ada's tea is black.")
    hits = handle.recall("tea", ranking="relevance")
    assert hits[0].score == hits[1].score
    return hits[0].record.id, hits[1].record.id


def _order(handle: ScopedMemory | PersonMemory, query: str = "tea") -> list[str]:
    return [hit.record.id for hit in handle.recall(query)]


# -- the formula ------------------------------------------------------------------------------


def _score(relevance: float = 0.5, **given: object) -> float:
    base: dict[str, object] = {"kind": Kind.FACT, "age": timedelta(0), "pinned": False}
    base.update(given)
    return signals.score(DEFAULTS, relevance, **base)  # type: ignore[arg-type]


def test_each_signal_moves_the_score_the_expected_way() -> None:
    plain = _score()
    assert plain == pytest.approx(0.5 * 1.05 / 1.55)
    assert _score(kind=Kind.PREFERENCE) > plain  # a preference weighs more than a fact
    assert _score(pinned=True) == pytest.approx(0.5 * 1.20 / 1.55)
    used_once = _score(uses=1, since_last_use=timedelta(0))
    assert used_once == pytest.approx(0.5 * (1.05 + 0.10 * 0.5) / 1.55)
    assert _score(uses=3, since_last_use=timedelta(0)) > used_once > plain
    assert _score(uses=3, since_last_use=timedelta(days=30)) < _score(
        uses=3, since_last_use=timedelta(0)
    )  # the use boost halves in 30 days
    assert _score(feedback=1) == pytest.approx(0.5 * (1.05 + 0.20 * math.tanh(0.5)) / 1.55)
    assert _score(feedback=2) > _score(feedback=1) > plain > _score(feedback=-1)
    assert _score(feedback=50) == _score(feedback=10)  # the sum is clamped to [-10, 10]
    assert _score(feedback=-50) == _score(feedback=-10)
    assert _score(0.0, kind=Kind.PREFERENCE, pinned=True, feedback=10) == 0.0  # r=0 stays 0


def test_an_event_fades_with_age_and_a_preference_does_not() -> None:
    fresh = _score(kind=Kind.EVENT)
    assert _score(kind=Kind.EVENT, age=timedelta(days=30)) == pytest.approx(0.5 * 1.05 / 1.55)
    assert _score(kind=Kind.EVENT, age=timedelta(days=300)) < _score(
        kind=Kind.EVENT, age=timedelta(days=30)
    ) < fresh
    assert _score(kind=Kind.EVENT, age=-timedelta(days=5)) == fresh  # future-dated: no extra
    for days in (0, 30, 3000):
        assert _score(kind=Kind.PREFERENCE, age=timedelta(days=days)) == pytest.approx(
            0.5 * 1.10 / 1.55
        )


@given(
    relevance=st.floats(0, 1),
    kind=st.sampled_from(list(Kind)),
    age_days=st.floats(-1e4, 1e5),
    pinned=st.booleans(),
    uses=st.integers(0, 10**6),
    since_days=st.one_of(st.none(), st.floats(0, 1e5)),
    opinion=st.integers(-1000, 1000),
)
def test_scores_stay_within_the_bounded_factor_of_relevance(
    relevance: float,
    kind: Kind,
    age_days: float,
    pinned: bool,
    uses: int,
    since_days: float | None,
    opinion: int,
) -> None:
    value = signals.score(
        DEFAULTS,
        relevance,
        kind=kind,
        age=timedelta(days=age_days),
        pinned=pinned,
        uses=uses,
        since_last_use=None if since_days is None else timedelta(days=since_days),
        feedback=opinion,
    )
    assert 0.0 <= value <= relevance <= 1.0
    assert value >= relevance * (1 - DEFAULTS.feedback_weight) / DEFAULTS.ceiling - 1e-12


def test_ranking_signals_are_configurable_and_checked() -> None:
    assert DEFAULTS.ceiling == pytest.approx(1.55)
    assert DEFAULTS.kinds[Kind.EVENT] == (0.10, timedelta(days=30))
    custom = RankingSignals(kinds={"note": (0.3, None)}, pin_weight=0)
    assert custom.kinds[Kind.NOTE] == (0.3, None)
    assert custom.kinds[Kind.EVENT] == DEFAULTS.kinds[Kind.EVENT]  # others keep the defaults
    assert custom.ceiling == pytest.approx(1 + 0.3 + 0.10 + 0 + 0.20)
    off = RankingSignals(kinds={kind: (0, None) for kind in Kind}, use_weight=0, pin_weight=0,
                         feedback_weight=0)
    assert signals.score(off, 0.7, kind=Kind.EVENT, age=timedelta(0), pinned=True, uses=9,
                         since_last_use=timedelta(0), feedback=10) == pytest.approx(0.7)
    with pytest.raises(ConfigurationError, match="fact, preference, event, procedure, note"):
        RankingSignals(kinds={"memo": (0.1, None)})
    bad: list[dict[str, object]] = [
        {"kinds": {"fact": (1.5, None)}},
        {"kinds": {"fact": (0.1, timedelta(0))}},
        {"kinds": {"fact": (0.1, 30)}},
        {"kinds": {"fact": 0.1}},
        {"kinds": [("fact", (0.1, None))]},
        {"use_weight": -0.1},
        {"use_weight": float("nan")},
        {"pin_weight": True},
        {"feedback_weight": "0.2"},
        {"use_half_life": timedelta(days=-1)},
    ]
    for options in bad:
        with pytest.raises(ConfigurationError):
            RankingSignals(**options)  # type: ignore[arg-type]


def test_signals_is_an_option_of_open(tmp_path: Path, keys_path: Path) -> None:
    url = f"local:{tmp_path / 'store'}"
    with pytest.raises(ConfigurationError, match="RankingSignals"):
        Memory.open(url, keys=keys_path, app="app", signals={"pin_weight": 0.2})  # type: ignore[typeddict-item]
    custom = RankingSignals(pin_weight=0.5)
    with Memory.open(url, keys=keys_path, app="app", signals=custom) as memory:
        assert services_of(memory).signals.signals is custom
    with Memory.open(url, keys=keys_path, app="app", signals=None) as memory:
        assert services_of(memory).signals.signals == DEFAULTS


# -- rank and count_uses, called directly -----------------------------------------------------


def test_rank_rescores_and_orders_and_count_uses_records_each_use(
    memory: Memory, clock: list[datetime]
) -> None:
    bot = memory.acting_for("ada", agent="bot")
    fact = bot.remember("Ada's tea is green.")
    event = bot.remember("Ada's tea party was lovely.", kind="event")
    caller = caller_of(bot)
    subject = caller.pseudonym()
    ranked = signals.rank(caller, [(fact, subject, 0.5), (event, subject, 0.5)], now=NOW)
    assert [record.id for record, _, _ in ranked] == [event.id, fact.id]  # event 0.10 > 0.05
    assert ranked[0][2] == pytest.approx(0.5 * 1.10 / 1.55)
    assert all(item_subject == subject for _, item_subject, _ in ranked)
    # An event fades: 60 days on, the fact ranks above it.
    later = NOW + timedelta(days=60)
    ranked = signals.rank(caller, [(fact, subject, 0.5), (event, subject, 0.5)], now=later)
    assert [record.id for record, _, _ in ranked] == [fact.id, event.id]
    assert ranked[1][2] == pytest.approx(0.5 * (1 + 0.10 / 4) / 1.55)
    # Uses lift a memory; the higher relevance wins a tie.
    signals.count_uses(caller, [(event, subject)], now=later)
    signals.count_uses(caller, [(event, subject)], now=later)
    held = _entries(memory, subject, "ada")[event.id]
    assert held == signals.Held(2, signals._micros(later), 0)
    ranked = signals.rank(caller, [(fact, subject, 0.5), (event, subject, 0.5)], now=later)
    assert [record.id for record, _, _ in ranked] == [event.id, fact.id]
    ranked = signals.rank(caller, [(fact, subject, 0.4), (fact, subject, 0.6)], now=later)
    assert [score for _, _, score in ranked] == sorted(
        (score for _, _, score in ranked), reverse=True
    )
    assert signals.rank(caller, [(fact, subject, 0.0)], now=later)[0][2] == 0.0
    assert signals.rank(caller, [], now=later) == []
    signals.count_uses(caller, [], now=later)


def test_count_uses_ignores_a_memory_that_was_forgotten(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    kept = bot.remember("Ada's tea is green.")
    gone = bot.remember("Ada's tea is black.")
    caller = caller_of(bot)
    subject = caller.pseudonym()
    memory.person("ada").forget(gone.id)
    signals.count_uses(caller, [(kept, subject), (gone, subject)], now=NOW)  # a recall raced it
    assert set(_entries(memory, subject, "ada")) == {kept.id}


def test_a_document_is_capped_keeping_feedback_and_recent_uses() -> None:
    at = signals._micros(NOW)
    entries = {f"mem_{i:026d}": signals.Held(1, at - i * 1_000_000, 0) for i in range(4100)}
    entries["mem_liked"] = signals.Held(0, None, 1)
    entries["mem_disliked"] = signals.Held(1, at - 10**15, -2)
    capped = signals._capped(entries, DEFAULTS, NOW)
    assert len(capped) == signals.CAP
    assert {"mem_liked", "mem_disliked"} <= set(capped)
    dropped = set(entries) - set(capped)
    too_many = len(entries) - signals.CAP  # the oldest uses without feedback go
    assert dropped == {f"mem_{i:026d}" for i in range(4100 - too_many, 4100)}


# -- feedback ------------------------------------------------------------------------------


def test_feedback_lifts_or_lowers_a_memory_among_equals(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    assert _order(bot) == [first, second]
    assert bot.feedback(second, 1) is None
    assert _order(bot) == [second, first]
    bot.feedback(second, -1)
    bot.feedback(second, -1)  # the sum is now -1
    assert _order(bot) == [first, second]
    hits = bot.recall("tea")
    assert 0.0 < hits[1].score < hits[0].score <= 1.0
    # The person's own handle has it too.
    memory.person("ada").feedback(second, 1)
    memory.person("ada").feedback(second, 1)
    assert _order(bot) == [second, first]


def test_feedback_is_audited_with_the_memory_id_only(memory: Memory, sink: MemorySink) -> None:
    bot = memory.acting_for("ada", agent="bot")
    mem = bot.remember("Ada's tea is green.")
    sink.events.clear()
    bot.feedback(mem.id, -1)
    [event] = sink.events
    assert (event.operation, event.outcome, event.memory_ids) == ("feedback", "ok", (mem.id,))
    assert event.extra == () and event.count is None and event.code is None
    assert "tea" not in str(event.to_dict())


def test_bad_feedback_raises_and_changes_nothing(memory: Memory, sink: MemorySink) -> None:
    bot = memory.acting_for("ada", agent="bot")
    mem = bot.remember("Ada's tea is green.")
    bot.feedback(mem.id, 1)
    before = _document(memory, bot)
    assert before is not None
    for value in (True, False, 1.0, -1.0, 0, 2, -2, "1", None, [1]):
        with pytest.raises(InvalidInputError, match=r"\+1 or -1"):
            bot.feedback(mem.id, value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"\+1 or -1"):
        signals.feedback(caller_of(bot), mem.id, caller_of(bot).pseudonym(), 3)
    assert _document(memory, bot) == before
    assert {event.outcome for event in sink.events[-10:]} == {"refused"}


def test_feedback_on_a_memory_the_caller_cannot_see_raises_as_get_does(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    mine = bot.remember("Ada's tea is green.")
    bob = memory.acting_for("bob", agent="bot").remember("Bob's tea is black.")
    other_agent = memory.acting_for("ada", agent="other").remember("Ada's tea is white.")
    bot.feedback(mine.id, 1)
    before = _document(memory, bot)
    for memory_id in (bob.id, other_agent.id, "mem_" + "a" * 26, "not-an-id"):
        with pytest.raises(MemoryNotFound):
            bot.get(memory_id)
        with pytest.raises(MemoryNotFound):
            bot.feedback(memory_id, 1)
    with pytest.raises(InvalidInputError):
        bot.feedback(42, 1)  # type: ignore[arg-type]
    assert _document(memory, bot) == before
    assert _document(memory, memory.acting_for("bob", agent="bot")) is None


def test_feedback_counts_as_an_agents_write(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    mem = bot.remember("Ada's tea is green.")
    memory.kill("bot")
    with pytest.raises(AgentDisabledError):
        bot.feedback(mem.id, 1)
    memory.revive("bot")
    assert _document(memory, bot) is None


# -- storage: sealed, per subject, locked ---------------------------------------------------


def test_the_document_is_sealed_and_holds_no_memory_id_in_plaintext(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    bot.feedback(first, 1)
    sealed = _document(memory, bot)
    assert sealed is not None
    dump = list(memory.driver.raw_dump())
    assert any(sealed in blob for _, blob in dump)  # the raw store holds these bytes...
    places = [where for where, blob in dump if blob == sealed]  # (local: its own file)
    for memory_id in (first, second):  # ...and neither they nor their place name a memory
        for form in (memory_id.encode(), memory_id.encode().hex().encode()):
            assert form not in sealed
            assert all(form.decode() not in where for where in places)
    assert b'"ids"' not in sealed and b"tea" not in sealed
    # Moved to another subject (here: the tenant's document), it does not open there.
    memory.driver.control_put("acme", "app", signals.document_key(TENANT_SUBJECT), sealed)
    assert _entries(memory, TENANT_SUBJECT, None) == {}
    assert set(_entries(memory, caller_of(bot).pseudonym(), "ada")) == {first, second}


def test_a_document_the_store_spoiled_counts_as_none_and_is_written_anew(
    memory: Memory,
) -> None:
    """Whoever writes the store can delete or spoil a document (it is not anchored): the
    signals are then reset, never forged, and recall goes on."""
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    bot.feedback(second, 1)
    old = _document(memory, bot)
    key = signals.document_key(caller_of(bot).pseudonym())
    memory.driver.control_put("acme", "app", key, b"\x01" + b"\x00" * 40)
    assert set(_order(bot)) == {first, second}
    assert set(_entries(memory, caller_of(bot).pseudonym(), "ada")) == {first, second}
    memory.driver.control_put("acme", "app", key, old)  # an older copy put back is accepted
    assert _entries(memory, caller_of(bot).pseudonym(), "ada")[second].feedback == 1


@pytest.mark.parametrize(
    "plain",
    [
        b"[]",
        b'{"v": 2}',
        b'{"v": 1, "pruned": null, "ids": ["a"], "uses": [], "last": [], "feedback": []}',
        b'{"v": 1, "pruned": "x", "ids": [], "uses": [], "last": [], "feedback": []}',
        b'{"v": 1, "pruned": null, "ids": ["a"], "uses": [-1], "last": [null], "feedback": [0]}',
        b'{"v": 1, "pruned": null, "ids": ["a"], "uses": [true], "last": [null], "feedback": [0]}',
        b'{"v": 1, "pruned": null, "ids": [1], "uses": [1], "last": [null], "feedback": [0]}',
        b'{"v": 1, "pruned": null, "ids": ["a"], "uses": [1], "last": [1.5], "feedback": [0]}',
    ],
)
def test_an_opened_document_of_the_wrong_shape_is_refused(plain: bytes) -> None:
    with pytest.raises(SealError):
        signals._decode(plain)


def test_a_second_persons_signals_are_their_own(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    bob = memory.acting_for("bob", agent="bot")
    ada_first, ada_second = _twins(ada)
    bob_memory = bob.remember("Bob's tea is green.")
    ada.feedback(ada_second, 1)
    assert _document(memory, bob) is None
    bob.recall("tea")
    assert set(_entries(memory, caller_of(bob).pseudonym(), "bob")) == {bob_memory.id}
    assert set(_entries(memory, caller_of(ada).pseudonym(), "ada")) == {ada_first, ada_second}
    assert memory.privacy.export("bob")["signals"] == [
        {"id": bob_memory.id, "uses": 1, "last_use": NOW.isoformat(), "feedback": 0}
    ]


def test_shared_memories_keep_their_signals_in_the_tenants_document(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    shared = ada.remember("Tea is served at four.", about="tenant", labels=["none"])
    memory.confirm_shared(shared.id)
    mine = ada.remember("Ada's tea is green.")
    memory.acting_for("bob", agent="bot").feedback(shared.id, 1)
    ada.recall("tea")
    assert _entries(memory, TENANT_SUBJECT, None)[shared.id] == signals.Held(
        1, signals._micros(NOW), 1
    )
    assert [entry["id"] for entry in memory.privacy.export("ada")["signals"]] == [mine.id]


def test_writers_in_two_memories_lose_no_update(store: str, keys_path: Path) -> None:
    """Two Memory objects share no in-process lock: only the key store's control lock
    (a file lock, as between processes) keeps their read-modify-writes apart."""
    with (
        Memory.open(store, keys=keys_path, app="app", embedder=None) as one,
        Memory.open(store, keys=keys_path, app="app", embedder=None) as two,
        tenant.use("acme"),
    ):
        mem = one.acting_for("ada", agent="bot").remember("Ada's tea is green.")
        callers = [caller_of(m.acting_for("ada", agent="bot")) for m in (one, two)]
        subject = callers[0].pseudonym()
        record = one.acting_for("ada", agent="bot").get(mem.id)
        rounds = 15

        def use(caller: object) -> None:
            for _ in range(rounds):
                signals.count_uses(caller, [(record, subject)], now=NOW)  # type: ignore[arg-type]

        threads = [threading.Thread(target=use, args=(caller,)) for caller in callers * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for m in (one, two):  # what each counted, written (as at close or when due)
            services_of(m).signals.flush(NOW)
        for m in (one, two):  # each reads the other's writes (the opened copy is by bytes)
            assert _entries(m, subject, "ada")[mem.id].uses == 4 * rounds


# -- forget, erase, export ------------------------------------------------------------------


def test_forgetting_a_memory_removes_its_entry(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    ada = memory.person("ada")
    first, second = _twins(bot)
    third = bot.remember("Ada's tea is white.").id
    for memory_id in (first, second, third):
        bot.feedback(memory_id, 1)
    subject = caller_of(bot).pseudonym()
    ada.forget(first)  # the person's own forget
    assert set(_entries(memory, subject, "ada")) == {second, third}
    ada.approve(bot.forget(second).id)  # an agent's request, approved
    assert set(_entries(memory, subject, "ada")) == {third}
    ada.forget(third)
    assert _document(memory, bot) is None  # nothing left: the document goes


def test_the_retention_sweep_removes_entries(
    store: str, keys_path: Path, clock: list[datetime]
) -> None:
    with (
        Memory.open(store, keys=keys_path, app="app", clock=lambda: clock[0], embedder=None,
                    retention={"personal": timedelta(days=30)}) as memory,
        tenant.use("acme"),
    ):
        bot = memory.acting_for("ada", agent="bot")
        old = bot.remember("Ada's tea is green.")
        shared = bot.remember("Tea at four.", about="tenant", labels=["none", "personal"])
        memory.confirm_shared(shared.id)
        clock[0] += timedelta(days=20)
        fresh = bot.remember("Ada's tea is black.")
        bot.recall("tea")
        subject = caller_of(bot).pseudonym()
        assert set(_entries(memory, subject, "ada")) == {old.id, fresh.id}
        assert set(_entries(memory, TENANT_SUBJECT, None)) == {shared.id}
        clock[0] += timedelta(days=11)
        swept = memory.enforce_retention()
        assert {receipt.memory_id for receipt in swept} == {old.id, shared.id}
        # A shared memory's entry goes at once; a person's, whose pseudonym the sweep
        # cannot turn into their key, at their next export (or a later pruning).
        assert _entries(memory, TENANT_SUBJECT, None) == {}
        exported = memory.privacy.export("ada")["signals"]
        assert [entry["id"] for entry in exported] == [fresh.id]
        assert set(_entries(memory, subject, "ada")) == {fresh.id}


def test_a_day_later_a_change_prunes_entries_of_memories_that_are_gone(
    memory: Memory, clock: list[datetime]
) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    bot.recall("tea")
    services_of(memory).signals.flush(clock[0])  # the uses written, as when due or at close
    subject = caller_of(bot).pseudonym()
    # The memory goes the way a retention sweep erases it (its pseudonym only).
    services_of(memory).erase_memory("acme", subject, first)
    bot.feedback(second, 1)
    assert set(_entries(memory, subject, "ada")) == {first, second}  # pruned today already
    clock[0] += timedelta(days=1)
    bot.feedback(second, 1)
    assert set(_entries(memory, subject, "ada")) == {second}


def test_erasing_a_person_deletes_their_document(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    bob = memory.acting_for("bob", agent="bot")
    first, _ = _twins(ada)
    ada.feedback(first, 1)
    bob.feedback(bob.remember("Bob's tea is black.").id, 1)
    key = signals.document_key(caller_of(ada).pseudonym())
    assert memory.driver.control_get("acme", "app", key) is not None
    memory.privacy.erase("ada")
    assert memory.driver.control_get("acme", "app", key) is None
    assert _document(memory, memory.acting_for("ada", agent="bot")) is None  # new pseudonym
    assert _document(memory, bob) is not None
    assert memory.privacy.export("ada")["signals"] == []


def test_export_holds_the_signals_of_the_persons_memories(
    memory: Memory, clock: list[datetime]
) -> None:
    bot = memory.acting_for("ada", agent="bot")
    _twins(bot)  # one recall: each used once, at NOW
    clock[0] += timedelta(hours=1)
    [green] = bot.recall("green")
    [black] = bot.recall("black", ranking="relevance")
    bot.recall("black")  # black: three uses, the last an hour on
    bot.feedback(green.record.id, -1)
    untouched = bot.remember("Ada's cat is called Tom.")
    document = memory.privacy.export("ada")
    assert sorted(document["signals"], key=lambda entry: entry["id"]) == sorted(
        [
            {"id": green.record.id, "uses": 2, "last_use": clock[0].isoformat(), "feedback": -1},
            {"id": black.record.id, "uses": 3, "last_use": clock[0].isoformat(), "feedback": 0},
        ],
        key=lambda entry: entry["id"],
    )
    assert untouched.id not in {entry["id"] for entry in document["signals"]}
    assert {entry["id"] for entry in document["signals"]} <= {m["id"] for m in document["memories"]}


# -- end to end: recall counts uses, pins rank higher, relevance turns it all off -------------


def test_recall_counts_a_use_and_context_does_not(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    mem = bot.remember("Ada's tea is green.")
    bot.context("tea")
    assert memory.privacy.export("ada")["signals"] == []
    bot.recall("tea")
    bot.recall("tea", ranking="relevance")  # returned: still a use
    bot.recall("coffee")  # returned nothing: no use
    [entry] = memory.privacy.export("ada")["signals"]
    assert (entry["id"], entry["uses"]) == (mem.id, 2)


def test_a_used_memory_ranks_higher_later(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)  # that recall used both
    for _ in range(3):
        [black] = bot.recall("black")  # uses only the black tea
    order = _order(bot)
    assert order[0] == black.record.id and set(order) == {first, second}


def test_a_pinned_memory_ranks_higher_in_recall(memory: Memory) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    bot.pin(second)
    assert _order(bot) == [second, first]
    hits = bot.recall("tea")
    assert hits[0].score > hits[1].score


def test_ranking_relevance_turns_every_signal_off(memory: Memory, clock: list[datetime]) -> None:
    bot = memory.acting_for("ada", agent="bot")
    first, second = _twins(bot)
    relevance = {hit.record.id: hit.score for hit in bot.recall("tea", ranking="relevance")}
    bot.pin(second)
    bot.feedback(second, 1)
    for _ in range(3):
        bot.recall("tea")
    assert _order(bot) == [second, first]
    plain = bot.recall("tea", ranking="relevance")
    assert {hit.record.id: hit.score for hit in plain} == relevance
    assert [hit.record.id for hit in plain] == [first, second]
    with pytest.raises(InvalidInputError):
        bot.recall("tea", ranking="popularity")  # type: ignore[arg-type]


def test_a_recalls_uses_rank_at_once_and_are_written_when_due_or_at_close(
    store: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall pays no durable write: its uses count in the process at once, and reach the
    sealed document when the oldest is WRITE_USES_AFTER old, or when the Memory closes."""
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        first, second = _twins(bot)
        subject = caller_of(bot).pseudonym()
        key = signals.document_key(subject)
        assert memory.driver.control_get("acme", "app", key) is None  # _twins' recall: unwritten
        bot.recall("tea", top_k=1)
        assert memory.driver.control_get("acme", "app", key) is None  # nothing written yet
        used = _entries(memory, subject, "ada")
        assert sum(held.uses for held in used.values()) == 3  # and yet it ranks with them
        monkeypatch.setattr(signals, "WRITE_USES_AFTER", 0.0)
        bot.recall("tea", top_k=1)  # now due: written
        written = memory.driver.control_get("acme", "app", key)
        assert written is not None
        monkeypatch.setattr(signals, "WRITE_USES_AFTER", 3600.0)
        bot.recall("tea", top_k=1)
        assert memory.driver.control_get("acme", "app", key) == written
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):  # the close wrote the third use
        entries = _entries(memory, subject, "ada")
        assert sum(held.uses for held in entries.values()) == 5
        assert set(entries) == {first, second}


def test_signals_never_lift_a_memory_above_a_more_trusted_one_of_the_same_relevance(
    memory: Memory, clock: list[datetime]
) -> None:
    """An event fades, so a newer copy would win on age; a web page's copy of what the person
    said stays below it all the same (and so does a used, liked agent's copy)."""
    memory.grant("bot", read="all")
    said = memory.person("ada").remember("Ada's party is on Friday.", kind="event")
    clock[0] += timedelta(days=20)
    bot = memory.acting_for("ada", agent="bot", session="s1")
    # Stored as they are: the same text from three sources on purpose (this tests ranking by
    # trust, not formation, which would keep one memory of them).
    scraped = bot.remember(
        "Ada's party is on Friday.", kind="event", source=Source.web("https://x.test"),
        formation=False,
    )
    guessed = bot.remember("Ada's party is on Friday.", kind="event", formation=False)
    bot.feedback(guessed.id, 1)
    for _ in range(3):
        bot.recall("party friday", top_k=3)
    hits = bot.recall("party friday", top_k=3)
    assert [hit.record.id for hit in hits] == [said.id, guessed.id, scraped.id]
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)


def test_close_writes_what_it_can_and_never_masks_the_apps_error(
    store: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory.open(store, keys=keys_path, app="app", embedder=None)

    def broken(*_args: object) -> None:
        raise StoreError("The store cannot be written.")

    def app_work() -> None:
        with tenant.use("acme"), memory:
            memory.acting_for("ada", agent="bot").remember("Ada's tea is green.")
            memory.acting_for("ada", agent="bot").recall("tea")  # a use, not written yet
            monkeypatch.setattr(memory.driver, "control_put", broken)
            raise RuntimeError("the app's own error")

    with pytest.raises(RuntimeError, match="the app's own"):
        app_work()
    memory.close()  # a second close is fine too


def test_a_person_recalled_once_is_written_by_the_next_recall_of_anyone(
    store: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        ada.remember("Ada's tea is green.")
        ada.recall("tea")
        key = signals.document_key(caller_of(ada).pseudonym())
        assert memory.driver.control_get("acme", "app", key) is None
        monkeypatch.setattr(signals, "WRITE_USES_AFTER", 0.0)
        bob = memory.acting_for("bob", agent="bot")
        bob.remember("Bob's tea is black.")
        bob.recall("tea")  # Bob's recall writes Ada's due uses too
        assert memory.driver.control_get("acme", "app", key) is not None


def _units_of_writes(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Each signals document written from now on, by key: the db driver's unit of work it
    was written in (``None``: a transaction of its own, or a driver without units)."""
    from mainsdk_memory.drivers.db import _driver as db_driver

    units: dict[str, object] = {}
    put = memory.driver.control_put

    def recording(tenant_id: str, app: str, key: str, value: bytes | None) -> None:
        units[key] = db_driver._UNIT.get()
        put(tenant_id, app, key, value)

    monkeypatch.setattr(memory.driver, "control_put", recording)
    return units


def test_past_max_pending_the_oldest_are_written_together_per_tenant(
    store: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_PENDING subjects waiting, the oldest are written until half are left: one
    tenant's in one transaction on a driver with units of work, each with its uses."""
    monkeypatch.setattr(signals, "MAX_PENDING", 4)
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory:
        order = [("acme", "ada"), ("globex", "gus"), ("acme", "bob"), ("globex", "gia"),
                 ("acme", "cy")]
        handles = {}
        for tenant_id, name in order:
            with tenant.use(tenant_id):
                handles[name] = memory.acting_for(name, agent="bot")
                handles[name].remember(f"{name.title()}'s tea is green.")
        keys = {name: signals.document_key(caller_of(h).pseudonym())
                for name, h in handles.items()}
        units = _units_of_writes(memory, monkeypatch)
        for tenant_id, name in order:
            with tenant.use(tenant_id):
                handles[name].recall("tea")  # the fifth makes the oldest three due
        assert set(units) == {keys["ada"], keys["gus"], keys["bob"]}
        if store.startswith("sqlite"):
            assert units[keys["ada"]] is not None
            assert units[keys["ada"]] is units[keys["bob"]]  # acme's two: one transaction
            assert units[keys["gus"]] is None  # globex's one: a transaction of its own
        for tenant_id, name in [("acme", "ada"), ("globex", "gus"), ("acme", "bob")]:
            with tenant.use(tenant_id):
                subject = caller_of(handles[name]).pseudonym()
                services = services_of(memory)
                person_keys = services.subject_keys(tenant_id, name, create=False)
                assert person_keys is not None
                entries = services.signals.entries(tenant_id, subject, person_keys)
                assert [held.uses for held in entries.values()] == [1]


def test_a_batch_of_uses_that_fails_is_written_subject_by_subject(
    store: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subject whose document cannot be written loses its uses; the others of its batch
    are still written, each use counted once, and the recall does not fail."""
    monkeypatch.setattr(signals, "MAX_PENDING", 2)
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        names = ["ada", "bob", "cy"]
        handles = {name: memory.acting_for(name, agent="bot") for name in names}
        for name, handle in handles.items():
            handle.remember(f"{name.title()}'s tea is green.")
        keys = {name: signals.document_key(caller_of(h).pseudonym()) for name, h in
                handles.items()}
        put = memory.driver.control_put

        def refusing(tenant_id: str, app: str, key: str, value: bytes | None) -> None:
            if key == keys["bob"]:  # the second of the batch: Ada's is written before it
                raise StoreError("The store cannot be written.")
            put(tenant_id, app, key, value)

        monkeypatch.setattr(memory.driver, "control_put", refusing)
        handles["ada"].recall("tea")
        handles["bob"].recall("tea")
        assert len(handles["cy"].recall("tea")) == 1  # three waiting: Ada's and Bob's due
        assert memory.driver.control_get("acme", "app", keys["bob"]) is None
        ada = _entries(memory, caller_of(handles["ada"]).pseudonym(), "ada")
        assert [held.uses for held in ada.values()] == [1]
