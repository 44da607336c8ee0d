"""Privacy operations: erase a person provably, export, children, the receipts log, procedures.

``memory.privacy`` is a :class:`Privacy` bound to one :class:`~mainsdk_memory.Memory`; every
call works in the current tenant and app and emits one audit event.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import jwt

from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._caller import PERSON_AGENT, Caller, guardian_key, requests_prefix
from mainsdk_memory._entities import entities_of, erase_entities
from mainsdk_memory._episodes import erase_episodes, export_episodes
from mainsdk_memory._errors import BundleError, DamagedMemoryError, InvalidInputError, ReceiptError
from mainsdk_memory._importing import (
    EXPORT_FORMAT,
    ImportReport,
    export_memory,
    import_export,
    imports_prefix,
    sign_export,
)
from mainsdk_memory._progress import Held, Progress, checked
from mainsdk_memory._records import MemoryRecord, Source
from mainsdk_memory._relations import relation_store
from mainsdk_memory._scoped import ScopedMemory
from mainsdk_memory._sealing import open_record
from mainsdk_memory._signals import export_signals
from mainsdk_memory._working import erase_working, export_working
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow

if TYPE_CHECKING:
    from mainsdk_memory._services import Services

__all__ = ["EXPORT_FORMAT", "Privacy"]

BUNDLE_FORMAT = "mainsdk-memory-procedures/1"
BUNDLE_TYPE = "memory-procedures+jwt"
_PAGE = 200


class Privacy:
    """Erase, export, children and procedures for one memory store (``memory.privacy``)."""

    def __init__(self, services: Services) -> None:
        self._services = services

    # -- helpers --------------------------------------------------------------------------

    def _person(self, person_id: str) -> tuple[str, Caller]:
        tenant_id = _tenant.current()
        person = validate.person(person_id)
        return tenant_id, Caller(self._services, tenant_id, person, PERSON_AGENT, None)

    def _rows_of(self, tenant_id: str, subject: str) -> Iterable[StoredRow]:
        """Every current row of ``subject``: all agents, sessions, expired or not."""
        where = Filter(
            tenant=tenant_id, app=self._services.app, subjects=(subject,), any_session=True
        )
        after: tuple[datetime, str] | None = None
        while True:
            rows = self._services.store.list(where, limit=_PAGE, after=after)
            yield from rows
            if len(rows) < _PAGE:
                return
            after = (rows[-1].created_at, rows[-1].memory_id)

    def _closed_memories(self, tenant_id: str, pseudonym: str, listed: set[str]) -> list[str]:
        """Ids of ``pseudonym``'s anchored memories that a listing of current rows does not
        show (retracted or merged away: every version closed), minus ``listed``."""
        services = self._services
        anchored = services.keys.anchors.memories(services.anchor_scope(tenant_id))
        closed = []
        for row_subject, memory_id in anchored:
            if row_subject != pseudonym or memory_id in listed:
                continue
            try:
                if services.store.versions(tenant_id, services.app, (pseudonym,), memory_id):
                    closed.append(memory_id)
            except DamagedMemoryError:
                continue  # listed by the driver's damaged() instead
        return closed

    def _to_erase(self, tenant_id: str, pseudonyms: Sequence[str]) -> int:
        """How many memories an erase of ``pseudonyms`` finds, counted before it starts: the
        current rows listed, the anchored memories (closed ones too) and the damaged ones."""
        services = self._services
        anchored = services.keys.anchors.memories(services.anchor_scope(tenant_id))
        found = {(subject, memory_id) for subject, memory_id in anchored if subject in pseudonyms}
        for pseudonym in pseudonyms:
            found.update((pseudonym, row.memory_id) for row in self._rows_of(tenant_id, pseudonym))
            found.update(
                (pseudonym, memory_id)
                for memory_id in services.store.damaged(tenant_id, services.app, pseudonym)
            )
        return len(found)

    # -- erase ----------------------------------------------------------------------------

    def erase(self, person_id: str, *, progress: Progress | None = None) -> _receipts.Receipt:
        """Erase everything about ``person_id`` here, then destroy their keys; one receipt.

        Every memory about the person (every version and index entry, every agent, every
        session) with every link to or from it, their pending forget requests, guardian
        policy, ranking signals (uses, feedback), the entities their memories named, every
        agent's working memory about them and their episodic ledger are removed through the
        driver, which confirms each erase (the receipt counts the working-memory values and
        ledger entries: ``working_memory``, ``episodes``); then the
        person's secret (sealing and index keys) is destroyed in the key store, so any copy
        of the store — a backup included — can no longer be opened or searched for them, by
        this process or any other that had read the key (ADR 0039). The person gets a fresh
        pseudonym: if they come back, their new memories cannot be linked to the rows of an
        old backup. Safe to run again: an interrupted erase finishes, and an erase with
        nothing left returns a receipt that says so.

        ``progress(done, total)`` is called after each memory erased: ``total`` is counted
        before the erase starts (it grows if a write lands meanwhile) and the last call has
        ``done == total == len(receipt.memory_ids)``. If the callback raises, it is not
        called again and the erase runs to its end — keys destroyed, receipt issued and kept
        in :meth:`receipts` — before its exception is raised.
        """
        progress = checked(progress)
        tenant_id, person = self._person(person_id)
        services = self._services
        with services.audit.call(tenant_id, "erase", actor="app", person=person.person) as note:
            tenant_keys = services.subject_keys(tenant_id, TENANT_SUBJECT, create=True)
            assert tenant_keys is not None  # noqa: S101 - create=True always returns keys
            # Their pseudonym now, and the tenant-key one of their life before a first erase
            # (the same until then): rows of a restored backup of that life are swept too.
            pseudonyms = tuple(
                dict.fromkeys((person.pseudonym(), tenant_keys.pseudonym(person.person)))
            )
            memory_ids: list[str] = []
            version_ids: list[str] = []
            modes = {"hard"}
            total = self._to_erase(tenant_id, pseudonyms) if progress is not None else 0
            shown = (-1, -1)
            told = Held(progress)  # an exception of the callback waits for the receipt

            def report(*, last: bool = False) -> None:
                nonlocal total, shown
                done = len(memory_ids)
                total = done if last else max(total, done)
                if progress is not None and shown != (done, total):
                    shown = (done, total)
                    told(done, total)

            def erase_rows() -> None:
                for pseudonym in pseudonyms:
                    while batch := list(self._rows_of(tenant_id, pseudonym)):
                        for row in batch:
                            result = services.store.erase(
                                tenant_id, services.app, pseudonym, row.memory_id
                            )
                            memory_ids.append(row.memory_id)
                            version_ids.extend(f"{row.memory_id}.v{v}" for v in result.versions)
                            modes.add(result.mode)
                            report()
                    # Memories the driver cannot decode, and memories with no current
                    # version (retracted, merged away), are never listed: erased by id.
                    unlisted = [
                        *services.store.damaged(tenant_id, services.app, pseudonym),
                        *self._closed_memories(tenant_id, pseudonym, set(memory_ids)),
                    ]
                    for memory_id in unlisted:
                        result = services.store.erase(
                            tenant_id, services.app, pseudonym, memory_id
                        )
                        memory_ids.append(memory_id)
                        version_ids.extend(f"{memory_id}.v{v}" for v in result.versions)
                        modes.add(result.mode)
                        report()

            working: set[str] = set()
            episodes: set[str] = set()

            def erase_records() -> None:
                for pseudonym in pseudonyms:
                    working.update(erase_working(person, pseudonym))
                    episodes.update(erase_episodes(person, pseudonym))

            erase_rows()
            erase_records()
            for pseudonym in pseudonyms:
                if services.vectors is not None:
                    services.vectors.drop_subject(tenant_id, services.app, pseudonym)
                for key, _ in services.control.list(tenant_id, requests_prefix(pseudonym)):
                    services.control.put(tenant_id, key, None)
                for key, _ in services.control.list(tenant_id, imports_prefix(pseudonym)):
                    services.control.put(tenant_id, key, None)  # which exports came in
                services.control.put(tenant_id, guardian_key(pseudonym), None)
                erase_entities(person, pseudonym)  # the names their memories mentioned
            services.signals.delete(tenant_id, pseudonyms)  # their uses and feedback
            # From here no handle, in any process, seals or opens with the destroyed secret,
            # and the person is named by a fresh pseudonym.
            destroyed = services.destroy_person_keys(tenant_id, person.person)
            erase_rows()  # a write in flight elsewhere may have landed before its key went
            erase_records()
            services.signals.delete(tenant_id, pseudonyms)  # and a use counted meanwhile
            report(last=True)
            note.memory_ids.extend(memory_ids)
            note.count = len(memory_ids)
            receipt = services.issue_receipt(
                tenant_id,
                {
                    "op": "erase",
                    "tenant": tenant_id,
                    "app": services.app,
                    "about": person.person,
                    "memory_ids": memory_ids,
                    "version_ids": version_ids,
                    "key": "destroyed" if destroyed else "absent",
                    "working_memory": len(working),
                    "episodes": len(episodes),
                    "driver": services.driver.name,
                    "erase": "soft" if "soft" in modes else "hard",
                    "copies": "unopenable",
                },
            )
        told.raise_pending()  # the receipt is in the receipts log (privacy.receipts())
        return receipt

    # -- export ---------------------------------------------------------------------------

    def export(self, person_id: str, *, progress: Progress | None = None) -> dict[str, Any]:
        """Everything held about ``person_id`` here, every version, as a JSON-ready document.

        Format ``mainsdk-memory-export/2`` (see docs/privacy.md), signed (``id``,
        ``signature``: :meth:`import_export` refuses a changed one): the person, tenant and app,
        each memory (retracted ones too) with every version's text, typed data, source, trust,
        author, dates, formation and status, and the pending forget requests, guardian
        policy, the ranking signals of their memories (uses, last use, feedback), the
        entities their memories name (names, aliases, types), every agent's working memory
        about them (``working_memory``) and their episodic ledger (``episodes``). Audited
        (ids only). ``progress(done, total)`` is called after each memory exported (once,
        with ``(0, 0)``, when there is none).
        """
        progress = checked(progress)
        tenant_id, person = self._person(person_id)
        services = self._services
        with services.audit.call(tenant_id, "export", actor="app", person=person.person) as note:
            pseudonym = person.pseudonym()
            memories: list[dict[str, Any]] = []
            listed = [current.memory_id for current in self._rows_of(tenant_id, pseudonym)]
            closed = self._closed_memories(tenant_id, pseudonym, set(listed))
            to_export = [*listed, *closed]
            for memory_id in to_export:
                rows = services.store.versions(tenant_id, services.app, (pseudonym,), memory_id)
                memories.append(export_memory(person, rows))
                note.memory_ids.append(memory_id)
                if progress is not None:
                    progress(len(memories), len(to_export))
            if progress is not None and not to_export:
                progress(0, 0)
            note.count = len(memories)
            requests = [
                document
                for _, document in services.control.list(tenant_id, requests_prefix(pseudonym))
            ]
            return sign_export(services, {
                "format": EXPORT_FORMAT,
                "exported_at": services.now().isoformat(),
                "tenant": tenant_id,
                "app": services.app,
                "person": person.person,
                "memories": memories,
                "pending_forget_requests": requests,
                "guardian_policy": person.guardian_policy(),
                "signals": export_signals(
                    person, pseudonym, [memory["id"] for memory in memories]
                ),
                "entities": [
                    entity.model_dump(mode="json")
                    for entity in entities_of(
                        person,
                        (pseudonym,),
                        {
                            memory["id"]: " ".join(v["text"] for v in memory["versions"])
                            for memory in memories
                        },
                    )
                ] if relation_store(person) is not None else [],
                "working_memory": export_working(person),
                "episodes": export_episodes(person),
            })

    # -- import ---------------------------------------------------------------------------

    def import_export(
        self,
        document: dict[str, Any],
        *,
        public_key: object | None = None,
        person: str | None = None,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import a person's export (from :meth:`export`, in another app or store of this
        tenant) as their memory here, every version and its trust kept.

        The signature is checked against ``public_key`` (default: this project's own key
        set; PEM, a JWK Set as ``memory keys export-public --jwks`` prints it, or a key);
        a changed document, one signed by another key, of another format or another tenant
        is refused whole (:class:`ExportError`) and nothing is written. ``person`` imports
        it for another person id (default: the export's). Memories keep their ids, history,
        trust and quarantine — trust capped at what each version's source earns (a tool,
        MCP, web or import source stays ``untrusted``); pending forget requests, the guardian
        policy (if the person has none here) and ranking signals come too; entities, working
        memory and episodes do not. A receipt is final: a memory that any receipt of this
        tenant and app names (forgotten, erased, swept) is not imported (``forgotten``); the
        rest is. A second import of the same export writes nothing (``already_imported``);
        an id held here by another memory refuses the import. ``progress(done, total)``
        after each memory. Audited (ids only). See docs/privacy.md.
        """
        return import_export(
            self._services, document, public_key=public_key, person=person, progress=progress
        )

    # -- children -------------------------------------------------------------------------

    def set_guardian(self, person_id: str, *, guardian: str) -> None:
        """Mark ``person_id`` as a child under ``guardian``'s policy.

        From now on nothing is remembered about them before the guardian's consent is
        recorded, their memories are kept at most 90 days, and no provider model (embedder,
        model classifier) touches them.
        """
        tenant_id, person = self._person(person_id)
        guardian = validate.person(guardian)
        control = self._services.control
        with self._services.audit.call(tenant_id, "guardian", actor="app", person=person.person):
            key = guardian_key(person.pseudonym())
            existing = control.get(tenant_id, key) or {}
            control.put(
                tenant_id, key, {"guardian": guardian, "consent": existing.get("consent")}
            )

    def record_consent(self, person_id: str, *, guardian: str) -> None:
        """Record the guardian's consent for a child; only their guardian can give it."""
        tenant_id, person = self._person(person_id)
        guardian = validate.person(guardian)
        services = self._services
        with services.audit.call(tenant_id, "consent", actor="app", person=person.person):
            key = guardian_key(person.pseudonym())
            policy = services.control.get(tenant_id, key)
            if policy is None:
                raise InvalidInputError(
                    "This person has no guardian policy; set one with set_guardian(...) first."
                )
            if policy["guardian"] != guardian:
                raise InvalidInputError("Only the person's recorded guardian can consent.")
            policy["consent"] = {"by": guardian, "at": services.now().isoformat()}
            services.control.put(tenant_id, key, policy)

    def guardian_policy(self, person_id: str) -> dict[str, Any] | None:
        """The person's guardian policy (``guardian``, ``consent``), or ``None``."""
        _, person = self._person(person_id)
        return person.guardian_policy()

    # -- the receipts log -----------------------------------------------------------------

    def receipts(self) -> list[_receipts.Receipt]:
        """Every receipt issued in this tenant and app, oldest first (append-only log)."""
        tenant_id = _tenant.current()
        return [
            _receipts.Receipt(token=document["token"], claims=document["claims"])
            for _, document in self._services.control.list(tenant_id, "receipt/")
        ]

    # -- procedures between apps ----------------------------------------------------------

    def export_procedures(self, ids: Sequence[str] | None = None) -> str:
        """A signed bundle of this tenant's shared procedures labelled ``none``.

        With ``ids``, exactly those memories, and any that is not a shared procedure labelled
        only ``none`` refuses the whole export (:class:`BundleError`); without, every such
        procedure. The bundle is a compact JWS signed with the project key.
        """
        tenant_id = _tenant.current()
        services = self._services
        with services.audit.call(tenant_id, "export-procedures", actor="app") as note:
            viewer = Caller(services, tenant_id, "@procedures", PERSON_AGENT, None)
            rows = {row.memory_id: row for row in self._rows_of(tenant_id, TENANT_SUBJECT)}
            if ids is None:
                chosen = [r for r in rows.values() if _is_procedure(r.kind, r.labels)]
            else:
                if isinstance(ids, str):
                    raise InvalidInputError("ids is a list of memory ids.")
                missing = [i for i in ids if i not in rows]
                chosen = [rows[i] for i in ids if i in rows]
                if missing or not all(_is_procedure(r.kind, r.labels) for r in chosen):
                    raise BundleError(
                        "Only shared procedures labelled 'none' can leave an app; the export "
                        "was refused whole."
                    )
            records = [open_record(viewer, row) for row in chosen]
            note.memory_ids.extend(record.id for record in records)
            note.count = len(records)
            claims = {
                "iss": _receipts.ISSUER,
                "jti": "bndl_" + secrets.token_hex(12),
                "iat": int(services.now().timestamp()),
                "format": BUNDLE_FORMAT,
                "tenant": tenant_id,
                "app": services.app,
                "items": [
                    {"text": r.text, "kind": r.kind.value, "labels": list(r.labels)}
                    for r in records
                ],
            }
            key = services.keys.signing_key
            return jwt.encode(
                claims, key.private, algorithm="EdDSA", headers={"kid": key.kid, "typ": BUNDLE_TYPE}
            )

    def import_procedures(
        self, bundle: str, *, agent: str, public_key: object | None = None
    ) -> list[MemoryRecord]:
        """Import a procedures bundle as shared memory of this app, owned by ``agent``.

        The signature is checked against ``public_key`` (default: this project's own key
        set); a bundle from another tenant, or holding anything but procedures labelled
        ``none``, is refused whole. Imported memories are ``untrusted`` and quarantined until
        the app confirms them (``Memory.confirm_shared``, ADR 0045).
        """
        tenant_id = _tenant.current()
        services = self._services
        agent = validate.name(agent, "agent")
        with services.audit.call(tenant_id, "import-procedures", actor="app") as note:
            claims = _verify_bundle(bundle, public_key or services.keys.export_public_jwks())
            if claims.get("tenant") != tenant_id:
                raise BundleError("The bundle comes from another tenant; memory never moves there.")
            items = claims.get("items")
            if not isinstance(items, list) or not all(
                isinstance(item, dict)
                and isinstance(item.get("text"), str)
                and _is_procedure(item.get("kind"), tuple(item.get("labels") or ()))
                for item in items
            ):
                raise BundleError
            importer = ScopedMemory(Caller(services, tenant_id, "@procedures", agent, None))
            source = Source.import_(f"bundle:{claims['jti']}", ref=str(claims.get("app")))
            imported = [
                importer.remember(
                    item["text"],
                    kind="procedure",
                    about=TENANT_SUBJECT,
                    labels=["none"],
                    source=source,
                )
                for item in items
            ]
            note.memory_ids.extend(record.id for record in imported)
            note.count = len(imported)
            return imported


def _is_procedure(kind: object, labels: Sequence[object]) -> bool:
    return kind == "procedure" and tuple(labels) == ("none",)


def _verify_bundle(bundle: object, public_key: object) -> dict[str, Any]:
    if not isinstance(bundle, str) or bundle.count(".") != 2:
        raise BundleError("This is not a procedures bundle (a compact JWS).")
    try:
        claims = _receipts.signed_claims(
            bundle, public_key, typ=BUNDLE_TYPE, require=("iss", "jti", "iat", "tenant", "items")
        )
    except _receipts.NotThisType as exc:
        raise BundleError("This token is not a procedures bundle.") from exc
    except ReceiptError as exc:
        raise BundleError(
            "The bundle's signature or claims do not verify; nothing was imported."
        ) from exc
    if claims.get("format") != BUNDLE_FORMAT:
        raise BundleError("The bundle is of a format this version does not know.")
    return claims

