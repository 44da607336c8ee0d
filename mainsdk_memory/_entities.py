"""Entities of a person's memories: canonical names and aliases, sealed, found by blinded alias.

Each memory is linked (``mentions``, with a weight) to the entities its text names
(:mod:`mainsdk_memory._mentions` finds them, with no model). An entity lives in the scope of
one subject (a person, or the tenant's shared memory) as two kinds of control record, both
sealed under that subject's key and padded::

    entity/<subject>/<ent_…>        its canonical name, type and aliases
    alias/<subject>/<blind token>   the entity an alias names: the token is the blinded
                                    alias key, so a name is resolved in one read and the
                                    driver never sees it

A name resolves to an entity when its alias key is one (``"Tom Becker's"`` and ``"tom
becker"``) or when it is the first or last name of a known person (``"Tom"``), whichever came
first. An entity that no memory mentions any more is deleted, with its aliases: forgetting
the last memory that named someone leaves no trace of the name.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import InvalidInputError, SealError
from mainsdk_memory._mentions import Mention, alias_key, mentions, same_entity
from mainsdk_memory._records import Entity, EntityType, LinkKind, MemoryRecord
from mainsdk_memory._relations import relation_store, stored_links
from mainsdk_memory.drivers import TENANT_SUBJECT
from mainsdk_memory.keys import SubjectKeys, associated_data

__all__ = [
    "ENTITY_PREFIX",
    "drop_unmentioned",
    "entities_of",
    "erase_entities",
    "mention_links",
    "mentioned",
    "resolve",
]

ENTITY_PREFIX: Final = "entity/"
ALIAS_PREFIX: Final = "alias/"
#: At most this many entities are linked from one memory (the weightiest).
MAX_MENTIONS: Final = 8
#: At most this many aliases an entity keeps.
MAX_ALIASES: Final = 16
_ENTITY_ID: Final = "ent_"


def _keys(caller: Caller, row_subject: str, *, create: bool) -> SubjectKeys | None:
    subject = TENANT_SUBJECT if row_subject == TENANT_SUBJECT else caller.person
    return caller.services.subject_keys(caller.tenant, subject, create=create)


def _ad(caller: Caller, key: str) -> bytes:
    return associated_data("entity", caller.tenant, caller.app, key)


def _seal(caller: Caller, keys: SubjectKeys, key: str, document: dict[str, Any]) -> bytes:
    from mainsdk_memory._sealing import pad  # _sealing imports the caller's services

    plain = pad(json.dumps(document, ensure_ascii=False).encode("utf-8"))
    return keys.seal(plain, _ad(caller, key))


def _open(caller: Caller, keys: SubjectKeys, key: str, sealed: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(keys.open(sealed, _ad(caller, key)))
    except (SealError, ValueError, UnicodeError):
        return None  # swapped, edited, or sealed under a destroyed key: not an entity
    return cast(dict[str, Any], document) if isinstance(document, dict) else None


def _alias_record(caller: Caller, keys: SubjectKeys, row_subject: str, name: str) -> str:
    return f"{ALIAS_PREFIX}{row_subject}/{keys.blind(chr(0) + 'alias:' + alias_key(name))}"


def _entity_record(row_subject: str, entity_id: str) -> str:
    return f"{ENTITY_PREFIX}{row_subject}/{entity_id}"


def _read_entity(
    caller: Caller, keys: SubjectKeys, row_subject: str, entity_id: str
) -> dict[str, Any] | None:
    key = _entity_record(row_subject, entity_id)
    sealed = caller.services.driver.control_get(caller.tenant, caller.app, key)
    return None if sealed is None else _open(caller, keys, key, sealed)


def _put(caller: Caller, keys: SubjectKeys, key: str, document: dict[str, Any] | None) -> None:
    value = None if document is None else _seal(caller, keys, key, document)
    caller.services.driver.control_put(caller.tenant, caller.app, key, value)


def _lookup(caller: Caller, keys: SubjectKeys, row_subject: str, name: str) -> str | None:
    key = _alias_record(caller, keys, row_subject, name)
    sealed = caller.services.driver.control_get(caller.tenant, caller.app, key)
    if sealed is None:
        return None
    document = _open(caller, keys, key, sealed)
    found = None if document is None else document.get("id")
    return found if isinstance(found, str) and found.startswith(_ENTITY_ID) else None


def _personal_name(found: Mention) -> bool:
    """Whether ``found`` may be a person's full name, whose first and last words name it."""
    return found.type in ("person", "other") and 2 <= len(found.name.split()) <= 4


def _resolve_or_add(
    caller: Caller, keys: SubjectKeys, row_subject: str, found: Mention
) -> str:
    """The entity ``found`` names, created (or given this alias) when needed; an entity
    first seen untyped takes the first type a later text gives it."""
    entity_id = _lookup(caller, keys, row_subject, found.name)
    if entity_id is not None:
        document = _read_entity(caller, keys, row_subject, entity_id)
        if document is None:
            return entity_id
        known = {alias_key(str(alias)) for alias in document.get("aliases", [])}
        if alias_key(found.name) not in known:
            # "Tom" for Tom Becker: the form this text says joins the aliases, so a caller
            # who only ever read "Tom" sees the entity by that name.
            _add_alias(caller, keys, row_subject, entity_id, document, found)
        elif found.type != "other" and document.get("type") == "other":
            document["type"] = found.type
            _put(caller, keys, _entity_record(row_subject, entity_id), document)
        return entity_id
    tokens = found.name.split()
    if _personal_name(found):
        # "Tom Becker" after "Tom": the same person, now with a surname.
        for token in (tokens[0], tokens[-1]):
            entity_id = _lookup(caller, keys, row_subject, token)
            if entity_id is None:
                continue
            document = _read_entity(caller, keys, row_subject, entity_id)
            if document is not None and same_entity(found.name, str(document["name"])):
                _add_alias(caller, keys, row_subject, entity_id, document, found)
                return entity_id
    entity_id = _ENTITY_ID + secrets.token_hex(12)
    document = {"name": found.name, "type": found.type, "aliases": [found.name]}
    _put(caller, keys, _entity_record(row_subject, entity_id), document)
    names = [found.name]
    if _personal_name(found):
        names += [tokens[0], tokens[-1]]  # "Tom" and "Becker" name Tom Becker from now on
    for name in names:
        alias = _alias_record(caller, keys, row_subject, name)
        if caller.services.driver.control_get(caller.tenant, caller.app, alias) is None:
            _put(caller, keys, alias, {"id": entity_id})
    return entity_id


def _add_alias(
    caller: Caller,
    keys: SubjectKeys,
    row_subject: str,
    entity_id: str,
    document: dict[str, Any],
    found: Mention,
) -> None:
    name = found.name
    aliases = [str(alias) for alias in document.get("aliases", [])]
    if alias_key(name) not in {alias_key(alias) for alias in aliases}:
        aliases = [*aliases, name][-MAX_ALIASES:]
    canonical = str(document["name"])
    if len(name) > len(canonical) and same_entity(name, canonical):
        canonical = name  # the fuller name is the canonical one
    kind = document.get("type", "other")
    updated = {
        **document,
        "name": canonical,
        "aliases": aliases,
        "type": found.type if kind == "other" else kind,
    }
    _put(caller, keys, _entity_record(row_subject, entity_id), updated)
    _put(caller, keys, _alias_record(caller, keys, row_subject, name), {"id": entity_id})


LinkSpec = tuple[str, str, str, LinkKind, float | None]
"""A link to store: source, target, the source's row subject, kind, weight."""


def mention_links(caller: Caller, record: MemoryRecord, row_subject: str) -> list[LinkSpec]:
    """The ``mentions`` links of ``record`` to the entities its text names (each entity
    resolved, or created with its aliases); the caller stores them with its other links."""
    if relation_store(caller) is None:
        return []
    found = mentions(record.text, record.language)[:MAX_MENTIONS]
    if not found:
        return []
    keys = _keys(caller, row_subject, create=True)
    assert keys is not None  # noqa: S101 - create=True always returns keys
    with caller.services.keys.anchors.control_lock(exclusive=True):
        weights: dict[str, float] = {}
        for one in found:
            entity_id = _resolve_or_add(caller, keys, row_subject, one)
            weights[entity_id] = max(weights.get(entity_id, 0.0), one.weight)
    return [
        (record.id, entity_id, row_subject, "mentions", round(weight, 3))
        for entity_id, weight in weights.items()
    ]


def mentioned(caller: Caller, memory_id: str) -> list[str]:
    """The entities ``memory_id`` is linked to."""
    return sorted(
        {link.target for link, kind in stored_links(caller, [memory_id])
         if kind == "mentions" and link.source == memory_id}
    )


def drop_unmentioned(caller: Caller, row_subject: str, entity_ids: Iterable[str]) -> list[str]:
    """Delete each of ``entity_ids`` no memory mentions any more, with its aliases; their
    ids (a forget calls this after its erase: the name goes with the last memory of it)."""
    keys = _keys(caller, row_subject, create=False)
    wanted = sorted(set(entity_ids))
    if keys is None or not wanted:
        return []
    still = {link.target for link, kind in stored_links(caller, wanted) if kind == "mentions"}
    dropped: list[str] = []
    with caller.services.keys.anchors.control_lock(exclusive=True):
        for entity_id in wanted:
            if entity_id in still:
                continue
            document = _read_entity(caller, keys, row_subject, entity_id)
            if document is not None:
                names = [str(alias) for alias in document.get("aliases", [])]
                names.append(str(document.get("name", "")))
                for name in names:
                    tokens = name.split()
                    for one in {name, *(tokens[:1] + tokens[-1:])}:
                        alias = _alias_record(caller, keys, row_subject, one)
                        if _lookup(caller, keys, row_subject, one) == entity_id:
                            _put(caller, keys, alias, None)
            _put(caller, keys, _entity_record(row_subject, entity_id), None)
            dropped.append(entity_id)
    return dropped


def erase_entities(caller: Caller, row_subject: str) -> None:
    """Delete every entity and alias record of ``row_subject`` (a person's erase)."""
    for prefix in (ENTITY_PREFIX, ALIAS_PREFIX):
        for key, _ in caller.control_records(f"{prefix}{row_subject}/"):
            caller.services.driver.control_put(caller.tenant, caller.app, key, None)




def entities_of(
    caller: Caller, row_subjects: Sequence[str], texts: Mapping[str, str]
) -> list[Entity]:
    """The entities of ``row_subjects`` that the memories in ``texts`` (id → the text the
    caller may read) mention, with how many of them mention each. An entity's record holds
    every alias any memory gave it, seen by the caller or not: only the aliases these texts
    say are shown, the longest as the name, so no other agent's, session's or quarantined
    memory's words reach this caller."""
    out: list[Entity] = []
    for row_subject in row_subjects:
        keys = _keys(caller, row_subject, create=False)
        if keys is None:
            continue
        prefix = f"{ENTITY_PREFIX}{row_subject}/"
        found: dict[str, dict[str, Any]] = {}
        for key, sealed in caller.control_records(prefix):
            document = _open(caller, keys, key, sealed)
            if document is not None:
                found[key[len(prefix):]] = document
        mentioning: dict[str, set[str]] = {}
        for link, kind in stored_links(caller, sorted(found)):
            if kind == "mentions" and link.source in texts:
                mentioning.setdefault(link.target, set()).add(link.source)
        for entity_id, document in sorted(found.items()):
            sources = mentioning.get(entity_id)
            if not sources:
                continue
            said = " ".join(f" {alias_key(texts[one])} " for one in sources)
            names = [str(document.get("name", "")), *map(str, document.get("aliases", []))]
            shown = [
                name for name in dict.fromkeys(names) if name and f" {alias_key(name)} " in said
            ]
            if not shown:
                continue
            out.append(
                Entity(
                    id=entity_id,
                    name=max(shown, key=len),
                    type=cast(EntityType, document.get("type", "other")),
                    aliases=tuple(shown),
                    memories=len(sources),
                )
            )
    out.sort(key=lambda entity: (-entity.memories, entity.name.casefold(), entity.id))
    return out


def resolve(caller: Caller, name: object) -> list[str]:
    """The entity ids ``name`` (a name, an alias, or an ``ent_…`` id) stands for in the
    caller's scopes (the person's and the tenant's)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidInputError("entity is a name or an entity id (ent_…), up to 200 characters.")
    if name.startswith(_ENTITY_ID):
        return [name]
    ids: list[str] = []
    for row_subject in (caller.pseudonym(), TENANT_SUBJECT):
        keys = _keys(caller, row_subject, create=False)
        if keys is None:
            continue
        found = _lookup(caller, keys, row_subject, name)
        if found is not None:
            ids.append(found)
    return ids
