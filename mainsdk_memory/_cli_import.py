"""The ``memory import`` command: a person's signed export into this store, with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mainsdk_memory import tenant
from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._errors import ExportError
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import bar

__all__ = ["add_import_command", "run_import"]


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExportError(f"The {what} {path} cannot be read ({exc.strerror}).") from exc
    except ValueError as exc:
        raise ExportError(f"The {what} {path} is not JSON; nothing was imported.") from exc


def _read_key(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"The public key file {path} cannot be read ({exc.strerror}).") from exc


def run_import(args: argparse.Namespace) -> int:
    """Run ``memory import``: print a JSON summary (counts and ids) on standard output."""
    document = _read_json(args.source, "export")
    public_key = None if args.public_key is None else _read_key(args.public_key)
    with Memory.open(args.store, keys=args.keys, app=args.app) as memory, \
            tenant.use(args.tenant), bar("importing") as progress:
        report = memory.privacy.import_export(
            document, public_key=public_key, person=args.person, progress=progress
        )
    summary = report.model_dump(mode="json")
    summary["memories"] = len(report.memory_ids)
    sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if report.already_imported:
        print("this export was imported here before: nothing was written", file=sys.stderr)
    else:
        print(f"imported {len(report.memory_ids)} memories ({report.versions} versions), "
              f"{len(report.skipped)} already here, {len(report.forgotten)} forgotten here "
              "(a receipt names them: never brought back)", file=sys.stderr)
    return 0


def add_import_command(commands: Any) -> None:
    """Register ``import`` on ``memory``."""
    command = commands.add_parser(
        "import", help="import a person's signed export (memory export) into this store"
    )
    store_arguments(command)
    command.add_argument("--tenant", required=True, help="the tenant id (the export's)")
    command.add_argument("--from", dest="source", required=True, type=Path,
                         help="the export file (JSON, from memory export --out)")
    command.add_argument("--public-key", type=Path,
                         help="the source key store's public key: PEM, or the JWK Set of "
                              "memory keys export-public --jwks (default: this key store's)")
    command.add_argument("--person", help="import for this person id (default: the export's)")
    command.set_defaults(run=run_import)
