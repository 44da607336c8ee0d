"""The exception tree of mainsdk-memory: one root, stable codes, messages that say what to do next.

Every error the SDK raises derives from :class:`MemorySDKError`. Each class carries a stable
``code`` that links to its section of ``docs/errors.md``, by the absolute URL :data:`DOCS`
(``memory explain CODE`` prints the section offline). No message ever contains memory content,
a query or a search term: only ids, names of parameters and what to do next.

::

    MemorySDKError
    ├── NoTenantError                 no tenant.use(...) around the call
    │   └── TenantMismatchError       a handle used under another tenant than it was made in
    ├── InvalidInputError             bad argument; nothing was changed (also a ValueError)
    │   ├── BundleError               a procedures bundle is refused (kind, label, signature)
    │   └── ExportError               a person's export is refused (signature, format, tenant)
    ├── ScopeError                    the call reaches outside the caller's scope
    │   ├── AgentDisabledError        the agent's kill switch is on
    │   ├── ConsentRequiredError      a child's guardian has not consented yet
    │   └── ModelNotAllowedError      no model reads a child's text
    ├── LimitExceededError            an agent's write rate, model call rate or memory count
    │                                 limit is reached
    ├── MemoryInjectionError          the injection check refused a write
    ├── MemoryNotFound                unknown id (another tenant's or person's id looks the same)
    │   └── RequestNotFound           no pending forget request with that id
    ├── MemoryConflictError           a concurrent revision won; reload and retry
    ├── MemoryCapabilityError         the driver does not declare what the call needs
    ├── SealError                     a sealed memory did not open (opaque on purpose)
    │   └── IntegrityError            the store was rolled back or edited under the key store
    ├── KeyStoreError                 the key store is missing, damaged or unusable
    ├── ReceiptError                  a receipt did not verify
    ├── ConfigurationError            a bad URL, an unknown driver, a wrong option
    │   ├── ErasePolicyError          MAIN-MEM-0020: a soft-erase driver for personal data
    │   └── ResidencyError            the tenant is placed in no region of a regions: store
    ├── StoreError                    the storage failed underneath (I/O, database)
    │   └── DamagedMemoryError        one memory's stored form cannot be decoded
    ├── AuditError                    the call ran, but its audit event was not recorded
    ├── ModelError                    the configured model failed or could not be reached
    └── TokenError                    a bearer token was refused (missing, expired, not ours)
"""

from __future__ import annotations

from typing import Literal

from mainsdk_memory._urls import docs_url

__all__ = [
    "AgentDisabledError",
    "AuditError",
    "BundleError",
    "ConfigurationError",
    "ConsentRequiredError",
    "DamagedMemoryError",
    "ErasePolicyError",
    "ExportError",
    "IntegrityError",
    "InvalidInputError",
    "KeyStoreError",
    "LimitExceededError",
    "MemoryCapabilityError",
    "MemoryConflictError",
    "MemoryInjectionError",
    "MemoryNotFound",
    "MemorySDKError",
    "ModelError",
    "ModelNotAllowedError",
    "NoTenantError",
    "ReceiptError",
    "RequestNotFound",
    "ResidencyError",
    "ScopeError",
    "SealError",
    "StoreError",
    "TenantMismatchError",
    "TokenError",
]

#: The published errors page; a message links to ``DOCS#<code in lower case>``.
DOCS = docs_url("errors.md")


class MemorySDKError(Exception):
    """Root of every error raised by mainsdk-memory."""

    code: str = "MAIN-MEM-E000"
    default_message: str = "mainsdk-memory failed."

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.message} [{self.code}; see {DOCS}#{self.code.lower()}]"


class NoTenantError(MemorySDKError):
    """A tenant-scoped call ran outside ``tenant.use(...)``."""

    code = "MAIN-MEM-E001"
    default_message = (
        "No tenant is set. Wrap the call in `with tenant.use(tenant_id):`; "
        "the tenant is never a parameter. Threads and executors do not inherit it: "
        "submit `tenant.bind(fn)` instead of `fn` to carry the current tenant."
    )


class TenantMismatchError(NoTenantError):
    """A scoped handle was used under a different tenant than the one it was made in."""

    code = "MAIN-MEM-E002"
    default_message = (
        "This handle was made under another tenant than the current one. "
        "Call memory.acting_for(...) again inside the tenant you mean to use."
    )


class InvalidInputError(MemorySDKError, ValueError):
    """An argument was rejected before anything was changed."""

    code = "MAIN-MEM-E010"
    default_message = "An argument was rejected; nothing was changed."


class BundleError(InvalidInputError):
    """A procedures bundle was refused: another kind or label, another tenant, a bad signature."""

    code = "MAIN-MEM-E015"
    default_message = (
        "The bundle was refused; nothing was imported. Bundles carry only procedures labelled "
        "'none' of this tenant, signed by a key you trust."
    )


class ScopeError(MemorySDKError):
    """The call would reach outside the scope of the handle (another person, another session)."""

    code = "MAIN-MEM-E011"
    default_message = "The call reaches outside this handle's scope; nothing was changed."


class AgentDisabledError(ScopeError):
    """The agent's kill switch is on: it can neither read nor write."""

    code = "MAIN-MEM-E012"
    default_message = (
        "This agent is disabled by its kill switch; it can neither read nor write. "
        "An administrator re-enables it with memory.revive(agent)."
    )


class ConsentRequiredError(ScopeError):
    """The person is a child under a guardian policy and no guardian consent is recorded."""

    code = "MAIN-MEM-E014"
    default_message = (
        "This person is a child: nothing is remembered before a guardian's consent is "
        "recorded with memory.privacy.record_consent(person, guardian=...)."
    )


class ModelNotAllowedError(ScopeError):
    """The person is a child under a guardian policy: no model ever reads their text."""

    code = "MAIN-MEM-E016"
    default_message = (
        "This person is a child: no model reads their text, so nothing was sent to the "
        "model. Use the model-free path instead (learn's default extractor)."
    )


class LimitExceededError(MemorySDKError):
    """An agent reached one of its limits (writes or model calls per minute, memories per
    person)."""

    code = "MAIN-MEM-E013"
    default_message = "The agent reached its limit; nothing was stored. Wait, or raise the limit."


class MemoryInjectionError(MemorySDKError):
    """The injection check flagged the text of a write; nothing was stored.

    ``rules`` names the rules that fired (ids only, never the text).
    """

    code = "MAIN-MEM-E090"
    default_message = "The injection check refused this text; nothing was stored."

    def __init__(self, rules: tuple[str, ...] = ()) -> None:
        self.rules = rules
        named = f" (rules: {', '.join(rules)})" if rules else ""
        super().__init__(
            f"The injection check refused this text{named}; nothing was stored. Memory holds "
            "facts about people, not instructions; see docs/security.md for the rules."
        )


class MemoryNotFound(MemorySDKError, LookupError):
    """No memory with that id exists in the caller's scope.

    Another tenant's or another person's id raises exactly this, with the same message,
    so an id reveals nothing about what exists elsewhere.
    """

    code = "MAIN-MEM-E020"
    default_message = (
        "No memory with that id in this scope. Check the id, the tenant and the person "
        "you act for; forgotten memories are gone for good."
    )


class RequestNotFound(MemoryNotFound):
    """No pending forget request with that id for this person."""

    code = "MAIN-MEM-E022"
    default_message = (
        "No pending forget request with that id for this person; it may have been approved "
        "or rejected already. List them with pending()."
    )


class MemoryConflictError(MemorySDKError):
    """Another writer revised the memory first."""

    code = "MAIN-MEM-E021"
    default_message = (
        "The memory was revised concurrently and this revision lost. "
        "Read it again with get() and retry the revision on the newest version."
    )


class MemoryCapabilityError(MemorySDKError):
    """The driver does not declare the capability the call needs."""

    code = "MAIN-MEM-E030"
    default_message = "The driver does not support this call."

    def __init__(self, capability: str, message: str | None = None) -> None:
        self.capability = capability
        super().__init__(
            message
            or f"The driver does not declare the capability {capability!r}. "
            "Open the memory with a driver that declares it (see memory.capabilities)."
        )


class SealError(MemorySDKError):
    """A sealed memory could not be opened.

    Opaque on purpose: it never says whether the key, the associated data or the
    ciphertext was wrong.
    """

    code = "MAIN-MEM-E040"
    default_message = (
        "A sealed memory could not be opened: its key is gone or it was moved or altered. "
        "Check that the key store matches this memory store."
    )


class IntegrityError(SealError):
    """The memory store disagrees with the key store's anchors (ADR 0047).

    Someone who can write the memory store rolled a memory back to an older version, edited
    its creation time or pinned flag, restored a forgotten memory, or deleted or replayed a
    control record (a grant, a kill switch, a guardian's policy). Nothing older is ever
    returned instead. ``memory_id`` names the memory (``None`` for a control record); an audit
    event records the refusal. Restore the store from a backup taken with the key store, or
    forget the memory.
    """

    code = "MAIN-MEM-E041"
    default_message = (
        "The memory store disagrees with the key store: it was rolled back or edited by "
        "someone who can write the store. Nothing was returned. Restore the store from a "
        "backup taken together with the key store, or forget the memory."
    )

    def __init__(self, memory_id: str | None = None, message: str | None = None) -> None:
        self.memory_id = memory_id
        if message is None and memory_id is not None:
            message = (
                f"Memory {memory_id} in the store disagrees with the key store: it was rolled "
                "back or edited by someone who can write the store, so it is not returned. "
                "Restore the store from a backup taken together with the key store, or "
                "forget the memory."
            )
        super().__init__(message)


class KeyStoreError(MemorySDKError):
    """The key store is missing, damaged or cannot seal and open."""

    code = "MAIN-MEM-E050"
    default_message = "The key store cannot be used."


class ReceiptError(MemorySDKError):
    """A forget receipt failed verification."""

    code = "MAIN-MEM-E060"
    default_message = (
        "The receipt did not verify: it was altered, or it was signed by another key. "
        "Ask the issuer for their public key (memory keys export-public)."
    )


class ConfigurationError(MemorySDKError):
    """A bad URL, an unknown driver scheme or a wrong option."""

    code = "MAIN-MEM-E070"
    default_message = "The configuration is not usable."


class ErasePolicyError(ConfigurationError):
    """Rule MAIN-MEM-0020: a driver that can only soft-delete may not hold personal data."""

    code = "MAIN-MEM-0020"
    default_message = (
        "MAIN-MEM-0020: this driver can only soft-delete, so it may not hold personal data. "
        "Use a hard-erase driver, or open the store with labels=['none'] so it only holds "
        "non-personal memory."
    )


class StoreError(MemorySDKError):
    """The storage underneath failed (I/O, database)."""

    code = "MAIN-MEM-E080"
    default_message = "The memory store failed; nothing was changed. Check the store and retry."


class AuditError(MemorySDKError):
    """The call ran to its end, but the audit sink failed to record its event.

    ``completed`` says whether the call itself succeeded (then its changes are kept: do not
    retry it, or it is done twice); ``memory_ids`` names what it touched (ids only);
    ``outcome`` is the outcome the event would have recorded. Repair the sink.
    """

    code = "MAIN-MEM-E100"
    default_message = (
        "The call ran, but the audit sink failed to record its event. If it succeeded its "
        "changes are kept: do not retry it. Repair the audit sink."
    )

    def __init__(
        self, operation: str, outcome: str, memory_ids: tuple[str, ...] = ()
    ) -> None:
        self.operation = operation
        self.outcome = outcome
        self.completed = outcome not in {"refused", "not-found", "conflict", "error"}
        self.memory_ids = memory_ids
        ids = f" (memory ids: {', '.join(memory_ids)})" if memory_ids else ""
        if self.completed:
            told = (
                f"The {operation} call succeeded{ids}, but the audit sink failed to record "
                "its event. Its changes are kept: do not retry it. Repair the audit sink."
            )
        else:
            told = (
                f"The {operation} call ended with {outcome!r}, and the audit sink also failed "
                "to record its event. Repair the audit sink."
            )
        super().__init__(told)


class DamagedMemoryError(StoreError):
    """One memory's stored form cannot be decoded; the other memories are not affected.

    ``memory_id`` names it (ids only). Restore it from a backup of the store, or forget it:
    the person's own ``forget`` and a person erase remove a damaged memory.
    """

    code = "MAIN-MEM-E081"
    default_message = (
        "A memory is damaged in the store and cannot be read; the others are not affected. "
        "Restore it from a backup, or forget it."
    )

    def __init__(self, memory_id: str, message: str | None = None) -> None:
        self.memory_id = memory_id
        super().__init__(message)


class ModelError(MemorySDKError):
    """The configured model failed, could not be reached, or gave no usable answer.

    ``reason`` says which, as a short code (``connection``, ``timeout``, ``status``,
    ``redirect``, ``too-large``, ``malformed``, ``raised``); ``status`` is the HTTP status of
    a ``status`` failure. Neither the message nor any attribute holds the prompt, the answer,
    the server's reply or the API key.
    """

    code = "MAIN-MEM-E110"
    default_message = (
        "The model failed or gave no usable answer; nothing was stored. Check the model's "
        "URL, key and server, and retry."
    )

    def __init__(
        self, message: str | None = None, *, reason: str = "malformed", status: int | None = None
    ) -> None:
        self.reason = reason
        self.status = status
        super().__init__(message)


class TokenError(MemorySDKError):
    """A bearer token was refused: missing, malformed, expired, wrongly signed, or not for us.

    ``reason`` says which, as a short code (``missing``, ``malformed``, ``algorithm``, ``key``,
    ``signature``, ``expired``, ``not-yet-valid``, ``issuer``, ``audience``, ``claims``,
    ``keys-unavailable``; ``invalid`` for any other). Neither the message nor any attribute
    holds the token or the value of a claim. An HTTP service answers it with ``401`` and
    ``WWW-Authenticate: Bearer``.
    """

    code = "MAIN-MEM-E120"
    default_message = (
        "The bearer token was refused; nothing was changed. Get a new token from the issuer "
        "and retry."
    )

    def __init__(self, message: str | None = None, *, reason: str = "invalid") -> None:
        self.reason = reason
        super().__init__(message)


class ExportError(InvalidInputError):
    """A person's export was refused by ``Privacy.import_export``: not an export, a format
    this version does not know, a signature that does not verify against the key given
    (tampered, or signed by another key store), another tenant's, a malformed memory, or ids
    already held here by other memories. Nothing was imported."""

    code = "MAIN-MEM-E130"
    default_message = (
        "The export was refused; nothing was imported. Import an unchanged export of this "
        "tenant, made by memory.privacy.export, with the public key of the store it came from."
    )


class BatchError(MemorySDKError):
    """``remember_many`` stopped at one item: ``index`` is its position in the items given
    (for what refuses a whole batch — the agent's cap, the store — the batch's first),
    ``error`` (also the ``__cause__``) the typed error met, and ``stored`` how many items
    from the start are stored — exactly ``items[:stored]``, nothing after (unless the message
    says the store failed again while undoing)."""

    code = "MAIN-MEM-E140"
    default_message = "A bulk write stopped; see the cause."

    def __init__(
        self,
        *,
        index: int,
        stored: int,
        error: MemorySDKError,
        reason: Literal["item", "batch", "links", "undo"] = "item",
    ) -> None:
        self.index = index
        self.stored = stored
        self.error = error
        self.reason = reason
        cause = f"({error.code}: {error.message})"
        held = f"items[:{stored}] are stored and nothing after them"
        message = {
            "item": f"Item {index} was refused {cause}; {held}. Call again with "
                    f"items[{stored}:] once item {index} is fixed or dropped.",
            "batch": f"The batch from item {index} was refused {cause}; {held}. Call again "
                     f"with items[{stored}:] once the cause is fixed.",
            "links": f"The links of item {index} (to the memory formation compared it with, "
                     f"to the entities it names) were not stored {cause}; {held}: the "
                     f"memories are held. Call again with items[{stored}:].",
            "undo": f"Item {index} was refused {cause}, and the store failed again while "
                    f"erasing the batch's later memories: items[:{stored}] are stored, and "
                    "some after them may be. List the person's memories before calling again.",
        }[reason]
        super().__init__(message)


class ResidencyError(ConfigurationError):
    """The tenant is placed in no region of a ``regions:`` store, so the call was refused
    before anything was read or written, in any region's store or key store.

    ``tenant`` names the tenant (an id, never content). Place it: add ``<tenant> = "<region>"``
    under ``[tenants]`` in the residency file (or return its region from the placement
    function), then retry.
    """

    code = "MAIN-MEM-E150"
    default_message = (
        "This tenant is placed in no region, so nothing was read or written. Add it under "
        "[tenants] in the residency file and retry."
    )

    def __init__(self, tenant: str | None = None, message: str | None = None) -> None:
        self.tenant = tenant
        if message is None and tenant is not None:
            message = (
                f"Tenant {tenant!r} is placed in no region of this store, so nothing was read "
                f"or written. Add `\"{tenant}\" = \"<region>\"` under [tenants] in the residency "
                "file (or return its region from the placement function) and retry."
            )
        super().__init__(message)
