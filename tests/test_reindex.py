"""Backfilling embeddings (issue 14): ``Memory.reindex`` and ``memory reindex`` give memories
stored before an embedder, or under another one, this embedder's sealed vectors; resumable,
idempotent, per tenant, never handing a child's text to a model. Every driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _embedders import ModelEmbedder

from mainsdk_memory import Memory, MemoryCapabilityError, ReindexReport, tenant
from mainsdk_memory._cli import main
from mainsdk_memory._memory import services_of
from mainsdk_memory.audit import AuditEvent
from mainsdk_memory.embeddings import HashingEmbedder, StaticEmbedder

TEXTS = {
    "ada": ["Ada lives in Lisbon.", "Ada is allergic to peanuts.", "Ada plays the cello."],
    "bob": ["Bob works as a nurse.", "Bob has two cats."],
}


def _write(store_url: str, keys_path: Path, **options: object) -> dict[str, list[str]]:
    """The memories of ``TEXTS`` in tenant acme (one revised), and their ids per person."""
    ids: dict[str, list[str]] = {}
    options = {"embedder": None, **options}  # written before any embedder, by default
    with Memory.open(store_url, keys=keys_path, app="app", **options) as memory, \
            tenant.use("acme"):  # type: ignore[arg-type]
        for person, texts in TEXTS.items():
            handle = memory.person(person)
            ids[person] = [handle.remember(text).id for text in texts]
        memory.person("ada").revise(ids["ada"][0], "Ada moved to Porto.")
    return ids


def _vector_texts(memory: Memory, person: str, query: str) -> list[str]:
    return [hit.record.text for hit in memory.person(person).recall(query, mode="vector", top_k=10)]


def _static(store_url: str, keys_path: Path) -> Memory:
    return Memory.open(store_url, keys=keys_path, app="app", embedder=StaticEmbedder())


def test_reindex_backfills_and_is_idempotent(store_url: str, keys_path: Path) -> None:
    _write(store_url, keys_path)
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        assert _vector_texts(memory, "ada", "where does she live") == []
        seen: list[tuple[int, int]] = []
        report = memory.reindex(["ada", "bob"], progress=lambda d, t: seen.append((d, t)))
        assert isinstance(report, ReindexReport)
        # ada: 3 memories, 4 versions (one revised); bob: 2 memories.
        assert (report.memories, report.scanned, report.embedded) == (5, 6, 6)
        assert (report.replaced, report.current, report.unreached) == (0, 0, 0)
        assert seen == [(5, 5)]
        assert "Ada moved to Porto." in _vector_texts(memory, "ada", "where does she live")
        assert len(_vector_texts(memory, "bob", "pets")) == 2
        again = memory.reindex(["ada", "bob"])
        assert (again.embedded, again.current, again.scanned) == (0, 6, 6)
    with _static(store_url, keys_path) as memory, tenant.use("acme"):  # a fresh process
        assert len(_vector_texts(memory, "ada", "music instrument")) == 3


def test_people_not_named_are_counted_not_reached(store_url: str, keys_path: Path) -> None:
    _write(store_url, keys_path)
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        report = memory.reindex(["ada"])
        assert (report.memories, report.embedded, report.unreached) == (3, 4, 2)
        assert _vector_texts(memory, "bob", "pets") == []
        with tenant.use("other"):  # another tenant holds nothing: the tenant is never mixed
            assert memory.reindex(["ada", "bob"]).memories == 0


def test_shared_memories_are_always_reindexed(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        memory.person("ada").remember("The office closes at six.", about="tenant")
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        report = memory.reindex()
        assert (report.memories, report.embedded) == (1, 1)
        assert _vector_texts(memory, "bob", "opening hours") == ["The office closes at six."]


def test_foreign_vectors_are_replaced(store_url: str, keys_path: Path) -> None:
    _write(store_url, keys_path, embedder=HashingEmbedder())
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        assert _vector_texts(memory, "bob", "pets") == []  # hashing vectors are foreign here
        report = memory.reindex(["ada", "bob"])
        assert (report.embedded, report.replaced, report.current) == (6, 6, 0)
        assert len(_vector_texts(memory, "bob", "pets")) == 2
        assert memory.reindex(["ada", "bob"]).embedded == 0


def test_an_interrupted_reindex_resumes(store_url: str, keys_path: Path) -> None:
    _write(store_url, keys_path)

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with (
        _static(store_url, keys_path) as memory,
        tenant.use("acme"),
        pytest.raises(KeyboardInterrupt),
    ):
        memory.reindex(["ada", "bob"], batch=2, progress=stop)
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        report = memory.reindex(["ada", "bob"], batch=2)
        # The first batch (two memories: two versions, or three with the revised one) was
        # kept; the rest is embedded now.
        assert report.current in (2, 3)
        assert report.current + report.embedded == 6
        assert memory.reindex(["ada", "bob"]).embedded == 0


def test_a_childs_memories_are_never_embedded(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        memory.acting_for("tim", agent="tutor").remember("Tim likes dinosaurs.")
        memory.person("ada").remember("Ada plays the cello.")
    embedder = ModelEmbedder()
    with Memory.open(store_url, keys=keys_path, app="app", embedder=embedder) as memory, \
            tenant.use("acme"):
        report = memory.reindex(["tim", "ada"])
        assert (report.embedded, report.skipped_child) == (1, 1)
        assert embedder.seen == ["Ada plays the cello."]
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        report = memory.reindex(["tim", "ada"])  # no model runs, and still text only
        assert (report.embedded, report.replaced, report.skipped_child) == (1, 1, 1)


def test_a_damaged_memory_is_skipped_and_counted(store_url: str, keys_path: Path) -> None:
    ids = _write(store_url, keys_path)
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        # The key store's anchors say bob's first memory is ada's: it fails its check.
        services = services_of(memory)
        anchors = services.keys.anchors
        scope = services.anchor_scope("acme")
        ada_subject = services.anchor_subject("acme", "ada")
        with anchors._write() as connection:
            connection.execute(
                "UPDATE memory SET subject = ? WHERE scope = ? AND memory = ?",
                (ada_subject, scope, ids["bob"][0]),
            )
        report = memory.reindex(["ada", "bob"])
        assert (report.embedded, report.skipped_damaged) == (5, 1)


def test_reindex_needs_an_embedder(store_url: str, keys_path: Path) -> None:
    with (
        Memory.open(store_url, keys=keys_path, app="app", embedder=None) as memory,
        tenant.use("acme"),
        pytest.raises(MemoryCapabilityError, match="embedder="),
    ):
        memory.reindex()


def test_reindex_is_audited_with_counts_only(store_url: str, keys_path: Path) -> None:
    _write(store_url, keys_path)
    events: list[AuditEvent] = []

    class Sink:
        def emit(self, event: AuditEvent) -> None:
            events.append(event)

    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        memory.audit = Sink()
        memory.reindex(["ada"])
    assert [(e.operation, e.actor, e.person, e.count) for e in events] == [
        ("reindex", "app", None, 4)
    ]
    assert "ada" not in json.dumps(events[0].to_dict()).lower()


def test_the_cli_reindexes_and_prints_a_summary(
    store_url: str, keys_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(store_url, keys_path)
    code = main([
        "reindex", "--store", store_url, "--keys", str(keys_path), "--app", "app",
        "--tenant", "acme", "--tenant", "other", "--person", "ada", "--person", "bob",
    ])
    assert code == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["embedder"] == "static"
    assert summary["tenants"]["acme"]["embedded"] == 6
    assert summary["tenants"]["other"]["memories"] == 0
    assert "acme: 5/5 memories" in err
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        assert len(_vector_texts(memory, "bob", "pets")) == 2


def test_an_unreadable_memory_file_is_skipped_and_counted(
    tmp_path: Path, keys_path: Path
) -> None:
    store_url = f"local:{tmp_path / 'store'}"  # it damages a local store's file
    ids = _write(store_url, keys_path)
    root = Path(store_url.removeprefix("local:"))
    [damaged] = root.rglob(f"{ids['bob'][1]}.json")
    damaged.write_bytes(b"{not json")
    with _static(store_url, keys_path) as memory, tenant.use("acme"):
        report = memory.reindex(["ada", "bob"])
        assert (report.memories, report.embedded, report.skipped_damaged) == (5, 5, 1)
        assert memory.reindex(["ada", "bob"]).embedded == 0
