"""The local driver's links: small files per id and per key, and a journal that makes a batch whole.

Layout under ``<tenant>/<app>/_links/`` (never a subject folder: a subject is a plain name)::

    .lock                   flock(2): writers take it exclusive, readers shared
    .journal                a batch being written: the new content of every file it changes
    _ids/<id>.json          the subjects holding a file <subject>/<id>.json (what an erase of
                            the memory <id> reads first: the subjects with links to it)
    <subject>/<id>.json     every link of the subject with the memory or entity <id> at one
                            end, source or target: what a read by id opens
    <subject>/<key>.key     the two ends of the link with that key (what replacing or deleting
                            a link by its key must find)

A link's sealed blob is in the files of its two ends, and nowhere else. Every write (a batch
of :meth:`LinkFolder.add`, a delete by key, the links of an erased memory) runs under the
exclusive lock and first computes the new content of every file it changes; it writes them
all to ``.journal`` (temp file, fsync, rename, fsync of the folder: the batch's commit
point), then replaces or removes each file (atomically, with one sync per folder at the end)
and removes the journal. A crash before the journal is in place changes nothing; after it,
whoever takes the lock next finds the journal and finishes the batch (a reader upgrades its
lock to do so). So a batch is stored whole or not at all, and a read never sees half of one.
Removed links leave nothing behind: their files are rewritten without them or unlinked, and
the journal is unlinked once applied.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import StoreError
from mainsdk_memory._files import fsync_folder, make_private_dir, remove_durably, write_private
from mainsdk_memory.drivers._links import is_key, is_name
from mainsdk_memory.drivers._protocol import StoredLink

__all__ = ["LINKS", "LinkFolder"]

#: The folder of a tenant and app's links (not a plain name, so never a subject's folder).
LINKS = "_links"
_IDS = "_ids"
_JOURNAL = ".journal"
_JOURNAL_FORMAT = "mainsdk-memory-links-journal/1"

Ends = tuple[str, str]
"""A link's ``(source, target)``."""


def _damaged(name: str) -> StoreError:
    # The file's name only (an id or a key), never its bytes.
    return StoreError(
        f"A link file of the local store cannot be decoded ({name}). Restore the store's "
        f"{LINKS} folder from a backup; the memories themselves are not affected."
    )


def _read(path: Path) -> Any:
    """The JSON in ``path``; ``None`` if there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise _damaged(path.name) from exc


class LinkFolder:
    """The links of one tenant and app, in their folder (module docstring)."""

    def __init__(self, folder: Path, tenant: str, app: str) -> None:
        self.folder = folder
        self.tenant = tenant
        self.app = app
        self._ends: dict[tuple[str, str], dict[str, StoredLink]] = {}  # (subject, id) -> links
        self._keys: dict[tuple[str, str], Ends | None] = {}  # (subject, key) -> ends
        self._where: dict[str, set[str]] = {}  # id -> subjects with a file of it
        self._changed_ends: set[tuple[str, str]] = set()
        self._changed_keys: set[tuple[str, str]] = set()

    # -- locking --------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def writing(cls, folder: Path, tenant: str, app: str) -> Iterator[LinkFolder]:
        """The folder under its exclusive lock (created if missing), an unfinished batch
        finished first; :meth:`commit` writes what was changed."""
        created = not folder.is_dir()
        make_private_dir(folder)
        if created:
            fsync_folder(folder.parent)
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            cls._recover(folder)
            yield cls(folder, tenant, app)
        finally:
            os.close(fd)  # closing releases the lock

    @classmethod
    @contextmanager
    def reading(cls, folder: Path, tenant: str, app: str) -> Iterator[LinkFolder | None]:
        """The folder under its shared lock, or ``None`` when no link was ever stored."""
        try:
            fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            yield None  # no folder: nothing stored yet
            return
        except OSError:
            try:  # a read-only store: nobody can be writing it
                fd = os.open(folder / ".lock", os.O_RDONLY)
            except OSError:
                fd = -1
        try:
            if fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_SH)
                if (folder / _JOURNAL).exists():  # a writer died mid-batch: finish it first
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    cls._recover(folder)
            yield cls(folder, tenant, app)
        finally:
            if fd >= 0:
                os.close(fd)

    # -- reading --------------------------------------------------------------------------

    def links(self, subjects: Iterable[str], ids: Iterable[str]) -> list[StoredLink]:
        """The links of these subjects with one of ``ids`` at an end, sorted by (subject, key)."""
        wanted = sorted({i for i in ids if is_name(i)})
        found: dict[tuple[str, str], StoredLink] = {}
        for subject in sorted({s for s in subjects if is_name(s)}):
            for memory_id in wanted:
                for key, link in self._end(subject, memory_id).items():
                    found[(subject, key)] = link
        return [found[position] for position in sorted(found)]

    def _end(self, subject: str, memory_id: str) -> dict[str, StoredLink]:
        """The links of ``subject`` with ``memory_id`` at an end, by key (loaded once)."""
        slot = (subject, memory_id)
        held = self._ends.get(slot)
        if held is not None:
            return held
        data = _read(self.folder / subject / f"{memory_id}.json")
        held = {}
        if data is not None:
            try:
                for item in data["links"]:
                    link = StoredLink(
                        tenant=self.tenant,
                        app=self.app,
                        subject=subject,
                        source=item["source"],
                        target=item["target"],
                        key=item["key"],
                        sealed=base64.b64decode(item["sealed"], validate=True),
                    )
                    if not (
                        is_key(link.key)
                        and is_name(link.source)
                        and is_name(link.target)
                        and memory_id in (link.source, link.target)
                    ):
                        raise ValueError("link")
                    held[link.key] = link
            except (KeyError, TypeError, ValueError) as exc:
                raise _damaged(f"{memory_id}.json") from exc
        self._ends[slot] = held
        return held

    def _ends_of(self, subject: str, key: str) -> Ends | None:
        """The ends of the stored link ``key`` of ``subject``, or ``None``."""
        slot = (subject, key)
        if slot in self._keys:
            return self._keys[slot]
        data = _read(self.folder / subject / f"{key}.key")
        ends: Ends | None = None
        if data is not None:
            try:
                source, target = data["source"], data["target"]
            except (KeyError, TypeError) as exc:
                raise _damaged(f"{key}.key") from exc
            if not (is_name(source) and is_name(target)):
                raise _damaged(f"{key}.key")
            ends = (source, target)
        self._keys[slot] = ends
        return ends

    def _subjects_of(self, memory_id: str) -> set[str]:
        """The subjects holding a file of ``memory_id`` (loaded once)."""
        held = self._where.get(memory_id)
        if held is not None:
            return held
        data = _read(self.folder / _IDS / f"{memory_id}.json")
        held = set()
        if data is not None:
            try:
                held = {s for s in data["subjects"] if is_name(s)}
            except (KeyError, TypeError) as exc:
                raise _damaged(f"{_IDS}/{memory_id}.json") from exc
        self._where[memory_id] = held
        return held

    # -- changing -------------------------------------------------------------------------

    def add(self, link: StoredLink) -> None:
        """Store ``link`` (well-formed, of this tenant and app), replacing the link of its key."""
        old = self._ends_of(link.subject, link.key)
        if old is not None:
            self._detach(link.subject, link.key, old)
        stored = StoredLink(
            self.tenant, self.app, link.subject, link.source, link.target, link.key,
            bytes(link.sealed),
        )
        for memory_id in {link.source, link.target}:
            self._end(link.subject, memory_id)[link.key] = stored
            self._changed_ends.add((link.subject, memory_id))
        self._keys[(link.subject, link.key)] = (link.source, link.target)
        self._changed_keys.add((link.subject, link.key))

    def remove(self, subject: str, key: str) -> None:
        """Remove the link ``key`` of ``subject``, if it is stored."""
        if not (is_name(subject) and is_key(key)):
            return  # never stored: not a name a link can have
        old = self._ends_of(subject, key)
        if old is not None:
            self._detach(subject, key, old)

    def remove_id(self, memory_id: str) -> None:
        """Remove every link, in any subject, with ``memory_id`` at an end."""
        if not is_name(memory_id):
            return
        for subject in sorted(self._subjects_of(memory_id)):
            for key in list(self._end(subject, memory_id)):
                self.remove(subject, key)
            self._changed_ends.add((subject, memory_id))  # an empty file: removed

    def _detach(self, subject: str, key: str, ends: Ends) -> None:
        for memory_id in set(ends):
            self._end(subject, memory_id).pop(key, None)
            self._changed_ends.add((subject, memory_id))
        self._keys[(subject, key)] = None
        self._changed_keys.add((subject, key))

    def commit(self) -> None:
        """Write every changed file: through the journal, then in place (module docstring)."""
        files: dict[str, bytes | None] = {}
        touched: set[str] = set()
        for subject, memory_id in sorted(self._changed_ends):
            links = self._ends[(subject, memory_id)]
            subjects = self._subjects_of(memory_id)
            name = f"{subject}/{memory_id}.json"
            if links:
                subjects.add(subject)
                files[name] = json.dumps(
                    {
                        "links": [
                            {
                                "source": link.source,
                                "target": link.target,
                                "key": link.key,
                                "sealed": base64.b64encode(link.sealed).decode("ascii"),
                            }
                            for _key, link in sorted(links.items())
                        ]
                    }
                ).encode()
            else:
                subjects.discard(subject)
                files[name] = None
            touched.add(memory_id)
        for subject, key in sorted(self._changed_keys):
            ends = self._keys[(subject, key)]
            files[f"{subject}/{key}.key"] = (
                None
                if ends is None
                else json.dumps({"source": ends[0], "target": ends[1]}).encode()
            )
        for memory_id in sorted(touched):
            subjects = self._where[memory_id]
            files[f"{_IDS}/{memory_id}.json"] = (
                json.dumps({"subjects": sorted(subjects)}).encode() if subjects else None
            )
        self._changed_ends.clear()
        self._changed_keys.clear()
        if not files:
            return
        journal = {
            "format": _JOURNAL_FORMAT,
            "files": [
                [name, None if data is None else base64.b64encode(data).decode("ascii")]
                for name, data in files.items()
            ],
        }
        write_private(self.folder / _JOURNAL, json.dumps(journal).encode())
        _apply(self.folder, files)
        remove_durably(self.folder / _JOURNAL)

    @staticmethod
    def _recover(folder: Path) -> None:
        """Finish the batch a writer left in the journal, if any (holding the exclusive lock)."""
        path = folder / _JOURNAL
        data = _read(path)
        if data is None:
            return
        try:
            if data["format"] != _JOURNAL_FORMAT:
                raise ValueError("format")
            files: dict[str, bytes | None] = {}
            for name, content in data["files"]:
                parts = name.split("/")
                if not (
                    len(parts) == 2
                    and (parts[0] == _IDS or is_name(parts[0]))
                    and (
                        (parts[1].endswith(".json") and is_name(parts[1][: -len(".json")]))
                        or (parts[1].endswith(".key") and is_key(parts[1][: -len(".key")]))
                    )
                ):
                    raise ValueError("name")
                files[name] = None if content is None else base64.b64decode(content, validate=True)
        except (KeyError, TypeError, ValueError) as exc:
            raise _damaged(_JOURNAL) from exc
        _apply(folder, files)
        remove_durably(path)


def _apply(folder: Path, files: dict[str, bytes | None]) -> None:
    """Replace or remove each of ``files`` (names relative to ``folder``), then sync every
    folder that changed."""
    synced: set[Path] = set()
    for name, data in files.items():
        path = folder / name
        if data is None:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
        else:
            if not path.parent.is_dir():
                make_private_dir(path.parent)
                synced.add(folder)  # the new subfolder's entry
            write_private(path, data, sync_folder=False)
        synced.add(path.parent)
    for changed in sorted(synced, key=lambda p: len(p.parts), reverse=True):
        fsync_folder(changed)
