"""The local driver's links: a file per link, an empty marker per end, a journal per batch.

Layout under ``<tenant>/<app>/_links/`` (never a subject folder: a subject is a plain name)::

    .lock                   a file lock (mainsdk_memory._locking): writers take it exclusive,
                            readers shared
    .journal                a batch being written: every file it writes or removes
    _ids/<id>.subjects      the subjects that have a folder <subject>/<id>/ (what an erase of
                            the memory <id> reads first: the subjects with links to it)
    <subject>/<key>.link    one link of the subject: its two ends and its sealed blob
    <subject>/<id>/<key>    an empty marker: the link <key> has <id> at one end

A link's sealed blob is in its ``.link`` file and nowhere else, and adding a link writes a
few small files whatever the number of links its ends already have (an entity that every
memory mentions is one folder of markers, never one large file rewritten). A read by id lists
one folder per subject and reads the links it names; no memory file is read.

Every write (a batch of :meth:`LinkFolder.add`, deletes by key, the links of an erased
memory) runs under the exclusive lock and first works out every file it writes or removes;
it writes that list to ``.journal`` (temp file, fsync, rename, fsync of the folder: the
batch's commit point), then applies it (each file replaced atomically, one sync per folder at
the end), then removes the journal. A crash before the journal is in place changes nothing;
after it, whoever takes the lock next finds the journal and finishes the batch (a reader
upgrades its lock to do so). So a batch is stored whole or not at all, and a read never sees
half of one. A removed link leaves nothing: its file and its markers are unlinked, and so is
the journal once applied.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import StoreError
from mainsdk_memory._files import (
    FILE_MODE,
    fsync_folder,
    make_private_dir,
    remove_durably,
    write_private,
)
from mainsdk_memory._locking import lock, release, upgrade
from mainsdk_memory.drivers._links import is_key, is_name
from mainsdk_memory.drivers._protocol import StoredLink

__all__ = ["LINKS", "LinkFolder"]

#: The folder of a tenant and app's links (not a plain name, so never a subject's folder).
LINKS = "_links"
_IDS = "_ids"
_SUBJECTS = ".subjects"  # not .json: nothing here looks like a memory file
_JOURNAL = ".journal"
_JOURNAL_FORMAT = "mainsdk-memory-links-journal/1"

Slot = tuple[str, str]
"""``(subject, key)``: one link."""
Marker = tuple[str, str, str]
"""``(subject, id, key)``: one end of one link."""


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


def _well_named(name: str) -> bool:
    """Whether ``name`` (relative to the links folder) is one a batch may write or remove."""
    parts = name.split("/")
    if len(parts) == 2 and parts[0] == _IDS:
        return parts[1].endswith(_SUBJECTS) and is_name(parts[1][: -len(_SUBJECTS)])
    if len(parts) == 2:
        return is_name(parts[0]) and parts[1].endswith(".link") and is_key(parts[1][:-5])
    return len(parts) == 3 and is_name(parts[0]) and is_name(parts[1]) and is_key(parts[2])


class LinkFolder:
    """The links of one tenant and app, in their folder (module docstring)."""

    def __init__(self, folder: Path, tenant: str, app: str) -> None:
        self.folder = folder
        self.tenant = tenant
        self.app = app
        self._links: dict[Slot, StoredLink | None] = {}  # as stored, then as changed
        self._listed: dict[tuple[str, str], set[str]] = {}  # (subject, id) -> keys there
        self._where: dict[str, set[str]] = {}  # id -> subjects with a folder of it
        self._changed: set[Slot] = set()
        self._markers: dict[Marker, bool] = {}  # markers written (True) or removed (False)

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
            lock(fd, exclusive=True)
            cls._recover(folder)
            yield cls(folder, tenant, app)
        finally:
            release(fd)

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
                lock(fd, exclusive=False)
                if (folder / _JOURNAL).exists():  # a writer died mid-batch: finish it first
                    upgrade(fd)
                    cls._recover(folder)
            yield cls(folder, tenant, app)
        finally:
            if fd >= 0:
                release(fd)

    # -- reading --------------------------------------------------------------------------

    def links(self, subjects: Iterable[str], ids: Iterable[str]) -> list[StoredLink]:
        """The links of these subjects with one of ``ids`` at an end, sorted by (subject, key)."""
        wanted = sorted({i for i in ids if is_name(i)})
        found: dict[Slot, StoredLink] = {}
        for subject in sorted({s for s in subjects if is_name(s)}):
            for memory_id in wanted:
                for key in self._keys_at(subject, memory_id):
                    link = self._link(subject, key)
                    if link is not None and memory_id in (link.source, link.target):
                        found[(subject, key)] = link
        return [found[slot] for slot in sorted(found)]

    def _link(self, subject: str, key: str) -> StoredLink | None:
        """The link ``key`` of ``subject`` (as changed so far), or ``None``."""
        slot = (subject, key)
        if slot in self._links:
            return self._links[slot]
        data = _read(self.folder / subject / f"{key}.link")
        link = None
        if data is not None:
            try:
                link = StoredLink(
                    tenant=self.tenant,
                    app=self.app,
                    subject=subject,
                    source=data["source"],
                    target=data["target"],
                    key=key,
                    sealed=base64.b64decode(data["sealed"], validate=True),
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise _damaged(f"{key}.link") from exc
            if not (is_name(link.source) and is_name(link.target)):
                raise _damaged(f"{key}.link")
        self._links[slot] = link
        return link

    def _keys_at(self, subject: str, memory_id: str) -> set[str]:
        """The keys of the subject's links with ``memory_id`` at an end, as stored (one
        listing of its folder)."""
        listed = self._listed.get((subject, memory_id))
        if listed is None:
            try:
                names = os.listdir(self.folder / subject / memory_id)
            except (FileNotFoundError, NotADirectoryError):
                names = []
            listed = self._listed[(subject, memory_id)] = {n for n in names if is_key(n)}
        return listed

    def _subjects_of(self, memory_id: str) -> set[str]:
        """The subjects with a folder of ``memory_id``, as stored (loaded once)."""
        held = self._where.get(memory_id)
        if held is None:
            data = _read(self.folder / _IDS / f"{memory_id}{_SUBJECTS}")
            held = set()
            if data is not None:
                try:
                    held = {s for s in data["subjects"] if is_name(s)}
                except (KeyError, TypeError) as exc:
                    raise _damaged(f"{_IDS}/{memory_id}{_SUBJECTS}") from exc
            self._where[memory_id] = held
        return held

    # -- changing -------------------------------------------------------------------------

    def add(self, link: StoredLink) -> None:
        """Store ``link`` (well-formed, of this tenant and app), replacing the link of its key."""
        self.remove(link.subject, link.key)
        slot = (link.subject, link.key)
        self._links[slot] = StoredLink(
            self.tenant, self.app, link.subject, link.source, link.target, link.key,
            bytes(link.sealed),
        )
        self._changed.add(slot)
        for memory_id in {link.source, link.target}:
            self._markers[(link.subject, memory_id, link.key)] = True

    def remove(self, subject: str, key: str) -> None:
        """Remove the link ``key`` of ``subject``, if it is stored."""
        if not (is_name(subject) and is_key(key)):
            return  # never stored: not a name a link can have
        old = self._link(subject, key)
        if old is None:
            return
        self._links[(subject, key)] = None
        self._changed.add((subject, key))
        for memory_id in {old.source, old.target}:
            self._markers[(subject, memory_id, key)] = False

    def remove_id(self, memory_id: str) -> None:
        """Remove every link, in any subject, with ``memory_id`` at an end."""
        if not is_name(memory_id):
            return
        for subject in sorted(self._subjects_of(memory_id)):
            for key in sorted(self._keys_at(subject, memory_id)):
                self.remove(subject, key)

    def commit(self) -> None:
        """Write what changed: the list of files to the journal, then the files themselves."""
        files: dict[str, bytes | None] = {}
        for subject, key in sorted(self._changed):
            link = self._links[(subject, key)]
            files[f"{subject}/{key}.link"] = None if link is None else json.dumps(
                {
                    "source": link.source,
                    "target": link.target,
                    "sealed": base64.b64encode(link.sealed).decode("ascii"),
                }
            ).encode()
        ends: dict[tuple[str, str], dict[str, bool]] = {}
        for (subject, memory_id, key), present in sorted(self._markers.items()):
            files[f"{subject}/{memory_id}/{key}"] = b"" if present else None
            ends.setdefault((subject, memory_id), {})[key] = present
        emptied: list[str] = []
        touched: set[str] = set()
        for (subject, memory_id), changes in sorted(ends.items()):
            subjects = self._subjects_of(memory_id)
            if any(changes.values()):
                left = True
            else:  # only removals: is anything left in the folder?
                left = bool(self._keys_at(subject, memory_id) - changes.keys())
                if not left:
                    emptied.append(f"{subject}/{memory_id}")
            if left != (subject in subjects):
                (subjects.add if left else subjects.discard)(subject)
                touched.add(memory_id)
        for memory_id in sorted(touched):
            subjects = self._where[memory_id]
            files[f"{_IDS}/{memory_id}{_SUBJECTS}"] = (
                json.dumps({"subjects": sorted(subjects)}).encode() if subjects else None
            )
        self._changed.clear()
        self._markers.clear()
        self._listed.clear()
        if not files:
            return
        journal = {
            "format": _JOURNAL_FORMAT,
            "files": [
                [name, None if data is None else base64.b64encode(data).decode("ascii")]
                for name, data in files.items()
            ],
            "emptied": emptied,
        }
        write_private(self.folder / _JOURNAL, json.dumps(journal).encode())
        _apply(self.folder, files, emptied)
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
                if not _well_named(name):
                    raise ValueError("name")
                files[name] = None if content is None else base64.b64decode(content, validate=True)
            emptied = [str(name) for name in data["emptied"]]
            if not all(_well_named(f"{name}/{'0' * 32}") for name in emptied):
                raise ValueError("name")
        except (KeyError, TypeError, ValueError) as exc:
            raise _damaged(_JOURNAL) from exc
        _apply(folder, files, emptied)
        remove_durably(path)


def _touch(path: Path) -> None:
    """Create the empty marker ``path`` (0600) if it is missing. A marker holds no bytes, so
    the sync of its folder, which :func:`_apply` does last, is all its durability needs (a
    data sync of an empty file is one more disk flush for nothing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        if os.fstat(fd).st_size:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _apply(folder: Path, files: dict[str, bytes | None], emptied: Iterable[str]) -> None:
    """Replace or remove each of ``files`` and the emptied marker folders (names relative to
    ``folder``), then sync every folder that changed, deepest first."""
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
                synced.add(path.parent.parent)  # the new folder's entry
            if data:
                write_private(path, data, sync_folder=False)
            else:
                _touch(path)
        synced.add(path.parent)
    for name in emptied:
        with contextlib.suppress(OSError):  # gone already, or not empty: keep it
            (folder / name).rmdir()
            synced.add((folder / name).parent)
    for changed in sorted(synced, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(FileNotFoundError):
            fsync_folder(changed)
