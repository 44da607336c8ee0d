"""Erase checks: erase() removes every version; a 'hard' erase leaves no byte in raw storage.

The raw check looks for each forgotten version's sealed blob (raw, hex, and base64 at every
byte alignment, in 32-byte pieces so a blob split across pages is still found), each blind
term and the memory id, in every place :meth:`Driver.raw_dump` yields. It first proves it can
see the rows that were not erased, so an empty or opaque dump cannot pass.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, replace

from mainsdk_memory import MemorySDKError
from mainsdk_memory.drivers import TENANT_SUBJECT, EraseResult, StoredRow

from ._compare import expect_rows, label
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []

_RAW_PIECE = 33  # bytes: longer than a blind term, short enough to fit inside any page
_TEXT_PIECE = 44  # characters of hex or base64


@dataclass(frozen=True, slots=True)
class _Needle:
    what: str
    """What was found, for the reason: e.g. ``the sealed blob of v1 (base64)``."""
    pieces: tuple[bytes, ...]


def _pieces(data: bytes, size: int) -> tuple[bytes, ...]:
    """``data`` cut into pieces of ``size``; a short tail is dropped unless it is all there is."""
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    if len(pieces) > 1 and len(pieces[-1]) < size:
        pieces.pop()
    return tuple(piece for piece in pieces if len(piece) >= min(size, len(data)))


def _blob_needles(blob: bytes, what: str) -> list[_Needle]:
    needles = [
        _Needle(f"{what} (raw bytes)", _pieces(blob, _RAW_PIECE)),
        _Needle(f"{what} (hex)", _pieces(blob.hex().encode(), _TEXT_PIECE)),
        _Needle(f"{what} (HEX)", _pieces(blob.hex().upper().encode(), _TEXT_PIECE)),
    ]
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        for shift in range(3):
            # Bytes before the blob change its first group; padding changes its last one.
            text = encode(b"\0" * shift + blob)[4 if shift else 0 : -4]
            needles.append(_Needle(f"{what} ({name})", _pieces(text, _TEXT_PIECE)))
    return [needle for needle in needles if needle.pieces]


def _row_needles(row: StoredRow) -> list[_Needle]:
    needles = _blob_needles(row.sealed, f"the sealed blob of {label(row)}")
    needles += [_Needle(f"a blind term of {label(row)}", (term.encode(),)) for term in row.terms]
    return needles


def _haystacks(dump: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for where, data in dump:
        found.append((where, where.encode("utf-8", "replace")))
        found.append((where, bytes(data)))
        if b"\n" in data or b"\r" in data:  # base64 wrapped in lines
            found.append((where, bytes(data).replace(b"\n", b"").replace(b"\r", b"")))
    return found


def _find(needle: _Needle, haystacks: list[tuple[str, bytes]]) -> str | None:
    for where, data in haystacks:
        for piece in needle.pieces:
            if piece in data:
                return where
    return None


def _memory_with_versions(ctx: CheckContext, scope: Scope) -> list[StoredRow]:
    first = ctx.rows.row(scope)
    ctx.driver.put(first)
    second = ctx.rows.revision(first)
    ctx.driver.put(second, closes=1)
    return [replace(first, valid_to=second.valid_from), second]


def _erase(ctx: CheckContext, target: StoredRow, expected: tuple[int, ...]) -> EraseResult:
    result = ctx.driver.erase(target.tenant, target.app, target.subject, target.memory_id)
    if not isinstance(result, EraseResult):
        raise CheckFailed(f"erase() returned a {type(result).__name__}, not an EraseResult")
    if result.memory_id != target.memory_id:
        raise CheckFailed("erase() returned an EraseResult for another memory id")
    if sorted(result.versions) != sorted(expected):
        raise CheckFailed(
            f"erase() reported versions {sorted(result.versions)} removed; the memory had "
            f"versions {sorted(expected)}"
        )
    declared = ctx.capabilities.erase
    if result.mode != declared:
        raise CheckFailed(
            f"erase is declared {declared!r}, but erase() reported mode {result.mode!r}"
        )
    return result


@check("erase")
def check_removes_every_version(ctx: CheckContext) -> str | None:
    """erase() reports every version removed, and afterwards no read returns any of them."""
    scope = ctx.scope()
    versions = _memory_with_versions(ctx, scope)
    target = versions[-1]
    bystanders = [ctx.rows.row(scope, terms={**ctx.rows.terms(), **target.terms}) for _ in range(3)]
    ctx.put_all(bystanders)
    stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], target.memory_id)
    _erase(ctx, target, tuple(row.version for row in stored))

    left = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], target.memory_id)
    if left:
        raise CheckFailed(f"versions() still returns {len(left)} version(s) after erase()")
    expect_rows(ctx.read_scope(scope), bystanders, "list() after erase()")
    if ctx.capabilities.text_search:
        for row in versions:
            hits = ctx.driver.search(scope.where(), [{t} for t in row.terms], top_k=100)
            if any(hit.memory_id == target.memory_id for hit, _ in hits):
                raise CheckFailed(f"search() still finds {label(row)} after erase()")
    if ctx.capabilities.time_travel:
        for row in versions:
            got = ctx.driver.list(scope.where(as_of=row.valid_from), limit=READ_ALL)
            if any(found.memory_id == target.memory_id for found in got):
                raise CheckFailed(f"list(as_of=...) still returns {label(row)} after erase()")
    try:
        again = ctx.driver.erase(scope.tenant, scope.app, scope.subject, target.memory_id)
    except MemorySDKError:
        again = None
    if again is not None and again.versions:
        raise CheckFailed("a second erase() of the same memory reported versions removed")
    return None


@check("erase", needs=("hard_erase",))
def check_no_bytes_left(ctx: CheckContext) -> str | None:
    """For erase='hard': no byte of the forgotten rows (blob, terms, id) is left in raw_dump()."""
    scope = ctx.scope()
    versions = _memory_with_versions(ctx, scope)
    target = versions[-1]
    survivors = [ctx.rows.row(scope) for _ in range(3)]
    survivors.append(ctx.rows.row(Scope(scope.tenant, scope.app, TENANT_SUBJECT)))
    ctx.put_all(survivors)
    survivors.append(_memory_with_versions(ctx, scope)[-1])  # current versions: always kept

    stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], target.memory_id)
    _erase(ctx, target, tuple(row.version for row in stored))
    haystacks = _haystacks(ctx.driver.raw_dump())

    for survivor in survivors:
        if not any(_find(needle, haystacks) for needle in _blob_needles(survivor.sealed, "")):
            raise CheckFailed(
                "erase is declared 'hard', but raw_dump() does not show the sealed blob of "
                f"{label(survivor)}, a memory that was not erased, in any form (raw, hex, "
                "base64): it does not cover what the driver stores, so the erase cannot be "
                "verified"
            )
    needles = [needle for row in versions for needle in _row_needles(row)]
    needles.append(_Needle("the memory id", (target.memory_id.encode(),)))
    for needle in needles:
        where = _find(needle, haystacks)
        if where is not None:
            raise CheckFailed(
                f"erase is declared 'hard', but after erase() {needle.what} of the forgotten "
                f"memory is still in raw storage, at {where!r}"
            )
    return f"{len(needles)} traces of 2 versions looked for in {len(haystacks)} places"


@check("erase", needs=("hard_erase",))
def check_deleted_control_records_leave_no_bytes(ctx: CheckContext) -> str | None:
    """For erase='hard': a deleted control record's bytes are gone from raw_dump()."""
    driver, rows = ctx.driver, ctx.rows
    tenant, app = rows.tenant(), rows.app()
    kept, deleted = rows.sealed(), rows.sealed()
    driver.control_put(tenant, app, "grant/kept", kept)
    driver.control_put(tenant, app, "grant/deleted", rows.sealed())
    driver.control_put(tenant, app, "grant/deleted", deleted)  # replaced, then deleted
    driver.control_put(tenant, app, "grant/deleted", None)
    haystacks = _haystacks(driver.raw_dump())
    if not any(_find(needle, haystacks) for needle in _blob_needles(kept, "")):
        raise CheckFailed(
            "raw_dump() does not show a control record that was kept, in any form: it does "
            "not cover the control records, so their deletion cannot be verified"
        )
    for needle in _blob_needles(deleted, "the deleted control record"):
        where = _find(needle, haystacks)
        if where is not None:
            raise CheckFailed(
                f"erase is declared 'hard', but {needle.what} is still in raw storage, at "
                f"{where!r}: control_put(key, None) must delete for good"
            )
    return None
