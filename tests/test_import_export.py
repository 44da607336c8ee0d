"""Import of a person's signed export (issue 18): history, trust and quarantine kept, across
drivers, apps and key stores; every refusal changes nothing; the ``memory import`` command."""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from mainsdk_memory import (
    InvalidInputError,
    Memory,
    MemoryNotFound,
    MemoryRecord,
    Source,
    Trust,
    tenant,
)
from mainsdk_memory._cli_import import add_import_command
from mainsdk_memory._errors import ExportError  # also mainsdk_memory.ExportError
from mainsdk_memory._importing import sign_export
from mainsdk_memory._memory import services_of
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.keys import KeyStore

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Residence(BaseModel):
    """A typed fact with a key: a new city is the next version."""

    fact_key: ClassVar[tuple[str, ...]] = ("person", "attribute")

    person: str
    attribute: str
    city: str


class Clock:
    """A clock the test moves (versions get distinct, known times)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def tick(self, days: int = 1) -> datetime:
        self.now += timedelta(days=days)
        return self.now


def _fill(memory: Memory, clock: Clock) -> dict[str, str]:
    """Ada's memories: revised, quarantined, keyed with metadata, typed, retracted, pinned,
    confirmed by her; a pending forget request; uses and feedback; Bob's, and a shared one."""
    bot = memory.acting_for("ada", agent="bot", session="s1")
    ids: dict[str, str] = {}
    first = bot.remember("Ada's pharmacy is on Rua Augusta.")
    ids["revised"] = first.id
    clock.tick()
    bot.revise(first.id, "Ada's pharmacy moved to Rua Garrett.")
    clock.tick()
    ids["web"] = bot.remember("Ada pays rent on the 5th.",
                              source=Source.web("https://bank.test")).id
    ids["keyed"] = bot.remember("Ada drinks green tea.", key="drink",
                                metadata={"topic": "food", "level": 2}).id
    ids["typed"] = bot.remember(
        "Ada lives in Lisbon.", data=Residence(person="ada", attribute="home", city="Lisbon")
    ).id
    clock.tick()
    ids["retracted"] = bot.remember("Ada's locker code is 4411.", formation=False).id
    clock.tick()
    bot.retract(ids["retracted"])
    ids["pinned"] = bot.remember("Ada is allergic to penicillin.", pinned=True).id
    ids["own"] = memory.person("ada").remember("I prefer calls after 6pm.").id
    ids["request"] = bot.forget(ids["pinned"]).id
    assert bot.recall("pharmacy")  # a use
    bot.feedback(ids["revised"], 1)
    memory.acting_for("bob", agent="bot").remember("Bob's pharmacy is in Baixa.")
    bot.remember("Pharmacy partners get 5% off.", about="tenant", labels=["none"],
                 kind="procedure")
    clock.tick()
    return ids


def _view(records: list[MemoryRecord]) -> list[dict[str, Any]]:
    """Records as an app sees them, without the app they live in."""
    return [
        {**record.model_dump(mode="json"),
         "scope": record.scope.model_dump(mode="json", exclude={"app"})}
        for record in records
    ]


def _snapshot(*folders: Path) -> dict[str, bytes]:
    """Every byte of the folders' files (SQLite's shared-memory index aside: a read moves
    its read marks, and it holds no data)."""
    return {
        str(path): path.read_bytes()
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith("-shm")
    }


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _open(url: str, keys: Path, app: str, clock: Clock, **options: Any) -> Memory:
    return Memory.open(url, keys=keys, app=app, clock=clock, schemas=[Residence], **options)


def _check_round_trip(source: Memory, target: Memory, ids: dict[str, str],
                      document: dict[str, Any], public_key: object) -> None:
    seen: list[tuple[int, int]] = []
    report = target.privacy.import_export(
        json.loads(json.dumps(document)), public_key=public_key,
        progress=lambda done, total: seen.append((done, total)),
    )
    exported = [memory["id"] for memory in document["memories"]]
    assert list(report.memory_ids) == exported and report.person == "ada"
    assert sorted(exported) == sorted(ids[name] for name in ids if name != "request")
    assert report.versions == sum(len(m["versions"]) for m in document["memories"])
    assert seen == [(n, len(exported)) for n in range(1, len(exported) + 1)]
    assert (report.forget_requests, report.already_imported) == (1, False)
    assert report.signals >= 1
    # Every version, in order, with its dates, trust, source, author, key and metadata.
    before, after = source.person("ada"), target.person("ada")
    for memory_id in exported:
        assert _view(after.history(memory_id)) == _view(before.history(memory_id))
    # Answers as of any time are the same (the source's shared memory aside: not Ada's).
    for when in (START + timedelta(hours=1), START + timedelta(days=1, hours=1),
                 START + timedelta(days=3, hours=1), START + timedelta(days=9)):
        assert [(h.record.id, h.record.version)
                for h in after.recall("pharmacy locker", as_of=when)] == [
            (h.record.id, h.record.version)
            for h in before.recall("pharmacy locker", as_of=when)
            if h.record.scope.about == "ada"
        ]
    bot = target.acting_for("ada", agent="bot", session="s1")
    assert bot.get(key="drink").id == ids["keyed"]
    assert [h.record.id for h in bot.recall("tea", where={"topic": "food"})] == [ids["keyed"]]
    assert bot.get(ids["typed"]).data == Residence(person="ada", attribute="home",
                                                   city="Lisbon")
    assert bot.get(ids["pinned"]).pinned
    with pytest.raises(MemoryNotFound):
        bot.get(ids["retracted"])  # retracted there, retracted here
    # Quarantine: the web memory is untrusted, seen by its own session and the person only.
    web = bot.get(ids["web"])
    assert web.trust is Trust.UNTRUSTED and web.quarantined
    for other in (target.acting_for("ada", agent="other"),
                  target.acting_for("ada", agent="bot", session="s2")):
        assert ids["web"] not in [h.record.id for h in other.recall("rent 5th", top_k=20)]
        with pytest.raises(MemoryNotFound):
            other.get(ids["web"])
    assert after.get(ids["own"]).trust is Trust.CONFIRMED
    # The pending forget request is the person's to answer here.
    assert [(r.id, r.memory_id) for r in after.pending()] == [(ids["request"], ids["pinned"])]
    # Nothing of Bob's or the shared memory came.
    assert target.acting_for("bob", agent="bot").recall("pharmacy") == []
    assert [h.record.id for h in bot.recall("partners 5% off")] == [] or all(
        h.record.scope.about == "ada" for h in bot.recall("partners 5% off")
    )


def test_local_to_sqlite_with_another_key_store(tmp_path: Path, clock: Clock) -> None:
    KeyStore.create(tmp_path / "k1")
    KeyStore.create(tmp_path / "k2")
    with _open(f"local:{tmp_path / 'store'}", tmp_path / "k1", "helpdesk", clock) as source, \
            _open(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "k2", "helpdesk",
                  clock) as target, tenant.use("acme"):
        ids = _fill(source, clock)
        document = source.privacy.export("ada")
        jwks = KeyStore.open(tmp_path / "k1").export_public_jwks()
        _check_round_trip(source, target, ids, document, jwks)


def test_sqlite_to_local(tmp_path: Path, clock: Clock) -> None:
    KeyStore.create(tmp_path / "k1")
    KeyStore.create(tmp_path / "k2")
    with _open(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "k1", "a", clock) as source, \
            _open(f"local:{tmp_path / 'store'}", tmp_path / "k2", "a", clock) as target, \
            tenant.use("acme"):
        ids = _fill(source, clock)
        document = source.privacy.export("ada")
        pem = KeyStore.open(tmp_path / "k1").export_public_pem()
        _check_round_trip(source, target, ids, document, pem)


def test_into_another_app_of_the_same_store_then_again(
    store_url: str, keys_path: Path, clock: Clock
) -> None:
    """Every driver; the project's own key set by default; a second import writes nothing."""
    sink = MemorySink()
    with _open(store_url, keys_path, "helpdesk", clock) as source, \
            _open(store_url, keys_path, "billing", clock, audit=sink) as target, \
            tenant.use("acme"):
        ids = _fill(source, clock)
        document = source.privacy.export("ada")
        _check_round_trip(source, target, ids, document, None)
        assert [(e.operation, e.outcome) for e in sink.events if e.operation == "import"] == [
            ("import", "ok")
        ]
        event = next(e for e in sink.events if e.operation == "import")
        assert sorted(event.memory_ids) == sorted(m["id"] for m in document["memories"])
        dumped = json.dumps(event.to_dict())
        assert "pharmacy" not in dumped.lower() and "drink" not in dumped
        # Again: nothing is written, even of what was forgotten meanwhile.
        target.person("ada").forget(ids["keyed"])
        again = target.privacy.import_export(document)
        assert again.already_imported and again.memory_ids == ()
        with pytest.raises(MemoryNotFound):
            target.person("ada").get(ids["keyed"])


def test_refusals_change_nothing(tmp_path: Path, clock: Clock) -> None:
    KeyStore.create(tmp_path / "k1")
    KeyStore.create(tmp_path / "other")
    with _open(f"local:{tmp_path / 'store'}", tmp_path / "k1", "helpdesk", clock) as source, \
            _open(f"local:{tmp_path / 'stranger'}", tmp_path / "other", "helpdesk",
                  clock) as stranger, \
            _open(f"local:{tmp_path / 'target'}", tmp_path / "k1", "billing", clock) as target:
        with tenant.use("acme"):
            _fill(source, clock)
            document = source.privacy.export("ada")
            stranger.acting_for("ada", agent="bot").remember("Ada's pharmacy is far.")
            foreign_key = stranger.privacy.export("ada")
        with tenant.use("globex"):
            source.acting_for("ada", agent="bot").remember("Ada works at Globex.")
            other_tenant = source.privacy.export("ada")
        with tenant.use("acme"):
            target.acting_for("ada", agent="bot").remember("Ada's dentist is Dr Lima.")
            target.person("ada").list()  # every file a read opens exists now

        def changed(path: list[Any], value: Any) -> dict[str, Any]:
            edited = copy.deepcopy(document)
            here: Any = edited
            for step in path[:-1]:
                here = here[step]
            here[path[-1]] = value
            return edited

        text = document["memories"][0]["versions"][0]["text"]
        trust = document["memories"][0]["versions"][0]["trust"]
        signature = document["signature"]
        refused: list[object] = [
            changed(["memories", 0, "versions", 0, "text"], text[:-1] + "!"),
            changed(["memories", 0, "versions", 0, "trust"],
                    "untrusted" if trust != "untrusted" else "confirmed"),
            changed(["memories", 1, "labels"], ["work"]),
            changed(["exported_at"], document["exported_at"][:-1] + "1"),
            changed(["person"], "bob"),
            changed(["id"], document["id"][:-1] + ("0" if document["id"][-1] != "0" else "1")),
            changed(["signature"], signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")),
            changed(["format"], "mainsdk-memory-export/3"),
            changed(["format"], "mainsdk-memory-export/1"),
            {name: value for name, value in document.items() if name != "signature"},
            foreign_key,
            other_tenant,
            [document],
            json.dumps(document),
            None,
        ]
        folders = (tmp_path / "target", tmp_path / "k1")
        with tenant.use("acme"):
            before = _snapshot(*folders)
            for attempt in refused:
                with pytest.raises(ExportError) as caught:
                    target.privacy.import_export(attempt)  # type: ignore[arg-type]
                assert text not in str(caught.value)
                assert _snapshot(*folders) == before
            assert isinstance(caught.value, InvalidInputError)
            assert [r.text for r in target.person("ada").list().items] == [
                "Ada's dentist is Dr Lima."
            ]
            # A memory's id held here by someone else's memory: refused whole.
            target.privacy.import_export(document)
            before = _snapshot(*folders)
            with pytest.raises(ExportError, match="held here by other memories"):
                target.privacy.import_export(document, person="bob")
            assert _snapshot(*folders) == before
            assert target.person("bob").list().items == []


def test_an_export_made_before_an_erase_brings_nothing_back(
    store_url: str, keys_path: Path, clock: Clock
) -> None:
    """Into the app the export came from: the erase receipt is final."""
    with _open(store_url, keys_path, "app", clock) as memory, tenant.use("acme"):
        _fill(memory, clock)
        document = memory.privacy.export("ada")
        exported = tuple(m["id"] for m in document["memories"])
        same = memory.privacy.import_export(document)  # already here: nothing written
        assert same.memory_ids == () and len(same.skipped) == len(exported)
        assert same.forgotten == ()
        receipt = memory.privacy.erase("ada")
        assert set(exported) <= set(receipt.memory_ids)
        again = memory.privacy.import_export(document)
        assert (again.memory_ids, again.skipped, again.forgotten) == ((), (), exported)
        assert again.versions == again.forget_requests == again.signals == 0
        ada = memory.person("ada")
        assert [r.id for r in ada.list().items if r.scope.about == "ada"] == []
        for memory_id in exported:
            with pytest.raises(MemoryNotFound):
                ada.get(memory_id)
        bot = memory.acting_for("ada", agent="bot", session="s1")
        assert [h.record.id for h in bot.recall("pharmacy") if h.record.scope.about == "ada"] \
            == []
        assert ada.pending() == []


def test_a_forgotten_memory_is_never_imported_again(
    store_url: str, keys_path: Path, clock: Clock
) -> None:
    """Forgotten by the person's own handle, by an approved request, or swept by retention,
    after the export was made: the export brings back none of them; the rest imports."""
    sink = MemorySink()
    with _open(store_url, keys_path, "app", clock, audit=sink,
               retention={"personal": timedelta(days=365), "short": timedelta(days=7)}) \
            as memory, tenant.use("acme"):
        ada, bot = memory.person("ada"), memory.acting_for("ada", agent="bot")
        own = ada.remember("Ada's card number ends 4242.").id
        asked = bot.remember("Ada's locker is number 12.").id
        swept = bot.remember("Ada is in room 3 this week.", labels=["short"]).id
        kept = bot.remember("Ada prefers tea.").id
        document = memory.privacy.export("ada")
        assert ada.forget(own).claims["memory_id"] == own
        ada.approve(bot.forget(asked).id)
        clock.tick(8)
        assert [r.claims["memory_id"] for r in memory.enforce_retention()] == [swept]
        report = memory.privacy.import_export(document)
        assert sorted(report.forgotten) == sorted((own, asked, swept))
        assert report.memory_ids == () and report.skipped == (kept,)
        assert [r.id for r in ada.list().items] == [kept]
        for memory_id in (own, asked, swept):
            with pytest.raises(MemoryNotFound):
                ada.get(memory_id)
        event = [e for e in sink.events if e.operation == "import"][-1]
        assert dict(event.extra)["forgotten"] == "3"
        assert "4242" not in json.dumps(event.to_dict())
    # Into another app of the store, where nothing was forgotten, all of it comes.
    with _open(store_url, keys_path, "billing", clock) as billing, tenant.use("acme"):
        moved = billing.privacy.import_export(document)
        assert sorted(moved.memory_ids) == sorted((own, asked, swept, kept))
        assert moved.forgotten == ()


def test_import_caps_trust_at_what_the_source_earns(tmp_path: Path, clock: Clock) -> None:
    """A document re-signed with the source store's own key, claiming a tool's memory and an
    agent's memory confirmed, imports them untrusted (quarantined) and inferred."""
    KeyStore.create(tmp_path / "k")
    with _open(f"local:{tmp_path / 's'}", tmp_path / "k", "helpdesk", clock) as source, \
            _open(f"local:{tmp_path / 's'}", tmp_path / "k", "billing", clock) as target, \
            tenant.use("acme"):
        bot = source.acting_for("ada", agent="bot", session="s1")
        tool = bot.remember("Ada's balance is 120 EUR.", source=Source.tool("crm")).id
        agent = bot.remember("Ada likes window seats.").id
        strange = bot.remember("Ada's gate code is 0912.").id
        own = source.person("ada").remember("I am vegetarian.").id
        confirmed = bot.remember("Ada's dentist is Dr Lima.", source=Source.web("https://x.test"))
        source.person("ada").confirm(confirmed.id)  # a person's confirmation of a web memory
        forged = copy.deepcopy(source.privacy.export("ada"))
        claims = {tool: ("confirmed", "ada"), agent: ("confirmed", None),
                  strange: ("confirmed", "bob")}
        for memory in forged["memories"]:
            for version in memory["versions"]:
                if memory["id"] in claims:
                    version["trust"], version["confirmed_by"] = claims[memory["id"]]
        del forged["id"], forged["signature"]
        signed = sign_export(services_of(source), forged)  # a valid signature
        report = target.privacy.import_export(signed)
        assert sorted(report.memory_ids) == sorted((tool, agent, strange, own, confirmed.id))
        other = target.acting_for("ada", agent="other")
        seen = target.acting_for("ada", agent="bot", session="s1")
        came = seen.get(tool)
        assert (came.trust, came.quarantined, came.confirmed_by) == (Trust.UNTRUSTED, True, None)
        with pytest.raises(MemoryNotFound):
            other.get(tool)  # quarantined: not seen outside its session
        assert tool not in [h.record.id for h in other.recall("balance EUR", top_k=20)]
        for memory_id in (agent, strange):
            record = target.person("ada").get(memory_id)
            assert (record.trust, record.confirmed_by) == (Trust.INFERRED, None)
        # What the person said of themself stays confirmed; a confirmation of a web memory
        # does not travel: untrusted here until the person confirms it again.
        assert target.person("ada").get(own).trust is Trust.CONFIRMED
        history = target.person("ada").history(confirmed.id)
        assert [v.trust for v in history] == [Trust.UNTRUSTED, Trust.UNTRUSTED]
        assert target.person("ada").confirm(confirmed.id).trust is Trust.CONFIRMED


def test_a_childs_export_keeps_the_guardian_policy(tmp_path: Path, clock: Clock) -> None:
    KeyStore.create(tmp_path / "k")
    with _open(f"local:{tmp_path / 's'}", tmp_path / "k", "school", clock) as source, \
            _open(f"local:{tmp_path / 's'}", tmp_path / "k", "library", clock) as target, \
            tenant.use("acme"):
        source.privacy.set_guardian("tim", guardian="ana")
        source.privacy.record_consent("tim", guardian="ana")
        record = source.acting_for("tim", agent="tutor").remember("Tim likes dinosaurs.")
        report = target.privacy.import_export(source.privacy.export("tim"))
        assert report.guardian_policy and report.memory_ids == (record.id,)
        assert target.privacy.guardian_policy("tim") == source.privacy.guardian_policy("tim")
        assert "child" in target.person("tim").get(record.id).labels


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="memory")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


def test_the_import_command(tmp_path: Path, clock: Clock,
                            capsys: pytest.CaptureFixture[str]) -> None:
    KeyStore.create(tmp_path / "k1")
    KeyStore.create(tmp_path / "k2")
    with _open(f"local:{tmp_path / 'a'}", tmp_path / "k1", "helpdesk", clock) as source, \
            tenant.use("acme"):
        ids = _fill(source, clock)
        (tmp_path / "export.json").write_text(json.dumps(source.privacy.export("ada"),
                                                         indent=2))
    (tmp_path / "jwks.json").write_text(
        json.dumps(KeyStore.open(tmp_path / "k1").export_public_jwks())
    )
    common = ["import", "--store", f"sqlite:///{tmp_path / 'b.db'}", "--keys",
              str(tmp_path / "k2"), "--app", "helpdesk", "--tenant", "acme",
              "--from", str(tmp_path / "export.json")]
    with pytest.raises(ExportError):  # k2's own key did not sign it
        _cli(common)
    assert _cli([*common, "--public-key", str(tmp_path / "jwks.json")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["memories"] == len(summary["memory_ids"]) == len(ids) - 1
    assert summary["already_imported"] is False and summary["forget_requests"] == 1
    assert _cli([*common, "--public-key", str(tmp_path / "jwks.json")]) == 0
    assert json.loads(capsys.readouterr().out)["already_imported"] is True
    with Memory.open(f"sqlite:///{tmp_path / 'b.db'}", keys=tmp_path / "k2",
                     app="helpdesk") as target, tenant.use("acme"):
        assert target.acting_for("ada", agent="bot", session="s1").get(key="drink").id == (
            ids["keyed"]
        )
