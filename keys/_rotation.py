"""Key rotation: a new KEK re-wraps every subject secret, then the old KEK is destroyed.

Memories are sealed under subject keys, which a rotation does not change: it only re-wraps
each subject's secret under a new key-encryption key, so no memory is read or re-encrypted.
The steps, each ending in one atomic file replacement, so that a crash at any point leaves a
key store in which every subject opens::

    1. take rotate.lock without waiting (a second rotation is refused, nothing changed)
    2. begin, unless keystore.json records an unfinished rotation (then resume it instead):
       one rewrite of keystore.json makes a new KEK active, keeps the old one under
       "rotation" (retiring), and rotates the signing key: a new private key signs from now
       on, the old private key is replaced by its public key
    3. re-wrap: each subject file still wrapped under a retiring KEK is unwrapped, wrapped
       under the active KEK, replaced atomically, read back and checked (subjects.lock
       exclusive for each file, so a subject destroyed meanwhile is never written back); the
       folder is synced once in step 4, since a crash before then can only bring back a
       record under a KEK that is still kept
    4. finish, with subjects.lock exclusive throughout: sweep once more (a process that had
       not yet seen step 2 may have wrapped a new subject under the old KEK), check that
       every subject opens under the active KEK alone, sync the subjects folder, rewrite
       keystore.json without the retiring KEKs, and remove temporary files left by
       interrupted writes

If a subject does not open at all (a damaged file), step 4 refuses to destroy anything and
says which file; the rotation stays resumable.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mainsdk_memory._errors import KeyStoreError
from mainsdk_memory._files import fsync_folder, remove_durably, write_private
from mainsdk_memory._progress import Progress, checked
from mainsdk_memory.keys._locks import ROTATE_LOCK, LockHeld, file_lock
from mainsdk_memory.keys._store import (
    KEYSTORE_FILE,
    SUBJECTS_DIR,
    KekRing,
    _RecordError,
    new_kek_entry,
    new_signing_entry,
    read_document,
    retire_signing_entry,
)

if TYPE_CHECKING:
    from mainsdk_memory.keys._store import KeyStore

__all__ = ["Checkpoint", "RotationReport", "rotate_key_store"]

#: The private test hook: called outside every lock after each durable step, with the step's
#: name and the number of subjects re-wrapped so far: ("begun", 0), ("rewrapped", n) after
#: each file, ("finished", n). tests/test_key_rotation.py kills the process from it to prove
#: that an interrupted rotation leaves every subject openable and resumes.
Checkpoint = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class RotationReport:
    """What one rotation did: key ids and counts only, never key material."""

    resumed: bool
    """True when this call finished a rotation an earlier, interrupted call had begun."""
    kek_retired: tuple[str, ...]
    """Ids of the key-encryption keys destroyed."""
    kek_active: str
    """Id of the key-encryption key that now wraps every subject secret."""
    signing_retired: tuple[str, ...]
    """Ids of the signing keys whose private keys were destroyed (public keys kept)."""
    signing_active: str
    """Id of the signing key that signs new receipts."""
    rewrapped: int
    """Subject secrets this call re-wrapped (the rest were already under the new KEK)."""
    subjects: int
    """Subject secrets in the key store when the rotation finished."""


def _no_checkpoint(step: str, rewrapped: int) -> None:
    """The checkpoint of a real rotation: nothing."""


def _subject_files(root: Path) -> list[Path]:
    folder = root / SUBJECTS_DIR
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))


def _begin(document: dict[str, Any], now: datetime) -> tuple[dict[str, Any], list[str]]:
    """The document of a begun rotation and the ids of the signing keys it retires."""
    fresh_signing = new_signing_entry(now)
    retired = [entry["kid"] for entry in document["signing"] if "ed25519" in entry]
    begun = dict(document)
    begun["kek"] = new_kek_entry()
    begun["signing"] = [retire_signing_entry(e, now) for e in document["signing"]]
    begun["signing"].append(fresh_signing)
    begun["active_signing"] = fresh_signing["kid"]
    begun["rotation"] = {"started": now.isoformat(), "retiring": [document["kek"]]}
    return begun, retired


def _write_document(store: KeyStore, document: dict[str, Any]) -> None:
    write_private(store.path / KEYSTORE_FILE, json.dumps(document).encode())
    store._adopt(*read_document(store.path))


def _rewrap(ring: KekRing, file: Path) -> bool | None:
    """Re-wrap ``file`` under the active KEK: True if rewritten, False if it already was (or
    is gone), None if it does not open. Call with subjects.lock held exclusively."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return False  # destroyed meanwhile: never write it back
    try:
        record = json.loads(data)
        secret = ring.unwrap(record, file.stem)
    except (ValueError, _RecordError):
        return None
    if record["kek"] == ring.active_kid:
        return False
    # The folder is synced once, before the old KEK is destroyed (step 4): until then a
    # crash may only bring back the record under the old KEK, which still opens.
    write_private(file, json.dumps(ring.wrap(secret, file.stem)).encode(), sync_folder=False)
    try:
        again = ring.unwrap(json.loads(file.read_bytes()), file.stem)
    except (ValueError, _RecordError):
        again = b""
    if not hmac.compare_digest(again, secret):  # pragma: no cover - a failing disk
        raise KeyStoreError(
            f"A re-wrapped subject key in {_shown(file)} did not read back; the rotation "
            "stopped before destroying any key. Check the disk, then run `memory keys "
            "rotate` again."
        )
    return True


def _shown(file: Path) -> str:
    """``subjects/<name>.json``: how a subject file is named in messages (no person id)."""
    return f"{SUBJECTS_DIR}/{file.name}"


def _remove_temporaries(root: Path) -> None:
    """Remove temp files of interrupted writes (they may hold a retired KEK). Call with
    subjects.lock exclusive and rotate.lock held, so no write is in flight."""
    for folder in (root, root / SUBJECTS_DIR):
        for path in folder.iterdir():
            if path.name.startswith(".") and path.name.endswith(".tmp") and path.is_file():
                remove_durably(path)


def _refuse(root: Path, unopened: list[Path]) -> KeyStoreError:
    named = ", ".join(_shown(p) for p in unopened[:3])
    more = f" and {len(unopened) - 3} more" if len(unopened) > 3 else ""
    return KeyStoreError(
        f"{len(unopened)} subject key file(s) in {root} do not open under any key of the key "
        f"store ({named}{more}), so the rotation stopped before destroying the old "
        "key-encryption key; every other subject still opens. Restore those files from a "
        "key-store backup, or remove them if their subjects were erased, then run "
        "`memory keys rotate` again to finish."
    )


def rotate_key_store(
    store: KeyStore,
    *,
    checkpoint: Checkpoint = _no_checkpoint,
    progress: Progress | None = None,
) -> RotationReport:
    """Rotate (or finish rotating) ``store``; see the module docstring for the steps.

    ``progress(done, total)`` is called after each subject key is re-wrapped (or found
    already under the new KEK) in step 3, ``total`` being the subject keys found then; the
    sweep of step 4 may add to both. ``checkpoint`` is the private test hook described at
    :data:`Checkpoint`.
    """
    progress = checked(progress)
    root = store.path
    try:
        with file_lock(root / ROTATE_LOCK, exclusive=True, wait=False):
            return _rotate(store, checkpoint, progress)
    except LockHeld:
        raise KeyStoreError(
            f"Another rotation of the key store at {root} is running; this one changed "
            "nothing. Wait for it to finish (`memory keys rotate` then reports nothing left "
            "to do, or finishes what an interrupted run left)."
        ) from None


def _rotate(store: KeyStore, checkpoint: Checkpoint, progress: Progress | None) -> RotationReport:
    root = store.path
    document, stamp = read_document(root)
    store._adopt(document, stamp)  # refuses a damaged store before anything changes
    resumed = "rotation" in document
    if resumed:  # the begin step retired the signing keys it stamped with its start time
        started = document["rotation"]["started"]
        signing_retired = [e["kid"] for e in document["signing"] if e.get("retired") == started]
    else:
        document, signing_retired = _begin(document, datetime.now(UTC))
        with store._subjects_lock(exclusive=True):
            _write_document(store, document)
    checkpoint("begun", 0)
    ring = store._state.ring
    retiring = tuple(sorted(ring.kids - {ring.active_kid}))

    rewrapped = 0
    files = _subject_files(root)
    seen = {file.name for file in files}
    for number, file in enumerate(files, start=1):
        with store._subjects_lock(exclusive=True):
            done = _rewrap(ring, file)
        if done:
            rewrapped += 1
            checkpoint("rewrapped", rewrapped)
        if progress is not None:
            progress(number, len(files))
    if progress is not None and not files:
        progress(0, 0)

    final = ring.only_active()
    with store._subjects_lock(exclusive=True):
        unopened: list[Path] = []
        files = _subject_files(root)
        for file in files:
            done = _rewrap(ring, file)
            rewrapped += bool(done)
            if file.name not in seen:  # wrapped meanwhile by a process on the old KEK
                seen.add(file.name)
                if progress is not None:
                    progress(len(seen), len(seen))
            try:
                final.unwrap(json.loads(file.read_bytes()), file.stem)
            except FileNotFoundError:
                continue
            except (ValueError, _RecordError):
                unopened.append(file)
        if unopened:
            raise _refuse(root, unopened)
        fsync_folder(root / SUBJECTS_DIR)  # every re-wrap is durable before the old KEK goes
        finished = {key: value for key, value in document.items() if key != "rotation"}
        _write_document(store, finished)
        _remove_temporaries(root)
        subjects = len(_subject_files(root))
    checkpoint("finished", rewrapped)
    return RotationReport(
        resumed=resumed,
        kek_retired=retiring,
        kek_active=ring.active_kid,
        signing_retired=tuple(signing_retired),
        signing_active=store._state.active_signing,
        rewrapped=rewrapped,
        subjects=subjects,
    )
