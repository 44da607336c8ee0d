"""The dict driver with vectors: each version's sealed embedding is kept beside it."""

from collections.abc import Iterator
from dataclasses import replace

from dict_driver import DictDriver, key_of

from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import EraseResult, StoredRow


class DictVectorsDriver(DictDriver):
    """DictDriver, declaring vectors; vectors() is BaseDriver's, through stored_vector()."""

    name = "dict-vectors"
    capabilities = replace(DictDriver.capabilities, vectors=True)

    def __init__(self, folder: object = None) -> None:
        super().__init__(folder)
        self._vectors: dict[tuple[tuple[str, ...], int], bytes] = {}  # memory, version

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        with self._lock:  # the version and its vector in one atomic step
            super().put(row, closes=closes)
            if vector is not None:
                self._vectors[(key_of(row), row.version)] = bytes(vector)

    def stored_vector(self, row: StoredRow) -> bytes | None:  # the hook vectors() uses
        with self._lock:
            return self._vectors.get((key_of(row), row.version))

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        with self._lock:  # the check and the store in one atomic step
            if version not in {r.version for r in self.versions(tenant, app, [subject], memory_id)}:
                raise MemoryConflictError("This version is not stored; nothing was changed.")
            self._vectors[((tenant, app, subject, memory_id), version)] = bytes(sealed)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        with self._lock:
            erased = super().erase(tenant, app, subject, memory_id)
            for version in erased.versions:
                self._vectors.pop(((tenant, app, subject, memory_id), version), None)
        return erased

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        with self._lock:
            dump = list(super().raw_dump())
            vectors = list(self._vectors.items())
        for (key, version), vector in vectors:
            dump.append(("/".join((*key, str(version), "vector")), vector))
        return iter(dump)
