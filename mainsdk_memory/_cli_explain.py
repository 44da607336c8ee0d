"""The ``memory explain CODE`` command: an error code's section of the errors page, offline.

The page is ``docs/errors.md``, shipped inside the package (``mainsdk_memory/docs/errors.md``
in a wheel; pyproject.toml maps it), so someone who installed the wheel reads what an error
message links to without a network. ``memory explain E070`` (or ``MAIN-MEM-E070``, any case,
or ``0020``) prints the section and its URL; ``memory explain`` lists every code.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path
from typing import Any

from mainsdk_memory._errors import DOCS, InvalidInputError

__all__ = ["add_explain_command", "errors_page", "explain", "sections"]

_PREFIX = "MAIN-MEM-"
_HEADING = re.compile(r"^## (MAIN-MEM-[0-9A-Z]+)[ \t]*$", re.M)


def errors_page() -> str:
    """The text of the errors page: the copy inside the installed package, else (running from
    a source checkout) the checkout's ``docs/errors.md``."""
    shipped = resources.files("mainsdk_memory").joinpath("docs", "errors.md")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
    try:
        return checkout.read_text(encoding="utf-8")
    except OSError:
        raise InvalidInputError(
            "The errors page is not in this installation (mainsdk_memory/docs/errors.md is "
            f"missing). Read it online: {DOCS}; reinstall the package to have it offline."
        ) from None


def sections(page: str) -> dict[str, str]:
    """Each code's section of ``page``: ``{"MAIN-MEM-E070": "## MAIN-MEM-E070\\n\\n..."}``,
    from its heading to the next heading."""
    found: dict[str, str] = {}
    headings = list(_HEADING.finditer(page))
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(page)
        body = page[heading.start():end]
        cut = re.search(r"^#{1,2} ", body[3:], re.M)  # a later heading that is not a code's
        found[heading.group(1)] = (body[: cut.start() + 3] if cut else body).strip()
    return found


def _code(text: str) -> str:
    code = text.strip().upper()
    return code if code.startswith(_PREFIX) else _PREFIX + code


def explain(code: str) -> str:
    """The section of ``code`` (``E070``, ``MAIN-MEM-E070``, any case) with its URL.

    Raises :class:`InvalidInputError` for a code the page does not have."""
    known = sections(errors_page())
    wanted = _code(code)
    if wanted not in known:
        raise InvalidInputError(
            f"There is no error code {wanted} on the errors page. `memory explain` lists "
            "every code; the code is in brackets at the end of an error message."
        )
    return f"{known[wanted]}\n\nOnline: {DOCS}#{wanted.lower()}\n"


def _run(args: argparse.Namespace) -> int:
    if args.code:
        print(explain(args.code), end="")
        return 0
    for code, text in sections(errors_page()).items():
        name = re.search(r"`(\w+)`", text)
        print(f"{code}  {name.group(1) if name else ''}".rstrip())
    return 0


def add_explain_command(commands: Any) -> None:
    """Add ``explain`` to the ``memory`` command's subcommands (an argparse subparsers)."""
    parser = commands.add_parser(
        "explain", help="print an error code's section of the errors page (offline)"
    )
    parser.add_argument(
        "code", nargs="?", help="the code, e.g. E070 or MAIN-MEM-E070; none lists every code"
    )
    parser.set_defaults(run=_run)
