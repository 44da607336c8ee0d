"""Stored rows the db driver cannot decode: what reading them raises, and the error that names them.

A cell can be changed underneath the driver (a manual ``UPDATE``, a bad migration, a restore
gone wrong). SQLite hands back whatever a cell holds, whatever the column's type, and the
driver's timestamp type refuses it (``TypeError``); psycopg refuses a ``timestamptz`` that
Python cannot hold (``infinity``, a year past 9999) as a ``DataError`` while the rows are
fetched; a ``labels`` cell that is not a JSON list fails to parse. Such a row must affect only
its own memory (ADR 0046): a read of many rows fetches them as usual and, only when that
fails, fetches them again one document at a time (:func:`fetch_each`) and leaves out the
ones that fail; a read of the damaged memory itself raises :func:`damaged_error`, a
:class:`~mainsdk_memory.StoreError` naming the memory id and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Executable, Row
from sqlalchemy.exc import DataError

from mainsdk_memory._errors import DamagedMemoryError

__all__ = ["DECODE_ERRORS", "DamagedRow", "damaged_error", "fetch_each"]

DECODE_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    ValueError,
    OverflowError,
    KeyError,
    AttributeError,
    DataError,  # psycopg's, raised while fetching: the server's transaction is unharmed
)
"""What fetching or decoding a damaged row raises (never a server-side failure: those are
raised by ``execute``, which no handler of these surrounds)."""

_CHUNK = 500  # ids per IN list: far below SQLite's and PostgreSQL's parameter limits


class DamagedRow(Exception):
    """A stored version that cannot be decoded (internal: readers leave it out, or raise
    :func:`damaged_error` for its memory)."""

    def __init__(self, doc: int) -> None:
        super().__init__(doc)
        self.doc = doc


def damaged_error(memory_id: str) -> DamagedMemoryError:
    """The error a read of a damaged memory raises: its id and what to do, no cell value."""
    return DamagedMemoryError(
        memory_id,
        f"Memory {memory_id} is damaged in the database: a stored version of it cannot be "
        "decoded, so it cannot be read; the other memories are not affected. Restore its "
        "rows from a backup of the database, or erase the memory."
    )


def fetch_each(
    connection: Connection,
    statement: Executable,
    params: Mapping[str, Any],
    docs: Sequence[int],
) -> tuple[list[Row[Any]], set[int]]:
    """The rows ``statement`` returns for ``docs`` (bound to its expanding ``docs``
    parameter, in chunks), and the documents whose row could not be fetched.

    One statement per chunk, as before; only a chunk that fails to decode is fetched again,
    one document at a time, so healthy stores pay nothing for this.
    """
    rows: list[Row[Any]] = []
    broken: set[int] = set()
    ordered = sorted(set(docs))
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        result = connection.execute(statement, {**params, "docs": chunk})
        try:
            rows += result.all()
            continue
        except DECODE_ERRORS:
            pass
        for doc in chunk:
            result = connection.execute(statement, {**params, "docs": [doc]})
            try:
                rows += result.all()
            except DECODE_ERRORS:
                broken.add(doc)
    return rows, broken
