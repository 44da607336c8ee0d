"""Relations: links both ways, insights derived from memories, and a forget that reaches them.

Runs on every driver in conftest.STORES; the last tests use the docs' DictDriver, which
declares no ``relations``.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_base_driver import DictDriver

from mainsdk_memory import (
    InvalidInputError,
    Link,
    Memory,
    MemoryCapabilityError,
    MemoryNotFound,
    ScopeError,
    receipts,
    tenant,
)
from mainsdk_memory.keys import KeyStore

pytestmark = pytest.mark.usefixtures("acme")


def _mentions_anywhere(memory: Memory, needle: str) -> list[str]:
    """Every place of the store whose bytes hold ``needle`` (as text, hex or base64)."""
    raw = needle.encode()
    forms = [raw, raw.hex().encode(), base64.b64encode(raw)]
    return [where for where, data in memory.driver.raw_dump() if any(f in data for f in forms)]


def test_an_insight_links_to_what_it_was_derived_from(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    quiet = ada.remember("Ada asked for a quiet table at dinner.")
    early = ada.remember("Ada leaves parties before ten.")
    insight = ada.remember(
        "Ada seems to prefer calm evenings.", kind="insight", derived_from=[quiet.id, early.id]
    )
    assert insight.derived_from == (quiet.id, early.id)
    derived = {Link(kind="derived_from", target=one.id) for one in (quiet, early)}
    assert derived <= set(ada.links(insight.id))
    assert Link(kind="derived_from", target=insight.id, direction="in") in ada.links(quiet.id)
    assert ada.history(insight.id)[0].derived_from == (quiet.id, early.id)


def test_forget_takes_every_derived_insight_and_says_so(memory: Memory, keys_path: Path) -> None:
    ada = memory.acting_for("ada", agent="bot")
    source = ada.remember("Ada asked for a quiet table at dinner.")
    kept = ada.remember("Ada plays the cello.")
    insight = ada.remember("Ada likes calm places.", kind="insight", derived_from=[source.id])
    deeper = ada.remember(
        "Ada would enjoy a cello recital in a small hall.",
        kind="insight",
        derived_from=[insight.id, kept.id],
    )
    receipt = memory.person("ada").forget(source.id)
    claims = receipt.claims
    assert claims["memory_id"] == source.id
    assert set(claims["derived_ids"]) == {insight.id, deeper.id}
    assert {f"{source.id}.v1", f"{insight.id}.v1", f"{deeper.id}.v1"} <= set(claims["version_ids"])
    assert claims["link_keys"] and all(len(key) == 32 for key in claims["link_keys"])
    public = KeyStore.open(keys_path).export_public_pem()
    assert receipts.verify(receipt.token, public).claims == claims
    for gone in (source.id, insight.id, deeper.id):
        with pytest.raises(MemoryNotFound):
            ada.get(gone)
        # No stored byte names the forgotten memories: not a row, not a link, not a key.
        assert _mentions_anywhere(memory, gone) == []
    for key in claims["link_keys"]:
        assert _mentions_anywhere(memory, key) == []
    assert ada.get(kept.id).is_current
    assert all(link.target not in {source.id, insight.id, deeper.id} for link in ada.links(kept.id))


def test_an_approved_forget_request_cascades_too(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    source = ada.remember("Ada asked for a quiet table at dinner.")
    insight = ada.remember("Ada likes calm places.", kind="insight", derived_from=[source.id])
    request = ada.forget(source.id)
    receipt = memory.person("ada").approve(request.id)
    assert receipt.claims["derived_ids"] == [insight.id]
    with pytest.raises(MemoryNotFound):
        ada.get(insight.id)


def test_derived_from_names_only_memories_the_handle_sees(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    bob_memory = memory.acting_for("bob", agent="bot").remember("Bob is a chef.")
    with pytest.raises(MemoryNotFound):
        ada.remember("An insight.", kind="insight", derived_from=[bob_memory.id])
    with pytest.raises(MemoryNotFound):
        ada.remember("An insight.", kind="insight", derived_from=["mem_" + "a" * 26])
    with pytest.raises(InvalidInputError):
        ada.remember("An insight.", kind="insight", derived_from="mem_x")  # type: ignore[arg-type]
    personal = ada.remember("Ada is vegetarian.")
    with pytest.raises(ScopeError):
        ada.remember("Guests like vegetarian food.", about="tenant", derived_from=[personal.id])
    assert len(memory.person("ada").list().items) == 1  # nothing else was stored


def test_a_shared_insight_may_come_from_shared_memory(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    menu = ada.remember("The kitchen closes at ten.", about="tenant")
    insight = ada.remember(
        "Late guests need a heads-up.", about="tenant", kind="insight", derived_from=[menu.id]
    )
    assert Link(kind="derived_from", target=menu.id) in ada.links(insight.id)


def test_erase_removes_every_link_and_entity_of_the_person(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    dog = ada.remember("Ada has a beagle called Rex.")
    fear = ada.remember("Rex is scared of thunderstorms.")
    insight = ada.remember("Rex needs a calm home.", kind="insight", derived_from=[dog.id])
    entities = ada.entities()
    assert entities
    bob = memory.acting_for("bob", agent="bot")
    bob_dog = bob.remember("Bob has a poodle called Fifi.")
    receipt = memory.privacy.erase("ada")
    assert {dog.id, fear.id, insight.id} <= set(receipt.claims["memory_ids"])
    for gone in (dog.id, fear.id, insight.id, *(entity.id for entity in entities)):
        assert _mentions_anywhere(memory, gone) == []
    assert bob.get(bob_dog.id).is_current  # another person's links stay
    assert any(link.kind == "mentions" for link in bob.links(bob_dog.id))


def test_links_of_a_memory_not_seen_is_not_found(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    bob_memory = memory.acting_for("bob", agent="bot").remember("Bob is a chef.")
    with pytest.raises(MemoryNotFound):
        ada.links(bob_memory.id)


def test_no_relations_capability_is_a_clear_error(tmp_path: Path) -> None:
    keys = KeyStore.create(tmp_path / "keys")
    with Memory(DictDriver(), keys, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first = ada.remember("Ada is allergic to penicillin.")
        # Formation still decides; a contradiction is a new memory, just not linked.
        other = ada.remember("Ada is not allergic to penicillin.")
        assert other.formation is not None and other.formation.outcome == "contradiction"
        assert other.id != first.id
        for call in (
            lambda: ada.links(first.id),
            lambda: ada.entities(),
            lambda: ada.recall("penicillin", entity="Ada"),
            lambda: ada.remember("An insight.", kind="insight", derived_from=[first.id]),
        ):
            with pytest.raises(MemoryCapabilityError) as refused:
                call()
            assert refused.value.capability == "relations"
        assert len(memory.person("ada").list().items) == 2


def test_the_driver_sees_which_ids_are_linked_never_how(memory: Memory) -> None:
    ada = memory.acting_for("ada", agent="bot")
    source = ada.remember("Ada is allergic to penicillin, says Dr Okafor.")
    ada.remember("Ada is not allergic to penicillin.")
    ada.remember("Ada reacts badly to some drugs.", kind="insight", derived_from=[source.id])
    assert any(link.kind == "mentions" for link in ada.links(source.id))
    for _, data in memory.driver.raw_dump():
        for word in (b"derived_from", b"contradicts", b"mentions", b"related", b"Okafor"):
            assert word not in data


def test_an_insight_keeps_its_sources_labels_and_age_so_retention_takes_it_too(
    store_url: str, keys_path: Path
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Memory.open(
        store_url,
        keys=keys_path,
        app="app",
        clock=lambda: now[0],
        retention={"health": timedelta(days=30)},
        formation=False,
    ) as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        first = bot.remember("Ada had a migraine on Monday.", kind="event", labels=["health"])
        now[0] = datetime(2026, 1, 20, tzinfo=UTC)
        second = bot.remember("Ada had another migraine.", kind="event")
        insight = bot.remember(
            "Ada gets migraines.", kind="insight", derived_from=[first.id, second.id]
        )
        assert set(insight.labels) == {"personal", "health"}
        assert insight.created_at == first.created_at  # its oldest source's
        now[0] = datetime(2026, 2, 5, tzinfo=UTC)  # the health memory is 35 days old
        erased = {receipt.claims["memory_id"] for receipt in memory.enforce_retention()}
        assert erased == {first.id, insight.id}
        assert [record.id for record in bot.list().items] == [second.id]


def test_an_insight_of_many_labelled_sources_keeps_those_with_a_retention(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(
        store_url, keys=keys_path, app="app", retention={"health": timedelta(days=30)},
        formation=False,
    ) as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        first = bot.remember("Ada had a migraine.", labels=[f"a{n}" for n in range(16)])
        second = bot.remember("Ada had another migraine.", labels=["b0", "health"])
        insight = bot.remember("Ada gets migraines.", kind="insight", labels=["personal"],
                               derived_from=[first.id, second.id])
        assert len(insight.labels) == 16 and {"personal", "health"} <= set(insight.labels)
        memory.privacy.set_guardian("tim", guardian="ana")
        memory.privacy.record_consent("tim", guardian="ana")
        tutor = memory.acting_for("tim", agent="tutor")
        said = tutor.remember("Tim likes dinosaurs.")
        derived = tutor.remember("Tim loves prehistory.", kind="insight", derived_from=[said.id])
        assert derived.labels.count("child") == 1
