"""The db driver reads exactly what the protocol's reference reads, on SQLite and PostgreSQL.

Search equals :func:`bm25_rank` (scores within 1e-9, the same order including ties) and
plaintext BM25 from rank-bm25 on the same tokens; list and versions return exactly the
rows :meth:`Filter.matches` accepts, in the documented order.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from _db_rows import (
    T0,
    TRUSTS,
    instant,
    make_row,
    memory_id,
    random_rows,
    random_terms,
    recorded_statements,
)
from rank_bm25 import BM25Okapi
from sqlalchemy import event

from mainsdk_memory.drivers import BM25_B, BM25_K1, Filter, StoredRow, bm25_rank
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.keys import SubjectKeys

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)


class PlainBM25(BM25Okapi):
    """rank-bm25's Okapi BM25 with the non-negative idf the SDK documents."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            word: math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
            for word, freq in nd.items()
        }


@pytest.fixture
def driver(store_url: str) -> Iterator[DbDriver]:
    with DbDriver(store_url) as opened:
        yield opened


def _same_ranking(got: list[tuple[StoredRow, float]], want: list[tuple[StoredRow, float]]) -> None:
    assert [(r.memory_id, r.version) for r, _ in got] == [(r.memory_id, r.version) for r, _ in want]
    for (_, score), (_, expected) in zip(got, want, strict=True):
        assert abs(score - expected) <= 1e-9
    assert [row for row, _ in got] == [row for row, _ in want]  # whole rows, terms included


def test_search_equals_the_reference_on_random_corpora(driver: DbDriver) -> None:
    rng = random.Random(20261130)
    vocabulary = [f"t_{i}" for i in range(10)]
    for corpus in range(12):
        tenant = f"corpus-{corpus}"  # each corpus is its own tenant: a fresh, isolated store
        rows = random_rows(rng, driver, rng.randint(1, 30), tenant=tenant, vocabulary=vocabulary)
        for _ in range(6):
            query = [
                set(rng.sample(vocabulary, rng.choice([1, 1, 2]))) for _ in range(rng.randint(1, 4))
            ]
            where = Filter(
                tenant=tenant,
                app="app",
                subjects=("p_ada", "tenant"),
                session=rng.choice([None, "s1"]),
                as_of=rng.choice([None, None, instant(rng)]),
                kinds=rng.choice([None, frozenset({"fact", "note"})]),
                # Some memories only: the corpus (N, lengths, df) is theirs alone.
                memory_ids=rng.choice(
                    [None, None, frozenset(r.memory_id for r in rng.sample(rows, len(rows) // 2))]
                ),
            )
            top_k = rng.choice([1, 3, 100])
            want = bm25_rank([r for r in rows if where.matches(r)], query, top_k)
            _same_ranking(driver.search(where, query, top_k=top_k), want)


def test_ties_follow_trust_then_recorded_time_then_memory_id(driver: DbDriver) -> None:
    # Identical documents score identically, so only the tie order separates them. The
    # session sees its own quarantined (untrusted) rows too.
    rows = [make_row(memory_id=memory_id(500), session="s1", terms={"t_z": 1}, length=1)]
    for n in range(12):
        rows.append(
            make_row(
                memory_id=memory_id(100 - n),
                trust=TRUSTS[n % 3],
                session="s1",
                recorded_at=T0 + timedelta(microseconds=n % 2),
                terms={"t_x": 2, "t_y": 1},
                length=3,
            )
        )
    for row in rows:
        driver.put(row)
    where = Filter(tenant="acme", app="app", subjects=("p_ada",), session="s1")
    got = driver.search(where, [{"t_x"}], top_k=20)
    assert len(got) == 12
    assert len({score for _, score in got}) == 1
    _same_ranking(got, bm25_rank(rows, [{"t_x"}], 20))
    trusts = [row.trust for row, _ in got]
    assert trusts == sorted(trusts, key=["confirmed", "inferred", "untrusted"].index)


def test_search_equals_plaintext_bm25_from_rank_bm25(driver: DbDriver) -> None:
    rng = random.Random(7)
    keys = SubjectKeys(bytes(range(32)), "test")
    words = "apple banana cherry date elder fig grape honey iris jade kiwi lemon".split()
    for corpus in range(10):
        tenant = f"plain-{corpus}"
        docs = [rng.choices(words, k=rng.randint(1, 12)) for _ in range(rng.randint(1, 25))]
        for i, doc in enumerate(docs):
            counts: dict[str, int] = {}
            for word in doc:
                counts[keys.blind(word)] = counts.get(keys.blind(word), 0) + 1
            driver.put(
                make_row(
                    tenant=tenant,
                    memory_id=memory_id(i),
                    terms=counts,
                    length=len(doc),
                    recorded_at=T0 + timedelta(seconds=i),
                )
            )
        query = rng.choices(words, k=rng.randint(1, 5))
        got = driver.search(
            Filter(tenant=tenant, app="app", subjects=("p_ada",)),
            [{keys.blind(word)} for word in query],
            top_k=100,
        )
        plain = PlainBM25(docs, k1=BM25_K1, b=BM25_B).get_scores(query)
        ceiling = sum(
            math.log(1.0 + (len(docs) - df + 0.5) / (df + 0.5)) * (BM25_K1 + 1.0)
            for df in (sum(word in doc for doc in docs) for word in query)
        )
        expected = sorted(
            ((score / ceiling, i) for i, score in enumerate(plain) if score > 0),
            key=lambda pair: (-pair[0], -pair[1]),  # ties: the newer (later) document first
        )
        assert [row.memory_id for row, _ in got] == [memory_id(i) for _, i in expected]
        for (_, score), (want, _) in zip(got, expected, strict=True):
            assert abs(score - want) <= 1e-9


def test_a_query_term_in_two_vocabularies_counts_once_per_group(driver: DbDriver) -> None:
    # A person's and the tenant's index keys blind one word to two tokens: one group.
    person = make_row(memory_id=memory_id(1), terms={"p_word": 2, "p_other": 1}, length=3)
    shared = make_row(memory_id=memory_id(2), subject="tenant", terms={"t_word": 1}, length=1)
    driver.put(person)
    driver.put(shared)
    where = Filter(tenant="acme", app="app", subjects=("p_ada", "tenant"))
    query = [{"p_word", "t_word"}, {"p_word", "t_word"}, {"nothing"}]
    _same_ranking(driver.search(where, query, top_k=5), bm25_rank([person, shared], query, 5))


def test_list_and_versions_return_exactly_what_the_filter_matches(driver: DbDriver) -> None:
    known = {
        "tenant",
        "app",
        "subjects",
        "session",
        "kinds",
        "as_of",
        "pinned",
        "written_by",
        "any_session",
        "retention",
        "memory_ids",
        "tags",
        "tags_absent",
    }
    # A new Filter field needs SQL in the driver and a case here before this passes.
    fields = {f.name for f in dataclasses.fields(Filter)}
    assert fields <= known
    rng = random.Random(11)
    tags = [f"{n:032x}" for n in range(4)]
    rows = random_rows(rng, driver, 60, tags=tags)
    for _ in range(80):
        extra: dict[str, object] = {}
        if "any_session" in fields:
            extra["any_session"] = rng.random() < 0.2
        if "retention" in fields:
            extra["retention"] = rng.choice(
                [(), (("health", instant(rng)),), (("personal", instant(rng)), ("none", T0))]
            )
        if "memory_ids" in fields:
            ids = sorted({r.memory_id for r in rows})
            extra["memory_ids"] = rng.choice(
                [None, None, frozenset(), frozenset(rng.sample(ids, rng.randint(1, 20)))]
            )
        if "tags" in fields:

            def clause() -> frozenset[str]:
                return frozenset(rng.sample(tags, rng.randint(0, 3)))

            extra["tags"] = rng.choice([(), (), (clause(),), (clause(), clause())])
            extra["tags_absent"] = rng.choice([frozenset(), clause()])
        where = Filter(
            **extra,  # type: ignore[arg-type]
            tenant="acme",
            app=rng.choice(["app", "other"]),
            subjects=tuple(rng.sample(["p_ada", "p_bob", "tenant"], rng.randint(0, 3))),
            session=rng.choice([None, "s1", "s2"]),
            kinds=rng.choice(
                [None, frozenset(), frozenset({"fact"}), frozenset({"event", "note"})]
            ),
            as_of=rng.choice([None, None, instant(rng)]),
            pinned=rng.choice([None, True, False]),
            written_by=rng.choice([None, None, "bot", "helper"]),
        )
        want = sorted(
            (r for r in rows if where.matches(r)),
            key=lambda r: (r.created_at, r.memory_id),
            reverse=True,
        )
        assert driver.list(where, limit=1000) == want
        # Pages of three, each after the last row of the one before, cover it without gaps.
        pages: list[StoredRow] = []
        after = None
        while True:
            page = driver.list(where, limit=3, after=after)
            pages += page
            if len(page) < 3:
                break
            after = (page[-1].created_at, page[-1].memory_id)
        assert pages == want
    for row in rng.sample(rows, 15):
        history = [r for r in rows if r.memory_id == row.memory_id]
        assert driver.versions("acme", row.app, (row.subject,), row.memory_id) == history
        assert driver.versions("acme", row.app, ("p_nobody",), row.memory_id) == []
        assert driver.versions("globex", row.app, (row.subject,), row.memory_id) == []


def test_timestamps_round_trip_exactly_in_utc(driver: DbDriver) -> None:
    plus_five = timezone(timedelta(hours=5, minutes=30))
    cases = [
        datetime(2026, 3, 1, 12, 0, 0, 1, tzinfo=plus_five),
        datetime(1, 1, 1, 0, 0, 0, 0, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    for n, when in enumerate(cases):
        row = make_row(memory_id=memory_id(n), created_at=when, recorded_at=when, valid_from=when)
        driver.put(row)
        (stored,) = driver.versions("acme", "app", ("p_ada",), row.memory_id)
        assert stored.recorded_at == when
        assert stored.recorded_at.utcoffset() == timedelta(0)
        assert stored.recorded_at.isoformat() == when.astimezone(UTC).isoformat()
        assert (stored.created_at, stored.valid_from) == (when, when)
    # An instant one microsecond before a version starts does not see it.
    start = datetime(2026, 5, 5, 5, 5, 5, 500000, tzinfo=UTC)
    driver.put(make_row(memory_id=memory_id(99), valid_from=start, created_at=start))
    before = Filter(
        tenant="acme", app="app", subjects=("p_ada",), as_of=start - timedelta(microseconds=1)
    )
    at = dataclasses.replace(before, as_of=start)
    assert memory_id(99) not in {r.memory_id for r in driver.list(before, limit=100)}
    assert memory_id(99) in {r.memory_id for r in driver.list(at, limit=100)}


def test_search_never_loads_rows_without_a_query_term(driver: DbDriver) -> None:
    # Rank over many rows, then check which sealed rows the database returned whole.
    rng = random.Random(3)
    for n in range(200):
        terms, length = random_terms(rng, ["t_common", "t_other"], 5)
        driver.put(make_row(memory_id=memory_id(n), terms=terms, length=length))
    driver.put(make_row(memory_id=memory_id(999), terms={"t_rare": 1}, length=1))
    statements: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    event.listen(driver.engine, "before_cursor_execute", record)
    try:
        got = driver.search(
            Filter(tenant="acme", app="app", subjects=("p_ada",)), [{"t_rare"}], top_k=5
        )
    finally:
        event.remove(driver.engine, "before_cursor_execute", record)
    assert [row.memory_id for row, _ in got] == [memory_id(999)]
    sealed_reads = [s for s in statements if "sealed" in s]
    assert len(sealed_reads) == 1  # only the top-k rows are loaded whole
    assert "doc IN" in sealed_reads[0].replace("\n", " ")  # by document id


def test_expired_lists_current_memories_past_a_labels_cutoff(driver: DbDriver) -> None:
    rng = random.Random(5)
    rows = random_rows(rng, driver, 40)
    current = {r.memory_id: r for r in rows if r.valid_to is None}
    for _ in range(20):
        retention = rng.sample(
            [("health", instant(rng)), ("personal", instant(rng)), ("none", instant(rng))],
            rng.randint(0, 3),
        )
        for app in ("app", "other"):
            want = sorted(
                (r.subject, r.memory_id)
                for r in current.values()
                if r.app == app
                and any(label in r.labels and r.created_at < cutoff for label, cutoff in retention)
            )
            assert driver.expired("acme", app, retention) == want
            assert driver.expired("globex", app, retention) == []


def test_a_tie_block_across_the_cut_is_fetched_whole_and_ranked_exactly(
    driver: DbDriver,
) -> None:
    # 60 documents tie on score; which 5 come first is decided by trust, time and id alone.
    rng = random.Random(9)
    rows = [
        make_row(
            memory_id=memory_id(rng.randrange(10**9)),
            trust=rng.choice(TRUSTS[:2]),
            recorded_at=T0 + timedelta(microseconds=rng.randint(0, 4)),
            terms={"t_x": 1, "t_pad": 2},
            length=3,
        )
        for _ in range(60)
    ]
    rows += [
        make_row(memory_id=memory_id(10**9 + n), terms={"t_x": 2, "t_y": 1}, length=3)
        for n in range(3)
    ]
    rows += [
        make_row(memory_id=memory_id(2 * 10**9 + n), terms={"t_pad": 1}, length=1)
        for n in range(40)
    ]
    for row in rows:
        driver.put(row)
    # A kind rule: the SQL ranking (the live set's packed path has its own tie test).
    where = Filter(tenant="acme", app="app", subjects=("p_ada",), kinds=frozenset({"fact"}))
    with recorded_statements(driver) as seen:
        got = driver.search(where, [{"t_x"}], top_k=5)
    _same_ranking(got, bm25_rank(rows, [{"t_x"}], 5))
    assert any("raw >=" in statement for statement in seen)  # the tie block was fetched


def test_long_queries_and_repeated_tokens_take_the_plain_path_with_the_same_result(
    driver: DbDriver,
) -> None:
    rng = random.Random(4)
    vocabulary = [f"t_{i}" for i in range(120)]
    rows = random_rows(rng, driver, 50, vocabulary=vocabulary)
    everyone = Filter(
        tenant="acme", app="app", subjects=("p_ada", "p_bob", "tenant"), session="s1"
    )
    some = frozenset(r.memory_id for r in rng.sample(rows, 20))
    long_query = [{term} for term in rng.sample(vocabulary, 90)]  # more than 64 groups
    repeated = [["t_1", "t_1"], ["t_2"]]  # a token twice in one group counts twice
    for where in (everyone, dataclasses.replace(everyone, memory_ids=some)):
        matching = [r for r in rows if where.matches(r)]
        for query in (long_query, repeated):
            for top_k in (1, 7, 100):
                _same_ranking(
                    driver.search(where, query, top_k=top_k), bm25_rank(matching, query, top_k)
                )
