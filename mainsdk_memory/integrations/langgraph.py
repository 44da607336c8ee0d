"""LangGraph's ``BaseStore`` over the memory handles: a graph's long-term store, sealed per person.

:class:`MemoryStore` is a ``langgraph.store.base.BaseStore`` (``graph.compile(store=...)``,
``get_store()``, ``runtime.store``): ``batch`` and ``abatch`` run LangGraph's four operations
(``GetOp``, ``PutOp``, ``SearchOp``, ``ListNamespacesOp``), and ``get``/``put``/``search``/
``delete``/``list_namespaces`` and their async twins come from ``BaseStore``. Every item is a
memory of the person it is about, so every wall of the SDK stands behind the store: the
tenant, the person, the agent's grant, kill switch and limits, the injection check, forget
requests, the audit log (ids only), export and erase.

What maps to what:

- **The namespace** names the person. The store is built with a template, by default
  ``("memories", "{person}")``: a namespace is the template's literal labels, the person's
  id at the ``{person}`` position, then any labels of the graph's own
  (``("memories", "ada", "prefs")``). A write to a namespace that does not fit the template
  raises :class:`InvalidInputError`; a read of one finds nothing (nothing can be held
  there). Built with ``person=...``, the store serves that one person only: a namespace that
  names another raises :class:`ScopeError`, and a search or listing may leave the person out.
- **The caller key** (``remember(key=...)``) is the namespace without the person, and the
  item's key, as JSON (at most 512 characters), so a put is an upsert of one memory: its
  next version when the key is held, nothing at all when the value is the same.
  The namespace's labels are also metadata fields of the memory (``$ns.<position>``, with
  the marker ``$store``), blinded tags in the driver, so ``search(namespace_prefix)`` and
  ``list_namespaces(prefix=...)`` are filters pushed into the driver (``where=``), never
  applied after a top-k cut. Top-level value fields whose names start with ``$`` are
  reserved for them.
- **The value** (a JSON object, at most 1 MiB) goes whole into the memory's sealed
  ``metadata``, and its top-level strings, numbers, booleans and nulls are what ``filter=``
  filters on. The searchable ``text`` is built from the value: the fields ``index=`` names
  (LangGraph's JSON paths, ``"title"``, ``"sections[*].text"``; default: the store's
  ``fields``, else every string in the value, dict keys left out, or its JSON when it holds
  no string), joined by newlines and cut at ``max_text_chars`` (8,000). ``index=False``
  stores an item that no query finds (it is still listed and filtered).
- **The kind** of every memory written is the store's ``kind`` (default ``note``: an item is
  a document the graph keeps, not a fact the SDK formed); reads do not filter on it.
- ``Item.created_at`` is the memory's ``created_at``; ``Item.updated_at`` its current
  version's ``recorded_at``.

**Delete** (``PutOp`` with ``value=None``). An agent cannot erase a person's memory: the
store's delete is the agent's forget *request* (:meth:`ScopedMemory.forget`), and the item
stays, visible to the graph like any memory, until the person approves it
(``memory.person(id).pending()`` then ``approve(request_id)``: every version is erased and a
signed receipt returned) or rejects it. It is not hidden meanwhile, on purpose: what the
graph reads is what is held, and a graph that was talked into deleting (a prompt injection
asking it to "forget the allergy") cannot make a person's memory vanish from its own view
before the person has decided. Asking twice is one request. A put to the same key while the
request waits revises the same memory, which the approval then erases too.

A store built with ``as_person=True`` (and ``person=``) acts as the person themself
(:meth:`Memory.person`): its delete is a hard delete with a receipt at once, its writes are
``confirmed``, and it sees every agent's memories of the person. Build it only for the
person's own session or privacy UI, where the person is the one acting; never hand it to an
agent's graph.

**Search** with a ``query`` is the handle's ``recall`` (BM25, or hybrid with the Memory's
embedder; ``ranking="relevance"``: no signal re-orders a store's results) with the namespace
and ``filter`` pushed into the driver; ``offset + limit`` is at most 100 then. Without a
query it lists the matching items, newest first, page by page. **list_namespaces** lists the
namespaces of one person's items this agent may see (its grant: its own, or every agent's);
LangGraph's ``InMemoryStore`` lists every namespace of every user.

**The tenant** is :func:`mainsdk_memory.tenant.current` at each call, never a parameter: one
store serves every tenant, each call in its own. ``abatch`` reads it in the caller's task,
then runs the batch in a worker thread inside ``tenant.use(<that tenant>)`` (the event loop
only waits). A batch's operations run in order, after all of them are checked: a bad
operation raises before any of them changes anything. ``ttl`` is not supported
(``supports_ttl`` is false: a memory lives until it is forgotten or its labels' retention
ends).

Needs ``langgraph``: ``pip install 'mainsdk-memory[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        validate_op_namespace,
    )
except ModuleNotFoundError as missing:  # pragma: no cover - the extra is installed in tests
    raise ImportError(
        "mainsdk_memory.integrations.langgraph needs LangGraph: "
        "pip install 'mainsdk-memory[langgraph]'."
    ) from missing

from mainsdk_memory import _validate as validate
from mainsdk_memory import tenant
from mainsdk_memory._errors import (
    ConfigurationError,
    InvalidInputError,
    MemoryCapabilityError,
    MemoryNotFound,
    ScopeError,
)
from mainsdk_memory._memory import Memory
from mainsdk_memory._records import MemoryRecord
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory._tags import MAX_KEY_CHARS, check_key, check_metadata, compile_where

__all__ = ["MAX_TEXT_CHARS", "PERSON", "MemoryStore"]

#: The template label that stands for the person's id.
PERSON: Final = "{person}"
#: The longest searchable text built from a value (the SDK's default ``max_text_chars``).
MAX_TEXT_CHARS: Final = 8_000

_T = TypeVar("_T")

# Reserved metadata fields: the marker every item carries, and one field per namespace label.
_MARKER: Final = "$store"
_MARKER_VALUE: Final = "langgraph"
_NS: Final = "$ns."
# The text of an item no query may find: no word in it, so no search term.
_UNINDEXED: Final = "-"
_PAGE: Final = validate.MAX_TOP_K
_NO_PERSON = (
    "This search or listing does not name a person: a store's items are memories of one "
    "person each, and an agent reads one person at a time. Give a namespace prefix that "
    "reaches the person's label (template {template}), or build the store for one person "
    "(MemoryStore(..., person=...))."
)
_OTHER_PERSON = (
    "This store serves one person, and the namespace names another. Build a store for that "
    "person, or one that maps namespaces to persons (no person=)."
)
_RESERVED = (
    "Top-level value fields whose names start with '$' are reserved by the store (they hold "
    "the namespace); rename the field. Nothing was changed."
)


def _identity(term: str) -> str:
    return term


@dataclass(frozen=True, slots=True)
class _Place:
    """Where one namespace puts an item: the person, and the labels without the person."""

    person: str
    label: str  # the person's label as the graph wrote it
    labels: tuple[str | None, ...]  # the namespace, ``None`` at the person's position

    def key(self, item_key: str) -> str:
        """The caller key of the item ``item_key`` in this namespace."""
        return _encode_key(self.labels, item_key)

    def fields(self) -> dict[str, Any]:
        """The metadata fields that tag an item of this namespace."""
        tagged: dict[str, Any] = {_MARKER: _MARKER_VALUE}
        tagged.update(
            (f"{_NS}{at}", label) for at, label in enumerate(self.labels) if label is not None
        )
        return tagged


@dataclass(frozen=True, slots=True)
class _Scope:
    """The person a search or listing reads, their label, and the ``where`` of its prefix."""

    person: str
    label: str
    where: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Get:
    place: _Place
    key: str  # the caller key


@dataclass(frozen=True, slots=True)
class _Put:
    place: _Place
    key: str  # the caller key
    text: str | None  # None: a delete
    metadata: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class _Search:
    scope: _Scope
    query: str | None
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class _Listing:
    scope: _Scope
    conditions: tuple[MatchCondition, ...]
    max_depth: int | None
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class _Nothing:
    """An op no item of the store can answer: a get of a namespace outside the template
    (``None``), a search or listing under a prefix outside it (``[]``)."""

    empty_list: bool


_Plan = _Get | _Put | _Search | _Listing | _Nothing
_Found = tuple[tuple[str, ...], str, dict[str, Any]]  # an item's namespace, key and value


def _encode_key(labels: Sequence[str | None], item_key: str) -> str:
    key = json.dumps([*labels, item_key], ensure_ascii=False, separators=(",", ":"))
    if any(0x7F <= ord(char) < 0xA0 or 0xD800 <= ord(char) < 0xE000 for char in key):
        key = json.dumps([*labels, item_key], separators=(",", ":"))  # escaped, not refused
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(
            f"The namespace (without the person) and the item's key come to more than "
            f"{MAX_KEY_CHARS} characters as the store's caller key; use shorter labels or "
            "keys. Nothing was changed."
        )
    return check_key(key)


def _decode_key(key: str | None) -> tuple[tuple[str | None, ...], str] | None:
    """The labels and item key a caller key was made of, or ``None`` if it is not a store's."""
    if key is None or not key.startswith("["):
        return None
    try:
        parts = json.loads(key)
    except ValueError:
        return None
    if (
        not isinstance(parts, list)
        or len(parts) < 2
        or not all(part is None or isinstance(part, str) for part in parts)
        or not isinstance(parts[-1], str)
        or parts[:-1].count(None) != 1
    ):
        return None
    return tuple(parts[:-1]), parts[-1]


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (dict keys left out), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for one in value.values():
            yield from _strings(one)
    elif isinstance(value, (list, tuple)):
        for one in value:
            yield from _strings(one)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets a prefix or suffix condition (``"*"`` is any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInputError("A namespace match condition is 'prefix' or 'suffix'.")
    return all(want == "*" or label == want for label, want in pairs)


def _count(value: object, what: str, *, least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise InvalidInputError(f"{what} is a whole number of at least {least}.")
    return value


class MemoryStore(BaseStore):
    """LangGraph's ``BaseStore`` over a :class:`~mainsdk_memory.Memory`: each item a memory of
    the person its namespace names, written and read as the store's agent (or, with
    ``as_person=True``, as the person themself).

    ``memory`` is the open Memory; ``agent`` (and ``session``) the agent the graph writes and
    reads as. ``namespace`` is the template of the store's namespaces: literal labels and
    exactly one :data:`PERSON` (default ``("memories", "{person}")``). ``person`` binds the
    store to one person. ``as_person=True`` (with ``person``, without ``agent``) acts as
    that person themself: for their own session or privacy UI only. ``kind`` is the kind of
    every memory written (default ``"note"``); ``fields`` the JSON paths of a value whose
    text is searchable when a put passes no ``index`` (default: every string in the value);
    ``max_text_chars`` where that text is cut (default and at most the SDK's 8,000; keep it
    within the Memory's own ``max_text_chars`` when that is lower).
    Everything is checked here, so a bad store fails when built, not at its first call.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        agent: str | None = None,
        session: str | None = None,
        namespace: Sequence[str] = ("memories", PERSON),
        person: str | None = None,
        as_person: bool = False,
        kind: str = "note",
        fields: Sequence[str] | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        if not isinstance(memory, Memory):
            raise ConfigurationError("MemoryStore takes an open Memory (Memory.open(...)).")
        if not isinstance(as_person, bool):
            raise ConfigurationError("as_person is True or False.")
        if as_person:
            if person is None or agent is not None:
                raise ConfigurationError(
                    "A store with as_person=True acts as one person themself: pass person=... "
                    "and no agent (give it to the person's own interface, never to an agent)."
                )
        elif agent is None:
            raise ConfigurationError(
                "MemoryStore needs the agent the graph acts as: MemoryStore(memory, "
                "agent=...); or person=... with as_person=True for the person's own interface."
            )
        self._memory = memory
        self._agent = None if agent is None else validate.name(agent, "agent")
        self._session = None if session is None else validate.name(session, "session")
        self._person = None if person is None else validate.person(person)
        self._as_person = as_person
        self._kind = validate.kind(kind).value
        self._template, self._at = self._check_template(namespace)
        self._fields = None if fields is None else self._check_paths(fields, "fields")
        if (
            not isinstance(max_text_chars, int)
            or isinstance(max_text_chars, bool)
            or not 1 <= max_text_chars <= MAX_TEXT_CHARS
        ):
            raise ConfigurationError(
                f"max_text_chars is a whole number from 1 to {MAX_TEXT_CHARS}."
            )
        self._max_text = max_text_chars

    def __repr__(self) -> str:
        return (
            f"<MemoryStore agent={self._agent!r} session={self._session!r} "
            f"namespace={self._template!r} as_person={self._as_person!r}>"
        )

    # -- configuration --------------------------------------------------------------------

    @staticmethod
    def _check_template(namespace: object) -> tuple[tuple[str, ...], int]:
        if isinstance(namespace, str) or not isinstance(namespace, Sequence):
            raise ConfigurationError(
                "namespace is a tuple of labels with one '{person}', like "
                "('memories', '{person}')."
            )
        labels = tuple(namespace)
        if labels.count(PERSON) != 1:
            raise ConfigurationError(
                "The namespace template holds '{person}' exactly once: the label that names "
                "the person, like ('memories', '{person}')."
            )
        for label in labels:
            if not isinstance(label, str) or not label or "." in label or "\x00" in label:
                raise ConfigurationError(
                    "Namespace labels are non-empty strings without '.' or NUL (LangGraph's "
                    "rule)."
                )
            if label == "*":
                raise ConfigurationError("A namespace template has no wildcard label.")
        if labels[0] == "langgraph":
            raise ConfigurationError("LangGraph reserves the root label 'langgraph'.")
        return labels, labels.index(PERSON)

    @staticmethod
    def _check_paths(paths: object, what: str) -> tuple[str, ...]:
        if isinstance(paths, str) or not isinstance(paths, Sequence):
            raise InvalidInputError(f"{what} is a list of JSON paths into the value.")
        checked = tuple(paths)
        if not all(isinstance(path, str) and path for path in checked):
            raise InvalidInputError(f"{what} is a list of JSON paths into the value.")
        return checked

    # -- handles --------------------------------------------------------------------------

    def _handle(self, person: str) -> ScopedMemory | PersonMemory:
        """The handle of ``person`` in the current tenant (made afresh for each batch)."""
        if self._as_person:
            return self._memory.person(person, session=self._session)
        assert self._agent is not None  # noqa: S101 - checked at construction
        return self._memory.acting_for(person, agent=self._agent, session=self._session)

    def _person_of(self, label: str) -> str:
        person = validate.person(label)
        if self._person is not None and person != self._person:
            raise ScopeError(_OTHER_PERSON)
        return person

    def _place(self, namespace: tuple[str, ...]) -> _Place | None:
        """Where ``namespace`` puts an item, or ``None`` if it does not fit the template."""
        template = self._template
        if len(namespace) < len(template) or any(
            label != want
            for label, want in zip(namespace, template, strict=False)
            if want != PERSON
        ):
            return None
        label = namespace[self._at]
        labels = tuple(None if at == self._at else one for at, one in enumerate(namespace))
        return _Place(self._person_of(label), label, labels)

    def _scope(self, prefix: Sequence[str], *, wildcards: bool = False) -> _Scope | None:
        """What a namespace prefix reads, or ``None`` when no item of this store lies under
        it. A prefix that stops before the person's label (or holds ``"*"`` there) reads the
        store's one person, and raises :class:`ScopeError` on a store for many."""
        label: str | None = None
        where: dict[str, Any] = {_MARKER: _MARKER_VALUE}
        where.update(  # the template's own labels: another template's items are not ours
            (f"{_NS}{at}", want) for at, want in enumerate(self._template) if at != self._at
        )
        for at, given in enumerate(prefix):
            want = self._template[at] if at < len(self._template) else None
            if wildcards and given == "*":
                continue
            if at == self._at:
                label = given
            elif want is not None and given != want:
                return None
            else:
                where[f"{_NS}{at}"] = given
        if label is None:
            if self._person is None:
                raise ScopeError(_NO_PERSON.format(template=self._template))
            return _Scope(self._person, self._person, where)
        return _Scope(self._person_of(label), label, where)

    # -- checking every operation first -----------------------------------------------------

    def _text(self, value: Mapping[str, Any], index: object) -> str:
        """The searchable text of ``value``: what ``index`` (or the store's ``fields``)
        names, else every string in it, else its JSON; cut at ``max_text_chars``."""
        if index is False:
            return _UNINDEXED
        paths = self._fields if index is None else self._check_paths(index, "index")
        if paths is None:
            parts = [part for part in _strings(value) if part.strip()]
            if not parts:
                parts = [json.dumps(value, ensure_ascii=False, sort_keys=True)]
        else:
            parts = [part for path in paths for part in get_text_at_path(value, path)]
        text = "\n".join(part for part in parts if part.strip())[: self._max_text]
        return text if text.strip() else _UNINDEXED

    def _metadata(self, value: object, place: _Place) -> dict[str, Any]:
        """The memory's metadata: the value whole, and the fields of its namespace."""
        if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
            raise InvalidInputError(
                "A store value is a JSON object: a dict with string keys. Nothing was changed."
            )
        if any(name.startswith("$") for name in value):
            raise InvalidInputError(_RESERVED)
        checked = check_metadata({**value, **place.fields()})
        assert checked is not None  # noqa: S101 - a dict is never None
        return checked

    @staticmethod
    def _filter(spec: object) -> dict[str, Any]:
        """LangGraph's ``filter`` as the handle's ``where``, checked."""
        if spec is None:
            return {}
        if not isinstance(spec, Mapping):
            raise InvalidInputError("filter is a dict of value field to a value or operators.")
        where: dict[str, Any] = {}
        for name, condition in spec.items():
            if not isinstance(name, str) or name.startswith("$"):
                raise InvalidInputError(
                    "filter names top-level value fields; names starting with '$' are the "
                    "store's own."
                )
            if isinstance(condition, Mapping) and not all(
                isinstance(operator, str) and operator.startswith("$") for operator in condition
            ):
                raise InvalidInputError(
                    "filter compares top-level value fields; a nested object is stored sealed "
                    "and not indexed, so it cannot be filtered on. Filter on a top-level field "
                    "(or move the nested field up)."
                )
            where[name] = condition
        compile_where([_identity], where)  # every rule of where=, checked before any call
        return where

    def _plan(self, op: object) -> _Plan:
        if isinstance(op, GetOp):
            validate_op_namespace(op)
            if not isinstance(op.key, str):
                raise InvalidInputError("An item's key is a string.")
            place = self._place(tuple(op.namespace))
            return _Nothing(empty_list=False) if place is None else _Get(place, place.key(op.key))
        if isinstance(op, PutOp):
            validate_op_namespace(op)
            return self._plan_put(op)
        if isinstance(op, SearchOp):
            validate_op_namespace(op)
            return self._plan_search(op)
        if isinstance(op, ListNamespacesOp):
            validate_op_namespace(op)
            return self._plan_listing(op)
        raise InvalidInputError(
            "A store operation is a GetOp, PutOp, SearchOp or ListNamespacesOp."
        )

    def _plan_put(self, op: PutOp) -> _Put:
        namespace = tuple(op.namespace)
        if not isinstance(op.key, str):
            raise InvalidInputError("An item's key is a string.")
        if op.ttl is not None:
            raise MemoryCapabilityError(
                "ttl",
                "MemoryStore keeps no time-to-live (supports_ttl is False): a memory lives "
                "until it is forgotten or its labels' retention ends. Put without ttl.",
            )
        place = self._place(namespace)
        if place is None:
            raise InvalidInputError(
                f"This store keeps namespaces of the form {self._template} followed by any "
                "labels of the graph's; this one does not fit. Nothing was changed."
            )
        caller_key = place.key(op.key)
        if op.value is None:
            return _Put(place, caller_key, None, None)
        metadata = self._metadata(op.value, place)
        text = validate.text(self._text(op.value, op.index), self._max_text)
        return _Put(place, caller_key, text, metadata)

    def _plan_search(self, op: SearchOp) -> _Search | _Nothing:
        limit = _count(op.limit, "limit", least=0)
        offset = _count(op.offset, "offset", least=0)
        where = self._filter(op.filter)
        query = op.query or None  # LangGraph's stores read an empty query as none
        if query is not None:
            if not isinstance(query, str):
                raise InvalidInputError("query is a string.")
            if offset + limit > validate.MAX_TOP_K:
                raise InvalidInputError(
                    f"A search with a query returns at most the best {validate.MAX_TOP_K} "
                    f"items: offset + limit is at most {validate.MAX_TOP_K}. Without a query, "
                    "any offset pages through the items."
                )
        scope = self._scope(tuple(op.namespace_prefix))
        if scope is None or limit == 0:
            return _Nothing(empty_list=True)
        scope.where.update(where)
        return _Search(scope, query, limit, offset)

    def _plan_listing(self, op: ListNamespacesOp) -> _Listing | _Nothing:
        limit = _count(op.limit, "limit", least=0)
        offset = _count(op.offset, "offset", least=0)
        max_depth = None if op.max_depth is None else _count(op.max_depth, "max_depth", least=1)
        conditions = tuple(op.match_conditions or ())
        if any(condition.match_type not in ("prefix", "suffix") for condition in conditions):
            raise InvalidInputError("A namespace match condition is 'prefix' or 'suffix'.")
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix"] or [()]
        scopes = [self._scope(path, wildcards=True) for path in prefixes]
        found = [scope for scope in scopes if scope is not None]
        if len(found) < len(scopes) or len({scope.person for scope in found}) > 1:
            return _Nothing(empty_list=True)  # outside the template, or two persons at once
        scope = found[0]
        for other in found[1:]:
            scope.where.update(other.where)
        return _Listing(scope, conditions, max_depth, limit, offset)

    # -- running ----------------------------------------------------------------------------

    def _item_of(
        self, record: MemoryRecord, label: str
    ) -> _Found | None:
        """The namespace (the person's label as ``label``), key and value of one of the
        store's memories, or ``None`` if the memory is not one."""
        metadata = record.metadata
        decoded = _decode_key(record.key)
        if decoded is None or metadata is None or metadata.get(_MARKER) != _MARKER_VALUE:
            return None
        labels, key = decoded
        if len(labels) < len(self._template) or any(
            (one is None) != (at == self._at) or (at != self._at and one != want)
            for at, (one, want) in enumerate(zip(labels, self._template, strict=False))
        ):
            return None  # another template's item (a store of another layout, same agent)
        namespace = tuple(label if one is None else one for one in labels)
        value = {name: one for name, one in metadata.items() if not name.startswith("$")}
        return namespace, key, value

    def _get(self, handle: ScopedMemory | PersonMemory, get: _Get) -> Item | None:
        try:
            record = handle.get(key=get.key)
        except MemoryNotFound:
            return None
        item = self._item_of(record, get.place.label)
        if item is None:
            return None  # a memory with this key the app wrote itself: not the store's
        namespace, key, value = item
        return Item(
            value=value,
            key=key,
            namespace=namespace,
            created_at=record.created_at,
            updated_at=record.recorded_at,
        )

    def _put(self, handle: ScopedMemory | PersonMemory, put: _Put) -> None:
        if put.text is None:
            try:
                held = handle.get(key=put.key)
            except MemoryNotFound:
                return  # nothing held: deleting it changes nothing, as in LangGraph
            # An agent's: a forget request; the person's: the erase, whose receipt the SDK keeps
            # in its log (memory.privacy.receipts()); LangGraph's delete returns nothing.
            handle.forget(held.id)  # memory-check: ignore[MAIN-MEM-0024] kept in the receipt log
            return
        handle.remember(put.text, key=put.key, metadata=put.metadata, kind=self._kind)

    @staticmethod
    def _found(record: MemoryRecord, item: _Found, score: float | None) -> SearchItem:
        namespace, key, value = item
        return SearchItem(
            namespace=namespace,
            key=key,
            value=value,
            created_at=record.created_at,
            updated_at=record.recorded_at,
            score=score,
        )

    def _search(self, handle: ScopedMemory | PersonMemory, search: _Search) -> list[SearchItem]:
        scope = search.scope
        found: list[SearchItem] = []
        if search.query is not None:
            hits = handle.recall(
                search.query,
                top_k=search.offset + search.limit,
                where=scope.where,
                ranking="relevance",
            )
            for hit in hits[search.offset :]:
                item = self._item_of(hit.record, scope.label)
                if item is not None:
                    found.append(self._found(hit.record, item, hit.score))
            return found
        skipped = 0
        for record in _listed(handle, scope.where):
            item = self._item_of(record, scope.label)
            if item is None:
                continue
            if skipped < search.offset:
                skipped += 1
                continue
            found.append(self._found(record, item, None))
            if len(found) == search.limit:
                break
        return found

    def _list(
        self, handle: ScopedMemory | PersonMemory, listing: _Listing
    ) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for record in _listed(handle, listing.scope.where):
            item = self._item_of(record, listing.scope.label)
            if item is not None and all(_matches(c, item[0]) for c in listing.conditions):
                namespaces.add(item[0])
        if listing.max_depth is not None:
            namespaces = {namespace[: listing.max_depth] for namespace in namespaces}
        return sorted(namespaces)[listing.offset : listing.offset + listing.limit]

    def _run(self, plans: list[_Plan]) -> list[Result]:
        handles: dict[str, ScopedMemory | PersonMemory] = {}

        def handle(person: str) -> ScopedMemory | PersonMemory:
            if person not in handles:
                handles[person] = self._handle(person)
            return handles[person]

        results: list[Result] = []
        for plan in plans:
            if isinstance(plan, _Get):
                results.append(self._get(handle(plan.place.person), plan))
            elif isinstance(plan, _Put):
                self._put(handle(plan.place.person), plan)
                results.append(None)
            elif isinstance(plan, _Search):
                results.append(self._search(handle(plan.scope.person), plan))
            elif isinstance(plan, _Listing):
                results.append(self._list(handle(plan.scope.person), plan))
            else:
                results.append([] if plan.empty_list else None)
        return results

    # -- BaseStore ----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, in the current tenant, each result at its op's position.

        Every op is checked first: a bad one raises before any of them changes anything.
        """
        tenant.current()  # NoTenantError first: a store call never runs without a tenant
        return self._run([self._plan(op) for op in ops])

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread, in the tenant current in the calling task."""
        checked = list(ops)
        return await _in_worker(lambda: self.batch(checked))


def _listed(
    handle: ScopedMemory | PersonMemory, where: Mapping[str, Any]
) -> Iterator[MemoryRecord]:
    """Every current memory the handle sees that meets ``where``, newest first."""
    cursor: str | None = None
    while True:
        page = handle.list(where=where, limit=_PAGE, cursor=cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def _in_worker(call: Callable[[], _T]) -> _T:
    """Run ``call`` in a worker thread inside the tenant current here, in the caller's task.

    :func:`asyncio.to_thread` runs it in a copy of this context, but a ``tenant.use(...)``
    block belongs to the frames that entered it (see :mod:`mainsdk_memory.tenant`), so the
    tenant read here is entered again in the worker.
    """
    tenant_id = tenant.current()

    def in_tenant() -> _T:
        with tenant.use(tenant_id):
            return call()

    return await asyncio.to_thread(in_tenant)

