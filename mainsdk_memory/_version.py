"""The installed version of mainsdk-memory, which every command answers to ``--version``."""

from __future__ import annotations

import argparse
from importlib import metadata

__all__ = ["DISTRIBUTION", "add_version_argument", "version"]

#: The distribution's name on the package index (pyproject.toml, ``[project] name``).
DISTRIBUTION = "mainsdk-memory"
#: What :func:`version` says when the package runs from a folder that was never installed.
UNKNOWN = "0+unknown"


def version() -> str:
    """The installed distribution's version (its metadata), or ``0+unknown`` if not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def add_version_argument(parser: argparse.ArgumentParser) -> None:
    """``--version`` on ``parser``: prints ``<prog> <version>`` and exits 0."""
    parser.add_argument(
        "--version", action="version", version=f"{parser.prog} {version()}",
        help="print the program's name and version, then exit",
    )
