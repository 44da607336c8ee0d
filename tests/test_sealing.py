"""Sealing: the store holds no readable content; a sealed row opens only where it was written."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import os
import pickle
import re
import stat
from pathlib import Path

import pytest

from mainsdk_memory import (
    ConfigurationError,
    KeyStoreError,
    Memory,
    MemoryNotFound,
    SealError,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._scoped import caller_of
from mainsdk_memory._sealing import first_place, memory_ad
from mainsdk_memory._text import index_terms
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow
from mainsdk_memory.keys import KeyStore

SENTENCES = [
    "Priya's grandmother taught her to bake cardamom bread in Hyderabad.",
    "Priya is saving for a turquoise motorcycle called Bellatrix.",
    "Priya's therapist appointment moved to Thursday afternoon.",
    "Ünïcödé Straße wohnt Priya nicht; 東京 visit planned.",
]


def _forms(word: str) -> set[bytes]:
    """The ways a word could sit in a file: cases, encodings, base64 at every alignment."""
    found: set[bytes] = set()
    for variant in {word, word.lower(), word.upper(), word.title(), word.casefold()}:
        for encoding in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le"):
            raw = variant.encode(encoding)
            found.add(raw)
            found.add(raw.hex().encode())
            for shift in range(3):
                encoded = base64.b64encode(b"\0" * shift + raw)
                # Drop the characters that depend on the padding bytes and the tail.
                start = (shift * 4 + 2) // 3
                stable = encoded[start : (len(shift * b"\0" + raw) // 3) * 4]
                if len(stable) >= 4:
                    found.add(stable)
                    found.add(stable.replace(b"+", b"-").replace(b"/", b"_"))
    return found


def _store_bytes(memory: Memory) -> list[tuple[str, bytes]]:
    return list(memory.driver.raw_dump())


#: Shorter needles are also found by chance inside sealed bytes written as base64 (a 4-letter
#: needle once in every 64^4 positions: a store with vectors holds enough of them to make
#: that likely), so they count only where no base64 character stands either side.
_CHANCE_BELOW = 8
_BASE64 = rb"A-Za-z0-9+/=_-"


def _holds(blob: bytes, needle: bytes) -> bool:
    if len(needle) >= _CHANCE_BELOW:
        return needle in blob
    pattern = rb"(?<![" + _BASE64 + rb"])" + re.escape(needle) + rb"(?![" + _BASE64 + rb"])"
    return re.search(pattern, blob) is not None


def test_no_word_of_a_stored_sentence_is_readable_anywhere_in_the_store(
    memory: Memory, tmp_path: Path
) -> None:
    with tenant.use("acme"):
        priya = memory.acting_for("priya", agent="concierge", session="chat-7")
        for text in SENTENCES:
            record = priya.remember(text)
        priya.revise(record.id, SENTENCES[-1] + " Revised with Bellatrix again.")
        priya.recall("cardamom bread motorcycle")  # recall must not leave terms behind either
        priya.context("therapist Thursday")
    dump = _store_bytes(memory)
    assert dump, "the driver must expose what it stores"
    words = {w for text in SENTENCES for w in text.replace("'", " ").split() if len(w) >= 4}
    words |= {term for text in SENTENCES for term in index_terms(text) if len(term) >= 4}
    needles = {form for word in words for form in _forms(word.strip(".;,"))}
    needles |= {base64.b64encode(text.encode()) for text in SENTENCES}
    needles |= {b"priya"}  # the person id is pseudonymous in the store too
    leaks = sorted(
        (where, needle) for where, blob in dump for needle in needles if _holds(blob, needle)
    )
    assert leaks == []
    # And on disk, for the local driver: every file under the test folder except the keys.
    if memory.driver.name == "local":
        for path in (tmp_path / "store").rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not [n for n in needles if _holds(data, n)], path.name
                assert b"priya" not in path.name.encode().lower()


def _row_of(memory: Memory, memory_id: str) -> StoredRow:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        subjects = (caller_of(ada).pseudonym(), TENANT_SUBJECT)
    rows = memory.driver.versions("acme", "app", subjects, memory_id)
    assert rows
    return rows[-1]


def _other_id(memory_id: str) -> str:
    return memory_id[:-1] + ("a" if memory_id[-1] != "a" else "b")


def test_a_row_moved_to_another_person_does_not_open(memory: Memory) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        bob = memory.acting_for("bob", agent="bot")
        bob.remember("Bob exists, so Bob has keys.")
        record = ada.remember("Ada's bank is Millennium.")
        row = _row_of(memory, record.id)
        moved = dataclasses.replace(row, subject=caller_of(bob).pseudonym(),
                                    memory_id=_other_id(record.id))
        memory.driver.put(moved)
        with pytest.raises(SealError) as error:
            bob.get(moved.memory_id)
        assert "Millennium" not in str(error.value)


def test_a_row_moved_to_another_record_or_version_does_not_open(memory: Memory) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        record = ada.remember("Ada's PIN hint is her first cat.")
        row = _row_of(memory, record.id)
        memory.driver.put(dataclasses.replace(row, memory_id=_other_id(record.id)))
        with pytest.raises(SealError):
            ada.get(_other_id(record.id))
        # The same sealed blob presented as version 2 of the original memory.
        later = dataclasses.replace(row, version=2, valid_from=row.valid_from)
        memory.driver.put(later, closes=1)
        with pytest.raises(SealError):
            ada.get(record.id)


def test_a_row_moved_to_another_tenant_does_not_open(memory: Memory) -> None:
    with tenant.use("acme"):
        record = memory.acting_for("ada", agent="bot").remember("Ada's visa expires in May.")
        row = _row_of(memory, record.id)
    with tenant.use("globex"):
        ada = memory.acting_for("ada", agent="bot")
        ada.remember("Ada in globex, so her keys there exist.")
        memory.driver.put(dataclasses.replace(row, tenant="globex",
                                              subject=caller_of(ada).pseudonym()))
        with pytest.raises(SealError):
            ada.get(record.id)


@pytest.mark.parametrize(
    "change",
    [{"kind": "event"}, {"labels": ("none",)}, {"trust": "confirmed"}, {"agent": "mallory"}],
)
def test_edited_plain_columns_are_detected(memory: Memory, change: dict[str, object]) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        record = ada.remember("Ada's spare key is with the neighbour.")
        row = _row_of(memory, record.id)
        # Re-seal under a second, anchored id so only the edited column is wrong.
        caller = caller_of(ada)
        place = first_place(caller, "ada", pinned=False, created_at=row.created_at,
                            labels=row.labels)
        forged = dataclasses.replace(row, memory_id=place.memory_id, **change)
        keys = services_of(memory).subject_keys("acme", "ada", create=False)
        anchor = services_of(memory).keys.anchors.memory(
            services_of(memory).anchor_scope("acme"), record.id
        )
        assert keys is not None and anchor is not None
        plain = keys.open_memory(anchor.salt, row.sealed, memory_ad(caller, "ada", record.id, 1))
        forged = dataclasses.replace(
            forged,
            sealed=keys.seal_memory(
                place.salt, plain, memory_ad(caller, "ada", forged.memory_id, 1)
            ),
        )
        memory.driver.put(forged)
        with pytest.raises(SealError):
            memory.person("ada").get(forged.memory_id)  # the person's view sees every agent


def test_a_destroyed_subject_key_leaves_its_memories_unreadable(
    memory: Memory, keys_path: Path
) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        record = ada.remember("Ada's blood type is O negative.")
        assert KeyStore.open(keys_path).destroy_subject("acme", "app", "person:ada")
        services_of(memory).keys = KeyStore.open(keys_path)  # a fresh process would see the same
        with pytest.raises(SealError):
            ada.get(record.id)


def test_key_store_files_are_private(tmp_path: Path) -> None:
    store = KeyStore.create(tmp_path / "keys")
    store.subject_keys("acme", "app", "person:ada", create=True)
    paths = [tmp_path / "keys", *(tmp_path / "keys").rglob("*")]
    assert len(paths) >= 4
    for path in paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
        assert "ada" not in path.name


def test_key_store_creation_is_refused_over_an_existing_one(tmp_path: Path) -> None:
    KeyStore.create(tmp_path / "keys")
    before = (tmp_path / "keys" / "keystore.json").read_bytes()
    with pytest.raises(KeyStoreError, match="already exists"):
        KeyStore.create(tmp_path / "keys")
    assert (tmp_path / "keys" / "keystore.json").read_bytes() == before


def test_opening_without_a_key_store_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(KeyStoreError, match="memory keys init"):
        Memory.open(f"local:{tmp_path / 'store'}", keys=tmp_path / "nokeys", app="app")
    assert not (tmp_path / "store").exists()  # nothing was created on the way


def test_a_damaged_key_store_is_refused_at_open(tmp_path: Path) -> None:
    KeyStore.create(tmp_path / "keys")
    path = tmp_path / "keys" / "keystore.json"
    document = json.loads(path.read_bytes())
    document["kek"]["key"] = base64.b64encode(b"short").decode()
    path.write_text(json.dumps(document))
    with pytest.raises(KeyStoreError):
        KeyStore.open(tmp_path / "keys")


def test_keys_and_store_must_not_nest(tmp_path: Path, keys_path: Path) -> None:
    with Memory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="a") as memory, \
            tenant.use("acme"):
        memory.acting_for("ada", agent="bot").remember("Ada exists.")
    KeyStore.create(tmp_path / "store" / "keys")
    with pytest.raises(ConfigurationError, match="outside"):
        Memory.open(f"local:{tmp_path / 'store'}", keys=tmp_path / "store" / "keys", app="a")
    with pytest.raises(ConfigurationError, match="outside"):
        Memory.open(f"local:{keys_path / 'store'}", keys=keys_path, app="a")
    assert not (keys_path / "store").exists()  # nothing was created inside the key store


def test_key_handles_do_not_print_or_pickle_secrets(tmp_path: Path) -> None:
    store = KeyStore.create(tmp_path / "keys")
    keys = store.subject_keys("acme", "app", "person:ada", create=True)
    document = json.loads((tmp_path / "keys" / "keystore.json").read_bytes())
    secrets_b64 = [document["kek"]["key"], document["signing"][0]["ed25519"]]
    for handle in (store, keys, store.signing_key):
        text = repr(handle) + str(handle)
        assert "hidden" in text
        assert not any(secret in text for secret in secrets_b64)
        with pytest.raises(TypeError):
            pickle.dumps(handle)
        with pytest.raises(TypeError):
            copy.deepcopy(handle)


def test_racing_creators_agree_on_one_subject_key(tmp_path: Path) -> None:
    KeyStore.create(tmp_path / "keys")
    first, second = KeyStore.open(tmp_path / "keys"), KeyStore.open(tmp_path / "keys")
    a = first.subject_keys("acme", "app", "person:ada", create=True)
    b = second.subject_keys("acme", "app", "person:ada", create=True)
    assert a is not None and b is not None
    ad = b"ad"
    assert b.open(a.seal(b"same key", ad), ad) == b"same key"
    assert len(os.listdir(tmp_path / "keys" / "subjects")) == 1


def test_unknown_memory_in_a_person_with_no_keys_is_not_found(memory: Memory) -> None:
    with tenant.use("acme"):
        nobody = memory.acting_for("never-seen", agent="bot")
        with pytest.raises(MemoryNotFound):
            nobody.get("mem_" + "d" * 26)
        assert nobody.recall("anything at all") == []


@pytest.mark.parametrize(("where", "mode"), [(".", 0o755), ("keystore.json", 0o644),
                                             ("subjects", 0o750), (".", 0o703)])
def test_a_key_store_other_users_can_read_is_refused(
    tmp_path: Path, keys_path: Path, where: str, mode: int
) -> None:
    (keys_path / where).chmod(mode)
    store = f"local:{tmp_path / 'store'}"
    with pytest.raises(KeyStoreError, match="go-rwx"):
        Memory.open(store, keys=keys_path, app="app")
    assert not (tmp_path / "store").exists()  # refused before the store was made
    with Memory.open(store, keys=keys_path, app="app", allow_readable_keys=True) as memory, \
            tenant.use("acme"):
        memory.acting_for("ada", agent="bot").remember("Ada's key store is shared on purpose.")
    (keys_path / where).chmod(0o700 if where != "keystore.json" else 0o600)
    Memory.open(store, keys=keys_path, app="app").close()  # private again: opens
