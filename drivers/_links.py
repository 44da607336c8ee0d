"""What makes a batch of links well-formed: the check the local and db drivers run before a write.

:meth:`RelationDriver.put_links` refuses, before it stores anything, a batch holding a link
that is not a :class:`StoredLink` of strings and bytes, whose key is not 32 lowercase hex
characters, or whose subject, source or target is not a plain name; and a batch whose links
belong to two tenants or apps (one batch is one transaction of one tenant). Messages name the
position and the field, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory.drivers._protocol import StoredLink

__all__ = ["checked_links", "is_key", "is_name"]

_KEY = re.compile(r"[0-9a-f]{32}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")


def is_key(value: object) -> bool:
    """Whether ``value`` is a link key: 32 lowercase hex characters."""
    return type(value) is str and _KEY.fullmatch(value) is not None


def is_name(value: object) -> bool:
    """Whether ``value`` is a plain name (a subject, memory or entity id): 1 to 200 ASCII
    letters, digits, ``_`` and ``-``, the first a letter or digit; safe as a file name."""
    return type(value) is str and _NAME.fullmatch(value) is not None


def checked_links(links: Sequence[StoredLink]) -> dict[tuple[str, str], StoredLink]:
    """The links of a well-formed batch by (subject, key), the last of a key winning, in the
    order of their last appearance; :class:`InvalidInputError` if the batch is not."""
    found: dict[tuple[str, str], StoredLink] = {}
    scope: tuple[str, str] | None = None
    for position, link in enumerate(links, 1):
        if not isinstance(link, StoredLink):
            raise InvalidInputError(f"Link {position} of the batch is not a StoredLink.")
        if type(link.tenant) is not str or type(link.app) is not str:
            raise InvalidInputError(f"Link {position} has a tenant or app that is not a string.")
        if scope is None:
            scope = (link.tenant, link.app)
        elif (link.tenant, link.app) != scope:
            raise InvalidInputError(
                "A batch of links belongs to one tenant and app; store the links of each "
                "tenant and app in batches of their own. Nothing was stored."
            )
        if not is_key(link.key):
            raise InvalidInputError(
                f"The key of link {position} is not 32 lowercase hex characters; nothing "
                "was stored."
            )
        for field in ("subject", "source", "target"):
            if not is_name(getattr(link, field)):
                raise InvalidInputError(
                    f"The {field} of link {position} is not a plain name (1 to 200 ASCII "
                    "letters, digits, '_' and '-'); nothing was stored."
                )
        if not isinstance(link.sealed, bytes | bytearray | memoryview):
            raise InvalidInputError(
                f"The sealed value of link {position} is not bytes; nothing was stored."
            )
        found.pop((link.subject, link.key), None)  # the last of a key takes its place
        found[(link.subject, link.key)] = link
    return found
