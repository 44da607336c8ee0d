"""Generate :mod:`mainsdk_memory._context_table`, the code points the context block escapes.

The context block (:mod:`mainsdk_memory._context`) writes some characters of untrusted text as
``&#xHEX;`` so that nothing in an entry can end the block, open or close an entry, or forge a
tag, neither as it stands nor after any Unicode normalisation (NFC, NFD, NFKC, NFKD) that a
later step may apply to the block. This module derives that set from Unicode data, so it is
not a list kept by hand, and writes it out as a fixed table, so that what the renderer escapes
does not depend on the running Python's Unicode version (ADR 0027).

Rules, each code point tagged with the first that applies:

``control``
    General category ``Cc``, except ``\\t`` and ``\\n``.
``hidden``
    General categories ``Cf``, ``Zl``, ``Zp`` and ``Cs`` (lone surrogates), plus
    :data:`HIDDEN_RANGES`: Default_Ignorable_Code_Point and its reserved ranges, which
    ``unicodedata`` does not expose.
``markup``
    The canonical or compatibility decomposition (NFD or NFKD) contains one of :data:`MARKUP`,
    ``< > & " /``, the characters of the block's tag and entity syntax (U+FF1C FULLWIDTH
    LESS-THAN SIGN, U+226E NOT LESS-THAN, U+2105 CARE OF).
``look-alike``
    The character name says it is drawn as an angle bracket or as ``<`` or ``>``
    (:data:`LOOKALIKE_NAME`): angle brackets, single angle quotation marks, less-than and
    greater-than signs of every kind, left and right arrowheads. Combining marks are left out
    (they draw on a neighbour), and so are the guillemets U+00AB and U+00BB (ordinary
    quotation marks in many languages).
``confusable``
    Unicode's confusables (UTS #39 ``confusables.txt``) pair the character with a string that
    contains ``<`` or ``>`` (U+1438 CANADIAN SYLLABICS PA, U+16B2 RUNIC LETTER KAUNA).
``closure``
    NFC, NFD, NFKC or NFKD of the character contains a character escaped by a rule above,
    repeated until nothing changes (U+FE3F PRESENTATION FORM FOR VERTICAL LEFT ANGLE BRACKET
    is U+3008 LEFT ANGLE BRACKET under NFKD, though its name already escapes it). So a
    character left raw never normalises into one that is escaped.

Look-alikes are taken for ``<`` and ``>`` only: without an angle bracket no ``/``, ``&`` or
``"`` forms a tag, and their confusables are letters of living scripts (U+30CE KATAKANA
LETTER NO for ``/``) and ordinary quotation marks. Decompositions are taken for all five, so
normalising the block never makes a raw ``&``, ``"`` or ``/`` that the entry did not hold.

Run ``python -m mainsdk_memory._context_table_gen`` to rewrite the table, or with ``--check``
to compare it. The committed table is generated with build-time inputs that are not runtime
dependencies: ``unicodedata2`` (Unicode data newer than the running Python's; without it the
standard library's ``unicodedata`` is used) and ``confusable-homoglyphs`` (Unicode's
confusables; without it the list recorded in the committed table is reused):

.. code-block:: text

    pip install 'unicodedata2==18.0.0' 'confusable-homoglyphs==3.3.1'
    python -m mainsdk_memory._context_table_gen
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol, cast

__all__ = [
    "HIDDEN_RANGES",
    "LOOKALIKE_NAME",
    "MARKUP",
    "TABLE_PATH",
    "Table",
    "UnicodeData",
    "check_committed",
    "confusables_from_package",
    "generate",
    "main",
    "newest_unicode_data",
    "render",
]

TABLE_PATH: Final = Path(__file__).with_name("_context_table.py")
"""Where the generated table lives."""

MARKUP: Final = frozenset('<>&"/')
"""The characters of the block's tag and entity syntax."""

_ANGLES: Final = frozenset("<>")  # the markup characters whose look-alikes are escaped

HIDDEN_RANGES: Final[tuple[tuple[int, int, str], ...]] = (
    # Invisible characters that no general category finds: Unicode's
    # Default_Ignorable_Code_Point set (DerivedCoreProperties.txt, which unicodedata does not
    # expose), and whole blocks of format controls, reserved code points included, so that
    # what a later Unicode version assigns there is escaped already. They can hide text from
    # a human reviewer, and variation selectors and tag characters can smuggle whole hidden
    # messages. Kept from the hand-written table this generator replaced.
    (0x034F, 0x034F, "combining grapheme joiner"),
    (0x115F, 0x1160, "Hangul fillers"),
    (0x17B4, 0x17B5, "Khmer inherent vowels"),
    (0x180B, 0x180F, "Mongolian variation selectors and vowel separator"),
    (0x2060, 0x206F, "word joiner, invisible operators, bidi isolates, reserved"),
    (0x3164, 0x3164, "Hangul filler"),
    (0xFE00, 0xFE0F, "variation selectors 1-16"),
    (0xFFA0, 0xFFA0, "halfwidth Hangul filler"),
    (0xFFF0, 0xFFFB, "reserved default-ignorables and interlinear annotation controls"),
    (0x13430, 0x1343F, "Egyptian hieroglyph format controls"),
    (0x1BCA0, 0x1BCA3, "shorthand format controls"),
    (0x1D173, 0x1D17A, "musical symbol format controls"),
    (0xE0000, 0xE0FFF, "tag characters, variation selectors 17-256, reserved ignorables"),
)
"""Hidden code points that no general category names; the rest come from ``Cf`` and others."""

LOOKALIKE_NAME: Final = re.compile(
    r"\bANGLE BRACKET\b|\b(?:LEFT|RIGHT)-POINTING ANGLE\b|\bANGLE QUOTATION MARK\b"
    r"|\bLESS-THAN\b|\bGREATER-THAN\b|\b(?:LEFT|RIGHT) ARROWHEAD\b"
)
"""Names of characters drawn as an angle bracket, ``<`` or ``>``."""

_GUILLEMET_NAME: Final = re.compile(r"\bDOUBLE ANGLE QUOTATION MARK\b")
_Form = Literal["NFC", "NFD", "NFKC", "NFKD"]
_FORMS: Final[tuple[_Form, ...]] = ("NFC", "NFD", "NFKC", "NFKD")
_HANGUL_SYLLABLES: Final = range(0xAC00, 0xD7A4)  # decompose algorithmically, not by table
_LAST: Final = 0x10FFFF


class UnicodeData(Protocol):
    """What the generator reads of ``unicodedata`` (or of ``unicodedata2``)."""

    @property
    def unidata_version(self) -> str:
        """The Unicode version of the data."""
        ...

    def category(self, char: str, /) -> str:
        """The general category."""
        ...

    def decomposition(self, char: str, /) -> str:
        """The decomposition mapping as written in UnicodeData.txt."""
        ...

    def name(self, char: str, default: str, /) -> str:
        """The character name, or ``default`` if it has none."""
        ...

    def normalize(self, form: _Form, unistr: str, /) -> str:
        """The string in one of the four normalisation forms."""
        ...


@dataclass(frozen=True, slots=True)
class Table:
    """The generated set: each escaped code point with the rule that put it there."""

    unicode_version: str
    confusables_source: str
    confusable_lookalikes: tuple[int, ...]
    reasons: Mapping[int, str]

    def code_points(self) -> frozenset[int]:
        """Every escaped code point."""
        return frozenset(self.reasons)

    def ranges(self) -> list[tuple[int, int, str]]:
        """Inclusive ranges of consecutive code points that share a rule, in order."""
        out: list[tuple[int, int, str]] = []
        for cp in sorted(self.reasons):
            reason = self.reasons[cp]
            if out and out[-1][1] == cp - 1 and out[-1][2] == reason:
                out[-1] = (out[-1][0], cp, reason)
            else:
                out.append((cp, cp, reason))
        return out


def newest_unicode_data() -> UnicodeData:
    """``unicodedata2`` if it is installed (newer Unicode data), else ``unicodedata``."""
    try:
        return cast("UnicodeData", importlib.import_module("unicodedata2"))
    except ImportError:
        return unicodedata


def confusables_from_package() -> tuple[tuple[int, ...], str] | None:
    """Code points Unicode's confusables pair with a string holding ``<`` or ``>``.

    Read from ``confusable-homoglyphs`` (its ``confusables.json`` is built from UTS #39's
    ``confusables.txt`` and lists each pair both ways); ``None`` if it is not installed.
    Returns the sorted code points and the package and version they came from.
    """
    try:
        module = importlib.import_module("confusable_homoglyphs.confusables")
    except ImportError:
        return None
    pairs = cast("dict[str, list[dict[str, str]]]", module.confusables_data)
    found: set[int] = set()
    for key, homoglyphs in pairs.items():
        for entry in homoglyphs:
            for one, other in ((key, entry["c"]), (entry["c"], key)):
                if len(other) == 1 and other not in MARKUP and _ANGLES.intersection(one):
                    found.add(ord(other))
    version = importlib.metadata.version("confusable-homoglyphs")
    return tuple(sorted(found)), f"confusable-homoglyphs {version}"


def _all_chars() -> Iterator[tuple[int, str]]:
    for cp in range(_LAST + 1):
        yield cp, chr(cp)


def _decomposes(data: UnicodeData, cp: int, char: str) -> bool:
    return bool(data.decomposition(char)) or cp in _HANGUL_SYLLABLES


def generate(
    data: UnicodeData, confusable_lookalikes: Iterable[int], confusables_source: str
) -> Table:
    """Apply the rules of the module docstring to every code point of ``data``."""
    reasons: dict[int, str] = {}

    def mark(cp: int, reason: str) -> None:
        reasons.setdefault(cp, reason)

    decomposable: list[tuple[int, str]] = []
    lookalikes: list[int] = []
    for cp, char in _all_chars():
        category = data.category(char)
        if category == "Cc" and char not in "\t\n":
            mark(cp, "control")
        elif category in ("Cf", "Zl", "Zp", "Cs"):
            mark(cp, "hidden")
        if _decomposes(data, cp, char):
            decomposable.append((cp, char))
        name = data.name(char, "")
        if (
            name
            and char not in MARKUP
            and not category.startswith("M")
            and LOOKALIKE_NAME.search(name)
            and not _GUILLEMET_NAME.search(name)
        ):
            lookalikes.append(cp)
    for lo, hi, _ in HIDDEN_RANGES:
        for cp in range(lo, hi + 1):
            mark(cp, "hidden")
    for cp, char in decomposable:
        if MARKUP.intersection(data.normalize("NFKD", char) + data.normalize("NFD", char)):
            mark(cp, "markup")
    for cp in lookalikes:
        mark(cp, "look-alike")
    confusables = tuple(sorted(set(confusable_lookalikes)))
    for cp in confusables:
        mark(cp, "confusable")

    escaped = {chr(cp) for cp in reasons} | MARKUP
    changed = True
    while changed:
        changed = False
        for cp, char in decomposable:
            if cp in reasons:
                continue
            if any(escaped.intersection(data.normalize(form, char)) for form in _FORMS):
                mark(cp, "closure")
                escaped.add(char)
                changed = True

    _check_nothing_composes_into_the_table(data, decomposable, escaped)
    return Table(data.unidata_version, confusables_source, confusables, reasons)


def _check_nothing_composes_into_the_table(
    data: UnicodeData, decomposable: Sequence[tuple[int, str]], escaped: set[str]
) -> None:
    # NFC and NFKC compose: a character escaped here must not be composable from characters
    # that are all left raw, or normalising the block would bring it back. Every canonical
    # decomposition of an escaped character has to hold an escaped (or markup) character.
    for cp, char in decomposable:
        parts = data.normalize("NFD", char)
        if char in escaped and parts != char and not escaped.intersection(parts):
            raise AssertionError(
                f"U+{cp:04X} is escaped but composes from raw characters {parts!r}: "
                "escaping it cannot keep it out of a normalised block; extend the rules"
            )


def _describe(data: UnicodeData, cp: int) -> str:
    name = data.name(chr(cp), "")
    if name:
        return name
    category = data.category(chr(cp))
    return {"Cc": "<control>", "Cs": "<surrogate>", "Co": "<private use>"}.get(
        category, "<unassigned>"
    )


_HEADER: Final = '''\
"""The code points the context block writes as ``&#xHEX;``, generated from Unicode data.

Generated by ``python -m mainsdk_memory._context_table_gen``: do not edit; the rules are in
that module's docstring and the reasons in ADR 0027. A fixed table, so that what the renderer
escapes does not depend on the running Python's Unicode data;
``tests/test_context_block.py`` re-runs the generator and compares.
"""

from typing import Final

'''

_WIDTH: Final = 100


def _comment(data: UnicodeData, lo: int, hi: int, reason: str, prefix: str) -> str:
    first = f"{reason}: {_describe(data, lo)}"
    both = f"{first} .. {_describe(data, hi)}"
    for text in (both, first) if hi != lo else (first,):
        if len(prefix) + len(text) + 4 <= _WIDTH:
            return f"{prefix}  # {text}"
    return f"{prefix}  # {first}"[:_WIDTH]


def render(table: Table, data: UnicodeData) -> str:
    """The source of :mod:`mainsdk_memory._context_table` for ``table``.

    ``data`` gives the names in the comments; use the data the table was generated from.
    """
    lines = [
        _HEADER.rstrip("\n"),
        "",
        f'UNICODE_VERSION: Final = "{table.unicode_version}"',
        '"""The Unicode version of the data the table was generated from."""',
        "",
        f'CONFUSABLES_SOURCE: Final = "{table.confusables_source}"',
        '"""Where :data:`CONFUSABLE_LOOKALIKES` came from."""',
        "",
        "CONFUSABLE_LOOKALIKES: Final[tuple[int, ...]] = (",
    ]
    row: list[str] = []
    for cp in table.confusable_lookalikes:
        row.append(f"0x{cp:04X},")
        if len(row) == 8:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    lines += [
        ")  # fmt: skip",
        '"""Code points that Unicode\'s confusables pair with a string holding ``<`` or ``>``.',
        "",
        "An input of the generator, recorded so that the table can be derived again where the",
        'package it came from is not installed."""',
        "",
        "ESCAPED_RANGES: Final[tuple[tuple[int, int], ...]] = (",
    ]
    for lo, hi, reason in table.ranges():
        lines.append(_comment(data, lo, hi, reason, f"    (0x{lo:04X}, 0x{hi:04X}),"))
    lines += [
        ")",
        '"""Inclusive ranges of the code points written as ``&#xHEX;``, in order, each with the',
        'rule that put it there and the names of its first and last code point."""',
        "",
    ]
    return "\n".join(lines)


def _committed_confusables() -> tuple[tuple[int, ...], str]:
    table = importlib.import_module("mainsdk_memory._context_table")
    return (
        cast("tuple[int, ...]", table.CONFUSABLE_LOOKALIKES),
        cast("str", table.CONFUSABLES_SOURCE),
    )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def check_committed(table: Table, data: UnicodeData) -> list[str]:
    """What is wrong with the committed table, judged by ``table`` generated from ``data``.

    Generated from the same Unicode version, the committed file must be exactly what
    :func:`render` writes. From an older version (a Python whose ``unicodedata`` is older than
    the data the table was made with), it must escape at least every code point generated:
    decompositions and names never change once assigned (Unicode's stability policies), so
    newer data only adds. From a newer version, the committed table is out of date.
    """
    committed = importlib.import_module("mainsdk_memory._context_table")
    version = cast("str", committed.UNICODE_VERSION)
    ranges = cast("tuple[tuple[int, int], ...]", committed.ESCAPED_RANGES)
    escaped = {cp for lo, hi in ranges for cp in range(lo, hi + 1)}
    regenerate = "run python -m mainsdk_memory._context_table_gen (see its docstring)"
    if _version(table.unicode_version) > _version(version):
        return [
            f"the table was generated from Unicode {version}, this data is "
            f"{table.unicode_version}: {regenerate}"
        ]
    if table.unicode_version == version:
        if TABLE_PATH.read_text(encoding="utf-8") != render(table, data):
            return [f"{TABLE_PATH.name} differs from the generator's output: {regenerate}"]
        return []
    missing = sorted(table.code_points() - escaped)
    return [f"U+{cp:04X} ({table.reasons[cp]}) is not escaped: {regenerate}" for cp in missing]


def main(argv: Sequence[str] | None = None) -> int:
    """Write the table (or, with ``--check``, exit 1 if the committed one is wrong)."""
    parser = argparse.ArgumentParser(
        prog="python -m mainsdk_memory._context_table_gen", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)

    data = newest_unicode_data()
    confusables = confusables_from_package()
    if confusables is None:
        print(
            "confusable-homoglyphs is not installed: reusing the confusables recorded in the "
            "committed table",
            file=sys.stderr,
        )
        confusables = _committed_confusables()
    table = generate(data, *confusables)
    if args.check:
        problems = check_committed(table, data)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    if TABLE_PATH.exists():
        committed_version = cast(
            "str", importlib.import_module("mainsdk_memory._context_table").UNICODE_VERSION
        )
        if _version(data.unidata_version) < _version(committed_version):
            print(
                f"refusing to replace a table made from Unicode {committed_version} with one "
                f"from Unicode {data.unidata_version}: install unicodedata2 (see the docstring)",
                file=sys.stderr,
            )
            return 2
    TABLE_PATH.write_text(render(table, data), encoding="utf-8")
    print(
        f"wrote {TABLE_PATH.name}: {len(table.reasons)} code points in "
        f"{len(table.ranges())} ranges (Unicode {data.unidata_version}, {confusables[1]})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
