"""The ``local`` driver: memories in a folder, for development, ranked with BM25.

Layout under the store folder::

    mainsdk-memory-store.json            marks the folder as a store (format version)
    <tenant>/<app>/<subject>/            one folder per tenant, app and subject; a person's
                                         subject is a keyed pseudonym, never the person id
        .lock                            flock(2) taken by every writer of this subject
        .changes                         append-only log of changed memory ids (no content);
                                         an erase starts a fresh one, so no erased id stays
        <memory id>.json                 every version of one memory: sealed blob, blind terms

Every write replaces one small memory file atomically (temp file, fsync, rename, fsync of the
folder), then appends the memory id to ``.changes``. A reader keeps the rows it has loaded and,
on each read, looks at ``.changes`` (one ``stat``) and reloads only the memories named since;
so a write never rewrites the store, and a store of 10,000 memories per person stays cheap.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import (
    ConfigurationError,
    MemoryConflictError,
    StoreError,
)
from mainsdk_memory._files import make_private_dir, remove_durably, write_private
from mainsdk_memory.drivers._protocol import (
    Capabilities,
    EraseResult,
    Filter,
    StoredRow,
    bm25_rank,
)

__all__ = ["LocalDriver"]

STORE_MARKER = "mainsdk-memory-store.json"
FORMAT = "mainsdk-memory-local/1"
_COMPACT_LOG_AT = 1 << 20  # bytes of .changes before a writer starts a fresh log


def _row_to_json(row: StoredRow) -> dict[str, Any]:
    return {
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


def _row_from_json(data: dict[str, Any]) -> StoredRow:
    return StoredRow(
        tenant=data["tenant"],
        app=data["app"],
        subject=data["subject"],
        memory_id=data["memory_id"],
        version=int(data["version"]),
        kind=data["kind"],
        labels=tuple(data["labels"]),
        trust=data["trust"],
        agent=data["agent"],
        session=data["session"],
        session_only=bool(data["session_only"]),
        pinned=bool(data["pinned"]),
        created_at=datetime.fromisoformat(data["created_at"]),
        recorded_at=datetime.fromisoformat(data["recorded_at"]),
        valid_from=datetime.fromisoformat(data["valid_from"]),
        valid_to=None if data["valid_to"] is None else datetime.fromisoformat(data["valid_to"]),
        sealed=base64.b64decode(data["sealed"]),
        terms={str(k): int(v) for k, v in data["terms"].items()},
        length=int(data["length"]),
    )


@dataclass
class _SubjectCache:
    """Rows of one subject folder as last loaded, and how far the change log was read."""

    memories: dict[str, list[StoredRow]] = field(default_factory=dict)
    log_inode: int = -1
    log_offset: int = 0
    dir_mtime: int = -1


class LocalDriver:
    """Stores memories as files in a folder; see the module docstring for the layout."""

    name = "local"
    capabilities = Capabilities(
        text_search=True,
        time_travel=True,
        vectors=False,
        relations=False,
        extraction=False,
        erase="hard",
        regions=(),
        concurrent_writers=True,
    )

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).absolute()
        self._lock = threading.Lock()
        self._caches: dict[Path, _SubjectCache] = {}
        self._marker = self.root / STORE_MARKER
        try:
            if self._marker.exists():
                document = json.loads(self._marker.read_bytes())
                if not isinstance(document, dict) or document.get("format") != FORMAT:
                    raise ConfigurationError(
                        f"{self.root} holds a memory store of a format this version does not "
                        "know. Upgrade mainsdk-memory."
                    )
            elif self.root.exists() and any(self.root.iterdir()):
                raise ConfigurationError(
                    f"{self.root} is not empty and is not a memory store. Give the local driver "
                    "an empty or new folder."
                )
        except (OSError, ValueError) as exc:
            raise StoreError(f"The local store at {self.root} cannot be opened.") from exc

    def _ensure_store(self) -> None:
        # Opening creates nothing; the first write makes the folder and its marker.
        if not self._marker.exists():
            make_private_dir(self.root)
            write_private(self._marker, json.dumps({"format": FORMAT}).encode())

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

    def __enter__(self) -> LocalDriver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- paths and locking --------------------------------------------------------------

    def _subject_dir(self, tenant: str, app: str, subject: str) -> Path:
        # tenant and app are checked names; subject is a pseudonym or "tenant".
        return self.root / tenant / app / subject

    @contextmanager
    def _writing(self, folder: Path) -> Iterator[None]:
        try:
            self._ensure_store()
            make_private_dir(folder)
            fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read_file(self, folder: Path, memory_id: str) -> list[StoredRow]:
        try:
            data = json.loads((folder / f"{memory_id}.json").read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"A memory file in the local store cannot be read ({memory_id})."
            ) from exc
        return [_row_from_json(item) for item in data["versions"]]

    def _write_file(self, folder: Path, memory_id: str, rows: Sequence[StoredRow]) -> None:
        payload = json.dumps({"versions": [_row_to_json(row) for row in rows]}).encode()
        try:
            write_private(folder / f"{memory_id}.json", payload)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    def _log_change(self, folder: Path, memory_id: str) -> None:
        log = folder / ".changes"
        try:
            if log.exists() and log.stat().st_size > _COMPACT_LOG_AT:
                # A fresh log has a new inode: readers notice and rescan the folder once.
                write_private(log, b"")
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, memory_id.encode("ascii") + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc

    # -- reading ------------------------------------------------------------------------

    def _rows(self, tenant: str, app: str, subject: str) -> dict[str, list[StoredRow]]:
        """The subject's memories (id → versions), refreshed from the change log."""
        folder = self._subject_dir(tenant, app, subject)
        with self._lock:
            cache = self._caches.setdefault(folder, _SubjectCache())
            try:
                dir_stat = folder.stat()
            except FileNotFoundError:
                cache.memories.clear()
                cache.dir_mtime = cache.log_inode = -1
                cache.log_offset = 0
                return {}
            try:
                log_stat = (folder / ".changes").stat()
                log_inode, log_size = log_stat.st_ino, log_stat.st_size
            except FileNotFoundError:
                log_inode, log_size = -1, 0
            if log_inode != cache.log_inode or log_size < cache.log_offset:
                self._rescan(folder, cache, dir_stat.st_mtime_ns, log_inode, log_size)
            elif log_size > cache.log_offset:
                self._replay(folder, cache, log_size)
                cache.dir_mtime = dir_stat.st_mtime_ns
            elif dir_stat.st_mtime_ns != cache.dir_mtime:
                # The folder changed but the log did not: a writer died between its rename and
                # its log line. Rescan so the stored memory is seen.
                self._rescan(folder, cache, dir_stat.st_mtime_ns, log_inode, log_size)
            return dict(cache.memories)  # a snapshot: other threads may refresh meanwhile

    def _rescan(
        self, folder: Path, cache: _SubjectCache, dir_mtime: int, log_inode: int, log_size: int
    ) -> None:
        memories: dict[str, list[StoredRow]] = {}
        try:
            entries = [entry.name for entry in os.scandir(folder)]
        except OSError as exc:
            raise StoreError(f"The local store cannot be read: {exc.strerror}.") from exc
        for name in entries:
            if name.endswith(".json") and not name.startswith("."):
                memory_id = name[: -len(".json")]
                rows = self._read_file(folder, memory_id)
                if rows:
                    memories[memory_id] = rows
        cache.memories = memories
        cache.log_inode, cache.log_offset, cache.dir_mtime = log_inode, log_size, dir_mtime

    def _replay(self, folder: Path, cache: _SubjectCache, log_size: int) -> None:
        try:
            with open(folder / ".changes", "rb") as log:
                log.seek(cache.log_offset)
                chunk = log.read(log_size - cache.log_offset)
        except OSError as exc:
            raise StoreError(f"The local store cannot be read: {exc.strerror}.") from exc
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
        for line in set(complete.split(b"\n")):
            if not line:
                continue
            memory_id = line.decode("ascii", "replace")
            rows = self._read_file(folder, memory_id)
            if rows:
                cache.memories[memory_id] = rows
            else:
                cache.memories.pop(memory_id, None)
        cache.log_offset += len(complete)

    def _candidates(self, where: Filter) -> list[StoredRow]:
        found: list[StoredRow] = []
        for subject in where.subjects:
            for versions in self._rows(where.tenant, where.app, subject).values():
                for row in versions:
                    if where.matches(row):
                        found.append(row)
        return found

    # -- the protocol -------------------------------------------------------------------

    def put(self, row: StoredRow, *, closes: int | None = None) -> None:
        """Store a new memory, or a new version closing version ``closes`` (atomic)."""
        folder = self._subject_dir(row.tenant, row.app, row.subject)
        with self._writing(folder):
            rows = self._read_file(folder, row.memory_id)
            if closes is None:
                if rows:
                    raise MemoryConflictError(
                        "A memory with this id already exists; nothing was changed."
                    )
                rows = [row]
            else:
                current = rows[-1] if rows else None
                if (
                    current is None
                    or current.version != closes
                    or current.valid_to is not None
                    or row.version != closes + 1
                ):
                    raise MemoryConflictError
                rows = [*rows[:-1], replace(current, valid_to=row.valid_from), row]
            self._write_file(folder, row.memory_id, rows)
            self._log_change(folder, row.memory_id)

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> list[StoredRow]:
        """Every version of ``memory_id`` within ``subjects``, oldest first."""
        for subject in subjects:
            rows = self._rows(tenant, app, subject).get(memory_id)
            if rows:
                return list(rows)
        return []

    def set_pinned(
        self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool
    ) -> None:
        """Set the pinned flag of the current version."""
        folder = self._subject_dir(tenant, app, subject)
        with self._writing(folder):
            rows = self._read_file(folder, memory_id)
            if not rows:
                raise MemoryConflictError
            rows[-1] = replace(rows[-1], pinned=pinned)
            self._write_file(folder, memory_id, rows)
            self._log_change(folder, memory_id)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> list[StoredRow]:
        """Matching rows, newest ``created_at`` first, after the given position."""
        rows = self._candidates(where)
        rows.sort(key=lambda r: (r.created_at, r.memory_id), reverse=True)
        if after is not None:
            rows = [r for r in rows if (r.created_at, r.memory_id) < after]
        return rows[:limit]

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> list[tuple[StoredRow, float]]:
        """BM25 over the blind terms of the matching rows (:func:`bm25_rank`)."""
        return bm25_rank(self._candidates(where), query, top_k)

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> list[tuple[str, str]]:
        """Memories past a label's cutoff, in every subject folder of tenant and app."""
        base = self.root / tenant / app
        try:
            subjects = [e.name for e in os.scandir(base) if e.is_dir() and e.name != "_control"]
        except FileNotFoundError:
            return []
        found = set()
        for subject in subjects:
            for memory_id, versions in self._rows(tenant, app, subject).items():
                row = versions[-1]
                if any(label in row.labels and row.created_at < cutoff
                       for label, cutoff in retention):
                    found.add((subject, memory_id))
        return sorted(found)

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

    def control_list(self, tenant: str, app: str, prefix: str) -> list[tuple[str, bytes]]:
        """Every control record under ``prefix``, sorted by key."""
        folder = self._control_dir(tenant, app)
        found: list[tuple[str, bytes]] = []
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

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Every file under the store folder, with its bytes."""
        for folder, _dirs, files in os.walk(self.root):
            for name in sorted(files):
                path = Path(folder) / name
                try:
                    yield str(path.relative_to(self.root)), path.read_bytes()
                except FileNotFoundError:
                    continue  # removed meanwhile

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Delete the memory's file (every version and its terms) and record the change."""
        folder = self._subject_dir(tenant, app, subject)
        with self._writing(folder):
            rows = self._read_file(folder, memory_id)
            try:
                remove_durably(folder / f"{memory_id}.json")
                # A hard erase leaves no trace, so the id is not logged: a fresh, empty change
                # log (a new inode) makes every reader rescan the folder instead.
                write_private(folder / ".changes", b"")
            except OSError as exc:
                raise StoreError(f"The local store cannot be written: {exc.strerror}.") from exc
        return EraseResult(
            memory_id=memory_id, versions=tuple(r.version for r in rows), mode="hard"
        )
