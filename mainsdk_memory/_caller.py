"""Who is calling: the tenant, person, agent and session of a handle, and the scope they see.

A :class:`Caller` is fixed when a handle is made. It checks that the current tenant is still
the handle's, turns the person into the pseudonym the driver stores, resolves the agent's
grant and kill switch, and builds the :class:`~mainsdk_memory.drivers.Filter` of every read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mainsdk_memory import tenant as _tenant
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._errors import (
    AgentDisabledError,
    ConsentRequiredError,
    ScopeError,
    TenantMismatchError,
)
from mainsdk_memory._services import Services
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow

__all__ = ["PERSON_AGENT", "Caller", "guardian_key", "requests_prefix"]

#: The agent name recorded when the person themself writes (no agent name can start with "@").
PERSON_AGENT = "@person"


def requests_prefix(pseudonym: str) -> str:
    """The control-key prefix of the pending forget requests about one person."""
    return f"forget/{pseudonym}/"


def guardian_key(pseudonym: str) -> str:
    """The control key of one person's guardian policy (they are a child)."""
    return f"child/{pseudonym}"


@dataclass(frozen=True, slots=True)
class Caller:
    """One handle's identity: ``agent`` is :data:`PERSON_AGENT` for the person themself."""

    services: Services
    tenant: str
    person: str
    agent: str
    session: str | None

    @property
    def is_person(self) -> bool:
        """Whether the person themself is calling (not an agent)."""
        return self.agent == PERSON_AGENT

    @property
    def actor(self) -> str:
        """The audit event's actor: ``person`` or ``agent:<name>``."""
        return "person" if self.is_person else f"agent:{self.agent}"

    @property
    def app(self) -> str:
        """The app of the store."""
        return self.services.app

    def tenant_id(self) -> str:
        """The handle's tenant, if it is still the current one."""
        if _tenant.current() != self.tenant:
            raise TenantMismatchError
        return self.tenant

    def pseudonym(self) -> str:
        """The keyed pseudonym the driver stores for the person: a fresh one after each erase,
        so a person who comes back is not linked to rows of before (ADR 0039)."""
        return self.services.pseudonym_keys(self.tenant, self.person).pseudonym(self.person)

    def subject_of(self, row: StoredRow) -> str:
        """The subject of ``row`` as the core names it: the person's id, or the tenant."""
        return TENANT_SUBJECT if row.subject == TENANT_SUBJECT else self.person

    def about(self, about: str | None) -> str:
        """The subject a write names: the person (default) or the tenant."""
        if about is None or about == self.person:
            return self.person
        if about == TENANT_SUBJECT:
            return TENANT_SUBJECT
        raise ScopeError(
            "A handle writes about the person it acts for, or about='tenant' for shared "
            "memory. Use memory.acting_for(<that person>) to write about someone else."
        )

    def agent_records(self) -> dict[str, dict[str, Any]]:
        """The calling agent's grant, kill and limits records (none for the person)."""
        return {} if self.is_person else self.services.agents.records(self.tenant, self.agent)

    def written_by(self, records: dict[str, dict[str, Any]] | None = None) -> str | None:
        """The ``written_by`` restriction of this caller; refuses a killed agent."""
        if self.is_person:
            return None
        if records is None:
            records = self.agent_records()
        if "kill" in records:
            raise AgentDisabledError
        return None if self.services.agents.read_policy(records) == "all" else self.agent

    def session_token(self) -> str | None:
        """The session a row stores and a filter names: a keyed token of the person, the agent
        and the session's name, so the same name opened by another person or another agent is
        another session, and the driver never sees the name (ADR 0045)."""
        if self.session is None:
            return None
        keys = self.services.subject_keys(self.tenant, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        # Each part is JSON-quoted, so no name can shift the boundary between two parts.
        bound = json.dumps(["session", self.pseudonym(), self.agent, self.session])
        return "s_" + keys.blind(bound)

    def blinds(self) -> list[Callable[[str], str]]:
        """The blinding of the person's and the tenant's keys (the person's only once they
        hold memories): a read's terms and tags are blinded under both, since the index
        holds both."""
        services = self.services
        return [
            keys.blind
            for keys in (
                services.subject_keys(self.tenant, self.person, create=False),
                services.subject_keys(self.tenant, TENANT_SUBJECT, create=True),
            )
            if keys is not None
        ]

    def filter(
        self,
        *,
        kinds: frozenset[str] | None = None,
        as_of: datetime | None = None,
        pinned: bool | None = None,
    ) -> Filter:
        """What this caller may read: its person and the tenant, its session, its grant.

        The person's own handle sees their rows in every session; shared rows obey the
        session and quarantine rules for everyone (ADR 0045)."""
        return Filter(
            tenant=self.tenant,
            app=self.app,
            subjects=(self.pseudonym(), TENANT_SUBJECT),
            session=self.session_token(),
            kinds=kinds,
            as_of=as_of,
            pinned=pinned,
            written_by=self.written_by(),
            any_session=self.is_person,
            retention=self.services.retention_cutoffs(),
        )

    def own_filter(self) -> Filter:
        """Every current memory about the person this agent wrote, in any session."""
        return Filter(
            tenant=self.tenant,
            app=self.app,
            subjects=(self.pseudonym(),),
            written_by=self.agent,
            any_session=True,
        )

    def is_child(self) -> bool:
        """Whether the person has a guardian policy (no model may read their text)."""
        return self.guardian_policy() is not None

    def guardian_policy(self) -> dict[str, Any] | None:
        """The person's guardian policy, or ``None``."""
        return self.services.control.get(self.tenant, guardian_key(self.pseudonym()))

    def child_write(self) -> bool:
        """Whether the person is a child; refuses a child's write before the guardian's
        consent (every write: remember, learn, working memory, the ledger)."""
        policy = self.guardian_policy()
        if policy is None:
            return False
        if policy.get("consent") is None:
            raise ConsentRequiredError
        return True

    def audited(
        self, operation: str, memory_ids: Iterable[str] = ()
    ) -> AbstractContextManager[AuditNote]:
        """Resolve the tenant, then audit the call (ids and counts only)."""
        tenant_id = self.tenant_id()
        return self.services.audit.call(
            tenant_id, operation, actor=self.actor, person=self.person, memory_ids=memory_ids
        )

    def control_records(self, prefix: str) -> list[tuple[str, bytes]]:
        """The driver's control records under ``prefix``, kept to the prefix (a driver that
        ignores it must not hand one person's records to another's read or erase)."""
        found = self.services.driver.control_list(self.tenant, self.app, prefix)
        return [(key, value) for key, value in found if key.startswith(prefix)]
