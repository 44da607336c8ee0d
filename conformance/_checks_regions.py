"""Checks of declared regions: the names are well-formed, and a tenant's writes land only in
its region (for a driver that says where a tenant lives: a
:class:`~mainsdk_memory.drivers._regions.RegionalDriver`; otherwise residency is its word)."""

from __future__ import annotations

import re
from collections.abc import Callable

from mainsdk_memory._errors import ResidencyError
from mainsdk_memory.drivers import (
    Driver,
    RelationDriver,
    StoredLink,
    StoredRow,
    VectorDriver,
)
from mainsdk_memory.drivers._regions import RegionalDriver

from ._checks_erase import _blob_needles, _find, _haystacks
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []

_REGION = re.compile(r"[a-z][a-z0-9-]{0,62}")

#: How many of the suite's tenant names are tried to find one placed in each region, and
#: how many ``unplaced-…`` names to find one placed nowhere.
_TRIES = 256
_UNPLACED_TRIES = 32


@check("regions")
def check_region_names(ctx: CheckContext) -> str | None:
    """Declared regions are distinct lowercase names such as 'eu' or 'us-east-1'."""
    regions = ctx.capabilities.regions
    for region in regions:
        if not isinstance(region, str) or not _REGION.fullmatch(region):
            raise CheckFailed(
                f"regions declares {region!r}, which is not a region name (lowercase letters, "
                "digits and '-', starting with a letter)"
            )
    if len(set(regions)) != len(regions):
        raise CheckFailed("regions declares the same region twice")
    return "names are well-formed"


def _dump(driver: Driver) -> list[tuple[str, bytes]]:
    return sorted((where, bytes(data)) for where, data in driver.raw_dump())


def _placed(ctx: CheckContext, driver: RegionalDriver) -> tuple[dict[str, str], str | None]:
    """A tenant (as the suite names them) placed in each declared region, and one placed
    nowhere among ``unplaced-…`` names (``None`` if every one tried is placed)."""
    regions = ctx.capabilities.regions
    found: dict[str, str] = {}
    for _ in range(_TRIES):
        name = ctx.rows.tenant()
        region = driver.region_of(name)
        if region is not None and region not in regions:
            raise CheckFailed(
                f"region_of({name!r}) gave {region!r}, which is not a declared region"
            )
        if region is not None:
            found.setdefault(region, name)
        if len(found) == len(regions):
            break
    missing = [region for region in regions if region not in found]
    if missing:
        raise CheckFailed(
            f"no tenant among {_TRIES} of the suite's names (tenant-<hex>) is placed in "
            f"{', '.join(missing)}, so residency there cannot be verified: give the suite a "
            "placement that puts its tenants in every declared region (for example by a hash "
            "of the name)"
        )
    unplaced = None
    for _ in range(_UNPLACED_TRIES):
        name = f"unplaced-{ctx.rows.hex(8)}"
        if driver.region_of(name) is None:
            unplaced = name
            break
    return found, unplaced


def _write(ctx: CheckContext, driver: Driver, scope: Scope) -> dict[str, bytes]:
    """Write as ``scope``'s tenant: a row with its vector, a revision, a control record, a
    link, a replaced vector. Returns each blob written, by what it is."""
    caps = ctx.capabilities
    vectors = caps.vectors and isinstance(driver, VectorDriver)
    row = ctx.rows.row(scope)
    blobs = {f"the sealed row of {row.memory_id}": row.sealed}
    vector = ctx.rows.sealed(96)
    if vectors:
        driver.put(row, vector=vector)
        blobs[f"the vector of {row.memory_id} v1"] = vector
    else:
        driver.put(row)
    if caps.time_travel:
        revision = ctx.rows.revision(row)
        driver.put(revision, closes=1)
        blobs[f"the sealed row of {row.memory_id} v2"] = revision.sealed
    record = ctx.rows.sealed()
    driver.control_put(scope.tenant, scope.app, "grant/agent-regions", record)
    blobs["the control record grant/agent-regions"] = record
    if caps.relations and isinstance(driver, RelationDriver):
        link = StoredLink(
            scope.tenant, scope.app, scope.subject, row.memory_id, ctx.rows.memory_id(),
            ctx.rows.hex(32), ctx.rows.sealed(120),
        )
        driver.put_links([link])
        blobs[f"the link {link.key}"] = link.sealed
    if vectors:
        assert isinstance(driver, VectorDriver)  # noqa: S101 - checked above
        replaced = ctx.rows.sealed(96)
        driver.put_vector(scope.tenant, scope.app, scope.subject, row.memory_id, 1, replaced)
        blobs[f"the replaced vector of {row.memory_id} v1"] = replaced
    return blobs


def _read_nothing(
    ctx: CheckContext, other: Driver, scope: Scope, region: str, ids: list[str]
) -> None:
    """Every read of ``other`` (another region's driver) finds nothing of ``scope``."""
    tenant, app = scope.tenant, scope.app
    said = f"tenant {tenant} (placed in another region) through region {region}'s driver"
    if other.list(scope.where(), limit=READ_ALL):
        raise CheckFailed(f"list() for {said} returned rows")
    if other.control_get(tenant, app, "grant/agent-regions") is not None or other.control_list(
        tenant, app, ""
    ):
        raise CheckFailed(f"control_get()/control_list() for {said} returned a record")
    caps = ctx.capabilities
    if (
        caps.relations
        and isinstance(other, RelationDriver)
        and other.links(tenant, app, [scope.subject], ids)
    ):
        raise CheckFailed(f"links() for {said} returned links")
    if caps.vectors and isinstance(other, VectorDriver) and other.vectors(scope.where()):
        raise CheckFailed(f"vectors() for {said} returned vectors")


def _refused(what: str, call: Callable[[], object], tenant: str) -> None:
    try:
        call()
    except ResidencyError:
        return
    except Exception as exc:
        raise CheckFailed(
            f"{what} for tenant {tenant}, placed in no region, raised {type(exc).__name__} "
            "instead of ResidencyError"
        ) from exc
    raise CheckFailed(f"{what} for tenant {tenant}, placed in no region, was not refused")


def _refusals(ctx: CheckContext, driver: Driver, tenant: str) -> None:
    scope = ctx.scope(tenant=tenant)
    row: StoredRow = ctx.rows.row(scope)
    _refused("put()", lambda: driver.put(row), tenant)
    _refused("list()", lambda: driver.list(scope.where(), limit=READ_ALL), tenant)
    _refused(
        "control_put()",
        lambda: driver.control_put(tenant, scope.app, "grant/agent-regions", b"\x00" * 64),
        tenant,
    )
    _refused("control_get()", lambda: driver.control_get(tenant, scope.app, "grant/x"), tenant)
    if ctx.capabilities.relations and isinstance(driver, RelationDriver):
        link = StoredLink(
            tenant, scope.app, scope.subject, row.memory_id, ctx.rows.memory_id(),
            ctx.rows.hex(32), ctx.rows.sealed(80),
        )
        _refused("put_links()", lambda: driver.put_links([link]), tenant)
    if ctx.capabilities.vectors and isinstance(driver, VectorDriver):
        _refused("vectors()", lambda: driver.vectors(scope.where()), tenant)


@check("regions")
def check_writes_stay_in_their_region(ctx: CheckContext) -> str | None:
    """A tenant's rows, control records, links and vectors land in its region's store alone."""
    driver = ctx.driver
    if not isinstance(driver, RegionalDriver):
        return (
            "the driver does not say where a tenant lives (no region_of() and "
            "region_driver(): RegionalDriver), so residency is the driver's word, not verified"
        )
    regions = ctx.capabilities.regions
    if len(regions) < 2:
        raise CheckFailed("a RegionalDriver declares at least two regions to be checked")
    tenants, unplaced = _placed(ctx, driver)
    app = ctx.rows.app()
    for region in regions:
        scope = ctx.scope(tenant=tenants[region], app=app)
        others = {name: driver.region_driver(name) for name in regions if name != region}
        before = {name: _dump(other) for name, other in others.items()}
        blobs = _write(ctx, driver, scope)
        own = driver.region_driver(region)
        held = own.list(scope.where(), limit=READ_ALL)
        if not held or own.control_get(
            scope.tenant, app, "grant/agent-regions"
        ) is None:
            raise CheckFailed(
                f"a row and a control record of tenant {scope.tenant}, placed in {region}, "
                f"are not in region {region}'s driver"
            )
        for name, other in others.items():
            _read_nothing(ctx, other, scope, name, [row.memory_id for row in held])
            haystacks = _haystacks(other.raw_dump())
            for what, blob in blobs.items():
                for needle in _blob_needles(blob, what):
                    where = _find(needle, haystacks)
                    if where is not None:
                        raise CheckFailed(
                            f"{needle.what} of tenant {scope.tenant}, placed in {region}, is in "
                            f"region {name}'s raw storage at {where!r}: it left its region"
                        )
            if _dump(other) != before[name]:
                raise CheckFailed(
                    f"region {name}'s raw storage changed while only tenant {scope.tenant} of "
                    f"region {region} wrote: something of it landed in {name}"
                )
    if unplaced is None:
        return (
            f"a tenant of each of {', '.join(regions)} wrote rows, control records, links and "
            "vectors, none of it found in another region (reads, raw_dump); every tenant name "
            "tried is placed, so refusal was not checked"
        )
    before = {name: _dump(driver.region_driver(name)) for name in regions}
    _refusals(ctx, driver, unplaced)
    for name in regions:
        if _dump(driver.region_driver(name)) != before[name]:
            raise CheckFailed(
                f"region {name}'s raw storage changed after calls of tenant {unplaced}, "
                "placed in no region, were refused"
            )
    return (
        f"a tenant of each of {', '.join(regions)} wrote rows, control records, links and "
        "vectors, none of it found in another region (reads, raw_dump); a tenant placed "
        "nowhere was refused (ResidencyError) with nothing written"
    )
