"""Children's protections survive every revision: the ``child`` label and every label that
carries a retention come from the person's status and the memory's first version, and no
revise, confirm or other path removes them (so no model reads a child's text, and the 90-day
cap keeps applying)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _embedders import ModelEmbedder

from mainsdk_memory import Memory, Source, tenant
from mainsdk_memory.injection import ClassifierDetector


class Story:
    def __init__(self, memory: Memory, seen_by_models: list[str], now: list[datetime]) -> None:
        self.memory = memory
        self.seen_by_models = seen_by_models
        self.now = now


@pytest.fixture
def story(store_url: str, keys_path: Path) -> Iterator[Story]:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    classified: list[str] = []

    def classify(text: str) -> float:
        classified.append(text)
        return 0.0

    embedder = ModelEmbedder()
    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: now[0],
                     retention={"personal": timedelta(days=365), "short": timedelta(days=7)},
                     detector=ClassifierDetector(classify), embedder=embedder) as memory, \
            tenant.use("acme"):
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        story = Story(memory, classified, now)
        yield story
        story.seen_by_models.extend(embedder.seen)


def _models_saw(story: Story, word: str) -> bool:
    embedder = story.memory.embedder
    assert isinstance(embedder, ModelEmbedder)
    return any(word in text for text in [*story.seen_by_models, *embedder.seen])


def test_a_revision_cannot_drop_the_child_label(story: Story) -> None:
    tim = story.memory.acting_for("tim", agent="tutor")
    record = tim.remember("Tim likes dinosaurs.")
    assert "child" in record.labels
    for labels in (["personal"], ["none"], ["work", "hobby"]):
        revised = tim.revise(record.id, f"Tim likes {len(labels)} triceratops.", labels=labels)
        assert "child" in revised.labels
    assert "child" in tim.get(record.id).labels
    tim.recall("triceratops", mode="auto")
    assert not _models_saw(story, "Tim") and not _models_saw(story, "triceratops")
    story.now[0] += timedelta(days=120)
    assert tim.recall("triceratops") == []  # the 90-day cap still applies
    assert [r.memory_id for r in story.memory.enforce_retention()] == [record.id]


def test_confirming_keeps_the_child_label(story: Story) -> None:
    tim = story.memory.acting_for("tim", agent="tutor", session="s1")
    stored = tim.remember("Tim's class visits the museum.", source=Source.tool("calendar"))
    confirmed = story.memory.person("tim").confirm(stored.id)
    assert "child" in confirmed.labels and confirmed.trust.value == "confirmed"
    assert not _models_saw(story, "museum")


def test_a_person_who_becomes_a_child_gets_the_label_on_the_next_revision(story: Story) -> None:
    kim = story.memory.acting_for("kim", agent="tutor")
    record = kim.remember("Kim plays chess.")
    assert "child" not in record.labels and _models_saw(story, "chess")
    story.memory.privacy.set_guardian("kim", guardian="ana")
    story.memory.privacy.record_consent("kim", guardian="ana")
    revised = kim.revise(record.id, "Kim plays checkers.", labels=["personal"])
    assert "child" in revised.labels
    assert not _models_saw(story, "checkers")


def test_a_retention_label_of_the_first_version_stays(story: Story) -> None:
    ada = story.memory.acting_for("ada", agent="bot")
    record = ada.remember("Ada's door code this week is 4411.", labels=["short"])
    revised = ada.revise(record.id, "Ada's door code this week is 5522.", labels=["personal"])
    assert set(revised.labels) == {"personal", "short"}
    story.now[0] += timedelta(days=8)
    assert ada.recall("door code") == []  # seven days, as the first version said
