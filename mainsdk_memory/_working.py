"""Working memory: an agent's sealed JSON values about a person, under blinded keys.

``handle.working`` is what an agent keeps at hand about the person it acts for ("what do I
know about this user?"): small JSON values by name, per person and per agent (the person's
own handle is the agent ``@person``), and optionally per session. Each value is one control
record of the driver (every driver has them)::

    working/<pseudonym>/<token>

``token`` is the person's blind index (a keyed HMAC) of the JSON-quoted parts ``["working",
agent, session token or null, key]``, so the driver sees neither the key's name, the agent,
the session nor the value: only how many values a person has, their padded size and when
they change. The record's value is the sealed two-part record of the episodic ledger too
(its byte layout: :class:`~mainsdk_memory._person_records.PersonRecords`): the retention
header, ``{"labels": [...], "recorded_at": "..."}`` under the tenant's key (``labels`` is
``["child"]`` for a value about a child, else empty; ``recorded_at`` is when it was last
set), then the value's document, ``{"agent", "session", "key", "value", "labels",
"updated_at"}``, under the person's key.

Both envelopes are bound (associated data ``mainsdk-memory/v1/working-header`` and
``mainsdk-memory/v1/working``) to tenant, app and the record key, so a value moved to another
key does not open. A ``set`` is one ``control_put`` of that record, which replaces it
atomically: concurrent sets of one key leave exactly one of the values.

Retention: a value about a child (set while the person is under a guardian policy) expires
its ``child`` retention (at most 90 days) after it was last set, by the store's clock: ``get``
and ``list`` never return it, a fork never copies it, and ``Memory.enforce_retention`` deletes
it (:func:`sweep_expired_working`, from the header). A value about an adult has no retention.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import InvalidInputError, ScopeError
from mainsdk_memory._person_records import (
    PersonRecords,
    expired,
    person_keys,
    require_person_records,
)
from mainsdk_memory._walls import check_injection, check_write
from mainsdk_memory.keys import SubjectKeys

if TYPE_CHECKING:
    from mainsdk_memory._services import Services

__all__ = [
    "JSON",
    "MAX_KEY_CHARS",
    "MAX_VALUE_BYTES",
    "WORKING_PREFIX",
    "Journal",
    "WorkingMemory",
    "copy_working",
    "erase_working",
    "export_working",
    "sweep_expired_working",
    "undo_working",
]

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
"""A JSON value: what working memory holds."""

WORKING_PREFIX: Final = "working/"
#: The longest key name, in characters.
MAX_KEY_CHARS: Final = 200
#: The largest value, in bytes of compact UTF-8 JSON.
MAX_VALUE_BYTES: Final = 32 * 1024
#: The deepest nesting of lists and objects in a value.
MAX_DEPTH: Final = 32
#: Working memory's records (their associated data names are those of records written).
_RECORDS: Final = PersonRecords(
    WORKING_PREFIX,
    header_ad="mainsdk-memory/v1/working-header",
    document_ad="mainsdk-memory/v1/working",
)

Journal: TypeAlias = "list[tuple[str, bytes | None, bytes]]"
"""What :func:`copy_working` wrote, for :func:`undo_working`: per record, its key, what it
held before (``None``: nothing) and what the copy wrote."""


# -- the records ---------------------------------------------------------------------------


def _record_key(caller: Caller, keys: SubjectKeys, name: str, *, session: bool) -> str:
    token = caller.session_token() if session else None
    # Each part is JSON-quoted, so no name can shift the boundary between two parts.
    bound = json.dumps(["working", caller.agent, token, name])
    return f"{_RECORDS.of(caller.pseudonym())}{keys.blind(bound)}"


def _sealed(caller: Caller, keys: SubjectKeys, key: str, document: dict[str, Any]) -> bytes:
    """The record value of ``document`` under ``key``; its header holds the document's labels
    and the time it was last set."""
    return _RECORDS.seal(
        caller, keys, key, document, labels=document["labels"], recorded_at=document["updated_at"]
    )


def _open(caller: Caller, keys: SubjectKeys, key: str, value: bytes) -> dict[str, Any] | None:
    document = _RECORDS.open(caller, keys, key, value)
    if document is None or not isinstance(document.get("key"), str):
        return None
    return document


def _live(document: dict[str, Any], cutoffs: Sequence[tuple[str, datetime]]) -> bool:
    """Whether ``document`` is within its retention (a child's: at most 90 days; an adult's
    value has no labels, so no retention)."""
    return not expired(document.get("labels"), document.get("updated_at"), cutoffs)


def _documents(caller: Caller, keys: SubjectKeys) -> Iterator[dict[str, Any]]:
    """Every working-memory document about the person that opens, any agent's (expired
    ones not yet swept included)."""
    for _, document in _RECORDS.documents(caller, keys):
        if isinstance(document.get("key"), str):
            yield document


def _own(caller: Caller, document: dict[str, Any]) -> bool:
    """Whether ``document`` is this caller's: its agent, person-wide or of its session."""
    session = document.get("session")
    return document.get("agent") == caller.agent and (
        session is None or session == caller.session
    )


# -- checks --------------------------------------------------------------------------------


def _key_name(key: object) -> str:
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS or not key.isprintable():
        raise InvalidInputError(
            f"A working-memory key is a string of 1 to {MAX_KEY_CHARS} printable characters; "
            "nothing was changed."
        )
    return key


def _session_only(caller: Caller, session_only: object) -> bool:
    if not isinstance(session_only, bool):
        raise InvalidInputError("session_only is True or False; nothing was changed.")
    if session_only and caller.session is None:
        raise InvalidInputError(
            "session_only needs a session: use memory.acting_for(..., session=...)."
        )
    return session_only


_NOT_JSON = (
    "A working-memory value is JSON: a dict with string keys, a list, a string, an int, a "
    "finite float, True, False or None (nested at most 32 deep); nothing was stored."
)


def _strings(value: object) -> Iterator[str]:
    """Every string in a checked value, object keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for name, inner in item.items():
                yield name
                stack.append(inner)


def _checked_value(value: object) -> JSON:
    """``value`` as a plain JSON value (a copy, so later changes to it change nothing)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise InvalidInputError(_NOT_JSON)
        if nodes > MAX_VALUE_BYTES:  # every node takes a byte or more: too large (or a cycle)
            raise InvalidInputError(
                f"The value is more than {MAX_VALUE_BYTES} bytes as JSON; nothing was stored."
            )
        kind = type(item)
        if item is None or kind in (bool, int, str):
            continue
        if kind is float:
            if not math.isfinite(cast(float, item)):
                raise InvalidInputError(_NOT_JSON)
        elif kind is list:
            stack.extend((inner, depth + 1) for inner in cast(list[object], item))
        elif kind is dict:
            for name, inner in cast(dict[object, object], item).items():
                if type(name) is not str:
                    raise InvalidInputError(_NOT_JSON)
                stack.append((inner, depth + 1))
        else:
            raise InvalidInputError(_NOT_JSON)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(
            "The value holds a string that is not valid Unicode (lone surrogates); nothing "
            "was stored."
        ) from None
    except ValueError:  # an integer too long to write as digits
        raise InvalidInputError(_NOT_JSON) from None
    if size > MAX_VALUE_BYTES:
        raise InvalidInputError(
            f"The value is {size} bytes as JSON; the limit is {MAX_VALUE_BYTES}. Keep large "
            "content in memories, not in working memory; nothing was stored."
        )
    return cast(JSON, json.loads(text))


# -- the handle's working memory -----------------------------------------------------------


class WorkingMemory:
    """One agent's working memory about one person (``handle.working``).

    Values are JSON, sealed under the person's key, under keys the driver only sees blinded.
    Each agent has its own (the person's handle has its own, as ``@person``); a value set
    ``session_only`` belongs to the handle's session and, there, shadows the person-wide
    value of the same key. Every call is audited with counts only; writes pass the kill
    switch, the agent's ``writes_per_minute``, a child's consent and the injection check.
    """

    __slots__ = ("_caller",)

    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    def __repr__(self) -> str:
        caller = self._caller
        return f"<WorkingMemory agent={caller.agent!r} session={caller.session!r}>"

    def set(self, key: str, value: JSON, *, session_only: bool = False) -> None:
        """Set ``key`` to ``value`` (an upsert): person-wide, or with ``session_only`` for
        this handle's session only.

        ``key`` is 1 to 200 printable characters; ``value`` is JSON (dict with string keys,
        list, str, int, finite float, bool, None; at most 32 KiB as compact JSON). The
        injection check runs on the key and on every string of the value: a flagged one
        raises :class:`MemoryInjectionError`. Any refusal stores nothing.
        """
        caller = self._caller
        with caller.audited("working-set") as note:
            require_person_records(caller)
            name = _key_name(key)
            session = _session_only(caller, session_only)
            plain = _checked_value(value)
            child = caller.child_write()
            services = caller.services
            check_injection(services, name, child=child)
            for one in _strings(plain):
                check_injection(services, one, child=child)
            check_write(caller, new_personal_memory=False)  # the kill switch and the rate
            keys = person_keys(caller, create=True)
            assert keys is not None  # noqa: S101 - create=True always returns keys
            record = _record_key(caller, keys, name, session=session)
            document = {
                "agent": caller.agent,
                "session": caller.session if session else None,
                "key": name,
                "value": plain,
                # A child's value expires its retention after it was last set.
                "labels": [validate.CHILD_LABEL] if child else [],
                "updated_at": services.now().isoformat(),
            }
            # At most 32 KiB of value, 200 characters of key and two names of 128, and a
            # header of a few hundred bytes: the record stays well under PERSON_RECORD_BYTES.
            sealed = _sealed(caller, keys, record, document)
            services.driver.control_put(caller.tenant, caller.app, record, sealed)
            note.count = 1

    def get(self, key: str, default: JSON = None) -> JSON:
        """The value of ``key`` (this session's, else the person-wide one), or ``default``.

        A value about a child that was last set longer ago than the ``child`` retention (at
        most 90 days) is never returned: it is as if deleted."""
        caller = self._caller
        with caller.audited("working-get") as note:
            require_person_records(caller)
            name = _key_name(key)
            caller.written_by()  # the kill switch
            note.count = 0
            keys = person_keys(caller, create=False)
            if keys is None:
                return default
            driver = caller.services.driver
            cutoffs = caller.services.retention_cutoffs()
            for session in (True, False) if caller.session is not None else (False,):
                record = _record_key(caller, keys, name, session=session)
                sealed = driver.control_get(caller.tenant, caller.app, record)
                document = None if sealed is None else _open(caller, keys, record, sealed)
                if document is not None and _live(document, cutoffs):
                    note.count = 1
                    return cast(JSON, document.get("value"))
            return default

    def list(self) -> dict[str, JSON]:
        """Every value this handle sees, by key name (sorted): the person-wide ones, each
        shadowed by this session's value of the same key (a child's expired ones never)."""
        caller = self._caller
        with caller.audited("working-list") as note:
            require_person_records(caller)
            caller.written_by()  # the kill switch
            keys = person_keys(caller, create=False)
            wide: dict[str, JSON] = {}
            mine: dict[str, JSON] = {}
            if keys is not None:
                cutoffs = caller.services.retention_cutoffs()
                for document in _documents(caller, keys):
                    if _own(caller, document) and _live(document, cutoffs):
                        into = wide if document.get("session") is None else mine
                        into[str(document["key"])] = cast(JSON, document.get("value"))
            values = {**wide, **mine}
            note.count = len(values)
            return dict(sorted(values.items()))

    def delete(self, key: str, *, session_only: bool = False) -> bool:
        """Delete the person-wide value of ``key`` (with ``session_only``: this session's);
        whether there was one (a child's expired value is deleted too, but was not there). The
        record is removed for good."""
        caller = self._caller
        with caller.audited("working-delete") as note:
            require_person_records(caller)
            name = _key_name(key)
            session = _session_only(caller, session_only)
            check_write(caller, new_personal_memory=False)  # the kill switch and the rate
            note.count = 0
            keys = person_keys(caller, create=False)
            if keys is None:
                return False
            driver = caller.services.driver
            record = _record_key(caller, keys, name, session=session)
            sealed = driver.control_get(caller.tenant, caller.app, record)
            if sealed is None:
                return False
            document = _open(caller, keys, record, sealed)
            driver.control_put(caller.tenant, caller.app, record, None)
            there = document is not None and _live(document, caller.services.retention_cutoffs())
            note.count = int(there)
            return there


# -- fork, export and erase ----------------------------------------------------------------


def copy_working(
    source: Caller, target: Caller, journal: Journal, *, child: bool = False
) -> tuple[int, int]:
    """Copy every working-memory value ``source``'s agent holds about the person to
    ``target``'s agent; ``(copied, left)``: the values written, and the session-only values
    left out.

    Person-wide values stay person-wide. Values of ``source``'s session are copied only into
    ``target``'s session: with no target session they are left out (and counted), never made
    person-wide, as a fork leaves session-only memories out. A child's value past its
    retention is not copied. A copy keeps its original's labels (``child`` added when
    ``child``) and the time it was last set, so a copy never extends a child's retention. A
    value ``target``'s agent already held under a copied key is replaced.

    Before each write, ``journal`` gets the record's key, what it held and what is written,
    so :func:`undo_working` can take the copy back even when a write fails midway. Both
    callers must act for the same person in the same tenant; the caller (fork) runs the walls
    and audits.
    """
    if (source.tenant, source.person) != (target.tenant, target.person):
        raise ScopeError("Working memory is copied between agents of one person and tenant.")
    require_person_records(source)
    keys = person_keys(source, create=False)
    if keys is None:
        return 0, 0
    cutoffs = source.services.retention_cutoffs()
    documents = [
        document
        for document in _documents(source, keys)
        if _own(source, document) and _live(document, cutoffs)
    ]
    documents.sort(key=lambda document: (document.get("session") is not None, document["key"]))
    driver = target.services.driver
    copied = left = 0
    for document in documents:
        session = document.get("session") is not None
        if session and target.session is None:
            left += 1  # session-only: it stays in one session, and the fork has none
            continue
        record = _record_key(target, keys, str(document["key"]), session=session)
        labels = [str(one) for one in document.get("labels") or ()]
        if child and validate.CHILD_LABEL not in labels:
            labels.append(validate.CHILD_LABEL)
        copy = {
            "agent": target.agent,
            "session": target.session if session else None,
            "key": document["key"],
            "value": document.get("value"),
            "labels": labels,
            "updated_at": document.get("updated_at"),
        }
        value = _sealed(target, keys, record, copy)
        journal.append((record, driver.control_get(target.tenant, target.app, record), value))
        driver.control_put(target.tenant, target.app, record, value)
        copied += 1
    return copied, left


def undo_working(target: Caller, journal: Journal) -> None:
    """Take back what :func:`copy_working` wrote, newest first: each record that still holds
    the copy gets back what it held before (or is deleted); one changed since is left as it
    is. Best effort: a record that cannot be written now stays the new agent's value."""
    driver = target.services.driver
    for record, before, written in reversed(journal):
        with contextlib.suppress(Exception):  # the fork's own error is what is raised
            if driver.control_get(target.tenant, target.app, record) == written:
                driver.control_put(target.tenant, target.app, record, before)


def export_working(caller: Caller) -> list[dict[str, Any]]:
    """Every working-memory value about the caller's person, every agent's, for an export:
    ``agent``, ``session`` (a name, or ``None``: person-wide), ``key``, ``value``,
    ``updated_at``; sorted by agent, session and key. A child's expired values not yet swept
    are included, as the ledger's are."""
    keys = person_keys(caller, create=False)
    if keys is None:
        return []
    out = [
        {
            "agent": document.get("agent"),
            "session": document.get("session"),
            "key": document["key"],
            "value": document.get("value"),
            "updated_at": document.get("updated_at"),
        }
        for document in _documents(caller, keys)
    ]
    out.sort(key=lambda item: (str(item["agent"]), item["session"] or "", str(item["key"])))
    return out


def erase_working(caller: Caller, pseudonym: str) -> list[str]:
    """Delete every working-memory record under ``pseudonym`` (a person's erase); their
    record keys."""
    return _RECORDS.erase(caller, pseudonym)


def sweep_expired_working(services: Services, tenant_id: str) -> int:
    """Delete every working-memory value of the tenant and app, any person's, whose labels'
    retention ran out (a child's: at most 90 days after it was last set), read from the
    header under the tenant's key; how many."""
    return _RECORDS.sweep(services, tenant_id)
