"""BaseDriver: a driver implements storage only and inherits the reference behaviour.

The docs' dict driver (docs/examples/dict_driver.py, and its vectors variant) is run through
the whole conformance suite here; the inherited search, list and expired are compared with
the local and db drivers' own fast paths on random stores; and the hooks say what is missing.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import random
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _db_rows import instant, make_row, random_rows

from mainsdk_memory import Memory, MemoryCapabilityError, MemoryConflictError, tenant
from mainsdk_memory.conformance import Status, all_checks, run_suite
from mainsdk_memory.conformance._cli import main as conformance_main
from mainsdk_memory.drivers import (
    BaseDriver,
    Driver,
    EraseResult,
    Filter,
    StoredRow,
    VectorDriver,
    bm25_rank,
)
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.keys import KeyStore

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def _example(name: str) -> ModuleType:
    """Import ``docs/examples/<name>.py`` as the top-level module ``name`` (as a driver
    author's project would, and as ``memory-conformance --driver name:…`` finds it)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


DictDriver: Any = _example("dict_driver").DictDriver
DictVectorsDriver: Any = _example("dict_vectors_driver").DictVectorsDriver


# -- the docs' driver passes the whole suite ----------------------------------------------


@pytest.mark.parametrize(
    ("factory", "undeclared"),
    [
        pytest.param(
            DictDriver, {"concurrent_writers", "vectors", "relations", "regions"}, id="dict"
        ),
        pytest.param(
            DictVectorsDriver, {"concurrent_writers", "relations", "regions"}, id="dict-vectors"
        ),
    ],
)
def test_the_docs_dict_driver_passes_every_check_of_the_conformance_suite(
    factory: Any, undeclared: set[str]
) -> None:
    report = run_suite(factory, workers=4)
    assert report.passed, report.summary()
    statuses = {result.name: result.status for result in report.capabilities}
    assert {name for name, s in statuses.items() if s is Status.NOT_DECLARED} == undeclared
    assert all(s is Status.PASSED for name, s in statuses.items() if name not in undeclared)
    # Every check its declaration asks for ran and passed; none was skipped or failed.
    results = [check for result in report.capabilities for check in result.checks]
    applicable = {check.id for check in all_checks() if not check.missing(factory.capabilities)}
    assert {r.check for r in results if r.status is Status.PASSED} == applicable
    assert all(r.status is Status.NOT_DECLARED for r in results if r.check not in applicable)
    assert len(applicable) >= 30
    # Each check not run needs a capability the driver leaves undeclared, and nothing else.
    for check in all_checks():
        if check.id not in applicable:
            assert set(check.missing(factory.capabilities)) <= undeclared, check.id


def test_the_docs_dict_driver_is_well_under_100_lines_and_inherits_the_reads() -> None:
    assert len((EXAMPLES / "dict_driver.py").read_text().splitlines()) < 90
    for name in ("search", "list", "expired", "set_pinned", "vectors", "close", "__enter__"):
        assert name not in vars(DictDriver), name  # inherited, not rewritten
    assert "stored_vector" in vars(DictVectorsDriver)
    assert "vectors" not in vars(DictVectorsDriver)
    driver = DictDriver()
    assert isinstance(driver, BaseDriver)
    assert isinstance(driver, Driver) and isinstance(driver, VectorDriver)


def test_memory_conformance_certifies_the_docs_driver_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert conformance_main(["--driver", "dict_driver:DictDriver", "--workers", "4"]) == 0
    out = capsys.readouterr().out
    assert "PASSED: all 14 declared capabilities hold." in out


def test_the_sdk_runs_on_the_docs_driver(tmp_path: Path) -> None:
    """Remember, recall, pin, revise, history and forget, end to end on a BaseDriver."""
    driver = DictDriver()
    keys = KeyStore.create(tmp_path / "keys")
    with Memory(driver, keys, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first = ada.remember("Ada keeps bees in the orchard")
        other = ada.remember("Ada rides a green bicycle")
        assert [hit.record.id for hit in ada.recall("orchard bees")] == [first.id]
        assert ada.pin(first.id).pinned
        ada.revise(first.id, "Ada keeps bees and hens in the orchard")
        assert [record.version for record in ada.history(first.id)] == [1, 2]
        assert [record.id for record in ada.list().items] == [other.id, first.id]
        memory.privacy.erase("ada")
        assert driver.rows("acme", "app") == []


# -- the inherited reads equal the drivers' own fast paths -------------------------------

SUBJECTS = ("p_ada", "p_bob", "tenant")
VOCABULARY = [f"t_{i}" for i in range(12)]


def _random_filter(rng: random.Random, app: str) -> Filter:
    return Filter(
        tenant="acme",
        app=app,
        subjects=tuple(rng.sample(SUBJECTS, rng.randint(1, 3))),
        session=rng.choice((None, "s1", "s2")),
        kinds=rng.choice((None, frozenset({"fact"}), frozenset({"preference", "note"}))),
        as_of=rng.choice((None, None, instant(rng))),
        pinned=rng.choice((None, None, True, False)),
        written_by=rng.choice((None, None, "bot")),
        any_session=rng.random() < 0.25,
        retention=rng.choice(((), (("health", instant(rng)),))),
    )


def _random_query(rng: random.Random) -> list[Any]:
    groups: list[Any] = []
    for _ in range(rng.randint(1, 4)):
        tokens = rng.sample([*VOCABULARY, "t_unknown"], rng.randint(1, 2))
        groups.append(set(tokens) if rng.random() < 0.7 else [*tokens, tokens[0]])
    return groups


def _pages(read: Any, where: Filter, size: int) -> list[list[StoredRow]]:
    pages: list[list[StoredRow]] = []
    after = None
    while True:
        page = read(where, limit=size, after=after)
        pages.append(page)
        if len(page) < size:
            return pages
        after = (page[-1].created_at, page[-1].memory_id)


def _stored_now(rows: list[StoredRow], driver: Any) -> list[StoredRow]:
    """Every version the driver holds now, by its own versions()."""
    found = []
    for key in sorted({(r.app, r.subject, r.memory_id) for r in rows}):
        found += driver.versions("acme", key[0], [key[1]], key[2])
    return found


@pytest.fixture(params=["local", "sqlite", "dict"])
def driver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A driver whose own search, list and expired are compared with BaseDriver's."""
    made: Any
    if request.param == "local":
        made = LocalDriver(tmp_path / "store")
    elif request.param == "sqlite":
        made = DbDriver(f"sqlite:///{tmp_path / 'memory.db'}")
    else:
        made = DictDriver(tmp_path)
    with made:
        yield made


@pytest.mark.parametrize("seed", range(3))
def test_the_inherited_search_list_and_expired_equal_the_drivers_own(
    driver: Any, seed: int
) -> None:
    rng = random.Random(seed)
    rows = random_rows(rng, driver, 60, vocabulary=VOCABULARY)
    for row in rng.sample([r for r in rows if r.valid_to is None], 10):
        driver.set_pinned(row.tenant, row.app, row.subject, row.memory_id, not row.pinned)
    for row in rng.sample([r for r in rows if r.version == 1], 6):
        driver.erase(row.tenant, row.app, row.subject, row.memory_id)
    stored = _stored_now(rows, driver)
    seen = {"hits": 0, "listed": 0, "expired": 0}
    for app in ("app", "other"):
        key = lambda r: (r.subject, r.memory_id, r.version)  # noqa: E731
        mine = sorted((r for r in stored if r.app == app), key=key)
        assert sorted(driver.rows("acme", app), key=key) == mine
        for _ in range(25):
            where = _random_filter(rng, app)
            query = _random_query(rng)
            top_k = rng.choice((1, 3, 10, 1000))
            want = bm25_rank([r for r in mine if where.matches(r)], query, top_k)
            assert BaseDriver.search(driver, where, query, top_k=top_k) == want
            assert driver.search(where, query, top_k=top_k) == want  # bit-identical scores
            seen["hits"] += len(want)
            size = rng.choice((1, 4, 1000))
            inherited = functools.partial(BaseDriver.list, driver)
            pages = _pages(inherited, where, size)
            assert pages == _pages(driver.list, where, size)
            assert [r for page in pages for r in page] == sorted(
                (r for r in mine if where.matches(r)),
                key=lambda r: (r.created_at, r.memory_id),
                reverse=True,
            )
            seen["listed"] += sum(map(len, pages))
            retention = [("health", instant(rng)), *rng.choice(([], [("none", instant(rng))]))]
            expired = BaseDriver.expired(driver, "acme", app, retention)
            assert expired == driver.expired("acme", app, retention)
            assert expired == sorted(
                {
                    (r.subject, r.memory_id)
                    for r in mine
                    if r.valid_to is None
                    and any(label in r.labels and r.created_at < cut for label, cut in retention)
                }
            )
            seen["expired"] += len(expired)
    assert all(seen.values()), seen  # the comparisons were not all of empty results
    # An unknown tenant or app holds nothing, in the scan and in every inherited read.
    assert list(driver.rows("acme", "nowhere")) == []
    nowhere = Filter(tenant="nobody", app="app", subjects=SUBJECTS, any_session=True)
    assert BaseDriver.list(driver, nowhere, limit=10) == []
    assert BaseDriver.search(driver, nowhere, [{"t_1"}], top_k=10) == []


# -- hooks and what a driver that leaves one out is told ----------------------------------


class _StorageOnly(BaseDriver):
    """Storage in a list, no replace() hook: pinning cannot be inherited."""

    name = "storage-only"
    capabilities = dataclasses.replace(DictDriver.capabilities, vectors=True)

    def __init__(self) -> None:
        self.stored: list[StoredRow] = []
        self.closed = False

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        self.stored.append(row)

    def versions(self, tenant: str, app: str, subjects: Any, memory_id: str) -> list[StoredRow]:
        return [r for r in self.stored if r.memory_id == memory_id and r.subject in subjects]

    def rows(self, tenant: str, app: str) -> list[StoredRow]:
        return list(self.stored)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        return EraseResult(memory_id, (), "hard")

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        return None

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        return None

    def control_list(self, tenant: str, app: str, prefix: str) -> list[tuple[str, bytes]]:
        return []

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        return iter(())

    def close(self) -> None:
        self.closed = True


def test_a_driver_must_implement_every_storage_method() -> None:
    class NoScan(BaseDriver):
        name = "no-scan"
        capabilities = DictDriver.capabilities

    with pytest.raises(TypeError) as missing:
        NoScan()  # type: ignore[abstract]
    for method in ("put", "versions", "rows", "erase", "control_put", "control_get",
                   "control_list", "raw_dump"):  # fmt: skip
        assert method in str(missing.value)


def test_pinning_needs_the_replace_hook_or_its_own_set_pinned() -> None:
    driver = _StorageOnly()
    row = make_row()
    driver.put(row)
    with pytest.raises(NotImplementedError, match=r"neither replace\(row\) nor set_pinned"):
        driver.set_pinned(row.tenant, row.app, row.subject, row.memory_id, True)
    with pytest.raises(MemoryConflictError):
        driver.set_pinned(row.tenant, row.app, row.subject, "mem_missing", True)


def test_replace_pins_the_current_version_in_place_and_refuses_a_closed_one() -> None:
    driver = DictDriver()
    row = make_row(pinned=False)
    driver.put(row)
    driver.set_pinned(row.tenant, row.app, row.subject, row.memory_id, True)
    (pinned,) = driver.versions(row.tenant, row.app, [row.subject], row.memory_id)
    assert pinned == dataclasses.replace(row, pinned=True)
    later = row.valid_from + timedelta(seconds=1)
    driver.put(dataclasses.replace(pinned, version=2, valid_from=later), closes=1)
    closed = driver.versions(row.tenant, row.app, [row.subject], row.memory_id)[0]
    with pytest.raises(MemoryConflictError):  # a revision got there first: nothing changes
        driver.replace(dataclasses.replace(closed, pinned=False))
    assert driver.versions(row.tenant, row.app, [row.subject], row.memory_id)[0] == closed
    with pytest.raises(MemoryConflictError):
        driver.set_pinned(row.tenant, row.app, "p_nobody", row.memory_id, False)


def test_vectors_need_the_declaration_and_the_stored_vector_hook() -> None:
    where = Filter(tenant="acme", app="app", subjects=SUBJECTS, any_session=True)
    with pytest.raises(MemoryCapabilityError) as undeclared:
        DictDriver().vectors(where)
    assert undeclared.value.capability == "vectors"
    driver = _StorageOnly()
    assert driver.vectors(where) == []  # nothing stored: the hook is not asked
    driver.put(make_row(subject="p_ada", session=None, session_only=False, trust="inferred"))
    with pytest.raises(NotImplementedError, match=r"neither stored_vector\(row\) nor vectors"):
        driver.vectors(where)


def test_the_context_manager_closes_and_close_is_a_no_op_by_default() -> None:
    with _StorageOnly() as driver:
        assert isinstance(driver, _StorageOnly)
    assert driver.closed
    plain = DictDriver()
    with plain as same:
        assert same is plain
    plain.close()  # inherited: releases nothing, and may be called again
