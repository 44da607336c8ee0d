"""Durable, private file writes: 0600 files, atomic replace, create-once, synced removal."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) if missing and make it 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(path, DIR_MODE)


def _write_temp(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # independent of the umask
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes, *, sync_folder: bool = True) -> None:
    """Replace ``path`` atomically with ``data`` (0600): readers see the old or the new file.

    With ``sync_folder=False`` the replacement is atomic but its durability is left to a later
    :func:`fsync_folder` of the same folder, so many replacements share one folder sync; until
    then a crash may bring back the old file (whole, never a mix).
    """
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if sync_folder:
        _fsync_dir(path.parent)


def fsync_folder(path: Path) -> None:
    """Make every replacement and removal done so far in the folder ``path`` durable."""
    _fsync_dir(path)


def create_private_once(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; return whether this call created it.

    The file appears complete or not at all (hard link of a synced temp file), and of two
    racing creators exactly one wins, so two processes never hold different keys for one name.
    """
    tmp = _write_temp(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)
    return True


def remove_durably(path: Path) -> bool:
    """Unlink ``path`` and sync its folder; return whether it existed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    _fsync_dir(path.parent)
    return True
