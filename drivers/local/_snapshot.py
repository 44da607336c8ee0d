"""Packed snapshots of a local subject folder's index: columns, postings and tags as arrays.

A snapshot (``.snapshot`` in the subject folder, ADR 0100) lets a new process open a folder
of many memories without decoding every memory file: it holds the index's numeric columns,
the blind-term postings (CSR), the tag and label sets and the sealed embeddings as numpy
arrays in an uncompressed ``.npz`` (read with ``allow_pickle=False``), plus, per memory file,
the identity (inode, size, mtime) of the file it was built from. The memory files stay the
source of truth: a file whose identity differs is decoded again, a missing, torn or foreign
snapshot is ignored, and rows are decoded from their file only when a read returns them.
Snapshots are written atomically (temp file, rename) and never synced: losing one costs a
slower open, never a memory.
"""

from __future__ import annotations

import json
import os
import secrets
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mainsdk_memory._files import FILE_MODE

SNAPSHOT = ".snapshot"
_VERSION = 1

#: The arrays of a snapshot, with their dtype kind (S: bytes, i: integer, b: bool, u: uint8).
_ARRAYS = {
    "ids": "S", "inode": "i", "size": "i", "mtime": "i", "first": "i",
    "version": "i", "tenant": "i", "app": "i", "subject": "i", "kind": "i", "trust": "i",
    "agent": "i", "session": "i", "created": "i", "valid_from": "i", "valid_to": "i",
    "open": "b", "pinned": "b", "session_only": "b", "length": "i",
    "tokens": "S", "t_ptr": "i", "t_slots": "i", "t_counts": "i",
    "tags": "S", "g_ptr": "i", "g_slots": "i", "l_ptr": "i", "l_slots": "i",
    "v_slots": "i", "v_ptr": "i", "v_bytes": "u",
}  # fmt: skip


class Snapshot(NamedTuple):
    """A snapshot as read: its metadata (codes, labels, log position) and its arrays."""

    meta: dict[str, Any]
    arrays: dict[str, npt.NDArray[Any]]


def write(folder: Path, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
    """Replace the folder's snapshot atomically (temp file, rename; not synced)."""
    path = folder / SNAPSHOT
    tmp = folder / f".{SNAPSHOT}.{secrets.token_hex(8)}.tmp"
    document = json.dumps({**meta, "version": _VERSION}).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as file:
            columns: dict[str, Any] = {"meta": np.frombuffer(document, np.uint8), **arrays}
            np.savez(file, **columns)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read(folder: Path) -> Snapshot | None:
    """The folder's snapshot, or ``None`` if there is none or it is torn, foreign or of
    another version (the caller then decodes the memory files)."""
    try:
        with np.load(folder / SNAPSHOT, allow_pickle=False) as loaded:
            meta = json.loads(loaded["meta"].tobytes())
            arrays = {name: loaded[name] for name in _ARRAYS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if not isinstance(meta, dict) or meta.get("version") != _VERSION:
        return None
    for name, kind in _ARRAYS.items():
        if arrays[name].ndim != 1 or arrays[name].dtype.kind != kind:
            return None
    return Snapshot(meta, arrays)


def remove(folder: Path) -> None:
    """Delete the folder's snapshot if there is one (the caller syncs the folder)."""
    (folder / SNAPSHOT).unlink(missing_ok=True)
