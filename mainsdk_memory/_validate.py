"""Checks of every argument a memory call takes, before anything changes.

Each check raises :class:`InvalidInputError` with a message that says what is allowed, and
never repeats the rejected value (it may be memory content).
"""

from __future__ import annotations

import base64
import json
import os
import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._records import Kind, Source
from mainsdk_memory.drivers import TENANT_SUBJECT

MAX_TEXT_CHARS = 8_000
MAX_TOP_K = 100
MAX_PINNED_IN_CONTEXT = 20
DEFAULT_LABELS = ("personal",)
#: Memories about a child carry this label; its retention is capped at CHILD_RETENTION.
CHILD_LABEL = "child"
CHILD_RETENTION = timedelta(days=90)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
_LABEL = re.compile(r"[a-z][a-z0-9_-]{0,63}")
MEMORY_ID = re.compile(r"mem_[a-z2-7]{26}")
_KINDS = frozenset(kind.value for kind in Kind)


def new_memory_id() -> str:
    return "mem_" + base64.b32encode(os.urandom(16)).decode("ascii").rstrip("=").lower()


def name(value: object, what: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInputError(
            f"{what} must be 1 to 128 characters of letters, digits, '.', '_', ':', '@' or '-', "
            "starting with a letter or digit."
        )
    return value


def encodable(value: str) -> bool:
    """Whether ``value`` is valid Unicode (no lone surrogates), so it can be sealed."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def person(value: object) -> str:
    """A person id, in Unicode normal form C (so "José" typed two ways is one person)."""
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= 256
        or value.strip() != value
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
        or not encodable(value)
    ):
        raise InvalidInputError(
            "A person id must be a string of 1 to 256 characters of valid Unicode, without "
            "control characters or surrounding spaces."
        )
    value = unicodedata.normalize("NFC", value)
    if value == TENANT_SUBJECT:
        raise InvalidInputError("'tenant' is reserved for shared memory; it is not a person id.")
    return value


def aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{what} must be timezone-aware (for example datetime.now(UTC)); a naive datetime "
            "is ambiguous."
        )
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInputError(
            f"{what} is outside the range of dates in UTC (years 1 to 9999)."
        ) from None


def text(value: object, limit: int, what: str = "text") -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"The {what} must be a string.")
    if not value.strip():
        raise InvalidInputError(f"The {what} is empty; nothing was stored.")
    if len(value) > limit:
        raise InvalidInputError(
            f"The {what} is {len(value)} characters; the limit is {limit}. Split it into "
            "several memories."
        )
    if not encodable(value):
        raise InvalidInputError(f"The {what} is not valid Unicode (lone surrogates).")
    return value


def source(value: object) -> Source:
    """A :class:`Source` whose strings are valid Unicode and whose time is aware."""
    if not isinstance(value, Source):
        raise InvalidInputError("source must be a Source, for example Source.person(id).")
    if not all(encodable(part) for part in (value.id, value.ref) if part is not None):
        raise InvalidInputError("The source's id or ref is not valid Unicode (lone surrogates).")
    if value.at is not None:
        aware(value.at, "source.at")
    # As it comes back from its seal (a fixed UTC offset), so the record a write returns
    # equals the one a read returns.
    return Source.model_validate(value.model_dump(mode="json"))


def data(value: object) -> BaseModel | None:
    """A pydantic model instance whose fields can be sealed (JSON, valid Unicode)."""
    if value is None:
        return None
    if not isinstance(value, BaseModel):
        raise InvalidInputError("data must be a pydantic model instance.")
    try:
        json.dumps(value.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        raise InvalidInputError(
            "data cannot be stored: its fields must be JSON values of valid Unicode."
        ) from None
    return value


def kind(value: object) -> Kind:
    if not isinstance(value, str) or value not in _KINDS:
        raise InvalidInputError(f"kind must be one of: {', '.join(sorted(_KINDS))}.")
    return Kind(value)


def kinds(values: Iterable[object] | None) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    try:
        return frozenset(kind(v).value for v in values)
    except TypeError:
        raise InvalidInputError("kinds is a list of kind names.") from None


#: The most labels one memory holds.
MAX_LABELS = 16


def labels(values: Iterable[object] | None) -> tuple[str, ...]:
    if values is None:
        return DEFAULT_LABELS
    if isinstance(values, str):
        values = [values]
    try:
        found = tuple(dict.fromkeys(values))
    except TypeError:
        raise InvalidInputError("labels is a list of label names.") from None
    if not found or len(found) > MAX_LABELS:
        raise InvalidInputError(f"Give 1 to {MAX_LABELS} labels (the default is 'personal').")
    for label in found:
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise InvalidInputError(
                "A label is 1 to 64 characters: lowercase letters, digits, '_' or '-', "
                "starting with a letter."
            )
    return found  # type: ignore[return-value]  # checked to be strings above


def top_k(value: object, what: str = "top_k") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOP_K:
        raise InvalidInputError(f"{what} must be a whole number from 1 to {MAX_TOP_K}.")
    return value


def type_name(model: type[BaseModel]) -> str:
    return f"{model.__module__}:{model.__qualname__}"
