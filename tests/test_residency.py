"""Residency: tenants placed in regions, each region its own PostgreSQL server (and key store).

Two real PostgreSQL servers (pgserver, each in its own data folder) are two regions, ``eu``
and ``us``, each with its own key store; ``acme`` is placed in ``eu`` and ``globex`` in
``us``. What a tenant leaves is looked for in every table of both databases, read directly
as the superuser (row-level security does not hide rows from it), and in both key stores.
A SQLite + local pair with one shared key store checks the same routing quickly.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from _postgres import TestPostgres, second_postgres, session_postgres
from sqlalchemy.engine import make_url

from mainsdk_memory import (
    ConfigurationError,
    ExportError,
    Memory,
    MemoryNotFound,
    ReceiptError,
    receipts,
    tenant,
)
from mainsdk_memory._errors import ResidencyError
from mainsdk_memory._memory import services_of
from mainsdk_memory._residency import AnchorRouter, KeyRouter, Region, Residency
from mainsdk_memory.drivers import open_driver
from mainsdk_memory.drivers._regions import RegionalDriver, RegionRouter
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.keys._anchors import Anchors

APP = "app"


@dataclass
class Regions:
    """The two-server residency of this module: its file, its databases, its key stores."""

    toml: Path
    servers: dict[str, TestPostgres]
    urls: dict[str, str]
    keys: dict[str, Path]

    def open(self) -> Memory:
        return Memory.open(f"regions:{self.toml}", keys=self.keys["eu"], app=APP)

    def rows_by_tenant(self, region: str) -> dict[str, int]:
        """Rows per tenant in every table of the region's database that has a tenant column."""
        database = make_url(self.urls[region]).database
        counts: dict[str, int] = {}
        with psycopg.connect(self.servers[region].conninfo(database)) as connection:
            tables = connection.execute(
                "SELECT table_schema, table_name FROM information_schema.columns "
                "WHERE column_name = 'tenant' AND table_schema NOT IN "
                "('pg_catalog', 'information_schema')"
            ).fetchall()
            assert len(tables) >= 4  # versions, postings, control, embeddings, links, …
            for schema, table in tables:
                for name, count in connection.execute(
                    f'SELECT tenant, count(*) FROM "{schema}"."{table}" GROUP BY tenant'  # noqa: S608
                ).fetchall():
                    counts[name] = counts.get(name, 0) + count
        return counts

    def total_rows(self, region: str) -> int:
        """Rows in every table of the region's database (any tenant, any table)."""
        database = make_url(self.urls[region]).database
        total = 0
        with psycopg.connect(self.servers[region].conninfo(database)) as connection:
            for schema, table in connection.execute(
                "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN "
                "('pg_catalog', 'information_schema')"
            ).fetchall():
                (count,) = connection.execute(
                    f'SELECT count(*) FROM "{schema}"."{table}"'  # noqa: S608
                ).fetchone() or (0,)
                total += count
        return total


def key_store_state(path: Path) -> tuple[tuple[str, ...], str]:
    """What a key store holds: its subject files and the logical content of its anchors."""
    subjects = tuple(sorted(file.name for file in (path / "subjects").glob("*.json")))
    with sqlite3.connect(path / "anchors.sqlite") as connection:
        content = [
            connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()  # noqa: S608
            for table in ("memory", "control", "writes")
        ]
    return subjects, hashlib.sha256(repr(content).encode()).hexdigest()


def anchored_scopes(path: Path) -> set[str]:
    with sqlite3.connect(path / "anchors.sqlite") as connection:
        return {scope for (scope,) in connection.execute("SELECT DISTINCT scope FROM memory")}


@pytest.fixture(scope="module")
def regions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Regions]:
    folder = tmp_path_factory.mktemp("regions")
    servers = {"eu": session_postgres(), "us": second_postgres()}
    urls = {name: server.new_database() for name, server in servers.items()}
    keys = {name: folder / f"keys-{name}" for name in servers}
    for path in keys.values():
        KeyStore.create(path)
    toml = folder / "regions.toml"
    toml.write_text(
        f'[regions.eu]\nstore = "{urls["eu"]}"\nkeys = "{keys["eu"]}"\n'
        f'[regions.us]\nstore = "{urls["us"]}"\nkeys = "{keys["us"]}"\n'
        '[tenants]\nacme = "eu"\nglobex = "us"\n'
    )
    yield Regions(toml, servers, urls, keys)
    for name, url in urls.items():
        servers[name].drop(url)


def _live_a_little(memory: Memory, person: str, text: str) -> str:
    """Write everything a person leaves as the current tenant: memories (vectors, links,
    entities), a grant, working memory, an episode, a forget (its receipt is logged); return
    the id of the memory kept."""
    agent = memory.acting_for(person, agent="bot", session="s1")
    kept = agent.remember(text).id
    gone = agent.remember("Their cat is called Miso and sleeps all day.").id
    assert gone != kept
    memory.grant("bot", read="all")
    agent.working.set("topic", "contact")
    agent.episodes.append("user", "How do I reach them?")
    memory.person(person).forget(gone)
    return kept


def test_each_tenant_lands_only_in_its_regions_database_and_key_store(regions: Regions) -> None:
    with regions.open() as memory:
        assert memory.capabilities.regions == ("eu", "us")
        with tenant.use("acme"):
            _live_a_little(memory, "ada", "Ada prefers WhatsApp over email.")
        with tenant.use("globex"):
            _live_a_little(memory, "ada", "Ada uses Signal at work.")
    eu, us = regions.rows_by_tenant("eu"), regions.rows_by_tenant("us")
    assert set(eu) == {"acme"} and eu["acme"] > 10  # versions, postings, control, vectors …
    assert set(us) == {"globex"} and us["globex"] > 10
    # Raw storage, through each region's own driver: not a byte naming the other tenant.
    for region, other in (("eu", b"globex"), ("us", b"acme")):
        driver = open_driver(regions.urls[region])
        try:
            assert not any(other in data for _, data in driver.raw_dump())
        finally:
            driver.close()
    # The anchors of each tenant are in its region's key store alone.
    eu_keys, us_keys = KeyStore.open(regions.keys["eu"]), KeyStore.open(regions.keys["us"])
    assert anchored_scopes(regions.keys["eu"]) == {eu_keys.anchor_scope("acme", APP)}
    assert anchored_scopes(regions.keys["us"]) == {us_keys.anchor_scope("globex", APP)}


def test_a_tenant_reads_nothing_of_another_regions_tenant_with_the_same_person(
    regions: Regions,
) -> None:
    with regions.open() as memory:
        with tenant.use("globex"):
            theirs = memory.acting_for("bea", agent="bot").remember("Bea likes green tea.").id
        with tenant.use("acme"):
            mine = memory.person("bea")
            assert mine.recall("green tea") == []
            assert mine.list().items == []
            with pytest.raises(MemoryNotFound):
                mine.get(theirs)
    # The eu store opened alone, as globex, with eu's keys, holds nothing of it either.
    with (
        Memory.open(regions.urls["eu"], keys=regions.keys["eu"], app=APP) as eu_only,
        tenant.use("globex"),
    ):
        assert eu_only.person("bea").recall("green tea") == []


def test_an_unplaced_tenant_is_refused_and_nothing_is_written_anywhere(regions: Regions) -> None:
    with regions.open() as memory:
        with tenant.use("acme"):  # both regions hold something already
            memory.acting_for("cy", agent="bot").remember("Cy is vegetarian.")
        with tenant.use("globex"):
            memory.acting_for("cy", agent="bot").remember("Cy is vegan.")
        before = (
            {region: regions.total_rows(region) for region in ("eu", "us")},
            {region: key_store_state(path) for region, path in regions.keys.items()},
        )
        with tenant.use("initech"):
            calls = [
                lambda: memory.acting_for("cy", agent="bot").remember("Cy likes jazz."),
                lambda: memory.acting_for("cy", agent="bot").recall("jazz"),
                lambda: memory.person("cy").list(),
                lambda: memory.grant("bot", read="all"),
                lambda: memory.privacy.export("cy"),
                lambda: memory.privacy.erase("cy"),
                lambda: memory.acting_for("cy", agent="bot").working.set("k", 1),
            ]
            for call in calls:
                with pytest.raises(ResidencyError) as refused:
                    call()
                assert refused.value.tenant == "initech"
                assert "[tenants]" in str(refused.value) and "MAIN-MEM-E150" in str(refused.value)
    after = (
        {region: regions.total_rows(region) for region in ("eu", "us")},
        {region: key_store_state(path) for region, path in regions.keys.items()},
    )
    assert after == before


def test_erase_and_key_destruction_stay_in_the_persons_region(regions: Regions) -> None:
    with regions.open() as memory:
        with tenant.use("acme"):
            memory.acting_for("dan", agent="bot").remember("Dan's locker code is 4471.")
        with tenant.use("globex"):
            kept = memory.acting_for("dan", agent="bot").remember("Dan's desk is on floor 3.")
        us_rows, us_keys = regions.rows_by_tenant("us"), key_store_state(regions.keys["us"])
        eu_subjects = key_store_state(regions.keys["eu"])[0]
        with tenant.use("acme"):
            receipt = memory.privacy.erase("dan")
            assert memory.person("dan").list().items == []
        # Region us: not a row, not a key file, not an anchor changed.
        assert regions.rows_by_tenant("us") == us_rows
        assert key_store_state(regions.keys["us"]) == us_keys
        assert key_store_state(regions.keys["eu"])[0] != eu_subjects  # dan's key destroyed
        with tenant.use("globex"):
            assert [r.id for r in memory.person("dan").list().items] == [kept.id]
    # The receipt is signed by eu's key store and verifies with eu's public key only.
    eu_pem = KeyStore.open(regions.keys["eu"]).export_public_pem()
    us_pem = KeyStore.open(regions.keys["us"]).export_public_pem()
    assert receipts.verify(receipt.token, eu_pem).claims["tenant"] == "acme"
    with pytest.raises(ReceiptError):
        receipts.verify(receipt.token, us_pem)


def test_an_export_is_of_one_region_and_signed_by_its_key_store(regions: Regions) -> None:
    with regions.open() as memory:
        with tenant.use("acme"):
            memory.acting_for("eve", agent="bot").remember("Eve's train leaves at 8.")
        with tenant.use("globex"):
            memory.acting_for("eve", agent="bot").remember("Eve's flight is on Tuesday.")
        with tenant.use("acme"):
            document = memory.privacy.export("eve")
        assert document["tenant"] == "acme"
        texts = [v["text"] for m in document["memories"] for v in m["versions"]]
        assert texts == ["Eve's train leaves at 8."]
    us_jwks = KeyStore.open(regions.keys["us"]).export_public_jwks()
    before = regions.rows_by_tenant("us")
    with (
        Memory.open(f"regions:{regions.toml}", keys=regions.keys["eu"], app="other") as other,
        tenant.use("acme"),
    ):
        with pytest.raises(ExportError):  # signed in eu, not by us's key store
            other.privacy.import_export(document, public_key=us_jwks)
        report = other.privacy.import_export(document)  # eu's own key set verifies it
        assert len(report.memory_ids) == 1
        assert [r.text for r in other.person("eve").list().items] == ["Eve's train leaves at 8."]
    assert regions.rows_by_tenant("us") == before  # the import landed in eu alone


# -- a quick pair: SQLite and local, one shared key store ---------------------------------


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    KeyStore.create(tmp_path / "keys")
    toml = tmp_path / "regions.toml"
    toml.write_text(
        f'[regions.eu]\nstore = "sqlite:///{tmp_path}/eu.db"\n'
        f'[regions.us-east-1]\nstore = "local:{tmp_path}/us"\n'
        '[tenants]\nacme = "eu"\n"globex.inc" = "us-east-1"\n'
    )
    return toml


def test_sqlite_and_local_regions_with_one_shared_key_store(quick: Path) -> None:
    keys = quick.parent / "keys"
    with Memory.open(f"regions:{quick}", keys=keys, app=APP) as memory:
        assert memory.driver.name == "regions"
        assert memory.capabilities.regions == ("eu", "us-east-1")
        assert memory.capabilities.erase == "hard" and memory.capabilities.vectors
        for tenant_id, text in (("acme", "Ada prefers tea."), ("globex.inc", "Bo likes cake.")):
            with tenant.use(tenant_id):
                agent = memory.acting_for("p1", agent="bot")
                agent.remember(text)
                assert [hit.record.text for hit in agent.recall(text)] == [text]
        router = memory.driver
        assert isinstance(router, RegionalDriver) and isinstance(router, RegionRouter)
        assert router.region_of("acme") == "eu" and router.region_of("nobody") is None
        dumps = {
            region: list(router.region_driver(region).raw_dump())
            for region in ("eu", "us-east-1")
        }
        assert not any(b"globex.inc" in data or b"globex.inc" in where.encode()
                       for where, data in dumps["eu"])
        assert not any(b"acme" in data or b"acme" in where.encode()
                       for where, data in dumps["us-east-1"])
        assert {where.split("/", 1)[0] for where, _ in router.raw_dump()} == {"eu", "us-east-1"}
        # One key store for both regions: the router hands out that very store.
        keys_router = services_of(memory).keys
        assert isinstance(keys_router, KeyRouter) and len(keys_router.distinct) == 1
    # Opened without the residency, each store is an ordinary store with the same keys.
    with (
        Memory.open(f"sqlite:///{quick.parent}/eu.db", keys=keys, app=APP) as eu_only,
        tenant.use("acme"),
    ):
        listed = eu_only.acting_for("p1", agent="bot").list().items
        assert [record.text for record in listed] == ["Ada prefers tea."]


def test_open_driver_takes_a_regions_url_and_a_residency_object_works_alike(
    quick: Path,
) -> None:
    driver = open_driver(f"regions:{quick}")
    try:
        assert isinstance(driver, RegionRouter)
        assert driver.capabilities.regions == ("eu", "us-east-1")
    finally:
        driver.close()
    base = quick.parent
    placed = Residency(
        regions={"eu": Region(store=f"sqlite:///{base}/eu.db"),
                 "us": Region(store=f"local:{base}/us")},
        tenants=lambda tenant_id: "eu" if tenant_id.startswith("a") else None,
    )
    with Memory.open(placed, keys=base / "keys", app=APP) as memory:
        with tenant.use("ab"):
            memory.acting_for("p", agent="bot").remember("Kept in eu.")
        with tenant.use("zz"), pytest.raises(ResidencyError):
            memory.acting_for("p", agent="bot").remember("Refused.")


def test_the_routers_route_every_public_member_of_the_key_store() -> None:
    """KeyRouter and AnchorRouter never build their base's state, so each public member of
    KeyStore and Anchors must be one of their own (a new member must be routed too)."""
    for router, base in ((KeyRouter, KeyStore), (AnchorRouter, Anchors)):
        public = {
            name for name, value in vars(base).items()
            if not name.startswith("_") and not isinstance(value, classmethod)
        }
        assert public, base
        missing = {name for name in public if name not in vars(router)}
        assert missing == set(), (router.__name__, missing)


# -- the residency file is checked whole, before anything is opened ------------------------

SECRET = "s3cretpw"  # noqa: S105 - a made-up password that no message may show
PG = f"postgresql+psycopg://app:{SECRET}@db.example/memory"

BAD_FILES = [
    pytest.param(f'[regions.eu]\nstore = "{PG}"\n[tenant]\nacme = "eu"\n',
                 ["unknown top-level keys 'tenant'"], id="unknown-top-level-key"),
    pytest.param('[tenants]\nacme = "eu"\n', ["declares no region"], id="no-region"),
    pytest.param(f'[regions.EU]\nstore = "{PG}"\n', ["'EU' is not a region name"],
                 id="bad-region-name"),
    pytest.param(f'[regions.eu]\nstore = "{PG}"\nstor = "x"\n',
                 ["[regions.eu]", "unknown keys 'stor'"], id="unknown-region-key"),
    pytest.param('[regions.eu]\nkeys = "/k"\n', ["[regions.eu]", "has no store"],
                 id="no-store"),
    pytest.param('[regions.eu]\nstore = "regions:/other.toml"\n', ["regions do not nest"],
                 id="nested-regions"),
    pytest.param(f'[regions.eu]\nstore = "{PG.replace("postgresql+psycopg", "postgrex")}"\n',
                 ["scheme 'postgrex'", "no memory driver"], id="unknown-scheme"),
    pytest.param(f'[regions.eu]\nstore = "{SECRET}"\n', ["is not a store URL"],
                 id="not-a-url"),
    pytest.param(f'[regions.eu]\nstore = "{PG}"\nkeys = 7\n', ["keys of [regions.eu]"],
                 id="keys-not-a-path"),
    pytest.param(f'[regions.eu]\nstore = "{PG}"\n[tenants]\nacme = "us"\n',
                 ["Tenant 'acme' is placed in 'us'", "not a declared region"],
                 id="tenant-in-an-undeclared-region"),
    pytest.param(f'[regions.eu]\nstore = "{PG}"\n[tenants]\n"a b" = "eu"\n',
                 ["'a b' under [tenants] is not a tenant id"], id="bad-tenant-id"),
    pytest.param(f'[regions.eu]\nstore = "{PG}\n', ["is not valid TOML", "(at "],
                 id="not-toml"),
]


@pytest.mark.parametrize(("text", "words"), BAD_FILES)
def test_a_bad_residency_file_is_refused_whole_and_never_shows_a_password(
    tmp_path: Path, text: str, words: list[str]
) -> None:
    created = tmp_path / "first.db"  # a valid first region that must not be created
    toml = tmp_path / "regions.toml"
    toml.write_text(f'[regions.first]\nstore = "sqlite:///{created}"\n' + text
                    if text.startswith("[regions") else text)
    KeyStore.create(tmp_path / "keys")
    with pytest.raises(ConfigurationError) as refused:
        Memory.open(f"regions:{toml}", keys=tmp_path / "keys", app=APP)
    message = str(refused.value)
    for word in words:
        assert word in message, message
    assert SECRET not in message and SECRET not in repr(refused.value)
    assert not created.exists()


def test_a_missing_file_and_a_placement_outside_the_regions_are_configuration_errors(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigurationError, match="No residency file at"):
        Residency.from_toml(tmp_path / "nope.toml")
    with pytest.raises(ConfigurationError, match="regions: URL names its residency file"):
        open_driver("regions:")
    stray = Residency(regions={"eu": Region(store=PG)}, tenants=lambda _tenant: "mars")
    with pytest.raises(ConfigurationError, match="'mars', which is not a declared region"):
        stray.place("acme")
    assert SECRET not in repr(stray)
