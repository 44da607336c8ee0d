"""Erase reaches every open instance (issue 13 item 1, ADR 0039).

A ``Memory`` opened before an erase — a second one in this process, or one in another
process — that had read the person's keys must stop using them at once: it opens nothing of
a backup restored in place, and what it writes afterwards is sealed under the person's fresh
key and named by their fresh pseudonym. Every test runs on every driver where a store is
involved. A "backup restored in place" puts the person's stored rows back through the driver,
byte for byte, which is what a restore of the store's files or database does to the rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mainsdk_memory import (
    ConsentRequiredError,
    KeyStoreError,
    Memory,
    MemoryNotFound,
    SealError,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory._sealing import open_record
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow
from mainsdk_memory.keys import KeyStore


@pytest.fixture
def two(store_url: str, keys_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """Two Memory instances on one store and key store, in this process, inside tenant acme."""
    with (
        Memory.open(store_url, keys=keys_path, app="app") as first,
        Memory.open(store_url, keys=keys_path, app="app") as second,
        tenant.use("acme"),
    ):
        yield first, second


def _pseudonym(memory: Memory, person: str) -> str:
    return caller_of(memory.person(person)).pseudonym()


def _rows(memory: Memory, subject: str) -> list[StoredRow]:
    """Every current row the store holds under ``subject`` (a pseudonym), any session."""
    where = Filter(tenant="acme", app="app", subjects=(subject,), any_session=True)
    return memory.driver.list(where, limit=1000)


def _restore(memory: Memory, rows: list[StoredRow]) -> None:
    """Put ``rows`` back exactly as they were stored (a backup restored in place)."""
    for row in rows:
        memory.driver.put(row)


def _key_files(keys_path: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(keys_path)): path.read_bytes()
        for path in sorted(keys_path.rglob("*"))
        # Not the locks, nor the anchors' "-shm" (SQLite's index of its log, rewritten by
        # readers; it holds no data).
        if path.is_file() and not path.name.endswith((".lock", "-shm"))
    }


def test_a_second_memory_opens_nothing_of_a_backup_restored_after_the_erase(
    two: tuple[Memory, Memory],
) -> None:
    stale, eraser = two
    ada = stale.acting_for("ada", agent="bot")
    first = ada.remember("Ada's door code is 4421.")
    assert stale.person("ada").get(first.id).text == "Ada's door code is 4421."  # keys read
    assert [hit.record.id for hit in ada.recall("door code")] == [first.id]
    old_pseudonym = _pseudonym(stale, "ada")
    backup = _rows(stale, old_pseudonym)
    assert [row.memory_id for row in backup] == [first.id]

    eraser.privacy.erase("ada")
    _restore(eraser, backup)
    assert [row.memory_id for row in _rows(stale, old_pseudonym)] == [first.id]  # it is back

    # The instance that had read Ada's keys sees nothing of her restored rows...
    assert stale.person("ada").list().items == []
    assert ada.recall("door code 4421") == []
    with pytest.raises(MemoryNotFound):
        stale.person("ada").get(first.id)
    # ...and cannot open them even when it asks for them by the old pseudonym.
    assert services_of(stale).subject_keys("acme", "ada", create=False) is None
    with pytest.raises(SealError, match="erased") as error:
        open_record(caller_of(ada), backup[0])
    assert "4421" not in str(error.value)
    # Erasing again sweeps the restored rows of her life before the first erase.
    again = eraser.privacy.erase("ada")
    assert list(again.memory_ids) == [first.id]
    assert _rows(stale, old_pseudonym) == []


def test_a_second_memory_writes_for_an_erased_person_under_the_fresh_key(
    two: tuple[Memory, Memory], store_url: str, keys_path: Path
) -> None:
    stale, eraser = two
    ada = stale.acting_for("ada", agent="bot")
    before = ada.remember("Ada lives in Lisbon.")
    old_pseudonym = _pseudonym(stale, "ada")
    receipt = eraser.privacy.erase("ada")
    assert list(receipt.memory_ids) == [before.id]

    late = ada.remember("Ada moved to Porto.")  # the person came back, through the old handle
    assert late.id not in receipt.memory_ids
    new_pseudonym = _pseudonym(stale, "ada")
    assert new_pseudonym != old_pseudonym
    assert [row.memory_id for row in _rows(stale, new_pseudonym)] == [late.id]
    with Memory.open(store_url, keys=keys_path, app="app") as fresh:  # as a new process would
        assert fresh.person("ada").get(late.id).text == "Ada moved to Porto."
        assert [r.id for r in fresh.person("ada").list().items] == [late.id]
        assert [h.record.id for h in fresh.acting_for("ada", agent="bot").recall("Porto")] == [
            late.id
        ]
    assert eraser.person("ada").get(late.id).text == "Ada moved to Porto."


STALE_PROCESS = textwrap.dedent(
    """
    import json, sys
    from mainsdk_memory import Memory, MemoryNotFound, SealError, tenant
    from mainsdk_memory._memory import services_of
    from mainsdk_memory._scoped import caller_of
    from mainsdk_memory._sealing import open_record

    with Memory.open(sys.argv[1], keys=sys.argv[2], app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first = ada.remember("Ada's door code is 4421.")
        assert memory.person("ada").get(first.id).text  # her keys are read and kept
        pseudonym = caller_of(ada).pseudonym()
        print(json.dumps({"first": first.id, "pseudonym": pseudonym}), flush=True)
        sys.stdin.readline()  # meanwhile the parent erases Ada and restores the backup
        out = {
            "listed": [r.id for r in memory.person("ada").list().items],
            "recalled": [hit.record.id for hit in ada.recall("door code 4421")],
        }
        try:
            memory.person("ada").get(first.id)
            out["get"] = "opened"
        except MemoryNotFound:
            out["get"] = "not found"
        rows = services_of(memory).store.versions("acme", "app", (pseudonym,), first.id)
        try:
            open_record(caller_of(ada), rows[-1])
            out["open"] = "opened"
        except SealError:
            out["open"] = "sealed"
        out["late"] = ada.remember("Ada's new door code is 9902.").id
        out["pseudonym"] = caller_of(ada).pseudonym()
        print(json.dumps(out), flush=True)
    """
)


def test_an_erase_reaches_a_memory_open_in_another_process(
    store_url: str, keys_path: Path
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", STALE_PROCESS, store_url, str(keys_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        started = json.loads(child.stdout.readline() or "{}")
        assert started, child.stderr.read() if child.stderr else ""
        with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
            backup = _rows(memory, started["pseudonym"])
            assert [row.memory_id for row in backup] == [started["first"]]
            memory.privacy.erase("ada")
            _restore(memory, backup)
            child.stdin.write("go\n")
            child.stdin.flush()
            seen = json.loads(child.stdout.readline() or "{}")
            assert seen, child.stderr.read() if child.stderr else ""
            assert child.wait(timeout=120) == 0
            assert seen["listed"] == [] and seen["recalled"] == []
            assert seen["get"] == "not found" and seen["open"] == "sealed"
            # What the other process wrote after the erase is the returning person's, readable
            # here under the fresh key and pseudonym.
            assert seen["pseudonym"] != started["pseudonym"]
            assert _pseudonym(memory, "ada") == seen["pseudonym"]
            assert memory.person("ada").get(seen["late"]).text == "Ada's new door code is 9902."
            assert [r.id for r in memory.person("ada").list().items] == [seen["late"]]
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def test_a_write_that_lands_during_the_erase_is_swept_and_on_the_receipt(
    two: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write in flight elsewhere, sealed before the key went, lands while the erase runs."""
    stale, eraser = two
    ada = stale.acting_for("ada", agent="bot")
    kept = ada.remember("Ada's bike is blue.")
    in_flight = ada.remember("Ada's bike lock code is 1234.")
    old_pseudonym = _pseudonym(stale, "ada")
    landing = [row for row in _rows(stale, old_pseudonym) if row.memory_id == in_flight.id]
    stale.driver.erase("acme", "app", old_pseudonym, in_flight.id)  # not yet stored...
    keys = services_of(eraser).keys
    destroy = keys.destroy_subject

    def destroy_then_land(tenant_id: str, app: str, subject: str) -> bool:
        destroyed = destroy(tenant_id, app, subject)
        if subject == "person:ada":
            _restore(stale, landing)  # ...it lands just after the key was destroyed
        return destroyed

    monkeypatch.setattr(keys, "destroy_subject", destroy_then_land)
    receipt = eraser.privacy.erase("ada")
    assert sorted(receipt.memory_ids) == sorted([kept.id, in_flight.id])
    assert _rows(stale, old_pseudonym) == []


def test_a_person_who_comes_back_gets_a_fresh_key_and_pseudonym(
    memory: Memory, keys_path: Path
) -> None:
    with tenant.use("acme"):
        services = services_of(memory)
        tenant_keys = services.subject_keys("acme", TENANT_SUBJECT, create=True)
        assert tenant_keys is not None
        ada = memory.acting_for("ada", agent="bot")
        first = ada.remember("Ada's first note.")
        # Until a first erase the tenant's key names her, as in every store written before
        # ADR 0039, so those stores read on.
        legacy = tenant_keys.pseudonym("ada")
        assert _pseudonym(memory, "ada") == legacy
        assert [row.memory_id for row in _rows(memory, legacy)] == [first.id]
        old_row = _rows(memory, legacy)[0]
        memory.privacy.erase("ada")

        # Reading about the erased person finds nothing and creates no key.
        files = _key_files(keys_path)
        assert ada.recall("first note") == [] and memory.person("ada").list().items == []
        with pytest.raises(MemoryNotFound):
            memory.person("ada").get(first.id)
        assert memory.privacy.guardian_policy("ada") is None
        assert _key_files(keys_path) == files
        # She comes back as a child: the guardian policy set before her first write holds
        # once that write creates her key (the fresh pseudonym exists before the key).
        memory.privacy.set_guardian("ada", guardian="mum")
        with pytest.raises(ConsentRequiredError):
            ada.remember("Ada's second note.")
        memory.privacy.record_consent("ada", guardian="mum")
        second = ada.remember("Ada's second note.")
        assert "child" in second.labels
        assert "child" in ada.remember("Ada's third note.").labels
        fresh = _pseudonym(memory, "ada")
        assert fresh != legacy
        assert {row.memory_id for row in _rows(memory, fresh)} >= {second.id}
        # Her fresh key does not open what the old one sealed.
        with pytest.raises(SealError):
            open_record(caller_of(ada), old_row)
        memory.privacy.erase("ada")
        assert _pseudonym(memory, "ada") not in {legacy, fresh}
        # Nobody else was renamed.
        bob = memory.acting_for("bob", agent="bot").remember("Bob's note.")
        assert _pseudonym(memory, "bob") == tenant_keys.pseudonym("bob")
        assert memory.person("bob").get(bob.id).text == "Bob's note."


def test_a_key_handle_taken_before_a_destroy_neither_seals_nor_opens(keys_path: Path) -> None:
    holder, other = KeyStore.open(keys_path), KeyStore.open(keys_path)
    handle = holder.subject_keys("acme", "app", "person:ada", create=True)
    tenant_handle = holder.subject_keys("acme", "app", "tenant", create=True)
    assert handle is not None and tenant_handle is not None
    sealed = handle.seal(b"secret", b"ad")
    tenant_sealed = tenant_handle.seal(b"shared", b"ad")
    stale_other = other.subject_keys("acme", "app", "person:ada", create=False)
    assert stale_other is not None and stale_other.open(sealed, b"ad") == b"secret"
    destroy = (
        "import sys; from mainsdk_memory.keys import KeyStore; "
        "assert KeyStore.open(sys.argv[1]).destroy_subject('acme', 'app', 'person:ada')"
    )
    subprocess.run([sys.executable, "-c", destroy, str(keys_path)], check=True, timeout=120)
    with pytest.raises(KeyStoreError, match="erased"):
        handle.seal(b"more", b"ad")
    with pytest.raises(SealError):
        handle.open(sealed, b"ad")
    assert holder.subject_keys("acme", "app", "person:ada", create=False) is None
    assert tenant_handle.open(tenant_sealed, b"ad") == b"shared"  # others keep working
    fresh = holder.subject_keys("acme", "app", "person:ada", create=True)
    assert fresh is not None and fresh is not handle
    with pytest.raises(SealError):
        fresh.open(sealed, b"ad")
    # The second key store of this process had read the old key too: it gets the fresh one,
    # and the old handles stay dead.
    again = other.subject_keys("acme", "app", "person:ada", create=False)
    assert again is not None and again is not stale_other
    assert again.open(fresh.seal(b"new", b"ad"), b"ad") == b"new"
    for dead in (handle, stale_other):
        with pytest.raises(SealError):
            dead.open(sealed, b"ad")
