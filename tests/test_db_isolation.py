"""PostgreSQL row-level security: a tenant's transaction sees no other tenant's row, ever.

These tests go around the driver on purpose: they connect with psycopg, take the app role
with a tenant set, and run bare ``SELECT *`` on every table that holds tenant data.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from _db_rows import make_row, make_v1_store, memory_id
from _postgres import TestPostgres
from sqlalchemy import text
from sqlalchemy.engine import make_url

from mainsdk_memory import ConfigurationError
from mainsdk_memory.drivers import Filter, StoredLink, bm25_rank
from mainsdk_memory.drivers.db import _packs, upgrade
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.db._engine import APP_ROLE, PG_SCHEMA, TENANT_SETTING, transaction
from mainsdk_memory.drivers.db._schema import SCHEMA_VERSION, TENANT_TABLES

#: A fresh PostgreSQL store (the shared ``store_url`` fixture, on PostgreSQL only).
on_postgres = pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


#: A tag both tenants' rows carry (a caller key both happen to use), and each one's own.
SHARED_TAG = "5" * 32
OWN_TAG = {"acme": "a" * 32, "globex": "b" * 32}


@pytest.fixture
def two_tenants(store_url: str) -> Iterator[DbDriver]:
    """A store holding versions, postings, tags, embeddings, control records and links of acme
    and globex."""
    with DbDriver(store_url) as driver:
        for tenant in ("acme", "globex"):
            driver.put(
                make_row(
                    tenant=tenant,
                    memory_id=memory_id(1),
                    terms={f"t_{tenant}": 1},
                    tags=frozenset({SHARED_TAG, OWN_TAG[tenant]}),
                ),
                vector=f"sealed vector of {tenant}".encode(),
            )
            driver.put(make_row(tenant=tenant, memory_id=memory_id(2), subject="tenant"))
            # Enough live versions for the subject's tail to be packed (memory_packs).
            driver.bulk_put(
                [
                    make_row(tenant=tenant, memory_id=memory_id(100 + n), terms={f"t_{tenant}": 1})
                    for n in range(_packs.TAIL)
                ]
            )
            driver.control_put(tenant, "app", "grant/bot", b"sealed grant")
            driver.put_links([_link(tenant)])
        yield driver


def _link(tenant: str) -> StoredLink:
    return StoredLink(
        tenant=tenant,
        app="app",
        subject="p_ada",
        source=memory_id(1),
        target=memory_id(2),
        key="0" * 32,
        sealed=f"sealed link of {tenant}".encode(),
    )


def _tenant_tables(connection: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    found = connection.execute(
        "SELECT table_name FROM information_schema.columns "
        "WHERE table_schema = %s AND column_name = 'tenant' ORDER BY table_name",
        (PG_SCHEMA,),
    ).fetchall()
    return [str(name) for (name,) in found]


@on_postgres
def test_every_tenant_table_forces_row_level_security(
    two_tenants: DbDriver, store_url: str
) -> None:
    with psycopg.connect(_conninfo(store_url), autocommit=True) as connection:
        tables = _tenant_tables(connection)
        assert sorted(tables) == sorted(TENANT_TABLES)
        for table in tables:
            enabled, forced = connection.execute(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
                (f"{PG_SCHEMA}.{table}",),
            ).fetchone()
            assert (enabled, forced) == (True, True), table
        role = connection.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s",
            (APP_ROLE,),
        ).fetchone()
        assert role == (False, False, False)


@on_postgres
def test_the_app_role_with_tenant_a_sees_no_row_of_tenant_b(
    two_tenants: DbDriver, store_url: str
) -> None:
    with psycopg.connect(_conninfo(store_url), autocommit=True) as connection:
        tables = _tenant_tables(connection)
        # The URL's user is a superuser, which row-level security never stops: the role is
        # what makes the policies hold.
        assert connection.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone() == (True,)
        with connection.transaction():
            connection.execute(f"SET LOCAL ROLE {APP_ROLE}")
            connection.execute("SELECT set_config(%s, 'acme', true)", (TENANT_SETTING,))
            for table in tables:
                cursor = connection.execute(f"SELECT * FROM {PG_SCHEMA}.{table}")  # noqa: S608
                names = [column.name for column in cursor.description or ()]
                rows = cursor.fetchall()
                tenants = {row[names.index("tenant")] for row in rows}
                assert tenants == {"acme"}, table
        with connection.transaction():
            connection.execute(f"SET LOCAL ROLE {APP_ROLE}")  # no tenant set: nothing
            for table in tables:
                assert connection.execute(
                    f"SELECT count(*) FROM {PG_SCHEMA}.{table}"  # noqa: S608
                ).fetchone() == (0,), table


@on_postgres
def test_the_app_role_cannot_write_or_change_another_tenants_rows(
    two_tenants: DbDriver, store_url: str
) -> None:
    with (
        psycopg.connect(_conninfo(store_url), autocommit=True) as connection,
        connection.transaction(force_rollback=True),
    ):
        connection.execute(f"SET LOCAL ROLE {APP_ROLE}")
        connection.execute("SELECT set_config(%s, 'acme', true)", (TENANT_SETTING,))
        changed = connection.execute(
            f"UPDATE {PG_SCHEMA}.memory_versions SET pinned = true"  # noqa: S608
        ).rowcount
        deleted = connection.execute(
            f"DELETE FROM {PG_SCHEMA}.memory_control WHERE tenant = 'globex'"  # noqa: S608
        ).rowcount
        unvectored = connection.execute(
            f"DELETE FROM {PG_SCHEMA}.memory_embeddings WHERE tenant = 'globex'"  # noqa: S608
        ).rowcount
        unlinked = connection.execute(
            f"DELETE FROM {PG_SCHEMA}.memory_links WHERE tenant = 'globex'"  # noqa: S608
        ).rowcount
        relinked = connection.execute(
            f"UPDATE {PG_SCHEMA}.memory_links SET sealed = 'x'"  # noqa: S608
        ).rowcount
        untagged = connection.execute(
            f"DELETE FROM {PG_SCHEMA}.memory_tags WHERE tenant = 'globex'"  # noqa: S608
        ).rowcount
        retagged = connection.execute(
            f"UPDATE {PG_SCHEMA}.memory_tags SET tag = tag"  # noqa: S608
        ).rowcount
        with pytest.raises(psycopg.errors.InsufficientPrivilege), connection.transaction():
            connection.execute(
                f"INSERT INTO {PG_SCHEMA}.memory_control VALUES "  # noqa: S608
                "('globex', 'app', 'planted', 'x')"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege), connection.transaction():
            connection.execute(
                f"INSERT INTO {PG_SCHEMA}.memory_embeddings VALUES "  # noqa: S608
                "('globex', 'app', 'mem_planted', 1, 'p_ada', 'x')"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege), connection.transaction():
            connection.execute(
                f"INSERT INTO {PG_SCHEMA}.memory_links VALUES "  # noqa: S608
                "('globex', 'app', 'p_ada', 'planted', 'mem_a', 'mem_b', 'x')"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege), connection.transaction():
            # A tag planted on globex's version (doc ids are per tenant, so guess a few).
            connection.execute(
                f"INSERT INTO {PG_SCHEMA}.memory_tags "  # noqa: S608
                f"SELECT 'globex', 'app', 'p_ada', '{'c' * 32}', doc FROM generate_series(1, 9) doc"
            )
    # acme's rows, its one link and its two tags; nothing of globex
    assert (changed, deleted, unvectored, unlinked, relinked) == (2 + _packs.TAIL, 0, 0, 0, 1)
    assert (untagged, retagged) == (0, 2)
    # globex is untouched.
    assert two_tenants.control_list("globex", "app", "") == [("grant/bot", b"sealed grant")]
    globex = Filter(tenant="globex", app="app", subjects=("p_ada",))
    assert [entry.sealed for entry in two_tenants.vectors(globex)] == [b"sealed vector of globex"]
    assert two_tenants.links("globex", "app", ["p_ada"], [memory_id(1)]) == [_link("globex")]
    for tag in (SHARED_TAG, OWN_TAG["globex"]):
        tagged = Filter(tenant="globex", app="app", subjects=("p_ada",), tags=(frozenset({tag}),))
        assert [row.memory_id for row in two_tenants.list(tagged, limit=10)] == [memory_id(1)]
    assert (
        two_tenants.list(
            Filter(tenant="globex", app="app", subjects=("p_ada",), pinned=True), limit=10
        )
        == []
    )


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_a_read_by_a_tag_keeps_to_its_tenant(two_tenants: DbDriver) -> None:
    # Both tenants' rows carry SHARED_TAG: a read by it, or by the other tenant's own tag,
    # finds this tenant's row only, or nothing, in every read that takes a filter.
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        where = Filter(tenant=tenant, app="app", subjects=("p_ada",))
        shared = Filter(
            tenant=tenant, app="app", subjects=("p_ada",), tags=(frozenset({SHARED_TAG}),)
        )
        foreign = Filter(
            tenant=tenant, app="app", subjects=("p_ada",), tags=(frozenset({OWN_TAG[other]}),)
        )
        (row,) = two_tenants.list(shared, limit=10)
        assert (row.tenant, row.tags) == (tenant, frozenset({SHARED_TAG, OWN_TAG[tenant]}))
        assert two_tenants.list(foreign, limit=10) == []
        assert two_tenants.search(foreign, [{f"t_{tenant}"}], top_k=5) == []
        assert [e.sealed for e in two_tenants.vectors(shared)] == [
            f"sealed vector of {tenant}".encode()
        ]
        assert two_tenants.vectors(foreign) == []
        absent = Filter(
            tenant=tenant, app="app", subjects=("p_ada",), tags_absent=frozenset({OWN_TAG[other]})
        )
        assert two_tenants.list(absent, limit=10) == two_tenants.list(where, limit=10)


@on_postgres
def test_every_driver_transaction_runs_as_the_app_role_with_its_tenant(
    two_tenants: DbDriver,
) -> None:
    with transaction(two_tenants.engine, "postgresql", tenant="globex", write=False) as conn:
        user, setting = conn.execute(
            text("SELECT current_user, current_setting(:name, true)"), {"name": TENANT_SETTING}
        ).fetchone()
        tenants = set(
            conn.execute(
                text(f"SELECT tenant FROM {PG_SCHEMA}.memory_versions")  # noqa: S608
            ).scalars()
        )
    assert (user, setting, tenants) == (APP_ROLE, "globex", {"globex"})


@on_postgres
def test_a_pooled_connection_never_carries_the_previous_tenant(store_url: str) -> None:
    with DbDriver(store_url, pool_size=1) as driver:
        for tenant in ("acme", "globex"):
            driver.put(make_row(tenant=tenant, memory_id=memory_id(1)))
        engine = driver.engine
        seen = []
        for tenant in ("acme", "globex", "acme"):
            with transaction(engine, "postgresql", tenant=tenant, write=False) as conn:
                pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
                tenants = set(
                    conn.execute(
                        text(f"SELECT tenant FROM {PG_SCHEMA}.memory_versions")  # noqa: S608
                    ).scalars()
                )
                seen.append((pid, tenants))
        # A failed transaction does not leave its tenant behind either.
        with (
            pytest.raises(RuntimeError),
            transaction(engine, "postgresql", tenant="globex", write=True),
        ):
            raise RuntimeError("abandon the transaction")
        with engine.connect() as conn:  # the same pooled connection, outside any of ours
            pid, user, setting = conn.execute(
                text("SELECT pg_backend_pid(), current_user, current_setting(:name, true)"),
                {"name": TENANT_SETTING},
            ).fetchone()
            conn.execute(text(f"SET LOCAL ROLE {APP_ROLE}"))
            visible = conn.execute(
                text(f"SELECT count(*) FROM {PG_SCHEMA}.memory_versions")  # noqa: S608
            ).scalar_one()
            conn.rollback()
    assert [tenants for _, tenants in seen] == [{"acme"}, {"globex"}, {"acme"}]
    assert len({p for p, _ in seen} | {pid}) == 1  # one connection served every tenant
    assert user != APP_ROLE
    assert setting in (None, "")
    assert visible == 0


@pytest.fixture
def owner_database(postgres: TestPostgres) -> Iterator[tuple[str, str]]:
    """A database owned by a non-superuser login role, and that role's name."""
    owner = f"mainsdk_owner_{os.getpid()}"
    url = postgres.new_database(schema=False)
    database = make_url(url).database
    admin = postgres.conninfo()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP ROLE IF EXISTS "{owner}"')
        connection.execute(f'CREATE ROLE "{owner}" LOGIN')
        connection.execute(f'ALTER DATABASE "{database}" OWNER TO "{owner}"')
    try:
        yield make_url(url).set(username=owner).render_as_string(hide_password=False), owner
    finally:
        postgres.drop(url)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'REVOKE {APP_ROLE} FROM "{owner}"')
            connection.execute(f'DROP ROLE IF EXISTS "{owner}"')


def test_an_owner_url_is_held_by_row_level_security_too(
    owner_database: tuple[str, str], postgres: TestPostgres
) -> None:
    url, owner = owner_database
    # The owner may not hand itself the app role: upgrade says who must grant it.
    with pytest.raises(ConfigurationError, match="GRANT"):
        upgrade(url)
    with psycopg.connect(postgres.conninfo(), autocommit=True) as connection:
        connection.execute(f'GRANT {APP_ROLE} TO "{owner}"')
    assert upgrade(url) == (0, SCHEMA_VERSION)
    with DbDriver(url) as driver:
        driver.put(make_row(tenant="acme", memory_id=memory_id(1)))
        driver.put(make_row(tenant="globex", memory_id=memory_id(2)))
        with pytest.raises(ConfigurationError, match="BYPASSRLS"):
            list(driver.raw_dump())
        acme = Filter(tenant="acme", app="app", subjects=("p_ada",))
        assert [row.memory_id for row in driver.list(acme, limit=10)] == [memory_id(1)]
    with psycopg.connect(_conninfo(url), autocommit=True) as connection:
        # As itself, without the role or a tenant, the owner sees nothing: FORCE applies.
        assert connection.execute(
            f"SELECT count(*) FROM {PG_SCHEMA}.memory_versions"  # noqa: S608
        ).fetchone() == (0,)


def test_an_owner_upgrades_a_version_1_store_whose_rows_rls_hides_from_it(
    owner_database: tuple[str, str], postgres: TestPostgres
) -> None:
    # Version 2 copies every posting. The owner is held by FORCEd row-level security like
    # everyone else, so a copy that ran under it would see nothing: it must copy them all,
    # and leave every tenant table forced again.
    url, owner = owner_database
    with psycopg.connect(postgres.conninfo(), autocommit=True) as connection:
        connection.execute(f'GRANT {APP_ROLE} TO "{owner}"')
    rows = [
        make_row(tenant=tenant, memory_id=memory_id(n), terms={"t_x": n + 1, f"t_{tenant}": 1})
        for tenant in ("acme", "globex")
        for n in range(3)
    ]
    make_v1_store(url, rows)
    assert upgrade(url) == (1, SCHEMA_VERSION)
    with DbDriver(url) as driver:
        for tenant in ("acme", "globex"):
            where = Filter(tenant=tenant, app="app", subjects=("p_ada",))
            mine = [row for row in rows if row.tenant == tenant]
            assert driver.search(where, [{"t_x"}], top_k=5) == bm25_rank(mine, [{"t_x"}], 5)
    with psycopg.connect(postgres.conninfo(make_url(url).database), autocommit=True) as c:
        forced = c.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, count(p.polname) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_policy p ON p.polrelid = c.oid "
            "WHERE n.nspname = %s AND c.relkind = 'r' GROUP BY 1, 2, 3 ORDER BY 1",
            (PG_SCHEMA,),
        ).fetchall()
    assert forced == sorted(
        [(table, True, True, 1) for table in TENANT_TABLES] + [("memory_schema", False, False, 0)]
    )


@on_postgres
def test_a_role_that_could_bypass_security_is_refused(
    store_url: str, postgres: TestPostgres
) -> None:
    with psycopg.connect(postgres.conninfo(), autocommit=True) as connection:
        connection.execute(f"ALTER ROLE {APP_ROLE} BYPASSRLS")
        try:
            with pytest.raises(ConfigurationError, match="BYPASSRLS"):
                DbDriver(store_url)
        finally:
            connection.execute(f"ALTER ROLE {APP_ROLE} NOBYPASSRLS")
    DbDriver(store_url).close()


@on_postgres
def test_a_user_without_the_app_role_is_told_what_to_grant(
    store_url: str, postgres: TestPostgres
) -> None:
    stranger = f"mainsdk_stranger_{os.getpid()}"
    with psycopg.connect(postgres.conninfo(), autocommit=True) as connection:
        connection.execute(f'DROP ROLE IF EXISTS "{stranger}"')
        connection.execute(f'CREATE ROLE "{stranger}" LOGIN')
        try:
            url = make_url(store_url).set(username=stranger)
            with pytest.raises(ConfigurationError) as error:
                DbDriver(url.render_as_string(hide_password=False))
            assert f"GRANT {APP_ROLE} TO" in str(error.value)
        finally:
            connection.execute(f'DROP ROLE IF EXISTS "{stranger}"')


@on_postgres
def test_a_login_user_granted_only_the_app_role_can_use_the_store(
    store_url: str, postgres: TestPostgres
) -> None:
    # The documented least-privilege set-up, with NOINHERIT: the user has no privilege of its
    # own on the tables, and the driver still works because every transaction takes the role.
    user = f"mainsdk_app_{os.getpid()}"
    with psycopg.connect(postgres.conninfo(), autocommit=True) as connection:
        connection.execute(f'DROP ROLE IF EXISTS "{user}"')
        connection.execute(f'CREATE ROLE "{user}" LOGIN NOINHERIT')
        connection.execute(f'GRANT {APP_ROLE} TO "{user}"')
        try:
            url = make_url(store_url).set(username=user).render_as_string(hide_password=False)
            with DbDriver(url) as driver:
                driver.put(make_row(memory_id=memory_id(3)))
                where = Filter(tenant="acme", app="app", subjects=("p_ada",))
                assert [r.memory_id for r in driver.list(where, limit=5)] == [memory_id(3)]
        finally:
            connection.execute(f'REVOKE {APP_ROLE} FROM "{user}"')
            connection.execute(f'DROP ROLE IF EXISTS "{user}"')
