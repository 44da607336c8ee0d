"""The ``memory consolidate`` command: consolidate the memories of the people named, per tenant.

The store knows people only by pseudonyms (ADR 0084), so the operator names them
(``--person``, ``--people FILE``); each is consolidated with their own handle, or as
``--agent`` (whose grant decides what it sees). Progress goes to stderr without a person's
id (a bar per person when stderr is a terminal, then one summary line); the JSON summary on
stdout holds counts and memory ids, one report per person in the order named.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mainsdk_memory import tenant
from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._cli_reindex import _people, _recording
from mainsdk_memory._consolidation import ConsolidationReport
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import bar

__all__ = ["add_consolidate_command"]

#: The counts a tenant's summary adds up over its people.
_SUMMED = ("memories", "left_out", "groups", "merged", "insights", "superseded", "covered",
           "left_for_person", "changed")


def _consolidate(args: argparse.Namespace) -> int:
    people = list(dict.fromkeys(_people(args)))
    if not people:
        raise InvalidInputError(
            "Name the people to consolidate with --person ID (repeatable) or --people FILE: "
            "the store knows only pseudonyms. Nothing was changed."
        )
    summary: dict[str, Any] = {"tenants": {}}
    with Memory.open(args.store, keys=args.keys, app=args.app) as memory:
        for tenant_id in args.tenant:
            reports: list[ConsolidationReport] = []
            with tenant.use(tenant_id):
                for number, person in enumerate(people, start=1):
                    where = f"consolidate {tenant_id}: person {number}/{len(people)}"
                    last = [0, 0]
                    handle = (
                        memory.person(person) if args.agent is None
                        else memory.acting_for(person, agent=args.agent)
                    )
                    with bar(where, unit="groups") as shown:
                        report = handle.consolidate(progress=_recording(shown, last))
                    reports.append(report)
                    print(
                        f"{where}: {last[0]}/{last[1]} groups; {report.insights} insights "
                        f"written, {report.merged} "
                        f"memories merged, {report.covered} groups already covered",
                        file=sys.stderr,
                    )
            totals: dict[str, Any] = {
                name: sum(getattr(report, name) for report in reports) for name in _SUMMED
            }
            totals["people"] = len(reports)
            totals["children"] = sum(report.child for report in reports)
            totals["each"] = [report.as_dict() for report in reports]
            summary["tenants"][tenant_id] = totals
    sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return 0


def add_consolidate_command(commands: Any) -> None:
    """Register ``consolidate`` on ``memory``."""
    parser = commands.add_parser(
        "consolidate",
        help="merge near-duplicates and promote repeated evidence into insights (resumable)",
    )
    store_arguments(parser)
    parser.add_argument("--tenant", required=True, action="append",
                        help="a tenant id (repeatable: each is consolidated in turn)")
    parser.add_argument("--person", action="append",
                        help="a person whose memories to consolidate (repeatable)")
    parser.add_argument("--people", action="append", type=Path, metavar="FILE",
                        help="a file of person ids, one a line (- for stdin; repeatable)")
    parser.add_argument("--agent",
                        help="consolidate as this agent (its grant decides what it sees; "
                        "default: each person's own handle)")
    parser.set_defaults(run=_consolidate)
