"""Configuration of memory-check: ``[tool.memory-check]`` in the nearest pyproject.toml.

The nearest ``pyproject.toml`` that has a ``[tool.memory-check]`` table, looking from the first
checked path (or the working directory) upward, is the configuration; paths in it are relative
to its folder. Keys::

    paths = ["src", "tests"]              # what to check when no path is given
    select = ["MAIN-MEM-0022"]            # codes or prefixes ("MAIN-MEM-002"); default all
    ignore = ["MAIN-MEM-0026"]
    exclude = ["tests/fixtures", "*_pb2.py"]
    per-file-ignores = { "tests/*" = ["MAIN-MEM-0026"] }
    soft-erase-schemes = ["mem0"]         # MAIN-MEM-0020
    soft-erase-drivers = ["VendorArchiveDriver"]
    untrusted-calls = ["myapp.scraper.fetch_page"]  # MAIN-MEM-0023
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Config", "ConfigError", "find_config", "load_config"]

_KEYS = frozenset(
    {"paths", "select", "ignore", "exclude", "per-file-ignores", "soft-erase-schemes",
     "soft-erase-drivers", "untrusted-calls"}
)


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why."""


@dataclass(frozen=True)
class Config:
    """What ``[tool.memory-check]`` says, with the folder its relative paths start from."""

    root: Path
    file: Path | None = None
    paths: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    soft_erase_schemes: tuple[str, ...] = ()
    soft_erase_drivers: tuple[str, ...] = ()
    untrusted_calls: tuple[str, ...] = ()
    driver_entry_points: Mapping[str, str] = field(default_factory=dict)
    """The same pyproject's ``[project.entry-points."mainsdk_memory.drivers"]``."""


def _has_table(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(data.get("tool"), dict) and "memory-check" in data["tool"]


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.memory-check]`` table, from ``start`` upward."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


def _strings(table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.memory-check] {key} must be a list of strings")
    return tuple(value)


def load_config(path: Path) -> Config:
    """Read and check ``[tool.memory-check]`` of one pyproject.toml."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as TOML ({exc})") from exc
    table = data.get("tool", {}).get("memory-check", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.memory-check] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [tool.memory-check]: {', '.join(unknown)}; "
            f"known keys: {', '.join(sorted(_KEYS))}"
        )
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict) or not all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) for v in per_file.values()
    ):
        raise ConfigError(
            "[tool.memory-check] per-file-ignores must map glob patterns to lists of codes"
        )
    entry_points = (
        data.get("project", {}).get("entry-points", {}).get("mainsdk_memory.drivers", {})
    )
    if not isinstance(entry_points, dict):
        entry_points = {}
    return Config(
        root=path.parent.resolve(),
        file=path,
        paths=_strings(table, "paths"),
        select=_strings(table, "select"),
        ignore=_strings(table, "ignore"),
        exclude=_strings(table, "exclude"),
        per_file_ignores={k: tuple(v) for k, v in per_file.items()},
        soft_erase_schemes=_strings(table, "soft-erase-schemes"),
        soft_erase_drivers=_strings(table, "soft-erase-drivers"),
        untrusted_calls=_strings(table, "untrusted-calls"),
        driver_entry_points={k: v for k, v in entry_points.items() if isinstance(v, str)},
    )
