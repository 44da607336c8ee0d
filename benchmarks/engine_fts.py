"""Issue 19's measure: the SDK against the same engine's own plaintext full-text search.

Not a test. One process measures the SDK and the baseline a user would pick instead on the
same engine, over the same texts, call by call (the order flips every call, so both sides see
the same caches, disk and background load), and reports each of issue 19's goals as a ratio
and in absolute milliseconds (p50 and p95), met or not met::

    .venv/bin/python -m benchmarks.engine_fts                       # 1k, 10k, 100k
    .venv/bin/python -m benchmarks.engine_fts --sizes 1000,10000 --queries 100 \\
        --only recall,persons --out benchmarks/results/engine-fts.json
    .venv/bin/python -m benchmarks.engine_fts --render benchmarks/results/engine-fts.json

**Data.** The LoCoMo turns (``speaker: text``; read in place, :func:`benchmarks.locomo.load`),
shuffled once, then replicated until there are N: copy ``c`` of a turn swaps two adjacent
words (``c % 3 == 1``) or drops one (``c % 3 == 2``) and appends the number ``c``, so every
row is distinct. Texts the default injection check flags are left out (recall would screen
them, and the exactness check would then compare different corpora). Queries are the LoCoMo
questions that have at least one index term, shuffled once, cycled.

**Loading.** The SDK's stores are filled through the SDK's own sealing path:
:func:`benchmarks.speed.seal_rows` (``_sealing.seal``: the payload, AES-GCM envelope, blind
terms and pseudonym of ``remember``, anchored in the key store) and
:func:`benchmarks.stores.bulk_load` (the driver's ``bulk_put``, a transaction per 2,000
rows); ``remember_many`` itself is what the ``bulk`` goal times. Text-only stores are opened
with ``embedder=None`` and recalled with ``ranking="relevance"``; the ``vectors`` stores with
the default embedder (:func:`benchmarks.stores.default_embedder`, ``StaticEmbedder``) and
its sealed vectors (:func:`benchmarks.speed.seal_vectors`).

**Baselines, on identical terms.** Both engines index the SDK's own analysis of each text
(:func:`mainsdk_memory._text.index_terms`, what ``_sealing.seal`` blinds), and search the
analysis of the question (computed inside the timed call, as the SDK does):

- SQLite: an FTS5 table ``(person, text UNINDEXED, terms)`` with ``tokenize = "unicode61
  remove_diacritics 0 tokenchars '_'"`` (so each SDK term is one FTS5 token), the default
  rollback journal and ``synchronous = FULL`` (the SDK's durability); ``MATCH 'terms : ("a"
  OR "b")'`` ordered by ``bm25(fts, 0, 0, 1)``, ``LIMIT 10``;
- PostgreSQL: a table ``(id, person, text, tsv tsvector)`` with a GIN index on ``tsv`` (and a
  btree on ``person``), in the store's own database; the ``tsvector`` is written as a literal
  (``'term':1,3 …``) so the parser cannot split a term ('simple' would split ``a_b``); the
  query is ``tsv @@ 'a' | 'b'`` ordered by ``ts_rank``, ``LIMIT 10``; psycopg 3, autocommit.

That both sides index the same terms is checked, not assumed: every term's document
frequency in FTS5 (``fts5vocab``) and PostgreSQL (``ts_stat``) is compared with the SDK's.
bm25s (the issue's local-driver reference; ``pip install bm25s``, not a dependency) runs
beside the local driver's recalls, interleaved, over the same terms (:class:`Bm25s`); when it
is not installed its goal is reported as not measured, with the reason (:func:`_bm25s_reason`).

**Goals** (:func:`goals`): recall ÷ FTS (``DbDriver.search`` timed inside the same recalls,
so SDK and driver time split) with a sample of queries checked equal to
:func:`mainsdk_memory.drivers.bm25_rank` over the plaintext terms; 2,000 persons × 50; the
p50 of ``remember(formation=False)`` ÷ one autocommit INSERT, with the transactions and
statements per call (SQLAlchemy events on the driver's engine) and the fsyncs per call
(``os.fsync`` wrapped in this process, and every fsync syscall of a fresh process under
strace when it is installed); ``remember_many`` memories/s against ``COPY`` and
``executemany``; the local driver's first recall after open and peak RSS in fresh processes
against an FTS5 process; warm hybrid recall; bytes on disk. :func:`render` writes the
markdown tables.
"""

# ruff: noqa: RUF001, RUF002 - the tables print the multiplication and division signs
from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import json
import os
import pstats
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
AGENT = "speed"
"""The agent of every handle: the one :func:`benchmarks.speed.seal_rows` writes as (an agent
sees the memories it wrote)."""
PERSON = "ada"
TOP_K = 10
SECTIONS = ("recall", "persons", "remember", "bulk", "local", "vectors", "storage")
DB_DRIVERS = ("sqlite", "postgresql")
FTS5_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '_'"

__all__ = ["SECTIONS", "Plan", "goals", "main", "render", "run"]


@dataclass(frozen=True)
class Plan:
    """What to measure."""

    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    """Memories of one person at each recall point (SQLite and PostgreSQL)."""
    queries: int = 100
    """Timed recalls per point and side (after the warm-up)."""
    only: tuple[str, ...] = SECTIONS
    drivers: tuple[str, ...] = ("sqlite", "postgresql", "local")
    persons: int = 2_000
    per_person: int = 50
    remember_n: int = 100
    bulk_n: int = 5_000
    local_sizes: tuple[int, ...] | None = None
    """The local driver's points (default: ``sizes``)."""
    vector_sizes: tuple[int, ...] | None = None
    """The hybrid points (default: ``sizes``)."""
    exact_queries: int = 20
    profile_at: int = 10_000
    profile_queries: int = 10
    warmup: int = 5
    strace: bool = True
    """Count fsync syscalls of a fresh remembering process (local, SQLite) under strace."""

    @property
    def local_points(self) -> tuple[int, ...]:
        return self.sizes if self.local_sizes is None else self.local_sizes

    @property
    def vector_points(self) -> tuple[int, ...]:
        return self.sizes if self.vector_sizes is None else self.vector_sizes

    def wants(self, section: str) -> bool:
        return section in self.only

    def needed_texts(self) -> int:
        counts = [self.remember_n + self.warmup + 20]
        if self.wants("recall") or self.wants("storage"):
            counts += self.sizes
        if self.wants("persons") or self.wants("storage"):
            counts.append(self.persons * self.per_person)
        if self.wants("bulk"):
            counts.append(self.bulk_n)
        if self.wants("local"):
            counts += self.local_points
        if self.wants("vectors"):
            counts += self.vector_points
        return max(counts)


# --- small helpers -------------------------------------------------------------------------------


def latency(samples: Sequence[float]) -> dict[str, float | int]:
    """Nearest-rank p50, p95 and max, and the mean, of ``samples`` seconds, in ms."""
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)

    def pick(p: float) -> float:
        index = max(0, min(len(ordered) - 1, round(p * len(ordered) + 0.5) - 1))
        return round(ordered[index] * 1000.0, 3)

    return {
        "n": len(ordered), "p50_ms": pick(0.50), "p95_ms": pick(0.95),
        "max_ms": round(ordered[-1] * 1000.0, 3),
        "mean_ms": round(sum(ordered) / len(ordered) * 1000.0, 3),
    }


def _ratio(a: Any, b: Any) -> float | None:
    return None if not a or not b else round(float(a) / float(b), 3)


def _ratios(sdk: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    return {"ratio_p50": _ratio(sdk.get("p50_ms"), base.get("p50_ms")),
            "ratio_p95": _ratio(sdk.get("p95_ms"), base.get("p95_ms"))}


def _cycle(items: Sequence[Any], n: int) -> list[Any]:
    return [items[i % len(items)] for i in range(n)] if items else []


def interleaved(
    sides: Sequence[Callable[[Any], object]], calls: Sequence[Any], warmup: int
) -> list[list[float]]:
    """Each call's argument given to every side, the order flipping each call; seconds per
    side for the calls after the first ``warmup`` (which run on every side untimed)."""
    for argument in calls[:warmup]:
        for side in sides:
            side(argument)
    times: list[list[float]] = [[] for _ in sides]
    for i, argument in enumerate(calls[warmup:]):
        order = range(len(sides)) if i % 2 == 0 else range(len(sides) - 1, -1, -1)
        for j in order:
            started = time.perf_counter()
            sides[j](argument)
            times[j].append(time.perf_counter() - started)
    return times


def _load() -> list[float] | None:
    from benchmarks.machine import load_average

    return load_average()


def tree_state() -> dict[str, Any]:
    """The commit checked out and the files changed in the working tree (read only): what
    code the run measured, when others change it meanwhile."""
    def git(*args: str) -> str:
        done = subprocess.run(  # noqa: S603 - git, read only
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False,  # noqa: S607
            timeout=30,
        )
        return done.stdout.strip()

    try:
        return {"head": git("rev-parse", "HEAD"),
                "changed_files": [line[3:] for line in git("status", "--porcelain").splitlines()]}
    except OSError:
        return {"head": None, "changed_files": []}


def _bytes_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _quote_fts5(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _quote_ts(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def fts5_match(terms: Sequence[str], person: str | None = None) -> str | None:
    """The FTS5 MATCH expression of a query's terms (any of them), in ``person``'s rows."""
    distinct = list(dict.fromkeys(terms))
    if not distinct:
        return None
    expression = "terms : (" + " OR ".join(_quote_fts5(t) for t in distinct) + ")"
    return expression if person is None else f"person : {_quote_fts5(person)} AND {expression}"


def ts_vector(terms: Sequence[str]) -> str:
    """A ``tsvector`` literal of ``terms`` with their positions (no parser involved)."""
    positions: dict[str, list[str]] = {}
    for i, term in enumerate(terms[:16_383], start=1):
        found = positions.setdefault(term, [])
        if len(found) < 255:
            found.append(str(i))
    return " ".join(f"{_quote_ts(t)}:{','.join(p)}" for t, p in positions.items())


def ts_query(terms: Sequence[str]) -> str | None:
    """A ``tsquery`` literal: any of ``terms``."""
    distinct = list(dict.fromkeys(terms))
    return " | ".join(_quote_ts(t) for t in distinct) if distinct else None


# --- data ----------------------------------------------------------------------------------------


def _perturbed(text: str, copy: int) -> str:
    """Copy ``copy`` (≥ 1) of ``text``: two adjacent words swapped or one dropped, then
    ``copy`` appended."""
    words = text.split(" ")
    if copy % 3 == 1 and len(words) > 2:
        i = 1 + (copy * 7) % (len(words) - 2)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif copy % 3 == 2 and len(words) > 3:
        del words[1 + (copy * 5) % (len(words) - 1)]
    return " ".join(words) + f" {copy}"


@dataclass
class Data:
    """The texts (distinct, clean), the queries and how they were made."""

    texts: list[str]
    queries: list[str]
    summary: dict[str, Any]
    _terms: dict[str, list[str]] = field(default_factory=dict)

    def terms(self, text: str) -> list[str]:
        """The SDK's index terms of ``text`` (memoised)."""
        found = self._terms.get(text)
        if found is None:
            from mainsdk_memory._text import index_terms

            found = self._terms[text] = index_terms(text)
        return found


def build_data(n: int) -> Data:
    """At least ``n`` distinct texts from the LoCoMo turns, and the LoCoMo questions."""
    from benchmarks import locomo
    from mainsdk_memory._text import index_terms
    from mainsdk_memory.injection import DEFAULT_DETECTOR

    started = time.perf_counter()
    dataset = locomo.load(locomo.data_dir() / "locomo10.json")
    refused = set(dataset.refused_by_detector)
    originals = [
        turn.memory_text for c in dataset.conversations for turn in c.turns
        if f"{c.sample_id}/{turn.dia_id}" not in refused
    ]
    random.Random(19).shuffle(originals)
    texts: list[str] = []
    seen: set[str] = set()
    flagged = 0
    copy = 0
    while len(texts) < n:
        for base in originals:
            if len(texts) >= n:
                break
            text = base if copy == 0 else _perturbed(base, copy)
            if text in seen:
                continue
            if copy and DEFAULT_DETECTOR.check(text):
                flagged += 1
                continue
            seen.add(text)
            texts.append(text)
        copy += 1
    questions = list(dict.fromkeys(
        q.question for c in dataset.conversations for q in c.questions
        if index_terms(q.question)
    ))
    random.Random(7).shuffle(questions)
    return Data(texts, questions, {
        "source": "LoCoMo locomo10.json (read in place)",
        "turns": sum(len(c.turns) for c in dataset.conversations),
        "turns_refused_by_injection_check": len(refused),
        "copies": copy, "texts": len(texts), "perturbed_copies_flagged_and_skipped": flagged,
        "questions_with_terms": len(questions),
        "seconds": round(time.perf_counter() - started, 1),
    })


# --- plaintext baselines -------------------------------------------------------------------------


class SqliteFts:
    """A plaintext FTS5 table over the SDK's terms, in its own SQLite file."""

    label = "SQLite FTS5 bm25()"

    def __init__(self, path: Path, data: Data) -> None:
        self.path = path
        self.data = data
        self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.connection.execute("PRAGMA synchronous = FULL")
        self.connection.execute(
            f"CREATE VIRTUAL TABLE fts USING fts5(person, text UNINDEXED, terms, "
            f"tokenize = \"{FTS5_TOKENIZE}\")"
        )

    def _row(self, person: str, text: str) -> tuple[str, str, str]:
        return (person, text, " ".join(self.data.terms(text)))

    def load(self, person_texts: Sequence[tuple[str, str]]) -> float:
        """Seconds to analyse and insert every ``(person, text)`` in one transaction."""
        started = time.perf_counter()
        rows = [self._row(p, t) for p, t in person_texts]
        self.connection.execute("BEGIN")
        self.connection.executemany("INSERT INTO fts (person, text, terms) VALUES (?, ?, ?)", rows)
        self.connection.execute("COMMIT")
        return time.perf_counter() - started

    def insert(self, person: str, text: str) -> None:
        """One autocommit INSERT (the text analysed first)."""
        self.connection.execute(
            "INSERT INTO fts (person, text, terms) VALUES (?, ?, ?)", self._row(person, text)
        )

    def search(self, query: str, person: str | None = None) -> list[tuple[Any, ...]]:
        match = fts5_match(self.data.terms(query), person)
        if match is None:
            return []
        return self.connection.execute(
            "SELECT rowid, text, bm25(fts, 0.0, 0.0, 1.0) AS score FROM fts WHERE fts MATCH ? "
            "ORDER BY score LIMIT ?", (match, TOP_K),
        ).fetchall()

    def document_frequencies(self) -> Counter[str]:
        self.connection.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'col')")
        rows = self.connection.execute(
            "SELECT term, doc FROM vocab WHERE col = 'terms'").fetchall()
        self.connection.execute("DROP TABLE vocab")
        return Counter({term: doc for term, doc in rows})

    def size(self) -> dict[str, int]:
        """Bytes of the file as loaded, and after VACUUM."""
        loaded = self.path.stat().st_size
        self.connection.execute("VACUUM")
        return {"as_loaded": loaded, "after_vacuum": self.path.stat().st_size}

    def close(self) -> None:
        self.connection.close()


def _libpq(url: str, database: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return str(parsed.render_as_string(hide_password=False))


class PgFts:
    """A plaintext ``tsvector`` + GIN table over the SDK's terms, in the store's database."""

    label = "PostgreSQL tsvector + GIN, ts_rank"

    def __init__(self, store_url: str, data: Data, table: str = "fts") -> None:
        import psycopg

        self.data = data
        self.table = table
        self.connection = psycopg.connect(_libpq(store_url), autocommit=True)
        self.connection.execute(
            f"CREATE TABLE public.{table} (id bigserial PRIMARY KEY, person text NOT NULL, "
            "text text NOT NULL, tsv tsvector NOT NULL)".encode())
        self.connection.execute(f"CREATE INDEX ON public.{table} USING gin (tsv)".encode())
        self.connection.execute(f"CREATE INDEX ON public.{table} (person)".encode())
        self._select = (
            f"SELECT id, text, ts_rank(tsv, %(q)s::tsquery) AS r FROM public.{table} "  # noqa: S608
            "WHERE tsv @@ %(q)s::tsquery ORDER BY r DESC LIMIT %(k)s")
        self._select_person = (
            f"SELECT id, text, ts_rank(tsv, %(q)s::tsquery) AS r FROM public.{table} "  # noqa: S608
            "WHERE person = %(p)s AND tsv @@ %(q)s::tsquery ORDER BY r DESC LIMIT %(k)s")
        self._insert = (
            f"INSERT INTO public.{table} (person, text, tsv) "  # noqa: S608
            "VALUES (%s, %s, %s::tsvector)")

    def load(self, person_texts: Sequence[tuple[str, str]]) -> float:
        """Seconds to analyse and ``COPY`` every ``(person, text)`` (the GIN index present)."""
        started = time.perf_counter()
        rows = [(p, t, ts_vector(self.data.terms(t))) for p, t in person_texts]
        with self.connection.cursor() as cursor, cursor.copy(
            f"COPY public.{self.table} (person, text, tsv) FROM STDIN".encode()
        ) as copy:
            for row in rows:
                copy.write_row(row)
        return time.perf_counter() - started

    def settle(self) -> None:
        self.connection.execute(f"VACUUM ANALYZE public.{self.table}".encode())

    def insert(self, person: str, text: str) -> None:
        """One autocommit INSERT (the text analysed first)."""
        self.connection.execute(
            self._insert.encode(), (person, text, ts_vector(self.data.terms(text))))

    def search(self, query: str, person: str | None = None) -> list[tuple[Any, ...]]:
        q = ts_query(self.data.terms(query))
        if q is None:
            return []
        if person is None:
            return self.connection.execute(self._select.encode(), {"q": q, "k": TOP_K}).fetchall()
        return self.connection.execute(
            self._select_person.encode(), {"q": q, "p": person, "k": TOP_K}).fetchall()

    def document_frequencies(self) -> Counter[str]:
        rows = self.connection.execute(
            f"SELECT word, ndoc FROM ts_stat('SELECT tsv FROM public.{self.table}')".encode()  # noqa: S608
        ).fetchall()
        return Counter({word: ndoc for word, ndoc in rows})

    def size(self) -> dict[str, int]:
        self.connection.execute(f"VACUUM ANALYZE public.{self.table}".encode())
        row = self.connection.execute(
            f"SELECT pg_total_relation_size('public.{self.table}')".encode()).fetchone()
        return {"pg_total_relation_size": int(row[0]) if row else 0}

    def drop(self) -> None:
        self.connection.execute(f"DROP TABLE IF EXISTS public.{self.table}".encode())

    def close(self) -> None:
        self.connection.close()


class Bm25s:
    """bm25s (sparse-matrix BM25, in memory) over the SDK's index terms of the same texts;
    the query analysed inside the timed call, as the SDK does. A speed reference: its
    scoring variant (Lucene's) is not checked equal to the SDK's."""

    label = "bm25s (in memory, the SDK's terms)"

    def __init__(self, data: Data, texts: Sequence[str]) -> None:
        import bm25s

        self._data = data
        self._retriever = bm25s.BM25()
        self._retriever.index([data.terms(text) or ["_"] for text in texts],
                              show_progress=False)

    def search(self, query: str) -> Any:
        from mainsdk_memory._text import query_terms

        terms = sorted({term for group in query_terms(query) for term in group})
        if not terms:
            return []
        return self._retriever.retrieve([terms], k=TOP_K, show_progress=False)


def _bm25s_reason() -> str | None:
    if importlib_util.find_spec("bm25s") is None:
        return "bm25s is not installed in .venv (pip show bm25s: not found); not measured"
    return None


def _terms_check(expected: Counter[str], found: Counter[str]) -> dict[str, Any]:
    differing = sum(1 for term in set(expected) | set(found) if expected[term] != found[term])
    return {"sdk_terms": len(expected), "baseline_terms": len(found),
            "differing_terms": differing, "identical": differing == 0}


def _expected_df(data: Data, texts: Sequence[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(data.terms(text)))
    return counts


# --- the SDK side --------------------------------------------------------------------------------


@dataclass
class Run:
    """What one run shares: the plan, the data, a workspace, sealed rows."""

    plan: Plan
    data: Data
    workspace: Any
    progress: Callable[[str], None]
    _rows: list[Any] = field(default_factory=list)
    _vectors: list[bytes] = field(default_factory=list)
    _person_rows: list[Any] = field(default_factory=list)
    sealing: dict[str, Any] = field(default_factory=dict)

    def open(self, driver: str, *, default: bool = False) -> tuple[str, Any]:
        """A fresh store on ``driver`` and a Memory on it (``embedder=None`` unless
        ``default``: the default install's embedder)."""
        from benchmarks.stores import APP, SteppingClock, make_configs
        from mainsdk_memory import Memory

        url = self.workspace.new_url(driver)
        if default:
            memory = Memory.open(url, keys=self.workspace.keys, app=APP, clock=SteppingClock())
        else:
            memory = make_configs([driver])[driver].open(url, self.workspace.keys,
                                                         SteppingClock())
        return url, memory

    def rows(self, memory: Any, n: int) -> list[Any]:
        """``n`` rows of PERSON sealed by the SDK's own code (sealed once, prefixes reused:
        one key store, so every store of the run opens them)."""
        from benchmarks.speed import seal_rows
        from benchmarks.stores import TENANT
        from mainsdk_memory import tenant

        if len(self._rows) < n:
            keys = self.workspace.keys
            before = _bytes_of(keys)
            started = time.perf_counter()
            with tenant.use(TENANT):
                more = seal_rows(memory, PERSON, self.data.texts[len(self._rows):n])
            self._rows += more
            self.sealing[f"person rows up to {n}"] = {
                "rows": len(more), "seconds": round(time.perf_counter() - started, 2),
                "rows_per_s": round(len(more) / max(time.perf_counter() - started, 1e-9)),
                "key_store_growth_bytes": _bytes_of(keys) - before,
            }
        return self._rows[:n]

    def vectors(self, memory: Any, n: int) -> list[bytes]:
        from benchmarks.speed import seal_vectors
        from benchmarks.stores import TENANT, default_embedder
        from mainsdk_memory import tenant

        rows = self.rows(memory, n)
        if len(self._vectors) < n:
            started = time.perf_counter()
            with tenant.use(TENANT):
                self._vectors += seal_vectors(
                    memory, PERSON, rows[len(self._vectors):n],
                    self.data.texts[len(self._vectors):n], default_embedder())
            self.sealing[f"vectors up to {n}"] = {
                "seconds": round(time.perf_counter() - started, 2)}
        return self._vectors[:n]

    def person_rows(self, memory: Any) -> list[Any]:
        from benchmarks.speed import seal_rows
        from benchmarks.stores import TENANT
        from mainsdk_memory import tenant

        if not self._person_rows:
            plan = self.plan
            started = time.perf_counter()
            with tenant.use(TENANT):
                for i in range(plan.persons):
                    texts = self.data.texts[i * plan.per_person:(i + 1) * plan.per_person]
                    self._person_rows += seal_rows(memory, _sdk_person(i), texts)
            self.sealing["persons"] = {
                "rows": len(self._person_rows),
                "seconds": round(time.perf_counter() - started, 2)}
        return self._person_rows


def _sdk_person(i: int) -> str:
    return f"person-{i:05d}"


def _fts_person(i: int) -> str:
    return f"p{i:05d}"


def _load_rows(memory: Any, rows: Sequence[Any], vectors: Sequence[bytes] | None = None) -> float:
    from benchmarks.stores import bulk_load

    started = time.perf_counter()
    bulk_load(memory, rows, vectors)
    return time.perf_counter() - started


class SearchTimer:
    """Times the driver's own ``search`` inside each recall (an instance attribute wraps it:
    the core reaches the driver through its guarded store, so every call passes here)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.inner = driver.search
        self.last = 0.0
        self.installed = False
        try:
            driver.search = self._timed
            self.installed = True
        except (AttributeError, TypeError):
            pass

    def _timed(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.last += time.perf_counter() - started

    def remove(self) -> None:
        if self.installed:
            with contextlib.suppress(AttributeError):
                del self.driver.search


class EngineCounter:
    """Transactions (BEGIN / COMMIT / ROLLBACK) and statements on a SQLAlchemy engine."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.counts: Counter[str] = Counter()
        self._hooks = {
            "begin": lambda *_: self.counts.update(["begin"]),
            "commit": lambda *_: self.counts.update(["commit"]),
            "rollback": lambda *_: self.counts.update(["rollback"]),
            "before_cursor_execute": lambda *_: self.counts.update(["statements"]),
        }

    def __enter__(self) -> EngineCounter:
        from sqlalchemy import event

        for name, hook in self._hooks.items():
            event.listen(self.engine, name, hook)
        return self

    def __exit__(self, *_: object) -> None:
        from sqlalchemy import event

        for name, hook in self._hooks.items():
            event.remove(self.engine, name, hook)

    def per_call(self, calls: int) -> dict[str, float]:
        return {name: round(self.counts[name] / calls, 2)
                for name in ("begin", "commit", "rollback", "statements")}


@contextlib.contextmanager
def counting_fsyncs() -> Iterator[Counter[str]]:
    """Counts ``os.fsync`` and ``os.fdatasync`` calls made from Python in this process."""
    counts: Counter[str] = Counter()
    real_fsync = os.fsync
    real_fdatasync = getattr(os, "fdatasync", None)

    def fsync(fd: Any) -> None:
        counts["fsync"] += 1
        real_fsync(fd)

    def fdatasync(fd: Any) -> None:
        counts["fdatasync"] += 1
        assert real_fdatasync is not None
        real_fdatasync(fd)

    os.fsync = fsync
    if real_fdatasync is not None:
        os.fdatasync = fdatasync
    try:
        yield counts
    finally:
        os.fsync = real_fsync
        if real_fdatasync is not None:
            os.fdatasync = real_fdatasync


def _engine_of(memory: Any) -> Any | None:
    return getattr(memory.driver, "engine", None)


def _profile(call: Callable[[], object], top: int = 25) -> list[dict[str, Any]]:
    """The ``top`` entries by cumulative time of one profiled call."""
    profile = cProfile.Profile()
    profile.enable()
    call()
    profile.disable()
    stats = pstats.Stats(profile)
    entries = []
    for (file, line, name), (_cc, ncalls, tottime, cumtime, _callers) in (
        stats.stats.items()  # type: ignore[attr-defined]
    ):
        short = file
        for marker in ("site-packages/", "/work/main/"):
            if marker in short:
                short = short.split(marker, 1)[1]
        entries.append({"function": f"{short}:{line}({name})", "ncalls": ncalls,
                        "tottime_ms": round(tottime * 1000, 2),
                        "cumtime_ms": round(cumtime * 1000, 2)})
    entries.sort(key=lambda e: -e["cumtime_ms"])
    return entries[:top]


def _exactness(
    handle: Any, rows: Sequence[Any], data: Data, queries: Sequence[str]
) -> dict[str, Any]:
    """The SDK's recall against :func:`bm25_rank` over the same rows with their plaintext
    terms (same ids, times and trust, so ties break alike): ids in order and scores."""
    from mainsdk_memory.drivers import bm25_rank

    plain = [
        dataclasses.replace(row, terms=dict(Counter(data.terms(text))),
                            length=len(data.terms(text)))
        for row, text in zip(rows, data.texts, strict=False)
    ]
    equal = 0
    gap = 0.0
    mismatches: list[int] = []
    for i, query in enumerate(queries):
        got = [(hit.record.id, hit.score)
               for hit in handle.recall(query, top_k=TOP_K, ranking="relevance")]
        want = [(row.memory_id, score)
                for row, score in bm25_rank(plain, [[t] for t in data.terms(query)], TOP_K)]
        if [g for g, _ in got] == [w for w, _ in want]:
            equal += 1
            gap = max([gap, *(abs(a - b) for (_, a), (_, b) in zip(got, want, strict=True))])
        else:
            mismatches.append(i)
    return {"queries": len(queries), "equal": equal, "max_score_difference": gap,
            "mismatched_query_positions": mismatches[:10]}


# --- recall (one person) -------------------------------------------------------------------------


def _baseline(run: Run, driver: str, url: str, name: str) -> SqliteFts | PgFts:
    if driver == "postgresql":
        return PgFts(url, run.data, name)
    return SqliteFts(run.workspace.root / f"{name}-{time.monotonic_ns()}.db", run.data)


def _release_baseline(baseline: SqliteFts | PgFts) -> None:
    if isinstance(baseline, PgFts):
        with contextlib.suppress(Exception):
            baseline.drop()
        baseline.close()
    else:
        baseline.close()
        baseline.path.unlink(missing_ok=True)


def _sdk_size(run: Run, driver: str, url: str, memory: Any) -> dict[str, Any]:
    """Bytes of the SDK's store on disk (the memory must be closed for the SQLite VACUUM)."""
    if driver == "postgresql":
        from sqlalchemy.engine import make_url

        database = make_url(url).database
        pg = run.workspace.postgres
        pg.execute("VACUUM ANALYZE", database)
        row = pg.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'mainsdk_memory' AND c.relkind IN ('r', 'm')", database)
        return {"pg_total_relation_size": int(row[0][0]),
                "what": "sum of pg_total_relation_size (heap, indexes, TOAST) of every table "
                        "in schema mainsdk_memory, after VACUUM ANALYZE"}
    if driver == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        loaded = path.stat().st_size
        memory.close()
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("VACUUM")
        return {"as_loaded": loaded, "after_vacuum": path.stat().st_size,
                "what": "the store's SQLite file, as loaded and after VACUUM"}
    folder = Path(url.removeprefix("local:"))
    return {"as_loaded": _bytes_of(folder), "what": "every file in the store's folder"}


def _storage_row(sdk: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    left = sdk.get("after_vacuum", sdk.get("pg_total_relation_size", sdk.get("as_loaded")))
    right = base.get("after_vacuum", base.get("pg_total_relation_size", base.get("as_loaded")))
    return {"sdk": sdk, "baseline": base, "ratio": _ratio(left, right),
            "sdk_mib": round(left / 2**20, 2) if left else None,
            "baseline_mib": round(right / 2**20, 2) if right else None}


def recall_point(
    run: Run, driver: str, n: int, *, timed: bool, local: bool = False
) -> dict[str, Any]:
    """One person with ``n`` memories: recall ÷ FTS interleaved, the driver's share, the
    exactness sample, transactions per recall, a profile; storage; for the local driver the
    first recall after open and peak RSS in fresh processes."""
    from benchmarks.stores import TENANT
    from mainsdk_memory import tenant

    plan, data = run.plan, run.data
    url, memory = run.open(driver)
    baseline = _baseline(run, driver, url, "fts")
    point: dict[str, Any] = {"memories": n, "baseline": baseline.label}
    closed = False
    try:
        rows = run.rows(memory, n)
        point["load_s"] = round(_load_rows(memory, rows), 2)
        run.workspace.settle(url)
        point["baseline_load_s"] = round(baseline.load([(_fts_person(0), t)
                                                        for t in data.texts[:n]]), 2)
        if isinstance(baseline, PgFts):
            baseline.settle()
        point["same_terms"] = _terms_check(_expected_df(data, data.texts[:n]),
                                           baseline.document_frequencies())
        if timed:
            with tenant.use(TENANT):
                handle = memory.acting_for(PERSON, agent=AGENT)
                queries = _cycle(data.queries, plan.warmup + plan.queries)
                started = time.perf_counter()
                handle.recall(queries[0], top_k=TOP_K, ranking="relevance")
                point["first_recall_in_process_ms"] = round(
                    (time.perf_counter() - started) * 1000, 2)
                timer = SearchTimer(memory.driver)
                driver_times: list[float] = []

                def sdk(query: str) -> None:
                    timer.last = 0.0
                    handle.recall(query, top_k=TOP_K, ranking="relevance")
                    driver_times.append(timer.last)

                sides: list[Callable[[Any], object]] = [sdk, baseline.search]
                if local and _bm25s_reason() is None:
                    sides.append(Bm25s(data, data.texts[:n]).search)
                times = interleaved(sides, queries, plan.warmup)
                timer.remove()
                point["sdk"] = latency(times[0])
                point["baseline_ms"] = latency(times[1])
                point.update(_ratios(point["sdk"], point["baseline_ms"]))
                if len(times) > 2:
                    point["bm25s_ms"] = latency(times[2])
                    point["ratio_p50_bm25s"] = _ratio(point["sdk"]["p50_ms"],
                                                      point["bm25s_ms"]["p50_ms"])
                if timer.installed:
                    searched = driver_times[plan.warmup:]
                    point["driver_search"] = latency(searched)
                    point["sdk_outside_driver"] = latency(
                        [a - b for a, b in zip(times[0], searched, strict=True)])
                    point["driver_search_share_of_recall"] = round(
                        sum(searched) / max(sum(times[0]), 1e-12), 3)
                point["exact"] = _exactness(handle, rows, data,
                                            data.queries[:plan.exact_queries])
                engine = _engine_of(memory)
                if engine is not None:
                    with EngineCounter(engine) as counter:
                        for query in queries[:5]:
                            handle.recall(query, top_k=TOP_K, ranking="relevance")
                    point["per_recall"] = counter.per_call(5)
                if driver in DB_DRIVERS and n == plan.profile_at:
                    point["profile"] = {
                        "recalls": plan.profile_queries,
                        "top_cumulative": _profile(lambda: [
                            handle.recall(q, top_k=TOP_K, ranking="relevance")
                            for q in queries[:plan.profile_queries]]),
                    }
            if local:
                memory.close()
                closed = True
                point["cold"] = _local_cold(run, url, baseline, queries[:2])
        if plan.wants("storage"):
            base_size = baseline.size()
            sdk_size = _sdk_size(run, driver, url, memory)
            closed = closed or driver == "sqlite"
            point["storage"] = _storage_row(sdk_size, base_size)
    finally:
        if not closed:
            memory.close()
        _release_baseline(baseline)
        run.workspace.release(url)
    return point


# --- fresh processes (local cold start, RSS, fsync syscalls) -------------------------------------


def _child(command: dict[str, Any], strace_out: Path | None = None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.engine_fts", "--child", json.dumps(command)]
    if strace_out is not None:
        argv = ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(strace_out),
                *argv]
    done = subprocess.run(  # noqa: S603 - our own interpreter and module (and strace)
        argv, cwd=REPO, capture_output=True, text=True, check=True, timeout=3600,
    )
    parsed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed


def _run_child(command: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.rss import peak_rss_mib

    kind = command["kind"]
    if kind == "fts5-cold":
        after_import = peak_rss_mib()
        started = time.perf_counter()
        connection = sqlite3.connect(command["path"])
        opened = time.perf_counter()
        timings = []
        for match in command["matches"]:
            began = time.perf_counter()
            connection.execute(
                "SELECT rowid, text, bm25(fts, 0.0, 0.0, 1.0) AS score FROM fts "
                "WHERE fts MATCH ? ORDER BY score LIMIT ?", (match, TOP_K)).fetchall()
            timings.append(round((time.perf_counter() - began) * 1000, 2))
        connection.close()
        return {"after_import_mib": after_import, "peak_mib": peak_rss_mib(),
                "open_ms": round((opened - started) * 1000, 2), "recalls_ms": timings}
    from benchmarks.stores import APP, TENANT
    from mainsdk_memory import Memory, tenant

    after_import = peak_rss_mib()
    started = time.perf_counter()
    with Memory.open(command["url"], keys=command["keys"], app=APP, embedder=None) as memory, \
            tenant.use(TENANT):
        opened = time.perf_counter()
        handle = memory.acting_for(command.get("person", PERSON), agent=AGENT)
        timings = []
        if kind == "local-cold":
            for query in command["queries"]:
                began = time.perf_counter()
                handle.recall(query, top_k=TOP_K, ranking="relevance")
                timings.append(round((time.perf_counter() - began) * 1000, 2))
        else:  # "remember": the strace run
            for text in command["texts"]:
                handle.remember(text, formation=False)
    return {"after_import_mib": after_import, "peak_mib": peak_rss_mib(),
            "open_ms": round((opened - started) * 1000, 2), "recalls_ms": timings}


def _local_cold(
    run: Run, url: str, baseline: SqliteFts | PgFts, queries: Sequence[str]
) -> dict[str, Any]:
    """The first recall after open, and peak RSS, of a fresh process on the local store,
    against a fresh process that opens the FTS5 file and runs the same first queries (the
    MATCH built here, so that process imports nothing of the SDK)."""
    sdk = _child({"kind": "local-cold", "url": url, "keys": str(run.workspace.keys),
                  "queries": list(queries)})
    assert isinstance(baseline, SqliteFts)
    matches = [fts5_match(run.data.terms(q)) for q in queries]
    fts = _child({"kind": "fts5-cold", "path": str(baseline.path),
                  "matches": [m for m in matches if m]})
    return {
        "sdk": sdk, "fts5": fts,
        "first_recall_ms": sdk["recalls_ms"][0], "second_recall_ms": sdk["recalls_ms"][1],
        "fts5_first_query_ms": fts["recalls_ms"][0],
        "ratio_first_recall": _ratio(sdk["recalls_ms"][0], fts["recalls_ms"][0]),
        "ratio_peak_rss": _ratio(sdk["peak_mib"], fts["peak_mib"]),
    }


def _strace_fsyncs(run: Run, driver: str, texts: Sequence[str], k: int = 20) -> dict[str, Any]:
    """fsync + fdatasync syscalls per remember of a fresh process (every thread; the key
    store's and SQLite's own syncs included): a run of ``k`` remembers minus a run of none."""
    if shutil.which("strace") is None:
        return {"status": "not run", "reason": "strace is not installed"}
    counts = []
    for texts_run in ([], list(texts[:k])):
        url = run.workspace.new_url(driver)
        out = run.workspace.root / f"strace-{time.monotonic_ns()}.txt"
        try:
            _child({"kind": "remember", "url": url, "keys": str(run.workspace.keys),
                    "person": "strace", "texts": ["first"]})  # the store made first
            _child({"kind": "remember", "url": url, "keys": str(run.workspace.keys),
                    "person": "strace", "texts": texts_run}, strace_out=out)
            total = 0
            for line in out.read_text().splitlines():
                parts = line.split()
                if parts and parts[-1] in ("fsync", "fdatasync"):
                    total += int(parts[3])
            counts.append(total)
        except (subprocess.CalledProcessError, OSError, ValueError) as exc:
            return {"status": "not run", "reason": f"strace run failed: {exc}"}
        finally:
            out.unlink(missing_ok=True)
            run.workspace.release(url)
    return {"status": "ok", "remembers": k, "fsync_syscalls_open_only": counts[0],
            "fsync_syscalls_with_remembers": counts[1],
            "per_remember": round((counts[1] - counts[0]) / k, 2)}


# --- persons -------------------------------------------------------------------------------------


def persons_point(run: Run, driver: str, *, timed: bool) -> dict[str, Any]:
    """2,000 persons × 50: recall of a random person ÷ FTS with a person column."""
    from benchmarks.stores import TENANT
    from mainsdk_memory import tenant

    plan, data = run.plan, run.data
    url, memory = run.open(driver)
    baseline = _baseline(run, driver, url, "fts_persons")
    point: dict[str, Any] = {"persons": plan.persons, "memories_per_person": plan.per_person,
                             "baseline": baseline.label + ", person column"}
    closed = False
    try:
        rows = run.person_rows(memory)
        point["load_s"] = round(_load_rows(memory, rows), 2)
        run.workspace.settle(url)
        point["baseline_load_s"] = round(baseline.load([
            (_fts_person(i // plan.per_person), text)
            for i, text in enumerate(data.texts[:plan.persons * plan.per_person])
        ]), 2)
        if isinstance(baseline, PgFts):
            baseline.settle()
        if timed:
            rng = random.Random(8)
            with tenant.use(TENANT):
                calls = []
                for query in _cycle(data.queries, plan.warmup + plan.queries):
                    i = rng.randrange(plan.persons)
                    calls.append((memory.acting_for(_sdk_person(i), agent=AGENT),
                                  _fts_person(i), query))
                times = interleaved([
                    lambda c: c[0].recall(c[2], top_k=TOP_K, ranking="relevance"),
                    lambda c: baseline.search(c[2], person=c[1]),
                ], calls, plan.warmup)
            point["sdk"] = latency(times[0])
            point["baseline_ms"] = latency(times[1])
            point.update(_ratios(point["sdk"], point["baseline_ms"]))
        if plan.wants("storage"):
            base_size = baseline.size()
            sdk_size = _sdk_size(run, driver, url, memory)
            closed = driver == "sqlite"
            point["storage"] = _storage_row(sdk_size, base_size)
    finally:
        if not closed:
            memory.close()
        _release_baseline(baseline)
        run.workspace.release(url)
    return point


# --- remember and bulk ---------------------------------------------------------------------------


def remember_point(run: Run, driver: str) -> dict[str, Any]:
    """``remember(formation=False)`` ÷ one autocommit INSERT into the FTS table, interleaved;
    transactions and statements per remember; fsyncs per remember."""
    from benchmarks.stores import TENANT
    from mainsdk_memory import tenant

    plan, data = run.plan, run.data
    url, memory = run.open(driver)
    baseline = _baseline(run, driver if driver != "local" else "sqlite", url, "fts_writes")
    point: dict[str, Any] = {"baseline": baseline.label + ": one autocommit INSERT"}
    texts = data.texts[: plan.warmup + plan.remember_n + 10]
    try:
        with tenant.use(TENANT):
            handle = memory.acting_for(PERSON, agent=AGENT)
            calls = texts[: plan.warmup + plan.remember_n]
            times = interleaved([
                lambda t: handle.remember(t, formation=False),
                lambda t: baseline.insert(_fts_person(0), t),
            ], calls, plan.warmup)
            point["sdk"] = latency(times[0])
            point["baseline_ms"] = latency(times[1])
            point.update(_ratios(point["sdk"], point["baseline_ms"]))
            extra = texts[plan.warmup + plan.remember_n:]
            engine = _engine_of(memory)
            with counting_fsyncs() as fsyncs, (
                EngineCounter(engine) if engine is not None else contextlib.nullcontext()
            ) as counter:
                for text in extra:
                    handle.remember(text, formation=False)
            point["counted_remembers"] = len(extra)
            if counter is not None:
                point["per_remember"] = counter.per_call(len(extra))
            point["python_fsyncs_per_remember"] = round(
                (fsyncs["fsync"] + fsyncs["fdatasync"]) / len(extra), 2)
        if driver != "postgresql" and plan.strace:
            point["fsync_syscalls"] = _strace_fsyncs(run, driver, data.texts[-20:])
    finally:
        memory.close()
        _release_baseline(baseline)
        run.workspace.release(url)
    return point


def bulk_point(run: Run, driver: str) -> dict[str, Any]:
    """``remember_many`` (batches of 500, formation off) in memories/s, text-only and with the
    default embedder, against the plaintext bulk load, run before and after the SDK's."""
    from benchmarks.stores import TENANT
    from mainsdk_memory import tenant

    plan, data = run.plan, run.data
    texts = data.texts[: plan.bulk_n]
    point: dict[str, Any] = {"memories": len(texts), "batch": 500}
    base_driver = "postgresql" if driver == "postgresql" else "sqlite"
    rates: list[float] = []
    point["baseline"] = ("PostgreSQL COPY into the tsvector + GIN table" if base_driver ==
                         "postgresql" else "SQLite FTS5 executemany, one transaction")

    def plain() -> None:
        url = run.workspace.new_url(base_driver) if base_driver == "postgresql" else ""
        baseline = _baseline(run, base_driver, url, "fts_bulk")
        try:
            seconds = baseline.load([(_fts_person(0), t) for t in texts])
            rates.append(len(texts) / seconds)
        finally:
            _release_baseline(baseline)
            if url:
                run.workspace.release(url)

    plain()
    for name, default in (("embedder=None", False), ("default embedder", True)):
        url, memory = run.open(driver, default=default)
        try:
            with tenant.use(TENANT):
                handle = memory.acting_for(PERSON, agent=AGENT)
                started = time.perf_counter()
                records = handle.remember_many([{"text": t} for t in texts], batch=500,
                                               formation=False)
                seconds = time.perf_counter() - started
            assert len(records) == len(texts)
            point[name] = {"seconds": round(seconds, 2),
                           "per_s": round(len(texts) / seconds, 1),
                           "embedder": None if memory.embedder is None else memory.embedder.name}
        finally:
            memory.close()
            run.workspace.release(url)
    plain()
    point["baseline_per_s"] = [round(r, 1) for r in rates]
    mean = sum(rates) / len(rates)
    for name in ("embedder=None", "default embedder"):
        point[name]["baseline_per_s_mean"] = round(mean, 1)
        point[name]["ratio_baseline_over_sdk"] = _ratio(mean, point[name]["per_s"])
    return point


# --- vectors -------------------------------------------------------------------------------------


def vectors_point(run: Run, driver: str, n: int) -> dict[str, Any]:
    """Warm hybrid recall (default embedder, ``ranking="relevance"``) with ``n`` memories,
    interleaved with text recall on the same store and numpy brute force over the same
    (plain) vectors."""
    import numpy as np

    from benchmarks.stores import TENANT, default_embedder
    from mainsdk_memory import tenant

    plan, data = run.plan, run.data
    url, memory = run.open(driver, default=True)
    point: dict[str, Any] = {"memories": n, "embedder": getattr(memory.embedder, "name", None)}
    try:
        rows = run.rows(memory, n)
        vectors = run.vectors(memory, n)
        point["load_s"] = round(_load_rows(memory, rows, vectors), 2)
        run.workspace.settle(url)
        embedder = default_embedder()
        matrix = np.asarray(embedder.embed(data.texts[:n]), dtype=np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

        def brute(query: str) -> Any:
            q = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
            scores = matrix @ q
            top = np.argpartition(-scores, min(TOP_K, len(scores) - 1))[:TOP_K]
            return top[np.argsort(-scores[top])]

        with tenant.use(TENANT):
            handle = memory.acting_for(PERSON, agent=AGENT)
            queries = _cycle(data.queries, plan.warmup + plan.queries)
            started = time.perf_counter()
            handle.recall(queries[0], top_k=TOP_K, ranking="relevance")
            point["first_recall_ms"] = round((time.perf_counter() - started) * 1000, 2)
            times = interleaved([
                lambda q: handle.recall(q, top_k=TOP_K, ranking="relevance"),
                lambda q: handle.recall(q, top_k=TOP_K, ranking="relevance", mode="text"),
                brute,
            ], queries, plan.warmup)
        point["hybrid"] = latency(times[0])
        point["text_same_store"] = latency(times[1])
        point["numpy_brute_force"] = latency(times[2])
        point["ratio_p50_vs_numpy"] = _ratio(point["hybrid"].get("p50_ms"),
                                             point["numpy_brute_force"].get("p50_ms"))
    finally:
        memory.close()
        run.workspace.release(url)
    return point


# --- the run -------------------------------------------------------------------------------------


def run(plan: Plan, progress: Callable[[str], None] = lambda _: None,
        workdir: Path | None = None) -> dict[str, Any]:
    """Every measurement of ``plan``; the result as a JSON-ready dict."""
    from benchmarks.machine import describe
    from benchmarks.stores import Workspace

    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="mainsdk-engine-fts-", dir=workdir))
    started = time.perf_counter()
    result: dict[str, Any] = {"benchmark": "engine-fts", "schema": 1,
                              "machine": describe(root), "plan": dataclasses.asdict(plan),
                              "tree": tree_state()}
    data = build_data(plan.needed_texts())
    result["data"] = data.summary
    progress(f"data: {data.summary}")
    workspace = Workspace(root)
    state = Run(plan, data, workspace, progress)
    db = [d for d in plan.drivers if d in DB_DRIVERS]
    loads: dict[str, Any] = {}
    clock = {"name": "", "at": 0.0}

    def section_started(name: str) -> None:
        if clock["name"]:
            elapsed = time.perf_counter() - float(clock["at"])
            loads[str(clock["name"])]["seconds"] = round(elapsed, 1)
        clock["name"], clock["at"] = name, time.perf_counter()
        if name:
            loads[name] = {"load_average_before": _load()}

    try:
        if "postgresql" in plan.drivers:
            workspace.postgres.start()
            result["postgresql"] = workspace.postgres.settings()
        result["bm25s"] = _bm25s_reason() or "installed"
        if plan.wants("recall") or plan.wants("storage"):
            section: dict[str, Any] = {}
            section_started("recall")
            for driver in db:
                for n in plan.sizes:
                    point = recall_point(run=state, driver=driver, n=n,
                                         timed=plan.wants("recall"))
                    section.setdefault(driver, []).append(point)
                    progress(f"recall {driver} {n}: {_brief(point)}")
            result["recall"] = section
        if plan.wants("local") and "local" in plan.drivers:
            section_started("local")
            result["local"] = {"bm25s": _bm25s_reason() or "installed", "points": []}
            for n in plan.local_points:
                point = recall_point(state, "local", n, timed=True, local=True)
                result["local"]["points"].append(point)
                progress(f"local {n}: {_brief(point)}")
        if plan.wants("persons") or plan.wants("storage"):
            section_started("persons")
            result["persons"] = {}
            for driver in db:
                point = persons_point(state, driver, timed=plan.wants("persons"))
                result["persons"][driver] = point
                progress(f"persons {driver}: {_brief(point)}")
        if plan.wants("remember"):
            section_started("remember")
            result["remember"] = {}
            for driver in plan.drivers:
                point = remember_point(state, driver)
                result["remember"][driver] = point
                progress(f"remember {driver}: {_brief(point)}")
        if plan.wants("bulk"):
            section_started("bulk")
            result["bulk"] = {}
            for driver in plan.drivers:
                point = bulk_point(state, driver)
                result["bulk"][driver] = point
                progress(f"bulk {driver}: {point['embedder=None']['per_s']}/s")
        if plan.wants("vectors"):
            section_started("vectors")
            result["vectors"] = {}
            for driver in plan.drivers:
                for n in plan.vector_points:
                    point = vectors_point(state, driver, n)
                    result["vectors"].setdefault(driver, []).append(point)
                    progress(f"vectors {driver} {n}: hybrid {point['hybrid'].get('p50_ms')} ms")
        section_started("")
    finally:
        workspace.close()
        shutil.rmtree(root, ignore_errors=True)
    result["sealing"] = state.sealing
    result["sections"] = loads
    result["machine"]["load_average_at_end"] = _load()
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["goals"] = goals(result)
    return result


def _brief(point: dict[str, Any]) -> str:
    parts = []
    if "sdk" in point:
        parts.append(f"sdk p50 {point['sdk'].get('p50_ms')} ms")
    if "baseline_ms" in point:
        parts.append(f"baseline p50 {point['baseline_ms'].get('p50_ms')} ms")
    if "ratio_p50" in point:
        parts.append(f"ratio {point['ratio_p50']}")
    if "storage" in point:
        parts.append(f"storage ratio {point['storage']['ratio']}")
    if "load_s" in point:
        parts.append(f"load {point['load_s']} s")
    return ", ".join(parts)


# --- goals ---------------------------------------------------------------------------------------


def _goal(
    name: str, target: str, measured: str, met: bool | None, note: str = ""
) -> dict[str, Any]:
    return {"goal": name, "target": target, "measured": measured, "met": met, "note": note}


def _ms(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f} ms"


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 19's goals, each met, not met, or not measured (``None``), from a result."""
    rows: list[dict[str, Any]] = []
    for driver, points in result.get("recall", {}).items():
        for p in points:
            if "sdk" not in p:
                continue
            r50, r95 = p.get("ratio_p50"), p.get("ratio_p95")
            exact = p.get("exact", {})
            rows.append(_goal(
                f"recall ÷ FTS, {p['memories']:,} memories ({driver})", "p50 ≤ 2×, p95 ≤ 2.5×",
                f"p50 {_x(r50)} ({_ms(p['sdk']['p50_ms'])} vs {_ms(p['baseline_ms']['p50_ms'])}), "
                f"p95 {_x(r95)} ({_ms(p['sdk']['p95_ms'])} vs {_ms(p['baseline_ms']['p95_ms'])})",
                None if r50 is None or r95 is None else (r50 <= 2.0 and r95 <= 2.5),
                f"equal to plaintext BM25 on {exact.get('equal')}/{exact.get('queries')} sampled "
                "queries" + ("" if p.get("same_terms", {}).get("identical") else
                             "; baseline terms differ from the SDK's"),
            ))
            rows.append(_goal(
                f"recall equals plaintext BM25, {p['memories']:,} ({driver})", "all sampled",
                f"{exact.get('equal')}/{exact.get('queries')}",
                None if not exact else exact.get("equal") == exact.get("queries")))
    local = result.get("local", {})
    for p in local.get("points", []):
        exact = p.get("exact", {})
        rows.append(_goal(
            f"local recall equals plaintext BM25, {p['memories']:,}", "all sampled",
            f"{exact.get('equal')}/{exact.get('queries')}",
            None if not exact else exact.get("equal") == exact.get("queries")))
        bm25s_p50 = p.get("bm25s_ms", {}).get("p50_ms")
        rows.append(_goal(
            f"local warm recall ÷ bm25s, {p['memories']:,}", "≤ 1×",
            f"local p50 {_ms(p.get('sdk', {}).get('p50_ms'))}; bm25s p50 {_ms(bm25s_p50)}; "
            f"÷ bm25s {_x(p.get('ratio_p50_bm25s'))}; ÷ FTS5 {_x(p.get('ratio_p50'))}",
            None if bm25s_p50 is None else (p.get("ratio_p50_bm25s") or 99) <= 1.0,
            local.get("bm25s", "") if local.get("bm25s") != "installed" else ""))
        cold = p.get("cold")
        if cold:
            limit = {10_000: 200.0, 100_000: 1000.0}.get(p["memories"])
            first = cold["first_recall_ms"]
            rows.append(_goal(
                f"local first recall after open, {p['memories']:,}",
                "—" if limit is None else f"≤ {limit:.0f} ms",
                f"{_ms(first)} (open {_ms(cold['sdk']['open_ms'])}; FTS5 first query "
                f"{_ms(cold['fts5_first_query_ms'])})",
                None if limit is None else first <= limit))
            if p["memories"] >= 100_000:
                rows.append(_goal(
                    f"local peak RSS ÷ FTS5, {p['memories']:,}", "≤ 2×",
                    f"{_x(cold['ratio_peak_rss'])} ({cold['sdk']['peak_mib']} vs "
                    f"{cold['fts5']['peak_mib']} MiB)",
                    None if cold["ratio_peak_rss"] is None else cold["ratio_peak_rss"] <= 2.0))
    for driver, p in result.get("persons", {}).items():
        if "sdk" in p:
            rows.append(_goal(
                f"{p['persons']:,} persons × {p['memories_per_person']} recall ({driver})",
                "p50 ≤ 3 ms", f"{_ms(p['sdk']['p50_ms'])} (p95 {_ms(p['sdk']['p95_ms'])}); "
                f"÷ FTS {_x(p.get('ratio_p50'))} (FTS p50 {_ms(p['baseline_ms']['p50_ms'])})",
                p["sdk"]["p50_ms"] <= 3.0))
    for driver, p in result.get("remember", {}).items():
        per = p.get("per_remember")
        if per is not None:
            rows.append(_goal(f"transactions per remember ({driver})", "1",
                              f"{per['commit']} commits, {per['begin']} begins, "
                              f"{per['statements']} statements", per["commit"] <= 1.0,
                              "SQLAlchemy events on the driver's engine (the key store's own "
                              "transactions are not counted)"))
        rows.append(_goal(
            f"remember ÷ plain INSERT ({driver})",
            "p50 ≤ 3×" if driver == "postgresql" else "—",
            f"p50 {_x(p.get('ratio_p50'))} ({_ms(p['sdk']['p50_ms'])} vs "
            f"{_ms(p['baseline_ms']['p50_ms'])})",
            None if driver != "postgresql" or p.get("ratio_p50") is None
            else p["ratio_p50"] <= 3.0))
        if driver == "local":
            syscalls = p.get("fsync_syscalls", {})
            rows.append(_goal(
                "fsyncs per local remember", "1",
                f"{p['python_fsyncs_per_remember']} os.fsync"
                + (f"; {syscalls['per_remember']} fsync syscalls (whole process)"
                   if syscalls.get("status") == "ok" else ""),
                p["python_fsyncs_per_remember"] <= 1.0,
                "os.fsync wrapped in process; the syscall count adds the key store's"))
    for driver, p in result.get("bulk", {}).items():
        sdk = p["embedder=None"]
        rows.append(_goal(
            f"remember_many, formation off ({driver})",
            "≥ 10,000/s" if driver in DB_DRIVERS else "—",
            f"{sdk['per_s']:,.0f}/s (default embedder {p['default embedder']['per_s']:,.0f}/s); "
            f"baseline {sdk['baseline_per_s_mean']:,.0f}/s",
            sdk["per_s"] >= 10_000 if driver in DB_DRIVERS else None))
    for driver, points in result.get("vectors", {}).items():
        for p in points:
            limit = {10_000: 5.0, 100_000: 30.0}.get(p["memories"])
            if "hybrid" not in p:
                continue
            rows.append(_goal(
                f"warm hybrid recall, {p['memories']:,} ({driver})",
                "—" if limit is None else f"p50 ≤ {limit:.0f} ms",
                f"p50 {_ms(p['hybrid']['p50_ms'])}, p95 {_ms(p['hybrid']['p95_ms'])} "
                f"(numpy {_ms(p['numpy_brute_force']['p50_ms'])})",
                None if limit is None else p["hybrid"]["p50_ms"] <= limit))
    storage = [(f"{p['memories']:,} memories of one person", driver, p["storage"])
               for driver, points in result.get("recall", {}).items() for p in points
               if "storage" in p and p["memories"] == 10_000]
    storage += [(f"{p['persons']:,} × {p['memories_per_person']}", driver, p["storage"])
                for driver, p in result.get("persons", {}).items() if "storage" in p]
    for what, driver, s in storage:
        rows.append(_goal(f"storage ÷ FTS, {what} ({driver})", "≤ 4×",
                          f"{_x(s['ratio'])} ({s['sdk_mib']} vs {s['baseline_mib']} MiB)",
                          None if s["ratio"] is None else s["ratio"] <= 4.0))
    return rows


# --- markdown ------------------------------------------------------------------------------------


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], right_from: int = 1) -> str:
    lines = ["| " + " | ".join(head) + " |",
             "| " + " | ".join("---" if i < right_from else "---:" for i in range(len(head)))
             + " |"]
    lines += ["| " + " | ".join("" if c is None else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _x(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f}×"


def render(result: dict[str, Any]) -> str:
    """The result as markdown, ready for docs/benchmarks.md."""
    m = result["machine"]
    out = [
        "## The SDK against the engine's own full-text search (issue 19)", "",
        f"`python -m benchmarks.engine_fts` — {m.get('cpu_model')}, {m.get('logical_cpus')} "
        f"logical CPUs ({m.get('usable_cpus')} usable), {m.get('ram_gib')} GiB, "
        f"{m.get('python')}, fsync 4 KiB {m.get('fsync_4k_ms')} ms, {m.get('date')}; load "
        f"average {m.get('load_average_at_start')} at the start, "
        f"{m.get('load_average_at_end')} at the end"
        + (f"; PostgreSQL {result['postgresql'].get('server_version')} (fsync "
           f"{result['postgresql'].get('fsync')}, synchronous_commit "
           f"{result['postgresql'].get('synchronous_commit')})" if "postgresql" in result
           else "")
        + f". {result['data']['texts']:,} texts from LoCoMo turns, "
        f"{result['data']['questions_with_terms']:,} questions; {result['plan']['queries']} "
        f"timed queries per point after {result['plan']['warmup']} warm-up, interleaved. "
        f"Run {result.get('seconds')} s."
        + (f" Code: commit {str(result['tree']['head'])[:10]} with "
           f"{len(result['tree']['changed_files'])} files changed in the working tree."
           if result.get("tree") else ""), "",
        "### Goals", "",
        _table(["goal", "target", "measured", "result", "note"], [
            [g["goal"], g["target"], g["measured"],
             {True: "**met**", False: "**not met**", None: "not measured"}[g["met"]], g["note"]]
            for g in goals(result)
        ], right_from=5),
    ]
    recall = result.get("recall", {})
    if any("sdk" in p for points in recall.values() for p in points):
        rows = []
        for driver, points in recall.items():
            for p in points:
                if "sdk" not in p:
                    continue
                d = p.get("driver_search", {})
                rows.append([
                    driver, f"{p['memories']:,}", _ms(p["sdk"]["p50_ms"]),
                    _ms(p["sdk"]["p95_ms"]), _ms(d.get("p50_ms")),
                    _ms(p["baseline_ms"]["p50_ms"]), _ms(p["baseline_ms"]["p95_ms"]),
                    _x(p["ratio_p50"]), _x(p["ratio_p95"]),
                    f"{p['exact']['equal']}/{p['exact']['queries']}",
                    p.get("per_recall", {}).get("commit"),
                    p.get("per_recall", {}).get("statements"),
                    "yes" if p["same_terms"]["identical"] else
                    f"no ({p['same_terms']['differing_terms']})",
                ])
        out += ["", "### Recall, one person (SDK `recall(top_k=10, ranking=\"relevance\")` ÷ "
                "the engine's FTS)", "",
                _table(["driver", "memories", "SDK p50", "SDK p95", "of it DbDriver.search p50",
                        "FTS p50", "FTS p95", "÷ p50", "÷ p95", "= BM25", "commits/recall",
                        "statements/recall", "same terms"], rows, right_from=1)]
    local = result.get("local", {}).get("points", [])
    if local:
        rows = []
        for p in local:
            c = p.get("cold", {})
            rows.append([
                f"{p['memories']:,}", _ms(p.get("sdk", {}).get("p50_ms")),
                _ms(p.get("sdk", {}).get("p95_ms")), _ms(p.get("baseline_ms", {}).get("p50_ms")),
                _x(p.get("ratio_p50")), _ms(c.get("sdk", {}).get("open_ms")),
                _ms(c.get("first_recall_ms")), _ms(c.get("fts5_first_query_ms")),
                c.get("sdk", {}).get("peak_mib"), c.get("fts5", {}).get("peak_mib"),
                _x(c.get("ratio_peak_rss")),
            ])
        out += ["", "### The local driver (warm in process; cold and RSS in fresh processes)",
                "", _table(["memories", "warm p50", "warm p95", "FTS5 p50", "÷ p50",
                            "open", "first recall", "FTS5 first query", "peak MiB",
                            "FTS5 peak MiB", "RSS ÷"], rows),
                "", f"bm25s: {result.get('local', {}).get('bm25s')}."]
    persons = result.get("persons", {})
    if any("sdk" in p for p in persons.values()):
        out += ["", "### Many persons", "", _table(
            ["driver", "persons × memories", "SDK p50", "SDK p95", "FTS p50", "FTS p95",
             "÷ p50", "÷ p95"],
            [[d, f"{p['persons']:,} × {p['memories_per_person']}", _ms(p["sdk"]["p50_ms"]),
              _ms(p["sdk"]["p95_ms"]), _ms(p["baseline_ms"]["p50_ms"]),
              _ms(p["baseline_ms"]["p95_ms"]), _x(p["ratio_p50"]), _x(p["ratio_p95"])]
             for d, p in persons.items() if "sdk" in p])]
    remember = result.get("remember", {})
    if remember:
        out += ["", "### remember (formation off) ÷ one autocommit INSERT", "", _table(
            ["driver", "SDK p50", "SDK p95", "INSERT p50", "÷ p50", "÷ p95", "begins",
             "commits", "statements", "os.fsync", "fsync syscalls"],
            [[d, _ms(p["sdk"]["p50_ms"]), _ms(p["sdk"]["p95_ms"]),
              _ms(p["baseline_ms"]["p50_ms"]), _x(p["ratio_p50"]), _x(p["ratio_p95"]),
              p.get("per_remember", {}).get("begin"), p.get("per_remember", {}).get("commit"),
              p.get("per_remember", {}).get("statements"), p["python_fsyncs_per_remember"],
              p.get("fsync_syscalls", {}).get("per_remember")]
             for d, p in remember.items()])]
    bulk = result.get("bulk", {})
    if bulk:
        out += ["", "### Bulk write: `remember_many` (formation off) against the plaintext load",
                "", _table(
                    ["driver", "memories", "embedder=None", "default embedder", "baseline",
                     "baseline rate", "baseline ÷ SDK"],
                    [[d, f"{p['memories']:,}", f"{p['embedder=None']['per_s']:,.0f}/s",
                      f"{p['default embedder']['per_s']:,.0f}/s", p["baseline"],
                      f"{p['embedder=None']['baseline_per_s_mean']:,.0f}/s",
                      _x(p["embedder=None"]["ratio_baseline_over_sdk"])]
                     for d, p in bulk.items()], right_from=2)]
    vectors = result.get("vectors", {})
    if vectors:
        out += ["", "### Hybrid recall (default embedder, warm)", "", _table(
            ["driver", "memories", "first recall", "hybrid p50", "hybrid p95", "text p50",
             "numpy brute force p50"],
            [[d, f"{p['memories']:,}", _ms(p.get("first_recall_ms")),
              _ms(p["hybrid"]["p50_ms"]), _ms(p["hybrid"]["p95_ms"]),
              _ms(p["text_same_store"]["p50_ms"]), _ms(p["numpy_brute_force"]["p50_ms"])]
             for d, points in vectors.items() for p in points])]
    storage = [(d, f"{p['memories']:,} of one person", p["storage"])
               for d, points in recall.items() for p in points if "storage" in p]
    storage += [(d, f"{p['persons']:,} × {p['memories_per_person']}", p["storage"])
                for d, p in persons.items() if "storage" in p]
    if storage:
        out += ["", "### Storage", "", _table(
            ["driver", "memories", "SDK MiB", "FTS MiB", "÷"],
            [[d, what, s["sdk_mib"], s["baseline_mib"], _x(s["ratio"])]
             for d, what, s in storage]),
            "", "SQLite: file size after VACUUM (both). PostgreSQL: pg_total_relation_size "
            "(heap, indexes, TOAST) of every table in schema mainsdk_memory against the FTS "
            "table's, both after VACUUM ANALYZE. The key store's anchors (one per memory) are "
            "not included: see `sealing` in the result file for its growth."]
    profiles = [(d, p["memories"], p["profile"]) for d, points in recall.items()
                for p in points if "profile" in p]
    for d, n, prof in profiles:
        out += ["", f"### Profile: {prof['recalls']} recalls at {n:,} ({d}), top cumulative",
                "", _table(["function", "calls", "cumulative ms", "own ms"],
                           [[e["function"], e["ncalls"], e["cumtime_ms"], e["tottime_ms"]]
                            for e in prof["top_cumulative"][:15]], right_from=1)]
    return "\n".join(out) + "\n"


# --- command line --------------------------------------------------------------------------------


def _ints(raw: str) -> tuple[int, ...]:
    return tuple(int(x.replace("_", "")) for x in raw.split(",") if x.strip())


def main(argv: Sequence[str] | None = None) -> int:
    """Parse options, run, write the JSON (and markdown), print the markdown."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        print(json.dumps(_run_child(json.loads(argv[1]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--drivers", default="sqlite,postgresql,local")
    parser.add_argument("--persons", type=int, default=2000)
    parser.add_argument("--per-person", type=int, default=50)
    parser.add_argument("--remember-n", type=int, default=100)
    parser.add_argument("--bulk-n", type=int, default=5000)
    parser.add_argument("--local-sizes", default=None)
    parser.add_argument("--vector-sizes", default=None)
    parser.add_argument("--exact-queries", type=int, default=20)
    parser.add_argument("--profile-at", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-strace", action="store_true")
    parser.add_argument("--out", default="benchmarks/results/engine-fts.json")
    parser.add_argument("--markdown", default=None, help="also write the tables here")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--render", default=None, help="render an existing result file")
    args = parser.parse_args(argv)
    if args.render:
        print(render(json.loads(Path(args.render).read_text(encoding="utf-8"))))
        return 0
    only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    plan = Plan(
        sizes=_ints(args.sizes), queries=args.queries, only=only,
        drivers=tuple(d.strip() for d in args.drivers.split(",") if d.strip()),
        persons=args.persons, per_person=args.per_person, remember_n=args.remember_n,
        bulk_n=args.bulk_n,
        local_sizes=None if args.local_sizes is None else _ints(args.local_sizes),
        vector_sizes=None if args.vector_sizes is None else _ints(args.vector_sizes),
        exact_queries=args.exact_queries, profile_at=args.profile_at, warmup=args.warmup,
        strace=not args.no_strace,
    )
    result = run(plan, lambda line: print(line, file=sys.stderr, flush=True),
                 None if args.workdir is None else Path(args.workdir))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    page = render(result)
    if args.markdown:
        Path(args.markdown).write_text(page, encoding="utf-8")
    print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
