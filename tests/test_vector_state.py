"""A driver's vector state (every driver here has one: the local driver's, and the db driver's
per-subject change counter on SQLite and PostgreSQL): while it is unchanged a recall reads
no vectors, and every change that alters what ``vectors()`` returns changes it. Every driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from mainsdk_memory import Memory, tenant
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.drivers import VectorDriver


def _tells(memory: Memory) -> bool:
    """Whether the driver gives a vector state (every driver here does)."""
    return True


def _state_and_entries(memory: Memory) -> tuple[object, list[object]]:
    driver = memory.driver
    assert isinstance(driver, VectorDriver)
    where = caller_of(memory.acting_for("ada", agent="bot")).filter()
    return driver.vector_state(where), driver.vectors(where)  # type: ignore[attr-defined]


def test_the_state_changes_with_every_change_to_the_vectors(
    store_url: str, keys_path: Path
) -> None:
    local = Memory.open(store_url, keys=keys_path, app="app")
    with local, tenant.use("acme"):
        ada = local.acting_for("ada", agent="bot")
        first = ada.remember("Ada prefers WhatsApp over email.")
        seen = [_state_and_entries(local)]
        assert seen[0] == _state_and_entries(local)  # nothing changed: the same token
        ada.remember("Ada's daughter is called Mia.")
        seen.append(_state_and_entries(local))
        ada.revise(first.id, "Ada prefers Signal over email.")
        seen.append(_state_and_entries(local))
        ada.pin(first.id)  # the same vectors: the token may stay, the entries must too
        pinned = _state_and_entries(local)
        assert pinned[0] != seen[-1][0] or pinned[1] == seen[-1][1]
        local.person("ada").forget(first.id)
        seen.append(_state_and_entries(local))
        states = [state for state, _ in seen]
        if not _tells(local):
            assert states == [None] * len(states)  # cannot tell: recall reads the vectors
            return
        assert len(set(states)) == len(states)  # each change, a new token
        assert all(state is not None for state in states)


def test_a_warm_recall_reads_no_vectors_and_a_write_elsewhere_is_seen(
    store_url: str, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_url
    with Memory.open(url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        whatsapp = ada.remember("Ada prefers WhatsApp over email.")
        ada.recall("how do we reach her?")
        reads: list[object] = []
        driver = services_of(memory).driver
        original = driver.vectors
        monkeypatch.setattr(
            driver, "vectors", lambda *a, **k: reads.append(a) or original(*a, **k)
        )
        assert ada.recall("how do we reach her?")[0].record.id == whatsapp.id
        assert (reads == []) is _tells(memory)  # unchanged: the stacked vectors are reused
        with Memory.open(url, keys=keys_path, app="app") as other:  # another writer
            mia = other.acting_for("ada", agent="bot").remember("Ada's daughter is called Mia.")
        hits = ada.recall("what is her child's name?", mode="vector")
        assert reads  # the state changed: the vectors were read again
        assert mia.id in [hit.record.id for hit in hits]
