"""Key rotation: new KEK and signing key, same subject secrets, old keys gone, crash-safe."""

from __future__ import annotations

import base64
import json
import shutil
import signal
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mainsdk_memory import KeyStoreError, Memory, ReceiptError, receipts, tenant
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.keys._rotation import rotate_key_store

BIN = Path(sys.executable).parent

# Runs a rotation in a child process and kills it (SIGKILL, no cleanup of any kind) at the
# checkpoint named on the command line: the private hook of keys/_rotation.py.
KILL_AT_CHECKPOINT = """
import os, signal, sys
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.keys._rotation import rotate_key_store

step, at = sys.argv[2], int(sys.argv[3])

def checkpoint(name, rewrapped):
    if name == step and rewrapped == at:
        os.kill(os.getpid(), signal.SIGKILL)

rotate_key_store(KeyStore.open(sys.argv[1]), checkpoint=checkpoint)
"""

# Runs a rotation that stops after its first re-wrap until the file named by argv[3] exists,
# having created the file named by argv[2]: the test rotates concurrently in that window.
PAUSE_AT_CHECKPOINT = """
import sys, time
from pathlib import Path
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.keys._rotation import rotate_key_store

ready, go = Path(sys.argv[2]), Path(sys.argv[3])

def checkpoint(name, rewrapped):
    if name == "rewrapped" and rewrapped == 1:
        ready.touch()
        while not go.exists():
            time.sleep(0.01)

report = rotate_key_store(KeyStore.open(sys.argv[1]), checkpoint=checkpoint)
print(report.kek_active)
"""


def _memory(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "memory"), *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _document(keys: Path) -> dict[str, object]:
    return json.loads((keys / "keystore.json").read_bytes())


def _kek(keys: Path) -> tuple[str, bytes]:
    kek = _document(keys)["kek"]
    assert isinstance(kek, dict)
    return kek["kid"], base64.b64decode(kek["key"])


def _add_subjects(keys: Path, count: int) -> None:
    store = KeyStore.open(keys)
    for number in range(count):
        store.subject_keys("acme", "app", f"person:p{number}", create=True)


def _secrets(keys: Path) -> dict[str, bytes]:
    """Every subject secret, unwrapped through a fresh handle (the private test path)."""
    store = KeyStore.open(keys)
    found = {}
    for file in sorted((keys / "subjects").glob("*.json")):
        secret = store._read_subject(file)
        assert secret is not None and len(secret) == 32
        found[file.stem] = secret
    return found


def _wrapped_under(keys: Path) -> list[str]:
    return [json.loads(f.read_bytes())["kek"] for f in sorted((keys / "subjects").glob("*.json"))]


def _forms(secret: bytes) -> set[bytes]:
    """The ways key bytes could sit in a file: raw, hex, base64 (both alphabets) at every
    alignment, with the characters that depend on neighbouring bytes dropped."""
    found = {secret, secret.hex().encode(), secret.hex().upper().encode()}
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret)
        stable = encoded[(shift * 4 + 2) // 3 : ((shift + len(secret)) // 3) * 4]
        found |= {stable, stable.replace(b"+", b"-").replace(b"/", b"_")}
    return found


def _files_holding(keys: Path, secret: bytes) -> list[str]:
    needles = _forms(secret)
    return sorted(
        str(path.relative_to(keys))
        for path in keys.rglob("*")
        if path.is_file() and any(needle in path.read_bytes() for needle in needles)
    )


def _assert_private(keys: Path) -> None:
    for path in [keys, *keys.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path


def test_memories_written_before_a_rotation_open_after_it_and_new_ones_too(
    tmp_path: Path, keys_path: Path
) -> None:
    url = f"local:{tmp_path / 'store'}"
    with Memory.open(url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        home = ada.remember("Ada lives in Lisbon near the river.")
        tea = ada.remember("Ada drinks green tea without sugar.")
        bob = memory.acting_for("bob", agent="bot").remember("Bob keeps bees on his roof.")
        rule = ada.remember("Refunds go back to the original card.", kind="procedure",
                           about="tenant", labels=["none"])
        before = _secrets(keys_path)

        # Another process rotates while this Memory stays open.
        report = KeyStore.open(keys_path).rotate()
        assert not report.resumed and report.subjects == len(before) == 3
        assert report.rewrapped == 3

        # The open Memory reads old memories, writes new ones and creates a new subject
        # under the new KEK (it re-reads keystore.json once it changed).
        assert ada.get(home.id).text == "Ada lives in Lisbon near the river."
        assert [hit.record.id for hit in ada.recall("green tea sugar")][:1] == [tea.id]
        later = ada.remember("Ada moved her tea to oolong.")
        cleo = memory.acting_for("cleo", agent="bot").remember("Cleo plays the cello.")
        assert set(_wrapped_under(keys_path)) == {report.kek_active}

    with Memory.open(url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        assert ada.get(home.id).text == "Ada lives in Lisbon near the river."
        assert ada.get(later.id).text == "Ada moved her tea to oolong."
        assert ada.get(rule.id).text == "Refunds go back to the original card."
        assert memory.acting_for("bob", agent="bot").get(bob.id).text.startswith("Bob keeps")
        assert memory.acting_for("cleo", agent="bot").get(cleo.id).text == "Cleo plays the cello."
        assert [hit.record.id for hit in ada.recall("Lisbon river")][:1] == [home.id]
    after = _secrets(keys_path)
    assert {name: after[name] for name in before} == before  # byte-identical secrets
    assert len(after) == 4


def test_the_old_kek_is_in_no_file_of_the_key_store_after_a_rotation(keys_path: Path) -> None:
    _add_subjects(keys_path, 5)
    old_kid, old_kek = _kek(keys_path)
    assert _files_holding(keys_path, old_kek) == ["keystore.json"]  # the scan finds keys
    # A write interrupted before its rename leaves a temporary copy of keystore.json behind.
    stale = keys_path / ".keystore.json.0123456789abcdef.tmp"
    stale.write_bytes((keys_path / "keystore.json").read_bytes())
    stale.chmod(0o600)

    report = KeyStore.open(keys_path).rotate()

    assert report.kek_retired == (old_kid,) and report.kek_active != old_kid
    assert _files_holding(keys_path, old_kek) == []
    assert old_kid not in (keys_path / "keystore.json").read_text()
    new_kid, new_kek = _kek(keys_path)
    assert new_kid == report.kek_active
    assert _files_holding(keys_path, new_kek) == ["keystore.json"]  # positive control
    assert set(_wrapped_under(keys_path)) == {new_kid}
    assert "rotation" not in _document(keys_path)
    assert not stale.exists()
    _assert_private(keys_path)
    anchors = {p.name for p in keys_path.iterdir() if p.name.startswith("anchors.")}
    assert "anchors.sqlite" in anchors  # the anchors (ADR 0047) hold no KEK; checked above
    assert anchors <= {"anchors.sqlite", "anchors.sqlite-wal", "anchors.sqlite-shm",
                       "anchors.lock"}
    assert {p.name for p in keys_path.iterdir()} - anchors == {
        "keystore.json", "subjects", "rotate.lock", "subjects.lock"
    }


def test_the_old_signing_key_is_destroyed_and_its_receipts_still_verify(
    tmp_path: Path, keys_path: Path
) -> None:
    url = f"local:{tmp_path / 'store'}"
    with Memory.open(url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        first = ada.remember("Ada's locker code is in her notebook.")
        second = ada.remember("Ada's gym is on Rua Augusta.")
        old_receipt = memory.person("ada").forget(first.id)
    store = KeyStore.open(keys_path)
    old_kid = store.signing_key.kid
    old_pem = store.export_public_pem()
    old_private = base64.b64decode(_document(keys_path)["signing"][0]["ed25519"])  # type: ignore[index]
    assert _files_holding(keys_path, old_private) == ["keystore.json"]

    rotated = _memory("keys", "rotate", "--keys", str(keys_path))

    assert rotated.returncode == 0, rotated.stderr
    assert "Rotated" in rotated.stdout and old_kid in rotated.stdout
    _, new_kek = _kek(keys_path)
    assert not [form for form in _forms(new_kek) if form in rotated.stdout.encode()]
    assert _files_holding(keys_path, old_private) == []
    entries = {e["kid"]: e for e in _document(keys_path)["signing"]}  # type: ignore[union-attr]
    assert set(entries[old_kid]) == {"kid", "public", "created", "retired"}
    store = KeyStore.open(keys_path)
    assert store.signing_key.kid != old_kid
    assert store.export_public_pem(kid=old_kid) == old_pem

    exported = _memory("keys", "export-public", "--keys", str(keys_path), "--jwks")
    assert exported.returncode == 0, exported.stderr
    jwks = json.loads(exported.stdout)
    assert {key["kid"] for key in jwks["keys"]} == {old_kid, store.signing_key.kid}
    for key in (jwks, store.export_public_jwks(), old_pem):
        assert receipts.verify(old_receipt.token, key).memory_id == first.id

    with Memory.open(url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        new_receipt = memory.person("ada").forget(second.id)
    header = json.loads(base64.urlsafe_b64decode(new_receipt.token.split(".")[0] + "=="))
    assert header["kid"] == store.signing_key.kid
    assert receipts.verify(new_receipt.token, jwks).memory_id == second.id
    with pytest.raises(ReceiptError):
        receipts.verify(new_receipt.token, old_pem)  # signed by the new key, not the old one
    with pytest.raises(KeyStoreError, match="No signing key"):
        store.export_public_pem(kid="sig_0000000000000000")


def test_receipts_of_every_generation_verify_after_two_rotations(keys_path: Path) -> None:
    store = KeyStore.open(keys_path)
    claims = {"op": "forget", "tenant": "acme", "app": "app", "about": "p", "agent": "bot",
              "memory_id": "mem_x", "version_ids": ["mem_x.v1"], "driver": "local",
              "erase": "hard"}
    issued = [receipts.issue(claims, store.signing_key, now=datetime.now(UTC))]
    kids = [store.signing_key.kid]
    for _ in range(2):
        store.rotate()
        issued.append(receipts.issue(claims, store.signing_key, now=datetime.now(UTC)))
        kids.append(store.signing_key.kid)
    assert len(set(kids)) == 3
    document = _document(keys_path)
    assert [("ed25519" in entry) for entry in document["signing"]] == [False, False, True]  # type: ignore[union-attr]
    jwks = store.export_public_jwks()
    assert [key["kid"] for key in jwks["keys"]] == kids
    for receipt in issued:
        assert receipts.verify(receipt.token, jwks).claims == receipt.claims


@pytest.mark.parametrize(
    ("step", "at"),
    [("begun", 0), ("rewrapped", 1), ("rewrapped", 3), ("rewrapped", 6)],
    ids=["after-begin", "after-1-of-6", "after-3-of-6", "after-all-before-finish"],
)
def test_a_killed_rotation_leaves_every_subject_openable_and_resumes(
    keys_path: Path, step: str, at: int
) -> None:
    _add_subjects(keys_path, 6)
    before = _secrets(keys_path)
    old_kid, old_kek = _kek(keys_path)
    old_signing = _document(keys_path)["active_signing"]

    killed = subprocess.run([sys.executable, "-c", KILL_AT_CHECKPOINT, str(keys_path), step,
                             str(at)], capture_output=True, text=True, timeout=120, check=False)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    document = _document(keys_path)
    begun_kid, _ = _kek(keys_path)
    assert begun_kid != old_kid
    assert [item["kid"] for item in document["rotation"]["retiring"]] == [old_kid]  # type: ignore[index]
    assert document["active_signing"] != old_signing  # signing rotated at the begin step
    assert sorted(_wrapped_under(keys_path)).count(begun_kid) == at
    assert _secrets(keys_path) == before  # every subject opens, same bytes, mid-rotation

    resumed = _memory("keys", "rotate", "--keys", str(keys_path))

    assert resumed.returncode == 0, resumed.stderr
    assert "Finished an interrupted rotation" in resumed.stdout
    assert f"retired signing key {old_signing}" in resumed.stdout
    assert f"{6 - at} re-wrapped" in resumed.stdout
    assert _kek(keys_path)[0] == begun_kid  # finished the same rotation, not a new one
    assert "rotation" not in _document(keys_path)
    assert set(_wrapped_under(keys_path)) == {begun_kid}
    assert _secrets(keys_path) == before
    assert _files_holding(keys_path, old_kek) == []
    _assert_private(keys_path)


def test_a_rotation_killed_at_an_unplanned_moment_resumes(keys_path: Path) -> None:
    _add_subjects(keys_path, 100)
    before = _secrets(keys_path)
    old_kid, old_kek = _kek(keys_path)
    child = subprocess.Popen([str(BIN / "memory"), "keys", "rotate", "--keys", str(keys_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while old_kid in _kek(keys_path)[0] and time.monotonic() < deadline:
            time.sleep(0.001)  # until the rotation has begun
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert "rotation" in _document(keys_path), "the kill landed after the rotation finished"
    assert _secrets(keys_path) == before

    assert _memory("keys", "rotate", "--keys", str(keys_path)).returncode == 0
    assert _secrets(keys_path) == before
    assert _files_holding(keys_path, old_kek) == []


def test_every_subject_opens_at_every_step_and_in_a_backup_taken_under_the_lock(
    keys_path: Path, tmp_path: Path
) -> None:
    _add_subjects(keys_path, 4)
    before = _secrets(keys_path)
    opened_before = KeyStore.open(keys_path)  # a long-running handle that never reopens
    steps = []

    def checkpoint(step: str, rewrapped: int) -> None:
        steps.append((step, rewrapped))
        assert _secrets(keys_path) == before
        for file in (keys_path / "subjects").glob("*.json"):
            assert opened_before._read_subject(file) == before[file.stem]
        backup = tmp_path / f"backup-{len(steps)}"
        shutil.copytree(keys_path, backup)
        assert _secrets(backup) == before

    rotate_key_store(KeyStore.open(keys_path), checkpoint=checkpoint)

    assert steps == [("begun", 0), ("rewrapped", 1), ("rewrapped", 2), ("rewrapped", 3),
                     ("rewrapped", 4), ("finished", 4)]
    assert _secrets(keys_path) == before


def test_a_second_rotation_at_the_same_time_is_refused(keys_path: Path, tmp_path: Path) -> None:
    _add_subjects(keys_path, 3)
    ready, go = tmp_path / "ready", tmp_path / "go"
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSE_AT_CHECKPOINT, str(keys_path), str(ready), str(go)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), "the first rotation did not reach its first re-wrap"
        during = (keys_path / "keystore.json").read_bytes()
        with pytest.raises(KeyStoreError, match="Another rotation") as refused:
            KeyStore.open(keys_path).rotate()
        assert "changed nothing" in str(refused.value)
        cli = _memory("keys", "rotate", "--keys", str(keys_path))
        assert cli.returncode == 1 and "Another rotation" in cli.stderr
        assert (keys_path / "keystore.json").read_bytes() == during
    finally:
        go.touch()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert _kek(keys_path)[0] == out.strip()
    assert "rotation" not in _document(keys_path)


def test_subjects_destroyed_or_created_during_a_rotation(keys_path: Path) -> None:
    _add_subjects(keys_path, 4)
    stale_handle = KeyStore.open(keys_path)  # opened before the rotation began
    old_ring = stale_handle._state.ring  # what a process that never re-reads would wrap with
    last = sorted((keys_path / "subjects").glob("*.json"))[-1]
    names = {stale_handle._subject_file("acme", "app", f"person:p{n}"): n for n in range(4)}
    doomed = f"person:p{names[last]}"
    late_file = stale_handle._subject_file("acme", "app", "person:latecomer")
    late_secret = bytes(range(32))
    sealed = {}

    def checkpoint(step: str, rewrapped: int) -> None:
        if (step, rewrapped) == ("rewrapped", 1):
            assert stale_handle.destroy_subject("acme", "app", doomed)  # not re-wrapped yet
            keys = stale_handle.subject_keys("acme", "app", "person:newcomer", create=True)
            assert keys is not None
            sealed["newcomer"] = keys.seal(b"newcomer's first memory", b"ad")
            file = stale_handle._subject_file("acme", "app", "person:newcomer")
            assert json.loads(file.read_bytes())["kek"] == _kek(keys_path)[0]  # re-read
            # An old process that missed the begin step wraps a new subject under the old
            # KEK after the re-wrap pass listed the files; the finishing sweep catches it.
            late_file.write_text(json.dumps(old_ring.wrap(late_secret, late_file.stem)))
            late_file.chmod(0o600)

    report = rotate_key_store(KeyStore.open(keys_path), checkpoint=checkpoint)

    assert not last.exists()  # a destroyed subject is never written back
    fresh = KeyStore.open(keys_path)
    assert fresh.subject_keys("acme", "app", doomed, create=False) is None
    newcomer = fresh.subject_keys("acme", "app", "person:newcomer", create=False)
    assert newcomer is not None
    assert newcomer.open(sealed["newcomer"], b"ad") == b"newcomer's first memory"
    assert fresh._read_subject(late_file) == late_secret
    assert report.subjects == 5 and set(_wrapped_under(keys_path)) == {report.kek_active}


def test_a_subject_that_does_not_open_stops_the_rotation_before_the_old_kek_goes(
    keys_path: Path,
) -> None:
    _add_subjects(keys_path, 3)
    old_kid, old_kek = _kek(keys_path)
    damaged = sorted((keys_path / "subjects").glob("*.json"))[1]
    record = json.loads(damaged.read_bytes())
    wrapped = bytearray(base64.b64decode(record["wrapped"]))
    wrapped[0] ^= 0x01
    record["wrapped"] = base64.b64encode(bytes(wrapped)).decode()
    damaged.write_text(json.dumps(record))

    with pytest.raises(KeyStoreError, match=f"subjects/{damaged.name}") as stopped:
        KeyStore.open(keys_path).rotate()

    assert "before destroying" in str(stopped.value)
    document = _document(keys_path)
    assert [item["kid"] for item in document["rotation"]["retiring"]] == [old_kid]  # type: ignore[index]
    assert _files_holding(keys_path, old_kek) == ["keystore.json"]
    damaged.unlink()  # as if restored, or its subject erased
    finished = KeyStore.open(keys_path).rotate()
    assert finished.resumed and finished.kek_retired == (old_kid,) and finished.subjects == 2
    assert _files_holding(keys_path, old_kek) == []
