"""The ``memory reindex`` command: backfill embeddings, per tenant, with progress.

Each tenant gets a progress bar on standard error when it is a terminal, then one summary
line (stderr); the JSON summary goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mainsdk_memory import tenant
from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import Progress, bar
from mainsdk_memory.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, StaticEmbedder

__all__ = ["add_reindex_command"]


def _embedder(name: str) -> Embedder:
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    return StaticEmbedder()


def _people(args: argparse.Namespace) -> list[str]:
    people = list(args.person or [])
    for source in args.people or []:
        try:
            text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"Cannot read the people file {source}: {exc}.") from None
        people.extend(line.strip() for line in text.splitlines() if line.strip())
    return people


def _recording(shown: Progress, last: list[int]) -> Progress:
    """``shown`` (a bar's callback) that also keeps the last ``(done, total)`` in ``last``, for
    the summary line printed after the bar."""

    def progress(done: int, total: int) -> None:
        last[:] = [done, total]
        shown(done, total)

    return progress


def _reindex(args: argparse.Namespace) -> int:
    people = _people(args)
    summary: dict[str, Any] = {"embedder": args.embedder, "tenants": {}}
    with Memory.open(
        args.store, keys=args.keys, app=args.app, embedder=_embedder(args.embedder)
    ) as memory:
        for tenant_id in args.tenant:
            last = [0, 0]

            with tenant.use(tenant_id), bar(f"reindex {tenant_id}") as shown:
                report = memory.reindex(
                    people, batch=args.batch, progress=_recording(shown, last)
                )
            summary["tenants"][tenant_id] = report.as_dict()
            print(
                f"reindex {tenant_id}: {last[0]}/{last[1]} memories; embedded "
                f"{report.embedded} of {report.scanned} versions "
                f"({report.current} already current, {report.unreached} memories of people "
                "not named)",
                file=sys.stderr,
            )
    sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return 0


def add_reindex_command(commands: Any) -> None:
    """Register ``reindex`` on ``memory``."""
    parser = commands.add_parser(
        "reindex", help="give stored memories this embedder's vectors (resumable)"
    )
    store_arguments(parser)
    parser.add_argument("--tenant", required=True, action="append",
                        help="a tenant id (repeatable: each is reindexed in turn)")
    parser.add_argument("--embedder", choices=("static", "minilm", "hashing"), default="static",
                        help="the embedder the store is opened with (default: static)")
    parser.add_argument("--person", action="append",
                        help="a person whose memories to reindex (repeatable); shared memories "
                        "are always reindexed")
    parser.add_argument("--people", action="append", type=Path, metavar="FILE",
                        help="a file of person ids, one a line (- for stdin; repeatable)")
    parser.add_argument("--batch", type=int, default=256, help="memories per batch (256)")
    parser.set_defaults(run=_reindex)
