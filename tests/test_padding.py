"""The sealed size of a memory tells only its size bucket, never its text's exact length."""

from __future__ import annotations

import pytest

from mainsdk_memory import Memory, tenant
from mainsdk_memory import _sealing as sealing
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow


def _row(memory: Memory, person: str, memory_id: str) -> StoredRow:
    subjects = (caller_of(memory.person(person)).pseudonym(), TENANT_SUBJECT)
    return memory.driver.versions("acme", "app", subjects, memory_id)[-1]


def test_texts_of_different_lengths_seal_to_the_same_size(memory: Memory) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        sizes = [
            len(_row(memory, "ada", bot.remember("Ada likes " + "x" * n + ".").id).sealed)
            for n in range(0, 200, 5)
        ]
        envelope = 1 + 12 + 16  # version byte, nonce, tag
        assert len(set(sizes)) <= 4  # 40 lengths, a few buckets
        assert all(sealing.padded_size(size - envelope) == size - envelope for size in sizes)
        assert max(sizes.count(size) for size in sizes) >= 8  # 8+ lengths share one size


def test_buckets_grow_by_at_most_a_quarter() -> None:
    for size in range(1, 40_000, 13):
        bucket = sealing.padded_size(size)
        assert bucket >= size and bucket >= sealing.MIN_PADDED
        assert size <= sealing.MIN_PADDED or bucket <= size * 1.25
    assert len({sealing.padded_size(n) for n in range(1025, 2049)}) == 4  # four per doubling


def test_a_row_sealed_before_padding_still_opens(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        monkeypatch.setattr(sealing, "pad", lambda payload: payload)
        old = bot.remember("Ada's old note, unpadded.")
        monkeypatch.undo()
        assert bot.get(old.id).text == "Ada's old note, unpadded."
