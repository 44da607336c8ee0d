"""Import of a person's export: signed exports, checked whole, written back with their history.

:func:`sign_export` signs the document ``Privacy.export`` returns (format
``mainsdk-memory-export/2``): a compact JWS (EdDSA, the project signing key, ``kid`` header,
``typ`` ``memory-export+jwt``) whose claims hold the SHA-256 digest of the canonical JSON of the
rest of the document. :func:`import_export` checks a document whole — signature, format,
tenant, every memory — before it writes anything, then writes each memory with every version,
anchored in this key store and sealed under this store's keys, as ``remember`` would have
written it (ADR 0094). A receipt is final: a memory any receipt of this tenant and app names
(forget, erase, retention) is never imported again, and each version's trust is capped at
what its source earns, whatever the document says.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import itertools
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import jwt
from pydantic import BaseModel, ConfigDict, ValidationError

from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._caller import PERSON_AGENT, Caller, guardian_key, requests_prefix
from mainsdk_memory._errors import (
    ConsentRequiredError,
    DamagedMemoryError,
    ExportError,
    MemoryCapabilityError,
    ReceiptError,
)
from mainsdk_memory._progress import Progress, checked
from mainsdk_memory._records import (
    ForgetRequest,
    Formation,
    Kind,
    LinkKind,
    MemoryRecord,
    MemoryStatus,
    Revision,
    Source,
    Trust,
)
from mainsdk_memory._relations import add_links, relation_store
from mainsdk_memory._sealing import (
    Contents,
    Place,
    embedding_index,
    open_contents,
    seal,
    seal_vector,
    to_record,
)
from mainsdk_memory._signals import Held
from mainsdk_memory._tags import check_key, check_metadata
from mainsdk_memory._text import check_language
from mainsdk_memory.drivers import TRUST_RANK, StoredRow

if TYPE_CHECKING:
    from mainsdk_memory._services import Services

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_TYPE",
    "ImportReport",
    "export_memory",
    "import_export",
    "imports_prefix",
    "sign_export",
]

EXPORT_FORMAT = "mainsdk-memory-export/2"
#: The ``typ`` header of an export's signature (no receipt or bundle carries it).
EXPORT_TYPE = "memory-export+jwt"
_UNSIGNED_FORMAT = "mainsdk-memory-export/1"
_CLAIMS = ("iss", "jti", "iat", "format", "tenant", "app", "person", "sha256")


def imports_prefix(pseudonym: str) -> str:
    """The control-key prefix of the exports imported for one person (one record each)."""
    return f"import/{pseudonym}/"


class ImportReport(BaseModel):
    """What one :meth:`Privacy.import_export` did (ids and counts only)."""

    model_config = ConfigDict(frozen=True)

    export_id: str
    """The export's id (``id`` of the document, ``jti`` of its signature)."""
    person: str
    """The person the memories were imported for."""
    memory_ids: tuple[str, ...] = ()
    """The memories written, in the export's order (their ids are the export's)."""
    versions: int = 0
    """Versions written, over all those memories."""
    skipped: tuple[str, ...] = ()
    """Memories of the export already held here for the person (an earlier, perhaps
    interrupted, import of them): left as they are."""
    forgotten: tuple[str, ...] = ()
    """Memories of the export that a receipt of this tenant and app names (forgotten, erased,
    swept by retention here): a receipt is final, so they were not imported."""
    forget_requests: int = 0
    """Pending forget requests imported."""
    signals: int = 0
    """Memories whose ranking signals (uses, last use, feedback) were imported."""
    guardian_policy: bool = False
    """Whether the export's guardian policy was recorded here (the person had none)."""
    already_imported: bool = False
    """This export was imported for the person here before: nothing was written."""


# -- the export side -------------------------------------------------------------------------


def _canonical(document: object) -> bytes:
    """The canonical JSON of ``document``: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _digest(document: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``document`` without its signature."""
    return hashlib.sha256(
        _canonical({name: value for name, value in document.items() if name != "signature"})
    ).hexdigest()


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def export_memory(caller: Caller, rows: Sequence[StoredRow]) -> dict[str, Any]:
    """One memory of an export: its current state and every version (``rows``, oldest
    first), each with everything that was sealed with it, so an import writes it back."""
    opened = [open_contents(caller, row, versions=rows) for row in rows]
    records = [to_record(caller, row, contents) for row, contents in zip(rows, opened,
                                                                           strict=True)]
    current = records[-1]
    return {
        "id": current.id,
        "kind": current.kind.value,
        "about": current.scope.about,
        "owner_agent": current.scope.agent,
        "session": current.scope.session,
        "session_only": current.session_only,
        "pinned": current.pinned,
        "labels": list(current.labels),
        "created_at": current.created_at.isoformat(),
        "status": current.status,
        "derived_from": list(current.derived_from),
        "forked_from": current.forked_from,
        "key": current.key,
        "versions": [_export_version(v, c) for v, c in zip(records, opened, strict=True)],
    }


def _export_version(v: MemoryRecord, sealed: Contents) -> dict[str, Any]:
    return {
        "version": v.version,
        "text": v.text,
        "kind": v.kind.value,
        "data": sealed.data,
        "data_type": sealed.data_type if sealed.data is not None else None,
        "fact_key": list(sealed.fact_key),
        "source": v.source.model_dump(mode="json"),
        "trust": v.trust.value,
        "confirmed_by": v.confirmed_by,
        "author": v.author,
        "labels": list(v.labels),
        "language": v.language,
        "session_only": v.session_only,
        "valid_from": v.valid_from.isoformat(),
        "valid_to": _time(v.valid_to),
        "recorded_at": v.recorded_at.isoformat(),
        "formation": None if v.formation is None else v.formation.model_dump(mode="json"),
        "status": v.status,
        "revision": None if v.revision is None else v.revision.model_dump(mode="json"),
        "derived_from": list(v.derived_from),
        "forked_from": v.forked_from,
        "key": v.key,
        "metadata": v.metadata,
    }


def sign_export(services: Services, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with an ``id`` and its ``signature``: a compact JWS over the SHA-256 of
    the canonical JSON of everything else, with the format, tenant, app, person and id."""
    export_id = "exp_" + secrets.token_hex(12)
    signed = {**document, "id": export_id}
    claims = {
        "iss": _receipts.ISSUER,
        "jti": export_id,
        "iat": int(services.now().timestamp()),
        "format": signed["format"],
        "tenant": signed["tenant"],
        "app": signed["app"],
        "person": signed["person"],
        "sha256": _digest(signed),
    }
    key = services.keys.signing_key
    signed["signature"] = jwt.encode(
        claims, key.private, algorithm="EdDSA", headers={"kid": key.kid, "typ": EXPORT_TYPE}
    )
    return signed


def verify_export(document: object, public_key: object) -> dict[str, Any]:
    """The claims of ``document``'s signature, once it verifies against ``public_key`` and
    covers the document as it is; else :class:`ExportError`."""
    if not isinstance(document, Mapping):
        raise ExportError(
            "This is not an export (the JSON object memory.privacy.export returns); nothing "
            "was imported."
        )
    form = document.get("format")
    if form == _UNSIGNED_FORMAT:
        raise ExportError(
            "This export is of format mainsdk-memory-export/1, which is not signed, so "
            "nothing can tell it was not changed; nothing was imported. Export it again "
            "with this version."
        )
    if form != EXPORT_FORMAT:
        raise ExportError(
            "The export is of a format this version does not know; nothing was imported."
        )
    token = document.get("signature")
    if not isinstance(token, str) or token.count(".") != 2:
        raise ExportError("The export carries no signature; nothing was imported.")
    try:
        claims = _receipts.signed_claims(
            token, public_key, typ=EXPORT_TYPE, require=_CLAIMS, verify_iat=False
        )
    except _receipts.NotThisType as exc:
        raise ExportError("The export's signature is not an export signature.") from exc
    except ReceiptError as exc:
        raise ExportError(
            "The export's signature does not verify against the public key given (signed "
            "by another key store, or changed); nothing was imported. Give the public key of "
            "the store it came from (memory keys export-public --jwks)."
        ) from exc
    try:
        digest = _digest(document)
    except (TypeError, ValueError) as exc:
        raise ExportError("The export is not plain JSON; nothing was imported.") from exc
    signed = claims.get("sha256")
    if not isinstance(signed, str) or not hmac.compare_digest(signed, digest) or any(
        claims.get(name) != document.get(name) for name in ("format", "tenant", "app", "person")
    ) or claims.get("jti") != document.get("id"):
        raise ExportError(
            "The export was changed after it was signed; nothing was imported."
        )
    return claims


# -- the import side: checked whole first ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Memory:
    """One memory of an export, checked: everything needed to write it back."""

    memory_id: str
    agent: str
    session: str | None
    session_only: bool
    pinned: bool
    created_at: datetime
    versions: tuple[Contents, ...]


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(what)
    return value


def _optional_str(value: object, what: str) -> str | None:
    return None if value is None else _str(value, what)


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(what)
    return value


def _when(value: object, what: str) -> datetime:
    return validate.aware(datetime.fromisoformat(_str(value, what)), what)


def _agent(value: object) -> str:
    """An owner agent: a name, or a reserved ``@`` name (the person, the app)."""
    name = _str(value, "owner_agent")
    if name.startswith("@"):
        validate.name(name[1:], "owner_agent")
        return name
    return validate.name(name, "owner_agent")


def _status(value: object) -> MemoryStatus:
    if value == "active" or value == "disputed" or value == "retracted":
        return value
    raise ValueError("status")


def _earned(source: Source, trust: Trust, confirmed_by: str | None,
            person: str) -> tuple[Trust, str | None]:
    """The trust (and ``confirmed_by``) a version keeps: never above what its source earns,
    whatever the document claims. A tool, MCP, web or import source stays ``untrusted`` (and
    quarantined: the person confirms it again here); ``confirmed`` only when ``confirmed_by``
    names the export's person; else at most ``inferred``."""
    if source.trust is Trust.UNTRUSTED:
        cap = Trust.UNTRUSTED
    elif confirmed_by == person:
        cap = Trust.CONFIRMED
    else:
        cap = Trust.INFERRED
    kept = cap if TRUST_RANK[trust] > TRUST_RANK[cap] else trust
    return kept, confirmed_by if kept is Trust.CONFIRMED else None


def _version(
    item: object, number: int, memory: Mapping[str, Any], max_chars: int, person: str
) -> Contents:
    if not isinstance(item, Mapping) or item.get("version") != number:
        raise ValueError("version")
    data = item.get("data")
    if data is not None and not isinstance(data, dict):
        raise ValueError("data")
    key = item.get("key")
    formation = item.get("formation")
    revision = item.get("revision")
    source = Source.model_validate(item["source"])
    trust, confirmed_by = _earned(
        source, Trust(item["trust"]),
        _optional_str(item.get("confirmed_by"), "confirmed_by"), person,
    )
    return Contents(
        text=validate.text(item["text"], max_chars),
        kind=Kind(item.get("kind", memory["kind"])),
        labels=validate.labels(item["labels"]),
        source=source,
        trust=trust,
        agent=_agent(memory["owner_agent"]),
        author=_str(item["author"], "author"),
        confirmed_by=confirmed_by,
        data=data,
        data_type=_optional_str(item.get("data_type"), "data_type") if data is not None else None,
        session=_optional_str(memory.get("session"), "session"),
        session_token=None,  # this store's token is made when it is written
        session_only=_bool(item.get("session_only", memory["session_only"]), "session_only"),
        valid_from=_when(item["valid_from"], "valid_from"),
        recorded_at=_when(item["recorded_at"], "recorded_at"),
        language=check_language(item.get("language", "english")),
        formation=None if formation is None else Formation.model_validate(formation),
        status=_status(item.get("status", "active")),
        revision=None if revision is None else Revision.model_validate(revision),
        derived_from=tuple(_str(one, "derived_from") for one in item.get("derived_from") or ()),
        fact_key=tuple(_str(one, "fact_key") for one in item.get("fact_key") or ()),
        forked_from=_optional_str(item.get("forked_from"), "forked_from"),
        key=None if key is None else check_key(key),
        metadata=check_metadata(item.get("metadata")),
    )


def _memory(item: object, person: str, max_chars: int) -> _Memory:
    if not isinstance(item, Mapping):
        raise ValueError("memory")
    memory_id = _str(item["id"], "id")
    if not validate.MEMORY_ID.fullmatch(memory_id) or item.get("about") != person:
        raise ValueError("id")
    listed = item["versions"]
    if not isinstance(listed, list) or not listed:
        raise ValueError("versions")
    versions = tuple(
        _version(one, number, item, max_chars, person)
        for number, one in enumerate(listed, start=1)
    )
    for before, after in itertools.pairwise(versions):
        if before.closed or after.valid_from < before.valid_from:
            raise ValueError("order")  # only a last version is written closed
    return _Memory(
        memory_id=memory_id,
        agent=_agent(item["owner_agent"]),
        session=_optional_str(item.get("session"), "session"),
        session_only=_bool(item["session_only"], "session_only"),
        pinned=_bool(item["pinned"], "pinned"),
        created_at=_when(item["created_at"], "created_at"),
        versions=versions,
    )


def _memories(document: Mapping[str, Any], person: str, max_chars: int) -> list[_Memory]:
    listed = document.get("memories")
    if not isinstance(listed, list):
        raise ExportError("The export holds no list of memories; nothing was imported.")
    found = []
    for number, item in enumerate(listed, start=1):
        try:
            found.append(_memory(item, person, max_chars))
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            # InvalidInputError is a ValueError: a text too long for this store lands here.
            raise ExportError(
                f"Memory {number} of the export is malformed or does not fit this store "
                "(its text length, labels or fields); nothing was imported."
            ) from exc
    ids = [memory.memory_id for memory in found]
    if len(set(ids)) != len(ids):
        raise ExportError("The export names a memory twice; nothing was imported.")
    return found


def _guardian(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    consent = value.get("consent") if isinstance(value, Mapping) else None
    if (
        not isinstance(value, Mapping)
        or not isinstance(value.get("guardian"), str)
        or not (consent is None or isinstance(consent, Mapping))
    ):
        raise ExportError("The export's guardian policy is malformed; nothing was imported.")
    return {"guardian": value["guardian"], "consent": None if consent is None else dict(consent)}


def _requests(value: object, ids: set[str]) -> list[ForgetRequest]:
    if not isinstance(value, list):
        raise ExportError("The export's forget requests are malformed; nothing was imported.")
    try:
        requests = [ForgetRequest.model_validate(one) for one in value]
    except ValidationError as exc:
        raise ExportError(
            "The export's forget requests are malformed; nothing was imported."
        ) from exc
    return [request for request in requests if request.memory_id in ids]


def _signals(value: object) -> dict[str, Held]:
    if not isinstance(value, list):
        raise ExportError("The export's signals are malformed; nothing was imported.")
    found: dict[str, Held] = {}
    try:
        for one in value:
            uses, feedback, last = one["uses"], one["feedback"], one.get("last_use")
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in (uses, feedback)):
                raise ValueError("signals")
            when = None if last is None else _when(last, "last_use")
            found[_str(one["id"], "id")] = Held(uses, None if when is None else _micros(when),
                                                feedback)
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportError("The export's signals are malformed; nothing was imported.") from exc
    return found


def _micros(when: datetime) -> int:
    """Microseconds since the epoch (UTC), as the signals document keeps a time."""
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


# -- the import side: writing ------------------------------------------------------------------


def _rows(
    caller: Caller, memory: _Memory, place: Callable[[int], Place], child: bool
) -> tuple[list[StoredRow], list[Contents]]:
    """Every version of ``memory`` sealed for this store, each closed at its successor's
    start (a retraction at its own)."""
    token = caller.session_token()
    contents = [dataclasses.replace(one, session_token=token) for one in memory.versions]
    if child:  # the person is a child here: every version carries the policy label
        contents = [
            dataclasses.replace(one, labels=tuple(dict.fromkeys((*one.labels,
                                                                 validate.CHILD_LABEL))))
            for one in contents
        ]
    rows = [seal(caller, one, place(number)) for number, one in enumerate(contents, start=1)]
    rows = [
        dataclasses.replace(row, valid_to=contents[number + 1].valid_from)
        if number + 1 < len(rows) else row
        for number, row in enumerate(rows)
    ]
    return rows, contents


def _held_here(
    services: Services, tenant_id: str, pseudonym: str, person_subject: str, memory: _Memory
) -> tuple[str, int]:
    """Whether ``memory``'s id is free here (``"new"``), held for this person by an earlier
    import of it (``"held"``, with how many versions the store holds), anchored for them with
    no row (``"anchored"``: an import interrupted before its rows), or another memory's
    (``"taken"``)."""
    anchor = services.keys.anchors.memory(services.anchor_scope(tenant_id), memory.memory_id)
    if anchor is None:
        return "new", 0
    if anchor.subject != person_subject:
        return "taken", 0
    try:
        rows = services.store.versions(tenant_id, services.app, (pseudonym,), memory.memory_id)
    except DamagedMemoryError:
        return "taken", 0  # a damaged memory here is not the import's to replace
    if not rows:
        return "anchored", 0
    first = memory.versions[0]
    same = (
        rows[0].version == 1
        and rows[0].created_at == memory.created_at
        and rows[0].recorded_at == first.recorded_at
    )
    return ("held", len(rows)) if same else ("taken", 0)


def _receipted(services: Services, tenant_id: str) -> frozenset[str]:
    """Every memory id a receipt of this tenant and app names — forgotten (with the insights
    derived from it), erased with its person, swept by retention — read once."""
    found: set[str] = set()
    for _, document in services.control.list(tenant_id, "receipt/"):
        claims = document.get("claims")
        if not isinstance(claims, Mapping):
            continue
        named: list[object] = [claims.get("memory_id")]
        for field in ("memory_ids", "derived_ids"):
            listed = claims.get(field)
            if isinstance(listed, list):
                named.extend(listed)
        versions = claims.get("version_ids")
        if isinstance(versions, list):
            named.extend(
                one.rpartition(".v")[0] for one in versions if isinstance(one, str)
            )
        found.update(one for one in named if isinstance(one, str) and one)
    return frozenset(found)


def import_export(
    services: Services,
    document: object,
    *,
    public_key: object | None = None,
    person: str | None = None,
    progress: Progress | None = None,
    actor: str = "app",
) -> ImportReport:
    """Import a signed export for ``person`` (default: the export's) in the current tenant
    and this app; see :meth:`Privacy.import_export` (docs/privacy.md). ``actor`` is the
    audit event's (``person`` when the person's own token asked, over HTTP)."""
    progress = checked(progress)
    tenant_id = _tenant.current()
    target = None if person is None else validate.person(person)
    with services.audit.call(tenant_id, "import", actor=actor, person=target) as note:
        claims = verify_export(
            document, services.keys.export_public_jwks() if public_key is None else public_key
        )
        assert isinstance(document, Mapping)  # noqa: S101 - verify_export checked it
        if document["tenant"] != tenant_id:
            raise ExportError(
                "The export comes from another tenant; memory never moves between tenants. "
                "Nothing was imported."
            )
        source_person = _str(document["person"], "person")
        target = source_person if target is None else target
        note.person = target
        caller = Caller(services, tenant_id, target, PERSON_AGENT, None)
        pseudonym = caller.pseudonym()
        export_id = str(claims["jti"])
        memories = _memories(document, source_person, services.settings.max_text_chars)
        ids = {memory.memory_id for memory in memories}
        requests = _requests(document.get("pending_forget_requests", []), ids)
        signals = _signals(document.get("signals", []))
        exported_policy = _guardian(document.get("guardian_policy"))
        marker = imports_prefix(pseudonym) + export_id
        if services.control.get(tenant_id, marker) is not None:
            note.outcome = "already-imported"
            if progress is not None:
                progress(len(memories), len(memories))
            return ImportReport(
                export_id=export_id, person=target, already_imported=True,
                skipped=tuple(memory.memory_id for memory in memories),
            )
        # Everything this store must accept, checked before the first write.
        allowed = services.settings.labels
        if allowed is not None and any(
            not set(version.labels) <= allowed
            for memory in memories for version in memory.versions
        ):
            raise ExportError(
                f"This store holds only the labels {sorted(allowed)}, and the export has "
                "others; nothing was imported."
            )
        if not services.store.capabilities.tags and any(
            version.key is not None for memory in memories for version in memory.versions
        ):
            raise MemoryCapabilityError(
                "tags",
                "The export holds memories with a caller key, which needs a store that "
                "keeps blinded tags (Capabilities.tags); nothing was imported.",
            )
        # A receipt is final: what one names here is never written again.
        receipted = _receipted(services, tenant_id)
        forgotten = [m.memory_id for m in memories if m.memory_id in receipted]
        person_subject = services.anchor_subject(tenant_id, target)
        states = {
            memory.memory_id: _held_here(services, tenant_id, pseudonym, person_subject, memory)
            for memory in memories
            if memory.memory_id not in receipted
        }
        taken = [memory_id for memory_id, (state, _) in states.items() if state == "taken"]
        if taken:
            raise ExportError(
                f"{len(taken)} memories of the export have ids held here by other memories "
                f"({', '.join(taken[:5])}{', …' if len(taken) > 5 else ''}); nothing was "
                "imported."
            )
        here_policy = caller.guardian_policy()
        policy = here_policy if here_policy is not None else exported_policy
        to_write = [
            m for m in memories
            if m.memory_id in states and states[m.memory_id] != ("held", len(m.versions))
        ]
        if policy is not None and policy.get("consent") is None and to_write:
            raise ConsentRequiredError
        # Writes from here on; a run interrupted now is finished by running it again.
        imported_policy = here_policy is None and exported_policy is not None
        if imported_policy:
            services.control.put(tenant_id, guardian_key(pseudonym), exported_policy)
        child = policy is not None
        written: list[str] = []
        skipped: list[str] = []
        versions = 0
        for done, memory in enumerate(memories, start=1):
            state, held = states.get(memory.memory_id, ("forgotten", 0))
            if state == "forgotten":
                pass  # named by a receipt: neither written nor skipped
            elif state == "held" and held >= len(memory.versions):
                skipped.append(memory.memory_id)
            else:
                versions += _write(services, tenant_id, target, memory, state, held, child)
                written.append(memory.memory_id)
            if progress is not None:
                progress(done, len(memories))
        if progress is not None and not memories:
            progress(0, 0)
        _link(services, tenant_id, target, memories, set(written))
        imported_requests = _write_requests(services, tenant_id, caller, requests, set(written))
        imported_signals = _write_signals(services, tenant_id, caller, signals, set(written))
        services.control.put(
            tenant_id, marker, {"at": services.now().isoformat(), "memories": len(written)}
        )
        note.memory_ids.extend(written)
        note.count = len(written)
        note.extra.append(("export", export_id))
        if forgotten:
            note.extra.append(("forgotten", str(len(forgotten))))
        return ImportReport(
            export_id=export_id,
            person=target,
            memory_ids=tuple(written),
            versions=versions,
            skipped=tuple(skipped),
            forgotten=tuple(forgotten),
            forget_requests=imported_requests,
            signals=imported_signals,
            guardian_policy=imported_policy,
        )


def _write(
    services: Services,
    tenant_id: str,
    person: str,
    memory: _Memory,
    state: str,
    held: int,
    child: bool,
) -> int:
    """Write ``memory`` (the versions after the ``held`` ones the store has); returns how
    many versions were written."""
    caller = Caller(services, tenant_id, person, memory.agent, memory.session)
    anchors, scope = services.keys.anchors, services.anchor_scope(tenant_id)
    if state == "anchored":
        anchors.drop(scope, memory.memory_id)  # an import interrupted before its rows
    first = memory.versions[0]
    if state in ("new", "anchored"):
        salt = anchors.anchor(
            scope,
            memory.memory_id,
            services.anchor_subject(tenant_id, person),
            caller.pseudonym(),
            agent=memory.agent,
            pinned=memory.pinned,
            created_at=memory.created_at,
            labels=tuple(dict.fromkeys((*first.labels, *((validate.CHILD_LABEL,)
                                                         if child else ())))),
        )
    else:
        anchor = anchors.memory(scope, memory.memory_id)
        assert anchor is not None  # noqa: S101 - _held_here found it
        salt = anchor.salt

    def place(number: int) -> Place:
        return Place(memory.memory_id, number, person, memory.pinned, memory.created_at, salt)

    child_memory = child or any(validate.CHILD_LABEL in v.labels for v in memory.versions)
    rows, contents = _rows(caller, memory, place, child_memory)
    last = rows[-1]
    # Each version's embedding, as it got one when it was written (a retraction, written
    # closed, never did); none for a child, or without an embedder.
    index = embedding_index(caller, child=child_memory)
    embedded = {} if index is None else {
        row.version: index.embed(one.text)
        for row, one in zip(rows[held:], contents[held:], strict=True)
        if not one.closed
    }
    vectors = {
        (row.memory_id, row.version): sealed
        for row in rows[held:]
        if row.version in embedded
        and (sealed := seal_vector(caller, row, place(row.version), contents[row.version - 1].text,
                                   child=child_memory, vector=embedded[row.version]))
        is not None
    }
    bulk: Any = getattr(services.driver, "bulk_put", None)
    try:
        if held == 0 and callable(bulk):  # every version at once: all or nothing
            bulk(rows, vectors=vectors)
        else:
            for row in rows[held:]:  # version by version, each closing the one before
                services.store.put(
                    row if row is last else dataclasses.replace(row, valid_to=None),
                    closes=None if row.version == 1 else row.version - 1,
                    vector=vectors.get((row.memory_id, row.version)),
                )
    except BaseException:
        if held == 0:
            anchors.drop(scope, memory.memory_id)  # nothing of it was stored
        raise
    if len(rows) > 1:
        anchors.advance(scope, memory.memory_id, last.version, last.labels)
    if index is not None and last.version in embedded and last.valid_to is None:
        index.wrote(last.tenant, last.app, last.subject, last.memory_id, last.version,
                    embedded[last.version])
    return len(rows) - held


def _link(
    services: Services, tenant_id: str, person: str, memories: Sequence[_Memory],
    written: set[str],
) -> None:
    """The ``derived_from`` links of the insights written, to sources the export holds (so
    forgetting a source here forgets the insight too); nothing without ``relations``."""
    caller = Caller(services, tenant_id, person, PERSON_AGENT, None)
    if relation_store(caller) is None:
        return
    ids = {memory.memory_id for memory in memories}
    pseudonym = caller.pseudonym()
    kind: LinkKind = "derived_from"
    links: list[tuple[str, str, str, LinkKind, float | None]] = [
        (memory.memory_id, source, pseudonym, kind, None)
        for memory in memories
        if memory.memory_id in written
        for source in memory.versions[-1].derived_from
        if source in ids
    ]
    if links:
        add_links(caller, links, subjects={}, now=services.now())


def _write_requests(
    services: Services, tenant_id: str, caller: Caller, requests: Sequence[ForgetRequest],
    written: set[str],
) -> int:
    """The pending forget requests of the memories written that are still current, now the
    person's here (they approve or reject them as if made here)."""
    prefix = requests_prefix(caller.pseudonym())
    count = 0
    for request in requests:
        if request.memory_id not in written:
            continue
        key = prefix + request.id
        if services.control.get(tenant_id, key) is not None:
            continue
        moved = request.model_copy(update={"person": caller.person})
        services.control.put(tenant_id, key, moved.model_dump(mode="json"))
        count += 1
    return count


def _write_signals(
    services: Services, tenant_id: str, caller: Caller, signals: Mapping[str, Held],
    written: set[str],
) -> int:
    """The ranking signals of the memories written (an entry held here already is kept)."""
    chosen = {memory_id: held for memory_id, held in signals.items() if memory_id in written}
    if not chosen:
        return 0
    keys = services.subject_keys(tenant_id, caller.person, create=True)
    assert keys is not None  # noqa: S101 - create=True always returns keys

    def add(entries: dict[str, Held]) -> bool:
        fresh = {memory_id: held for memory_id, held in chosen.items()
                 if memory_id not in entries}
        entries.update(fresh)
        return bool(fresh)

    # The book's one read-change-write step (under its lock, across processes).
    services.signals._change(
        tenant_id, caller.pseudonym(), keys, services.now(), add
    )
    return len(chosen)
