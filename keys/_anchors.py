"""Anchors: what a memory store's writer cannot roll back, kept in the key store (ADR 0047).

Whoever can write the memory store but not the key store can delete, replay or edit rows.
Sealing already detects an edited or moved row; what it cannot see is a row that is
authentic but *old*: version 1 reopened after version 2 was deleted, a pinned flag or
creation time set back, a forgotten memory or a revoked grant restored from a backup, a kill
switch deleted. The key store keeps, for each memory and control record, the facts that
decide those questions, in ``anchors.sqlite`` (0600, beside ``subjects/``):

``memory``   one row per live memory: its tenant and app (an HMAC), id, subject (the
             subject file's name, an HMAC), owning agent, the highest version written, the
             pinned flag (2 while a pin change is under way), the creation time, and a
             random 32-byte salt. The memory's seal key is derived from the subject secret
             *and* this salt, so dropping the row (a hard forget) leaves every copy of the
             memory's rows unopenable: a database's dead tuples, its write-ahead log, a
             backup.
``control``  one row per live control record (grant, kill switch, limits, guardian policy,
             pending request, receipt): the SHA-256 of every sealed form a reader may accept
             (one; two while a write is under way).
``writes``   the time of each recent write per agent, for limits that hold across processes.

Every change runs in one ``BEGIN IMMEDIATE`` transaction, so writers in any number of
processes see one order, in write-ahead-log mode with ``synchronous=FULL`` (one fsync per
commit: an anchor that was reported written survives a power cut). ``secure_delete``
overwrites what a delete frees in the database file, and each drop ends with a truncating
checkpoint, so the log's copies of a dropped salt go too.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import KeyStoreError
from mainsdk_memory._files import create_private_once
from mainsdk_memory.keys._locks import file_lock

__all__ = ["ANCHORS_FILE", "PIN_CHANGING", "Anchors", "MemoryAnchor", "digest"]

ANCHORS_FILE = "anchors.sqlite"
ANCHORS_LOCK = "anchors.lock"

#: The ``pinned`` value of a memory whose pin change is under way (either flag is accepted).
PIN_CHANGING = 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory (scope TEXT NOT NULL, memory TEXT NOT NULL, "
    "subject TEXT NOT NULL, agent TEXT NOT NULL, version INTEGER NOT NULL, "
    "pinned INTEGER NOT NULL, created TEXT NOT NULL, salt BLOB NOT NULL, "
    "PRIMARY KEY (scope, memory)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS memory_subject ON memory (subject, agent)",
    "CREATE TABLE IF NOT EXISTS control (scope TEXT NOT NULL, key TEXT NOT NULL, "
    "digests BLOB NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS writes (scope TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS writes_scope ON writes (scope, at)",
)

_DIGEST = 32


def digest(sealed: bytes) -> bytes:
    """The anchor of one sealed control record."""
    return hashlib.sha256(sealed).digest()


@dataclass(frozen=True, slots=True)
class MemoryAnchor:
    """What the key store holds about one live memory."""

    subject: str
    """The name of the memory's subject (its subject file's, an HMAC)."""
    version: int
    """The highest version whose write completed (0: the first write is under way)."""
    pinned: int
    """0 or 1, or :data:`PIN_CHANGING`."""
    created_at: datetime
    salt: bytes
    agent: str


class CapReached(Exception):
    """Raised by :meth:`Anchors.create` when the agent already holds ``cap`` memories."""


class Anchors:
    """The anchors database of one key store (one connection per handle, shared by threads)."""

    def __init__(self, root: Path) -> None:
        self._path = root / ANCHORS_FILE
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        connection = self._connection
        if connection is not None:
            return connection
        with self._lock:
            if self._connection is not None:
                return self._connection
            # One opener at a time, in any process: switching a new file to write-ahead
            # logging needs it to itself (SQLite does not wait for that lock).
            with file_lock(self._path.with_name(ANCHORS_LOCK), exclusive=True):
                create_private_once(self._path, b"")  # 0600 before SQLite writes a byte
                try:
                    connection = sqlite3.connect(
                        self._path, timeout=30.0, isolation_level=None, check_same_thread=False
                    )
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.execute("PRAGMA secure_delete=ON")
                    connection.execute("PRAGMA synchronous=FULL")
                    with self._transaction(connection):
                        for statement in _SCHEMA:
                            connection.execute(statement)
                except sqlite3.Error as exc:
                    raise self._error("opened") from exc
            self._connection = connection
            return connection

    def _error(self, what: str) -> KeyStoreError:
        return KeyStoreError(
            f"The key store's anchors ({self._path}) cannot be {what}. Check the key store's "
            "disk and permissions, or restore it from your key backup."
        )

    @staticmethod
    @contextmanager
    def _transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        with self._lock:
            try:
                with self._transaction(connection):
                    yield connection
            except sqlite3.Error as exc:
                raise self._error("written") from exc

    def _read(self, sql: str, parameters: tuple[object, ...]) -> list[tuple[Any, ...]]:
        connection = self._connect()
        with self._lock:
            try:
                return connection.execute(sql, parameters).fetchall()
            except sqlite3.Error as exc:
                raise self._error("read") from exc

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- memories -------------------------------------------------------------------------

    def create(
        self,
        scope: str,
        memory_id: str,
        subject: str,
        *,
        agent: str,
        pinned: bool,
        created_at: datetime,
        cap: int | None = None,
    ) -> bytes:
        """Anchor a new memory (version 0: its first write is under way); return its salt.

        With ``cap``, raise :class:`CapReached` instead if ``agent`` already holds ``cap``
        memories of ``subject``: counted and inserted in one transaction, so writers in any
        number of processes never pass it together.
        """
        salt = secrets.token_bytes(32)
        with self._write() as connection:
            if cap is not None:
                (held,) = connection.execute(
                    "SELECT COUNT(*) FROM memory WHERE subject = ? AND agent = ?",
                    (subject, agent),
                ).fetchone()
                if held >= cap:
                    raise CapReached
            connection.execute(
                "INSERT INTO memory VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
                (scope, memory_id, subject, agent, int(pinned), created_at.isoformat(), salt),
            )
        return salt

    def create_many(
        self, scope: str, entries: Iterable[tuple[str, str, str, int, bool, datetime]]
    ) -> dict[str, bytes]:
        """Anchor many memories at once: ``(memory id, subject, agent, version, pinned,
        created_at)`` each (a bulk load, before its rows are written); return their salts."""
        salts: dict[str, bytes] = {}
        rows = []
        for memory_id, subject, agent, version, pinned, created_at in entries:
            salt = salts[memory_id] = secrets.token_bytes(32)
            rows.append(
                (scope, memory_id, subject, agent, version, int(pinned),
                 created_at.isoformat(), salt)
            )
        with self._write() as connection:
            connection.executemany("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return salts

    def advance(self, scope: str, memory_id: str, version: int) -> None:
        """Record that ``version`` of the memory was written (never moves back)."""
        with self._write() as connection:
            connection.execute(
                "UPDATE memory SET version = MAX(version, ?) WHERE scope = ? AND memory = ?",
                (version, scope, memory_id),
            )

    def set_pinned(self, scope: str, memory_id: str, pinned: int) -> None:
        """Set the memory's pinned flag (:data:`PIN_CHANGING` before the store's changes)."""
        with self._write() as connection:
            connection.execute(
                "UPDATE memory SET pinned = ? WHERE scope = ? AND memory = ?",
                (pinned, scope, memory_id),
            )

    def memory(self, scope: str, memory_id: str) -> MemoryAnchor | None:
        """The anchor of one memory, or ``None`` (never anchored, or forgotten)."""
        rows = self._read(
            "SELECT subject, version, pinned, created, salt, agent FROM memory "
            "WHERE scope = ? AND memory = ?",
            (scope, memory_id),
        )
        if not rows:
            return None
        subject, version, pinned, created, salt, agent = rows[0]
        return MemoryAnchor(
            subject, version, pinned, datetime.fromisoformat(created), salt, agent
        )

    def drop(self, scope: str, memory_id: str) -> None:
        """Forget the memory's anchor and salt: its rows never open again, anywhere."""
        with self._write() as connection:
            connection.execute(
                "DELETE FROM memory WHERE scope = ? AND memory = ?", (scope, memory_id)
            )
        self._purge_log()

    def drop_subject(self, subject: str) -> None:
        """Forget every anchor of one subject (its person was erased)."""
        with self._write() as connection:
            connection.execute("DELETE FROM memory WHERE subject = ?", (subject,))
        self._purge_log()

    def _purge_log(self) -> None:
        """Copy the log into the database and truncate it: a dropped salt's page images in the
        log go (the database's own copy was overwritten by ``secure_delete``). A reader in
        another process holding an old snapshot is waited for (the busy timeout); the next
        drop's checkpoint finishes what one could not."""
        connection = self._connect()
        with self._lock:
            try:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                raise self._error("written") from exc

    # -- control records ------------------------------------------------------------------

    def control_begin(self, scope: str, key: str, new: bytes | None) -> None:
        """Before a control record is written (``None``: deleted): accept both forms."""
        with self._write() as connection:
            found = connection.execute(
                "SELECT digests FROM control WHERE scope = ? AND key = ?", (scope, key)
            ).fetchone()
            accepted = _split(found[0]) if found else {_ABSENT}
            accepted.add(_ABSENT if new is None else new)
            connection.execute(
                "INSERT OR REPLACE INTO control VALUES (?, ?, ?)", (scope, key, _join(accepted))
            )

    def control_commit(self, scope: str, key: str, new: bytes | None) -> None:
        """After the write: accept only the new form (a deleted record: none at all)."""
        with self._write() as connection:
            if new is None:
                connection.execute(
                    "DELETE FROM control WHERE scope = ? AND key = ?", (scope, key)
                )
            else:
                connection.execute(
                    "INSERT OR REPLACE INTO control VALUES (?, ?, ?)", (scope, key, new)
                )

    def control(self, scope: str, prefix: str) -> dict[str, frozenset[bytes | None]]:
        """The accepted forms of every control record whose key starts with ``prefix``
        (``None`` in a set: the record may be absent)."""
        rows = self._read(
            "SELECT key, digests FROM control WHERE scope = ? AND key >= ? AND key < ?",
            (scope, prefix, prefix + "\U0010ffff"),
        )
        found: dict[str, frozenset[bytes | None]] = {}
        for key, digests in rows:
            if key.startswith(prefix):
                found[key] = frozenset(
                    None if part == _ABSENT else part for part in _split(digests)
                )
        return found

    # -- limits ---------------------------------------------------------------------------

    def count_write(self, scope: str, per_minute: int, now: float) -> bool:
        """Count one write of ``scope`` unless ``per_minute`` were made in the last minute
        (then return ``False`` and count nothing); one transaction across processes."""
        with self._write() as connection:
            connection.execute("DELETE FROM writes WHERE scope = ? AND at <= ?", (scope, now - 60))
            (made,) = connection.execute(
                "SELECT COUNT(*) FROM writes WHERE scope = ?", (scope,)
            ).fetchone()
            if made >= per_minute:
                return False
            connection.execute("INSERT INTO writes VALUES (?, ?)", (scope, now))
        return True


#: The accepted form "no record": 32 zero bytes (no SHA-256 of a sealed record is that).
_ABSENT = bytes(_DIGEST)


def _split(blob: bytes) -> set[bytes]:
    return {blob[i : i + _DIGEST] for i in range(0, len(blob), _DIGEST)}


def _join(parts: set[bytes]) -> bytes:
    return b"".join(sorted(parts))

