"""The OpenAI Agents SDK's ``Session`` over the episodic ledger: an agent's conversation, sealed.

:class:`MemorySession` is a ``Session`` (``agents.memory.Session``) for ``Runner.run(...,
session=...)``: the conversation history of one handle's session, kept in the person's
episodic ledger (``handle.episodes``), so every item is sealed under the person's key,
audited by id, kept by the labels' retention, exported and erased with the person, and
walled like every ledger call (tenant, person, the agent, its kill switch and rate, a child's
consent).

What maps to what:

- ``session_id`` is the handle's session (open it with ``acting_for(..., session=...)``);
  the history is the ledger entries this agent appended in that session.
- ``add_items(items)`` appends each item as a ledger entry: its role ``user``, ``assistant``
  (the model's messages, tool calls and reasoning), ``tool`` (a tool's output) or ``system``
  (``system`` and ``developer`` messages), its text the item's JSON under a marker, so it
  comes back exactly as given. An item longer than :data:`ENTRY_CHARS` characters of JSON
  (a long tool output) takes several entries. Every item is checked before anything is
  written: one that is not JSON raises :class:`InvalidInputError` and nothing is stored.
  Each entry counts as one write against the agent's ``writes_per_minute``: a limit reached
  in the middle of a batch (:class:`LimitExceededError`) leaves its first items stored.
- ``get_items(limit)`` reads the session's entries back, oldest first (the latest ``limit``;
  all with ``None``; none with 0; all with a negative limit, as ``SQLiteSession``).
- ``pop_item()`` and ``clear_session()`` delete nothing: the ledger is append-only, and what
  it holds is the person's to keep or erase (their erase removes every entry, retention the
  expired ones). ``pop_item`` appends a *tombstone* entry naming the item it hides from this
  session's view (with that item's labels, so it is kept at least as long); ``clear_session``
  appends a marker that hides everything before it (one per label set among what it hides,
  likewise). The person's own handle, their export and ``handle.episodes.list()`` still show
  every item and marker, as what happened.
- ``learn=True`` (off by default) learns the durable facts of the user's messages through
  ``handle.learn`` after each ``add_items``: the session is a transcript kept for its
  retention, while a learnt memory outlives it and appears in ``context()`` of every other
  session, which is the app's decision to make (and with a model extractor, the user's words
  go to the model). Only the user's messages: the assistant's words are the agent's own, and
  a tool's output is untrusted. A learning error is raised after the items are stored.

The ledger's text is the item's JSON, which is not a person's sentence: do not pass a
session's ``handle.episodes.list()`` to ``learn``; use ``learn=True``, or ``learn`` the user
messages of ``await session.get_items()``. The injection check runs on every entry as on any
ledger append: a flagged item is kept (``flagged=True``) and comes back from ``get_items``
as the model already saw it.

The tenant: the SDK calls the session from async code. Each call runs the handle's blocking
work in a worker thread (the loop only waits), inside the tenant current when the session
was made (:class:`~mainsdk_memory.integrations._threads.TenantPin`): a call with no tenant
runs in it, a call under another tenant raises :class:`TenantMismatchError`. The writes of
one session object are serialised, and a cancelled write is waited for before the
cancellation is raised (as the SDK's own sessions do), so it is done or never started; use
one session object per conversation at a time.

Needs ``openai-agents``: ``pip install 'mainsdk-memory[openai-agents]'``.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, cast

try:
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings
except ModuleNotFoundError as missing:  # pragma: no cover - the extra is installed in tests
    raise ImportError(
        "mainsdk_memory.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'mainsdk-memory[openai-agents]'."
    ) from missing

from mainsdk_memory._episodes import MAX_LIST, Episode, EpisodeRole
from mainsdk_memory._errors import ConfigurationError, InvalidInputError
from mainsdk_memory._scoped import PersonMemory, ScopedMemory, caller_of
from mainsdk_memory._validate import CHILD_LABEL
from mainsdk_memory.integrations._threads import TenantPin

__all__ = ["ENTRY_CHARS", "MAX_ITEM_CHARS", "MemorySession"]

#: The longest text of one ledger entry this session writes (the Memory's ``max_text_chars``
#: must allow it; its default is 8,000); a longer item is split over several entries.
ENTRY_CHARS: Final = 4_000
#: The longest item, as compact JSON, ``add_items`` takes (a bigger inline file is refused:
#: pass it by URL or file id).
MAX_ITEM_CHARS: Final = 1_000_000

#: The key that marks an entry this session wrote, and its version.
_MARK: Final = "agents_sdk"
_VERSION: Final = 1
#: Room for the envelope around a part's chunk (the marker, the first part's id, numbers).
_ENVELOPE_CHARS: Final = 128
_MESSAGE_ROLES: Final[dict[str, EpisodeRole]] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
#: Item types that carry what a hosted tool returned (besides every ``*_output`` type).
_TOOL_RESULTS: Final = frozenset(
    {"mcp_call", "mcp_list_tools", "file_search_call", "code_interpreter_call",
     "image_generation_call", "web_search_call"}
)  # fmt: skip
_TICK: Final = timedelta(microseconds=1)


def _envelope(**fields: Any) -> str:
    return json.dumps({_MARK: _VERSION, **fields}, ensure_ascii=False, separators=(",", ":"))


def _signed(mac: Callable[[str], str], role: str, envelope: str) -> str:
    """``envelope`` with a keyed MAC of it and its role: what only this adapter writes, so
    text someone else put in the session's ledger (a user's words that look like an
    envelope) is never read as an item, a pop or a clear."""
    tag = mac(f"{_MARK}/{_VERSION}\x1f{role}\x1f{envelope}")
    return f'{envelope[:-1]},"mac":"{tag}"}}'


def _opened(entry: Episode, mac: Callable[[str], str]) -> dict[str, Any] | None:
    """The envelope of an entry this session wrote, or ``None`` (another entry: skipped)."""
    try:
        document = json.loads(entry.text)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get(_MARK) != _VERSION:
        return None
    tag = document.pop("mac", None)
    envelope = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    if not isinstance(tag, str) or not hmac.compare_digest(
        tag, mac(f"{_MARK}/{_VERSION}\x1f{entry.role}\x1f{envelope}")
    ):
        return None
    return document


def _role(item: dict[str, Any], index: int) -> EpisodeRole:
    role = item.get("role")
    if role is not None:
        if not isinstance(role, str) or role not in _MESSAGE_ROLES:
            raise InvalidInputError(
                f"Item {index}'s role is not one the Agents SDK sends (user, assistant, system, "
                "developer); nothing was stored."
            )
        return _MESSAGE_ROLES[role]
    kind = item.get("type")
    if not isinstance(kind, str):
        raise InvalidInputError(
            f"Item {index} has neither a role nor a type; pass the SDK's input items. "
            "Nothing was stored."
        )
    return "tool" if kind.endswith("_output") or kind in _TOOL_RESULTS else "assistant"


def _escaped_length(char: str) -> int:
    if char >= " " and char not in '"\\':
        return 1
    return len(json.dumps(char)) - 2


def _chunks(payload: str) -> list[str]:
    """``payload`` cut so that each piece, as a JSON string in its envelope, fits an entry."""
    budget = ENTRY_CHARS - _ENVELOPE_CHARS
    pieces: list[str] = []
    start, size = 0, 0
    for at, char in enumerate(payload):
        width = _escaped_length(char)
        if size + width > budget:
            pieces.append(payload[start:at])
            start, size = at, 0
        size += width
    pieces.append(payload[start:])
    return pieces


def _encoded(items: object) -> list[tuple[EpisodeRole, str | list[str]]]:
    """Each item's role and its entry text (or the chunks of its parts), all checked first."""
    if not isinstance(items, list | tuple):
        raise InvalidInputError("items is a list of the SDK's input items; nothing was stored.")
    encoded: list[tuple[EpisodeRole, str | list[str]]] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInputError(
                f"Item {index} is not a dict (the SDK's input items are); nothing was stored."
            )
        role = _role(item, index)
        try:
            payload = json.dumps(item, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            payload.encode("utf-8")
            exact = json.loads(payload) == item
        except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
            exact = False
        if not exact:
            raise InvalidInputError(
                f"Item {index} is not JSON (dicts with string keys, lists, strings, finite "
                "numbers, booleans, null; valid Unicode), so it would not come back as given. "
                "Nothing was stored."
            )
        if len(payload) > MAX_ITEM_CHARS:
            raise InvalidInputError(
                f"Item {index} is {len(payload):,} characters of JSON; a session item is at "
                f"most {MAX_ITEM_CHARS:,}. Pass big files by URL or file id. Nothing was stored."
            )
        whole = _envelope(item=item)
        encoded.append((role, whole if len(whole) <= ENTRY_CHARS else _chunks(payload)))
    return encoded


class _Found:
    """One visible item of the session: the id of its (first) entry, its labels, the item."""

    __slots__ = ("id", "item", "labels")

    def __init__(self, entry: Episode, item: dict[str, Any]) -> None:
        self.id = entry.id
        self.labels = entry.labels
        self.item = item


class MemorySession:
    """An Agents SDK ``Session`` kept in a handle's episodic ledger (see the module docstring).

    ``handle`` is ``memory.acting_for(person, agent=..., session=...)`` (or the person's own
    handle with a ``session``), made inside the tenant the session serves. ``labels`` are
    those of every entry (default ``personal``; only the store's declared labels; keep one
    set per session, so a tombstone is kept as long as what it hides). ``learn`` learns the
    user's messages after each ``add_items``. ``session_settings`` are the SDK's (a default
    ``limit`` for ``get_items``).
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        handle: ScopedMemory | PersonMemory,
        *,
        labels: Sequence[str] = (),
        learn: bool = False,
        session_settings: SessionSettings | None = None,
    ) -> None:
        if not isinstance(handle, ScopedMemory | PersonMemory):
            raise InvalidInputError(
                "handle is memory.acting_for(person, agent=..., session=...) or "
                "memory.person(person, session=...)."
            )
        if handle.session is None:
            raise InvalidInputError(
                "A session needs a handle opened with a session: "
                "memory.acting_for(person, agent=..., session=<the conversation's id>)."
            )
        if isinstance(labels, str):
            labels = [labels]
        if not all(isinstance(label, str) for label in labels):
            raise InvalidInputError("labels is a list of label names.")
        if not isinstance(learn, bool):
            raise InvalidInputError("learn is True or False.")
        if session_settings is not None and not isinstance(session_settings, SessionSettings):
            raise InvalidInputError("session_settings is an agents.SessionSettings.")
        if caller_of(handle).services.settings.max_text_chars < ENTRY_CHARS:
            # an entry that did not fit would fail in the middle of a batch
            raise ConfigurationError(
                f"A MemorySession writes ledger entries of up to {ENTRY_CHARS:,} characters; "
                "open the Memory with max_text_chars of at least that (the default is 8,000)."
            )
        self._pin = TenantPin()
        self._handle = handle
        self._labels = tuple(label for label in labels if label != CHILD_LABEL)
        self._learn = learn
        self._writing = threading.Lock()
        self.session_id = handle.session
        self.session_settings = session_settings

    def __repr__(self) -> str:
        return f"<MemorySession agent={self._handle.agent!r} session={self.session_id!r}>"

    # -- the Session protocol --------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's latest ``limit`` items, oldest first (``None``: the settings'
        ``limit``, else all; 0: none; a negative limit: all, as ``SQLiteSession``)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInputError("limit is a whole number or None.")
        wanted = None if limit is None or limit < 0 else limit
        if wanted == 0:
            return []
        return await self._pin.run(lambda: self._latest(wanted))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the session, in order (all are checked before any is written);
        with ``learn``, then learn the user's messages among them."""
        if isinstance(items, list | tuple) and not items:
            return
        await self._pin.run(lambda: self._append(items), settle=True)

    async def pop_item(self) -> TResponseInputItem | None:
        """Hide the session's most recent item behind a tombstone and return it (``None``
        when the session shows none)."""
        return await self._pin.run(self._pop, settle=True)

    async def clear_session(self) -> None:
        """Hide every item of the session so far behind a marker (nothing is deleted)."""
        await self._pin.run(self._clear, settle=True)

    # -- the ledger, in the worker thread --------------------------------------------------

    def _entries(self) -> Iterator[Episode]:
        """This agent's entries of the session, newest first, page by page."""
        handle, session = self._handle, self.session_id
        seen: set[str] = set()
        before: datetime | None = None
        while True:
            page = handle.episodes.list(session=session, limit=MAX_LIST, before=before)
            fresh = [entry for entry in reversed(page) if entry.id not in seen]
            for entry in fresh:
                seen.add(entry.id)
                if entry.agent == handle.agent and entry.session == session:
                    yield entry
            if len(page) < MAX_LIST or not fresh:
                return
            # The edge is inclusive of the oldest entry's time, so an entry that shares it
            # (and sorts before it) is not skipped; those already seen are left out.
            before = page[0].at + _TICK

    def _visible(self) -> Iterator[_Found]:
        """The items the session shows, newest first: each once, none a tombstone hides,
        none from before the latest clear marker."""
        hidden: set[str] = set()
        parts: dict[str, dict[int, str]] = {}
        for entry in self._entries():
            document = _opened(entry, self._mac)
            if document is None:
                continue
            if document.get("clear") is True:
                return
            popped = document.get("pop")
            if isinstance(popped, str):
                hidden.add(popped)
                continue
            item = document.get("item")
            if isinstance(item, dict):
                if entry.id not in hidden:
                    yield _Found(entry, item)
                continue
            found = self._assembled(entry, document, parts)
            if found is not None and found.id not in hidden:
                yield found

    @staticmethod
    def _assembled(
        entry: Episode, document: dict[str, Any], parts: dict[str, dict[int, str]]
    ) -> _Found | None:
        """Collect one part of a long item (read newest first, so its first part comes
        last); the item once its first part is read and every part is there."""
        chunk, part, count = document.get("chunk"), document.get("part"), document.get("parts")
        if not (isinstance(chunk, str) and isinstance(part, int) and isinstance(count, int)):
            return None
        first = document.get("of", entry.id) if part > 1 else entry.id
        if not isinstance(first, str):
            return None
        collected = parts.setdefault(first, {})
        collected[part] = chunk
        if part != 1:
            return None
        del parts[first]
        if sorted(collected) != list(range(1, count + 1)):
            return None  # a part is missing (damaged, or past retention): the item is left out
        try:
            item = json.loads("".join(collected[n] for n in range(1, count + 1)))
        except ValueError:
            return None
        return _Found(entry, item) if isinstance(item, dict) else None

    def _latest(self, limit: int | None) -> list[TResponseInputItem]:
        found: list[TResponseInputItem] = []
        for one in self._visible():
            found.append(cast(TResponseInputItem, one.item))
            if limit is not None and len(found) == limit:
                break
        found.reverse()
        return found

    def _next_times(self) -> Iterator[datetime]:
        """Times for new entries, each after the session's latest entry and the one before
        (the ledger orders by time: a fast batch or a fixed clock must not reorder it)."""
        latest = self._handle.episodes.list(session=self.session_id, limit=1)
        at = datetime.now(UTC)
        if latest and at <= latest[0].at:
            at = latest[0].at + _TICK
        while True:
            yield at
            at = max(datetime.now(UTC), at + _TICK)

    def _write(self, role: EpisodeRole, text: str, at: datetime, labels: Sequence[str]) -> Episode:
        return self._handle.episodes.append(
            role, _signed(self._mac, role, text), at=at, labels=labels
        )

    def _mac(self, text: str) -> str:
        """A keyed MAC under the person's index key (never stored in the clear: sealed in
        the entry with its text)."""
        caller = caller_of(self._handle)
        keys = caller.services.subject_keys(caller.tenant, caller.person, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys.blind(text)

    def _append(self, items: list[TResponseInputItem]) -> None:
        encoded = _encoded(items)  # every item checked before any is written
        with self._writing:
            times = self._next_times()
            for role, text in encoded:
                if isinstance(text, str):
                    self._write(role, text, next(times), self._labels)
                    continue
                count = len(text)
                first = self._write(
                    role, _envelope(part=1, parts=count, chunk=text[0]), next(times), self._labels
                )
                for number, chunk in enumerate(text[1:], start=2):
                    body = _envelope(of=first.id, part=number, parts=count, chunk=chunk)
                    self._write(role, body, next(times), self._labels)
        said = [item for item in items if item.get("role") == "user"] if self._learn else []
        if said:
            self._handle.learn(said)

    def _pop(self) -> TResponseInputItem | None:
        with self._writing:
            top = next(self._visible(), None)
            if top is None:
                return None
            labels = [label for label in top.labels if label != CHILD_LABEL]
            self._write("system", _envelope(pop=top.id), next(self._next_times()), labels)
            return cast(TResponseInputItem, top.item)

    def _clear(self) -> None:
        with self._writing:
            # One marker per label set among the items it hides, each with those labels, so
            # the markers are kept at least as long as every item (more labels: kept less).
            kept = {
                tuple(sorted(label for label in one.labels if label != CHILD_LABEL))
                for one in self._visible()
            }
            times = self._next_times()
            for labels in sorted(kept):
                self._write("system", _envelope(clear=True), next(times), labels)
