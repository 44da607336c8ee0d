"""Sealed embeddings in the core: what is sealed with a version, and ranking a person's vectors.

A memory's embedding is personal data (it can be inverted back to text), so the core seals
it under the same subject key as the text, with its own associated data, and hands the
driver opaque bytes (``put(vector=...)``). Recall asks the driver for the sealed vectors of
the rows the caller may see (:meth:`VectorDriver.vectors`), opens the ones it has not opened
before, and ranks them with numpy (ADR 0070, ADR 0009).

The sealed payload names its embedder::

    b"\\x01" | len(name) (2 bytes, big-endian) | name (UTF-8) | float32 little-endian values

A vector written by another embedder (another ``name``) is not comparable with a query of
this one: it is left out of vector ranking (BM25 still finds its memory) and counted.

Opened vectors are cached per subject in this process so a recall moves and opens only what
is new, and the stacked matrix of a view is reused while the driver returns the same entries.
The cache forgets an erased memory at once when the erase runs here, a whole subject when its
person is erased here, and anything no longer current in the store (an erase in another
process) every :data:`PRUNE_EVERY` recalls of that subject; at most :data:`MAX_SUBJECTS`
subjects are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Container, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from mainsdk_memory._errors import ConfigurationError, InvalidInputError, SealError
from mainsdk_memory.drivers import Filter, VectorEntry
from mainsdk_memory.embeddings import Embedder, cosine_top_k, from_bytes, to_bytes

__all__ = ["CANDIDATES", "MAX_SUBJECTS", "PRUNE_EVERY", "VectorIndex"]

#: Candidates each ranker hands to fusion (the depth ADR 0070 measured with).
CANDIDATES: Final = 50
#: Subjects whose opened vectors stay cached (least recently used go first).
MAX_SUBJECTS: Final = 64
#: Recalls of one subject after which vectors no driver call returned since are dropped.
PRUNE_EVERY: Final = 64
#: How many of its own newest vectors per subject this process keeps for :meth:`nearest`.
MAX_RECENT: Final = 256

_FORMAT: Final = b"\x01"

class VectorSource(Protocol):
    """Where :meth:`VectorIndex.rank` reads sealed embeddings (a vector driver, guarded)."""

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = ...
    ) -> list[VectorEntry]: ...

    def vector_state(self, where: Filter) -> Hashable | None:
        """A token equal between two calls while :meth:`vectors` would return the same
        entries, or ``None`` (unknown: read them)."""
        ...


Key = tuple[str, str, int]
"""``(subject, memory id, version)``: one stored version's vector."""


def pack(name: str, vector: npt.NDArray[np.float32]) -> bytes:
    """The plaintext sealed for one vector: format byte, embedder name, float32 values."""
    raw = name.encode("utf-8")
    return _FORMAT + len(raw).to_bytes(2, "big") + raw + to_bytes(vector)


def unpack(data: bytes, name: str, dimensions: int) -> npt.NDArray[np.float32] | None:
    """The vector in ``data`` if ``name`` wrote it; ``None`` for another embedder's vector.

    Raises :class:`SealError` when the payload is damaged (it was authenticated, so only a
    bug or a foreign writer gets here).
    """
    if len(data) < 3 or data[:1] != _FORMAT:
        raise SealError
    size = int.from_bytes(data[1:3], "big")
    if data[3 : 3 + size] != name.encode("utf-8"):
        return None
    try:
        return from_bytes(data[3 + size :], dimensions)
    except InvalidInputError:
        raise SealError from None


def check_embedder(embedder: object) -> Embedder:
    """``embedder`` if it has the :class:`Embedder` shape; a clear error otherwise."""
    if not isinstance(embedder, Embedder):
        raise ConfigurationError(
            "embedder must be an Embedder: name, dimensions, uses_model and embed(texts) "
            "(see mainsdk_memory.embeddings: HashingEmbedder, MiniLMEmbedder)."
        )
    name, dimensions = embedder.name, embedder.dimensions
    if not isinstance(name, str) or not name or len(name.encode("utf-8")) > 1000:
        raise ConfigurationError("An embedder's name is a non-empty string (up to 1000 bytes).")
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise ConfigurationError("An embedder's dimensions is a positive integer.")
    return embedder


@dataclass
class _Subject:
    opened: dict[tuple[str, int], npt.NDArray[np.float32] | None] = field(default_factory=dict)
    """``(memory id, version)`` → its vector, or ``None`` when another embedder wrote it."""
    calls: int = 0


@dataclass
class _Stack:
    """The matrix of one view's vectors, kept while the driver returns the same entries."""

    entries: list[VectorEntry]
    """What the driver returned, with ``sealed=None``: a warm recall compares against it."""
    keys: list[Key]
    matrix: npt.NDArray[np.float32] | None
    foreign: int
    state: Hashable | None = None
    """The driver's :meth:`VectorSource.vector_state` read just before ``entries``: while it
    is unchanged, a recall does not read the vectors at all."""
    serial: int = 0
    """:attr:`VectorIndex._serial` when ``entries`` were read: every vector this process
    wrote until then is in them."""


@dataclass
class Ranked:
    """What :meth:`VectorIndex.rank` found: best first, and how many vectors it skipped."""

    hits: list[tuple[Key, float]]
    foreign: int


def _view(where: Filter) -> tuple[object, ...]:
    """What selects a stacked matrix: the filter without its retention cutoffs, which move
    with the clock (the entries comparison catches what they hide)."""
    return (
        where.tenant,
        where.app,
        where.subjects,
        where.session,
        where.kinds,
        where.as_of,
        where.pinned,
        where.written_by,
        where.any_session,
        where.memory_ids,
    )


class VectorIndex:
    """One embedder and the vectors this process has opened, per subject."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = check_embedder(embedder)
        self._lock = threading.Lock()
        self._subjects: OrderedDict[tuple[str, str, str], _Subject] = OrderedDict()
        self._known: set[tuple[str, int]] = set()
        """Every ``(memory id, version)`` opened in any cached subject (ids are unique)."""
        self._stacks: OrderedDict[tuple[object, ...], _Stack] = OrderedDict()
        self._serial = 0
        """How many vectors this process has written (:meth:`wrote`)."""
        self._recent: dict[
            tuple[str, str, str], deque[tuple[int, Key, npt.NDArray[np.float32]]]
        ] = {}
        """Per subject, the last :data:`MAX_RECENT` vectors this process wrote, with their
        serial: :meth:`nearest` ranks those newer than a held stack beside it."""

    @property
    def name(self) -> str:
        return self.embedder.name

    def embed(self, text: str) -> npt.NDArray[np.float32]:
        """The embedder's unit vector of ``text``, checked."""
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """The embedder's unit vector of each of ``texts`` (one call to the embedder), checked."""
        if not texts:
            return []
        matrix = np.asarray(self.embedder.embed(list(texts)))
        dimensions = self.embedder.dimensions
        expected = (len(texts), dimensions)
        if matrix.shape != expected or not np.all(np.isfinite(matrix)):
            raise ConfigurationError(
                f"The embedder {self.embedder.name!r} returned an array of shape "
                f"{matrix.shape} (or non-finite values) where {expected} finite values "
                "were expected; nothing was stored."
            )
        units: list[npt.NDArray[np.float32]] = []
        for row in matrix:
            vector = row.astype(np.float32)
            norm = float(np.linalg.norm(vector))
            units.append(vector / norm if norm > 0.0 else vector)
        return units

    def is_current(self, plain: bytes) -> bool:
        """Whether the opened payload ``plain`` is this embedder's (``False``: another
        embedder's); :class:`SealError` if it is damaged."""
        return unpack(plain, self.embedder.name, self.embedder.dimensions) is not None

    def seal(self, vector: npt.NDArray[np.float32], seal: Callable[[bytes], bytes]) -> bytes:
        """``vector`` packed with this embedder's name, then sealed by ``seal``."""
        return seal(pack(self.embedder.name, vector))

    # -- the cache ------------------------------------------------------------------------

    def _subject(self, tenant: str, app: str, subject: str) -> _Subject:
        key = (tenant, app, subject)
        cache = self._subjects.get(key)
        if cache is None:
            cache = self._subjects[key] = _Subject()
            while len(self._subjects) > MAX_SUBJECTS:
                _, evicted = self._subjects.popitem(last=False)
                self._forget_pairs(evicted, list(evicted.opened))
        else:
            self._subjects.move_to_end(key)
        return cache

    def _forget_pairs(self, cache: _Subject, pairs: list[tuple[str, int]]) -> None:
        for pair in pairs:
            cache.opened.pop(pair, None)
            self._known.discard(pair)
        if pairs:
            self._stacks.clear()

    def wrote(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int,
        vector: npt.NDArray[np.float32],
    ) -> None:
        """Note a vector this process just stored, for :meth:`nearest` (a bounded list: past
        :data:`MAX_RECENT`, the subject's stacks are read again instead)."""
        with self._lock:
            self._serial += 1
            key = (tenant, app, subject)
            recent = self._recent.pop(key, None) or deque(maxlen=MAX_RECENT)
            recent.append((self._serial, (subject, memory_id, version), vector))
            self._recent[key] = recent  # the newest last: the oldest subject goes first
            while len(self._recent) > MAX_SUBJECTS:
                self._recent.pop(next(iter(self._recent)))
                self._stacks.clear()  # a stack of that subject could not tell what it misses

    def nearest(
        self,
        driver: VectorSource,
        where: Filter,
        query: npt.NDArray[np.float32],
        depth: int,
        opener: Callable[[VectorEntry], bytes | None],
    ) -> Ranked:
        """Like :meth:`rank`, for formation at write: a view whose matrix is held is ranked
        as it is, beside the vectors this process wrote since (:meth:`wrote`), without asking
        the driver whether anything changed (a write changes it every time, and reading
        every vector of the person again is what a write must not pay). A newer version
        outranks an older one of the same memory; versions closed since are left out by the
        caller, which reads the rows. What another process wrote since is not among them:
        the text search finds those (ADR 0086)."""
        with self._lock:
            stack = self._stacks.get(_view(where))
            recent = []
            complete = stack is not None
            for subject in where.subjects:
                written = self._recent.get((where.tenant, where.app, subject), deque())
                if stack is not None and written and written[0][0] > stack.serial + 1:
                    complete = False  # more was written since than is kept: read again
                recent += [(key, vector) for serial, key, vector in written
                           if stack is not None and serial > stack.serial]
        if stack is None or not complete:
            return self.rank(driver, where, query, depth, opener)
        keys = list(stack.keys)
        scores: list[float] = []
        if stack.matrix is not None:
            scores = [float(score) for score in stack.matrix @ query]
        for key, vector in recent:
            keys.append(key)
            scores.append(float(vector @ query))
        best: dict[str, tuple[float, Key]] = {}
        for key, score in zip(keys, scores, strict=True):
            held = best.get(key[1])
            if held is None or key[2] > held[1][2]:
                best[key[1]] = (score, key)
        ranked = sorted(best.values(), key=lambda item: -item[0])[:depth]
        return Ranked([(key, score) for score, key in ranked], stack.foreign)

    def discard(self, tenant: str, app: str, subject: str, memory_id: str) -> None:
        """Drop every opened version of ``memory_id`` (it was erased here)."""
        with self._lock:
            written = self._recent.get((tenant, app, subject))
            if written:
                kept = [item for item in written if item[1][1] != memory_id]
                written.clear()
                written.extend(kept)
            cache = self._subjects.get((tenant, app, subject))
            if cache is not None:
                self._forget_pairs(cache, [p for p in cache.opened if p[0] == memory_id])
            self._stacks.clear()

    def drop_subject(self, tenant: str, app: str, subject: str) -> None:
        """Drop everything opened of ``subject`` (its person was erased here)."""
        with self._lock:
            self._recent.pop((tenant, app, subject), None)
            cache = self._subjects.pop((tenant, app, subject), None)
            if cache is not None:
                self._forget_pairs(cache, list(cache.opened))
            self._stacks.clear()

    def _prune(self, driver: VectorSource, where: Filter, subject: str, cache: _Subject) -> None:
        """Drop opened vectors the driver no longer holds as current (erased elsewhere).

        Closed versions go too; an ``as_of`` recall opens them again when it needs them.
        """
        everything = Filter(where.tenant, where.app, (subject,), any_session=True)
        live = {(e.memory_id, e.version) for e in driver.vectors(everything, known=self._known)}
        self._forget_pairs(cache, [pair for pair in cache.opened if pair not in live])

    # -- ranking --------------------------------------------------------------------------

    def rank(
        self,
        driver: VectorSource,
        where: Filter,
        query: npt.NDArray[np.float32],
        depth: int,
        opener: Callable[[VectorEntry], bytes | None],
    ) -> Ranked:
        """The ``depth`` rows of ``where`` nearest ``query``, as ``(key, cosine)``.

        ``opener`` opens one entry's sealed bytes (the caller knows the subject's key), or
        gives ``None`` to leave the entry out (its memory failed a check). A warm
        recall (the driver returns what it returned last time for this view) reuses the
        stacked matrix and does no work per vector in Python.
        """
        with self._lock:
            caches = {s: self._subject(where.tenant, where.app, s) for s in where.subjects}
            view = _view(where)
            stack = self._stacks.get(view)
            state = driver.vector_state(where)
            if stack is None or state is None or stack.state != state:
                serial = self._serial  # what this process wrote until now is in the read
                entries = driver.vectors(where, known=self._known)
                if stack is None or stack.entries != entries:
                    stack = self._stack(entries, caches, opener)
                    self._stacks[view] = stack
                    while len(self._stacks) > MAX_SUBJECTS:
                        self._stacks.popitem(last=False)
                stack.state = state
                stack.serial = serial
            self._stacks.move_to_end(view)
            for subject, cache in caches.items():
                cache.calls += 1
                if cache.calls % PRUNE_EVERY == 0:
                    self._prune(driver, where, subject, cache)
        if stack.matrix is None:
            return Ranked([], stack.foreign)
        found = cosine_top_k(stack.matrix, query, depth, unit_rows=True)
        return Ranked([(stack.keys[index], score) for index, score in found], stack.foreign)

    def _stack(
        self,
        entries: list[VectorEntry],
        caches: dict[str, _Subject],
        opener: Callable[[VectorEntry], bytes | None],
    ) -> _Stack:
        """Open what is new in ``entries`` and stack the view's vectors."""
        keys: list[Key] = []
        vectors: list[npt.NDArray[np.float32]] = []
        seen: list[VectorEntry] = []
        foreign = 0
        name, dimensions = self.embedder.name, self.embedder.dimensions
        for entry in entries:
            cache = caches.get(entry.subject)
            if cache is None:
                continue  # a driver returned a subject the filter did not name
            pair = (entry.memory_id, entry.version)
            if entry.sealed is not None:
                plain = opener(entry)
                if plain is None:
                    continue  # the opener refused it (and said why): left out, not cached
                cache.opened[pair] = unpack(plain, name, dimensions)
                self._known.add(pair)
                entry = entry._replace(sealed=None)
            elif pair not in cache.opened:
                continue  # known a moment ago, dropped since: the next recall opens it
            seen.append(entry)
            vector = cache.opened[pair]
            if vector is None:
                foreign += 1
                continue
            keys.append((entry.subject, entry.memory_id, entry.version))
            vectors.append(vector)
        matrix = np.vstack(vectors) if vectors else None
        return _Stack(entries=seen, keys=keys, matrix=matrix, foreign=foreign)


def vector_scores(ranked: Sequence[tuple[Key, float]]) -> list[tuple[str, float]]:
    """``(memory id, cosine)`` pairs for fusion, best first."""
    return [(key[1], score) for key, score in ranked]
