"""The ``db`` driver: memories in your own SQLite file or PostgreSQL database.

Open a store with ``Memory.open("sqlite:///memories.db", ...)`` or
``Memory.open("postgresql+psycopg://app@db.example/app", ...)``. PostgreSQL needs the schema
first: ``memory db upgrade URL`` (or :func:`upgrade`). SQLAlchemy and psycopg are optional
dependencies (``pip install 'mainsdk-memory[db]'``), imported only when a db store is opened,
so ``import mainsdk_memory`` works without them. See docs/drivers.md.
"""

from __future__ import annotations

from typing import Any

from mainsdk_memory._errors import ConfigurationError
from mainsdk_memory._progress import Progress, bar, checked
from mainsdk_memory.drivers._protocol import Driver

__all__ = ["from_url", "upgrade", "upgrade_command"]


def _implementation() -> Any:
    try:
        from mainsdk_memory.drivers.db import _driver
    except ImportError as exc:
        raise ConfigurationError(
            "The db driver needs SQLAlchemy (and psycopg for PostgreSQL): "
            "pip install 'mainsdk-memory[db]'."
        ) from exc
    return _driver


def from_url(url: str) -> Driver:
    """Open the db store at ``url`` (``sqlite:///PATH`` or ``postgresql+psycopg://…``).

    Raises :class:`~mainsdk_memory.ConfigurationError` for a bad URL, a database without
    the schema (run ``memory db upgrade URL``) or a schema newer than this code.
    """
    driver: Driver = _implementation().DbDriver(url)
    return driver


def upgrade(url: str, *, progress: Progress | None = None) -> tuple[int, int]:
    """Create or upgrade the schema at ``url``; return the versions before and after.

    ``progress(done, total)`` is called after each migration applied (``(0, 0)`` when the
    schema is current); the migrations commit together at the end.
    """
    progress = checked(progress)
    before, after = _implementation().upgrade(url, progress=progress)
    return int(before), int(after)


def upgrade_command(url: str) -> int:
    """``memory db upgrade URL``: upgrade, print what happened, return the exit status.

    A progress bar (one step per migration) is drawn on standard error when it is a terminal.
    Errors propagate as :class:`~mainsdk_memory.MemorySDKError` for the CLI to report.
    """
    with bar("db upgrade", unit="migrations") as progress:
        before, after = upgrade(url, progress=progress)
    if before == after:
        print(f"The schema is already at version {after}; nothing to do.")
    elif before == 0:
        print(f"Created the mainsdk-memory schema, version {after}.")
    else:
        print(f"Upgraded the mainsdk-memory schema from version {before} to {after}.")
    return 0
