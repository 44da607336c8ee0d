"""Metadata and ``where`` filters (issue 17 item 2): sealed JSON, blinded tags, in-store filters.

Every test runs on every driver. A filter is applied by the driver before any ranking cut, so a
match ranked below the first hundred by relevance is still found; the answers equal a plain
Python evaluation of the same filter over the same metadata.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mainsdk_memory import (
    IntegrityError,
    InvalidInputError,
    Memory,
    MemoryCapabilityError,
    tenant,
)
from mainsdk_memory.drivers import Capabilities
from mainsdk_memory.keys import KeyStore

sys.path.insert(0, str(Path(__file__).parent.parent / "docs" / "examples"))
from dict_driver import DictDriver


def _numbers(memory: Memory, count: int) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for n in range(count):
            bot.remember(
                f"Order {n} shipped by courier.",
                formation=False,
                metadata={"n": n, "even": n % 2 == 0, "city": ["Lisbon", "Porto"][n % 2],
                          "score": n / 4, "nested": {"n": n}},
            )


def test_list_and_recall_filter_by_equality_range_in_and_not_equal(memory: Memory) -> None:
    _numbers(memory, 24)
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")

        def listed(where: dict[str, Any]) -> list[int]:
            return sorted(r.metadata["n"] for r in bot.list(where=where, limit=100).items
                          if r.metadata)

        def recalled(where: dict[str, Any]) -> list[int]:
            return sorted(h.record.metadata["n"] for h in bot.recall("courier", where=where,
                          top_k=50) if h.record.metadata)

        for view in (listed, recalled):
            assert view({"n": 3}) == [3]
            assert view({"n": 3.0}) == [3]  # JSON equality: 3 is 3.0
            assert view({"n": {"$gte": 5, "$lt": 9}}) == [5, 6, 7, 8]
            assert view({"score": {"$gt": 4.5}}) == [19, 20, 21, 22, 23]
            assert view({"n": {"$in": [1, 2, 40]}, "even": True}) == [2]
            assert view({"city": "Porto", "n": {"$lte": 5}}) == [1, 3, 5]
            assert view({"city": {"$ne": "Porto"}, "n": {"$lt": 6}}) == [0, 2, 4]
            assert view({"even": 1}) == []  # True is not 1
            assert view({"n": {"$gt": 10, "$lt": 5}}) == []
            assert view({"missing": "x"}) == []


def test_a_filter_finds_matches_ranked_below_the_first_hundred(memory: Memory) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for n in range(130):
            # The early memories match the query best (the word twice); the filter picks
            # the last ones, which a top-100 recall followed by a filter would never see.
            words = "invoice invoice paid" if n < 110 else "invoice paid late in the month"
            bot.remember(f"{words} number {n}", formation=False, metadata={"batch": n // 10})
        hits = bot.recall("invoice", where={"batch": {"$gte": 11}}, top_k=20)
        assert sorted(h.record.metadata["batch"] for h in hits if h.record.metadata) == (
            [11] * 10 + [12] * 10
        )
        page = bot.list(where={"batch": 12}, limit=4)
        assert len(page.items) == 4 and page.next_cursor is not None
        rest = bot.list(where={"batch": 12}, limit=20, cursor=page.next_cursor)
        assert len(page.items) + len(rest.items) == 10


def test_shared_memories_are_filtered_under_the_tenant_s_keys(memory: Memory) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("Refunds take five days.", about="tenant", metadata={"topic": "refunds"})
        bot.remember("Ada asked about refunds.", metadata={"topic": "refunds"})
        bot.remember("Ada asked about shipping.", metadata={"topic": "shipping"})
        hits = bot.recall("refunds", where={"topic": "refunds"})
        assert sorted(h.record.scope.about for h in hits) == ["ada", "tenant"]
        assert "refunds" in bot.context("refunds", where={"topic": "refunds"})
        assert "shipping" not in bot.context("asked", where={"topic": "refunds"})


def test_whole_numbers_equal_their_floats_at_any_size(memory: Memory) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("A big number.", metadata={"x": 2**60})
        bot.remember("A big float.", metadata={"x": 2.0**60})
        assert len(bot.list(where={"x": 2**60}).items) == 2
        assert len(bot.list(where={"x": {"$in": [2.0**60]}}).items) == 2


def test_large_metadata_round_trips_whole_beside_a_bounded_text(memory: Memory) -> None:
    document = {"body": "lorem ipsum dolor " * 12_000, "parts": list(range(2000))}  # ~220 KB
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        held = bot.remember("A long document about lorem ipsum.", key="doc", metadata=document)
        assert bot.get(key="doc").metadata == document
        assert bot.get(held.id).metadata == document


@pytest.mark.parametrize(
    "where",
    [
        {"name": {"$gt": "m"}},  # ranges compare numbers
        {"nested": {"n": 1}},  # not an operator: a nested object is not filterable
        {"n": {"$regex": "x"}},
        {"n": {"$in": "abc"}},
        {"n": [1, 2]},
        {"n": {}},
        "n = 1",
        {"n": {"$gt": True}},
        {"n": {"$lt": float("inf")}},
        {"n": {"$in": {"1": 0}}},
    ],
)
def test_bad_filters_are_refused(memory: Memory, where: Any) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("A note.", metadata={"n": 1})
        with pytest.raises(InvalidInputError):
            bot.list(where=where)
        with pytest.raises(InvalidInputError):
            bot.recall("note", where=where)


def test_a_store_without_tags_refuses_keys_and_filters(tmp_path: Path) -> None:
    class NoTags(DictDriver):
        capabilities = Capabilities(concurrent_writers=False, tags=False)

    keys = KeyStore.create(tmp_path / "keys")
    with Memory(NoTags(), keys, app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        with pytest.raises(MemoryCapabilityError):
            bot.remember("A note.", key="k")
        with pytest.raises(MemoryCapabilityError):
            bot.list(where={"n": 1})
        with pytest.raises(MemoryCapabilityError):
            bot.get(key="k")
        assert bot.list().items == []
        held = bot.remember("Metadata alone needs no tags to be stored.", metadata={"n": 1})
        assert bot.get(held.id).metadata == {"n": 1}


# -- the store's answer equals Python's --------------------------------------------------

_VALUES = st.one_of(
    st.integers(-50, 50),
    st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 2)),
    st.booleans(),
    st.none(),
    st.sampled_from(["a", "b", "Ä"]),
)
_NUMBER = st.one_of(st.integers(-60, 60), st.floats(-60, 60, allow_nan=False))


@st.composite
def _conditions(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(st.sampled_from(["x", "y"]))
    kind = draw(st.sampled_from(["eq", "ne", "in", "range"]))
    if kind == "eq":
        return {field: draw(_VALUES)}
    if kind == "ne":
        return {field: {"$ne": draw(_VALUES)}}
    if kind == "in":
        return {field: {"$in": draw(st.lists(_VALUES, max_size=3))}}
    ops = draw(st.lists(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), min_size=1,
                        max_size=2, unique=True))
    return {field: {op: draw(_NUMBER) for op in ops}}


def _equal(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _holds(metadata: dict[str, Any], where: dict[str, Any]) -> bool:
    for field, condition in where.items():
        ops = condition if isinstance(condition, dict) else {"$eq": condition}
        present = field in metadata
        value = metadata.get(field)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        for op, operand in ops.items():
            if op == "$eq" and not (present and _equal(value, operand)):
                return False
            if op == "$ne" and present and _equal(value, operand):
                return False
            if op == "$in" and not (present and any(_equal(value, one) for one in operand)):
                return False
            compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__,
                       "$lte": float.__le__}.get(op)
            if compare is not None and not (
                present and number and compare(float(value), float(operand))  # type: ignore[arg-type]
            ):
                return False
    return True


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One local store of 60 memories with random metadata, shared by the examples."""
    import random

    rng = random.Random(17)
    folder = tmp_path_factory.mktemp("filters")
    KeyStore.create(folder / "keys")
    memory = Memory.open(f"local:{folder / 'store'}", keys=folder / "keys", app="app",
                         embedder=None)
    held: dict[str, dict[str, Any]] = {}
    values: list[object] = [*range(-5, 6), 0.5, -2.25, 3.0, True, False, None, "a", "b", "Ä"]
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for n in range(60):
            metadata = {f: rng.choice(values) for f in ("x", "y") if rng.random() < 0.8}
            record = bot.remember(f"Item {n}.", formation=False, metadata=metadata)
            held[record.id] = metadata
    yield memory, held
    memory.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(conditions=st.lists(_conditions(), min_size=1, max_size=2))
def test_filters_answer_what_python_answers(
    reference_store: Any, conditions: list[dict[str, Any]]
) -> None:
    memory, held = reference_store
    where: dict[str, Any] = {}
    for condition in conditions:
        for field, value in condition.items():
            where.setdefault(field, {})
            ops = value if isinstance(value, dict) else {"$eq": value}
            where[field] = {**where[field], **ops}
    expected = sorted(mid for mid, metadata in held.items() if _holds(metadata, where))
    with tenant.use("acme"):
        page = memory.acting_for("ada", agent="bot").list(where=where, limit=100)
    assert sorted(record.id for record in page.items) == expected


def test_tags_moved_by_someone_who_can_write_the_store_add_nothing(tmp_path: Path) -> None:
    import sqlite3

    KeyStore.create(tmp_path / "keys")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with Memory.open(url, keys=tmp_path / "keys", app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("Ada is on the gold plan.", key="k-gold", metadata={"plan": "gold"})
        bot.remember("Ada is on the free plan.", key="k-free", metadata={"plan": "free"})
        with sqlite3.connect(tmp_path / "store.db") as db:  # swap the two rows' tags
            first, second = [doc for (doc,) in db.execute(
                "SELECT DISTINCT doc FROM memory_tags ORDER BY doc")]
            db.execute("UPDATE memory_tags SET doc = -1 WHERE doc = ?", (first,))
            db.execute("UPDATE memory_tags SET doc = ? WHERE doc = ?", (first, second))
            db.execute("UPDATE memory_tags SET doc = ? WHERE doc = -1", (second,))
        assert bot.list(where={"plan": "gold"}).items == []  # not the free plan's memory
        assert bot.recall("plan", where={"plan": "gold"}) == []
        with pytest.raises(IntegrityError):
            bot.get(key="k-gold")
        with pytest.raises(IntegrityError):
            bot.remember("Ada is on the platinum plan.", key="k-gold")
        assert len(bot.list(limit=10).items) == 2
