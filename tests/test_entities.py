"""Entities: what memories mention, their canonical names and aliases, recall by entity.

Runs on every driver in conftest.STORES.
"""

from __future__ import annotations

import pytest

from mainsdk_memory import InvalidInputError, Memory

pytestmark = pytest.mark.usefixtures("acme")


def _names(memory: Memory, person: str = "ada") -> dict[str, tuple[str, int]]:
    handle = memory.acting_for(person, agent="bot")
    return {entity.name: (entity.type, entity.memories) for entity in handle.entities()}


def test_memories_name_entities_with_a_type(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    ada.remember("Ada joined Siemens in Munich last spring.")
    ada.remember("Ada's manager at Siemens is Tom Becker.")
    ada.remember("Ada met Greta Lindqvist at the Oslo office.")
    names = _names(memory)
    assert names["Siemens"] == ("organisation", 2)
    assert names["Greta Lindqvist"][0] == "person"
    assert names["Munich"][0] == "place"
    assert "Tom Becker" in names
    (link,) = [link for link in ada.links(ada.list().items[0].id) if link.target.startswith(
        "ent_") and link.kind == "mentions"][:1]
    assert link.direction == "out"


def test_an_alias_resolves_to_the_same_entity(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    ada.remember("Ada's manager is Tom Becker.")
    ada.remember("Ada had lunch with Tom on Friday.")
    ada.remember("Becker approved the budget.")
    entities = [entity for entity in ada.entities() if entity.name == "Tom Becker"]
    assert len(entities) == 1 and entities[0].memories == 3
    assert entities[0].type == "person"  # "with Tom" said what Tom Becker is
    assert not [entity for entity in ada.entities() if entity.name in {"Tom", "Becker"}]


def test_recall_narrows_to_memories_that_mention_an_entity(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    tom = ada.remember("Ada meets Tom Becker for coffee on Mondays.")
    ada.remember("Ada meets her sister for coffee on Sundays.")
    found = [hit.record.id for hit in ada.recall("coffee", entity="Tom")]
    assert found == [tom.id]
    (entity,) = [one for one in ada.entities() if one.name == "Tom Becker"]
    assert [hit.record.id for hit in ada.recall("coffee", entity=entity.id)] == [tom.id]
    assert ada.recall("coffee", entity="Nobody Known") == []
    with pytest.raises(InvalidInputError):
        ada.recall("coffee", entity="")


def test_entities_are_the_persons_own(memory: Memory) -> None:
    memory.acting_for("ada", agent="bot").remember("Ada works with Tom Becker.")
    bob = memory.acting_for("bob", agent="bot")
    bob.remember("Bob works at Acme Corp.")
    assert "Tom Becker" not in _names(memory, "bob")
    assert bob.recall("works", entity="Tom Becker") == []


def test_forgetting_the_last_mention_forgets_the_entity(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    only = ada.remember("Ada once met Greta Lindqvist in Oslo.")
    ada.remember("Ada lives in Oslo.")
    names = _names(memory)
    assert "Greta Lindqvist" in names
    receipt = memory.person("ada").forget(only.id)
    names = _names(memory)
    assert "Greta Lindqvist" not in names and "Oslo" in names
    dropped = receipt.claims["entity_ids"]
    assert dropped
    # Its records are gone: no place of the store names the dropped entities.
    for entity_id in dropped:
        assert all(
            entity_id not in where and entity_id.encode() not in data
            for where, data in memory.driver.raw_dump()
        )


def test_names_never_cross_agents_sessions_or_quarantine(memory: Memory) -> None:
    from mainsdk_memory import Source

    memory.acting_for("ada", agent="bot").remember("Ada works with Tom Becker.")
    other = memory.acting_for("ada", agent="bot2")
    other.remember("Ada had lunch with Tom.")
    names = {entity.name for entity in other.entities()}
    assert "Tom" in names and "Tom Becker" not in names  # bot2 never read "Becker"
    web = memory.acting_for("ada", agent="bot3", session="s")
    web.remember("Ada met Greta Lindqvist.", source=Source.web("https://example.org"))
    assert "Greta Lindqvist" not in {e.name for e in memory.acting_for("ada", agent="bot3",
                                                                        session="s").entities()}
    assert "Greta Lindqvist" not in {entity["name"] for entity in
                                     memory.privacy.export("ada")["entities"]}
