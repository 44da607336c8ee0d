"""The episodic ledger: an append-only, sealed record of what happened with a person.

``handle.episodes`` appends what was said and done (a user's or assistant's turn, a tool's
output, a system note), per person and session, and lists it back in time order; ``learn``
can read from it. There is no update and no delete: the person's erase removes every entry,
and retention the expired ones. Each entry is one control record of the driver (every driver
has them)::

    episode/<pseudonym>/<YYYYmmddTHHMMSS.ffffffZ>-<24 hex digits>

The time is the entry's ``at`` in UTC, so the records of one person list in time order (ties
by the random part, which is also the entry's id ``ep_<24 hex digits>``). The driver sees
that time, the person's pseudonym and the padded size; everything else is sealed. The
record's value is the sealed two-part record of working memory too (its byte layout:
:class:`~mainsdk_memory._person_records.PersonRecords`): the retention header, ``{"labels":
[...], "recorded_at": "..."}`` under the tenant's key, then the entry, ``{"id", "role",
"text", "at", "session", "agent", "labels", "flagged", "recorded_at"}``, under the person's
key.

Both envelopes are bound (associated data ``mainsdk-memory/v1/episode-header`` and
``mainsdk-memory/v1/episode-entry``) to tenant, app and the record key, so an entry moved to
another key, person or time does not open. The injection check runs at append: a
flagged text is still recorded (the ledger is what happened) with ``flagged=True``, and
``learn`` skips it.
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import InvalidInputError, MemoryInjectionError
from mainsdk_memory._person_records import (
    PERSON_RECORD_BYTES,
    PersonRecords,
    expired,
    person_keys,
    require_person_records,
)
from mainsdk_memory._walls import check_injection, check_write

if TYPE_CHECKING:
    from mainsdk_memory._services import Services

__all__ = [
    "EPISODE_PREFIX",
    "Episode",
    "EpisodeRole",
    "Episodes",
    "erase_episodes",
    "export_episodes",
    "sweep_expired_episodes",
]

EpisodeRole = Literal["user", "assistant", "tool", "system"]
EPISODE_PREFIX: Final = "episode/"
#: The most entries one ``list`` returns.
MAX_LIST: Final = 1000
#: The ledger's records (their associated data names are those of records written).
_RECORDS: Final = PersonRecords(
    EPISODE_PREFIX,
    header_ad="mainsdk-memory/v1/episode-header",
    document_ad="mainsdk-memory/v1/episode-entry",
)
_ROLES: Final = frozenset(get_args(EpisodeRole))


class Episode(BaseModel):
    """One entry of the episodic ledger, opened (its ``repr`` hides the text)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """``ep_…``"""
    role: EpisodeRole
    text: str
    at: datetime
    """When it happened (UTC)."""
    session: str | None
    """The session's name, as the appending handle was opened."""
    agent: str
    """The agent that appended it (``@person`` for the person's own handle)."""
    labels: tuple[str, ...]
    flagged: bool = False
    """The injection check flagged the text: it is kept as what happened, and ``learn``
    skips it."""

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield (name, "<hidden>" if name == "text" else value)


# -- the records ---------------------------------------------------------------------------


def _episode(document: dict[str, Any]) -> Episode | None:
    try:
        return Episode.model_validate({name: document.get(name) for name in Episode.model_fields})
    except ValueError:
        return None


def _stamp(when: datetime) -> str:
    """``when`` as the fixed-width UTC time of a record key: key order is time order."""
    t = when.astimezone(UTC)
    return (
        f"{t.year:04d}{t.month:02d}{t.day:02d}T{t.hour:02d}{t.minute:02d}{t.second:02d}"
        f".{t.microsecond:06d}Z"
    )


# -- the handle's ledger -------------------------------------------------------------------


class Episodes:
    """The episodic ledger of one handle's person (``handle.episodes``): append and list.

    An agent sees the entries it appended (in any of its sessions), or every agent's when
    its grant reads ``"all"``; the person's own handle sees them all. Every call is audited
    with ids and counts only; an append passes the kill switch, the agent's
    ``writes_per_minute`` and a child's consent.
    """

    __slots__ = ("_caller",)

    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    def __repr__(self) -> str:
        caller = self._caller
        return f"<Episodes agent={caller.agent!r} session={caller.session!r}>"

    def append(
        self,
        role: str,
        text: str,
        *,
        at: datetime | None = None,
        labels: Sequence[str] = (),
    ) -> Episode:
        """Record that ``role`` (``user``, ``assistant``, ``tool`` or ``system``) said or did
        ``text`` at ``at`` (timezone-aware; default now), in this handle's session.

        ``text`` is checked like ``remember``'s (1 to ``max_text_chars`` characters, not
        blank, valid Unicode) and so are ``labels`` (default ``personal``; only the store's
        declared labels); a child's entries carry the label ``child`` (kept at most 90 days)
        and need the guardian's consent. A text the injection check flags is recorded with
        ``flagged=True``. Returns the entry.
        """
        caller = self._caller
        with caller.audited("episode-append") as note:
            require_person_records(caller)
            services = caller.services
            if not isinstance(role, str) or role not in _ROLES:
                raise InvalidInputError(
                    "role is 'user', 'assistant', 'tool' or 'system'; nothing was recorded."
                )
            checked = validate.text(text, services.settings.max_text_chars)
            now = services.now()
            when = now if at is None else validate.aware(at, "at")
            if isinstance(labels, str):
                labels = [labels]
            checked_labels = validate.labels(list(labels) or None)
            allowed = services.settings.labels
            if allowed is not None and not set(checked_labels) <= allowed:
                raise InvalidInputError(
                    f"This store holds only the labels {sorted(allowed)}; nothing was recorded."
                )
            child = caller.child_write()
            if child:
                checked_labels = (*checked_labels, validate.CHILD_LABEL)
            flagged: tuple[str, ...] = ()
            try:
                check_injection(services, checked, child=child)
            except MemoryInjectionError as found:
                flagged = found.rules
            check_write(caller, new_personal_memory=False)  # the kill switch and the rate
            keys = person_keys(caller, create=True)
            assert keys is not None  # noqa: S101 - create=True always returns keys
            random = secrets.token_hex(12)
            key = f"{_RECORDS.of(caller.pseudonym())}{_stamp(when)}-{random}"
            recorded = now.isoformat()
            document = {
                "id": f"ep_{random}",
                "role": role,
                "text": checked,
                "at": when.isoformat(),
                "session": caller.session,
                "agent": caller.agent,
                "labels": list(checked_labels),
                "flagged": bool(flagged),
                "recorded_at": recorded,
            }
            episode = _episode(document)
            assert episode is not None  # noqa: S101 - every field was checked above
            value = _RECORDS.seal(
                caller, keys, key, document, labels=checked_labels, recorded_at=recorded
            )
            if len(value) > PERSON_RECORD_BYTES:
                raise InvalidInputError(
                    f"The entry is more than {PERSON_RECORD_BYTES} bytes sealed; split the text "
                    "into several entries. Nothing was recorded."
                )
            services.driver.control_put(caller.tenant, caller.app, key, value)
            note.count = 1
            note.extra.append(("episode", episode.id))
            if flagged:
                note.extra.append(("flagged", ",".join(flagged)))
            return episode

    def list(
        self, *, session: str | None = None, limit: int = 100, before: datetime | None = None
    ) -> builtins.list[Episode]:
        """The latest ``limit`` entries this handle sees that happened strictly before
        ``before`` (default: all), oldest first (ties by id).

        ``session`` narrows to one of this agent's sessions, by name (on the person's handle:
        every agent's sessions of that name). ``limit`` is 1 to 1,000. Entries past their
        labels' retention are never returned.
        """
        caller = self._caller
        with caller.audited("episode-list") as note:
            require_person_records(caller)
            if session is not None:
                session = validate.name(session, "session")
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
                raise InvalidInputError(f"limit must be a whole number from 1 to {MAX_LIST}.")
            edge = None if before is None else _stamp(validate.aware(before, "before"))
            written_by = caller.written_by()  # the kill switch; None: every agent's
            note.count = 0
            keys = person_keys(caller, create=False)
            if keys is None:
                return []
            prefix = _RECORDS.of(caller.pseudonym())
            cutoffs = caller.services.retention_cutoffs()
            found: builtins.list[Episode] = []
            # Key order is time order (the core sorts: it does not rely on the driver's).
            for key, value in reversed(sorted(caller.control_records(prefix))):
                if edge is not None and key[len(prefix) :] >= edge:
                    continue  # at or after ``before`` (the stamp then a "-": never equal)
                document = _RECORDS.open(caller, keys, key, value)
                episode = None if document is None else _episode(document)
                if (
                    document is None
                    or episode is None
                    or not self._visible(episode, written_by, session)
                    or expired(episode.labels, document.get("recorded_at"), cutoffs)
                ):
                    continue
                found.append(episode)
                if len(found) == limit:
                    break
            found.reverse()
            note.count = len(found)
            return found

    def _visible(self, episode: Episode, written_by: str | None, session: str | None) -> bool:
        caller = self._caller
        if written_by is not None and episode.agent != written_by:
            return False
        if session is None:
            return True
        return episode.session == session and (caller.is_person or episode.agent == caller.agent)


# -- export, erase and retention ----------------------------------------------------------


def export_episodes(caller: Caller) -> builtins.list[dict[str, Any]]:
    """Every entry of the caller's person's ledger (every agent's, expired ones not yet
    swept included), oldest first, for an export."""
    keys = person_keys(caller, create=False)
    if keys is None:
        return []
    fields = (*Episode.model_fields, "recorded_at")
    return [
        {name: document.get(name) for name in fields}
        for _, document in _RECORDS.documents(caller, keys)
    ]


def erase_episodes(caller: Caller, pseudonym: str) -> builtins.list[str]:
    """Delete every ledger record under ``pseudonym`` (a person's erase); their keys."""
    return _RECORDS.erase(caller, pseudonym)


def sweep_expired_episodes(services: Services, tenant_id: str) -> int:
    """Delete every ledger entry of the tenant and app, any person's, whose labels' retention
    ran out (read from the header, under the tenant's key); how many."""
    return _RECORDS.sweep(services, tenant_id)
