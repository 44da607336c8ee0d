"""Control-record checks: bytes kept exactly, listed by prefix in key order, deleted with None,
and never shared across tenants or apps (deletion on raw storage is an erase check); for
``person_records``, records of 64 KiB and hundreds of them under one person's prefix."""

from __future__ import annotations

from mainsdk_memory.drivers import Driver

from ._model import CheckFailed
from ._registry import CheckContext, check

__all__: list[str] = []

#: The largest control record a driver that declares ``person_records`` keeps.
PERSON_RECORD_BYTES = 64 * 1024


def _expect_list(
    driver: Driver, tenant: str, app: str, prefix: str, want: dict[str, bytes]
) -> None:
    got = driver.control_list(tenant, app, prefix)
    expected = sorted((key, value) for key, value in want.items() if key.startswith(prefix))
    if [key for key, _ in got] != [key for key, _ in expected]:
        keys = [key for key, _ in got]
        if sorted(keys) == [key for key, _ in expected]:
            raise CheckFailed(f"control_list({prefix!r}) is not sorted by key")
        raise CheckFailed(
            f"control_list({prefix!r}) returned keys {keys!r}; expected "
            f"{[key for key, _ in expected]!r}"
        )
    for (key, value), (_, wanted) in zip(got, expected, strict=True):
        if not isinstance(value, bytes) or value != wanted:
            raise CheckFailed(f"control_list({prefix!r}) returned other bytes for {key!r}")


@check("control")
def check_records_round_trip(ctx: CheckContext) -> str | None:
    """control_get and control_list return the bytes put, by prefix, sorted; None deletes."""
    driver, rows = ctx.driver, ctx.rows
    tenant, app = rows.tenant(), rows.app()
    records = {
        "grant/agent-b": rows.sealed(),
        "grant/agent-a": rows.sealed(1),
        "grant/agent-a/extra": bytes(range(256)),
        "grants": rows.sealed(),
        "kill": rows.sealed(10_000),
        "pending/ ~!%'\"\\;--": rows.sealed(),
        "k" * 200: rows.sealed(),
    }
    for key, value in records.items():
        driver.control_put(tenant, app, key, value)
    for key, value in records.items():
        got = driver.control_get(tenant, app, key)
        if not isinstance(got, bytes) or got != value:
            raise CheckFailed(f"control_get({key[:40]!r}) did not return the bytes put")
    if driver.control_get(tenant, app, "grant/agent-c") is not None:
        raise CheckFailed("control_get of a key never put returned a value")
    for prefix in ("", "grant/", "grant/agent-a", "grants", "pending/ ", "nothing"):
        _expect_list(driver, tenant, app, prefix, records)

    records["grant/agent-a"] = rows.sealed()
    driver.control_put(tenant, app, "grant/agent-a", records["grant/agent-a"])
    if driver.control_get(tenant, app, "grant/agent-a") != records["grant/agent-a"]:
        raise CheckFailed("control_put did not replace an existing record")
    driver.control_put(tenant, app, "kill", None)
    del records["kill"]
    driver.control_put(tenant, app, "never-there", None)  # deleting nothing is not an error
    if driver.control_get(tenant, app, "kill") is not None:
        raise CheckFailed("control_put(key, None) did not delete the record")
    _expect_list(driver, tenant, app, "", records)
    return f"{len(records) + 1} records, keys up to 200 characters"


@check("control")
def check_records_isolated(ctx: CheckContext) -> str | None:
    """No control record is read, listed, replaced or deleted through another tenant or app."""
    driver, rows = ctx.driver, ctx.rows
    tenant, app = rows.tenant(), rows.app()
    mine = rows.sealed()
    driver.control_put(tenant, app, "grant/agent-a", mine)
    others = [
        (rows.tenant(), app, "tenant"),
        (tenant + "0", app, "tenant"),
        (tenant.upper(), app, "tenant"),
        (tenant, rows.app(), "app"),
        (tenant, app + "0", "app"),
    ]
    for other_tenant, other_app, what in others:
        if driver.control_get(other_tenant, other_app, "grant/agent-a") is not None:
            raise CheckFailed(f"control_get in another {what} returned this {what}'s record")
        if driver.control_list(other_tenant, other_app, ""):
            raise CheckFailed(f"control_list in another {what} returned this {what}'s record")
        driver.control_put(other_tenant, other_app, "grant/agent-a", None)
        if driver.control_get(tenant, app, "grant/agent-a") != mine:
            raise CheckFailed(f"control_put(None) in another {what} deleted this {what}'s record")
        theirs = rows.sealed()
        driver.control_put(other_tenant, other_app, "grant/agent-a", theirs)
        if driver.control_get(tenant, app, "grant/agent-a") != mine:
            raise CheckFailed(f"control_put in another {what} replaced this {what}'s record")
        if driver.control_get(other_tenant, other_app, "grant/agent-a") != theirs:
            raise CheckFailed(f"control_get in another {what} did not return its own record")
        driver.control_put(other_tenant, other_app, "grant/agent-a", None)
    return None


@check("person_records")
def check_large_records_listed_by_prefix(ctx: CheckContext) -> str | None:
    """Records of 64 KiB are kept exactly; 200 under one prefix list in key order, no others."""
    driver, rows = ctx.driver, ctx.rows
    tenant, app = rows.tenant(), rows.app()
    subject = rows.subject()
    big = f"working/{subject}/{rows.hex(32)}"
    records: dict[str, bytes] = {}
    for value in (bytes(range(256)) * (PERSON_RECORD_BYTES // 256), rows.sealed(60_001)):
        driver.control_put(tenant, app, big, value)  # the second replaces the first
        got = driver.control_get(tenant, app, big)
        if not isinstance(got, bytes) or got != value:
            raise CheckFailed(
                f"control_get of a record of {len(value)} bytes did not return the bytes put"
            )
        records[big] = value
    # The core's ledger keys: a person's prefix, a fixed-width time (some shared), a random part.
    prefix = f"episode/{subject}/"
    keys = []
    moment = rows.moment()
    for index in range(200):
        if index % 4:  # every fourth shares the time of the one before
            moment = rows.moment()
        keys.append(f"{prefix}{moment:%Y%m%dT%H%M%S.%f}Z-{rows.hex(24)}")
    neighbours = [
        f"episode/{subject}",  # the prefix without its slash
        f"episode/{subject}0/{rows.hex(8)}",  # a pseudonym the prefix is the start of
        f"episode/{subject[:-1]}/{rows.hex(8)}",
        f"working/{subject}/{rows.hex(32)}",
    ]
    order = keys + neighbours
    rows.rng.shuffle(order)
    for key in order:
        records[key] = rows.sealed(rows.rng.randint(64, 2_000))
        driver.control_put(tenant, app, key, records[key])
    _expect_list(driver, tenant, app, prefix, records)
    _expect_list(driver, tenant, app, f"working/{subject}/", records)
    for key in keys[::3]:
        driver.control_put(tenant, app, key, None)
        del records[key]
    _expect_list(driver, tenant, app, prefix, records)
    return f"records of {PERSON_RECORD_BYTES} bytes; {len(keys)} under one prefix, a third deleted"
