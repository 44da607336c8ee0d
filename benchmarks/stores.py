"""The stores a benchmark runs on: configurations, a PostgreSQL server, clocks and bulk loading.

A configuration (:class:`StoreConfig`) is a name plus a function that opens a
:class:`~mainsdk_memory.Memory` on a fresh store of one driver, so "sealed on SQLite",
"unsealed on the local driver" and "hybrid on PostgreSQL" are all just rows of one table.
Every opener says which embedder it means (``Memory.open`` without ``embedder=`` now gives the
default :class:`~mainsdk_memory.embeddings.StaticEmbedder`, ADR 0083), and a configuration
may fix the ``ranking`` its recalls pass (``"relevance"``: the ranking signals off):

- ``<driver>``: sealed BM25 over blind terms only, ``embedder=None``, ``ranking="relevance"``
  (what sealing must not change: it ranks exactly as plaintext BM25);
- ``<driver>-unsealed``: the same through :class:`PlainKeyStore` (the cost of privacy);
- ``<driver>-default``: ``Memory.open`` with no embedder option at all, remember and recall
  as the SDK defaults them (formation at write; hybrid, re-ranked, signals on): what
  ``pip install mainsdk-memory`` gives;
- ``<driver>-default-relevance``: the same store with ``recall(..., ranking="relevance")``;
- ``<driver>-default-no-formation``: the default install with ``remember(..., formation=False)``
  (every text stored as it is), to measure what formation at write changes;
- ``<driver>-hybrid``: BM25 + MiniLM (the ``embeddings`` extra, torch);
- ``<driver>-hybrid-hashing``: BM25 + the model-free stand-in of MiniLM's width (speed).

The unsealed baseline lives here and only here: :class:`PlainKeyStore` hands out key handles
whose ``seal``/``open``/``blind`` are identity functions, so the very same SDK and driver code
runs with sealing switched off. It is never part of the product.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import util as importlib_util
from pathlib import Path
from typing import Any, cast

from mainsdk_memory import Memory
from mainsdk_memory.drivers import StoredRow, open_driver
from mainsdk_memory.keys import KeyStore, SigningKey

__all__ = [
    "APP",
    "TENANT",
    "Clock",
    "Opener",
    "PlainKeyStore",
    "PostgresServer",
    "SharedEmbeddings",
    "SteppingClock",
    "StoreConfig",
    "Workspace",
    "bulk_load",
    "default_embedder",
    "hybrid_unavailable",
    "make_configs",
    "minilm",
    "minilm_unavailable",
    "opened",
    "stand_in_embedder",
    "vectors_unavailable",
]

APP = "bench"
TENANT = "bench"
#: A PostgreSQL server to use instead of starting pgserver (its user must be a superuser).
POSTGRES_ENV = "MAINSDK_BENCH_POSTGRES_URL"

Clock = Callable[[], datetime]


class SteppingClock:
    """A deterministic clock: ``start``, then one ``step`` later on every call.

    Recorded times are then the same in every run and strictly increasing in call order, so
    BM25 ties (broken by ``recorded_at``) resolve the same way on every driver.
    """

    def __init__(
        self,
        start: datetime = datetime(2024, 1, 1, tzinfo=UTC),
        step: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self._now = start
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """The next instant."""
        with self._lock:
            now = self._now
            self._now += self._step
            return now


# --- the unsealed baseline (benchmark only) -------------------------------------------------


class _PlainKeys:
    """Benchmark only: a key handle whose seal, open and blind do nothing.

    ``seal`` returns the plaintext, ``open`` the envelope, ``blind`` the term itself; the
    pseudonym is ``p_`` + the name. With it the SDK stores plaintext rows and plain index
    terms through exactly the same code paths as the sealed store.
    """

    label = "plain (benchmark baseline)"

    def seal(self, plaintext: bytes, associated_data: bytes) -> bytes:
        """Identity."""
        return plaintext

    def open(self, envelope: bytes, associated_data: bytes) -> bytes:
        """Identity."""
        return envelope

    def seal_memory(self, salt: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
        """Identity."""
        return plaintext

    def open_memory(self, salt: bytes, envelope: bytes, associated_data: bytes) -> bytes:
        """Identity."""
        return envelope

    def blind(self, term: str) -> str:
        """Identity."""
        return term

    def pseudonym(self, name: str) -> str:
        """``p_`` + the name (benchmark person names are safe folder names)."""
        return "p_" + name


class PlainKeyStore:
    """Benchmark only: a key store whose subject keys are :class:`_PlainKeys`.

    Receipts are still signed with the real key store's signing key, and the real store's
    anchors (ADR 0047) hold versions, pins and control digests, so forget, erase and the
    integrity checks run their full paths; only sealing and blinding are switched off.
    """

    def __init__(self, real: KeyStore) -> None:
        self._real = real
        self._plain = _PlainKeys()
        self.anchors = real.anchors

    def anchor_name(self, tenant: str, app: str, subject: str) -> str:
        """The real store's name of the subject."""
        return self._real.anchor_name(tenant, app, subject)

    def anchor_scope(self, tenant: str, app: str) -> str:
        """The real store's name of the tenant and app."""
        return self._real.anchor_scope(tenant, app)

    def subject_keys(
        self, tenant: str, app: str, subject: str, *, create: bool
    ) -> _PlainKeys:
        """The same identity handle for every subject."""
        return self._plain

    def destroy_subject(self, tenant: str, app: str, subject: str) -> bool:
        """Nothing to destroy; says a key existed."""
        return True

    @property
    def signing_key(self) -> SigningKey:
        """The real store's receipt-signing key."""
        return self._real.signing_key

    def export_public_jwks(self) -> dict[str, Any]:
        """The real store's public keys."""
        jwks: dict[str, Any] = self._real.export_public_jwks()
        return jwks


# --- PostgreSQL ---------------------------------------------------------------------------


class PostgresServer:
    """A PostgreSQL server for the benchmark: ``MAINSDK_BENCH_POSTGRES_URL`` or pgserver.

    pgserver (PostgreSQL 16 from PyPI) is started in a temporary folder with its default
    settings (``fsync`` on: writes are as durable as a real deployment's). Each store is a
    new database with the schema from ``memory db upgrade``.
    """

    def __init__(self) -> None:
        self._server: Any = None
        self._folder: Path | None = None
        self._admin: Any = None
        self._count = 0
        self._made: list[str] = []

    def start(self) -> None:
        """Connect to the configured server or start pgserver."""
        from sqlalchemy.engine import make_url

        configured = os.environ.get(POSTGRES_ENV)
        if configured:
            self._admin = make_url(configured).set(drivername="postgresql+psycopg")
            return
        import pgserver

        self._folder = Path(tempfile.mkdtemp(prefix="mainsdk-bench-pg-"))
        self._server = pgserver.get_server(  # type: ignore[attr-defined]
            self._folder / "data", cleanup_mode="delete"
        )
        self._admin = make_url(self._server.get_uri()).set(drivername="postgresql+psycopg")

    def _libpq(self, database: str | None = None) -> str:
        url = self._admin.set(drivername="postgresql")
        if database is not None:
            url = url.set(database=database)
        return str(url.render_as_string(hide_password=False))

    def execute(self, statement: str, database: str | None = None) -> list[tuple[Any, ...]]:
        """Run one statement as the admin user (autocommit) and return its rows, if any."""
        import psycopg

        with psycopg.connect(self._libpq(database), autocommit=True) as connection:
            cursor = connection.execute(statement.encode())
            return list(cursor.fetchall()) if cursor.description else []

    def settings(self) -> dict[str, str]:
        """Server version and the durability settings that shape write latency."""
        names = ("server_version", "fsync", "synchronous_commit", "shared_buffers")
        return {name: str(self.execute(f"SHOW {name}")[0][0]) for name in names}

    def new_store(self) -> str:
        """A new database with the current schema; its store URL."""
        from mainsdk_memory.drivers.db import upgrade

        if self._admin is None:
            self.start()
        self._count += 1
        name = f"mainsdk_bench_{os.getpid()}_{self._count}"
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.execute(f'CREATE DATABASE "{name}"')
        self._made.append(name)
        url = str(self._admin.set(database=name).render_as_string(hide_password=False))
        upgrade(url)
        return url

    def analyze(self, url: str) -> None:
        """ANALYZE the store's tables (what autovacuum does after a bulk load)."""
        from sqlalchemy.engine import make_url

        self.execute("ANALYZE", make_url(url).database)

    def drop(self, url: str) -> None:
        """Drop a database made by :meth:`new_store`."""
        from sqlalchemy.engine import make_url

        name = make_url(url).database
        if name in self._made:
            self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            self._made.remove(name)

    def stop(self) -> None:
        """Drop every database made here; stop and delete a pgserver started here."""
        if self._admin is None:
            return
        if self._server is None:
            for name in list(self._made):
                with contextlib.suppress(Exception):
                    self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            self._server.cleanup()
        self._made.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._admin = None


# --- workspace and configurations ------------------------------------------------------------


@dataclass
class Workspace:
    """A scratch folder with one key store, and fresh store URLs on each driver."""

    root: Path
    postgres: PostgresServer = field(default_factory=PostgresServer)
    _count: int = 0

    def __post_init__(self) -> None:
        # Created before anything runs, so threads never race to create it.
        if not self.keys.exists():
            KeyStore.create(self.keys)

    @property
    def keys(self) -> Path:
        """The key store every store of this run is sealed with."""
        return self.root / "keys"

    def new_url(self, driver: str) -> str:
        """A fresh, empty store on ``driver`` (``local``, ``sqlite`` or ``postgresql``)."""
        self._count += 1
        if driver == "local":
            return f"local:{self.root / f'store-{self._count}'}"
        if driver == "sqlite":
            return f"sqlite:///{self.root / f'store-{self._count}.db'}"
        if driver == "postgresql":
            return self.postgres.new_store()
        raise ValueError(f"unknown driver {driver!r}")

    def release(self, url: str) -> None:
        """Delete a store made by :meth:`new_url` (files, or the database)."""
        if url.startswith("local:"):
            shutil.rmtree(url.removeprefix("local:"), ignore_errors=True)
        elif url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
        elif url.startswith("postgresql"):
            self.postgres.drop(url)

    def settle(self, url: str) -> None:
        """Make a store ready to be measured: ANALYZE on PostgreSQL, nothing elsewhere."""
        if url.startswith("postgresql"):
            self.postgres.analyze(url)

    def close(self) -> None:
        """Stop the PostgreSQL server if one was started."""
        self.postgres.stop()


Opener = Callable[[str, Path, Clock], Memory]
"""Opens a Memory on a store URL with a key store folder and a clock."""


def _open_sealed(url: str, keys: Path, clock: Clock) -> Memory:
    """Text only: ``embedder=None`` (BM25 over blind terms, the default before ADR 0083)."""
    return Memory.open(url, keys=keys, app=APP, clock=clock, embedder=None)


def _open_default(url: str, keys: Path, clock: Clock) -> Memory:
    """No embedder option at all: the default install's embedder (``StaticEmbedder`` on a
    driver that stores vectors, none elsewhere)."""
    return Memory.open(url, keys=keys, app=APP, clock=clock)


def _open_unsealed(url: str, keys: Path, clock: Clock) -> Memory:
    driver = open_driver(url)
    try:
        plain = cast(KeyStore, PlainKeyStore(KeyStore.open(keys)))
        return Memory(driver, plain, app=APP, clock=clock, embedder=None)
    except BaseException:
        driver.close()
        raise


@functools.lru_cache(maxsize=1)
def _minilm() -> Any:
    """One MiniLMEmbedder for the run: it loads the model once and serialises its calls."""
    from mainsdk_memory import embeddings

    return embeddings.MiniLMEmbedder()


def minilm() -> Any:
    """The run's one :class:`~mainsdk_memory.embeddings.MiniLMEmbedder` (built on first use)."""
    return _minilm()


class SharedEmbeddings:
    """An embedder that computes each text's vectors once and hands them to every caller.

    Benchmark only. The LoCoMo hybrid stores (one per driver) embed the same turns and
    questions; MiniLM runs one text at a time behind a lock, so three stores would wait on
    it three times over. This wrapper calls the wrapped embedder exactly as the core does
    (``embed([text])``) the first time a text is seen and returns that same array after, so
    every store gets identical vectors and still seals, stores, opens and ranks its own.
    Same ``name``, ``dimensions`` and ``uses_model`` as the wrapped embedder.
    """

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self.name: str = embedder.name
        self.dimensions: int = embedder.dimensions
        self.uses_model: bool = embedder.uses_model
        self._done: dict[str, Any] = {}
        self.computed = 0
        """Texts the wrapped embedder was called for."""

    def embed(self, texts: Sequence[str]) -> Any:
        """The wrapped embedder's vectors of ``texts``, each text computed once."""
        if len(texts) != 1:
            return self._embedder.embed(texts)
        found = self._done.get(texts[0])
        if found is None:
            found = self._done[texts[0]] = self._embedder.embed(texts)
            self.computed += 1
        return found.copy()


@functools.lru_cache(maxsize=1)
def _shared_minilm() -> SharedEmbeddings:
    return SharedEmbeddings(_minilm())


def _driver_class(driver: str) -> Any:
    if driver == "local":
        from mainsdk_memory.drivers.local import LocalDriver

        return LocalDriver
    from mainsdk_memory.drivers.db import _driver as db

    return db.DbDriver


@functools.cache
def vectors_unavailable(driver: str) -> str | None:
    """Why ``driver`` cannot be opened with an embedder here, or ``None`` if it can.

    Read from the driver's declared capabilities (``Capabilities.vectors``): ``Memory.open``
    refuses an embedder on a driver that does not declare them. A capability that is only
    known per store (a property) counts as declared; opening the store then decides, and a
    refusal is reported as "not run" by the caller.
    """
    from mainsdk_memory._options import Options

    accepted = set(inspect.signature(Memory.open).parameters) | set(Options.__annotations__)
    if "embedder" not in accepted:
        return "Memory.open does not accept embedder= yet (hybrid recall is not merged)."
    try:
        capabilities = _driver_class(driver).capabilities
    except ImportError as exc:
        return f"the {driver} driver cannot be imported here: {exc}"
    declared = getattr(capabilities, "vectors", None)
    if declared is False:
        return (f"the {driver} driver does not declare vectors (Capabilities.vectors is "
                "False), so Memory.open refuses an embedder on it.")
    return None


@functools.lru_cache(maxsize=1)
def minilm_unavailable() -> str | None:
    """Why MiniLMEmbedder cannot be built here (the embeddings extra), or ``None``."""
    if importlib_util.find_spec("mainsdk_memory.embeddings") is None:
        return "mainsdk_memory.embeddings is not importable."
    try:
        _minilm()
    except Exception as exc:  # the model or torch missing: report, do not fail the run
        return f"MiniLMEmbedder cannot be built here: {type(exc).__name__}: {exc}"
    return None


def hybrid_unavailable(driver: str) -> str | None:
    """Why the hybrid (MiniLM) configuration on ``driver`` cannot run here, or ``None``.

    Only real obstacles count: ``Memory.open`` without ``embedder=``, a driver that does not
    declare vectors, or MiniLM that cannot be built (the ``embeddings`` extra missing). The
    driver is checked first, so a driver without vectors never loads the model.
    """
    return vectors_unavailable(driver) or minilm_unavailable()


def _open_hybrid(url: str, keys: Path, clock: Clock) -> Memory:
    return Memory.open(url, keys=keys, app=APP, clock=clock, embedder=_shared_minilm())


#: Width of the stand-in embedder: MiniLM's, so vectors weigh and rank as MiniLM's would.
STAND_IN_DIMENSIONS = 384


@functools.lru_cache(maxsize=1)
def stand_in_embedder() -> Any:
    """The speed runs' model-free stand-in for MiniLM: ``HashingEmbedder(dimensions=384)``.

    Embedding 100,000 texts with MiniLM would take far longer than the run; what recall
    costs beyond the embedding (sealing, storing, opening and ranking 384 float32 values per
    memory) is the same for any embedder of this width. MiniLM's own per-query time is
    measured separately (:func:`benchmarks.speed.embedding_latency`).
    """
    from mainsdk_memory.embeddings import HashingEmbedder

    return HashingEmbedder(dimensions=STAND_IN_DIMENSIONS)


def _open_stand_in(url: str, keys: Path, clock: Clock) -> Memory:
    return Memory.open(url, keys=keys, app=APP, clock=clock, embedder=stand_in_embedder())


@functools.lru_cache(maxsize=1)
def default_embedder() -> Any:
    """The embedder ``Memory.open`` uses when given none: ``StaticEmbedder()`` (ADR 0083).

    For sealing bulk-loaded vectors of the default configuration (its name and vectors are
    exactly those of the embedder the default store opens with, checked by the speed runs'
    vector self-check).
    """
    from mainsdk_memory.embeddings import StaticEmbedder

    return StaticEmbedder()


@dataclass(frozen=True)
class StoreConfig:
    """One configuration: a driver and a way to open a Memory on it."""

    name: str
    driver: str
    opener: Opener
    sealed: bool = True
    hybrid: bool = False
    """An optional embedder (MiniLM or the stand-in): left out by ``--no-hybrid``."""
    unavailable: Callable[[], str | None] = lambda: None
    """Why the configuration cannot run here (``None``: it can)."""
    kind: str = "sdk"
    """``sdk`` (text only), ``unsealed``, ``default`` (the default install) or ``hybrid``."""
    ranking: str | None = None
    """What its recalls pass as ``ranking=`` (``None``: nothing, the SDK's default)."""
    formation: bool = False
    """What its remembers pass as ``formation=``: on only where formation is what is measured
    (``<driver>-default`` and ``-formation``), so the other numbers stay comparable with the
    runs before formation existed (each turn stored as it is)."""

    @property
    def remember_options(self) -> dict[str, bool]:
        """Keyword arguments its remembers pass besides the text."""
        return {"formation": self.formation}

    def open(self, url: str, keys: Path, clock: Clock) -> Memory:
        """A Memory on ``url`` in this configuration."""
        return self.opener(url, keys, clock)

    @property
    def recall_options(self) -> dict[str, str]:
        """Keyword arguments its recalls pass besides the query and ``top_k``."""
        return {} if self.ranking is None else {"ranking": self.ranking}

    def recall(self, handle: Any, query: str, *, top_k: int, **options: Any) -> Any:
        """``handle.recall(query, top_k=top_k)`` with this configuration's ``ranking``."""
        return handle.recall(query, top_k=top_k, **self.recall_options, **options)


def make_configs(drivers: Sequence[str]) -> dict[str, StoreConfig]:
    """Every configuration on ``drivers`` (the module docstring lists them).

    ``<driver>`` and ``<driver>-unsealed`` are text only with the signals off, so sealed BM25
    can be compared with plaintext BM25 exactly; ``<driver>-default`` opens as a user's
    ``Memory.open`` does and recalls with the SDK's defaults, ``<driver>-default-relevance``
    passes ``ranking="relevance"``. ``<driver>-hybrid`` embeds with MiniLM (LoCoMo quality);
    ``<driver>-hybrid-hashing`` with the model-free stand-in of the same width (speed and
    scale, :func:`stand_in_embedder`).
    """
    configs: dict[str, StoreConfig] = {}
    for driver in drivers:
        configs[driver] = StoreConfig(driver, driver, _open_sealed, ranking="relevance")
        configs[f"{driver}-unsealed"] = StoreConfig(
            f"{driver}-unsealed", driver, _open_unsealed, sealed=False, kind="unsealed",
            ranking="relevance",
        )
        configs[f"{driver}-default"] = StoreConfig(
            f"{driver}-default", driver, _open_default, kind="default", formation=True,
        )
        configs[f"{driver}-default-no-formation"] = StoreConfig(
            f"{driver}-default-no-formation", driver, _open_default, kind="default",
        )
        configs[f"{driver}-default-relevance"] = StoreConfig(
            f"{driver}-default-relevance", driver, _open_default, kind="default",
            ranking="relevance", formation=True,
        )
        configs[f"{driver}-hybrid"] = StoreConfig(
            f"{driver}-hybrid", driver, _open_hybrid, hybrid=True, kind="hybrid",
            unavailable=functools.partial(hybrid_unavailable, driver),
        )
        configs[f"{driver}-hybrid-hashing"] = StoreConfig(
            f"{driver}-hybrid-hashing", driver, _open_stand_in, hybrid=True, kind="hybrid",
            unavailable=functools.partial(vectors_unavailable, driver),
        )
    return configs


# --- bulk loading (scale points only) -------------------------------------------------------


def _load_bulk_put(
    memory: Memory, rows: Sequence[StoredRow], vectors: Sequence[bytes] | None,
    batch: int = 2000,
) -> None:
    """The driver's own ``bulk_put`` (rows, postings, embeddings), one transaction a batch."""
    driver = cast(Any, memory.driver)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        mapping = None if vectors is None else {
            (row.memory_id, row.version): vectors[start + i] for i, row in enumerate(chunk)
        }
        driver.bulk_put(chunk, vectors=mapping)


def bulk_load(
    memory: Memory, rows: Sequence[StoredRow], vectors: Sequence[bytes] | None = None
) -> None:
    """Put already sealed rows into ``memory``'s store without a write path per row.

    The driver's own ``bulk_put`` when it has one (the local and db drivers: their own files
    or rows, one sync or one transaction a batch), ``put`` row by row otherwise. ``vectors``
    (one per row) are the rows' sealed embeddings, as ``put(vector=...)`` takes them
    (:func:`benchmarks.speed.seal_vectors`).
    """
    if not rows:
        return
    if vectors is not None and len(vectors) != len(rows):
        raise ValueError("one sealed vector per row")
    if hasattr(memory.driver, "bulk_put"):
        _load_bulk_put(memory, rows, vectors)
    elif vectors is None:
        for row in rows:
            memory.driver.put(row)
    else:
        for row, vector in zip(rows, vectors, strict=True):
            memory.driver.put(row, vector=vector)


@contextlib.contextmanager
def opened(config: StoreConfig, url: str, keys: Path, clock: Clock) -> Iterator[Memory]:
    """Open ``config`` on ``url`` for the block, then close it."""
    memory = config.open(url, keys, clock)
    try:
        yield memory
    finally:
        memory.close()
