"""A typed error for every odd input, raised before anything is written: nothing changes in
the store or in the key store, and the message holds no content."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mainsdk_memory import ConfigurationError, InvalidInputError, Memory, Source, tenant
from mainsdk_memory._cli import receipt_main
from mainsdk_memory.drivers import Driver

SURROGATE = "\udc80"


class Note(BaseModel):
    body: str


def _snapshot(driver: Driver, keys_path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    stored = sorted((where, hashlib.sha256(blob).hexdigest()) for where, blob in driver.raw_dump())
    # Every key-store file but the anchors' "-shm": SQLite's shared-memory index of the
    # write-ahead log, which readers update and which holds no data.
    keys = sorted(
        f"{path.relative_to(keys_path)}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
        for path in keys_path.rglob("*")
        if path.is_file() and not path.name.endswith("-shm")
    )
    return stored, keys


EAST = timezone(timedelta(hours=5))
WEST = timezone(timedelta(hours=-5))

#: Calls a new person's agent makes with one odd argument each (the person has no key yet).
ODD_CALLS: dict[str, Callable[[Memory], Any]] = {
    "valid_from at datetime.min with an offset": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", valid_from=datetime.min.replace(tzinfo=EAST)),
    "valid_from at datetime.max with an offset": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", valid_from=datetime.max.replace(tzinfo=WEST)),
    "as_of at datetime.max with an offset": lambda m: m.acting_for("ann", agent="bot")
    .recall("note", as_of=datetime.max.replace(tzinfo=WEST)),
    "a lone surrogate in data": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", data=Note(body=f"x{SURROGATE}")),
    "a lone surrogate in source.ref": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", source=Source.tool("crm", ref=f"r{SURROGATE}")),
    "a lone surrogate in source.id": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", source=Source.web(f"https://x.test/{SURROGATE}")),
    "source.at with datetime.min and an offset": lambda m: m.acting_for("ann", agent="bot")
    .remember("Ann's note.", source=Source.tool("crm", at=datetime.min.replace(tzinfo=EAST))),
    "a lone surrogate in a person id": lambda m: m.acting_for(f"ann{SURROGATE}", agent="bot")
    .remember("Ann's note."),
    "a lone surrogate in a guardian id": lambda m: m.privacy.set_guardian(
        "ann", guardian=f"g{SURROGATE}"),
    "a lone surrogate in a person to erase": lambda m: m.privacy.erase(f"ann{SURROGATE}"),
}


@pytest.mark.parametrize("case", sorted(ODD_CALLS))
def test_odd_input_is_a_typed_error_that_changes_nothing(
    memory: Memory, keys_path: Path, case: str
) -> None:
    with tenant.use("acme"):
        memory.acting_for("bob", agent="bot").remember("Bob has a key already.")
        before = _snapshot(memory.driver, keys_path)
        with pytest.raises(InvalidInputError) as error:
            ODD_CALLS[case](memory)
        assert SURROGATE not in str(error.value) and "Ann's note" not in str(error.value)
        assert _snapshot(memory.driver, keys_path) == before, case


def test_a_revision_with_odd_input_changes_nothing(memory: Memory, keys_path: Path) -> None:
    with tenant.use("acme"):
        bot = memory.acting_for("ann", agent="bot")
        record = bot.remember("Ann's first note.")
        before = _snapshot(memory.driver, keys_path)
        odd: list[Callable[[], Any]] = [
            lambda: bot.revise(record.id, "Ann's second note.", data=Note(body=SURROGATE)),
            lambda: bot.revise(record.id, "Ann's second note.",
                               valid_from=datetime.max.replace(tzinfo=WEST)),
            lambda: bot.revise(record.id, "Ann's second note.",
                               source=Source.tool("crm", ref=SURROGATE)),
        ]
        for call in odd:
            with pytest.raises(InvalidInputError):
                call()
        assert _snapshot(memory.driver, keys_path) == before
        assert bot.get(record.id).version == 1


def test_person_ids_are_one_person_in_every_normal_form(memory: Memory) -> None:
    nfc = unicodedata.normalize("NFC", "José")
    nfd = unicodedata.normalize("NFD", "José")
    assert nfc != nfd
    with tenant.use("acme"):
        record = memory.acting_for(nfd, agent="bot").remember("José likes figs.")
        assert memory.acting_for(nfc, agent="bot").get(record.id).text == "José likes figs."
        receipt = memory.privacy.erase(nfc)
        assert record.id in receipt.claims["memory_ids"]
        assert memory.person(nfd).list().items == []


@pytest.mark.parametrize("keys", [None, 42, ""])
def test_keys_that_are_no_path_are_a_configuration_error(tmp_path: Path, keys: Any) -> None:
    store = tmp_path / "store"
    with pytest.raises(ConfigurationError, match="keys is the path"):
        Memory.open(f"local:{store}", keys=keys, app="app")
    assert not store.exists()


def test_memory_receipt_verify_refuses_a_binary_file(
    tmp_path: Path, keys_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "receipt.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    public = tmp_path / "public.pem"
    public.write_bytes(b"not a key")
    assert receipt_main(["verify", str(binary), "--key", str(public)]) == 1
    err = capsys.readouterr().err
    assert "INVALID" in err and "not text" in err and "Traceback" not in err
