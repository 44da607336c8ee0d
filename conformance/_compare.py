"""Exact comparison of rows, with reasons that name the field but never print its contents."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime

from mainsdk_memory.drivers import StoredRow

from ._model import CheckFailed

__all__ = ["expect_rows", "expect_same_row", "label", "row_difference"]

_FIELDS = tuple(f.name for f in fields(StoredRow))


def label(row: StoredRow) -> str:
    """A short name for a row in a reason: its memory id and version, never its contents."""
    return f"{row.memory_id} v{row.version}"


def _field_difference(name: str, got: object, want: object) -> str | None:
    if isinstance(want, bool) or want is None:
        if got is not want:
            return f"{name} is {got!r}, expected {want!r}"
        return None
    if isinstance(want, datetime):
        if not isinstance(got, datetime):
            return f"{name} is a {type(got).__name__}, expected an aware datetime"
        if got.tzinfo is None or got.utcoffset() is None:
            return f"{name} came back as a naive datetime (the time zone was lost)"
        if got != want:
            delta = (got - want).total_seconds()
            return f"{name} is off by {delta:+.6f} s (timestamps must keep every microsecond)"
        return None
    if isinstance(want, bytes):
        if not isinstance(got, bytes):
            return f"{name} is a {type(got).__name__}, expected bytes"
        if got != want:
            return (
                f"{name} differs from the stored bytes ({len(got)} bytes back, {len(want)} stored)"
            )
        return None
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            return f"{name} is a {type(got).__name__}, expected a mapping"
        if dict(got) != dict(want) or not all(
            isinstance(k, str) and type(v) is int for k, v in got.items()
        ):
            return f"{name} differ from the stored terms ({len(got)} back, {len(want)} stored)"
        return None
    if type(got) is not type(want):
        return f"{name} is a {type(got).__name__}, expected a {type(want).__name__}"
    if got != want:
        shown = repr(got) if name != "sealed" else "…"
        return f"{name} is {shown}, expected {want!r}"
    return None


def row_difference(got: object, want: StoredRow) -> str | None:
    """What differs between ``got`` and ``want``, field by field; ``None`` when they are equal.

    Types count: a list for ``labels``, a string for ``version``, a naive or truncated
    datetime or a ``memoryview`` for ``sealed`` are all differences.
    """
    if not isinstance(got, StoredRow):
        return f"a {type(got).__name__} came back instead of a StoredRow"
    for name in _FIELDS:
        problem = _field_difference(name, getattr(got, name), getattr(want, name))
        if problem is not None:
            return problem
    return None


def expect_same_row(got: object, want: StoredRow, where: str) -> None:
    """Fail unless ``got`` equals ``want`` in every field; ``where`` says which call returned it."""
    problem = row_difference(got, want)
    if problem is not None:
        raise CheckFailed(f"{where} returned {label(want)} changed: {problem}")


def expect_rows(got: Sequence[object], want: Iterable[StoredRow], where: str) -> None:
    """Fail unless ``got`` holds exactly the rows ``want`` (any order), each equal in full."""
    wanted = {(row.memory_id, row.version): row for row in want}
    seen: set[tuple[str, int]] = set()
    for item in got:
        if not isinstance(item, StoredRow):
            raise CheckFailed(f"{where} returned a {type(item).__name__} instead of a StoredRow")
        key = (item.memory_id, item.version)
        if key in seen:
            raise CheckFailed(f"{where} returned {label(item)} twice")
        seen.add(key)
        if key not in wanted:
            raise CheckFailed(f"{where} returned {label(item)}, which it should not have")
        expect_same_row(item, wanted[key], where)
    missing = [wanted[key] for key in wanted if key not in seen]
    if missing:
        raise CheckFailed(
            f"{where} left out {len(missing)} of {len(wanted)} rows it should return "
            f"(first: {label(missing[0])})"
        )
