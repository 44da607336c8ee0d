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

import contextlib
import hashlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import KeyStoreError
from mainsdk_memory._files import create_private_once
from mainsdk_memory.keys._locks import file_lock

__all__ = ["ANCHORS_FILE", "PIN_CHANGING", "Anchors", "MemoryAnchor", "digest"]

ANCHORS_FILE = "anchors.sqlite"
ANCHORS_LOCK = "anchors.lock"
CONTROL_LOCK = "control.lock"
#: Formation locks: one of this many files, picked by a hash of the subject, serialises the
#: formation writes of a subject in every process (a duplicate pair is never two memories).
FORMATION_LOCKS = 16

#: The ``pinned`` value of a memory whose pin change is under way (either flag is accepted).
PIN_CHANGING = 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory (scope TEXT NOT NULL, memory TEXT NOT NULL, "
    "subject TEXT NOT NULL, row_subject TEXT NOT NULL, agent TEXT NOT NULL, "
    "version INTEGER NOT NULL, pinned INTEGER NOT NULL, created TEXT NOT NULL, "
    "created_us INTEGER NOT NULL, labels TEXT NOT NULL, salt BLOB NOT NULL, "
    "PRIMARY KEY (scope, memory)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS memory_subject ON memory (subject, agent)",
    "CREATE INDEX IF NOT EXISTS memory_created ON memory (scope, created_us)",
    "CREATE TABLE IF NOT EXISTS control (scope TEXT NOT NULL, key TEXT NOT NULL, "
    "digests BLOB NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS writes (scope TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS writes_scope ON writes (scope, at)",
)

_DIGEST = 32
_PURGE_WAIT_MS = 250


def _micros(when: datetime) -> int:
    """Microseconds since the epoch of an aware datetime (orders times of any offset)."""
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _memory_row(
    scope: str, memory_id: str, subject: str, row_subject: str, agent: str, pinned: bool,
    created_at: datetime, labels: tuple[str, ...], salt: bytes,
) -> tuple[object, ...]:
    return (
        scope, memory_id, subject, row_subject, agent, int(pinned), created_at.isoformat(),
        _micros(created_at), json.dumps(list(labels)), salt,
    )


def digest(sealed: bytes) -> bytes:
    """The anchor of one sealed control record."""
    return hashlib.sha256(sealed).digest()


@dataclass(frozen=True, slots=True)
class MemoryAnchor:
    """What the key store holds about one live memory."""

    subject: str
    """The name of the memory's subject (its subject file's, an HMAC)."""
    row_subject: str
    """The subject as the memory store's rows name it (a pseudonym, or the tenant)."""
    version: int
    """The highest version whose write completed (0: the first write is under way)."""
    pinned: int
    """0 or 1, or :data:`PIN_CHANGING`."""
    created_at: datetime
    labels: tuple[str, ...]
    """The labels of the highest version written."""
    salt: bytes
    agent: str


class CapReached(Exception):
    """Raised by :meth:`Anchors.create` when the agent already holds ``cap`` memories."""


class Anchors:
    """The anchors database of one key store (one connection per handle, shared by threads)."""

    def __init__(self, root: Path) -> None:
        self._path = root / ANCHORS_FILE
        self._lock = threading.RLock()
        self._read_lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._purge_pending = False

    @property
    def path(self) -> Path:
        """The anchors database's file."""
        return self._path

    def create(self) -> None:
        """Create the (empty) anchors database of a new key store."""
        self._connect(create=True)

    def _connect(self, *, create: bool = False) -> sqlite3.Connection:
        connection = self._connection
        if connection is not None:
            return connection
        with self._lock:
            if self._connection is not None:
                return self._connection
            try:
                # One opener at a time, in any process: switching a new file to write-ahead
                # logging needs it to itself (SQLite does not wait for that lock).
                with file_lock(self._path.with_name(ANCHORS_LOCK), exclusive=True):
                    if create:
                        create_private_once(self._path, b"")  # 0600 before SQLite writes
                    elif not self._path.exists():
                        raise KeyStoreError(
                            f"The key store at {self._path.parent} has no {ANCHORS_FILE}: it "
                            "was removed, or the key store was made by a version before ADR "
                            "0047. Restore the key store (all of it) from your key backup."
                        )
                    connection = sqlite3.connect(
                        self._path, timeout=30.0, isolation_level=None, check_same_thread=False
                    )
                    (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
                    if str(mode).lower() != "wal":
                        raise sqlite3.OperationalError("write-ahead logging is unavailable")
                    connection.execute("PRAGMA secure_delete=ON")
                    connection.execute("PRAGMA synchronous=FULL")
                    with self._transaction(connection):
                        for statement in _SCHEMA:
                            connection.execute(statement)
            except (sqlite3.Error, OSError) as exc:
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
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        with self._lock:
            try:
                with self._transaction(connection):
                    yield connection
            except sqlite3.Error as exc:
                raise self._error("written") from exc
        if self._purge_pending:
            self._purge_log()  # a drop's log is still to be emptied

    def _reading(self) -> sqlite3.Connection:
        """The connection reads use: its own, so no read waits behind a write's fsync (in
        write-ahead-log mode readers never wait for a writer)."""
        reader = self._reader
        if reader is None:
            self._connect()  # the file exists and is in WAL mode from here on
            with self._read_lock:
                if self._reader is None:
                    try:
                        self._reader = sqlite3.connect(
                            self._path, timeout=30.0, isolation_level=None,
                            check_same_thread=False,
                        )
                    except sqlite3.Error as exc:
                        raise self._error("opened") from exc
                reader = self._reader
        return reader

    def _read(self, sql: str, parameters: tuple[object, ...]) -> list[tuple[Any, ...]]:
        connection = self._reading()
        with self._read_lock:
            try:
                return connection.execute(sql, parameters).fetchall()
            except sqlite3.Error as exc:
                raise self._error("read") from exc

    @contextmanager
    def control_lock(self, *, exclusive: bool) -> Iterator[None]:
        """Writers of control records, in every process, one at a time (``exclusive``); a
        reader that found a record mid-write waits for the writer (shared)."""
        try:
            with file_lock(self._path.with_name(CONTROL_LOCK), exclusive=exclusive):
                yield
        except OSError as exc:
            raise self._error("locked") from exc

    def formation_lock(self, scope: str, subject: str) -> AbstractContextManager[None]:
        """One formation write at a time for ``subject`` of ``scope``, in every process and
        thread: the neighbours it read are still the neighbours when it writes. The file is
        one of :data:`FORMATION_LOCKS`, picked by a hash, so its name says nothing."""
        return self.formation_locks(scope, (subject,))

    @contextmanager
    def formation_locks(self, scope: str, subjects: Iterable[str]) -> Iterator[None]:
        """The formation locks of every one of ``subjects`` at once (a bulk write), each lock
        file taken once, in one order, so two bulk writers never wait for each other."""
        names = sorted({_formation_lock_name(scope, subject) for subject in subjects})
        with contextlib.ExitStack() as stack:
            try:  # only taking the locks is the key store's failure; the body's are its own
                for name in names:
                    stack.enter_context(file_lock(self._path.with_name(name), exclusive=True))
            except OSError as exc:
                raise self._error("locked") from exc
            yield

    def close(self) -> None:
        """Empty the log if a drop could not, and close the connections (a later call opens
        them again)."""
        if self._purge_pending:
            self._purge_log()
        with self._lock, self._read_lock:
            for connection in (self._connection, self._reader):
                if connection is not None:
                    connection.close()
            self._connection = self._reader = None

    # -- memories -------------------------------------------------------------------------

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
                "INSERT INTO memory VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                _memory_row(scope, memory_id, subject, row_subject, agent, pinned, created_at,
                            labels, salt),
            )
        return salt

    def anchor_many(
        self,
        scope: str,
        entries: Iterable[tuple[str, str, str, str, datetime, tuple[str, ...]]],
        *,
        pinned: Collection[str] = frozenset(),
        cap: int | None = None,
    ) -> dict[str, bytes]:
        """Anchor many memories at once, each at version 1: ``(memory id, subject, row
        subject, agent, created_at, labels)`` (a bulk write, before its rows are written);
        return their salts. The ids in ``pinned`` are anchored pinned.

        With ``cap``, raise :class:`CapReached` (and anchor nothing) if an agent would hold
        more than ``cap`` memories of a subject: counted and inserted in one transaction.
        """
        salts: dict[str, bytes] = {}
        rows = []
        adding: dict[tuple[str, str], int] = {}
        for memory_id, subject, row_subject, agent, created_at, labels in entries:
            salt = salts[memory_id] = secrets.token_bytes(32)
            adding[(subject, agent)] = adding.get((subject, agent), 0) + 1
            rows.append(
                _memory_row(scope, memory_id, subject, row_subject, agent,
                            memory_id in pinned, created_at, labels, salt)
            )
        with self._write() as connection:
            if cap is not None:
                for (subject, agent), count in adding.items():
                    (held,) = connection.execute(
                        "SELECT COUNT(*) FROM memory WHERE subject = ? AND agent = ?",
                        (subject, agent),
                    ).fetchone()
                    if held + count > cap:
                        raise CapReached
            connection.executemany(
                "INSERT INTO memory VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)", rows
            )
        return salts

    def advance(
        self, scope: str, memory_id: str, version: int, labels: tuple[str, ...]
    ) -> None:
        """Record that ``version`` of the memory, with ``labels``, was written (a version never
        moves back)."""
        with self._write() as connection:
            connection.execute(
                "UPDATE memory SET version = ?, labels = ? "
                "WHERE scope = ? AND memory = ? AND version < ?",
                (version, json.dumps(list(labels)), scope, memory_id, version),
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
            "SELECT subject, row_subject, version, pinned, created, labels, salt, agent "
            "FROM memory WHERE scope = ? AND memory = ?",
            (scope, memory_id),
        )
        if not rows:
            return None
        subject, row_subject, version, pinned, created, labels, salt, agent = rows[0]
        return MemoryAnchor(
            subject, row_subject, version, pinned, datetime.fromisoformat(created),
            tuple(json.loads(labels)), salt, agent,
        )

    def memories(self, scope: str) -> list[tuple[str, str]]:
        """``(row subject, memory id)`` of every live memory of ``scope``, sorted (a reindex
        walks them: the anchors list every memory whatever its session or quarantine)."""
        return sorted(
            (row_subject, memory_id)
            for row_subject, memory_id in self._read(
                "SELECT row_subject, memory FROM memory WHERE scope = ?", (scope,)
            )
        )

    def expired(
        self, scope: str, retention: Sequence[tuple[str, datetime]]
    ) -> list[tuple[str, str, str]]:
        """``(row subject, memory id, label)`` of every memory whose anchored labels hold a
        label of ``retention`` and which was created before that label's cutoff (the anchors,
        not the store's columns, decide)."""
        if not retention:
            return []
        latest = max(cutoff for _, cutoff in retention)
        found = []
        for row_subject, memory_id, created_us, labels in self._read(
            "SELECT row_subject, memory, created_us, labels FROM memory "
            "WHERE scope = ? AND created_us < ?",
            (scope, _micros(latest)),
        ):
            held = set(json.loads(labels))
            for label, cutoff in retention:
                if label in held and created_us < _micros(cutoff):
                    found.append((row_subject, memory_id, label))
                    break
        return found

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
        log go (the database's own copy was overwritten by ``secure_delete``).

        A reader in another process holding an old snapshot blocks it; it is waited for a
        moment, never for long, and otherwise the log is emptied by the next write's or
        :meth:`close`'s attempt (the salt may stay in the key store's log until then; no
        copy in the memory store is affected).
        """
        connection = self._connect()
        with self._lock:
            try:
                connection.execute(f"PRAGMA busy_timeout = {_PURGE_WAIT_MS}")
                (busy, _, _) = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error:
                busy = 1
            finally:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("PRAGMA busy_timeout = 30000")
            self._purge_pending = bool(busy)

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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: The accepted form "no record": 32 zero bytes (no SHA-256 of a sealed record is that).
_ABSENT = bytes(_DIGEST)


def _split(blob: bytes) -> set[bytes]:
    return {blob[i : i + _DIGEST] for i in range(0, len(blob), _DIGEST)}


def _join(parts: set[bytes]) -> bytes:
    return b"".join(sorted(parts))


def _formation_lock_name(scope: str, subject: str) -> str:
    """The lock file of ``subject``'s formation writes: one of :data:`FORMATION_LOCKS`."""
    digest = hashlib.sha256(f"{scope}\x00{subject}".encode()).digest()
    return f"formation-{digest[0] % FORMATION_LOCKS:02d}.lock"
