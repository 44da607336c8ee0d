"""The ``local`` driver: memories in a folder, for development, ranked with BM25.

Layout under the store folder::

    mainsdk-memory-store.json            marks the folder as a store (format version: /2;
                                         a /1 store opens, and its first write raises it)
    <tenant>/<app>/<subject>/            one folder per tenant, app and subject; a person's
                                         subject is a keyed pseudonym, never the person id
        .lock                            flock(2): writers take it exclusive, readers shared
        .changes                         append-only log of changed memory ids (no content)
        .journal                         what makes a write durable: the new content of
                                         each memory file written since the last sync
        .snapshot                        the subject's index packed as arrays, for a fast
                                         cold open (:mod:`._snapshot`; only a cache)
        <memory id>.json                 every version of one memory: sealed blob, blind terms,
                                         blinded tags (if any) and, if given, the version's
                                         sealed embedding
    <tenant>/<app>/_control/             control records, one file per key (hex of the key)
    <tenant>/<app>/_links/               links between memories (:mod:`._links` draws it):
                                         a file per link, an empty marker per end of a link
                                         in a folder per id, a journal for batches

Every write, holding the lock, appends the memory id to ``.changes``, appends the memory
file's new content to ``.journal`` and syncs it, then replaces the memory file atomically
(temp file, rename) without syncing it (see *Durability* below). A reader keeps
the rows it has loaded and, on each read, holding the lock shared, reads what was appended to
``.changes`` since and reloads only the memories named there; so a write never rewrites the
store, and a store of 10,000 memories per person stays cheap. Each cached subject also keeps
an inverted index (blind token → rows and counts), a tag index (blinded tag → rows) and its
rows' filter columns as arrays, so a search filters with a few vector operations and scores
only the rows holding a query token, and a filter by a tag marks the tag's rows from the
index instead of looking at each row.

The change log is one stream of lines. When a writer starts a new log file (an erase, or
when the log has grown large) the file opens with a header line
``#mainsdk-memory-changes <stream> <base> <nonce>``: the stream it continues, the stream
position of its first byte, and a random nonce that tells this file from the one before even
if the filesystem hands out the same inode again. An erase copies the log with every line
naming the erased memory blanked out with dashes (same length, so positions hold), since a
hard erase leaves no trace of the id; a large log keeps only its tail. A reader that sees a
new file of its stream goes on from its position and drops the memories whose files are gone
(one listing of file names); only a reader left behind the kept tail, or a new one, reads
every memory file. A log without a header (a store written before headers) is a stream of
its own, which its first restart continues; the format marker is unchanged.

A damaged memory file (not JSON, the wrong shape, a field of the wrong type, or rows that
name another memory) affects only itself: the cache remembers its id (and the file's inode,
so a restored file is read again) instead of failing the folder. Reads that return many
memories (``list``, ``search``, ``vectors``, ``expired``, ``rows``) leave it out;
``versions`` of it, and every write to it, raise :class:`~mainsdk_memory.StoreError` naming
the id and saying what to do; ``erase`` still removes its file, and :meth:`LocalDriver.damaged`
names the damaged memories of a subject (a person's erase lists memories first, and a
damaged one is not listed). Only what a reader loads is checked: an existing cache notices a
file that was replaced (a new inode, as every write makes) or logged, not one edited in place.

Durability (ADR 0097). A write makes one ``fsync``: of ``.journal``, after appending the
record ``<id> <crc32> <the memory file's new bytes>``. The journal is an existing file (made
once per folder: temp file synced, renamed, folder synced; a new subject folder's entry is
synced in its parent), so that ``fsync`` makes the record and the file's new length durable,
and the record holds everything the memory file holds. The memory file itself may then be
lost, torn or old after a power loss or an OS crash, never after a process is killed (its
bytes are in the page cache, which outlives the process). The journal's first line names the
boot it was started in (Linux: ``/proc/sys/kernel/random/boot_id``); a crash of the machine
is a new boot. So the first process that locks the folder after a crash (a reader upgrades
its lock) finds a journal of another boot, rewrites every memory file whose bytes differ
from its last whole record (a torn record, whose put never returned, fails its CRC and is
skipped), syncs the filesystem, and starts the journal afresh; while the boot lasts the
journal never overrides a file, so a damaged file is reported as before. Records leave the
journal only after ``syncfs(2)`` (else ``sync(2)``) has put every memory file on disk: when
the journal passes ``_JOURNAL_LIMIT`` bytes, and before an erase removes a memory the journal
holds (the journal is emptied first, durably, so no recovery can bring the memory back and no
byte of it stays). Where the system gives no boot id the driver writes no journal and syncs
each memory file and its folder instead (two ``fsync`` a write), and applies then removes a
journal it finds. The model assumes the filesystem stays mounted while the machine runs (a
disk pulled out and put back without a reboot is not a new boot) and one machine per store.

Snapshot (ADR 0100). A new cache of a folder is built from its ``.snapshot`` when there is
one: the filter columns, postings (CSR), tags, labels and embeddings come from its arrays,
and a memory's file is decoded only when a read returns its rows (``_Memory.lazy``). The
folder is listed with each file's inode, size and mtime; a file that is new, gone, or differs
from the snapshot's record, or that ``.changes`` names after the snapshot's position, is
decoded as before, so a file damaged, edited or restored in place is seen by the next reader
as without a snapshot. A slot of the snapshot that is removed stays in its arrays, dead (every
search masks by ``alive``). A read that decoded at least ``_SNAPSHOT_AFTER`` files (a folder
with no snapshot, or one far behind) writes a new one, holding the folder's shared lock, with
a temp file and a rename and no sync; a write never does, so a put keeps its one ``fsync``.
An erase deletes the snapshot before it removes the file (the folder sync covers both): no
byte of the erased memory stays in it. A file that a process decodes lazily, after the
folder's lock was released, may already hold a later version (its first ones are used) or be
gone or damaged since (then it gives no rows: reads leave it out, ``versions`` raises).

Links (``relations``) live apart from the memories, in the tenant and app's ``_links`` folder
under a lock of their own; an erase takes the memory's subject lock, then the links lock,
and removes the memory's links (both ends, any subject) before its file, so a crash between
the two leaves a memory to erase again, never links to an erased one.
"""

from __future__ import annotations

import array
import base64
import builtins
import contextlib
import ctypes
import functools
import hashlib
import itertools
import json
import math
import os
import secrets
import threading
import zlib
from collections.abc import (
    Callable,
    Collection,
    Container,
    Hashable,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    MutableMapping,
    Sequence,
    Set,
)
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mainsdk_memory._errors import (
    ConfigurationError,
    DamagedMemoryError,
    MemoryConflictError,
    StoreError,
)
from mainsdk_memory._files import (
    FILE_MODE,
    fsync_folder,
    make_private_dir,
    remove_durably,
    write_private,
)
from mainsdk_memory._locking import lock, release, upgrade
from mainsdk_memory.drivers import _bm25 as bm25
from mainsdk_memory.drivers._base import BaseDriver
from mainsdk_memory.drivers._bm25 import BM25_B, BM25_K1
from mainsdk_memory.drivers._links import checked_links, is_name
from mainsdk_memory.drivers._protocol import (
    QUARANTINED_TRUST,
    TENANT_SUBJECT,
    Capabilities,
    EraseResult,
    Filter,
    StoredLink,
    StoredRow,
    VectorEntry,
    bm25_rank,
)
from mainsdk_memory.drivers._tags import check_rows_tags, checked_tags
from mainsdk_memory.drivers.local import _snapshot
from mainsdk_memory.drivers.local._links import LINKS, LinkFolder

__all__ = ["LocalDriver"]

STORE_MARKER = "mainsdk-memory-store.json"
FORMAT = "mainsdk-memory-local/2"
#: Formats this version opens: /1 (no journal, every memory file synced) is raised to /2 by
#: the first write, before any journal is made, so an older version refuses the store then.
_FORMATS = ("mainsdk-memory-local/1", FORMAT)
_JOURNAL = ".journal"
_JOURNAL_HEADER = b"#mainsdk-memory-journal "
_JOURNAL_LIMIT = 4 << 20  # bytes of .journal before a writer syncs the files and empties it
_COMPACT_LOG_AT = 1 << 20  # bytes of .changes before a writer starts a new log file
_LOG_TAIL = 1 << 16  # bytes of the old log a new log file keeps, for readers a little behind
_LOG_HEADER = b"#mainsdk-memory-changes "
_SNAPSHOT_AFTER = 256  # memory files decoded by an open before it writes a new snapshot

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SERIALS = itertools.count(1)
_MICROSECOND = timedelta(microseconds=1)
_FOREVER = np.iinfo(np.int64).max
_SCORE_SLACK = 1e-9  # far above the rounding error of a score; see _Index.search

Mask = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]


@functools.cache
def _boot_id() -> str | None:
    """This boot of the machine (Linux: ``/proc/sys/kernel/random/boot_id``), or ``None``
    where the system does not say: then the driver syncs every memory file (no journal).

    A power loss or an OS crash is a new boot, so a journal written under another boot id
    may have outlived memory files that never reached the disk (module docstring).
    """
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as file:
            boot = file.read(64).strip()
    except OSError:
        return None
    if not (boot and boot.isascii() and boot.replace(b"-", b"").isalnum()):
        return None
    return boot.decode("ascii")


def _journal_header() -> bytes:
    boot = _boot_id()
    assert boot is not None  # noqa: S101 - only journaling writers make a header
    return _JOURNAL_HEADER + boot.encode("ascii") + b"\n"


def _record(memory_id: str, payload: bytes) -> bytes:
    """One journal line: the memory id, a CRC-32 of the payload, and the payload (the memory
    file's new content: JSON, which holds no raw newline)."""
    return b"%s %08x %s\n" % (memory_id.encode("ascii"), zlib.crc32(payload), payload)


def _records(body: bytes) -> dict[str, bytes]:
    """The last whole, well-formed record of each memory id in a journal's body (a torn or
    garbled line, from a crash mid-append, is skipped)."""
    latest: dict[str, bytes] = {}
    for line in body.split(b"\n")[:-1]:
        fields = line.split(b" ", 2)
        if len(fields) != 3 or len(fields[1]) != 8:
            continue
        name = fields[0].decode("ascii", "replace")
        try:
            crc = int(fields[1], 16)
        except ValueError:
            continue
        if is_name(name) and zlib.crc32(fields[2]) == crc:
            latest.pop(name, None)
            latest[name] = fields[2]
    return latest


def _sync_filesystem(folder: Path) -> None:
    """Flush every written file of the filesystem holding ``folder`` to disk: ``syncfs(2)``
    where libc has it, else ``sync(2)`` (every filesystem). Both wait until it is done."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        os.sync()
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _replace_unsynced(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with ``data`` (0600), leaving its durability to the
    journal: readers see the old or the new file; no ``fsync``."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _row_to_json(row: StoredRow, vector: bytes | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tenant": row.tenant,
        "app": row.app,
        "subject": row.subject,
        "memory_id": row.memory_id,
        "version": row.version,
        "kind": row.kind,
        "labels": list(row.labels),
        "trust": row.trust,
        "agent": row.agent,
        "session": row.session,
        "session_only": row.session_only,
        "pinned": row.pinned,
        "created_at": row.created_at.isoformat(),
        "recorded_at": row.recorded_at.isoformat(),
        "valid_from": row.valid_from.isoformat(),
        "valid_to": None if row.valid_to is None else row.valid_to.isoformat(),
        "sealed": base64.b64encode(row.sealed).decode("ascii"),
        "terms": dict(row.terms),
        "length": row.length,
    }
    if row.tags:  # no key for no tags: files written before tags read the same
        data["tags"] = sorted(row.tags)
    if vector is not None:
        data["vector"] = base64.b64encode(vector).decode("ascii")
    return data


def _text(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if type(value) is not str:
        raise TypeError(key)  # the field's name only: the message never holds a value
    return value


def _row_from_json(data: dict[str, Any], memory_id: str) -> StoredRow:
    """One version of the file of ``memory_id``; ``TypeError``, ``ValueError``,
    ``KeyError`` or ``AttributeError`` if it is damaged.

    Every field is checked for the type the cache's index needs, so a damaged file is
    refused here and never reaches (and breaks) the index of the others.
    """
    if _text(data, "memory_id") != memory_id:
        raise ValueError("memory_id")
    terms = data["terms"]  # a JSON object: its keys are strings
    if not all(type(count) is int for count in terms.values()):
        terms = {str(k): int(v) for k, v in terms.items()}
    labels = tuple(data["labels"])
    if not all(type(label) is str for label in labels):
        raise TypeError("labels")
    session = data["session"]
    if session is not None and type(session) is not str:
        raise TypeError("session")
    tags = data.get("tags", [])
    if type(tags) is not list or not all(type(tag) is str for tag in tags):
        raise TypeError("tags")
    version, length = int(data["version"]), int(data["length"])
    if not (0 < version < _FOREVER and 0 <= length < _FOREVER):
        raise ValueError("version")
    valid_to = data["valid_to"]
    return StoredRow(
        tenant=_text(data, "tenant"),
        app=_text(data, "app"),
        subject=_text(data, "subject"),
        memory_id=memory_id,
        version=version,
        kind=_text(data, "kind"),
        labels=labels,
        trust=_text(data, "trust"),
        agent=_text(data, "agent"),
        session=session,
        session_only=bool(data["session_only"]),
        pinned=bool(data["pinned"]),
        created_at=datetime.fromisoformat(data["created_at"]),
        recorded_at=datetime.fromisoformat(data["recorded_at"]),
        valid_from=datetime.fromisoformat(data["valid_from"]),
        valid_to=None if valid_to is None else datetime.fromisoformat(valid_to),
        sealed=base64.b64decode(data["sealed"], validate=True),
        terms=terms,
        length=length,
        tags=frozenset(tags),
    )


def _vector_from_json(data: dict[str, Any]) -> bytes | None:
    vector = data.get("vector")
    return None if vector is None else base64.b64decode(vector, validate=True)


def _micros(moment: datetime) -> int | None:
    """Microseconds since the epoch of an aware datetime; ``None`` for a naive one."""
    if moment.utcoffset() is None:
        return None
    return (moment - _EPOCH) // _MICROSECOND


def _redacted(body: bytes, memory_id: str) -> bytes:
    """``body`` with every line naming ``memory_id`` (or a torn piece of it) blanked out.

    A blank line keeps its length, so positions in the log stream stay valid.
    """
    needle = memory_id.encode("ascii")
    lines = body.split(b"\n")
    for i, line in enumerate(lines):
        if line and (needle in line or needle.startswith(line)):
            lines[i] = b"-" * len(line)
    return b"\n".join(lines)


class _Memory:
    """One memory file as loaded: its versions, their embeddings, and the file's identity.

    One taken from a snapshot (``lazy``) decodes its file the first time its rows are read
    (under the driver's lock, not the folder's: a write since may have added a version, so
    it keeps the first ``count``; a file gone or damaged since gives no rows).
    """

    __slots__ = ("_rows", "_source", "_vectors", "inode")

    def __init__(
        self,
        rows: tuple[StoredRow, ...] | None,
        vectors: tuple[bytes | None, ...] | None,
        inode: int,
        source: tuple[str, str, int] | None = None,
    ) -> None:
        self._rows = rows
        self._vectors = vectors
        self.inode = inode
        self._source = source

    @classmethod
    def lazy(cls, folder: str, memory_id: str, inode: int, count: int) -> _Memory:
        return cls(None, None, inode, (folder, memory_id, count))

    def _decode(self) -> tuple[tuple[StoredRow, ...], tuple[bytes | None, ...]]:
        if self._rows is not None and self._vectors is not None:
            return self._rows, self._vectors
        assert self._source is not None  # noqa: S101 - only a lazy memory has no rows
        folder, memory_id, count = self._source
        loaded = _load_file(folder, memory_id)
        if not isinstance(loaded, _Memory) or len(loaded.rows) < count:
            return (), ()
        self._rows, self._vectors = loaded.rows[:count], loaded.vectors[:count]
        return self._rows, self._vectors

    @property
    def rows(self) -> tuple[StoredRow, ...]:
        return self._decode()[0]

    @property
    def vectors(self) -> tuple[bytes | None, ...]:
        return self._decode()[1]


class _Memories(MutableMapping[str, _Memory]):
    """The memories of a subject cache by id; those from a snapshot are made when first
    asked for (a number into the snapshot's ``inodes`` and ``counts`` until then)."""

    def __init__(
        self,
        held: dict[str, _Memory | int] | None = None,
        folder: str = "",
        inodes: Sequence[int] = (),
        counts: Sequence[int] = (),
    ) -> None:
        self._held: dict[str, _Memory | int] = {} if held is None else held
        self._folder, self._inodes, self._counts = folder, inodes, counts

    def __getitem__(self, memory_id: str) -> _Memory:
        memory = self._held[memory_id]
        if isinstance(memory, int):
            memory = self._held[memory_id] = _Memory.lazy(
                self._folder, memory_id, self._inodes[memory], self._counts[memory]
            )
        return memory

    def __setitem__(self, memory_id: str, memory: _Memory) -> None:
        self._held[memory_id] = memory

    def __delitem__(self, memory_id: str) -> None:
        del self._held[memory_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._held

    def keys(self) -> KeysView[str]:
        return self._held.keys()

    def lookup(self, memory_id: str) -> _Memory | None:
        return self[memory_id] if memory_id in self._held else None


class _Damaged(NamedTuple):
    """A memory file that exists but cannot be decoded, and the file's identity."""

    inode: int


#: What decoding a damaged memory file raises (json, base64, datetime, the checks above).
_DAMAGE = (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError)


def _damaged_error(memory_id: str) -> DamagedMemoryError:
    # The id only: the file's bytes, which may be anything, never reach the message.
    return DamagedMemoryError(
        memory_id,
        f"Memory {memory_id} is damaged in the local store: its file ({memory_id}.json) "
        "cannot be decoded, so it can be neither read nor changed; the other memories are "
        "not affected. Restore that file from a backup of the store, or erase the memory "
        "(erasing removes the damaged file)."
    )


def _load_file(folder: str, memory_id: str) -> _Memory | _Damaged | None:
    """Read one memory file; ``None`` if there is none, :class:`_Damaged` if it cannot
    be decoded (raises :class:`StoreError` only if it cannot be read at all)."""
    try:
        fd = os.open(f"{folder}/{memory_id}.json", os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(
            f"A memory file in the local store cannot be read ({memory_id})."
        ) from exc
    try:
        stat = os.fstat(fd)
        chunks = []
        left = stat.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise StoreError(
            f"A memory file in the local store cannot be read ({memory_id})."
        ) from exc
    finally:
        os.close(fd)
    try:
        versions = json.loads(b"".join(chunks))["versions"]
        rows = tuple(_row_from_json(item, memory_id) for item in versions)
        vectors = tuple(_vector_from_json(item) for item in versions)
    except _DAMAGE:
        return _Damaged(stat.st_ino)
    # Every file a writer leaves holds at least one version.
    return _Memory(rows, vectors, stat.st_ino) if rows else _Damaged(stat.st_ino)


class _Log(NamedTuple):
    """A change log file as a reader sees it."""

    inode: int
    size: int
    stream: str
    base: int
    """Stream position of the first byte after the header."""
    header: int
    """Length of the header line (0: a log written before headers, or never restarted)."""
    tag: bytes
    """The header line: a new one for every new log file (an inode number may come back)."""

    @property
    def file(self) -> tuple[int, bytes]:
        """What tells one log file from another."""
        return (self.inode, self.tag)


def _parse_log(inode: int, size: int, head: bytes) -> _Log:
    if head.startswith(_LOG_HEADER):
        end = head.find(b"\n")
        fields = head[len(_LOG_HEADER) : end].split() if end >= 0 else []
        if len(fields) == 3 and fields[1].isdigit():
            stream, base = fields[0].decode("ascii", "replace"), int(fields[1])
            return _Log(inode, size, stream, base, end + 1, head[: end + 1])
    # No header: the log's own stream, named after its inode, as a writer restarting it does.
    return _Log(inode, size, f"i{inode}", 0, 0, b"")


def _lookup(keys: npt.NDArray[np.bytes_], ptr: Ints, key: str) -> slice | None:
    """Where ``key``'s entries are in a CSR of sorted ``keys`` (``None``: not there)."""
    if not keys.size:
        return None
    raw = key.encode()
    at = int(np.searchsorted(keys, raw))
    if at >= keys.size or keys[at] != raw:
        return None
    return slice(int(ptr[at]), int(ptr[at + 1]))


class _Index:
    """The rows of one subject as columns, for filters and BM25 over many rows at once.

    Each stored version has a slot; a reloaded memory gets new slots and its old ones are
    cleared (and the columns rebuilt once half of them are dead). Strings are interned to
    integer codes; datetimes are microseconds since the epoch (aware datetimes only: with a
    naive one present, the driver filters row by row with :meth:`Filter.matches`).
    """

    _INTS = ("tenant", "app", "subject", "kind", "trust", "agent", "session")
    _TIMES = ("created", "valid_from", "valid_to")

    def __init__(self, capacity: int = 64) -> None:
        self.serial = next(_SERIALS)
        """Unique to this index in the process (an ``id()`` can be reused)."""
        self.generation = 0
        """Counts the rows added and removed: what a vector state is made of, with the mask."""
        self.size = 0
        self.live = 0
        self.naive: set[int] = set()  # slots of rows with a naive datetime
        self.rows: list[StoredRow | None] = []
        """Per slot its row; ``None`` for a snapshot's slot (decoded when read: :meth:`row`)."""
        self.base_size = 0
        """Slots below this come from a snapshot."""
        self.base_ids: list[str] = []
        self.base_memory: npt.NDArray[np.int32] = np.zeros(0, np.int32)
        """Per snapshot slot, its memory's number in ``base_ids``."""
        self.memory: Callable[[str], _Memory | None] = lambda _memory_id: None
        """The cache's memory of an id (what a snapshot slot's row is decoded from)."""
        self.vectors: list[bytes | None] = []
        self.entries: list[VectorEntry | None] = []  # per slot with a vector, sealed=None
        self._vector_order: npt.NDArray[np.intp] | None = None
        self.slots: dict[str, Sequence[int]] = {}
        self.codes: dict[str, int] = {}
        self.postings: dict[str, dict[int, int]] = {}
        self.tagged: dict[str, set[int]] = {}  # blinded tag -> the slots carrying it
        self.packed: dict[str, tuple[npt.NDArray[np.intp], Ints]] = {}
        self.labels: dict[str, Mask] = {}
        # From a snapshot: postings and tags as sorted keys and CSR arrays, never changed;
        # a removed slot stays in them, dead (every search and tag filter masks by alive).
        self.base_tokens: npt.NDArray[np.bytes_] = np.zeros(0, "S1")
        self.base_ptr: Ints = np.zeros(1, np.int64)
        self.base_slots: npt.NDArray[np.int32] = np.zeros(0, np.int32)
        self.base_counts: npt.NDArray[np.int32] = np.zeros(0, np.int32)
        self.base_tags: npt.NDArray[np.bytes_] = np.zeros(0, "S1")
        self.base_tag_ptr: Ints = np.zeros(1, np.int64)
        self.base_tag_slots: npt.NDArray[np.int32] = np.zeros(0, np.int32)
        self.version: Ints = np.zeros(capacity, np.int64)
        self.capacity = capacity
        self.alive: Mask = np.zeros(capacity, np.bool_)
        self.open: Mask = np.zeros(capacity, np.bool_)
        self.pinned: Mask = np.zeros(capacity, np.bool_)
        self.session_only: Mask = np.zeros(capacity, np.bool_)
        self.length: Ints = np.zeros(capacity, np.int64)
        self.columns: dict[str, npt.NDArray[np.int32]] = {
            name: np.zeros(capacity, np.int32) for name in self._INTS
        }
        self.times: dict[str, Ints] = {name: np.zeros(capacity, np.int64) for name in self._TIMES}

    # -- upkeep ---------------------------------------------------------------------------

    def _code(self, value: str | None) -> int:
        if value is None:
            return -1
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.codes)
        return code

    def _grow(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        capacity = max(needed, 2 * self.capacity)

        def grown(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
            bigger = np.zeros(capacity, array.dtype)
            bigger[: self.size] = array[: self.size]
            return bigger

        self.alive, self.open = grown(self.alive), grown(self.open)
        self.pinned, self.session_only = grown(self.pinned), grown(self.session_only)
        self.length, self.version = grown(self.length), grown(self.version)
        self.columns = {name: grown(array) for name, array in self.columns.items()}
        self.times = {name: grown(array) for name, array in self.times.items()}
        self.labels = {name: grown(array) for name, array in self.labels.items()}
        self.capacity = capacity

    def add(self, memories: Iterable[tuple[str, _Memory]]) -> None:
        """Give every version of these memories a slot (they must not be indexed yet)."""
        batch = [
            (memory_id, row, vector)
            for memory_id, memory in memories
            for row, vector in zip(memory.rows, memory.vectors, strict=True)
        ]
        if not batch:
            return
        start = self.size
        end = start + len(batch)
        self._grow(end)
        code = self._code
        postings = self.postings
        ints: list[list[int]] = [[] for _ in self._INTS]
        tenants, apps, subjects, kinds, trusts, agents, sessions = ints
        created: list[int] = []
        valid_from: list[int] = []
        valid_to: list[int] = []
        labelled: dict[str, list[int]] = {}
        for slot, (memory_id, row, vector) in enumerate(batch, start):
            self.rows.append(row)
            self.vectors.append(vector)
            self.entries.append(
                None
                if vector is None
                else VectorEntry(row.subject, row.memory_id, row.version, None)
            )
            held = self.slots.get(memory_id)
            if held is None:
                self.slots[memory_id] = [slot]
            else:
                self.slots[memory_id] = [*held, slot]
            tenants.append(code(row.tenant))
            apps.append(code(row.app))
            subjects.append(code(row.subject))
            kinds.append(code(row.kind))
            trusts.append(code(row.trust))
            agents.append(code(row.agent))
            sessions.append(code(row.session))
            begun, start_at = _micros(row.created_at), _micros(row.valid_from)
            end_at = _FOREVER if row.valid_to is None else _micros(row.valid_to)
            if begun is None or start_at is None or end_at is None:
                # (recorded_at is only ever ordered, by its timestamp())
                self.naive.add(slot)
                begun = start_at = end_at = 0
            created.append(begun)
            valid_from.append(start_at)
            valid_to.append(end_at)
            for label in row.labels:
                labelled.setdefault(label, []).append(slot)
            for token, count in row.terms.items():
                posting = postings.get(token)
                if posting is None:
                    postings[token] = {slot: count}
                else:
                    posting[slot] = count
            for tag in row.tags:
                carriers = self.tagged.get(tag)
                if carriers is None:
                    self.tagged[tag] = {slot}
                else:
                    carriers.add(slot)
        if len(batch) > 64:
            self.packed.clear()
        else:
            for _memory_id, row, _vector in batch:
                for token in row.terms:
                    self.packed.pop(token, None)
        for name, values in zip(self._INTS, ints, strict=True):
            self.columns[name][start:end] = values
        self.times["created"][start:end] = created
        self.times["valid_from"][start:end] = valid_from
        self.times["valid_to"][start:end] = valid_to
        for label, slots in labelled.items():
            column = self.labels.get(label)
            if column is None:
                column = self.labels[label] = np.zeros(self.capacity, np.bool_)
            column[slots] = True
        rows = [row for _memory_id, row, _vector in batch]
        self.alive[start:end] = True
        self.open[start:end] = [row.valid_to is None for row in rows]
        self.pinned[start:end] = [row.pinned for row in rows]
        self.session_only[start:end] = [row.session_only for row in rows]
        self.length[start:end] = [row.length for row in rows]
        self.version[start:end] = [row.version for row in rows]
        self.size = end
        self.live += len(batch)
        self._vector_order = None
        self.generation += 1

    def remove(self, memory_id: str) -> None:
        """Clear the slots of ``memory_id``: its rows, embeddings, postings and tags."""
        for slot in self.slots.pop(memory_id, ()):
            row = self.rows[slot]
            if row is None:
                if slot < self.base_size and self.alive[slot]:
                    self._clear(slot)  # from the snapshot: left dead in its arrays
                continue
            for token in row.terms:
                posting = self.postings.get(token)
                if posting is not None:
                    posting.pop(slot, None)
                    if not posting:
                        del self.postings[token]
                self.packed.pop(token, None)
            for tag in row.tags:
                carriers = self.tagged.get(tag)
                if carriers is not None:
                    carriers.discard(slot)
                    if not carriers:
                        del self.tagged[tag]
            for label in row.labels:
                self.labels[label][slot] = False
            self._clear(slot)

    def _clear(self, slot: int) -> None:
        self.naive.discard(slot)
        self.rows[slot] = None
        self.vectors[slot] = None
        self.entries[slot] = None
        self._vector_order = None
        self.alive[slot] = False
        self.live -= 1
        self.generation += 1

    def vector_order(self) -> npt.NDArray[np.intp]:
        """The slots holding a vector, sorted by subject, memory id and version (kept until
        the next change)."""
        if self._vector_order is None:
            keyed = [(entry, slot) for slot, entry in enumerate(self.entries) if entry]
            keyed.sort()
            self._vector_order = np.array([slot for _entry, slot in keyed], dtype=np.intp)
        return self._vector_order

    def worn(self) -> bool:
        """Whether more slots are dead than alive (time to rebuild the columns)."""
        return self.size - self.live > max(256, self.live)

    def posting(self, token: str) -> tuple[npt.NDArray[np.intp], Ints] | None:
        packed = self.packed.get(token)
        if packed is None:
            posting = self.postings.get(token)
            base = _lookup(self.base_tokens, self.base_ptr, token)
            if posting is None and base is None:
                return None
            slots = [] if base is None else [self.base_slots[base].astype(np.intp)]
            counts = [] if base is None else [self.base_counts[base].astype(np.int64)]
            if posting is not None:
                slots.append(np.fromiter(posting.keys(), np.intp, len(posting)))
                counts.append(np.fromiter(posting.values(), np.int64, len(posting)))
            packed = self.packed[token] = (np.concatenate(slots), np.concatenate(counts))
        return packed

    def row(self, slot: int) -> StoredRow | None:
        """The row of a slot (``None``: dead, or its file gone or damaged since the snapshot)."""
        row = self.rows[slot]
        if row is not None or slot >= self.base_size or not self.alive[slot]:
            return row
        memory_id = self.base_ids[int(self.base_memory[slot])]
        memory = self.memory(memory_id)
        rows = () if memory is None else memory.rows
        held = self.slots[memory_id]
        for at, decoded in zip(held, rows, strict=False):
            self.rows[at] = decoded  # from now on a row like any other
        place = slot - held[0]
        return rows[place] if place < len(rows) else None

    # -- reading --------------------------------------------------------------------------

    def _of_memories(self, memory_ids: Collection[str], n: int) -> Mask:
        """The slots of these memories (a walk over the smaller of the ids and the index)."""
        picked = np.zeros(n, np.bool_)
        slots = self.slots
        if len(memory_ids) <= len(slots):
            chosen = [s for m in memory_ids for s in slots.get(m, ())]
        else:
            chosen = [s for m, held in slots.items() if m in memory_ids for s in held]
        picked[chosen] = True
        return picked

    def _carrying(self, tags: Collection[str], n: int) -> Mask:
        """The slots carrying one of ``tags``, marked from the tag index (no row is read)."""
        picked = np.zeros(n, np.bool_)
        for tag in tags:
            carriers = self.tagged.get(tag)
            if carriers:
                picked[np.fromiter(carriers, np.intp, len(carriers))] = True
            base = _lookup(self.base_tags, self.base_tag_ptr, tag)
            if base is not None:
                picked[self.base_tag_slots[base]] = True
        return picked

    def mask(self, where: Filter) -> Mask | None:
        """Which slots ``where`` matches, exactly as :meth:`Filter.matches`; ``None`` when a
        naive datetime (in a row or in the filter) needs the row-by-row check."""
        if self.naive:
            return None
        n = self.size
        codes = self.codes
        columns = self.columns

        def equal(name: str, value: str) -> Mask:
            code = codes.get(value)
            if code is None:
                return np.zeros(n, np.bool_)
            same: Mask = columns[name][:n] == code
            return same

        def among(name: str, values: Iterable[str]) -> Mask:
            found = [codes[value] for value in values if value in codes]
            if not found:
                return np.zeros(n, np.bool_)
            if len(found) == 1:
                same: Mask = columns[name][:n] == found[0]
                return same
            return np.isin(columns[name][:n], found)

        mask = self.alive[:n] & equal("tenant", where.tenant) & equal("app", where.app)
        mask &= among("subject", where.subjects)
        confined = self.session_only[:n] | equal("trust", QUARANTINED_TRUST)
        if where.any_session:
            # The person's own view lifts the session rules for their rows, not shared ones.
            confined &= equal("subject", TENANT_SUBJECT)
        if where.session is None:
            mask &= ~confined
        else:
            mask &= ~confined | equal("session", where.session)
        if where.written_by is not None:
            mask &= equal("agent", where.written_by)
        for label, cutoff in where.retention:
            column = self.labels.get(label)
            if column is None:
                continue
            before = _micros(cutoff)
            if before is None:
                return None
            mask &= ~(column[:n] & (self.times["created"][:n] < before))
        if where.kinds is not None:
            mask &= among("kind", where.kinds)
        if where.memory_ids is not None:
            mask &= self._of_memories(where.memory_ids, n)
        for clause in where.tags:  # each clause: at least one of its tags
            mask &= self._carrying(clause, n)
        if where.tags_absent:
            mask &= ~self._carrying(where.tags_absent, n)
        if where.pinned is not None:
            mask &= self.pinned[:n] if where.pinned else ~self.pinned[:n]
        if where.as_of is None:
            mask &= self.open[:n]
        else:
            at = _micros(where.as_of)
            if at is None:
                return None
            mask &= (self.times["valid_from"][:n] <= at) & (at < self.times["valid_to"][:n])
        return mask


def _csr(
    keys: Sequence[npt.NDArray[np.bytes_]],
    parts: Sequence[tuple[Ints, Ints, Ints]],
    remap: Ints,
) -> tuple[npt.NDArray[np.bytes_], Ints, npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Merge postings into one CSR over sorted keys: each part is (key number within its
    key array, old slot, count); slots are renumbered by ``remap`` and dead ones dropped."""
    joined = np.concatenate([np.asarray(k, "S") for k in keys]) if keys else np.zeros(0, "S1")
    offsets = np.cumsum([0, *(k.size for k in keys)])
    unique, inverse = np.unique(joined, return_inverse=True)
    key_of = np.concatenate(
        [inverse[offsets[i] + part[0]] for i, part in enumerate(parts)] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    slot_of = remap[np.concatenate([p[1] for p in parts] or [np.zeros(0, np.int64)])]
    count_of = np.concatenate([p[2] for p in parts] or [np.zeros(0, np.int64)])
    live = slot_of >= 0
    key_of, slot_of, count_of = key_of[live], slot_of[live], count_of[live]
    order = np.lexsort((slot_of, key_of))
    key_of, slot_of, count_of = key_of[order], slot_of[order], count_of[order]
    used = np.unique(key_of)
    ptr = np.zeros(used.size + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(np.searchsorted(used, key_of), minlength=used.size))
    return (
        unique[used] if used.size else np.zeros(0, "S1"),
        ptr,
        slot_of.astype(np.int32),
        count_of.astype(np.int32),
    )


def _dict_part(
    table: Mapping[str, Mapping[int, int] | Set[int]],
) -> tuple[npt.NDArray[np.bytes_], tuple[Ints, Ints, Ints]] | None:
    """A postings or tag dict as keys and (key number, slot, count); ``None`` if a key
    cannot be held in a fixed-width bytes array (a NUL in it)."""
    names = [key.encode() for key in table]
    if any(b"\x00" in name for name in names):
        return None
    numbers: list[int] = []
    slots: list[int] = []
    counts: list[int] = []
    for number, held in enumerate(table.values()):
        slots.extend(held)
        numbers.extend([number] * len(held))
        counts.extend(held.values() if isinstance(held, Mapping) else [1] * len(held))
    return np.array(names, "S") if names else np.zeros(0, "S1"), (
        np.array(numbers, np.int64),
        np.array(slots, np.int64),
        np.array(counts, np.int64),
    )


def _base_part(keys: npt.NDArray[np.bytes_], ptr: Ints, slots: npt.NDArray[np.int32],
               counts: npt.NDArray[np.int32] | None) -> tuple[Ints, Ints, Ints]:
    numbers = np.repeat(np.arange(keys.size, dtype=np.int64), np.diff(ptr))
    held = slots.astype(np.int64)
    return numbers, held, (np.ones_like(held) if counts is None else counts.astype(np.int64))


def _pack(
    index: _Index, files: Sequence[tuple[str, int, int, int]], position: tuple[str, int]
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The snapshot of these memory files' slots (``files``: id, inode, size, mtime, sorted
    by id), or ``None`` when the index cannot be packed (a naive time, a NUL in a key)."""
    if index.naive or any("\x00" in memory_id for memory_id, *_ in files):
        return None
    held = [index.slots[memory_id] for memory_id, *_ in files]
    old = np.array([slot for slots in held for slot in slots], np.int64)
    n = old.size
    remap = np.full(index.size, -1, np.int64)
    remap[old] = np.arange(n)
    postings = _dict_part(index.postings)
    tagged = _dict_part(index.tagged)
    if postings is None or tagged is None:
        return None
    tokens, t_ptr, t_slots, t_counts = _csr(
        [index.base_tokens, postings[0]],
        [
            _base_part(index.base_tokens, index.base_ptr, index.base_slots, index.base_counts),
            postings[1],
        ],
        remap,
    )
    tags, g_ptr, g_slots, _ = _csr(
        [index.base_tags, tagged[0]],
        [_base_part(index.base_tags, index.base_tag_ptr, index.base_tag_slots, None), tagged[1]],
        remap,
    )
    labels = sorted(index.labels)
    label_slots = [np.flatnonzero(index.labels[name][old]) for name in labels]
    vector_slots = [k for k, slot in enumerate(old.tolist()) if index.vectors[slot] is not None]
    vectors = [index.vectors[int(old[k])] or b"" for k in vector_slots]
    codes = sorted(index.codes, key=index.codes.__getitem__)

    def ptr_of(sizes: Iterable[int]) -> Ints:
        return np.concatenate([[0], np.cumsum(list(sizes), dtype=np.int64)]).astype(np.int64)

    arrays: dict[str, npt.NDArray[Any]] = {
        "ids": np.array([m.encode() for m, *_ in files], "S") if files else np.zeros(0, "S1"),
        "inode": np.array([f[1] for f in files], np.int64),
        "size": np.array([f[2] for f in files], np.int64),
        "mtime": np.array([f[3] for f in files], np.int64),
        "first": ptr_of(len(slots) for slots in held),
        "version": index.version[old],
        **{name: index.columns[name][old] for name in _Index._INTS},
        **{name: index.times[name][old] for name in _Index._TIMES},
        "open": index.open[old],
        "pinned": index.pinned[old],
        "session_only": index.session_only[old],
        "length": index.length[old],
        "tokens": tokens, "t_ptr": t_ptr, "t_slots": t_slots, "t_counts": t_counts,
        "tags": tags, "g_ptr": g_ptr, "g_slots": g_slots,
        "l_ptr": ptr_of(s.size for s in label_slots),
        "l_slots": np.concatenate([*label_slots, np.zeros(0, np.int64)]).astype(np.int64),
        "v_slots": np.array(vector_slots, np.int64),
        "v_ptr": ptr_of(len(v) for v in vectors),
        "v_bytes": np.frombuffer(b"".join(vectors), np.uint8),
    }  # fmt: skip
    meta = {"codes": codes, "labels": labels, "stream": position[0], "position": position[1]}
    return meta, arrays


def _unpack(
    snapshot: _snapshot.Snapshot, path: str, kept: Mask
) -> tuple[_Index, _Memories]:
    """An index of every slot of a snapshot, with the slots of memories not ``kept`` dead,
    and the kept memories, decoded from their files only when read (raises ``ValueError``,
    ``IndexError``, ``KeyError`` or ``TypeError`` for a snapshot that does not add up)."""
    a, meta = snapshot.arrays, snapshot.meta
    ids = [raw.decode("ascii") for raw in a["ids"].tolist()]
    first = a["first"].astype(np.int64)
    n = int(a["version"].size)
    if first.size != len(ids) + 1 or (first.size and int(first[-1]) != n) or not len(ids):
        raise ValueError("snapshot")
    if np.any(np.diff(first) <= 0) or kept.size != len(ids):
        raise ValueError("snapshot")
    index = _Index(n + 64)
    index.size = n
    index.version[:n] = a["version"]
    for name in _Index._INTS:
        index.columns[name][:n] = a[name]
    for name in _Index._TIMES:
        index.times[name][:n] = a[name]
    index.open[:n], index.pinned[:n] = a["open"], a["pinned"]
    index.session_only[:n], index.length[:n] = a["session_only"], a["length"]
    codes = meta["codes"]
    if not all(type(code) is str for code in codes):
        raise TypeError("codes")
    index.codes = {code: number for number, code in enumerate(codes)}
    labels, l_ptr, l_slots = meta["labels"], a["l_ptr"], a["l_slots"]
    if l_ptr.size != len(labels) + 1:
        raise ValueError("labels")
    for number, label in enumerate(labels):
        column = index.labels[str(label)] = np.zeros(index.capacity, np.bool_)
        column[l_slots[int(l_ptr[number]) : int(l_ptr[number + 1])]] = True
    for keys, ptr in ((a["tokens"], a["t_ptr"]), (a["tags"], a["g_ptr"])):
        if ptr.size != keys.size + 1 or (keys.size > 1 and not np.all(keys[1:] > keys[:-1])):
            raise ValueError("keys")
    index.base_tokens, index.base_ptr = a["tokens"], np.asarray(a["t_ptr"], np.int64)
    index.base_slots = np.asarray(a["t_slots"], np.int32)
    index.base_counts = np.asarray(a["t_counts"], np.int32)
    index.base_tags, index.base_tag_ptr = a["tags"], np.asarray(a["g_ptr"], np.int64)
    index.base_tag_slots = np.asarray(a["g_slots"], np.int32)
    for slots in (index.base_slots, index.base_tag_slots, l_slots):
        if slots.size and (int(slots.min()) < 0 or int(slots.max()) >= n):
            raise IndexError("slots")
    counts = np.diff(first).tolist()
    keep = kept.tolist()
    memories = _Memories(
        {m: number for number, m in enumerate(ids) if keep[number]},
        path,
        a["inode"].tolist(),
        counts,
    )
    starts = first[:-1].tolist()
    index.slots = {
        memory_id: range(start, start + count)
        for memory_id, start, count, held in zip(ids, starts, counts, keep, strict=True)
        if held
    }
    index.rows = [None] * n
    index.base_size, index.base_ids = n, ids
    index.base_memory = np.repeat(np.arange(len(ids), dtype=np.int32), counts)
    index.memory = memories.lookup
    index.alive[:n] = np.repeat(kept, counts)
    index.live = int(np.count_nonzero(index.alive[:n]))
    index.vectors = [None] * n
    index.entries = [None] * n
    v_ptr, v_bytes = a["v_ptr"], a["v_bytes"].tobytes()
    if v_ptr.size != a["v_slots"].size + 1:
        raise ValueError("vectors")
    subject = codes[int(index.columns["subject"][0])] if n else ""
    slot_memory = index.base_memory
    for number, slot in enumerate(a["v_slots"].tolist()):
        if index.alive[slot]:
            index.vectors[slot] = v_bytes[int(v_ptr[number]) : int(v_ptr[number + 1])]
            index.entries[slot] = VectorEntry(
                subject, ids[int(slot_memory[slot])], int(index.version[slot]), None
            )
    index.generation += 1
    return index, memories


@dataclass
class _SubjectCache:
    """Rows of one subject folder as last loaded, their index, and where the log was read."""

    memories: _Memories
    index: _Index
    log: _Log | None
    offset: int
    """How far into the log file (bytes, header included) complete lines were read."""
    dir_mtime: int
    damaged: dict[str, int] = field(default_factory=dict)
    """Memories whose file cannot be decoded, by id, with their file's inode (a file that
    is replaced, restored say, is read again). Never in ``memories`` or the index."""

    @property
    def read(self) -> tuple[tuple[int, bytes], int]:
        """The log file and offset read up to (what a refresh that read nothing leaves)."""
        return ((-1, b"") if self.log is None else self.log.file, self.offset)

    @property
    def position(self) -> int:
        """The stream position read up to."""
        return 0 if self.log is None else self.log.base + self.offset - self.log.header

    def held(self) -> Set[str]:
        """The ids of every memory file as last loaded, damaged ones included."""
        if not self.damaged:
            return self.memories.keys()
        return self.memories.keys() | self.damaged.keys()

    def inode(self, memory_id: str) -> int:
        """The inode of a held memory's file as last loaded."""
        memory = self.memories.get(memory_id)
        return self.damaged[memory_id] if memory is None else memory.inode

    def put(self, memory_id: str, memory: _Memory | _Damaged | None) -> None:
        """Replace (or, with ``None``, drop) one memory and its slots; a damaged one is
        remembered by id only."""
        if memory_id in self.memories:
            del self.memories[memory_id]
            self.index.remove(memory_id)
        elif self.damaged:
            self.damaged.pop(memory_id, None)
        if isinstance(memory, _Damaged):
            self.damaged[memory_id] = memory.inode
        elif memory is not None:
            self.memories[memory_id] = memory
            self.index.add([(memory_id, memory)])
        if self.index.worn():
            self.index = _Index(max(64, 2 * self.index.live))
            self.index.add(self.memories.items())


class LocalDriver(BaseDriver):
    """Stores memories as files in a folder; see the module docstring for the layout.

    A :class:`~mainsdk_memory.drivers.BaseDriver` whose reads (search, list, vectors,
    expired) and pinning are overridden by fast paths over its cached index, equal to the
    inherited reference behaviour.
    """

    name = "local"
    capabilities = Capabilities(
        text_search=True,
        time_travel=True,
        vectors=True,
        relations=True,
        erase="hard",
        regions=(),
        concurrent_writers=True,
        tags=True,
    )

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).absolute()
        self._lock = threading.Lock()
        self._caches: dict[Path, _SubjectCache] = {}
        self._marker = self.root / STORE_MARKER
        self._marked = False  # whether this driver has seen (or written) a /2 marker
        try:
            # Another process may be creating the store right now (folder first, then the
            # marker): only entries that are not the marker or its temp file count, and only
            # if the marker is still missing after the listing.
            if (
                not self._marker.exists()
                and self._foreign_entries()
                and not self._marker.exists()
            ):
                raise ConfigurationError(
                    f"{self.root} is not empty and is not a memory store. Give the local "
                    "driver an empty or new folder."
                )
            if self._marker.exists():
                document = json.loads(self._marker.read_bytes())
                if not isinstance(document, dict) or document.get("format") not in _FORMATS:
                    raise ConfigurationError(
                        f"{self.root} holds a memory store of a format this version does not "
                        "know. Upgrade mainsdk-memory."
                    )
        except (OSError, ValueError) as exc:
            raise StoreError(f"The local store at {self.root} cannot be opened.") from exc

    def _foreign_entries(self) -> bool:
        """Whether the folder holds anything but a store's marker (or the marker's temp file)."""
        try:
            names = [entry.name for entry in os.scandir(self.root)]
        except FileNotFoundError:
            return False
        temp = f".{STORE_MARKER}."
        return any(
            name != STORE_MARKER and not (name.startswith(temp) and name.endswith(".tmp"))
            for name in names
        )

    def _ensure_store(self) -> None:
        # Opening creates nothing; the first write makes the folder and its marker, and
        # raises a /1 marker to /2 before it makes any journal (module docstring).
        if self._marked:
            return
        try:
            document = json.loads(self._marker.read_bytes())
        except FileNotFoundError:
            document = None
        except ValueError:
            document = {}
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            make_private_dir(self.root)
            write_private(self._marker, json.dumps({"format": FORMAT}).encode())
        self._marked = True

    @classmethod
    def from_url(cls, url: str) -> LocalDriver:
        """Open ``local:PATH`` (a relative or absolute folder)."""
        scheme, _, path = url.partition(":")
        if scheme != "local" or not path:
            raise ConfigurationError(
                "A local store URL is 'local:PATH', for example 'local:./memories'."
            )
        return cls(path)

    def __repr__(self) -> str:
        return f"<LocalDriver {self.root}>"

    def close(self) -> None:
        """Drop cached rows; the driver holds no open files between calls."""
        with self._lock:
            self._caches.clear()

    # -- paths and locking --------------------------------------------------------------

    def _subject_dir(self, tenant: str, app: str, subject: str) -> Path:
        # tenant and app are checked names; subject is a pseudonym or "tenant".
        return self.root / tenant / app / subject

    @contextmanager
    def _writing(self, folder: Path) -> Iterator[None]:
        try:
            self._ensure_store()
            if not folder.is_dir():
                self._make_folder(folder)
            fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc
        try:
            lock(fd, exclusive=True)
            try:
                self._recover(folder)
            except OSError as exc:
                raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc
            yield
        finally:
            release(fd)

    def _make_folder(self, folder: Path) -> None:
        """Create a subject folder (and its tenant and app folders) durably: each new
        folder's entry is synced in its parent, once, so the journal made in it next stays
        reachable after a power loss."""
        missing = []
        at = folder
        while not at.is_dir() and at != self.root:
            missing.append(at)
            at = at.parent
        make_private_dir(folder)
        for made in reversed(missing):
            fsync_folder(made.parent)

    @contextmanager
    def _reading(self, folder: Path) -> Iterator[int]:
        # Shared: no writer is between its log line and its rename while a reader looks.
        path = str(folder)
        try:
            fd = os.open(path + "/.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            fd = -1  # no folder: nothing stored yet
        except OSError:
            try:  # a read-only store: nobody can be writing it
                fd = os.open(path + "/.lock", os.O_RDONLY)
            except OSError:
                fd = -1
        try:
            if fd >= 0:
                lock(fd, exclusive=False)
            yield fd
        finally:
            if fd >= 0:
                release(fd)

    # -- the journal ----------------------------------------------------------------------

    @staticmethod
    def _journaling() -> bool:
        """Whether writes go through the journal (the boot is known) or sync every file."""
        return _boot_id() is not None

    @staticmethod
    def _stale_journal(folder: Path) -> bool:
        """Whether the folder holds a journal written under another boot (or one this
        system cannot tell): memory files it covers may not have reached the disk."""
        try:
            with open(folder / _JOURNAL, "rb") as file:
                head = file.read(len(_JOURNAL_HEADER) + 80)
        except FileNotFoundError:
            return False
        return _boot_id() is None or not head.startswith(_journal_header())

    def _recover(self, folder: Path) -> None:
        """After a crash (a journal of another boot), rewrite every memory file whose bytes
        differ from its last journal record, sync them all, then start the journal afresh
        (holding the exclusive lock). Changes nothing when the journal is of this boot."""
        if not self._stale_journal(folder):
            return
        path = folder / _JOURNAL
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            return
        body = content[content.find(b"\n") + 1 :] if content.startswith(_JOURNAL_HEADER) else b""
        for memory_id, payload in _records(body).items():
            target = folder / f"{memory_id}.json"
            try:
                current: bytes | None = target.read_bytes()
            except FileNotFoundError:
                current = None
            if current != payload:
                write_private(target, payload, sync_folder=False)
        _sync_filesystem(folder)
        fsync_folder(folder)
        if self._journaling():
            write_private(path, _journal_header())
        else:
            remove_durably(path)

    def _journal(self, folder: Path, memory_id: str, payload: bytes) -> None:
        """Append the memory file's new content to the journal and sync it: the one
        ``fsync`` a write makes (holding the write lock, before the file is replaced)."""
        path = folder / _JOURNAL
        header = _journal_header()
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            write_private(path, header)  # once per folder: the file and its entry synced
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            end = os.fstat(fd).st_size
            if end > _JOURNAL_LIMIT:
                # Every memory file on disk first: then no record is needed any more.
                _sync_filesystem(folder)
                os.ftruncate(fd, len(header))
                end = len(header)
            torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
            os.write(fd, (b"\n" if torn else b"") + _record(memory_id, payload))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _forget_records(self, folder: Path, memory_id: str) -> None:
        """Before an erase removes the file: if the journal holds a record of the memory,
        sync every memory file and empty the journal, durably, so no recovery can bring the
        memory back and no byte of it stays in the journal."""
        path = folder / _JOURNAL
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            size = os.fstat(fd).st_size
            if memory_id.encode("ascii") not in os.pread(fd, size, 0):
                return
            _sync_filesystem(folder)
            header = os.pread(fd, len(_JOURNAL_HEADER) + 80, 0)
            os.ftruncate(fd, header.find(b"\n") + 1 if header.startswith(_JOURNAL_HEADER) else 0)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _load(self, folder: str, memory_id: str) -> _Memory | _Damaged | None:
        """Read one memory file (:func:`_load_file`)."""
        return _load_file(folder, memory_id)

    def _stored(self, folder: Path, memory_id: str) -> _Memory | None:
        """The memory a write is about to change (holding the write lock); a damaged one
        raises :class:`StoreError` naming it, as nothing can be written over it safely."""
        stored = self._load(str(folder), memory_id)
        if isinstance(stored, _Damaged):
            raise _damaged_error(memory_id)
        return stored

    def _write_file(
        self,
        folder: Path,
        memory_id: str,
        rows: Sequence[StoredRow],
        vectors: Sequence[bytes | None],
    ) -> None:
        payload = json.dumps(
            {"versions": [_row_to_json(r, v) for r, v in zip(rows, vectors, strict=True)]}
        ).encode()
        try:
            if self._journaling():
                self._journal(folder, memory_id, payload)
                _replace_unsynced(folder / f"{memory_id}.json", payload)
            else:
                write_private(folder / f"{memory_id}.json", payload)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def _log_change(self, folder: Path, memory_id: str) -> None:
        """Append ``memory_id`` to the log (holding the write lock, before the file changes)."""
        log = folder / ".changes"
        try:
            try:
                size = log.stat().st_size
            except FileNotFoundError:
                size = 0
            if size > _COMPACT_LOG_AT:
                self._restart_log(folder, erased=None, compact=True)
            fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                end = os.fstat(fd).st_size
                # A writer that died mid-line left a torn line: end it, so this one is whole.
                torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
                # Not synced: readers follow it, durability is the journal's (or the file's).
                os.write(fd, (b"\n" if torn else b"") + memory_id.encode("ascii") + b"\n")
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def _restart_log(
        self, folder: Path, *, erased: str | None, compact: bool = False
    ) -> tuple[_Log, _Log] | None:
        """Replace the log with a new file of the same stream (holding the write lock), and
        return the old and the new file (``None`` if there was no log).

        With ``erased``, every line naming that memory is blanked; with ``compact``, or when
        the log is over the size limit, only its last lines are kept.
        """
        path = folder / ".changes"
        try:
            with open(path, "rb") as old:
                stat = os.fstat(old.fileno())
                content = old.read()
        except FileNotFoundError:
            return None  # no log yet: nothing names the memory
        log = _parse_log(stat.st_ino, stat.st_size, content[:200])
        body = content[log.header :]
        base = log.base
        if compact or len(content) > _COMPACT_LOG_AT:
            cut = body.find(b"\n", len(body) - min(_LOG_TAIL, _COMPACT_LOG_AT // 4)) + 1
            body, base = body[cut:], base + cut
        if erased is not None:
            body = _redacted(body, erased)
        nonce = secrets.token_hex(8)  # a new file even if the filesystem reuses the inode
        header = _LOG_HEADER + f"{log.stream} {base} {nonce}\n".encode("ascii")
        write_private(path, header + body)
        new = _Log(
            os.stat(path).st_ino, len(header) + len(body), log.stream, base, len(header), header
        )
        return log, new

    # -- reading ------------------------------------------------------------------------

    def _cache(self, tenant: str, app: str, subject: str) -> _SubjectCache | None:
        """The subject's cache, brought up to date with the folder (holding ``_lock``)."""
        folder = self._subject_dir(tenant, app, subject)
        with self._reading(folder) as held:
            try:
                cache = self._caches.get(folder)
                if cache is None and held >= 0 and self._stale_journal(folder):
                    # A crash left memory files the journal may be ahead of: put them right
                    # before reading them (the lock made exclusive; upgrade is not atomic,
                    # so _recover looks again).
                    upgrade(held)
                    with contextlib.suppress(OSError):  # a read-only store: read it as it is
                        self._recover(folder)
                return self._refresh(folder, cache)
            except OSError as exc:
                raise StoreError(f"The local store cannot be read: {exc.strerror}.") from exc

    def _refresh(self, folder: Path, cache: _SubjectCache | None) -> _SubjectCache | None:
        path = str(folder)
        try:
            dir_mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            self._caches.pop(folder, None)
            return None
        try:
            fd = os.open(path + "/.changes", os.O_RDONLY)
        except FileNotFoundError:
            fd = -1
        try:
            log = None
            if fd >= 0:
                stat = os.fstat(fd)
                log = _parse_log(stat.st_ino, stat.st_size, os.pread(fd, 200, 0))
            read = None if cache is None else cache.read
            if cache is None or not self._follow(path, fd, cache, log):
                cache = self._open_folder(path, fd, log, dir_mtime)
                self._caches[folder] = cache
            elif dir_mtime != cache.dir_mtime:
                if read == cache.read:
                    # Under the shared lock every finished write is in the log, so a change
                    # it does not explain is a writer that died mid-write: compare the file
                    # names and identities (every write is a new file, a new inode).
                    self._reconcile(path, cache, check_inodes=True)
                cache.dir_mtime = dir_mtime
        finally:
            if fd >= 0:
                os.close(fd)
        return cache

    def _follow(self, path: str, fd: int, cache: _SubjectCache, log: _Log | None) -> bool:
        """Bring ``cache`` up to date from the log; ``False`` if it cannot (rescan instead)."""
        if log is None:
            return cache.log is None
        if cache.log is not None and cache.log.file == log.file:
            if log.size < cache.offset:
                return False
            self._replay(path, fd, cache, log.size)
            cache.log = log
            return True
        # A new log file: of our stream (an erase, or the log was restarted), or a first log.
        position = cache.position
        same = log.stream == cache.log.stream if cache.log is not None else log.base == 0
        if not same or not log.base <= position <= log.base + log.size - log.header:
            return False
        cache.log = log
        cache.offset = log.header + position - log.base
        self._replay(path, fd, cache, log.size)
        self._reconcile(path, cache, check_inodes=False)  # an erase is not in the log
        return True

    @staticmethod
    def _moved(cache: _SubjectCache, old: _Log, new: _Log, before: int, after: int) -> None:
        """After this driver's own erase: if the cache was current when it began (the same
        log file, the folder unchanged since), go on in the new log file from the same
        position, so the next read needs no listing of the folder."""
        if cache.log is None or cache.log.file != old.file or cache.dir_mtime != before:
            return
        position = cache.position
        if new.base <= position <= new.base + new.size - new.header:
            cache.log = new
            cache.offset = new.header + position - new.base
            cache.dir_mtime = after

    def _replay(self, path: str, fd: int, cache: _SubjectCache, size: int) -> None:
        if size <= cache.offset:
            return
        chunk = os.pread(fd, size - cache.offset, cache.offset)
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
        for line in dict.fromkeys(complete.split(b"\n")):
            memory_id = line.decode("ascii", "replace")
            # Skip blanked lines, torn bits and anything that is not a plain file name.
            if (
                memory_id[:1].isalnum()
                and memory_id.isascii()
                and memory_id.isprintable()
                and ("/" not in memory_id)
            ):
                cache.put(memory_id, self._load(path, memory_id))
        cache.offset += len(complete)

    def _names(self, path: str) -> set[str]:
        return {
            name[: -len(".json")]
            for name in os.listdir(path)
            if name.endswith(".json") and not name.startswith(".")
        }

    def _reconcile(self, path: str, cache: _SubjectCache, *, check_inodes: bool) -> None:
        """Match the cache with the folder's file names (and, if asked, file inodes)."""
        names = self._names(path)
        held = cache.held()
        for memory_id in held - names:
            cache.put(memory_id, None)
        changed = names - held
        if check_inodes:
            for memory_id in held & names:
                try:
                    inode = os.stat(f"{path}/{memory_id}.json").st_ino
                except FileNotFoundError:
                    inode = -1
                if inode != cache.inode(memory_id):
                    changed.add(memory_id)
        for memory_id in sorted(changed):
            cache.put(memory_id, self._load(path, memory_id))

    @staticmethod
    def _log_end(fd: int, log: _Log | None) -> int:
        """Where the log's last complete line ends (the rest waits to be replayed)."""
        if log is None:
            return 0
        tail = os.pread(fd, min(log.size, 4096), max(0, log.size - 4096))
        offset = log.size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else 0
        return max(offset, log.header)

    @staticmethod
    def _identities(path: str) -> tuple[npt.NDArray[np.bytes_], Ints]:
        """The memory files of the folder (names without ``.json``) and, per file, its
        inode, size and mtime (ns) as the columns of an array."""
        names: list[bytes] = []
        found = array.array("q")  # inode, size, mtime of each file in turn
        with os.scandir(os.fsencode(path)) as entries:
            for entry in entries:
                name = entry.name
                if name[-5:] == b".json" and name[:1] != b".":
                    try:
                        stat = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    names.append(name[:-5])
                    found.extend((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        if not names:
            return np.zeros(0, "S1"), np.zeros((0, 3), np.int64)
        return np.array(names, "S"), np.frombuffer(found, np.int64).reshape(-1, 3)

    @staticmethod
    def _listing(path: str) -> dict[str, tuple[int, int, int]]:
        """Each memory file of the folder: its inode, size and mtime (ns)."""
        found = {}
        with os.scandir(path) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".json") and not name.startswith("."):
                    try:
                        stat = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    found[name[: -len(".json")]] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        return found

    def _open_folder(
        self, path: str, fd: int, log: _Log | None, dir_mtime: int
    ) -> _SubjectCache:
        """A new cache of the folder: from its snapshot where the files still match it,
        else every file decoded; a new snapshot is written when many files were decoded."""
        opened = self._from_snapshot(path, fd, log, dir_mtime)
        if opened is None:
            cache = self._rescan(path, fd, log, dir_mtime)
            decoded = len(cache.memories) + len(cache.damaged)
        else:
            cache, decoded = opened
        if decoded >= _SNAPSHOT_AFTER:
            self._save_snapshot(path, cache)
        return cache

    def _from_snapshot(
        self, path: str, fd: int, log: _Log | None, dir_mtime: int
    ) -> tuple[_SubjectCache, int] | None:
        """The folder's cache from its snapshot, and how many files had to be decoded (every
        file whose name, inode, size or mtime differs from the snapshot's, or that the log
        names since); ``None`` without a usable snapshot."""
        snapshot = _snapshot.read(Path(path))
        if snapshot is None:
            return None
        offset = self._log_end(fd, log)
        names, identities = self._identities(path)
        logged = self._logged_since(fd, log, snapshot.meta, offset)
        a = snapshot.arrays
        ids = a["ids"]
        if not (ids.size == a["inode"].size == a["size"].size == a["mtime"].size):
            return None
        # The snapshot's files that are still there, with the same inode, size and mtime.
        order = np.argsort(names)
        names, identities = names[order], identities[order]
        at = np.minimum(np.searchsorted(names, ids), max(0, names.size - 1))
        kept = np.zeros(ids.size, np.bool_)
        if names.size:
            kept = names[at] == ids
            for column, name in enumerate(("inode", "size", "mtime")):
                kept &= identities[at, column] == a[name]
        if logged:
            kept &= ~np.isin(ids, np.array(sorted(logged), "S"))
        try:
            index, memories = _unpack(snapshot, path, kept)
        except (ValueError, IndexError, KeyError, TypeError, UnicodeError):
            return None  # not a snapshot this driver wrote: decode the files
        cache = _SubjectCache(memories, index, log, offset, dir_mtime)
        covered = np.zeros(names.size, np.bool_)
        covered[at[kept]] = True
        changed = [raw.decode("ascii", "replace") for raw in names[~covered].tolist()]
        for memory_id in changed:
            cache.put(memory_id, self._load(path, memory_id))
        return cache, len(changed)

    @staticmethod
    def _logged_since(
        fd: int, log: _Log | None, meta: Mapping[str, Any], end: int
    ) -> set[bytes]:
        """The ids the log names after the snapshot's position, if the log still holds it
        (else none: the file identities alone tell what changed)."""
        position = meta.get("position")
        if log is None or meta.get("stream") != log.stream or type(position) is not int:
            return set()
        if not log.base <= position <= log.base + log.size - log.header:
            return set()
        start = log.header + position - log.base
        if end <= start:
            return set()
        lines = os.pread(fd, end - start, start).split(b"\n")
        return {line.rstrip(b"\x00") for line in lines if line}

    def _save_snapshot(self, path: str, cache: _SubjectCache) -> None:
        """Write the folder's snapshot from an up-to-date cache (holding the folder's lock,
        shared is enough: no write is half done). Best effort: a read-only store has none."""
        listing = self._listing(path)
        files = [
            (memory_id, *listing[memory_id])
            for memory_id in sorted(cache.memories)
            if listing.get(memory_id, (-1, 0, 0))[0] == cache.memories[memory_id].inode
        ]
        if not files:
            return
        stream = "" if cache.log is None else cache.log.stream
        packed = _pack(cache.index, files, (stream, cache.position))
        if packed is not None:
            with contextlib.suppress(OSError):
                _snapshot.write(Path(path), *packed)

    def _rescan(self, path: str, fd: int, log: _Log | None, dir_mtime: int) -> _SubjectCache:
        """Read every memory file of the folder into a new cache."""
        offset = self._log_end(fd, log)
        memories: dict[str, _Memory] = {}
        damaged: dict[str, int] = {}
        for memory_id in sorted(self._names(path)):
            memory = self._load(path, memory_id)
            if isinstance(memory, _Damaged):
                damaged[memory_id] = memory.inode
            elif memory is not None:
                memories[memory_id] = memory
        index = _Index(max(64, 2 * sum(len(m.rows) for m in memories.values())))
        index.add(memories.items())
        return _SubjectCache(
            _Memories(dict(memories)), index, log, offset, dir_mtime, damaged
        )

    def _caches_for(self, where: Filter) -> list[_SubjectCache]:
        """The up-to-date caches of the filter's subjects (holding ``_lock``)."""
        found = []
        for subject in dict.fromkeys(where.subjects):
            cache = self._cache(where.tenant, where.app, subject)
            if cache is not None:
                found.append(cache)
        return found

    @staticmethod
    def _matching(caches: Sequence[_SubjectCache], where: Filter) -> list[StoredRow]:
        """The rows ``where`` matches, checked one by one (the reference path)."""
        return [
            row
            for cache in caches
            for memory in cache.memories.values()
            for row in memory.rows
            if where.matches(row)
        ]

    # -- the protocol -------------------------------------------------------------------

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store a new memory, or a new version closing version ``closes`` (atomic), with its
        sealed embedding if given; tags that are not well-formed raise
        :class:`~mainsdk_memory.InvalidInputError` before anything is written."""
        checked_tags(row.tags)
        folder = self._subject_dir(row.tenant, row.app, row.subject)
        with self._writing(folder):
            stored = self._stored(folder, row.memory_id)
            if closes is None:
                if stored is not None:
                    raise MemoryConflictError(
                        "A memory with this id already exists; nothing was changed."
                    )
                rows: list[StoredRow] = [row]
                vectors: list[bytes | None] = [None if vector is None else bytes(vector)]
            else:
                current = stored.rows[-1] if stored is not None else None
                if (
                    stored is None
                    or current is None
                    or current.version != closes
                    or current.valid_to is not None
                    or row.version != closes + 1
                ):
                    raise MemoryConflictError
                rows = [*stored.rows[:-1], replace(current, valid_to=row.valid_from), row]
                vectors = [*stored.vectors, None if vector is None else bytes(vector)]
            self._log_change(folder, row.memory_id)
            self._write_file(folder, row.memory_id, rows, vectors)

    def bulk_put(
        self, rows: Sequence[StoredRow], *, vectors: Mapping[tuple[str, int], bytes] | None = None
    ) -> None:
        """Load many stored rows at once: a bulk load (benchmarks, imports), not a write path
        of the SDK.

        The rows of one memory are its versions, closed ones with their ``valid_to``, in
        order; nothing checks revisions, so load every version of a memory here or none.
        ``vectors`` maps ``(memory_id, version)`` to that version's sealed embedding. The
        files, the change log and the folder layout are exactly what :meth:`put` writes, but
        the per-file syncs are replaced by one ``sync`` at the end, so the load is durable when
        this returns. A memory that exists already raises
        :class:`~mainsdk_memory.MemoryConflictError` before anything of its folder is written;
        a row whose tags are not well-formed, :class:`~mainsdk_memory.InvalidInputError`
        before anything at all is.
        """
        check_rows_tags(rows)
        vectors = vectors or {}
        folders: dict[Path, dict[str, list[StoredRow]]] = {}
        for row in rows:
            folder = self._subject_dir(row.tenant, row.app, row.subject)
            folders.setdefault(folder, {}).setdefault(row.memory_id, []).append(row)
        for folder, memories in folders.items():
            with self._writing(folder):
                if any((folder / f"{memory_id}.json").exists() for memory_id in memories):
                    raise MemoryConflictError(
                        "A memory with one of these ids already exists; nothing was loaded "
                        "into its folder."
                    )
                try:
                    lines = "".join(f"{memory_id}\n" for memory_id in memories).encode("ascii")
                    fd = os.open(folder / ".changes", os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
                    try:
                        end = os.fstat(fd).st_size
                        # The log first, a torn last line ended, as _log_change does.
                        torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
                        os.write(fd, (b"\n" if torn else b"") + lines)
                    finally:
                        os.close(fd)
                    for memory_id, versions in memories.items():
                        payload = json.dumps({"versions": [
                            _row_to_json(r, vectors.get((memory_id, r.version)))
                            for r in versions
                        ]}).encode()
                        fd = os.open(
                            folder / f"{memory_id}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                            0o600,
                        )
                        with os.fdopen(fd, "wb") as file:
                            file.write(payload)
                except OSError as exc:
                    raise StoreError(
                        f"The local store cannot be written: {exc.strerror}."
                    ) from exc
        os.sync()

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> list[StoredRow]:
        """Every version of ``memory_id`` within ``subjects``, oldest first; a damaged memory
        raises :class:`StoreError` naming it."""
        with self._lock:
            for subject in subjects:
                cache = self._cache(tenant, app, subject)
                if cache is None:
                    continue
                memory = cache.memories.get(memory_id)
                if memory is not None and memory.rows:
                    return list(memory.rows)
                # (no rows: a file from the snapshot that cannot be decoded any more)
                if memory is not None or memory_id in cache.damaged:
                    raise _damaged_error(memory_id)
        return []

    def damaged(self, tenant: str, app: str, subject: str) -> builtins.list[str]:
        """The ids of the subject's memories whose file cannot be decoded, sorted.

        Reads leave them out, so a caller that lists a subject's memories to erase them
        (a person's erase) erases these too by id: :meth:`erase` removes a damaged file.
        """
        with self._lock:
            cache = self._cache(tenant, app, subject)
            return [] if cache is None else sorted(cache.damaged)

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        """Set the pinned flag of the current version."""
        folder = self._subject_dir(tenant, app, subject)
        with self._writing(folder):
            stored = self._stored(folder, memory_id)
            if stored is None:
                raise MemoryConflictError
            rows = [*stored.rows[:-1], replace(stored.rows[-1], pinned=pinned)]
            self._log_change(folder, memory_id)
            self._write_file(folder, memory_id, rows, stored.vectors)

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Replace the sealed embedding of one stored version (atomic and durable, like
        :meth:`put`); :class:`MemoryConflictError` if that version is not stored."""
        if not isinstance(sealed, bytes | bytearray | memoryview):
            raise TypeError("sealed must be bytes (the sealed embedding)")
        folder = self._subject_dir(tenant, app, subject)
        with self._writing(folder):
            stored = self._stored(folder, memory_id)
            slots = (
                [] if stored is None
                else [i for i, row in enumerate(stored.rows) if row.version == version]
            )
            if stored is None or not slots:
                raise MemoryConflictError("This version is not stored; nothing was changed.")
            vectors = list(stored.vectors)
            vectors[slots[0]] = bytes(sealed)
            self._log_change(folder, memory_id)
            self._write_file(folder, memory_id, stored.rows, vectors)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """Matching rows, newest ``created_at`` first, after the given position."""
        after_at = None if after is None else _micros(after[0])
        rows: builtins.list[StoredRow] = []
        with self._lock:
            for cache in self._caches_for(where):
                index = cache.index
                mask = index.mask(where)
                if mask is None or (after is not None and after_at is None):
                    rows.extend(self._matching([cache], where))
                    continue
                created = index.times["created"][: index.size]
                if after is None or after_at is None:
                    slots = np.flatnonzero(mask)
                else:
                    # (created_at, memory_id) < after: the memory id decides only at equal times.
                    slots = np.flatnonzero(mask & (created < after_at))
                    equal = [
                        s
                        for s in np.flatnonzero(mask & (created == after_at)).tolist()
                        if (row := index.row(s)) is not None and row.memory_id < after[1]
                    ]
                    slots = np.concatenate([slots, np.array(equal, np.intp)])
                if 0 < limit < slots.size:
                    # The newest ``limit`` by time, and every row as new as the last of them.
                    times = created[slots]
                    newest = np.partition(times, times.size - limit)[times.size - limit]
                    slots = slots[times >= newest]
                rows.extend(r for r in (index.row(s) for s in slots.tolist()) if r is not None)
        if after is not None:
            rows = [r for r in rows if (r.created_at, r.memory_id) < after]
        rows.sort(key=lambda r: (r.created_at, r.memory_id), reverse=True)
        return rows[:limit]

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """BM25 over the blind terms of the matching rows, equal to :func:`bm25_rank`.

        The corpus statistics (N and the mean length of the rows ``where`` matches) come from
        the cached columns, the term counts from the postings of the query's tokens; only
        rows holding a query token are scored, and only those near the top exactly.
        """
        if not query or top_k <= 0:
            return []
        with self._lock:
            caches = self._caches_for(where)
            masks = [cache.index.mask(where) for cache in caches]
            parts = [(c.index, m) for c, m in zip(caches, masks, strict=True) if m is not None]
            if len(parts) < len(caches):
                return bm25_rank(self._matching(caches, where), query, top_k)
            return _rank(parts, query, top_k)

    def vector_state(self, where: Filter) -> Hashable | None:
        """A token that stays equal while :meth:`vectors` for ``where`` would return the same
        entries (the same rows selected, no vector added or removed), or ``None`` when this
        read cannot tell (a row with a naive time): the caller then reads the vectors."""
        state: list[tuple[int, int, bytes]] = []
        with self._lock:
            for cache, mask in self._masked(where):
                if mask is None:
                    return None
                digest = hashlib.blake2b(np.packbits(mask).tobytes(), digest_size=16).digest()
                state.append((cache.index.serial, cache.index.generation, digest))
        return tuple(state)

    def _masked(self, where: Filter) -> Iterator[tuple[_SubjectCache, Mask | None]]:
        """Each subject of ``where`` that has rows, with the mask of its index's rows that
        ``where`` selects (``None``: a naive time, filter row by row). Hold ``_lock``."""
        for subject in sorted(set(where.subjects)):
            cache = self._cache(where.tenant, where.app, subject)
            if cache is not None:
                yield cache, cache.index.mask(where)

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embeddings of the matching rows that have one, sorted by subject, memory
        id and version; ``None`` in place of those the caller says it knows."""
        entries: builtins.list[VectorEntry] = []
        with self._lock:
            for cache, mask in self._masked(where):
                index = cache.index
                if mask is None:  # a naive datetime: row by row, then sorted
                    part = [
                        VectorEntry(
                            row.subject,
                            row.memory_id,
                            row.version,
                            None if (row.memory_id, row.version) in known else vector,
                        )
                        for memory in cache.memories.values()
                        for row, vector in zip(memory.rows, memory.vectors, strict=True)
                        if vector is not None and where.matches(row)
                    ]
                    entries += sorted(part)
                    continue
                # Slots already in order, entries already built: only the ones the caller
                # does not know get their bytes.
                order = index.vector_order()
                ordered = index.entries
                vectors = index.vectors
                for slot in order[mask[order]].tolist():
                    entry = ordered[slot]
                    assert entry is not None  # noqa: S101 - vector_order holds vector slots
                    if (entry.memory_id, entry.version) in known:
                        entries.append(entry)
                    else:
                        entries.append(entry._replace(sealed=vectors[slot]))
        return entries

    def _subjects(self, tenant: str, app: str) -> builtins.list[str]:
        """The subject folders of tenant and app."""
        try:
            return [
                entry.name
                for entry in os.scandir(self.root / tenant / app)
                if entry.is_dir() and entry.name not in ("_control", LINKS)
            ]
        except FileNotFoundError:
            return []

    def rows(self, tenant: str, app: str) -> builtins.list[StoredRow]:
        """Every stored version in every subject folder of tenant and app (a snapshot)."""
        subjects = self._subjects(tenant, app)
        found: builtins.list[StoredRow] = []
        with self._lock:
            for subject in subjects:
                cache = self._cache(tenant, app, subject)
                if cache is not None:
                    found += [row for memory in cache.memories.values() for row in memory.rows]
        return found

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """Memories past a label's cutoff, in every subject folder of tenant and app."""
        subjects = self._subjects(tenant, app)
        found: set[tuple[str, str]] = set()
        with self._lock:
            for subject in subjects:
                cache = self._cache(tenant, app, subject)
                if cache is None:
                    continue
                found.update((subject, memory_id) for memory_id in self._expired(cache, retention))
        return sorted(found)

    @staticmethod
    def _expired(
        cache: _SubjectCache, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[str]:
        """The memories of one cache whose current version is past a label's cutoff, from
        the index's columns (no row decoded), or row by row with a naive time about."""
        index = cache.index
        cutoffs = [_micros(cutoff) for _label, cutoff in retention]
        if index.naive or None in cutoffs:
            return [
                memory_id
                for memory_id, memory in cache.memories.items()
                if memory.rows
                and any(
                    label in memory.rows[-1].labels and memory.rows[-1].created_at < cutoff
                    for label, cutoff in retention
                )
            ]
        ids = builtins.list(index.slots)
        last = np.fromiter((held[-1] for held in index.slots.values()), np.intp, len(ids))
        hit = np.zeros(len(ids), np.bool_)
        created = index.times["created"][last]
        for (label, _cutoff), before in zip(retention, cutoffs, strict=True):
            column = index.labels.get(label)
            if column is not None and before is not None:
                hit |= column[last] & (created < before)
        return [ids[i] for i in np.flatnonzero(hit).tolist()]

    def _control_dir(self, tenant: str, app: str) -> Path:
        return self.root / tenant / app / "_control"

    def _control_path(self, tenant: str, app: str, key: str) -> Path:
        # Hex makes any key a safe file name; a long key is split into folders of 200 hex
        # digits, as a file name may not exceed 255 bytes and keys go up to 200 characters.
        name = key.encode("utf-8").hex()
        parts = [name[i : i + 200] for i in range(0, len(name), 200)] or [""]
        return self._control_dir(tenant, app).joinpath(*parts[:-1], parts[-1] + ".bin")

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Replace (or delete) one control record file, atomically."""
        path = self._control_path(tenant, app, key)
        try:
            if value is None:
                remove_durably(path)
                return
            self._ensure_store()
            make_private_dir(path.parent)
            write_private(path, value)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        """Read one control record."""
        path = self._control_path(tenant, app, key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"The local store cannot be read: {exc.strerror}.") from exc

    def control_list(self, tenant: str, app: str, prefix: str) -> builtins.list[tuple[str, bytes]]:
        """Every control record under ``prefix``, sorted by key."""
        folder = self._control_dir(tenant, app)
        found: builtins.list[tuple[str, bytes]] = []
        for current, _dirs, names in os.walk(folder):
            head = "".join(Path(current).relative_to(folder).parts)  # a long key's folders
            for name in names:
                if not name.endswith(".bin") or name.startswith("."):
                    continue
                key = bytes.fromhex(head + name[: -len(".bin")]).decode("utf-8")
                if key.startswith(prefix):
                    value = self.control_get(tenant, app, key)
                    if value is not None:
                        found.append((key, value))
        return sorted(found)

    # -- relations ----------------------------------------------------------------------

    def _links_dir(self, tenant: str, app: str) -> Path:
        return self.root / tenant / app / LINKS

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Store a batch of links, whole or not at all (the links folder's journal)."""
        batch = checked_links(links)
        if not batch:
            return
        first = next(iter(batch.values()))
        try:
            self._ensure_store()
            with LinkFolder.writing(
                self._links_dir(first.tenant, first.app), first.tenant, first.app
            ) as held:
                for link in batch.values():
                    held.add(link)
                held.commit()
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """The links of these subjects with one of ``ids`` at an end, sorted by (subject,
        key): one folder listing per subject and id, then the links it names; no memory
        file."""
        if not ids or not subjects:
            return []
        try:
            with LinkFolder.reading(self._links_dir(tenant, app), tenant, app) as held:
                return [] if held is None else held.links(subjects, ids)
        except OSError as exc:
            raise StoreError(f"The local store cannot be read: {exc.strerror}.") from exc

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """Remove these links of ``subject`` for good (unknown keys are ignored)."""
        folder = self._links_dir(tenant, app)
        if not keys or not folder.is_dir():
            return
        try:
            with LinkFolder.writing(folder, tenant, app) as held:
                for key in keys:
                    held.remove(subject, key)
                held.commit()
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Every file under the store folder, with its bytes (links included)."""
        for folder, _dirs, files in os.walk(self.root):
            for name in sorted(files):
                path = Path(folder) / name
                try:
                    yield str(path.relative_to(self.root)), path.read_bytes()
                except FileNotFoundError:
                    continue  # removed meanwhile

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Delete the memory's links (both ends, any subject), then its file (every version,
        its terms and embeddings), and blank its id out of the change log; a damaged file too
        (its versions are then not named)."""
        folder = self._subject_dir(tenant, app, subject)
        with self._writing(folder):
            stored = self._load(str(folder), memory_id)  # a damaged file is erased too
            try:
                self._forget_records(folder, memory_id)
                links = self._links_dir(tenant, app)
                if links.is_dir():  # no folder: no link was ever stored here
                    with LinkFolder.writing(links, tenant, app) as held:
                        held.remove_id(memory_id)
                        held.commit()
                before = os.stat(folder).st_mtime_ns
                # The snapshot holds the memory's id and blind terms: gone first (the
                # folder sync below makes both removals durable).
                _snapshot.remove(folder)
                remove_durably(folder / f"{memory_id}.json")
                # A hard erase leaves no trace, so the id is not logged: the log is copied
                # with the id's lines blanked, and readers notice the file is gone.
                restarted = self._restart_log(folder, erased=memory_id)
                after = os.stat(folder).st_mtime_ns
            except OSError as exc:
                raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc
        with self._lock:  # and this process keeps no copy of it either
            cache = self._caches.get(folder)
            if cache is not None:
                cache.put(memory_id, None)
                if restarted is not None:
                    self._moved(cache, *restarted, before, after)
        # A damaged file's versions are unknown: it is erased whole, none is named.
        versions = tuple(r.version for r in stored.rows) if isinstance(stored, _Memory) else ()
        return EraseResult(memory_id=memory_id, versions=versions, mode="hard")


def _rank(
    parts: Sequence[tuple[_Index, Mask]], query: Sequence[Collection[str]], top_k: int
) -> list[tuple[StoredRow, float]]:
    """:func:`bm25_rank` over the masked slots of these indexes, from the postings.

    Counts, N and the length total are exact integers; idf, the average length and the
    ceiling are the BM25 kernel's (:mod:`mainsdk_memory.drivers._bm25`). Scores are first
    computed for every row holding a query token with array arithmetic (the kernel's
    expressions, but for the rounding of its final ``sum``, which Python 3.12 compensates),
    then scored exactly by the kernel for the rows within a hair of the top ``top_k``, and
    ordered by the kernel's tie key.
    """
    n_docs = sum(int(np.count_nonzero(mask)) for _, mask in parts)
    if not n_docs:
        return []
    total = sum(int(index.length[: index.size][mask].sum()) for index, mask in parts)
    counts: list[list[Ints]] = []  # per part, per query term: count in each slot
    for index, mask in parts:
        per_term = []
        for group in query:
            tf = np.zeros(index.size, np.int64)
            for token in group:
                posting = index.posting(token)
                if posting is not None:
                    tf[posting[0]] += posting[1]
            tf[~mask] = 0
            per_term.append(tf)
        counts.append(per_term)
    df = [sum(int(np.count_nonzero(part[i])) for part in counts) for i in range(len(query))]
    weights = bm25.weights(n_docs, total, df)
    if weights is None:
        return []
    idf, avgdl, ceiling = weights.idf, weights.avgdl, weights.ceiling
    found = []  # per part: the slots holding a query term, their counts, approximate scores
    for (index, _mask), per_term in zip(parts, counts, strict=True):
        held = np.zeros(index.size, np.bool_)
        for tf in per_term:
            held |= tf != 0
        slots = np.flatnonzero(held)
        if not slots.size:
            continue
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * index.length[slots].astype(np.float64) / avgdl)
        raw = np.zeros(slots.size)
        picked = []
        for weight, tf in zip(idf, per_term, strict=True):
            count = tf[slots]
            picked.append(count)
            raw += np.where(count != 0, weight * (count * (BM25_K1 + 1.0)) / (count + norm), 0.0)
        found.append((index, slots, np.stack(picked, axis=1), np.minimum(1.0, raw / ceiling)))
    if not found:
        return []
    approx = np.concatenate([scores for *_, scores in found])
    floor = -math.inf
    if approx.size > top_k:
        floor = float(np.partition(approx, approx.size - top_k)[approx.size - top_k])
        floor -= _SCORE_SLACK
    scored: list[bm25.Scored] = []
    rows: list[StoredRow] = []
    for index, slots, table, scores in found:
        for i in np.flatnonzero(scores >= floor).tolist():
            row = index.row(int(slots[i]))
            if row is None:  # its file gone or damaged since the snapshot was read
                continue
            scored.append(
                (
                    bm25.score(weights, table[i].tolist(), row.length),
                    bm25.order_key(row.trust, row.recorded_at, row.memory_id),
                    len(rows),
                )
            )
            rows.append(row)
    return [(rows[position], score) for score, _key, position in bm25.best(scored, top_k)]
