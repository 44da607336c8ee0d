"""Advisory locks of the key store: one rotation at a time, no subject change mid-re-wrap.

Two lock files sit in the key store folder (0600)::

    rotate.lock     held exclusively, without waiting, for the whole of a rotation: a second
                    rotation is refused at once instead of racing the first
    subjects.lock   shared by every writer of ``subjects/`` (creating or destroying a subject),
                    exclusive for each step of a rotation that rewrites a subject file or
                    keystore.json, so a destroyed subject is never written back by a re-wrap
                    and a backup taken under it is consistent. Its content is the destroy
                    epoch: one byte is appended for every destroyed subject
                    (:func:`announce_destroy`), so its size tells every process holding
                    subject keys that one is gone (ADR 0039); the lock never reads it

They are ``flock(2)`` locks (``LockFileEx`` on Windows; :mod:`mainsdk_memory._locking`): the
system drops them when the holding process dies, so a killed rotation never leaves a stale
lock behind, and an operator can take one from a shell with ``flock(1)`` (docs/keys.md,
"Backups").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mainsdk_memory._files import FILE_MODE
from mainsdk_memory._locking import LockHeld, lock, release

__all__ = ["ROTATE_LOCK", "SUBJECTS_LOCK", "LockHeld", "announce_destroy", "file_lock"]

ROTATE_LOCK = "rotate.lock"
SUBJECTS_LOCK = "subjects.lock"


@contextmanager
def file_lock(path: Path, *, exclusive: bool, wait: bool = True) -> Iterator[None]:
    """Hold a lock on ``path`` (created 0600 if missing) for the ``with`` block.

    With ``wait=False`` a lock held elsewhere raises :class:`LockHeld` at once; where this
    Python has no file locks, :class:`~mainsdk_memory.ConfigurationError`.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # independent of the umask
        try:
            lock(fd, exclusive=exclusive, wait=wait)
        except LockHeld as exc:
            raise LockHeld(path.name) from exc
        yield
    finally:
        release(fd)


def announce_destroy(path: Path) -> None:
    """Append one byte to the lock file ``path`` (created 0600 if missing): the destroy epoch
    moves, and every key store handle that reads its size re-checks the subjects it holds."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # independent of the umask
        os.write(fd, b"\n")
    finally:
        os.close(fd)
