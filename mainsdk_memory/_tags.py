"""Blinded tags: a memory's caller key and filterable metadata, and the ``where`` filters over them.

A version carries its caller key (``remember(key=...)``) and the top-level scalar fields of
its metadata as *tags*: keyed HMACs under the subject's index key, which the driver stores
beside the row and filters on through an index (:attr:`StoredRow.tags`, :attr:`Filter.tags`).
The key and the metadata themselves are sealed with the version; the driver sees neither a
field name nor a value (ADR 0092).

Tags (each blinded, so none is readable and the same value under another person's key is
another tag):

* ``key``: the caller key;
* ``=field value``: each top-level field whose value is a string, a number, a boolean or
  null (numbers by their value: ``1`` and ``1.0`` are one tag; ``true`` is not ``1``);
* ``<field level prefix``: each number (a float, or a whole number within ±2**53) also
  carries the 16 hexadecimal prefixes of its order-preserving 64-bit code, so a range is a
  union of at most a few hundred prefix tags (a dyadic cover), answered exactly by the
  index.

What the store can learn is what the index needs: which of one person's memories share a
key, a field value, or (for numbers) a prefix of the order code, which tells their rough
order; no value crosses persons (each has its own key). Lists and objects in metadata are
sealed and returned, never tagged: filtering on one is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mainsdk_memory._errors import InvalidInputError, MemoryCapabilityError
from mainsdk_memory._validate import encodable
from mainsdk_memory.drivers import MAX_TAGS, Filter

if TYPE_CHECKING:
    from mainsdk_memory._caller import Caller

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_KEY_CHARS",
    "MAX_METADATA_BYTES",
    "Where",
    "by_tags",
    "check_key",
    "check_metadata",
    "compile_where",
    "key_tag",
    "matches",
    "require_tags",
    "version_tags",
]

#: The longest caller key, in characters.
MAX_KEY_CHARS = 512
#: The longest metadata field name, in characters.
MAX_FIELD_CHARS = 128
#: The largest metadata, as UTF-8 JSON.
MAX_METADATA_BYTES = 1 << 20

# No index term of a word starts with a NUL, so no tag is ever a word's term.
_MARK = "\x00tag:"
_SEP = "\x1f"
_EXACT = 2**53  # numbers within ±2**53 are exact in a float: they are the ones ranged
_DIGITS = 16  # hexadecimal digits of a 64-bit order code: one prefix tag per digit
_TOP = (1 << 64) - 1
_RANGES = {"$gt", "$gte", "$lt", "$lte"}
_OPERATORS = {"$eq", "$ne", "$in", *_RANGES}

Blind = Callable[[str], str]
"""A subject's blinding function (:meth:`SubjectKeys.blind`)."""

Where = tuple[tuple[frozenset[str], ...], frozenset[str]]
"""A compiled filter: the tag clauses every row must meet and the tags it must not carry
(:attr:`Filter.tags`, :attr:`Filter.tags_absent`)."""


def _controls(value: str) -> bool:
    return any(ord(char) < 32 or 0x7F <= ord(char) < 0xA0 for char in value)


def check_key(value: object) -> str:
    """A caller key: a string of 1 to :data:`MAX_KEY_CHARS` characters, no control ones."""
    if not isinstance(value, str):
        raise InvalidInputError("key is a string (the caller's own id for the memory).")
    if not value or len(value) > MAX_KEY_CHARS:
        raise InvalidInputError(
            f"key is 1 to {MAX_KEY_CHARS} characters; nothing was stored."
        )
    if _controls(value) or not encodable(value):
        raise InvalidInputError(
            "key holds control characters or lone surrogates; nothing was stored."
        )
    return value


def _field(name: object, what: str = "metadata") -> str:
    if not isinstance(name, str):
        raise InvalidInputError(f"{what} field names are strings.")
    if not name or len(name) > MAX_FIELD_CHARS or _controls(name) or not encodable(name):
        raise InvalidInputError(
            f"{what} field names are 1 to {MAX_FIELD_CHARS} characters, with no control "
            "characters or lone surrogates."
        )
    return name


def check_metadata(value: object) -> dict[str, Any] | None:
    """``value`` as the JSON object sealed with a version (a copy), or ``None``.

    Keys are field names (:data:`MAX_FIELD_CHARS`), values JSON (no NaN or infinity), at
    most :data:`MAX_METADATA_BYTES` as UTF-8 JSON; its tags fit in :data:`MAX_TAGS`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata is a JSON object (a dict with string keys).")
    for name in value:
        _field(name)
    if not _string_keys(value):
        raise InvalidInputError(
            "metadata's nested objects have string keys only (JSON would turn others into "
            "strings); nothing was stored."
        )
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        raise InvalidInputError(
            "metadata holds something that is not JSON (JSON values only: strings, numbers "
            "without NaN or infinity, booleans, null, lists and objects with string keys); "
            "nothing was stored."
        ) from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise InvalidInputError(
            f"metadata is {len(encoded)} bytes as JSON; the limit is {MAX_METADATA_BYTES}. "
            "Keep large documents elsewhere and store a reference; nothing was stored."
        )
    copy: dict[str, Any] = json.loads(encoded)
    tagged = sum(len(_field_terms(name, one)) for name, one in copy.items())
    if tagged + 1 > MAX_TAGS:
        raise InvalidInputError(
            f"metadata has more filterable fields than a memory indexes ({MAX_TAGS} tags: "
            f"a string, boolean or null field takes 1, a number {1 + _DIGITS}). Move some "
            "into a nested object (stored, not filterable); nothing was stored."
        )
    return copy


def _string_keys(value: object, depth: int = 0) -> bool:
    """Whether every object inside ``value`` has string keys (deeper than JSON nests: no)."""
    if depth > 256:
        return False
    if isinstance(value, Mapping):
        return all(
            isinstance(name, str) and _string_keys(one, depth + 1) for name, one in value.items()
        )
    if isinstance(value, (list, tuple)):
        return all(_string_keys(one, depth + 1) for one in value)
    return True


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _canonical(value: object) -> str:
    """One spelling per JSON value: ``1`` and ``1.0`` are one number (a whole float is its
    integer exactly, at any size)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, ensure_ascii=False)


def _number(value: object) -> float | None:
    """``value`` as a float when it is a number the range tags cover exactly."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) <= _EXACT else None  # beyond: not exact in a float
    return value if math.isfinite(value) else None


def _order(number: float) -> int:
    """The 64-bit code of ``number`` whose unsigned order is the numbers' order."""
    bits: int = struct.unpack(">Q", struct.pack(">d", number + 0.0))[0]  # -0.0 becomes 0.0
    return bits ^ _TOP if bits >> 63 else bits | (1 << 63)


def _equal_term(name: str, value: object) -> str:
    return f"{_MARK}={name}{_SEP}{_canonical(value)}"


def _prefix_term(name: str, digits: int, prefix: int) -> str:
    return f"{_MARK}<{name}{_SEP}{digits}{_SEP}{prefix:x}"


def _field_terms(name: str, value: object) -> list[str]:
    if not _scalar(value):
        return []
    terms = [_equal_term(name, value)]
    number = _number(value)
    if number is not None:
        code = _order(number)
        terms.extend(
            _prefix_term(name, digits, code >> (4 * (_DIGITS - digits)))
            for digits in range(1, _DIGITS + 1)
        )
    return terms


def key_tag(blind: Blind, key: str) -> str:
    """The tag of caller key ``key`` under one subject's blinding."""
    return blind(f"{_MARK}key{_SEP}{key}")


def version_tags(
    blind: Blind, key: str | None, metadata: Mapping[str, Any] | None
) -> frozenset[str]:
    """Every tag of a version with ``key`` and ``metadata``, under one subject's blinding."""
    terms = [] if metadata is None else [
        term for name, value in metadata.items() for term in _field_terms(name, value)
    ]
    tags = {blind(term) for term in terms}
    if key is not None:
        tags.add(key_tag(blind, key))
    return frozenset(tags)


def _cover(low: int, high: int) -> list[tuple[int, int]]:
    """``(digits, prefix)`` pairs whose codes are exactly ``low..high`` (inclusive)."""
    out: list[tuple[int, int]] = []
    digits = _DIGITS
    while low <= high:
        if digits == 1:
            out.extend((1, prefix) for prefix in range(low, high + 1))
            break
        while low <= high and low % 16:
            out.append((digits, low))
            low += 1
        while low <= high and high % 16 != 15:
            out.append((digits, high))
            high -= 1
        if low > high:
            break
        low, high, digits = low // 16, high // 16, digits - 1
    return out


def _bound(operator: str, value: object) -> float:
    number = _number(value)
    if number is None:
        raise InvalidInputError(
            f"{operator} compares numbers (within ±2**53; booleans are not numbers): store "
            "dates as numbers, such as seconds since 1970, to filter them by range."
        )
    return number


def _interval(operators: Mapping[str, object]) -> tuple[int, int]:
    """The order codes (inclusive) the range operators among ``operators`` leave."""
    low, high = 0, _TOP
    for operator in _RANGES & operators.keys():
        code = _order(_bound(operator, operators[operator]))
        if operator == "$gt":
            low = max(low, code + 1)
        elif operator == "$gte":
            low = max(low, code)
        elif operator == "$lt":
            high = min(high, code - 1)
        else:
            high = min(high, code)
    return low, high


def _range_terms(name: str, operators: Mapping[str, object]) -> frozenset[str]:
    low, high = _interval(operators)
    return frozenset(_prefix_term(name, digits, prefix) for digits, prefix in _cover(low, high))


def _values(operator: str, value: object) -> list[object]:
    if operator == "$in":
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise InvalidInputError("$in takes a list of values.")
        values = list(value)
    else:
        values = [value]
    if not all(_scalar(one) for one in values) or any(
        isinstance(one, float) and not math.isfinite(one) for one in values
    ):
        raise InvalidInputError(
            "A filter compares top-level strings, numbers, booleans and null; a nested "
            "list or object in metadata is stored but not filterable."
        )
    return values


def compile_where(blinds: Iterable[Blind], where: object) -> Where:
    """``where`` (see ``recall(where=...)``) as tag clauses under every blinding in
    ``blinds`` (the person's and the tenant's: a clause is met under either)."""
    if not isinstance(where, Mapping):
        raise InvalidInputError("where is a dict of metadata field → value or operators.")
    clauses: list[set[str]] = []
    absent: set[str] = set()
    for name, condition in where.items():
        _field(name, "where")
        operators = condition if isinstance(condition, Mapping) else {"$eq": condition}
        unknown = [one for one in operators if one not in _OPERATORS]
        if unknown or not operators:
            raise InvalidInputError(
                "where operators are $eq, $ne, $gt, $gte, $lt, $lte and $in."
            )
        for operator in ("$eq", "$in"):
            if operator in operators:
                clauses.append(
                    {_equal_term(name, one) for one in _values(operator, operators[operator])}
                )
        if "$ne" in operators:
            absent.update(_equal_term(name, one) for one in _values("$ne", operators["$ne"]))
        if _RANGES & operators.keys():
            clauses.append(set(_range_terms(name, operators)))
    chosen = list(blinds)
    return (
        tuple(frozenset(blind(term) for blind in chosen for term in clause) for clause in clauses),
        frozenset(blind(term) for blind in chosen for term in absent),
    )


def require_tags(caller: Caller, what: str) -> None:
    """Refuse ``what`` on a store that keeps no tags (:attr:`Capabilities.tags`)."""
    if not caller.services.store.capabilities.tags:
        raise MemoryCapabilityError(
            "tags",
            f"{what} needs a store that keeps blinded tags (Capabilities.tags); this "
            "store's driver declares none. Use a driver that does (local, sqlite, "
            "postgresql).",
        )


def by_tags(caller: Caller, where: Filter, spec: object) -> Filter:
    """``where`` narrowed by the metadata filter ``spec`` (``None``: unchanged), the tag
    clauses blinded under the person's and the tenant's keys."""
    if spec is None:
        return where
    require_tags(caller, "A where= filter")
    clauses, absent = compile_where(caller.blinds(), spec)
    return dataclasses.replace(
        where, tags=where.tags + clauses, tags_absent=where.tags_absent | absent
    )


def matches(spec: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> bool:
    """Whether opened ``metadata`` meets ``spec`` (checked already by :func:`compile_where`):
    the store's answer is checked again after opening, so a tag someone who can write the
    store moved to another row adds nothing to an answer."""
    held = metadata or {}
    for name, condition in spec.items():
        operators = condition if isinstance(condition, Mapping) else {"$eq": condition}
        present = name in held and _scalar(held[name])
        spelled = _canonical(held[name]) if present else None
        for operator, operand in operators.items():
            if operator in ("$eq", "$in", "$ne"):
                equal = present and spelled in {
                    _canonical(one) for one in _values(operator, operand)
                }
                if equal == (operator == "$ne"):
                    return False
        if _RANGES & operators.keys():
            number = _number(held.get(name)) if present else None
            if number is None:
                return False
            low, high = _interval(operators)
            if not low <= _order(number) <= high:
                return False
    return True
