"""Progress of long operations: every ``progress=`` callback and every CLI bar (issue 18).

Each operation reports counts only, ``done`` never goes back, and the last call has
``done == total`` matching what the operation did (the receipt, export, report or schema
says the same count). A ``progress`` that is not a function is refused before anything
changes. The CLI commands draw a tqdm bar when standard error is a terminal (a real pty) and
write no control characters when it is a pipe.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _postgres import TestPostgres

from mainsdk_memory import AsyncMemory, InvalidInputError, Memory, tenant
from mainsdk_memory.drivers.db import upgrade
from mainsdk_memory.drivers.db._schema import SCHEMA_VERSION
from mainsdk_memory.embeddings import StaticEmbedder
from mainsdk_memory.keys import KeyStore

Calls = list[tuple[int, int]]


def _recorder() -> tuple[Calls, Callable[[int, int], None]]:
    calls: Calls = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))

    return calls, progress


def _assert_reported(calls: Calls, count: int) -> None:
    """Non-decreasing ``done``, never above its ``total``, ending at ``count`` of ``count``."""
    assert calls, "progress was never called"
    dones = [done for done, _ in calls]
    assert dones == sorted(dones)
    assert all(0 <= done <= total for done, total in calls)
    assert calls[-1] == (count, count)


def _remember(memory: Memory, person: str, count: int) -> list[str]:
    handle = memory.acting_for(person, agent="bot")
    return [
        handle.remember(f"{person.title()} note number {n}: code {n * 7919}.", formation=False).id
        for n in range(count)
    ]


# -- erase and export ----------------------------------------------------------------------


@pytest.mark.usefixtures("acme")
def test_erase_reports_each_memory_and_agrees_with_its_receipt(memory: Memory) -> None:
    ids = _remember(memory, "ada", 30)
    kept = _remember(memory, "bob", 2)
    memory.acting_for("ada", agent="bot").retract(ids[0])  # closed: erased by id, counted
    calls, progress = _recorder()
    receipt = memory.privacy.erase("ada", progress=progress)
    _assert_reported(calls, 30)
    assert [done for done, _ in calls] == list(range(1, 31))  # one call per memory
    assert len(receipt.memory_ids) == 30 and sorted(receipt.memory_ids) == sorted(ids)
    assert sorted(r.id for r in memory.person("bob").list().items) == sorted(kept)  # untouched
    again, progress = _recorder()
    assert memory.privacy.erase("ada", progress=progress).memory_ids == ()
    assert again == [(0, 0)]  # nothing left: one call, nothing of nothing


@pytest.mark.usefixtures("acme")
def test_export_reports_each_memory(memory: Memory) -> None:
    _remember(memory, "ada", 12)
    calls, progress = _recorder()
    document = memory.privacy.export("ada", progress=progress)
    _assert_reported(calls, 12)
    assert [done for done, _ in calls] == list(range(1, 13))
    assert len(document["memories"]) == 12
    calls, progress = _recorder()
    assert memory.privacy.export("nobody", progress=progress)["memories"] == []
    assert calls == [(0, 0)]


@pytest.mark.usefixtures("acme")
def test_a_progress_that_is_not_a_function_erases_and_exports_nothing(
    memory: Memory, keys_path: Path
) -> None:
    _remember(memory, "ada", 3)
    for bad in ("yes", 1, [print]):
        with pytest.raises(InvalidInputError, match="progress"):
            memory.privacy.erase("ada", progress=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="progress"):
            memory.privacy.export("ada", progress=bad)  # type: ignore[arg-type]
    assert len(memory.person("ada").list().items) == 3  # nothing erased, keys kept
    assert memory.privacy.receipts() == []


def test_the_async_privacy_forwards_progress(tmp_path: Path, keys_path: Path) -> None:
    async def run() -> tuple[Calls, int]:
        amemory = await AsyncMemory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="a")
        calls, progress = _recorder()
        with tenant.use("acme"):
            ada = amemory.acting_for("ada", agent="bot")
            for n in range(4):
                await ada.remember(f"Ada fact {n}: {n * 31}.", formation=False)
            receipt = await amemory.privacy.erase("ada", progress=progress)
            with pytest.raises(InvalidInputError):
                await amemory.privacy.export("ada", progress=3)  # type: ignore[arg-type]
        await amemory.aclose()
        return calls, len(receipt.memory_ids)

    calls, erased = asyncio.run(run())
    assert erased == 4
    _assert_reported(calls, 4)


# -- db upgrade ----------------------------------------------------------------------------


def _assert_upgrade(url: str) -> None:
    calls, progress = _recorder()
    assert upgrade(url, progress=progress) == (0, SCHEMA_VERSION)
    _assert_reported(calls, SCHEMA_VERSION)  # one step per migration
    assert [done for done, _ in calls] == list(range(1, SCHEMA_VERSION + 1))
    calls, progress = _recorder()
    assert upgrade(url, progress=progress) == (SCHEMA_VERSION, SCHEMA_VERSION)
    assert calls == [(0, 0)]  # current: nothing to do


def test_db_upgrade_reports_each_migration_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with pytest.raises(InvalidInputError, match="progress"):
        upgrade(f"sqlite:///{path}", progress="50%")  # type: ignore[arg-type]
    assert not path.exists()  # refused before the database was touched
    _assert_upgrade(f"sqlite:///{path}")


def test_db_upgrade_reports_each_migration_on_postgresql(postgres: TestPostgres) -> None:
    url = postgres.new_database(schema=False)
    try:
        with pytest.raises(InvalidInputError):
            upgrade(url, progress=object())  # type: ignore[arg-type]
        _assert_upgrade(url)  # it starts from no schema: the refusal created none
    finally:
        postgres.drop(url)


# -- key rotation --------------------------------------------------------------------------


def _subject_files(keys_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((keys_path / "subjects").glob("*.json"))}


def _with_subjects(tmp_path: Path, keys_path: Path, people: int) -> int:
    with Memory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="app") as memory, \
            tenant.use("acme"):
        for n in range(people):
            memory.person(f"p{n}").remember(f"Person {n} likes tea.", formation=False)
    return len(_subject_files(keys_path))


def test_key_rotation_reports_each_subject_key(tmp_path: Path, keys_path: Path) -> None:
    subjects = _with_subjects(tmp_path, keys_path, 5)
    assert subjects >= 5
    calls, progress = _recorder()
    report = KeyStore.open(keys_path).rotate(progress=progress)
    _assert_reported(calls, subjects)
    assert report.rewrapped == report.subjects == subjects
    calls, progress = _recorder()
    report = KeyStore.open(keys_path).rotate(progress=progress)  # a second rotation: all again
    _assert_reported(calls, subjects)


def test_a_rotation_with_a_bad_progress_changes_nothing(tmp_path: Path, keys_path: Path) -> None:
    _with_subjects(tmp_path, keys_path, 2)
    before = ((keys_path / "keystore.json").read_bytes(), _subject_files(keys_path))
    with pytest.raises(InvalidInputError, match="progress"):
        KeyStore.open(keys_path).rotate(progress="every file")  # type: ignore[arg-type]
    assert ((keys_path / "keystore.json").read_bytes(), _subject_files(keys_path)) == before


# -- reindex and consolidate share the type and the check ----------------------------------


@pytest.mark.usefixtures("acme")
def test_reindex_and_consolidate_report_and_refuse_the_same_way(
    tmp_path: Path, keys_path: Path
) -> None:
    store = f"local:{tmp_path / 'store'}"
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory:
        _remember(memory, "ada", 3)
    with Memory.open(store, keys=keys_path, app="app", embedder=StaticEmbedder()) as memory:
        with pytest.raises(InvalidInputError, match="progress"):
            memory.reindex(["ada"], progress=1)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="progress"):
            memory.person("ada").consolidate(progress=1)  # type: ignore[arg-type]
        calls, progress = _recorder()
        assert memory.reindex(["ada"], progress=progress).embedded == 3
        _assert_reported(calls, 3)


# -- the CLI bars --------------------------------------------------------------------------

_MAIN = "import sys; from mainsdk_memory._cli import main; sys.exit(main(sys.argv[1:]))"


def _run(args: list[str], *, terminal: bool, out: Path) -> tuple[int, str]:
    """Run ``memory ARGS`` in a new process, standard error on a pty (``terminal``) or a
    pipe; return the exit status and what it wrote to standard error."""
    env = {**os.environ, "COLUMNS": "100"}
    with out.open("wb") as stdout:
        if not terminal:
            done = subprocess.run([sys.executable, "-c", _MAIN, *args], stdout=stdout,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                                  timeout=300, check=False)
            return done.returncode, done.stderr.decode("utf-8", "replace")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        process = subprocess.Popen([sys.executable, "-c", _MAIN, *args], stdout=stdout,
                                   stderr=slave, stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        written = b""
        try:
            while chunk := os.read(master, 65536):
                written += chunk
        except OSError:  # EIO: the process closed the terminal's last writer
            pass
        finally:
            os.close(master)
        return process.wait(timeout=300), written.decode("utf-8", "replace")


@pytest.fixture
def cli_store(tmp_path: Path, keys_path: Path) -> list[str]:
    """A local store with ada's memories (written before any embedder) and the options
    every command takes."""
    store = f"local:{tmp_path / 'store'}"
    with Memory.open(store, keys=keys_path, app="app", embedder=None) as memory, \
            tenant.use("acme"):
        _remember(memory, "ada", 5)
        for month, text in enumerate(AISLE, start=3):  # one preference, three sessions
            memory.acting_for("ada", agent="bot", session=f"s{month}").remember(
                text, kind="preference", valid_from=datetime(2026, month, 2, tzinfo=UTC))
    return ["--store", store, "--keys", str(keys_path), "--app", "app", "--tenant", "acme"]


AISLE = ("Ada prefers aisle seats.", "Ada asked for an aisle seat on the flight.",
         "Ada wants an aisle seat again.")
COMMANDS: dict[str, Callable[[list[str], Path], list[str]]] = {
    "reindex": lambda common, _: ["reindex", *common, "--person", "ada"],
    "consolidate": lambda common, _: ["consolidate", *common, "--person", "ada"],
    "export": lambda common, tmp: ["export", *common, "--person", "ada",
                                   "--out", str(tmp / "export.json")],
    "keys rotate": lambda common, _: ["keys", "rotate", *common[2:4]],
    "db upgrade": lambda _, tmp: ["db", "upgrade", f"sqlite:///{tmp / 'fresh.db'}"],
    "erase": lambda common, _: ["erase", *common, "--person", "ada"],
}
#: What each command still says after its bar (the summaries tests elsewhere check).
SUMMARY = {
    "reindex": "reindex acme: ", "consolidate": "consolidate acme: person 1/1: ",
    "export": "exported ", "keys rotate": "Rotated", "db upgrade": "Created the mainsdk",
    "erase": "erased ",
}


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_the_cli_draws_a_bar_only_on_a_terminal(
    cli_store: list[str], tmp_path: Path, terminal: bool
) -> None:
    for name, command in COMMANDS.items():  # in order: erase last, it destroys ada's key
        out = tmp_path / f"{name}.out"
        status, err = _run(command(cli_store, tmp_path), terminal=terminal, out=out)
        said = err + out.read_text(encoding="utf-8")
        assert status == 0, (name, said)
        assert SUMMARY[name] in said, (name, said)
        if terminal:
            assert "100%|" in err and "\u2588" in err and "\r" in err, (name, err)
        else:
            assert not any(c in err for c in "\r\x1b\u2588"), (name, err)
            assert "%|" not in err, name
    if not terminal:
        assert json.loads((tmp_path / "export.json").read_text())["person"] == "ada"


def test_an_erase_whose_callback_raises_still_reaches_its_receipt(tmp_path: Path) -> None:
    """The callback's exception waits: every memory erased is in the receipt, the keys are
    gone, and the receipt is in the log."""
    KeyStore.create(tmp_path / "keys")
    with Memory.open(f"local:{tmp_path / 'store'}", keys=tmp_path / "keys",
                     app="app") as memory, tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot")
        ids = {bot.remember(f"Ada's order {i} shipped to dock {i * 7}.",
                            formation=False).id for i in range(5)}

        def stop(done: int, total: int) -> None:
            if done == 2:
                raise RuntimeError("the user's callback")

        with pytest.raises(RuntimeError, match="the user's callback"):
            memory.privacy.erase("ada", progress=stop)
        (receipt,) = memory.privacy.receipts()
        assert set(receipt.claims["memory_ids"]) == ids
        assert receipt.claims["key"] == "destroyed"
        assert memory.person("ada").list().items == []
