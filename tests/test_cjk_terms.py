"""Text written without spaces between words (Chinese, Japanese, Korean) is found by part of it.

A run of CJK characters is indexed as its overlapping character pairs (issue 14 item 5), so
a query of two or more of a memory's characters finds it, through the sealed index, on
every driver; English terms are what they always were.
"""

from __future__ import annotations

import pytest

from mainsdk_memory import Memory
from mainsdk_memory._text import index_terms

pytestmark = pytest.mark.usefixtures("acme")


def test_cjk_runs_become_character_pairs_and_other_words_stay_words() -> None:
    assert index_terms("我会说中文") == ["我会", "会说", "说中", "中文"]
    assert index_terms("日本語") == ["日本", "本語"]
    assert index_terms("abc中文def") == ["abc", "中文", "def"]
    assert index_terms("中") == ["中"]
    assert index_terms("Ada lives in Lisbon.") == ["ada", "live", "lisbon"]


@pytest.mark.parametrize(
    ("memory_text", "query"),
    [
        ("Ada 会说中文。", "中文"),
        ("エイダは日本語を勉強しています。", "日本語"),
        ("에이다는 한국어를 배워요.", "한국어"),
    ],
)
def test_a_partial_cjk_query_finds_its_memory(
    memory: Memory, memory_text: str, query: str
) -> None:
    ada = memory.acting_for("ada", agent="bot")
    record = ada.remember(memory_text)
    ada.remember("Ada lives in Lisbon.")
    assert [hit.record.id for hit in ada.recall(query, mode="text")] == [record.id]
