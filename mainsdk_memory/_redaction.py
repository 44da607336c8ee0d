"""Redaction before a model call: identifiers out as placeholders, and back in the answer.

A :class:`Redactor` replaces, in every text it is given, e-mail addresses, phone numbers,
IBANs (mod-97 checked), payment card numbers (Luhn checked) and the identifiers the caller
names (the person's id, names, account handles: case-insensitive, whole words) with
placeholders such as ``[EMAIL_1]``, ``[PHONE_2]``, ``[IBAN_1]``, ``[CARD_1]``, ``[ID_1]``::

    redactor = Redactor(["person-42", "Ada Lovelace"])
    redactor.redact("Ada Lovelace: ada@example.com, +44 20 7946 0958")
    # '[ID_1]: [EMAIL_1], [PHONE_1]'
    redactor.restore("Write to [EMAIL_1]")   # 'Write to ada@example.com'

One value gets one placeholder for the life of the redactor (so across every message of one
model call), and :meth:`Redactor.restore` puts back only placeholders this redactor issued:
one the model invents stays as it is. :attr:`Redactor.counts` says how many values of each
category were replaced (for the audit: counts only). Pure: no I/O, no state beyond the
redactor's own table. What it does not catch is in ADR 0087.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from mainsdk_memory._errors import InvalidInputError

__all__ = ["CATEGORIES", "Redactor"]

CATEGORIES: Final = ("email", "phone", "iban", "card", "id")
"""The categories a redactor replaces, each with its placeholder prefix (``EMAIL``, ...)."""

_PREFIX: Final = {category: category.upper() for category in CATEGORIES}

_PLACEHOLDER: Final = re.compile(r"\[(EMAIL|PHONE|IBAN|CARD|ID)_([1-9][0-9]{0,5})\]")

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
# a slash, parentheses), at most two in a row; optionally after a "+" or a "(".
_PHONE: Final = re.compile(
    r"(?<![\w@+.,/:-])(?:\+|\(\+?)?\d(?:(?:[ \u00a0./-]|[ \u00a0]?[()][ \u00a0]?)?\d)*\)?"
    r"(?![\w@]|[.,:/-]\d)"
)
_GROUPS: Final = re.compile(r"\d+")
# A date at the start: 2024-01-15, 15.01.2024, 1/15/24 (then a space or the end).
_DATE: Final = re.compile(
    r"(?:\d{4}([./-])\d{1,2}\1\d{1,2}|\d{1,2}([./-])\d{1,2}\2(?:\d{4}|\d{2}))(?:$|[ \u00a0])"
)
# North American numbers: area code and exchange start with 2-9.
_NANP: Final = re.compile(r"1?[2-9]\d{2}[2-9]\d{6}")
_NANP_SHAPES: Final = frozenset({(10,), (3, 3, 4), (1, 3, 3, 4), (11,)})


def _is_phone(candidate: str) -> bool:
    if _DATE.match(candidate.lstrip("(")):
        return False
    groups = tuple(len(group) for group in _GROUPS.findall(candidate))
    digits = "".join(_GROUPS.findall(candidate))
    if candidate.count("(") != candidate.count(")"):
        return False
    if candidate.startswith(("+", "(+")):
        return 8 <= len(digits) <= 15
    if digits.startswith("00"):  # the international prefix of most countries
        return 8 <= len(digits) - 2 <= 15
    if re.fullmatch(r"0[.,]\d+", candidate):
        return False  # a decimal fraction
    if digits.startswith("0"):  # a national trunk prefix (most of Europe, much of Asia)
        # Nine digits in two groups is as often a reference as a number (0.12345678).
        return 10 <= len(digits) <= 12 or (len(digits) == 9 and len(groups) != 2)
    if _NANP.fullmatch(digits) and groups in _NANP_SHAPES:
        return True
    if groups == (3, 4) and candidate[3] == "-" and digits[0] in "23456789":
        return True  # a local number: 555-2671
    thousands = len(groups) >= 2 and groups[0] <= 3 and all(size == 3 for size in groups[1:])
    return 9 <= len(digits) <= 12 and len(groups) >= 3 and not thousands


def _phone_spans(text: str) -> Iterable[_Span]:
    for match in _PHONE.finditer(text):
        candidate = match.group()
        if candidate.startswith("(") and not candidate.startswith("(+") and (
            candidate.count("(") > candidate.count(")")
        ):
            candidate, start = candidate[1:], match.start() + 1
        else:
            start = match.start()
        if _is_phone(candidate):
            digits = "".join(_GROUPS.findall(candidate))
            yield start, start + len(candidate), "phone", digits


# -- all together ------------------------------------------------------------------------------


def _identifier_pattern(identifiers: Sequence[str]) -> re.Pattern[str] | None:
    words = sorted({" ".join(i.split()) for i in identifiers if i.strip()}, key=len, reverse=True)
    if not words:
        return None
    alternatives = (r"\s+".join(re.escape(part) for part in word.split(" ")) for word in words)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


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
    are matched case-insensitively as whole words, any run of whitespace inside one matching
    any other. Not thread-safe: one redactor per model call.
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
            self._check(text)
            self._reserved.update(match.group() for match in _PLACEHOLDER.finditer(text))
        return [self.redact(text) for text in texts]

    def redact(self, text: str) -> str:
        """``text`` with every value it finds replaced by its placeholder."""
        self._check(text)
        self._reserved.update(match.group() for match in _PLACEHOLDER.finditer(text))
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

    @staticmethod
    def _check(text: object) -> None:
        if not isinstance(text, str):
            raise InvalidInputError("The redactor takes text (str) only.")

    def _spans(self, text: str) -> list[_Span]:
        spans: list[_Span] = []
        if "@" in text:
            spans.extend(
                (m.start(), m.end(), "email", m.group().casefold()) for m in _EMAIL.finditer(text)
            )
        if any(char.isdigit() for char in text):
            spans.extend(_iban_spans(text))
            for match in _CARD.finditer(text):
                digits = re.sub(r"\D", "", match.group())
                if _luhn(digits):
                    spans.append((match.start(), match.end(), "card", digits))
            spans.extend(_phone_spans(text))
        if self._identifiers is not None:
            spans.extend(
                (m.start(), m.end(), "id", " ".join(m.group().casefold().split()))
                for m in self._identifiers.finditer(text)
            )
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
