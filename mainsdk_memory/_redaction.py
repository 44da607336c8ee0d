"""Redaction before a model call: identifiers out as placeholders, and back in the answer.

A :class:`Redactor` replaces, in every text it is given, e-mail addresses, phone numbers,
IBANs (mod-97 checked), payment card numbers (Luhn checked) and the identifiers the caller
names (the person's id, names, account handles: whole words) with placeholders such as
``[EMAIL_1]``, ``[PHONE_2]``, ``[IBAN_1]``, ``[CARD_1]``, ``[ID_1]``::

    redactor = Redactor(["person-42", "Ada Lovelace"])
    redactor.redact("Ada Lovelace: ada@example.com, +44 20 7946 0958")
    # '[ID_1]: [EMAIL_1], [PHONE_1]'
    redactor.restore("Write to [EMAIL_1]")   # 'Write to ada@example.com'

One value gets one placeholder for the life of the redactor (so across every message of one
model call), and :meth:`Redactor.restore` puts back only placeholders this redactor issued:
one the model invents stays as it is. :attr:`Redactor.counts` says how many values of each
category were replaced (for the audit: counts only). Pure: no I/O, no state beyond the
redactor's own table. What it does not catch is in ADR 0087.

The patterns read views of the text, never the text itself, and every span found in a view is
mapped back to the exact original characters, so what is replaced (and later restored) is the
text as written, byte for byte:

- e-mail addresses, phone numbers, IBANs and cards are found in a *narrowed* copy of one
  character for one: full-width forms (U+FF0B ``+``, U+FF14 ``4``, U+FF20 ``@``), other
  scripts' digits, every kind of space (no-break, narrow) and of hyphen (non-breaking, en
  dash, minus) read as their plain ASCII form;
- identifiers are found in a *folded* copy: NFKC, case folded, every apostrophe as ``'``
  (U+2019 ...), every hyphen as ``-`` (U+2011 ...), invisible format characters (soft
  hyphen, zero-width joiners) dropped, so an identifier matches however it is encoded
  (composed or decomposed accents, full-width letters, any case).

The work is linear in the length of the text (no pattern backtracks over a run of digits more
than once, and stacked combining marks are folded in bounded clusters).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Final

from mainsdk_memory._errors import InvalidInputError

__all__ = ["CATEGORIES", "Redactor"]

CATEGORIES: Final = ("email", "phone", "iban", "card", "id")
"""The categories a redactor replaces, each with its placeholder prefix (``EMAIL``, ...)."""

_PREFIX: Final = {category: category.upper() for category in CATEGORIES}

_PLACEHOLDER: Final = re.compile(r"\[(EMAIL|PHONE|IBAN|CARD|ID)_([1-9][0-9]{0,5})\]")
_DIGIT: Final = re.compile(r"\d")
_NOT_DIGIT: Final = re.compile(r"\D")

# A span found in a text: (start, end, category, key). ``key`` is the value's canonical form,
# so one value written two ways ("ADA@x.org", "ada@x.org") gets one placeholder.
_Span = tuple[int, int, str, str]

# -- e-mail ------------------------------------------------------------------------------------

_EMAIL: Final = re.compile(
    r"(?<![\w.%+-])[\w.%+-]*\w@(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_]{2,}(?![\w-])"
)

# -- card numbers ------------------------------------------------------------------------------

# 13 to 19 digits, optionally in groups split by one space or dash.
_CARD: Final = re.compile(r"(?<![\w.,+-])\d(?:[ -]?\d){12,18}(?![\w]|[.,]\d)")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


# -- IBANs -------------------------------------------------------------------------------------

# Where an IBAN may start: two letters and two check digits at the start of a word.
_IBAN_START: Final = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?=[ ]?[A-Za-z0-9])")
# What may follow: letters and digits, in groups split by single spaces (as IBANs are printed).
_IBAN_BODY: Final = re.compile(r"(?:[ ]?[A-Za-z0-9]){11,30}")


_BASE36: Final = {char: int(char, 36) for char in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def _iban_end(text: str, start: int, body_end: int) -> int | None:
    """Where the IBAN starting at ``start`` ends: the longest prefix of ``text[start:body_end]``
    that ends a word and passes the ISO 13616 check (the first four characters moved to the
    end, letters as numbers, A = 10, the whole modulo 97 is 1), or ``None``. A word after the
    IBAN ("... 00 is mine") is not part of it."""
    head = text[start : start + 4].upper()
    if head[2:] in {"00", "01", "99"}:
        return None
    tail = "".join(str(_BASE36[char]) for char in head)
    scale = pow(10, len(tail), 97)
    remainder, length, found = 0, 4, None
    for index in range(start + 4, body_end):
        char = text[index].upper()
        if char == " ":
            continue
        value = _BASE36[char]
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
        length += 1
        ends_word = index + 1 == len(text) or not text[index + 1].isalnum()
        if ends_word and 15 <= length <= 34 and (remainder * scale + int(tail)) % 97 == 1:
            found = index + 1
    return found


def _iban_spans(text: str) -> Iterable[_Span]:
    position = 0
    while True:
        start = _IBAN_START.search(text, position)
        if start is None:
            return
        body = _IBAN_BODY.match(text, start.end())
        end = None if body is None else _iban_end(text, start.start(), body.end())
        if end is None:
            position = start.start() + 1
            continue
        yield start.start(), end, "iban", text[start.start() : end].replace(" ", "").upper()
        position = end


# -- phone numbers -----------------------------------------------------------------------------

# A run of digits with the separators phone numbers are written with (a space, a dot, a dash,
# a slash, parentheses), at most two in a row; optionally after a "+" or a "(". It starts
# where a number does: not inside a word, an address or another number ("1.5", "10:30",
# "2024-01"), but after a label written without a space ("tel:", "Phone:", "Tel.", "Ada,",
# "phone/"): a letter, then one or two of ". , / :". An extension ("x12", "ext. 12") may follow.
_PHONE: Final = re.compile(
    r"(?:(?<![\w@+.,/:-])|(?<=[^\W\d_][.,/:])|(?<=[^\W\d_][.,/:][.,/:]))"
    r"(?:\+|\(\+?)?\d(?:(?:[ ./-]|[ ]?[()][ ]?)?\d)*\)?"
    r"(?=(?i:x\d|ext)|(?![\w@]|[.,:/-]\d))"
)
_EXTENSION: Final = re.compile(
    r"[ ]?(?:x|ext(?:ension|n)?[.:]?)[ ]?(\d{1,6})(?!\w|[.,:/-]\d)", re.IGNORECASE
)
_GROUPS: Final = re.compile(r"\d+")
# A date at the start: 2024-01-15, 15.01.2024, 1/15/24 (then a space or the end).
_DATE: Final = re.compile(
    r"(?:\d{4}([./-])\d{1,2}\1\d{1,2}|\d{1,2}([./-])\d{1,2}\2(?:\d{4}|\d{2}))(?:$|[ ])"
)
# An IPv4 address: four numbers of 0-255 without a leading zero, split by dots. (A dotted
# phone number with a trunk 0, "044.123.45.67", is not one.)
_OCTET: Final = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4: Final = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
# Dotted groups of digits, as version numbers are written.
_VERSION: Final = re.compile(r"\d+(?:\.\d+)+")
# North American numbers: area code and exchange start with 2-9.
_NANP: Final = re.compile(r"1?[2-9]\d{2}[2-9]\d{6}")
_NANP_SHAPES: Final = frozenset({(10,), (3, 3, 4), (1, 3, 3, 4), (11,)})


def _is_phone(candidate: str, sizes: tuple[int, ...], digits: str) -> bool:
    if _DATE.match(candidate.lstrip("(")) or _IPV4.fullmatch(candidate):
        return False
    if candidate.startswith(("+", "(+")):
        return 8 <= len(digits) <= 15
    if digits.startswith("00"):  # the international prefix of most countries
        return 8 <= len(digits) - 2 <= 15
    if re.fullmatch(r"0[.,]\d+", candidate):
        return False  # a decimal fraction
    if digits.startswith("0"):  # a national trunk prefix (most of Europe, much of Asia)
        # Nine digits in two groups is as often a reference as a number (0.12345678).
        return 10 <= len(digits) <= 12 or (len(digits) == 9 and len(sizes) != 2)
    if _NANP.fullmatch(digits) and sizes in _NANP_SHAPES:
        return True
    if sizes == (5, 5) and digits[0] in "6789":
        return True  # an Indian mobile number: 98765 43210
    if sizes == (3, 4) and candidate[3] == "-" and digits[0] in "23456789":
        return True  # a local number: 555-2671
    if 1 in sizes and _VERSION.fullmatch(candidate):
        return False  # a version or build number: 10.0.19041.1
    thousands = len(sizes) >= 2 and sizes[0] <= 3 and all(size == 3 for size in sizes[1:])
    return 9 <= len(digits) <= 12 and len(sizes) >= 3 and not thousands


def _phone_spans(text: str) -> Iterable[_Span]:
    for match in _PHONE.finditer(text):
        candidate, start = match.group(), match.start()
        if len(candidate) < 7:
            continue  # cheap: most runs of digits are far too short to be a number
        opened, closed = candidate.count("("), candidate.count(")")
        if opened > closed and candidate.startswith("(") and not candidate.startswith("(+"):
            candidate, start, opened = candidate[1:], start + 1, opened - 1  # "(call 555-2671"
        if closed > opened and candidate.endswith(")"):
            candidate, closed = candidate[:-1], closed - 1  # "(mobile 4155552671)"
        if opened != closed:
            continue
        groups = _GROUPS.findall(candidate)
        digits = "".join(groups)
        if not 7 <= len(digits) <= 17:
            continue
        if not _is_phone(candidate, tuple(len(group) for group in groups), digits):
            continue
        end = start + len(candidate)
        extension = _EXTENSION.match(text, end)
        if extension is not None:
            digits, end = f"{digits}x{extension.group(1)}", extension.end()
        yield start, end, "phone", digits


# -- the views the patterns read -----------------------------------------------------------------

# The same text, one character for one, with the characters that hide a digit, an address or a
# separator from the patterns replaced by their plain form: full-width forms (U+FF14, U+FF20),
# other scripts' decimal digits, every kind of space (no-break, narrow, figure) and of hyphen
# (non-breaking, figure, en dash, minus). Spans found in it are spans of the original.
_DASHES: Final = frozenset("\u2010\u2011\u2012\u2013\u2212\ufe63")


class _Narrowing(dict[int, str]):
    """``str.translate`` table that works each character out on first sight (bounded)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if 0xFF01 <= code <= 0xFF5E:  # full-width ASCII
            plain = chr(code - 0xFEE0)
        elif char in _DASHES:
            plain = "-"
        elif unicodedata.category(char) == "Zs":
            plain = " "
        else:
            digit = unicodedata.decimal(char, None)
            plain = char if digit is None else str(digit)
        if len(self) < 8192:
            self[code] = plain
        return plain


_NARROWING: Final = _Narrowing()


def _narrow(text: str) -> str:
    return text if text.isascii() else text.translate(_NARROWING)


# The folded text identifiers are matched in: NFKC, case folded, every apostrophe written as
# "'" and every hyphen as "-", invisible format characters (soft hyphen, zero-width joiners,
# direction marks) dropped and a zero-width space read as a space. Most characters fold to one
# character on their own (a table does those at C speed); the rest are folded a cluster at a
# time (a character and the combining marks after it, which NFKC may compose with it), and
# each folded character remembers the original cluster it came from, so a match maps back to
# exact original spans.
_APOSTROPHES: Final = "`\u00b4\u02b9\u02bb\u02bc\u02bd\u2018\u2019\u201b\u2032\ua78c\uff07\uff40"
_HYPHENS: Final = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\ufe58\ufe63\uff0d"
_UNIFY: Final = str.maketrans(
    {**dict.fromkeys(_APOSTROPHES, "'"), **dict.fromkeys(_HYPHENS, "-"), "\u200b": " "}
)
# Characters with combining class 0 that NFC composes with the character before them (two-part
# vowels of Indic scripts, Hangul vowel and final jamo). Checked against the Unicode database
# by the tests.
_COMPOSE_WITH_PREVIOUS: Final = frozenset(
    "\u09be\u09d7\u0b3e\u0b56\u0b57\u0bbe\u0bd7\u0cc2\u0cd5\u0cd6\u0d3e\u0d57\u0dcf\u0ddf"
    "\u102e\u1b35\U00011127\U0001133e\U00011357\U000114b0\U000114ba\U000114bd\U000115af"
    "\U00011930"
    + "".join(map(chr, range(0x1161, 0x1176)))
    + "".join(map(chr, range(0x11A8, 0x11C3)))
)
# A cluster longer than this (a base and dozens of stacked marks, as in "Zalgo" text) is folded
# as its base alone: CPython's canonical reordering of marks is quadratic in their number.
_MAX_CLUSTER: Final = 16
# What the table gives a character that must be folded with its neighbours (a noncharacter;
# the text's own U+FFFF is sent down the same path).
_CLUSTER: Final = "\uffff"


@functools.lru_cache(maxsize=4096)
def _joins(char: str) -> bool:
    """Whether ``char`` belongs to the cluster of the character before it."""
    return (
        unicodedata.combining(char) != 0
        or char in _COMPOSE_WITH_PREVIOUS
        or unicodedata.combining(unicodedata.normalize("NFKD", char)[:1] or "a") != 0
    )


@functools.lru_cache(maxsize=4096)
def _fold_cluster(cluster: str) -> str:
    folded = unicodedata.normalize("NFKC", cluster.translate(_UNIFY))
    folded = unicodedata.normalize("NFKC", folded.casefold()).translate(_UNIFY)
    if folded.isascii():
        return folded
    return "".join(char for char in folded if unicodedata.category(char) != "Cf")


class _Folding(dict[int, str]):
    """``str.translate`` table: a character's fold when it is one character and needs no
    neighbour, else :data:`_CLUSTER` (worked out on first sight, bounded)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        folded = _fold_cluster(char)
        if len(folded) != 1 or _joins(char) or folded == _CLUSTER:
            folded = _CLUSTER
        if len(self) < 8192:
            self[code] = folded
        return folded


_FOLDING: Final = _Folding()


def _fold(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """The folded view of ``text``, and for each of its characters where the original cluster
    starts and ends (``None`` when they are the same positions)."""
    if text.isascii():
        return text.lower().replace("`", "'"), None, None
    simple = text.translate(_FOLDING)  # one character for one
    position = simple.find(_CLUSTER)
    if position < 0:
        return simple, None, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    done, size = 0, len(text)  # text[:done] is folded into parts
    while position >= 0:
        start = position - 1 if position > done and _joins(text[position]) else position
        end = position + 1
        while end < size and _joins(text[end]):
            end += 1
        if start > done:
            parts.append(simple[done:start])
            starts.extend(range(done, start))
            ends.extend(range(done + 1, start + 1))
        cluster = text[start:end] if end - start <= _MAX_CLUSTER else text[start]
        folded = _fold_cluster(cluster)
        parts.append(folded)
        starts.extend([start] * len(folded))
        ends.extend([end] * len(folded))
        done = end
        position = simple.find(_CLUSTER, end)
    parts.append(simple[done:])
    starts.extend(range(done, size))
    ends.extend(range(done + 1, size + 1))
    return "".join(parts), starts, ends


# -- all together ------------------------------------------------------------------------------


def _identifier_pattern(identifiers: Sequence[str]) -> re.Pattern[str] | None:
    folded = (" ".join(_fold(identifier)[0].split()) for identifier in identifiers)
    words = sorted({word for word in folded if word}, key=len, reverse=True)
    if not words:
        return None
    alternatives = (r"\s+".join(re.escape(part) for part in word.split(" ")) for word in words)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")


def _identifier_spans(pattern: re.Pattern[str], text: str) -> Iterable[_Span]:
    view, starts, ends = _fold(text)
    for match in pattern.finditer(view):
        key = " ".join(match.group().split())
        if starts is None or ends is None:
            yield match.start(), match.end(), "id", key
            continue
        first, last = match.start(), match.end() - 1
        start, end = starts[first], ends[last]
        if (first > 0 and starts[first - 1] == start) or (
            last + 1 < len(view) and ends[last + 1] == end
        ):
            continue  # part of what one character folds to (the 1 of ½, the ss of ß̖): no word
        yield start, end, "id", key


def _choose(spans: list[_Span]) -> list[_Span]:
    """The spans to replace: the longest where two overlap (a name inside an e-mail address
    goes with the address), the earlier category on a tie."""
    rank = {category: index for index, category in enumerate(CATEGORIES)}
    ordered = sorted(spans, key=lambda span: (span[0] - span[1], rank[span[2]], span[0]))
    chosen: list[_Span] = []  # sorted by start, none overlapping
    for span in ordered:
        index = bisect.bisect_left(chosen, span)
        if index > 0 and chosen[index - 1][1] > span[0]:
            continue
        if index < len(chosen) and chosen[index][0] < span[1]:
            continue
        chosen.insert(index, span)
    return chosen


class Redactor:
    """Replaces identifiers with placeholders and puts them back (see the module docstring).

    ``identifiers`` are the values the caller names (the person's id, names, handles); they
    are matched as whole words in the folded view of the text (any case, any Unicode form,
    any apostrophe or hyphen), any run of whitespace inside one matching any other. Not
    thread-safe: one redactor per model call.
    """

    __slots__ = ("_counters", "_identifiers", "_keys", "_numbers", "_reserved", "_values")

    def __init__(self, identifiers: Sequence[str] = ()) -> None:
        if isinstance(identifiers, str) or not all(isinstance(i, str) for i in identifiers):
            raise InvalidInputError("identifiers is a list of strings (ids, names, handles).")
        self._identifiers = _identifier_pattern(list(identifiers))
        self._keys: dict[tuple[str, str], str] = {}
        """(category, canonical value) -> placeholder."""
        self._values: dict[str, str] = {}
        """placeholder -> the value as first seen."""
        self._counters = dict.fromkeys(CATEGORIES, 0)
        self._numbers = dict.fromkeys(CATEGORIES, 0)
        """The last placeholder number issued per category."""
        self._reserved: set[str] = set()
        """Placeholder-shaped text that was already in the input: never issued."""

    def __repr__(self) -> str:
        return f"Redactor({self.total} values replaced)"  # never the values

    @property
    def counts(self) -> dict[str, int]:
        """How many distinct values of each category were replaced so far."""
        return dict(self._counters)

    @property
    def total(self) -> int:
        """How many distinct values were replaced so far, in every category."""
        return sum(self._counters.values())

    def redact_all(self, texts: Sequence[str]) -> list[str]:
        """Redact ``texts`` (the messages of one call) with one table of placeholders.

        Placeholder-shaped text already in any of them is never issued, so restoring the
        answer cannot turn such text into a value."""
        for text in texts:
            self._reserve(text)
        return [self.redact(text) for text in texts]

    def redact(self, text: str) -> str:
        """``text`` with every value it finds replaced by its placeholder."""
        self._reserve(text)
        spans = self._spans(text)
        if not spans:
            return text
        parts = []
        position = 0
        for start, end, category, key in spans:
            parts.append(text[position:start])
            parts.append(self._placeholder(category, key, text[start:end]))
            position = end
        parts.append(text[position:])
        return "".join(parts)

    def restore(self, text: str) -> str:
        """``text`` with each placeholder this redactor issued replaced by its value; any
        other placeholder-shaped text (one the model invented) is left as it is."""
        if not isinstance(text, str):
            raise InvalidInputError("restore takes text (str) only.")
        return _PLACEHOLDER.sub(lambda match: self._values.get(match.group(), match.group()), text)

    def restore_json(self, value: Any) -> Any:
        """A decoded JSON value with every string in it (keys too) restored, so a value with
        quotes or backslashes cannot break the JSON it goes back into."""
        if isinstance(value, str):
            return self.restore(value)
        if isinstance(value, list):
            return [self.restore_json(item) for item in value]
        if isinstance(value, dict):
            return {self.restore(str(k)): self.restore_json(v) for k, v in value.items()}
        return value

    # -- inside ------------------------------------------------------------------------------

    def _reserve(self, text: object) -> None:
        """Refuse what is not text; note the placeholder-shaped text in it (written in
        full-width forms too, which a model may answer in plain ones)."""
        if not isinstance(text, str):
            raise InvalidInputError("The redactor takes text (str) only.")
        self._reserved.update(match.group() for match in _PLACEHOLDER.finditer(_narrow(text)))

    def _spans(self, text: str) -> list[_Span]:
        spans: list[_Span] = []
        view = _narrow(text)  # one character for one: its spans are the original's
        if "@" in view:
            spans.extend(
                (m.start(), m.end(), "email", m.group().casefold()) for m in _EMAIL.finditer(view)
            )
        if _DIGIT.search(view):
            spans.extend(_iban_spans(view))
            for match in _CARD.finditer(view):
                digits = _NOT_DIGIT.sub("", match.group())
                if _luhn(digits):
                    spans.append((match.start(), match.end(), "card", digits))
            spans.extend(_phone_spans(view))
        if self._identifiers is not None:
            spans.extend(_identifier_spans(self._identifiers, text))
        return _choose(spans) if spans else spans

    def _placeholder(self, category: str, key: str, value: str) -> str:
        placeholder = self._keys.get((category, key))
        if placeholder is None:
            number = self._numbers[category]
            while True:
                number += 1
                placeholder = f"[{_PREFIX[category]}_{number}]"
                if placeholder not in self._reserved:
                    break
            self._numbers[category] = number
            self._counters[category] += 1
            self._keys[(category, key)] = placeholder
            self._values[placeholder] = value
        return placeholder
