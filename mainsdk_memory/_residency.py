"""Residency: tenants placed in regions, one store (and optionally one key store) per region.

A ``regions:PATH`` store URL names a TOML file (:meth:`Residency.from_toml`)::

    [regions.eu]
    store = "postgresql+psycopg://app@eu-db/memory"   # any store URL but another regions:
    keys = "/srv/mainsdk/keys-eu"                     # optional; default: Memory.open's keys=
    [regions.us]
    store = "sqlite:////srv/us.db"
    [tenants]
    acme = "eu"
    globex = "us"

The whole file is checked before anything is opened; a mistake is a
:class:`~mainsdk_memory.ConfigurationError` that says what to fix and never shows a store URL
(it may hold a password). From Python the same is a :class:`Residency` of :class:`Region`
values, whose ``tenants`` may also be a function (tenant id → region name or ``None``).

Opening gives two routers that both place a tenant with the same placement: a
:class:`~mainsdk_memory.drivers._regions.RegionRouter` over the regions' drivers, and a
:class:`KeyRouter` over their key stores, which hands out a tenant's person and pseudonym
keys, anchors (rate counts, formation locks, control digests) and receipt signing key from
its region's key store. A tenant placed nowhere is refused by both
(:class:`~mainsdk_memory.ResidencyError`) before either reads or writes anything (ADR 0098).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import tomllib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from mainsdk_memory import tenant as _tenant
from mainsdk_memory._errors import (
    ConfigurationError,
    KeyStoreError,
    MemorySDKError,
    NoTenantError,
    ResidencyError,
)
from mainsdk_memory._progress import Progress
from mainsdk_memory.drivers._protocol import Driver
from mainsdk_memory.drivers._regions import RegionRouter
from mainsdk_memory.keys import KeyStore, RotationReport, SigningKey, SubjectKeys
from mainsdk_memory.keys._anchors import Anchors, MemoryAnchor

__all__ = [
    "SCHEME",
    "AnchorRouter",
    "KeyRouter",
    "Region",
    "Residency",
    "refuse_keys_inside",
    "region_keys",
    "residency_of",
]

#: The store URL scheme of a residency file: ``regions:PATH``.
SCHEME = "regions"

#: A region's name, as the conformance ``regions`` check accepts it.
_REGION = re.compile(r"[a-z][a-z0-9-]{0,62}")
#: A tenant id, as ``tenant.use`` accepts it.
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_DRIVERS = "mainsdk_memory.drivers"

Placement = Mapping[str, str] | Callable[[str], str | None]
"""Tenant id → region name: a mapping, or a function (``None``: placed nowhere)."""


def _scheme(url: object, region: str) -> str:
    """The driver scheme of a region's store URL, checked without opening it (the URL itself
    is never shown: it may hold a password)."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(
            f"Region {region!r} needs store = \"<store URL>\" (a string, for example "
            "\"sqlite:////srv/eu.db\")."
        )
    scheme, sep, rest = url.partition(":")
    if not sep or not scheme or not rest:
        raise ConfigurationError(
            f"The store of region {region!r} is not a store URL: it starts with its driver "
            "scheme, for example 'postgresql+psycopg://…' or 'local:/srv/eu'."
        )
    name = scheme.split("+", 1)[0].lower()
    if name == SCHEME:
        raise ConfigurationError(
            f"The store of region {region!r} is itself a regions: URL. A region's store is "
            "one store (local:, sqlite:, postgresql+psycopg: …); regions do not nest."
        )
    known = {entry.name for entry in entry_points(group=_DRIVERS)}
    if name not in known:
        raise ConfigurationError(
            f"The store of region {region!r} has the scheme {name!r}, for which no memory "
            f"driver is installed. Known schemes: {', '.join(sorted(known))}."
        )
    return name


@dataclass(frozen=True, slots=True)
class Region:
    """One region: its store URL and, optionally, its own key store."""

    store: str = field(repr=False)
    """The region's store URL (any store URL the SDK opens, but not ``regions:``)."""
    keys: str | os.PathLike[str] | None = None
    """The region's key store folder; ``None``: the ``keys=`` given to ``Memory.open``."""

    def __repr__(self) -> str:
        shown = self.store.partition(":")[0] if isinstance(self.store, str) else "?"
        return f"Region(store='{shown}:…', keys={self.keys!r})"  # never the URL: a password


@dataclass(frozen=True, slots=True)
class Residency:
    """Where each tenant's memory lives: regions, and the placement of tenants in them.

    Checked whole when made (:class:`~mainsdk_memory.ConfigurationError` naming what to fix).
    ``tenants`` is a mapping of tenant id → region name, or a function returning a tenant's
    region name or ``None`` (placed nowhere: its calls are refused with
    :class:`~mainsdk_memory.ResidencyError`).
    """

    regions: Mapping[str, Region]
    tenants: Placement = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.regions, Mapping) or not self.regions:
            raise ConfigurationError(
                "A residency declares at least one region: [regions.<name>] with "
                "store = \"<store URL>\"."
            )
        for name, region in self.regions.items():
            if not isinstance(name, str) or not _REGION.fullmatch(name):
                raise ConfigurationError(
                    f"{name!r} is not a region name: lowercase letters, digits and '-', "
                    "starting with a letter, at most 63 characters (for example 'eu' or "
                    "'us-east-1')."
                )
            if not isinstance(region, Region):
                raise ConfigurationError(f"Region {name!r} is not a Region(store=..., keys=...).")
            _scheme(region.store, name)
            if region.keys is not None and (
                not isinstance(region.keys, str | os.PathLike) or not str(region.keys)
            ):
                raise ConfigurationError(
                    f"keys of region {name!r} is the path of its key store folder (or left out "
                    "for the keys= given to Memory.open)."
                )
        object.__setattr__(self, "regions", MappingProxyType(dict(self.regions)))
        if isinstance(self.tenants, Mapping):
            for tenant_id, region_name in self.tenants.items():
                if not isinstance(tenant_id, str) or not _TENANT.fullmatch(tenant_id):
                    raise ConfigurationError(
                        f"{tenant_id!r} under [tenants] is not a tenant id (letters, digits, "
                        "'.', '_' and '-', starting with a letter or digit)."
                    )
                if region_name not in self.regions:
                    raise ConfigurationError(
                        f"Tenant {tenant_id!r} is placed in {region_name!r}, which is not a "
                        f"declared region ({', '.join(self.regions)}). Declare "
                        f"[regions.{region_name}] or place the tenant in one of those."
                    )
            object.__setattr__(self, "tenants", MappingProxyType(dict(self.tenants)))
        elif not callable(self.tenants):
            raise ConfigurationError(
                "tenants is a mapping of tenant id to region name, or a function of a tenant "
                "id returning its region name (or None)."
            )

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Residency:
        """Read and check the residency file at ``path`` (see the module docstring)."""
        file = Path(path)
        try:
            document = tomllib.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigurationError(
                f"No residency file at {file}. A regions: URL names a TOML file with "
                "[regions.<name>] tables and a [tenants] table (docs/scaling.md)."
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"The residency file {file} cannot be read ({type(exc).__name__}). Check its "
                "path and permissions."
            ) from None
        except tomllib.TOMLDecodeError as exc:
            # Only the position: a parser's message may quote a character of a store URL.
            where = re.search(r"\(at [^)]*\)", str(exc))
            at = f" {where.group(0)}" if where else ""
            raise ConfigurationError(
                f"The residency file {file} is not valid TOML{at}. Fix it and open again."
            ) from None
        return cls.from_document(document, source=str(file))

    @classmethod
    def from_document(cls, document: Mapping[str, Any], *, source: str = "residency") -> Residency:
        """Check a parsed residency document (what :meth:`from_toml` reads) and make it."""
        unknown = sorted(set(document) - {"regions", "tenants"})
        if unknown:
            raise ConfigurationError(
                f"{source} has unknown top-level keys {', '.join(map(repr, unknown))}; a "
                "residency file holds only [regions.<name>] tables and [tenants]."
            )
        regions = document.get("regions")
        if not isinstance(regions, dict) or not regions:
            raise ConfigurationError(
                f"{source} declares no region: add [regions.<name>] with "
                "store = \"<store URL>\"."
            )
        made: dict[str, Region] = {}
        for name, table in regions.items():
            if not isinstance(table, dict):
                raise ConfigurationError(
                    f"regions.{name} in {source} is a table: [regions.{name}] with "
                    "store = \"<store URL>\" and, optionally, keys = \"<key store folder>\"."
                )
            extra = sorted(set(table) - {"store", "keys"})
            if extra:
                raise ConfigurationError(
                    f"[regions.{name}] in {source} has unknown keys "
                    f"{', '.join(map(repr, extra))}; a region has only store and keys."
                )
            if "store" not in table:
                raise ConfigurationError(
                    f"[regions.{name}] in {source} has no store = \"<store URL>\"."
                )
            keys = table.get("keys")
            if keys is not None and (not isinstance(keys, str) or not keys):
                raise ConfigurationError(
                    f"keys of [regions.{name}] in {source} is the path of the region's key "
                    "store folder, as a string."
                )
            made[name] = Region(store=table["store"], keys=keys)
        tenants = document.get("tenants", {})
        if not isinstance(tenants, dict):
            raise ConfigurationError(
                f"tenants in {source} is a table: [tenants] with lines <tenant> = \"<region>\"."
            )
        for tenant_id, region_name in tenants.items():
            if not isinstance(region_name, str):
                raise ConfigurationError(
                    f"Tenant {tenant_id!r} in {source} is placed by a region name in quotes, "
                    f"for example {tenant_id} = \"{next(iter(made))}\"."
                )
        return cls(regions=made, tenants=dict(tenants))

    # -- placement ----------------------------------------------------------------------------

    def place(self, tenant_id: str) -> str | None:
        """The region ``tenant_id`` is placed in, or ``None`` (placed nowhere)."""
        if isinstance(self.tenants, Mapping):
            return self.tenants.get(tenant_id)
        region = self.tenants(tenant_id)
        if region is not None and region not in self.regions:
            raise ConfigurationError(
                f"The placement function put tenant {tenant_id!r} in {region!r}, which is not "
                f"a declared region ({', '.join(self.regions)})."
            )
        return region

    # -- opening ------------------------------------------------------------------------------

    def open_router(self) -> RegionRouter:
        """The regions' drivers behind one router (no key stores: ``open_driver``'s view)."""
        return RegionRouter(self._open_drivers(), self.place)

    def _open_drivers(self) -> dict[str, Driver]:
        # Imported here: the registry imports this module when it meets a regions: URL.
        from mainsdk_memory.drivers._registry import open_driver

        opened: dict[str, Driver] = {}
        try:
            for name, region in self.regions.items():
                opened[name] = open_driver(region.store)
        except BaseException:
            for driver in opened.values():
                with contextlib.suppress(Exception):
                    driver.close()
            raise
        return opened

    def open(
        self, *, keys: str | os.PathLike[str], allow_readable: bool = False
    ) -> tuple[RegionRouter, KeyRouter]:
        """Open every region's key store (``keys`` for those without their own), then every
        region's store: the driver router and the key router, placing tenants alike.

        Every key store is opened first, so a missing one fails before any store is made.
        """
        by_path: dict[Path, KeyStore] = {}
        stores: dict[str, KeyStore] = {}
        for name, region in self.regions.items():
            path = Path(region.keys if region.keys is not None else keys).resolve()
            if path not in by_path:
                by_path[path] = KeyStore.open(path, allow_readable=allow_readable)
            stores[name] = by_path[path]
        drivers = self._open_drivers()
        try:
            for name, driver in drivers.items():
                refuse_keys_inside(driver, stores[name].path)
            return RegionRouter(drivers, self.place), KeyRouter(stores, self.place)
        except BaseException:
            for driver in drivers.values():
                with contextlib.suppress(Exception):
                    driver.close()
            raise


def residency_of(url: object) -> Residency | None:
    """The residency ``url`` names: a :class:`Residency` itself, or a ``regions:PATH`` URL's
    file, read and checked whole; ``None`` for any other store URL."""
    if isinstance(url, Residency):
        return url
    if not isinstance(url, str):
        return None
    scheme, sep, path = url.partition(":")
    if not sep or scheme.lower() != SCHEME:
        return None
    if not path:
        raise ConfigurationError(
            "A regions: URL names its residency file, for example 'regions:/srv/regions.toml'."
        )
    return Residency.from_toml(path)


def refuse_keys_inside(driver: Driver, keys: str | os.PathLike[str]) -> None:
    """Refuse a key store inside a store kept in a folder or file (or the store inside it),
    so a copy or backup of the store never carries its keys."""
    root = getattr(driver, "root", None)
    if isinstance(root, Path):
        key_path = Path(keys).resolve()
        store_path = root.resolve()
        if key_path.is_relative_to(store_path) or store_path.is_relative_to(key_path):
            raise ConfigurationError(
                "The key store must live outside the memory store (and the store "
                "outside the key store), so a copy or backup of the store never "
                "carries its keys."
            )


def region_keys(keys: KeyStore, tenant_id: str) -> KeyStore:
    """The key store that holds ``tenant_id``'s keys: its region's behind a
    :class:`KeyRouter`, else ``keys`` itself."""
    return keys.store_for(tenant_id) if isinstance(keys, KeyRouter) else keys


class KeyRouter(KeyStore):
    """Key stores by region, as one :class:`~mainsdk_memory.keys.KeyStore` to the core.

    Every call that names a tenant goes to that tenant's region's key store; the signing key
    and public keys (no tenant named) are the current tenant's region's
    (:func:`mainsdk_memory.tenant.current`). A tenant placed nowhere is refused with
    :class:`~mainsdk_memory.ResidencyError` before any key store is read or written. The
    router holds no keys of its own (the base's state is never built); every public member
    of ``KeyStore`` is routed here, and a test keeps it so. Regions may share a key store:
    with one for all, every call reaches exactly what it reaches without residency.
    """

    def __init__(self, stores: Mapping[str, KeyStore], place: Callable[[str], str | None]) -> None:
        # KeyStore.__init__ is not called on purpose: a router reads no keystore.json.
        self._stores = dict(stores)
        self._place = place
        self.path = next(iter(self._stores.values())).path
        self._anchor_router = AnchorRouter(self)
        self.anchors = self._anchor_router

    def __repr__(self) -> str:
        return f"<KeyRouter regions={', '.join(self._stores)} (keys hidden)>"

    @property
    def distinct(self) -> list[KeyStore]:
        """Each key store once, in region order."""
        seen: dict[int, KeyStore] = {}
        for store in self._stores.values():
            seen.setdefault(id(store), store)
        return list(seen.values())

    def store_for(self, tenant_id: str) -> KeyStore:
        """The key store of ``tenant_id``'s region; :class:`ResidencyError` if it has none."""
        region = self._place(tenant_id)
        if region is None:
            raise ResidencyError(tenant_id)
        return self._stores[region]

    def _current(self) -> KeyStore:
        return self.store_for(_tenant.current())

    # -- subjects -----------------------------------------------------------------------------

    def anchor_name(self, tenant: str, app: str, subject: str) -> str:
        """The anchors' name of a subject, in the tenant's region's key store."""
        return self.store_for(tenant).anchor_name(tenant, app, subject)

    def anchor_scope(self, tenant: str, app: str) -> str:
        """The anchors' name of a tenant and app, in its region's key store (remembered, so
        the anchors' calls by that scope reach the same key store)."""
        store = self.store_for(tenant)
        scope = store.anchor_scope(tenant, app)
        self._anchor_router.name(scope, store.anchors)
        return scope

    def subject_keys(
        self, tenant: str, app: str, subject: str, *, create: bool
    ) -> SubjectKeys | None:
        """A subject's keys, from the tenant's region's key store."""
        return self.store_for(tenant).subject_keys(tenant, app, subject, create=create)

    def destroy_subject(self, tenant: str, app: str, subject: str) -> bool:
        """Destroy a subject's secret in the tenant's region's key store (no other)."""
        return self.store_for(tenant).destroy_subject(tenant, app, subject)

    def rotate(self, *, progress: Progress | None = None) -> RotationReport:
        """Not through the router: each region's key store rotates on its own."""
        raise KeyStoreError(
            "A residency's key stores rotate one by one: run `memory keys rotate --keys PATH` "
            "for each region's key store."
        )

    # -- signing ------------------------------------------------------------------------------

    @property
    def signing_key(self) -> SigningKey:
        """The current tenant's region's signing key."""
        return self._current().signing_key

    def public_keys(self) -> Iterable[tuple[str, Ed25519PublicKey]]:
        """The current tenant's region's signing public keys."""
        return self._current().public_keys()

    def export_public_pem(self, kid: str | None = None) -> bytes:
        """A signing public key of the current tenant's region, as PEM."""
        return self._current().export_public_pem(kid)

    def export_public_jwks(self) -> dict[str, Any]:
        """The current tenant's region's signing public keys, as a JWK Set."""
        return self._current().export_public_jwks()


class AnchorRouter(Anchors):
    """The anchors of a :class:`KeyRouter`'s key stores, as one ``Anchors`` to the core.

    Anchors are called by scope (``<scope>`` or ``<scope>/…``), a name that only
    :meth:`KeyRouter.anchor_scope` hands out and remembers with its key store, so a call goes
    to the key store the scope came from. The control lock (no scope) is the current tenant's
    key store's; outside any tenant (the uses ``Memory.close`` writes) every key store's,
    taken in one order.
    """

    def __init__(self, keys: KeyRouter) -> None:
        # Anchors.__init__ is not called on purpose: a router opens no database.
        self._keys = keys
        self._scopes: dict[str, Anchors] = {}
        self._named_lock = threading.Lock()

    def name(self, scope: str, anchors: Anchors) -> None:
        """Remember that ``scope`` is ``anchors``'s."""
        with self._named_lock:
            self._scopes[scope] = anchors

    def _of(self, scope: str) -> Anchors:
        found = self._scopes.get(scope.partition("/")[0])
        if found is None:
            raise KeyStoreError(
                "An anchors scope was used that the key router did not hand out; this is a "
                "bug in mainsdk-memory. Report it (no data was read or written)."
            )
        return found

    def _distinct(self) -> list[Anchors]:
        return [store.anchors for store in self._keys.distinct]

    @property
    def path(self) -> Path:
        """The first region's key store's anchors database (each region has its own)."""
        return self._distinct()[0].path

    def create(self) -> None:
        """Not through the router: each key store creates its own anchors."""
        raise KeyStoreError("A key router's anchors are its key stores'; create those.")

    @contextlib.contextmanager
    def control_lock(self, *, exclusive: bool) -> Iterator[None]:
        """The control lock of the current tenant's key store (every one outside a tenant)."""
        try:
            held = [self._keys.store_for(_tenant.current()).anchors]
        except NoTenantError:
            held = self._distinct()
        with contextlib.ExitStack() as stack:
            for anchors in held:
                stack.enter_context(anchors.control_lock(exclusive=exclusive))
            yield

    def formation_lock(self, scope: str, subject: str) -> AbstractContextManager[None]:
        """The formation lock of a subject, in its scope's key store."""
        return self._of(scope).formation_lock(scope, subject)

    @contextlib.contextmanager
    def formation_locks(self, scope: str, subjects: Iterable[str]) -> Iterator[None]:
        """The formation locks of many subjects, in their scope's key store."""
        with self._of(scope).formation_locks(scope, subjects):
            yield

    def close(self) -> None:
        """Close every key store's anchors."""
        failure: MemorySDKError | None = None
        for anchors in self._distinct():
            try:
                anchors.close()
            except MemorySDKError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def anchor(
        self,
        scope: str,
        memory_id: str,
        subject: str,
        row_subject: str,
        *,
        agent: str,
        pinned: bool,
        created_at: datetime,
        labels: tuple[str, ...],
        cap: int | None = None,
    ) -> bytes:
        """Anchor a memory in its scope's key store."""
        return self._of(scope).anchor(
            scope, memory_id, subject, row_subject, agent=agent, pinned=pinned,
            created_at=created_at, labels=labels, cap=cap,
        )

    def anchor_many(
        self,
        scope: str,
        entries: Iterable[tuple[str, str, str, str, datetime, tuple[str, ...]]],
        *,
        pinned: Collection[str] = frozenset(),
        cap: int | None = None,
    ) -> dict[str, bytes]:
        """Anchor many memories in their scope's key store."""
        return self._of(scope).anchor_many(scope, entries, pinned=pinned, cap=cap)

    def advance(self, scope: str, memory_id: str, version: int, labels: tuple[str, ...]) -> None:
        """Advance a memory's anchor in its scope's key store."""
        self._of(scope).advance(scope, memory_id, version, labels)

    def set_pinned(self, scope: str, memory_id: str, pinned: int) -> None:
        """Set an anchor's pinned flag in its scope's key store."""
        self._of(scope).set_pinned(scope, memory_id, pinned)

    def memory(self, scope: str, memory_id: str) -> MemoryAnchor | None:
        """A memory's anchor, from its scope's key store."""
        return self._of(scope).memory(scope, memory_id)

    def memories(self, scope: str) -> list[tuple[str, str]]:
        """Every live memory of a scope, from its key store."""
        return self._of(scope).memories(scope)

    def expired(
        self, scope: str, retention: Sequence[tuple[str, datetime]]
    ) -> list[tuple[str, str, str]]:
        """The expired memories of a scope, from its key store."""
        return self._of(scope).expired(scope, retention)

    def drop(self, scope: str, memory_id: str) -> None:
        """Drop a memory's anchor in its scope's key store."""
        self._of(scope).drop(scope, memory_id)

    def drop_subject(self, subject: str) -> None:
        """Drop a subject's anchors in the current tenant's key store (a subject's name is
        its key store's own HMAC; ``destroy_subject`` calls its store's directly)."""
        self._keys.store_for(_tenant.current()).anchors.drop_subject(subject)

    def control_begin(self, scope: str, key: str, new: bytes | None) -> None:
        """Before a control record's write, in its scope's key store."""
        self._of(scope).control_begin(scope, key, new)

    def control_commit(self, scope: str, key: str, new: bytes | None) -> None:
        """After a control record's write, in its scope's key store."""
        self._of(scope).control_commit(scope, key, new)

    def control(self, scope: str, prefix: str) -> dict[str, frozenset[bytes | None]]:
        """The accepted forms of control records, from the scope's key store."""
        return self._of(scope).control(scope, prefix)

    def count_write(self, scope: str, per_minute: int, now: float) -> bool:
        """Count a write in the scope's key store (``<scope>/<agent>``)."""
        return self._of(scope).count_write(scope, per_minute, now)
