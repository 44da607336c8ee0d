"""Advisory file locks everywhere: flock on POSIX, portalocker on Windows, else a typed error.

The key store (``keys/_locks.py``) and the local driver (``drivers/local``) lock files through
this module and nothing else. A lock is taken on an open descriptor, shared or exclusive,
waiting or not, and dropped by :func:`release` (which closes the descriptor):

- **POSIX**: ``flock(2)``. The kernel drops a lock when its holder dies, so a killed process
  never leaves a stale one, and an operator can take one from a shell with ``flock(1)``.
- **Windows** (no ``fcntl``): ``LockFileEx`` through portalocker's ``Win32Locker`` (the
  ``portalocker[win32]`` dependency, declared for Windows only), which has true shared locks
  and a waiting exclusive one, and is likewise dropped by the system when its holder dies.
- **Neither** (a Python with no ``fcntl`` and no portalocker): ``import mainsdk_memory``
  works, and taking a lock raises :class:`~mainsdk_memory.ConfigurationError` saying what to
  install, instead of an ``ImportError`` at import or a silent store without locks.

Changing a held lock from shared to exclusive (:func:`upgrade`) is not atomic on either
platform: another writer may run in between, so a caller re-reads what it decided on.
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
from typing import Any

from mainsdk_memory._errors import ConfigurationError

__all__ = ["LockHeld", "lock", "release", "require", "upgrade"]

NO_LOCKS = (
    "This Python has no file locks: it has no fcntl module (not a POSIX system) and "
    "portalocker is not installed. The key store and the local driver need them. On "
    "Windows, install portalocker, which mainsdk-memory declares there: "
    "pip install 'portalocker[win32]'; elsewhere, run on a POSIX system."
)


class LockHeld(Exception):
    """A non-blocking lock is held by another process (or another descriptor of this one)."""


@dataclass(frozen=True)
class _Portalocker:
    locker: Any  # portalocker.portalocker.Win32Locker()
    exclusive: int
    shared: int
    non_blocking: int
    already_locked: type[Exception]


@functools.cache
def _fcntl() -> Any | None:
    try:
        return importlib.import_module("fcntl")
    except ImportError:  # not POSIX (or blocked: sys.modules["fcntl"] = None)
        return None


@functools.cache
def _portalocker() -> _Portalocker | None:
    try:
        module = importlib.import_module("portalocker.portalocker")
        locker = module.Win32Locker()  # Windows only; raises ImportError without pywin32
    except (ImportError, AttributeError):
        return None
    flags = importlib.import_module("portalocker.constants").LockFlags
    exceptions = importlib.import_module("portalocker.exceptions")
    return _Portalocker(locker, int(flags.EXCLUSIVE), int(flags.SHARED),
                        int(flags.NON_BLOCKING), exceptions.AlreadyLocked)


def require() -> None:
    """Raise :class:`ConfigurationError` unless this Python can take file locks: called before
    anything is written, so a store that could never be locked is not left half-made."""
    if _fcntl() is None and _portalocker() is None:
        raise ConfigurationError(NO_LOCKS)


def lock(fd: int, *, exclusive: bool, wait: bool = True) -> None:
    """Lock the open file ``fd``: shared or exclusive; with ``wait=False`` a conflicting
    lock raises :class:`LockHeld` at once. Raises :class:`ConfigurationError` where this
    Python has no file locks."""
    fcntl = _fcntl()
    if fcntl is not None:
        operation = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        if not wait:
            operation |= fcntl.LOCK_NB
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError as exc:
            raise LockHeld() from exc
        return
    porta = _portalocker()
    if porta is None:
        raise ConfigurationError(NO_LOCKS)
    flags = porta.exclusive if exclusive else porta.shared
    if not wait:
        flags |= porta.non_blocking
    try:
        porta.locker.lock(fd, flags)
    except porta.already_locked as exc:
        raise LockHeld() from exc


def upgrade(fd: int) -> None:
    """Turn the shared lock held on ``fd`` into an exclusive one, waiting (not atomic)."""
    _unlock(fd)
    lock(fd, exclusive=True)


def release(fd: int) -> None:
    """Drop the lock held on ``fd`` (if any) and close it."""
    try:
        _unlock(fd)
    finally:
        os.close(fd)


def _unlock(fd: int) -> None:
    fcntl = _fcntl()
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    porta = _portalocker()
    if porta is not None:
        porta.locker.unlock(fd)  # a range that is not locked is no error
