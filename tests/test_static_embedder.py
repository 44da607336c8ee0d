"""The static embedder (ADR 0083): meaning on the default install, with no model and no network.

The WordPiece tokenizer is checked against pieces BERT's own tokenizer gives (recorded from
``transformers``' ``BertTokenizerFast`` on the same vocabulary; the full comparison, 5,889
LoCoMo turns and edge cases with no difference, is in ADR 0083). The embedder gives unit
rows, the same on every call, with nothing reaching a socket; a store opened with it, on an
install with no extra, answers the README's question; without an embedder recall is BM25.
"""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from mainsdk_memory import Memory, tenant
from mainsdk_memory.embeddings import STATIC_DIMENSIONS, StaticEmbedder, cosine_top_k

# (text, BERT's pieces) from BertTokenizerFast(all-MiniLM-L6-v2's vocab), add_special_tokens=False
BERT_PIECES = [
    ("Ada prefers WhatsApp over email.", ["ada", "prefers", "what", "##sa", "##pp", "over",
                                          "email", "."]),
    ("José's café — naïve résumé", ["jose", "'", "s", "cafe", "—", "naive", "resume"]),
    ("unaffable", ["una", "##ffa", "##ble"]),
    ("中文", ["中", "文"]),
    ("a\u200bb\tc\x00d", ["ab", "cd"]),
    ("x" * 120, ["[UNK]"]),
    ("Ada's e-mail: ada@example.com!!", ["ada", "'", "s", "e", "-", "mail", ":", "ada", "@",
                                         "example", ".", "com", "!", "!"]),
]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


@pytest.mark.parametrize(("text", "pieces"), BERT_PIECES)
def test_the_tokenizer_cuts_text_as_bert_does(
    embedder: StaticEmbedder, text: str, pieces: list[str]
) -> None:
    table = embedder._table
    tokens = {row: token for token, row in table.tokenizer._vocabulary.items()}
    assert [tokens[i] for i in table.tokenizer.ids(text)] == pieces


def test_vectors_are_unit_rows_the_same_every_time_with_no_network(
    embedder: StaticEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the static embedder opened a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    texts = ["Ada prefers WhatsApp over email.", "", "!!!", "中文", "x" * 9000]
    first = embedder.embed(texts)
    assert first.shape == (len(texts), STATIC_DIMENSIONS) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, StaticEmbedder().embed(texts))
    assert embedder.embed([]).shape == (0, STATIC_DIMENSIONS)


def test_it_finds_meaning_where_the_words_differ(embedder: StaticEmbedder) -> None:
    memories = [
        "Ada prefers WhatsApp over email.",
        "Ada lives in Lisbon.",
        "Ada is allergic to peanuts.",
        "Ada's daughter plays the violin.",
    ]
    matrix = embedder.embed(memories)
    for question, expected in [
        ("how do we reach her?", 0),
        ("where does she live?", 1),
        ("food restrictions", 2),
        ("what instrument does her kid play?", 3),
    ]:
        best = cosine_top_k(matrix, embedder.embed([question])[0], 1)
        assert best[0][0] == expected, question


def test_with_no_extra_it_answers_the_readmes_question(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=StaticEmbedder()) as memory, \
            tenant.use("acme"):
        assert isinstance(memory.embedder, StaticEmbedder)
        ada = memory.acting_for("ada", agent="concierge-bot")
        ada.remember("Ada prefers WhatsApp over email.")
        ada.remember("Ada's flight lands at nine.")
        hits = ada.recall("how do we reach her?", top_k=1)
        assert [hit.record.text for hit in hits] == ["Ada prefers WhatsApp over email."]
        assert "WhatsApp" in ada.context("how do we reach her?")


def test_the_default_install_finds_the_readmes_answer(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        assert isinstance(memory.embedder, StaticEmbedder)  # on by default (ADR 0083)
        ada = memory.acting_for("ada", agent="bot")
        whatsapp = ada.remember("Ada prefers WhatsApp over email.")
        ada.remember("Ada's daughter is called Mia.")
        assert ada.recall("how do we reach her?")[0].record.id == whatsapp.id


def test_without_an_embedder_recall_is_bm25_only(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        assert memory.embedder is None
        ada = memory.acting_for("ada", agent="bot")
        ada.remember("Ada prefers WhatsApp over email.")
        assert ada.recall("how do we reach her?") == []
