"""The one file-lock module: shared and exclusive, waiting or not, and a typed error without locks.

Locks are taken by another process where the semantics need one (a lock held elsewhere), so
what is asserted is what the key store and the local driver rely on across processes. A
Python without ``fcntl`` (``sys.modules["fcntl"] = None`` in a fresh interpreter, and no
portalocker on this system) still imports ``mainsdk_memory``; what needs a lock raises
:class:`ConfigurationError` (never ``ImportError``) and leaves nothing half-made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mainsdk_memory import ConfigurationError
from mainsdk_memory._locking import LockHeld, lock, release, upgrade
from mainsdk_memory.keys._locks import file_lock

#: Holds a lock on argv[1] (shared or exclusive, argv[2]) until its stdin closes.
HOLDER = r"""
import os, sys
from mainsdk_memory._locking import lock, release
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
lock(fd, exclusive=sys.argv[2] == "exclusive")
print("held", flush=True)
sys.stdin.read()
release(fd)
"""


class Holder:
    def __init__(self, path: Path, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "held"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def test_an_exclusive_lock_elsewhere_refuses_both_kinds_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    holder = Holder(path, "exclusive")
    try:
        for exclusive in (True, False):
            fd = _open(path)
            try:
                with pytest.raises(LockHeld):
                    lock(fd, exclusive=exclusive, wait=False)
            finally:
                release(fd)
    finally:
        holder.stop()
    fd = _open(path)  # released: free again
    try:
        lock(fd, exclusive=True, wait=False)
    finally:
        release(fd)


def test_shared_locks_share_and_keep_an_exclusive_one_out(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    holder = Holder(path, "shared")
    try:
        shared = _open(path)
        lock(shared, exclusive=False, wait=False)  # two readers at once
        exclusive = _open(path)
        try:
            with pytest.raises(LockHeld):
                lock(exclusive, exclusive=True, wait=False)
        finally:
            release(exclusive)
        release(shared)
    finally:
        holder.stop()


def test_an_upgraded_lock_is_exclusive(tmp_path: Path) -> None:
    path = tmp_path / "u.lock"
    fd = _open(path)
    lock(fd, exclusive=False)
    upgrade(fd)
    other = _open(path)
    try:
        with pytest.raises(LockHeld):
            lock(other, exclusive=False, wait=False)
    finally:
        release(other)
        release(fd)


def test_the_key_store_lock_names_the_file_held(tmp_path: Path) -> None:
    path = tmp_path / "rotate.lock"
    holder = Holder(path, "exclusive")
    try:
        with pytest.raises(LockHeld) as held, file_lock(path, exclusive=True, wait=False):
            pass
        assert held.value.args == ("rotate.lock",)
    finally:
        holder.stop()
    with file_lock(path, exclusive=True, wait=False):
        assert path.stat().st_mode & 0o777 == 0o600


#: Run in a fresh interpreter where ``import fcntl`` fails.
NO_FCNTL = r"""
import json, sys
sys.modules["fcntl"] = None
result = {}
import mainsdk_memory
from mainsdk_memory import ConfigurationError, Memory, tenant
from mainsdk_memory.keys import KeyStore
result["imported"] = True
root = sys.argv[1]
for step, run in (
    ("keys", lambda: KeyStore.create(root + "/keys")),
    ("open", lambda: Memory.open("local:" + root + "/memories", keys=root + "/keys", app="a")),
):
    try:
        run()
        result[step] = "works"
    except ConfigurationError as exc:
        result[step] = "ConfigurationError: " + str(exc)
    except ImportError as exc:
        result[step] = "ImportError: " + str(exc)
print(json.dumps(result))
"""


def test_without_fcntl_the_package_imports_and_locking_raises_a_typed_error(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_FCNTL, str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["imported"] is True
    for step in ("keys", "open"):
        outcome = result[step]
        assert outcome == "works" or outcome.startswith("ConfigurationError: "), outcome
    if result["keys"] != "works":  # no portalocker here: the message says what to install
        assert "portalocker" in result["keys"] and "fcntl" in result["keys"]
        assert not (tmp_path / "keys" / "keystore.json").exists()  # nothing half-made


def test_the_error_without_locks_is_a_configuration_error() -> None:
    from mainsdk_memory._locking import NO_LOCKS

    error = ConfigurationError(NO_LOCKS)
    assert "pip install 'portalocker[win32]'" in str(error)
    assert "main-mem-e070" in str(error)
