"""Tag checks: blinded tags come back as stored, and tag clauses select what Filter.matches does.

A driver that declares ``tags`` stores each version's :attr:`StoredRow.tags` (a set of up to
:data:`MAX_TAGS` tags of 32 hex digits: a caller key and metadata, as keyed HMACs) and
applies :attr:`Filter.tags` (every clause met: the row carries one of its tags; an empty
clause matches nothing) and :attr:`Filter.tags_absent` in every read. The expected answer is
always :meth:`Filter.matches` over what was put: ``list()`` in its order and pages,
``search()`` equal to :func:`bm25_rank` over the rows the filter matches (a tag clause bounds
the corpus like any clause; tags themselves are never terms), ``vectors()`` the matching
rows' embeddings. After a hard erase no tag of the forgotten memory is left in
:meth:`Driver.raw_dump`. That the driver reads through an index, not a scan, is the driver's
own test to make (its speed is not observable here).
"""

from __future__ import annotations

from dataclasses import replace

from mainsdk_memory.drivers import (
    MAX_TAGS,
    TENANT_SUBJECT,
    Filter,
    StoredRow,
    VectorDriver,
    VectorEntry,
)

from ._checks_erase import _find, _haystacks, _Needle
from ._checks_search import _expect_reference
from ._compare import expect_rows, expect_same_row, label
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []


def _newest_first(rows: list[StoredRow]) -> list[StoredRow]:
    return sorted(rows, key=lambda r: (r.created_at, r.memory_id), reverse=True)


class _Corpus:
    """A person's, the tenant's and a stranger's rows, tagged from one small vocabulary (the
    stranger's with the same tags: subjects still keep them apart), with kinds, a session,
    pins and a revision whose new version carries other tags."""

    def __init__(self, ctx: CheckContext, *, vectors: bool = False) -> None:
        rows, rng = ctx.rows, ctx.rows.rng
        self.scope = ctx.scope()
        self.tags = [rows.hex(32) for _ in range(6)]
        self.words = [rows.term() for _ in range(5)]
        self.vectors: dict[tuple[str, int], bytes] = {}
        shared = Scope(self.scope.tenant, self.scope.app, TENANT_SUBJECT)
        stranger = ctx.scope(tenant=self.scope.tenant, app=self.scope.app)
        stored: list[StoredRow] = []
        for index in range(30):
            where = (self.scope, self.scope, self.scope, shared, stranger)[index % 5]
            terms = {rng.choice(self.words): rng.randint(1, 3) for _ in range(rng.randint(1, 3))}
            terms[rows.term()] = 1  # filler: lengths differ
            row = rows.row(
                where,
                terms=terms,
                tags=frozenset(rng.sample(self.tags, rng.choice([0, 1, 1, 2, 3]))),
                pinned=rng.random() < 0.3,
            )
            if index % 7 == 3:  # session-only: seen in session s1 alone
                row = replace(row, session="s1", session_only=True)
            stored.append(row)
        for row in stored:
            vector = rows.sealed(48) if vectors and rng.random() < 0.7 else None
            ctx.driver.put(row, vector=vector)
            if vector is not None:
                self.vectors[(row.memory_id, row.version)] = vector
        # A revision with other tags: as_of before it must see the old ones, now the new ones.
        first = next(r for r in stored if r.subject == self.scope.subject and r.tags)
        revised = ctx.rows.revision(first, tags=frozenset(set(self.tags) - first.tags))
        ctx.driver.put(revised, closes=1)
        self.before_revision = revised.valid_from - (revised.valid_from - first.valid_from) / 2
        stored[stored.index(first)] = replace(first, valid_to=revised.valid_from)
        stored.append(revised)
        self.stored = stored
        self.base = Filter(
            tenant=self.scope.tenant,
            app=self.scope.app,
            subjects=(self.scope.subject, TENANT_SUBJECT),
        )

    def filters(self, ctx: CheckContext) -> list[tuple[Filter, str]]:
        """Tag filters over the person's and the tenant's rows, with what each asks."""
        a, b, c, d, e, f = (frozenset({tag}) for tag in self.tags)
        unknown = frozenset({ctx.rows.hex(32)})
        every = frozenset(self.tags)
        base = self.base
        mine = sorted({r.memory_id for r in self.stored if base.visible(r)})
        chosen: list[tuple[Filter, str]] = [
            (replace(base, tags=(a,)), "one tag"),
            (replace(base, tags=(a | b,)), "a clause of two tags"),
            (replace(base, tags=(a, b | c)), "two clauses"),
            (replace(base, tags=(a | d, b | c | e, a | b | c | f)), "three clauses"),
            (replace(base, tags=(a, a)), "the same clause twice"),
            (replace(base, tags=(frozenset(),)), "an empty clause"),
            (replace(base, tags=(a, frozenset())), "a clause and an empty clause"),
            (replace(base, tags=(unknown,)), "a tag no row carries"),
            (replace(base, tags=(every,)), "a clause of every tag"),
            (replace(base, tags_absent=a), "tags_absent of one tag"),
            (replace(base, tags_absent=every), "tags_absent of every tag (untagged rows)"),
            (replace(base, tags=(b | c,), tags_absent=a), "a clause and tags_absent"),
            (replace(base, tags=(a,), tags_absent=a), "a tag both required and absent"),
            (replace(base, tags=(a | b,), kinds=frozenset({"fact", "note"})), "tags and kinds"),
            (replace(base, tags=(every,), session="s1"), "tags in session s1"),
            (replace(base, tags=(a | b | c,), pinned=True), "tags and pinned"),
            (replace(base, tags=(every,), subjects=(self.scope.subject,)), "the person only"),
            (
                replace(base, tags=(a | b,), memory_ids=frozenset(mine[::2])),
                "tags and half the memories",
            ),
        ]
        if ctx.capabilities.time_travel:
            chosen += [
                (replace(base, tags=(every,), as_of=self.before_revision), "tags, as_of"),
                (
                    replace(base, tags_absent=a | b, as_of=self.before_revision),
                    "tags_absent, as_of",
                ),
            ]
        return chosen


@check("tags")
def check_round_trip(ctx: CheckContext) -> str | None:
    """Tags come back exactly as stored (none, one, many, MAX_TAGS), on every version."""
    scope = ctx.scope()
    sizes = (0, 1, 7, MAX_TAGS)
    rows = [
        ctx.rows.row(scope, tags=frozenset(ctx.rows.hex(32) for _ in range(size)))
        for size in sizes
    ]
    ctx.put_all(rows)
    revised = ctx.rows.revision(rows[1], tags=frozenset({ctx.rows.hex(32), *rows[2].tags}))
    ctx.driver.put(revised, closes=1)
    rows[1] = replace(rows[1], valid_to=revised.valid_from)
    expect_rows(ctx.read_scope(scope), [rows[0], revised, *rows[2:]], "list()")
    for row in (*rows, revised):
        stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], row.memory_id)
        want = [r for r in (*rows, revised) if r.memory_id == row.memory_id]
        expect_rows(stored, want, "versions()")
    if ctx.capabilities.text_search:
        query = [set(row.terms) for row in rows]
        hits = ctx.driver.search(scope.where(), query, top_k=100)
        for hit, _score in hits:
            want_row = revised if hit.memory_id == revised.memory_id else None
            want_row = want_row or next(r for r in rows if r.memory_id == hit.memory_id)
            expect_same_row(hit, want_row, "search()")
    for tag in sorted(rows[3].tags)[:3]:
        expect_rows(
            ctx.driver.list(scope.where(tags=(frozenset({tag}),)), limit=READ_ALL),
            [rows[3]],
            "list() by one of MAX_TAGS tags",
        )
    return f"versions with {', '.join(map(str, sizes))} tags and a revision with other tags"


@check("tags")
def check_list(ctx: CheckContext) -> str | None:
    """list() with tag clauses and tags_absent returns what Filter.matches does, in order."""
    corpus = _Corpus(ctx)
    filters = corpus.filters(ctx)
    for where, what in filters:
        want = _newest_first([row for row in corpus.stored if where.matches(row)])
        got = ctx.driver.list(where, limit=READ_ALL)
        expect_rows(got, want, f"list({what})")
        if [row.memory_id for row in got] != [row.memory_id for row in want]:
            raise CheckFailed(
                f"list({what}) is not ordered newest created_at first, then greater memory id"
            )
    return f"{len(filters)} filters"


@check("tags")
def check_pages(ctx: CheckContext) -> str | None:
    """Paging list() with a tag clause has no duplicate and no gap, at every page size."""
    corpus = _Corpus(ctx)
    tag = frozenset(corpus.tags[:3])
    where = replace(corpus.base, tags=(tag,), tags_absent=frozenset(corpus.tags[5:]))
    want = _newest_first([row for row in corpus.stored if where.matches(row)])
    if len(want) < 3:  # pragma: no cover - the corpus's own premise
        raise RuntimeError("tags.pages needs a few matching rows")
    for limit in (1, 2, len(want) - 1, len(want) + 3):
        got: list[StoredRow] = []
        after = None
        while True:
            page = ctx.driver.list(where, limit=limit, after=after)
            if len(page) > limit:
                raise CheckFailed(f"list(tags, limit={limit}) returned {len(page)} rows")
            if not page:
                break
            stray = next((row for row in page if not where.matches(row)), None)
            if stray is not None:
                raise CheckFailed(
                    f"list(tags, limit={limit}) returned {label(stray)}, which the filter's tag "
                    "clauses do not match"
                )
            got += page
            if len(got) > len(want) + limit:
                raise CheckFailed(f"list(tags, limit={limit}) never reached the end")
            after = (page[-1].created_at, page[-1].memory_id)
        if [row.memory_id for row in got] != [row.memory_id for row in want]:
            raise CheckFailed(
                f"paging list() with a tag clause, limit={limit}, did not return each matching "
                "memory once, newest first"
            )
        for got_row, want_row in zip(got, want, strict=True):
            expect_same_row(got_row, want_row, f"list(tags, limit={limit})")
    return f"{len(want)} matching memories"


@check("tags", needs=("text_search",))
def check_search(ctx: CheckContext) -> str | None:
    """search() with tag clauses equals bm25_rank over the rows the filter matches alone."""
    corpus = _Corpus(ctx)
    filters = corpus.filters(ctx)
    words = corpus.words
    compared = 0
    for where, what in filters:
        # The clauses bound the corpus: N, the mean length and each term's df are its rows'.
        for query in ([{words[0]}], [{words[1]}, {words[2], words[3]}], [{words[4]}] * 2):
            compared += _expect_reference(
                ctx, where, corpus.stored, query, 100, f"tags: {what}"
            )
        compared += _expect_reference(
            ctx, where, corpus.stored, [{words[0]}, {words[1]}], 2, f"tags: {what}, top_k=2"
        )
    return f"{len(filters)} filters, {compared} hits compared with bm25_rank"


@check("tags", needs=("vectors",))
def check_vectors(ctx: CheckContext) -> str | None:
    """vectors() with tag clauses returns the embeddings of the rows Filter.matches selects."""
    corpus = _Corpus(ctx, vectors=True)
    driver = ctx.driver
    if not isinstance(driver, VectorDriver):
        raise CheckFailed("vectors is declared, but the driver has no vectors() method")
    state = getattr(driver, "vector_state", None)
    seen: list[tuple[str, object, list[VectorEntry]]] = []
    filters = corpus.filters(ctx)
    for where, what in filters:
        want = sorted(
            VectorEntry(r.subject, r.memory_id, r.version, corpus.vectors[key])
            for r in corpus.stored
            if where.matches(r) and (key := (r.memory_id, r.version)) in corpus.vectors
        )
        got = driver.vectors(where)
        if got != want:
            raise CheckFailed(
                f"vectors({what}) returned {len(got)} entries; the {len(want)} rows the filter "
                "matches that have a vector were expected, sorted, with their bytes"
            )
        if state is None:
            continue
        token = state(where)
        for earlier, earlier_token, entries in seen:
            if token is not None and token == earlier_token and entries != got:
                raise CheckFailed(
                    f"vector_state() gave one token for {earlier!r} and {what!r}, while "
                    "vectors() differ (filters that differ only in their tags)"
                )
        seen.append((what, token, got))
    return f"{len(filters)} filters"


@check("tags", needs=("hard_erase",))
def check_erase_leaves_no_tag(ctx: CheckContext) -> str | None:
    """For erase='hard': no tag of an erased memory is left in raw_dump() or read by a filter."""
    scope = ctx.scope()
    common = ctx.rows.hex(32)  # also carried by a memory that stays
    first = ctx.rows.row(scope, tags=frozenset({ctx.rows.hex(32), ctx.rows.hex(32), common}))
    ctx.driver.put(first)
    revised = ctx.rows.revision(first, tags=frozenset({ctx.rows.hex(32), common}))
    ctx.driver.put(revised, closes=1)
    kept = [
        ctx.rows.row(scope, tags=frozenset({ctx.rows.hex(32), common})) for _ in range(3)
    ]
    ctx.put_all(kept)
    ctx.driver.erase(scope.tenant, scope.app, scope.subject, first.memory_id)
    forgotten = sorted((first.tags | revised.tags) - {common})
    reads = [scope.where(tags=(frozenset(forgotten),))]
    if ctx.capabilities.time_travel:
        reads.append(scope.where(tags=(frozenset(forgotten),), as_of=first.valid_from))
    for where in reads:
        returned = ctx.driver.list(where, limit=READ_ALL)
        if returned:
            raise CheckFailed(
                f"list() by a tag of the erased memory returns {label(returned[0])} after erase()"
            )
    expect_rows(
        ctx.driver.list(scope.where(tags=(frozenset({common}),)), limit=READ_ALL),
        kept,
        "list() by a tag the erased memory shared",
    )
    haystacks = _haystacks(ctx.driver.raw_dump())

    def needles(tag: str, what: str) -> list[_Needle]:
        raw = bytes.fromhex(tag)
        return [
            _Needle(f"{what} (hex)", (tag.encode(),)),
            _Needle(f"{what} (HEX)", (tag.upper().encode(),)),
            _Needle(f"{what} (raw bytes)", (raw,)),
        ]

    for row in kept:
        (own,) = row.tags - {common}
        if not any(_find(needle, haystacks) for needle in needles(own, "")):
            raise CheckFailed(
                "erase is declared 'hard', but raw_dump() does not show the tags of "
                f"{label(row)}, a memory that was not erased, in any form (hex, raw): it does "
                "not cover where the driver keeps tags, so their erase cannot be verified"
            )
    for tag in forgotten:
        for needle in needles(tag, "a tag"):
            found = _find(needle, haystacks)
            if found is not None:
                raise CheckFailed(
                    f"erase is declared 'hard', but after erase() {needle.what} of the "
                    f"forgotten memory is still in raw storage, at {found!r}"
                )
    return f"{len(forgotten)} tags of 2 versions looked for"
