"""A version's blinded tags: what makes them well-formed, checked by the drivers before a write.

:attr:`StoredRow.tags` is a set of at most :data:`MAX_TAGS` blinded tags, each 32 lowercase
hex characters (keyed HMACs, like a link's key). A driver refuses a row whose tags are not,
with :class:`InvalidInputError`, before it writes anything; the message counts and names
the field, never a value.
"""

from __future__ import annotations

from collections.abc import Iterable

from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory.drivers._links import is_key
from mainsdk_memory.drivers._protocol import MAX_TAGS, StoredRow

__all__ = ["check_rows_tags", "checked_tags"]


def checked_tags(tags: object) -> frozenset[str]:
    """``tags`` as a frozenset; :class:`InvalidInputError` unless it is a set of at most
    :data:`MAX_TAGS` tags of 32 lowercase hex characters each."""
    if not isinstance(tags, frozenset | set):
        raise InvalidInputError(
            "A version's tags are not a set of blinded tags; nothing was stored."
        )
    if len(tags) > MAX_TAGS:
        raise InvalidInputError(
            f"A version carries {len(tags)} tags, more than {MAX_TAGS}; nothing was stored."
        )
    if not all(is_key(tag) for tag in tags):
        raise InvalidInputError(
            "A tag of the version is not 32 lowercase hex characters (a blinded tag); "
            "nothing was stored."
        )
    return frozenset(tags)


def check_rows_tags(rows: Iterable[StoredRow]) -> None:
    """Refuse the batch (:class:`InvalidInputError`) if the tags of one of ``rows`` are not
    well-formed (:func:`checked_tags`)."""
    for row in rows:
        checked_tags(row.tags)
