"""Control-record checks: bytes kept exactly, listed by prefix in key order, deleted with None,
and never shared across tenants or apps (deletion on raw storage is an erase check)."""

from __future__ import annotations

from mainsdk_memory.drivers import Driver

from ._model import CheckFailed
from ._registry import CheckContext, check

__all__: list[str] = []


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
