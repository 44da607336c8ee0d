"""Relation checks: links kept by key, found by either end in their scope, erased with either end.

A driver that declares ``relations`` stores :class:`StoredLink` values with ``put_links``
(a batch whole or not at all; a key already stored in its tenant, app and subject is
replaced), returns with ``links(tenant, app, subjects, ids)`` every link of those subjects
with one of ``ids`` at an end, sorted by (subject, key), removes links by key with
``delete_links``, and erases with a memory every link that has it at either end, in any
subject of its tenant and app. The suite keeps its own record of the links it put and
compares every answer with it. Sealed blobs are random bytes and keys random hex, so a link
left in raw storage after a hard erase is found exactly as a sealed row is (ADR 0022).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from mainsdk_memory import MemorySDKError
from mainsdk_memory.drivers import TENANT_SUBJECT, RelationDriver, StoredLink

from ._checks_erase import _blob_needles, _find, _haystacks, _Needle
from ._model import CheckFailed
from ._registry import RELATION_MEMBERS, CheckContext, check
from ._rows import Scope

__all__: list[str] = []

LinkKey = tuple[str, str, str, str]  # tenant, app, subject, key


def _name(link: StoredLink) -> str:
    """A short name for a link in a reason: its key's start and its ends, never its blob."""
    return f"link {link.key[:8]}… ({link.source} -> {link.target})"


@dataclass
class _Record:
    """The links the driver should hold after the check's writes: the reference for links()."""

    ctx: CheckContext
    held: dict[LinkKey, StoredLink] = field(default_factory=dict)

    @staticmethod
    def key(link: StoredLink) -> LinkKey:
        return (link.tenant, link.app, link.subject, link.key)

    def put(self, links: Sequence[StoredLink]) -> None:
        """put_links(links), and what it should have stored."""
        _driver(self.ctx).put_links(links)
        for link in links:
            self.held[self.key(link)] = link

    def delete(self, tenant: str, app: str, subject: str, keys: Iterable[str]) -> None:
        """delete_links(...), and what it should have removed."""
        keys = list(keys)
        _driver(self.ctx).delete_links(tenant, app, subject, keys)
        for key in keys:
            self.held.pop((tenant, app, subject, key), None)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> list[StoredLink]:
        """erase() of a memory; returns the links it should have taken with it."""
        self.ctx.driver.erase(tenant, app, subject, memory_id)
        gone = [
            link
            for link in self.held.values()
            if (link.tenant, link.app) == (tenant, app)
            and memory_id in (link.source, link.target)
        ]
        for link in gone:
            del self.held[self.key(link)]
        return gone

    def expected(
        self, tenant: str, app: str, subjects: Iterable[str], ids: Iterable[str]
    ) -> list[StoredLink]:
        """What links(tenant, app, subjects, ids) must return, in order."""
        subjects, ids = set(subjects), set(ids)
        return sorted(
            (
                link
                for link in self.held.values()
                if (link.tenant, link.app) == (tenant, app)
                and link.subject in subjects
                and (link.source in ids or link.target in ids)
            ),
            key=lambda link: (link.subject, link.key),
        )

    def read(
        self, scope: Scope, subjects: Sequence[str], ids: Sequence[str], what: str
    ) -> list[StoredLink]:
        """links(...) compared with the record; returns what it returned."""
        got = _driver(self.ctx).links(scope.tenant, scope.app, subjects, ids)
        want = self.expected(scope.tenant, scope.app, subjects, ids)
        _expect_links(got, want, what, self, scope, subjects)
        return got


def _driver(ctx: CheckContext) -> RelationDriver:
    """The driver, as the RelationDriver it must be when it declares relations."""
    driver = ctx.driver
    missing = [
        name for name in RELATION_MEMBERS if not callable(getattr(driver, name, None))
    ]
    if missing or not isinstance(driver, RelationDriver):
        raise CheckFailed(
            "relations is declared, but the driver has no "
            f"{', '.join(f'{name}()' for name in missing) or 'relation'} method: a driver "
            "that declares relations is a RelationDriver"
        )
    return driver


def _expect_links(
    got: object,
    want: list[StoredLink],
    what: str,
    record: _Record,
    scope: Scope,
    subjects: Sequence[str],
) -> None:
    """Fail unless ``got`` is exactly ``want``: the same links, the same bytes, in order.

    ``scope`` names the tenant and app read (its subject is not used), ``subjects`` the
    subjects named."""
    call = f"links({what})"
    if not isinstance(got, list):
        raise CheckFailed(f"{call} returned a {type(got).__name__}, not a list of StoredLink")
    wanted = {_Record.key(link): link for link in want}
    seen: set[LinkKey] = set()
    for item in got:
        if not isinstance(item, StoredLink):
            raise CheckFailed(f"{call} returned a {type(item).__name__}, not a StoredLink")
        key = _Record.key(item)
        if key in seen:
            raise CheckFailed(
                f"{call} returned two links with the key {item.key[:8]}… in one subject: a "
                "put_links() of a stored key must replace the link, not add one"
            )
        seen.add(key)
    for item in got:
        key = _Record.key(item)
        if key not in wanted:
            if item.tenant != scope.tenant:
                why = f"of tenant {item.tenant!r}: links leak across tenants"
            elif item.app != scope.app:
                why = f"of app {item.app!r}: links leak across apps"
            elif item.subject not in subjects:
                why = (
                    f"of subject {item.subject!r}, which the read does not name: links leak "
                    "across subjects"
                )
            elif key not in record.held:
                why = "which is not stored (deleted, erased, replaced or never put)"
            else:
                why = "which has none of the ids asked for at either end"
            raise CheckFailed(f"{call} returned {_name(item)}, {why}")
        expected = wanted[key]
        for name in ("source", "target"):
            if getattr(item, name) != getattr(expected, name):
                raise CheckFailed(
                    f"{call} returned {_name(item)} with another {name} than the last "
                    f"put_links() of its key gave ({_name(expected)})"
                )
        if type(item.sealed) is not bytes:
            raise CheckFailed(
                f"{call} returned the sealed blob of {_name(item)} as a "
                f"{type(item.sealed).__name__}, not bytes"
            )
        if item.sealed != expected.sealed:
            raise CheckFailed(
                f"{call} returned {len(item.sealed)} bytes for {_name(item)}, not the "
                f"{len(expected.sealed)} bytes of the last put_links() of its key"
            )
    missing = [key for key in wanted if key not in seen]
    if missing:
        raise CheckFailed(
            f"{call} left out {len(missing)} of {len(wanted)} links it should return "
            f"(first: {_name(wanted[missing[0]])})"
        )
    order = [(link.subject, link.key) for link in got if isinstance(link, StoredLink)]
    if order != sorted(order):
        raise CheckFailed(f"{call} is not sorted by subject and key")


def _link(
    ctx: CheckContext, scope: Scope, source: str, target: str, key: str | None = None
) -> StoredLink:
    """A new link of ``scope``'s subject: a random key (unless given), random sealed bytes."""
    return StoredLink(
        tenant=scope.tenant,
        app=scope.app,
        subject=scope.subject,
        source=source,
        target=target,
        key=ctx.rows.hex(32) if key is None else key,
        sealed=ctx.rows.sealed(ctx.rows.rng.randint(40, 200)),
    )


def _entity(ctx: CheckContext) -> str:
    """A new entity id, shaped like the core's (``ent_`` and 24 hex digits)."""
    return "ent_" + ctx.rows.hex(24)


def _subjects(scope: Scope, *others: Scope) -> list[str]:
    return sorted({scope.subject, *(other.subject for other in others)})


@check("relations")
def check_declared(ctx: CheckContext) -> str | None:
    """A driver that declares relations has put_links(), links() and delete_links()."""
    _driver(ctx)
    return None


@check("relations")
def check_round_trip(ctx: CheckContext) -> str | None:
    """links() returns exactly the links put, by source and by target, sorted by subject and key."""
    record = _Record(ctx)
    mine = ctx.scope()
    other = Scope(mine.tenant, mine.app, ctx.rows.subject())
    shared = Scope(mine.tenant, mine.app, TENANT_SUBJECT)
    subjects = _subjects(mine, other, shared)
    if _driver(ctx).links(mine.tenant, mine.app, subjects, [ctx.rows.memory_id()]):
        raise CheckFailed("links() on a fresh store returned links")
    m = [ctx.rows.memory_id() for _ in range(6)]
    entity = _entity(ctx)
    every_byte = replace(_link(ctx, mine, m[0], m[5]), sealed=bytes(range(256)) * 4)
    record.put(
        [
            _link(ctx, mine, m[0], m[1]),
            _link(ctx, mine, m[0], entity),
            _link(ctx, mine, m[1], m[0]),
            _link(ctx, mine, m[3], m[3]),  # a memory linked to itself
            every_byte,
            replace(_link(ctx, mine, m[4], m[0]), sealed=ctx.rows.sealed(1)),
        ]
    )
    record.put([_link(ctx, other, m[2], m[0]), _link(ctx, other, m[2], entity)])
    record.put([_link(ctx, shared, m[4], m[1]), _link(ctx, shared, m[5], entity)])
    reads = 0
    for ids, what in (
        *(([memory_id], f"one id, m{index}") for index, memory_id in enumerate(m)),
        ([entity], "an entity id, as a target"),
        ([m[0], entity], "a memory and an entity"),
        (m, "every memory"),
        ([*m, entity], "every id"),
        ([ctx.rows.memory_id()], "an id no link has"),
    ):
        record.read(mine, subjects, ids, what)
        reads += 1
    for named in (subjects[::-1], [*subjects, ctx.rows.subject()]):
        record.read(mine, named, [*m, entity], "every id, subjects in another order")
    if _driver(ctx).links(mine.tenant, mine.app, subjects, []):
        raise CheckFailed("links() with no ids returned links")
    return f"{len(record.held)} links in 3 subjects, {reads} reads"


@check("relations")
def check_replace_by_key(ctx: CheckContext) -> str | None:
    """A put_links() of a stored key replaces that link (ends and blob); no second link."""
    record = _Record(ctx)
    mine = ctx.scope()
    other = Scope(mine.tenant, mine.app, ctx.rows.subject())
    subjects = _subjects(mine, other)
    m = [ctx.rows.memory_id() for _ in range(6)]
    entity = _entity(ctx)
    ids = [*m, entity]
    first = _link(ctx, mine, m[0], m[1])
    record.put([first, _link(ctx, mine, m[0], m[2])])
    record.put([replace(first, sealed=ctx.rows.sealed())])
    record.read(mine, subjects, ids, "a key put again with a new blob")
    record.put([replace(first, source=m[3], target=entity, sealed=ctx.rows.sealed())])
    record.read(mine, subjects, ids, "a key put again with new ends")
    record.read(mine, subjects, [m[1]], "the old target of a replaced link")
    twice = _link(ctx, mine, m[4], m[5])
    last = replace(twice, target=m[0], sealed=ctx.rows.sealed())
    _driver(ctx).put_links([twice, last])  # one batch: the last link of a key wins
    record.held[_Record.key(last)] = last
    record.read(mine, subjects, ids, "a key given twice in one batch")
    record.put([replace(first, subject=other.subject, sealed=ctx.rows.sealed())])
    record.read(mine, subjects, ids, "the same key in another subject, another link")
    return None


@check("relations")
def check_scoped(ctx: CheckContext) -> str | None:
    """No link is read, deleted or erased across a tenant, an app or (for reads) a subject."""
    record = _Record(ctx)
    mine = ctx.scope()
    others = [
        Scope(ctx.rows.tenant(), mine.app, mine.subject),
        Scope(mine.tenant + "0", mine.app, mine.subject),  # a prefix is another tenant
        Scope(mine.tenant.upper(), mine.app, mine.subject),
        Scope(mine.tenant, ctx.rows.app(), mine.subject),
        Scope(mine.tenant, mine.app + "0", mine.subject),
        Scope(mine.tenant, mine.app, ctx.rows.subject()),
        Scope(mine.tenant, mine.app, TENANT_SUBJECT),
    ]
    m = [ctx.rows.memory_id() for _ in range(3)]
    keys = [ctx.rows.hex(32) for _ in range(3)]  # the same keys in every scope
    for scope in (mine, *others):
        record.put(
            [
                _link(ctx, scope, m[0], m[1], keys[0]),
                _link(ctx, scope, m[1], m[2], keys[1]),
                _link(ctx, scope, m[2], m[0], keys[2]),
            ]
        )
    for scope in (mine, *others):
        record.read(scope, [scope.subject], m, "one subject of one tenant and app")
    for scope in others:
        if scope.subject != mine.subject:
            continue  # an erase reaches every subject of its tenant and app, by contract
        record.delete(scope.tenant, scope.app, scope.subject, keys[:1])
        record.erase(scope.tenant, scope.app, scope.subject, m[2])
        record.read(mine, [mine.subject], m, "this scope, after deletes and erases elsewhere")
    record.delete(mine.tenant, mine.app, others[-1].subject, keys[1:2])
    record.read(mine, [mine.subject], m, "this subject, after a delete in another subject")
    return "other tenants, apps (prefixes, letter case) and subjects, the shared one too"


@check("relations")
def check_atomic(ctx: CheckContext) -> str | None:
    """A put_links() batch with a malformed link, or of two tenants, is refused whole."""
    record = _Record(ctx)
    mine = ctx.scope()
    other = Scope(mine.tenant, mine.app, ctx.rows.subject())
    subjects = _subjects(mine, other)
    m = [ctx.rows.memory_id() for _ in range(4)]
    stored = _link(ctx, mine, m[0], m[1])
    record.put([stored])
    valid = [
        _link(ctx, mine, m[1], m[2]),
        replace(stored, target=m[3], sealed=ctx.rows.sealed()),  # would replace the stored one
        _link(ctx, other, m[2], m[0]),
    ]
    bad = _link(ctx, mine, m[3], m[0])
    elsewhere = Scope(ctx.rows.tenant(), mine.app, mine.subject)
    batches = [
        ("a key that is not hex", [*valid, replace(bad, key="not-a-key-" + ctx.rows.hex(22))]),
        ("an upper-case key", [*valid, replace(bad, key="AB" + ctx.rows.hex(30).upper())]),
        ("a key of 31 characters", [*valid, replace(bad, key=ctx.rows.hex(31))]),
        ("a target that is a path", [*valid, replace(bad, target="../" + m[0])]),
        ("an empty source", [*valid, replace(bad, source="")]),
        ("sealed that is not bytes", [*valid, replace(bad, sealed="sealed")]),  # type: ignore[arg-type]
        ("links of two tenants", [*valid, _link(ctx, elsewhere, m[0], m[1])]),
        ("links of two apps", [*valid, replace(bad, app=ctx.rows.app())]),
    ]
    for what, batch in batches:
        try:
            _driver(ctx).put_links(batch)
        except MemorySDKError:
            pass
        except Exception as exc:  # any other error is the finding
            raise CheckFailed(
                f"put_links() of a batch with {what} raised {type(exc).__name__}, not "
                "InvalidInputError (translate errors into the SDK's)"
            ) from None
        else:
            raise CheckFailed(
                f"put_links() accepted a batch with {what}; it must raise InvalidInputError "
                "and store nothing"
            )
        record.read(mine, subjects, m, f"after a refused batch with {what}")
        got = _driver(ctx).links(elsewhere.tenant, elsewhere.app, [elsewhere.subject], m)
        if got:
            raise CheckFailed(
                f"a refused batch with {what} stored a link in the other tenant"
            )
    _driver(ctx).put_links([])  # an empty batch does nothing
    record.put([valid[0], valid[2]])
    record.read(mine, subjects, m, "after the new links of that batch without the bad link")
    return f"{len(batches)} batches refused whole"


@check("relations")
def check_delete(ctx: CheckContext) -> str | None:
    """delete_links() removes exactly the given keys of one subject (for 'hard', every byte)."""
    record = _Record(ctx)
    mine = ctx.scope()
    other = Scope(mine.tenant, mine.app, ctx.rows.subject())
    subjects = _subjects(mine, other)
    m = [ctx.rows.memory_id() for _ in range(4)]
    entity = _entity(ctx)
    ids = [*m, entity]
    links = [
        _link(ctx, mine, m[0], m[1]),
        _link(ctx, mine, m[0], m[2]),  # shares its source with the first
        _link(ctx, mine, m[1], m[0]),
        _link(ctx, mine, m[2], entity),
        _link(ctx, mine, m[3], entity),  # shares its target with the one before
    ]
    record.put(links)
    twin = _link(ctx, other, m[0], m[1], links[0].key)  # the same key in another subject
    record.put([twin])
    deleted = [links[0], links[3]]
    record.delete(mine.tenant, mine.app, mine.subject, [deleted[0].key, deleted[1].key,
                                                        ctx.rows.hex(32)])
    record.read(mine, subjects, ids, "after delete_links() of two keys and an unknown one")
    record.delete(mine.tenant, mine.app, mine.subject, [deleted[0].key])  # again: nothing
    record.delete(mine.tenant, mine.app, mine.subject, [])
    record.read(mine, subjects, ids, "after deleting a deleted key, and no key")
    if ctx.capabilities.erase == "hard":
        haystacks = _haystacks(ctx.driver.raw_dump())
        _expect_seen(haystacks, [twin, links[1]], "deleted")
        _expect_gone(haystacks, deleted, "delete_links()", record.held.values())
    return None


def _expect_seen(haystacks: list[tuple[str, bytes]], kept: list[StoredLink], how: str) -> None:
    """Fail unless raw storage shows the blob of each link that was kept (it covers links)."""
    for link in kept:
        if not any(_find(needle, haystacks) for needle in _blob_needles(link.sealed, "")):
            raise CheckFailed(
                "erase is declared 'hard', but raw_dump() does not show the sealed blob of "
                f"{_name(link)}, a link that was not {how}, in any form (raw, hex, base64): "
                "it does not cover the links, so their removal cannot be verified"
            )


def _expect_gone(
    haystacks: list[tuple[str, bytes]],
    gone: list[StoredLink],
    by: str,
    kept: Iterable[StoredLink],
) -> None:
    """Fail if any byte of the removed links' blobs, or their keys (unless a kept link of
    another subject has the same key), is in raw storage."""
    keys = {link.key for link in kept}
    needles: list[_Needle] = []
    for link in gone:
        needles += _blob_needles(link.sealed, f"the sealed blob of {_name(link)}")
        if link.key not in keys:
            needles.append(_Needle(f"the key of {_name(link)}", (link.key.encode(),)))
    for needle in needles:
        where = _find(needle, haystacks)
        if where is not None:
            raise CheckFailed(
                f"erase is declared 'hard', but after {by} {needle.what} is still in raw "
                f"storage, at {where!r}"
            )


@check("relations")
def check_erase_removes_links(ctx: CheckContext) -> str | None:
    """erase() removes the memory's links at both ends, in any subject; for 'hard', every byte."""
    record = _Record(ctx)
    mine = ctx.scope()
    other = Scope(mine.tenant, mine.app, ctx.rows.subject())
    shared = Scope(mine.tenant, mine.app, TENANT_SUBJECT)
    subjects = _subjects(mine, other, shared)
    erased, kept = ctx.rows.row(mine), ctx.rows.row(mine)
    theirs, common = ctx.rows.row(other), ctx.rows.row(shared)
    ctx.put_all([erased, kept, theirs, common])
    e, k, t, c = erased.memory_id, kept.memory_id, theirs.memory_id, common.memory_id
    entity = _entity(ctx)
    record.put(
        [
            _link(ctx, mine, e, k),  # the memory as source
            _link(ctx, mine, k, e),  # as target, in its own subject
            _link(ctx, mine, e, entity),
            _link(ctx, mine, e, e),
            _link(ctx, mine, k, t),  # kept
        ]
    )
    record.put([_link(ctx, other, t, e), _link(ctx, other, t, entity)])  # target elsewhere
    record.put([_link(ctx, shared, c, e), _link(ctx, shared, c, k)])  # and in shared memory
    gone = record.erase(mine.tenant, mine.app, mine.subject, e)
    after = _driver(ctx).links(mine.tenant, mine.app, subjects, [e])
    for link in after if isinstance(after, list) else []:
        if isinstance(link, StoredLink) and link.target == e and link.source != e:
            where = "its own subject" if link.subject == mine.subject else "another subject"
            raise CheckFailed(
                f"after erase() of {e}, links() still returns {_name(link)}, of "
                f"{where}, where the erased memory is the target: erase() must remove the "
                "links at both ends, in every subject"
            )
    record.read(mine, subjects, [e], "the erased memory")
    record.read(mine, subjects, [k, t, c, entity], "the other ends, after the erase")
    if ctx.capabilities.erase != "hard":
        return f"{len(gone)} links erased with the memory; soft erase: raw storage not read"
    haystacks = _haystacks(ctx.driver.raw_dump())
    _expect_seen(haystacks, list(record.held.values()), "erased")
    _expect_gone(haystacks, gone, f"erase() of {e}", record.held.values())
    return f"{len(gone)} links erased with the memory, {len(record.held)} kept"
