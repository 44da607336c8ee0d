"""The ``memory import-jsonl`` command: one memory per JSON line, through ``remember_many``."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from mainsdk_memory import tenant
from mainsdk_memory._bulk import DEFAULT_BATCH, ITEM_FIELDS, MAX_BATCH
from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._errors import BatchError, InvalidInputError
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import bar
from mainsdk_memory._records import Source

__all__ = ["MAX_LINE_CHARS", "add_import_jsonl_command", "item_of_line"]

MAX_LINE_CHARS = 4 * 1024 * 1024
"""A longer line is refused unread."""

LINE_FIELDS = ITEM_FIELDS - {"data"}
"""What a line may hold: an item of ``remember_many`` but typed ``data`` (a pydantic model a
JSON line cannot name); ``valid_from`` is an ISO 8601 time with its offset, ``source`` a
:class:`~mainsdk_memory.Source` as JSON."""


def item_of_line(number: int, line: str) -> dict[str, Any]:
    """The ``remember_many`` item of one JSON line (``number`` counts from 1), or
    :class:`InvalidInputError` naming the line, never its content."""
    if len(line) > MAX_LINE_CHARS:
        raise InvalidInputError(
            f"Line {number} is longer than {MAX_LINE_CHARS:,} characters (a text and at most "
            "1 MiB of metadata); nothing was stored."
        )
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise InvalidInputError(f"Line {number} is not JSON; nothing of its batch was stored."
                                ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"Line {number} is not a JSON object with a 'text'.")
    unknown = set(value) - LINE_FIELDS
    if unknown:
        raise InvalidInputError(
            f"Line {number} holds a field a line does not take; lines take "
            f"{', '.join(sorted(LINE_FIELDS))}."
        )
    item = dict(value)
    if isinstance(item.get("valid_from"), str):
        try:
            item["valid_from"] = datetime.fromisoformat(item["valid_from"])
        except ValueError:
            raise InvalidInputError(
                f"Line {number}: valid_from is an ISO 8601 time with its offset."
            ) from None
    if item.get("source") is not None:
        try:
            item["source"] = Source.model_validate(item["source"])
        except ValidationError:
            raise InvalidInputError(
                f"Line {number}: source is a Source as JSON, e.g. "
                '{"kind": "import", "id": "crm"}.'
            ) from None
    return item


def _lines(stream: TextIO, skip: int) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(stream, start=1):
        if number > skip and line.strip():
            yield number, line


def _run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch <= MAX_BATCH:
        raise InvalidInputError(f"--batch is from 1 to {MAX_BATCH}.")
    if args.skip < 0:
        raise InvalidInputError("--skip is a number of lines, 0 or more.")
    try:
        stream = sys.stdin if str(args.source) == "-" else args.source.open(encoding="utf-8")
        with stream:
            lines = list(_lines(stream, args.skip))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"Cannot read {args.source}: {type(exc).__name__}.") from None
    items = [item_of_line(number, line) for number, line in lines]  # all checked first
    outcomes: Counter[str] = Counter()
    with Memory.open(args.store, keys=args.keys, app=args.app) as memory, \
            tenant.use(args.tenant), bar("importing") as progress:
        handle = (memory.person(args.person, session=args.session) if args.as_person
                  else memory.acting_for(args.person, agent=args.agent, session=args.session))
        try:
            records = handle.remember_many(
                items, batch=args.batch, formation=False if args.no_formation else None,
                progress=progress,
            )
        except BatchError as error:
            line = lines[error.index][0]
            what = "line" if error.reason == "item" else "the batch from line"
            print(f"memory import-jsonl: stopped at {what} {line}: {error.error}",
                  file=sys.stderr)
            if error.stored >= len(lines):
                print("  every line is stored (their links may be incomplete)", file=sys.stderr)
                return 1
            first_unstored = lines[error.stored][0]
            print(f"  every line before line {first_unstored} is stored, nothing after it; "
                  f"once the cause is fixed, resume with --skip {first_unstored - 1}",
                  file=sys.stderr)
            return 1
        for record in records:
            outcomes[record.formation.outcome if record.formation else "stored-as-is"] += 1
    summary = {"lines": len(lines), "skipped_lines": args.skip, "outcomes": dict(outcomes)}
    sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return 0


def add_import_jsonl_command(commands: Any) -> None:
    """Register ``import-jsonl`` on ``memory``."""
    command = commands.add_parser(
        "import-jsonl",
        help="remember one memory per JSON line (a migration), in batches, with progress",
    )
    store_arguments(command)
    command.add_argument("--tenant", required=True, help="the tenant id")
    command.add_argument("--person", required=True, help="the person the memories are about")
    who = command.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="write as this agent acting for the person")
    who.add_argument("--as-person", action="store_true",
                     help="write as the person themself (their memories are confirmed)")
    command.add_argument("--session", help="the session to write in (optional)")
    command.add_argument("--from", dest="source", required=True, type=Path,
                         help="the JSON Lines file ('-': standard input); each line an object "
                              "with a text and any of remember's arguments")
    command.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                         help=f"lines per batch, stored whole or not at all "
                              f"(default {DEFAULT_BATCH})")
    command.add_argument("--no-formation", action="store_true",
                         help="store each line as it is (the fastest path): no duplicate or "
                              "supersession detection")
    command.add_argument("--skip", type=int, default=0,
                         help="skip this many lines first (to resume a stopped import)")
    command.set_defaults(run=_run)
