"""The region router: one driver over one driver per region, each call sent by its tenant.

:class:`RegionRouter` implements the whole driver protocol (:class:`Driver`,
:class:`VectorDriver`, :class:`RelationDriver`) over a driver per region and a placement (a
tenant → region function). Every call carries its tenant (``row.tenant``, ``where.tenant``, a
``tenant`` argument, the tenant of a batch of links), and goes to that tenant's region's
driver alone; a tenant placed in no region is refused with
:class:`~mainsdk_memory.ResidencyError` before any driver is called, so nothing is read or
written anywhere. It is storage like any driver: it holds no keys and sees what the region
drivers see (sealed rows, pseudonyms, blinded terms).

It declares what every region declares (a capability only if each region has it; ``erase``
``"hard"`` only if each is hard) and, as ``regions``, the region names. The optional driver
methods the core asks for by name (``bulk_put``, ``rows``, ``damaged``, ``vector_state``,
``control_generation``) are there when every region driver has them, routed the same way.
``raw_dump`` is every region's, each place prefixed ``<region>/``; ``close`` closes every
region.

:class:`RegionalDriver` is what the conformance ``regions`` check asks of a driver that
declares regions to verify where data lands: the region a tenant is placed in, and the driver
of one region, to read that region alone (ADR 0098).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Container, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from mainsdk_memory._errors import ConfigurationError, InvalidInputError, ResidencyError
from mainsdk_memory.drivers._protocol import (
    Capabilities,
    Driver,
    EraseResult,
    Filter,
    RelationDriver,
    StoredLink,
    StoredRow,
    VectorDriver,
    VectorEntry,
)

__all__ = ["OPTIONAL_METHODS", "RegionRouter", "RegionalDriver", "combined_capabilities"]

#: The optional driver methods the core looks up by name, and where each call's tenant is:
#: the router has one when every region driver has it.
OPTIONAL_METHODS: dict[str, Callable[..., str | None]] = {
    "bulk_put": lambda rows, *_, **__: None if not rows else _one_tenant(
        (row.tenant for row in rows), "bulk_put"
    ),
    "rows": lambda tenant, app: tenant,
    "damaged": lambda tenant, app, subject: tenant,
    "vector_state": lambda where: where.tenant,
    "control_generation": lambda tenant, app: tenant,
}
# ``unit()`` (one call's operations as one atomic step, ADR 0096) names no tenant, so it is not
# routed: behind the router each driver method stays its own atomic step, which the SDK allows.


@runtime_checkable
class RegionalDriver(Driver, Protocol):
    """A :class:`Driver` over several regions that says where a tenant's data lives.

    The conformance ``regions`` check writes as a tenant of each region through the driver,
    then reads every other region through :meth:`region_driver` (its reads and its
    ``raw_dump``) to see that nothing landed there.
    """

    def region_of(self, tenant: str) -> str | None:
        """The region ``tenant`` is placed in (one of ``capabilities.regions``), or ``None``:
        placed nowhere, so every call of that tenant is refused with
        :class:`~mainsdk_memory.ResidencyError` and nothing is read or written."""
        ...

    def region_driver(self, region: str) -> Driver:
        """The driver of ``region`` alone (the one the router sends that region's tenants to)."""
        ...


def _one_tenant(tenants: Iterator[str] | Sequence[str], what: str) -> str:
    found = set(tenants)
    if len(found) != 1:
        raise InvalidInputError(
            f"A {what} batch holds one tenant's items (its region's); nothing was stored."
        )
    return found.pop()


def combined_capabilities(drivers: Mapping[str, Driver]) -> Capabilities:
    """What every one of ``drivers`` declares: a flag only if each declares it, ``erase``
    ``"hard"`` only if each is hard, and ``regions`` the names of ``drivers``."""
    declared = [driver.capabilities for driver in drivers.values()]
    values: dict[str, Any] = {}
    for field in fields(Capabilities):
        each = [getattr(caps, field.name) for caps in declared]
        if field.name == "regions":
            values["regions"] = tuple(drivers)
        elif field.name == "erase":
            values["erase"] = "hard" if all(mode == "hard" for mode in each) else "soft"
        elif all(isinstance(value, bool) for value in each):
            values[field.name] = all(each)
        elif all(value == each[0] for value in each):
            values[field.name] = each[0]
        else:
            raise ConfigurationError(
                f"The region stores declare different {field.name!r}, so no one value holds "
                "for all of them. Use stores that agree on it."
            )
    return replace(Capabilities(), **values)


class RegionRouter:
    """One driver over one driver per region: each call goes to its tenant's region's driver.

    ``place`` gives a tenant's region (a key of ``drivers``) or ``None`` (placed nowhere:
    refused). The router owns the region drivers: :meth:`close` closes them all.
    """

    name = "regions"

    def __init__(self, drivers: Mapping[str, Driver], place: Callable[[str], str | None]) -> None:
        if not drivers:
            raise ConfigurationError("A region router needs at least one region.")
        self._drivers: dict[str, Driver] = dict(drivers)
        self._place = place
        self.capabilities: Capabilities = combined_capabilities(self._drivers)
        """What every region declares, with ``regions`` the region names."""
        self._optional = {
            name
            for name in OPTIONAL_METHODS
            if all(callable(getattr(driver, name, None)) for driver in self._drivers.values())
        }

    def __repr__(self) -> str:
        return f"<RegionRouter regions={', '.join(self._drivers)}>"

    # -- placement --------------------------------------------------------------------------

    def region_of(self, tenant: str) -> str | None:
        """The region ``tenant`` is placed in, or ``None`` (see :class:`RegionalDriver`)."""
        region = self._place(tenant)
        if region is not None and region not in self._drivers:
            raise ConfigurationError(
                f"The placement put tenant {tenant!r} in {region!r}, which is not a region "
                f"of this store ({', '.join(self._drivers)}). Place it in a declared region."
            )
        return region

    def region_driver(self, region: str) -> Driver:
        """The driver of ``region``."""
        try:
            return self._drivers[region]
        except KeyError:
            raise ConfigurationError(
                f"No region {region!r} here; the regions are {', '.join(self._drivers)}."
            ) from None

    def _for(self, tenant: str) -> Driver:
        """The driver of ``tenant``'s region; refused before anything if it has none."""
        region = self.region_of(tenant)
        if region is None:
            raise ResidencyError(tenant)
        return self._drivers[region]

    def __getattr__(self, name: str) -> Any:
        """The optional methods of :data:`OPTIONAL_METHODS` every region driver has, routed."""
        if name.startswith("_") or name not in OPTIONAL_METHODS or name not in self._optional:
            raise AttributeError(name)
        tenant_of = OPTIONAL_METHODS[name]

        def routed(*args: Any, **kwargs: Any) -> Any:
            tenant = tenant_of(*args, **kwargs)
            if tenant is None:
                return None  # an empty batch: nothing to store anywhere
            return getattr(self._for(tenant), name)(*args, **kwargs)

        return routed

    # -- Driver -------------------------------------------------------------------------------

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store ``row`` in its tenant's region."""
        driver = self._for(row.tenant)
        if vector is None:
            driver.put(row, closes=closes)
        else:
            driver.put(row, closes=closes, vector=vector)

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        """The memory's versions, from the tenant's region."""
        return self._for(tenant).versions(tenant, app, subjects, memory_id)

    def set_pinned(
        self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool
    ) -> None:
        """Pin or unpin in the tenant's region."""
        self._for(tenant).set_pinned(tenant, app, subject, memory_id, pinned)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """Rows matching ``where``, from its tenant's region."""
        return self._for(where.tenant).list(where, limit=limit, after=after)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """BM25 ranking in ``where``'s tenant's region (a tenant's corpus is in one region)."""
        return self._for(where.tenant).search(where, query, top_k=top_k)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase in the tenant's region."""
        return self._for(tenant).erase(tenant, app, subject, memory_id)

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """What outlived ``retention`` in the tenant's region."""
        return self._for(tenant).expired(tenant, app, retention)

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Set a control record in the tenant's region."""
        self._for(tenant).control_put(tenant, app, key, value)

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        """A control record, from the tenant's region."""
        return self._for(tenant).control_get(tenant, app, key)

    def control_list(
        self, tenant: str, app: str, prefix: str
    ) -> builtins.list[tuple[str, bytes]]:
        """Control records by prefix, from the tenant's region."""
        return self._for(tenant).control_list(tenant, app, prefix)

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Every region's raw storage, each place named ``<region>/<where>``."""
        for region, driver in self._drivers.items():
            for where, data in driver.raw_dump():
                yield f"{region}/{where}", data

    def close(self) -> None:
        """Close every region's driver (each one, even if one fails; the first error goes on)."""
        failure: BaseException | None = None
        for driver in self._drivers.values():
            try:
                driver.close()
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    # -- VectorDriver -------------------------------------------------------------------------

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """Sealed embeddings matching ``where``, from its tenant's region."""
        return self._vector_driver(where.tenant).vectors(where, known=known)

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Store a version's embedding in the tenant's region."""
        self._vector_driver(tenant).put_vector(tenant, app, subject, memory_id, version, sealed)

    def _vector_driver(self, tenant: str) -> VectorDriver:
        driver = self._for(tenant)
        if not isinstance(driver, VectorDriver):
            raise InvalidInputError(
                "This region's store keeps no vectors (the router does not declare vectors)."
            )
        return driver

    # -- RelationDriver -----------------------------------------------------------------------

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Store links in their tenant's region (a batch holds one tenant's links)."""
        if not links:
            return
        tenant = _one_tenant([link.tenant for link in links], "put_links")
        self._relation_driver(tenant).put_links(links)

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """Links by either end, from the tenant's region."""
        return self._relation_driver(tenant).links(tenant, app, subjects, ids)

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """Remove links in the tenant's region."""
        self._relation_driver(tenant).delete_links(tenant, app, subject, keys)

    def _relation_driver(self, tenant: str) -> RelationDriver:
        driver = self._for(tenant)
        if not isinstance(driver, RelationDriver):
            raise InvalidInputError(
                "This region's store keeps no links (the router does not declare relations)."
            )
        return driver
