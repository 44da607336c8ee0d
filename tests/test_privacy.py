"""Privacy (issue 6): provable erasure, backups, export, retention, children, procedures."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _postgres import TestPostgres

from mainsdk_memory import (
    BundleError,
    ConsentRequiredError,
    InvalidInputError,
    Memory,
    MemoryNotFound,
    Source,
    Trust,
    receipts,
    tenant,
)
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.injection import ClassifierDetector
from mainsdk_memory.keys import KeyStore

BIN = Path(sys.executable).parent


@pytest.fixture
def acme_memory(memory: Memory) -> Iterator[Memory]:
    with tenant.use("acme"):
        yield memory


def _fill(memory: Memory) -> dict[str, list[str]]:
    """Ada's memories from two agents and the person, quarantined, revised; Bob's; shared."""
    bot = memory.acting_for("ada", agent="bot", session="s1")
    other = memory.acting_for("ada", agent="other", session="s2")
    ids = {"ada": [], "bob": [], "tenant": []}
    first = bot.remember("Ada's pharmacy is on Rua Augusta.")
    bot.revise(first.id, "Ada's pharmacy moved to Rua Garrett.")
    ids["ada"] += [first.id,
                   other.remember("Ada's son plays oboe.", session_only=True).id,
                   bot.remember("Ada pays rent on the 5th.",
                                source=Source.web("https://bank.test")).id,
                   memory.person("ada").remember("I prefer calls after 6pm.").id]
    ids["bob"].append(memory.acting_for("bob", agent="bot").remember("Bob's pharmacy: Baixa.").id)
    ids["tenant"].append(bot.remember("Pharmacy partners get 5% off.", about="tenant",
                                      labels=["none"], kind="procedure").id)
    return ids


def test_erase_removes_everything_about_the_person_and_destroys_the_key(
    acme_memory: Memory, keys_path: Path
) -> None:
    memory = acme_memory
    ids = _fill(memory)
    request = memory.acting_for("ada", agent="bot", session="s1").forget(ids["ada"][0])
    key_files_before = {p: p.read_bytes() for p in keys_path.rglob("*.json")}
    receipt = memory.privacy.erase("ada")
    claims = receipts.verify(receipt.token, KeyStore.open(keys_path).export_public_pem()).claims
    assert (claims["op"], claims["about"], claims["key"], claims["erase"], claims["copies"]) == (
        "erase", "ada", "destroyed", "hard", "unopenable"
    )
    assert sorted(claims["memory_ids"]) == sorted(ids["ada"])
    assert len(claims["version_ids"]) == 5  # one memory had two versions
    ada = memory.person("ada")
    assert [r.id for r in ada.list().items] == ids["tenant"]  # only the shared memory is left
    assert ada.pending() == []
    with pytest.raises(MemoryNotFound):
        memory.person("ada").approve(request.id)
    # Nothing of Ada remains in any byte the driver stores...
    dump = b"".join(blob for _, blob in memory.driver.raw_dump())
    for memory_id in ids["ada"]:
        assert memory_id.encode() not in dump
    # ...and her wrapped key is in no file of the key store any more.
    removed = [blob for path, blob in key_files_before.items() if not path.exists()]
    assert len(removed) == 1
    wrapped = base64.b64decode(json.loads(removed[0])["wrapped"])
    for path in keys_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert wrapped not in data and base64.b64encode(wrapped) not in data
    # Bob and the shared memory are untouched.
    assert memory.acting_for("bob", agent="bot").get(ids["bob"][0]).text == "Bob's pharmacy: Baixa."
    assert memory.person("bob").get(ids["tenant"][0]).kind.value == "procedure"
    again = memory.privacy.erase("ada")
    assert again.claims["key"] == "absent" and again.claims["memory_ids"] == []


def _backup(store_url: str, tmp_path: Path) -> Path:
    """A copy of the store as a backup would hold it (local folder or SQLite file)."""
    source = Path(store_url.split(":", 1)[1].removeprefix("///"))
    target = tmp_path / "backup"
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.mkdir()
        for path in source.parent.glob(source.name + "*"):
            shutil.copy2(path, target / path.name)
    return target


def _restore(backup: Path, store_url: str) -> None:
    live = Path(store_url.split(":", 1)[1].removeprefix("///"))
    if live.is_dir():
        shutil.rmtree(live)
        shutil.copytree(backup, live)
    else:
        for path in live.parent.glob(live.name + "*"):
            path.unlink()
        for path in backup.iterdir():
            shutil.copy2(path, live.parent / path.name)


@pytest.mark.parametrize("store_url", ["local", "sqlite"], indirect=True)
def test_a_backup_taken_before_the_erase_cannot_be_read(
    store_url: str, keys_path: Path, tmp_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ids = _fill(memory)
    backup = _backup(store_url, tmp_path)
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        memory.privacy.erase("ada")
    _restore(backup, store_url)  # the old copy comes back next to the live key store
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada_bot = memory.acting_for("ada", agent="bot", session="s1")
        assert ada_bot.recall("rent Augusta Garrett oboe calls") == []  # nothing searchable
        # Since the erase Ada is named by a fresh pseudonym (ADR 0039): the restored rows are
        # not hers any more, and nothing opens them (tests/test_erase_everywhere.py).
        for memory_id in ids["ada"]:
            with pytest.raises(MemoryNotFound):
                memory.person("ada").get(memory_id)
        assert [r.id for r in memory.person("ada").list().items] == ids["tenant"]
        # Everyone else in the restored copy still opens.
        assert memory.acting_for("bob", agent="bot").get(ids["bob"][0]).text.startswith("Bob")
        shared = memory.acting_for("bob", agent="bot").recall("pharmacy partners")
        assert {hit.record.id for hit in shared} == {ids["tenant"][0], ids["bob"][0]}
        # Running the erase again removes the restored rows of her life before it.
        assert sorted(memory.privacy.erase("ada").memory_ids) == sorted(ids["ada"])


ERASER = textwrap.dedent(
    """
    import sys
    from mainsdk_memory import Memory, tenant
    with Memory.open("local:" + sys.argv[1], keys=sys.argv[2], app="app") as memory, \\
            tenant.use("acme"):
        memory.privacy.erase("ada")
    """
)


def test_an_interrupted_erase_finishes_when_run_again(tmp_path: Path, keys_path: Path) -> None:
    store = tmp_path / "store"
    with Memory.open(f"local:{store}", keys=keys_path, app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        for i in range(200):  # as they are: this tests the erase, not formation
            bot.remember(f"Ada diary line {i}.", formation=False)
    files = lambda: len(list(store.rglob("mem_*.json")))  # noqa: E731
    assert files() == 200
    for _attempt in range(5):  # kill it part way; retry if it was too fast or too slow
        proc = subprocess.Popen(
            [sys.executable, "-c", ERASER, str(store), str(keys_path)]
        )
        deadline = time.monotonic() + 60
        while files() > 150 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.kill()
        proc.wait()
        if 0 < files() < 200:
            break
    left = files()
    assert 0 < left < 200, "the erase was not caught part way"
    with Memory.open(f"local:{store}", keys=keys_path, app="app") as memory, tenant.use("acme"):
        assert len(memory.person("ada").list(limit=100).items) > 0  # her key still opens them
        receipt = memory.privacy.erase("ada")
        assert len(receipt.memory_ids) == left and receipt.claims["key"] == "destroyed"
        assert files() == 0
        assert memory.privacy.erase("ada").claims["key"] == "absent"


def test_every_receipt_goes_to_the_append_only_log(acme_memory: Memory, keys_path: Path) -> None:
    memory = acme_memory
    bot = memory.acting_for("ada", agent="bot")
    one = memory.person("ada").forget(bot.remember("Ada note one.").id)
    two = memory.person("ada").approve(bot.forget(bot.remember("Ada note two.").id).id)
    three = memory.privacy.erase("ada")
    logged = memory.privacy.receipts()
    assert [r.id for r in logged] == [one.id, two.id, three.id]
    pem = KeyStore.open(keys_path).export_public_pem()
    assert [receipts.verify(r.token, pem).op for r in logged] == ["forget", "forget", "erase"]
    dump = json.dumps([dict(r.claims) for r in logged])
    assert "note" not in dump.lower()


def test_export_holds_every_version_source_and_trust(acme_memory: Memory) -> None:
    memory = acme_memory
    ids = _fill(memory)
    sink = MemorySink()
    memory.audit = sink
    document = memory.privacy.export("ada")
    assert document["format"] == "mainsdk-memory-export/2" and document["person"] == "ada"
    assert sorted(m["id"] for m in document["memories"]) == sorted(ids["ada"])
    revised = next(m for m in document["memories"] if m["id"] == ids["ada"][0])
    assert [v["text"] for v in revised["versions"]] == [
        "Ada's pharmacy is on Rua Augusta.", "Ada's pharmacy moved to Rua Garrett."
    ]
    assert revised["versions"][0]["valid_to"] == revised["versions"][1]["valid_from"]
    web = next(m for m in document["memories"] if m["id"] == ids["ada"][2])
    assert web["versions"][0]["trust"] == "untrusted"
    assert web["versions"][0]["source"]["id"] == "https://bank.test"
    assert json.loads(json.dumps(document)) == document  # plain JSON
    assert "Bob" not in json.dumps(document)
    assert [(e.operation, e.outcome) for e in sink.events] == [("export", "ok")]
    assert "pharmacy" not in json.dumps(sink.events[0].to_dict())


def test_retention_hides_at_once_and_the_sweep_erases_with_receipts(
    store_url: str, keys_path: Path
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: now[0],
                     retention={"personal": timedelta(days=30)}) as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        # Stored as they are: this tests retention, not formation (which would make the new
        # door code the old one's next version, one memory instead of two).
        old = bot.remember("Ada's temporary door code is 1234.", formation=False)
        lasting = bot.remember("Ada's company is Lumen.", labels=["work"], formation=False)
        now[0] += timedelta(days=20)
        fresh = bot.remember("Ada's new door code is 9876.", formation=False)
        now[0] += timedelta(days=11)  # old is 31 days old, fresh 11
        assert [h.record.id for h in bot.recall("door code")] == [fresh.id]
        with pytest.raises(MemoryNotFound):
            bot.get(old.id)
        assert old.id not in {r.id for r in memory.person("ada").list().items}
        assert old.id in {m["id"] for m in memory.privacy.export("ada")["memories"]}
        issued = memory.enforce_retention()
        assert [(r.op, r.memory_id, r.claims["label"]) for r in issued] == [
            ("retention", old.id, "personal")
        ]
        assert old.id not in {m["id"] for m in memory.privacy.export("ada")["memories"]}
        assert bot.get(lasting.id).text == "Ada's company is Lumen."
        assert memory.enforce_retention() == []
        assert [r.id for r in memory.privacy.receipts()] == [issued[0].id]


def test_children_need_consent_get_90_days_and_no_model(store_url: str, keys_path: Path) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    calls: list[str] = []

    def classify(text: str) -> float:
        calls.append(text)
        return 0.0

    with Memory.open(store_url, keys=keys_path, app="app", clock=lambda: now[0],
                     retention={"personal": timedelta(days=365)},
                     detector=ClassifierDetector(classify)) as memory, tenant.use("acme"):
        memory.privacy.set_guardian("tim", guardian="ana")
        tim = memory.acting_for("tim", agent="tutor")
        with pytest.raises(ConsentRequiredError):
            tim.remember("Tim likes dinosaurs.")
        assert memory.person("tim").list().items == []  # nothing was stored
        with pytest.raises(InvalidInputError, match="guardian"):
            memory.privacy.record_consent("tim", guardian="mallory")
        memory.privacy.record_consent("tim", guardian="ana")
        record = tim.remember("Tim likes dinosaurs.")
        assert "child" in record.labels
        assert calls == []  # no model classifier touched the child's memory
        tim.recall("dinosaurs")
        assert calls == []
        memory.acting_for("ana", agent="tutor").remember("Ana teaches maths.")
        assert calls == ["Ana teaches maths."]  # adults still get the configured check
        now[0] += timedelta(days=91)
        assert tim.recall("dinosaurs") == []  # capped at 90 days despite 365 configured
        assert [r.memory_id for r in memory.enforce_retention()] == [record.id]


@pytest.fixture
def two_apps(store_url: str, keys_path: Path) -> Iterator[tuple[Memory, Memory]]:
    with Memory.open(store_url, keys=keys_path, app="helpdesk") as source, \
            Memory.open(store_url, keys=keys_path, app="billing") as target, \
            tenant.use("acme"):
        yield source, target


def test_procedures_move_between_apps_quarantined(two_apps: tuple[Memory, Memory]) -> None:
    source, target = two_apps
    bot = source.acting_for("ada", agent="bot")
    how = bot.remember("To reset a password, send the link from the admin page.",
                       kind="procedure", about="tenant", labels=["none"])
    personal = bot.remember("Ada resets her password monthly.", kind="procedure")
    with pytest.raises(BundleError):
        source.privacy.export_procedures([how.id, personal.id])  # refused whole
    bundle = source.privacy.export_procedures()
    imported = target.privacy.import_procedures(bundle, agent="billing-bot")
    assert [(r.text, r.trust, r.kind.value, r.labels) for r in imported] == [
        (how.text, Trust.UNTRUSTED, "procedure", ("none",))
    ]
    billing = target.acting_for("bob", agent="billing-bot", session="s9")
    assert billing.recall("reset password") == []  # quarantined until the app confirms
    with pytest.raises(MemoryNotFound):
        target.person("bob").confirm(imported[0].id)  # shared: no person confirms it
    target.confirm_shared(imported[0].id)
    assert [h.record.id for h in billing.recall("reset password")] == [imported[0].id]
    assert source.acting_for("ada", agent="bot").recall("reset password link")  # still home


def test_forged_tampered_or_foreign_bundles_are_refused(
    two_apps: tuple[Memory, Memory], tmp_path: Path
) -> None:
    source, target = two_apps
    source.acting_for("ada", agent="bot").remember(
        "To refund, open the order and press refund.", kind="procedure", about="tenant",
        labels=["none"])
    bundle = source.privacy.export_procedures()
    header, payload, signature = bundle.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["items"].append({"text": "Ada's card ends 4242.", "kind": "fact",
                            "labels": ["personal"]})
    forged_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(BundleError):
        target.privacy.import_procedures(f"{header}.{forged_payload}.{signature}", agent="b")
    other = KeyStore.create(tmp_path / "other-keys")
    with pytest.raises(BundleError):
        target.privacy.import_procedures(bundle, agent="b", public_key=other.export_public_pem())
    with tenant.use("globex"), pytest.raises(BundleError, match="another tenant"):
        target.privacy.import_procedures(bundle, agent="b")
    assert target.person("ada").list().items == []  # nothing was imported by any attempt


def _memory_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "memory"), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_privacy_commands(tmp_path: Path, keys_path: Path) -> None:
    store = f"local:{tmp_path / 'store'}"
    with Memory.open(store, keys=keys_path, app="app") as memory, tenant.use("acme"):
        memory.acting_for("ada", agent="bot").remember("Ada's locker is 12.")
    common = ["--store", store, "--keys", str(keys_path), "--app", "app", "--tenant", "acme"]
    exported = _memory_cli("export", *common, "--person", "ada", "--out", str(tmp_path / "x.json"))
    assert exported.returncode == 0, exported.stderr
    assert json.loads((tmp_path / "x.json").read_text())["memories"][0]["versions"][0][
        "text"] == "Ada's locker is 12."
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o600  # it holds plaintext
    erased = _memory_cli("erase", *common, "--person", "ada",
                         "--receipt", str(tmp_path / "r.jws"))
    assert erased.returncode == 0 and "key destroyed" in erased.stdout
    pem = tmp_path / "pub.pem"
    pem.write_bytes(KeyStore.open(keys_path).export_public_pem())
    verified = subprocess.run(
        [str(BIN / "memory-receipt"), "verify", str(tmp_path / "r.jws"), "--key", str(pem)],
        capture_output=True, text=True, timeout=60, check=False)
    assert verified.returncode == 0 and '"op": "erase"' in verified.stdout
    listed = _memory_cli("receipts", *common)
    assert [r["claims"]["op"] for r in json.loads(listed.stdout)] == ["erase"]
    swept = _memory_cli("retention", *common, "--retain", "personal=30")
    assert swept.returncode == 0 and "erased 0 expired memories" in swept.stdout
    bad = _memory_cli("retention", *common, "--retain", "personal")
    assert bad.returncode == 2


def _pg_tool(name: str) -> str:
    import pgserver

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1].split("?")[0]


def test_a_pg_dump_taken_before_the_erase_cannot_be_read(
    postgres: TestPostgres, keys_path: Path, tmp_path: Path
) -> None:
    """The PostgreSQL backup: pg_dump before the erase, restored into a fresh database."""
    server = postgres
    live = server.new_database()
    with Memory.open(live, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ids = _fill(memory)
    dump = tmp_path / "before-erase.dump"
    subprocess.run(
        [_pg_tool("pg_dump"), "--format=custom", f"--file={dump}",
         server.conninfo(_database(live))],
        check=True, capture_output=True, timeout=120,
    )
    with Memory.open(live, keys=keys_path, app="app") as memory, tenant.use("acme"):
        memory.privacy.erase("ada")
    restored = server.new_database(schema=False)
    subprocess.run(
        [_pg_tool("pg_restore"), "--exit-on-error",
         f"--dbname={server.conninfo(_database(restored))}",
         str(dump)],
        check=True, capture_output=True, timeout=120,
    )
    with Memory.open(restored, keys=keys_path, app="app") as memory, tenant.use("acme"):
        assert memory.acting_for("ada", agent="bot", session="s1").recall(
            "rent Augusta Garrett oboe calls") == []
        for memory_id in ids["ada"]:  # not hers since the erase (a fresh pseudonym, ADR 0039)
            with pytest.raises(MemoryNotFound):
                memory.person("ada").get(memory_id)
        assert memory.acting_for("bob", agent="bot").get(ids["bob"][0]).text.startswith("Bob")
        assert sorted(memory.privacy.erase("ada").memory_ids) == sorted(ids["ada"])
