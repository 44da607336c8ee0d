"""The privacy commands of ``memory``: erase, export, receipts and retention.

``erase`` and ``export`` draw a progress bar on standard error when it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from mainsdk_memory import tenant
from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._files import write_private
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import bar

__all__ = ["add_privacy_commands"]


def _store_arguments(parser: argparse.ArgumentParser, *, person: bool) -> None:
    store_arguments(parser)
    parser.add_argument("--tenant", required=True, help="the tenant id")
    if person:
        parser.add_argument("--person", required=True, help="the person id")


def _open(args: argparse.Namespace, **options: Any) -> Memory:
    return Memory.open(args.store, keys=args.keys, app=args.app, **options)


def _write_json(document: object, out: Path | None) -> None:
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        write_private(out, text.encode("utf-8"))  # 0600: an export holds plaintext


def _erase(args: argparse.Namespace) -> int:
    with _open(args) as memory, tenant.use(args.tenant), bar("erase") as progress:
        receipt = memory.privacy.erase(args.person, progress=progress)
    if args.receipt is not None:
        args.receipt.write_text(receipt.token + "\n")
    left = "nothing was left" if receipt.claims["key"] == "absent" else "key destroyed"
    print(f"erased {len(receipt.memory_ids)} memories of the person ({left}); "
          f"receipt {receipt.id}" + (f" written to {args.receipt}" if args.receipt else ""))
    if args.receipt is None:
        print(receipt.token)
    return 0


def _export(args: argparse.Namespace) -> int:
    with _open(args) as memory, tenant.use(args.tenant), bar("export") as progress:
        document = memory.privacy.export(args.person, progress=progress)
    _write_json(document, args.out)
    if args.out is not None:
        print(f"exported {len(document['memories'])} memories to {args.out}", file=sys.stderr)
    return 0


def _receipts(args: argparse.Namespace) -> int:
    with _open(args) as memory, tenant.use(args.tenant):
        issued = memory.privacy.receipts()
    _write_json([{"token": r.token, "claims": dict(r.claims)} for r in issued], None)
    return 0


def _retention_rule(text: str) -> tuple[str, timedelta]:
    label, sep, days = text.partition("=")
    try:
        if not sep or float(days) <= 0:
            raise ValueError
        return label, timedelta(days=float(days))
    except ValueError:
        raise argparse.ArgumentTypeError("use LABEL=DAYS, e.g. personal=365") from None


def _retention(args: argparse.Namespace) -> int:
    rules = dict(args.retain or [])
    with _open(args, retention=rules) as memory, tenant.use(args.tenant):
        issued = memory.enforce_retention()
    print(f"erased {len(issued)} expired memories")
    for receipt in issued:
        print(receipt.token)
    return 0


def add_privacy_commands(commands: Any) -> None:
    """Register ``erase``, ``export``, ``receipts`` and ``retention`` on ``memory``."""
    erase = commands.add_parser("erase", help="erase everything about a person, provably")
    _store_arguments(erase, person=True)
    erase.add_argument("--receipt", type=Path, help="write the signed receipt to this file")
    erase.set_defaults(run=_erase)
    export = commands.add_parser("export", help="export everything held about a person (JSON)")
    _store_arguments(export, person=True)
    export.add_argument("--out", type=Path, help="write to this file instead of stdout")
    export.set_defaults(run=_export)
    listed = commands.add_parser("receipts", help="list the receipts issued (ids only)")
    _store_arguments(listed, person=False)
    listed.set_defaults(run=_receipts)
    retention = commands.add_parser("retention", help="erase memories past their retention")
    _store_arguments(retention, person=False)
    retention.add_argument("--retain", action="append", type=_retention_rule,
                           metavar="LABEL=DAYS", help="a label's lifetime (repeatable)")
    retention.set_defaults(run=_retention)


