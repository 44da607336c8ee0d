"""The capabilities the suite knows, the checks registered for each, and what a check sees.

A check is a function registered with :func:`check` under one capability; it may name other
capabilities it ``needs`` (a ranking isolation check needs ``text_search``). Checks ask the
driver's declared :class:`~mainsdk_memory.Capabilities`, never its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mainsdk_memory.drivers import Capabilities, Driver, RelationDriver, StoredRow

from ._rows import Scope, SyntheticRows

__all__ = [
    "CAPABILITIES",
    "PROTOCOL_MEMBERS",
    "RELATION_MEMBERS",
    "REQUIREMENTS",
    "Capability",
    "Check",
    "CheckContext",
    "DriverFactory",
    "all_checks",
    "check",
    "missing_members",
]

#: Makes a driver on a fresh, empty store kept in the given folder; called again with the
#: same folder, it opens the same store (the concurrency checks need that).
DriverFactory = Callable[[Path], Driver]

READ_ALL = 100_000  # a list() limit larger than any store the suite writes

#: The attributes and methods of the Driver protocol, in the order it defines them.
PROTOCOL_MEMBERS: tuple[str, ...] = (
    *Driver.__annotations__,
    *(name for name, value in vars(Driver).items() if callable(value) and name[0] != "_"),
)


def missing_members(driver: object) -> tuple[str, ...]:
    """The :class:`Driver` attributes and methods that ``driver`` lacks (methods must be
    callable). ``vectors()`` is not among them: only a driver that declares ``vectors`` needs
    it (:class:`~mainsdk_memory.drivers.VectorDriver`), and the vector checks ask for it; nor
    are ``put_links()``, ``links()`` and ``delete_links()``, which only a driver that
    declares ``relations`` needs (:data:`RELATION_MEMBERS`, asked by the relation checks)."""
    annotations = set(Driver.__annotations__)
    return tuple(
        name
        for name in PROTOCOL_MEMBERS
        if not hasattr(driver, name)
        or (name not in annotations and not callable(getattr(driver, name)))
    )


#: The methods a driver that declares ``relations`` adds (:class:`RelationDriver`).
RELATION_MEMBERS: tuple[str, ...] = tuple(
    name
    for name, value in vars(RelationDriver).items()
    if callable(value) and name[0] != "_" and name not in PROTOCOL_MEMBERS
)


def _required(_caps: Capabilities) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Capability:
    """A capability the suite reports on: a declared one, or part of the required contract."""

    name: str
    description: str
    declared: Callable[[Capabilities], bool] = _required
    shown: Callable[[Capabilities], str] = lambda _caps: "required"


#: Every capability in report order: the contract every driver keeps, then the declared ones.
CAPABILITIES: tuple[Capability, ...] = (
    Capability("protocol", "The factory gives a Driver with a name and typed Capabilities."),
    Capability("round_trip", "Rows come back exactly as stored: every field, every byte."),
    Capability(
        "versions", "put(closes=n) makes version n+1 atomically; a conflict changes nothing."
    ),
    Capability("filters", "Kinds and pinned filters; set_pinned changes no version."),
    Capability("isolation", "No read or write crosses a tenant, app, subject or session."),
    Capability("pagination", "list() is newest first and pages with `after` without gaps."),
    Capability("raw_storage", "raw_dump() shows what the driver stores."),
    Capability(
        "retention", "Filter.retention hides memories past their cutoff; expired() lists them."
    ),
    Capability(
        "control", "Control records: exact bytes, by prefix, deleted for good, per tenant and app."
    ),
    Capability(
        "erase",
        "erase() removes every version; a 'hard' erase leaves no byte in raw storage.",
        shown=lambda caps: repr(caps.erase),
    ),
    Capability(
        "text_search",
        "search() equals bm25_rank exactly: rows, order, ties and scores in [0, 1].",
        declared=lambda caps: caps.text_search is True,
        shown=lambda caps: repr(caps.text_search),
    ),
    Capability(
        "time_travel",
        "Closed versions are kept and Filter.as_of selects the version valid then.",
        declared=lambda caps: caps.time_travel is True,
        shown=lambda caps: repr(caps.time_travel),
    ),
    Capability(
        "concurrent_writers",
        "Threads and processes writing one store at once lose nothing.",
        declared=lambda caps: caps.concurrent_writers is True,
        shown=lambda caps: repr(caps.concurrent_writers),
    ),
    Capability(
        "vectors",
        "put(vector=) keeps each version's sealed embedding; vectors() returns the filtered ones.",
        declared=lambda caps: caps.vectors is not False,
        shown=lambda caps: repr(caps.vectors),
    ),
    Capability(
        "relations",
        "put_links() keeps links by key; links() finds them by either end; erase() removes them.",
        declared=lambda caps: caps.relations is True,
        shown=lambda caps: repr(caps.relations),
    ),
    Capability(
        "person_records",
        "Control records of 64 KiB are kept exactly; hundreds under one prefix list in key order.",
        declared=lambda caps: caps.person_records is True,
        shown=lambda caps: repr(caps.person_records),
    ),
    Capability(
        "tags",
        "Blinded tags come back as stored; Filter.tags and tags_absent select in every read.",
        declared=lambda caps: caps.tags is True,
        shown=lambda caps: repr(caps.tags),
    ),
    Capability(
        "regions",
        "Regions are well-formed names; a RegionalDriver keeps each tenant's writes in its own.",
        declared=lambda caps: caps.regions != (),
        shown=lambda caps: repr(caps.regions),
    ),
)

_BY_NAME = {capability.name: capability for capability in CAPABILITIES}

#: What a check may need: a capability by name, or a declared value of one.
REQUIREMENTS: dict[str, Callable[[Capabilities], bool]] = {
    **{capability.name: capability.declared for capability in CAPABILITIES},
    "hard_erase": lambda caps: caps.erase == "hard",
}


@dataclass
class CheckContext:
    """What a check works with: a fresh driver, its folder, and a synthetic row source."""

    factory: DriverFactory
    folder: Path
    driver: Driver
    capabilities: Capabilities
    rows: SyntheticRows
    seed: int
    _others: list[Driver] = field(default_factory=list)

    def open_another(self) -> Driver:
        """Another driver on the same store (closed when the check ends)."""
        other = self.factory(self.folder)
        self._others.append(other)
        return other

    def close_others(self) -> None:
        """Close the drivers :meth:`open_another` made."""
        while self._others:
            self._others.pop().close()

    def scope(self, *, tenant: str | None = None, app: str | None = None) -> Scope:
        """A new scope (see :meth:`SyntheticRows.scope`)."""
        return self.rows.scope(tenant=tenant, app=app)

    def put_all(self, rows: list[StoredRow]) -> None:
        """Store each row as version 1 of a new memory."""
        for row in rows:
            self.driver.put(row)

    def read_scope(self, scope: Scope, driver: Driver | None = None) -> list[StoredRow]:
        """Every current row in ``scope``, through ``list()``."""
        return (driver or self.driver).list(scope.where(), limit=READ_ALL)


CheckFunction = Callable[[CheckContext], str | None]
"""A check: raises :class:`CheckFailed` with a reason, or returns a note on what it covered."""


@dataclass(frozen=True, slots=True)
class Check:
    """One conformance check of one capability."""

    capability: str
    name: str
    description: str
    """What it verifies, in one line (the function's docstring)."""
    needs: tuple[str, ...]
    """Other capabilities that must be declared for this check to run."""
    function: CheckFunction
    alone: bool = False
    """Runs with no other check at once (it forks processes and starts threads itself)."""

    @property
    def id(self) -> str:
        """``<capability>.<name>``, the check's name in reports and pytest ids."""
        return f"{self.capability}.{self.name}"

    def missing(self, caps: Capabilities) -> tuple[str, ...]:
        """The capabilities this check needs that ``caps`` does not declare."""
        return tuple(
            name for name in (self.capability, *self.needs) if not REQUIREMENTS[name](caps)
        )


_CHECKS: list[Check] = []


def check(
    capability: str, *, needs: tuple[str, ...] = (), alone: bool = False
) -> Callable[[CheckFunction], Check]:
    """Register the decorated function as a check of ``capability``."""
    if capability not in _BY_NAME:
        raise ValueError(f"unknown capability {capability!r}")
    for name in needs:
        if name not in REQUIREMENTS:
            raise ValueError(f"unknown requirement {name!r}")

    def register(function: CheckFunction) -> Check:
        doc = (function.__doc__ or "").strip().splitlines()
        registered = Check(
            capability=capability,
            name=function.__name__.removeprefix("check_"),
            description=doc[0] if doc else "",
            needs=needs,
            function=function,
            alone=alone,
        )
        _CHECKS.append(registered)
        return registered

    return register


def all_checks() -> tuple[Check, ...]:
    """Every registered check, in capability order, then in registration order."""
    order = {capability.name: index for index, capability in enumerate(CAPABILITIES)}
    return tuple(sorted(_CHECKS, key=lambda c: order[c.capability]))
