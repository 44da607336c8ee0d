"""A tiny in-memory driver on BaseDriver: every version of every memory in one dict."""

import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace

from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import BaseDriver, Capabilities, EraseResult, StoredRow


def key_of(row: StoredRow) -> tuple[str, ...]:
    return (row.tenant, row.app, row.subject, row.memory_id)


class DictDriver(BaseDriver):
    """Keeps rows in memory; search, list, expired and set_pinned are BaseDriver's."""

    name = "dict"
    # A hard erase: nothing else holds what erase() drops. No concurrent writers: each
    # instance has its own dicts, so two drivers on one folder do not see each other.
    capabilities = Capabilities(
        text_search=True, time_travel=True, erase="hard", concurrent_writers=False
    )

    def __init__(self, folder: object = None) -> None:  # the suite passes a folder; unused
        self._lock = threading.RLock()  # reentrant: a subclass may call super() under it
        self._memories: dict[tuple[str, ...], list[StoredRow]] = {}  # versions, oldest first
        self._control: dict[tuple[str, ...], bytes] = {}  # (tenant, app, key) -> value

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        with self._lock:
            versions = self._memories.get(key_of(row), [])
            now = (versions[-1].version, versions[-1].valid_to) if versions else None
            wanted = (None, 1) if closes is None else ((closes, None), closes + 1)
            if (now, row.version) != wanted:
                raise MemoryConflictError  # it exists, or another writer got there first
            if versions:
                versions = [*versions[:-1], replace(versions[-1], valid_to=row.valid_from)]
            self._memories[key_of(row)] = [*versions, row]

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> list[StoredRow]:
        with self._lock:
            found = (self._memories.get((tenant, app, s, memory_id)) for s in subjects)
            return list(next((versions for versions in found if versions), []))

    def rows(self, tenant: str, app: str) -> list[StoredRow]:
        with self._lock:  # a snapshot, which the inherited reads filter with Filter.matches
            mine = [rows for key, rows in self._memories.items() if key[:2] == (tenant, app)]
            return [row for versions in mine for row in versions]

    def replace(self, row: StoredRow) -> None:  # the hook BaseDriver.set_pinned uses
        with self._lock:
            versions = self._memories.get(key_of(row))
            if not versions or (versions[-1].version, versions[-1].valid_to) != (row.version, None):
                raise MemoryConflictError  # not the current version any more
            versions[-1] = row

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        with self._lock:
            removed = self._memories.pop((tenant, app, subject, memory_id), [])
        return EraseResult(memory_id, tuple(row.version for row in removed), "hard")

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        with self._lock:
            self._control.pop((tenant, app, key), None)
            if value is not None:
                self._control[(tenant, app, key)] = bytes(value)

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        with self._lock:
            return self._control.get((tenant, app, key))

    def control_list(self, tenant: str, app: str, prefix: str) -> list[tuple[str, bytes]]:
        with self._lock:
            mine = [(k[2], value) for k, value in self._control.items() if k[:2] == (tenant, app)]
        return sorted((key, value) for key, value in mine if key.startswith(prefix))

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        with self._lock:  # every byte it holds: each version's blob, terms and tags, control
            dump = [("/".join(key), value) for key, value in self._control.items()]
            for row in (row for versions in self._memories.values() for row in versions):
                where = "/".join((*key_of(row), str(row.version)))
                dump.append((where, row.sealed + "".join([*row.terms, *row.tags]).encode()))
        return iter(dump)
