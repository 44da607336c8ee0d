"""Generate :mod:`mainsdk_memory._lookalike_table`: letters confusable with a Latin one.

The injection check folds look-alike letters to Latin before its rules read a text
(:mod:`mainsdk_memory._injection_normalize`). Its hand-written table covered the Cyrillic,
Greek and IPA letters an attacker reaches for first; this module derives the rest from
Unicode's confusables (UTS #39 ``confusables.txt``, through ``confusable-homoglyphs``, which
lists each pair both ways) and writes them out as a fixed table, so the check does not depend
on a package at run time:

- every single code point, not ASCII, that a pair joins to one ASCII letter, mapped to that
  letter in lower case (and its case-folded form too, since the check folds case first);
- a code point paired with several letters takes a lower-case one before an upper-case one,
  then the first in the alphabet; pairs with digits, punctuation or several characters
  (``rn`` for ``m``) are left out: the rules already read digits through their leetspeak
  step, and a multi-character fold would change the text's length.

Run ``python -m mainsdk_memory._lookalike_gen`` to rewrite the table, ``--check`` to compare
it (``pip install 'confusable-homoglyphs==3.3.1'``, a development dependency).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import string
import sys
from pathlib import Path
from typing import cast

__all__ = ["generate", "lookalikes", "main", "render"]

_TABLE = Path(__file__).with_name("_lookalike_table.py")


def lookalikes() -> dict[str, set[str]]:
    """Each single code point, not ASCII, that a confusable pair joins to an ASCII letter,
    with the letters (either case) it is paired with."""
    module = importlib.import_module("confusable_homoglyphs.confusables")
    pairs = cast("dict[str, list[dict[str, str]]]", module.confusables_data)
    ascii_letters = set(string.ascii_letters)
    letters: dict[str, set[str]] = {}
    for key, homoglyphs in pairs.items():
        for entry in homoglyphs:
            for one, other in ((key, entry["c"]), (entry["c"], key)):
                if one in ascii_letters and len(other) == 1 and not other.isascii():
                    letters.setdefault(other, set()).add(one)
    return letters


def generate() -> tuple[dict[int, str], str]:
    """The fold (code point → lower-case ASCII letter) and the source it came from."""
    letters = lookalikes()
    fold: dict[int, str] = {}
    for char, found in letters.items():
        target = sorted(found, key=lambda letter: (letter.isupper(), letter))[0].lower()
        fold.setdefault(ord(char), target)
        folded = char.casefold()
        if len(folded) == 1 and not folded.isascii():
            fold.setdefault(ord(folded), target)
    version = importlib.metadata.version("confusable-homoglyphs")
    return dict(sorted(fold.items())), f"confusable-homoglyphs {version}"


def render(fold: dict[int, str], source: str) -> str:
    """The table module's source."""
    lines = [
        '"""Letters Unicode calls confusable with a Latin one, folded to it (generated).',
        "",
        "Written by :mod:`mainsdk_memory._lookalike_gen`; do not edit by hand.",
        '"""',
        "",
        "from typing import Final",
        "",
        f"SOURCE: Final = {source!r}",
        '"""Where :data:`LOOKALIKE_FOLD` came from."""',
        "",
        "LOOKALIKE_FOLD: Final[dict[int, str]] = {",
    ]
    lines += [f"    0x{code:04X}: {letter!r}," for code, letter in fold.items()]
    lines += ["}", '"""Code point → the lower-case ASCII letter it is confusable with."""', ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    arguments = parser.parse_args(argv)
    text = render(*generate())
    if arguments.check:
        same = _TABLE.read_text(encoding="utf-8") == text
        print("the table is current" if same else "the table differs: regenerate it")
        return 0 if same else 1
    _TABLE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
