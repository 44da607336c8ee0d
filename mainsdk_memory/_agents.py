"""What the app set for each agent (grant, kill switch, limits) and the writes it has made.

The records are sealed control records under ``agent/<name>/``, so one read fetches all of
an agent's; the write rate is counted in a sliding minute in the key store's anchors, which
every process shares (ADR 0047).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from mainsdk_memory._control import ControlStore
from mainsdk_memory._errors import LimitExceededError
from mainsdk_memory._records import AgentLimits

__all__ = ["AgentControl", "ReadPolicy", "agent_key"]

ReadPolicy = Literal["own", "all"]
"""What an agent reads: ``"own"`` (only what it wrote) or ``"all"`` (every agent's)."""


def agent_key(agent: str, record: str) -> str:
    """The control key of one of an agent's records (``grant``, ``kill``, ``limits``)."""
    return f"agent/{agent}/{record}"


class AgentControl:
    """Reads an agent's records and counts its writes."""

    def __init__(
        self,
        control: ControlStore,
        defaults: AgentLimits,
        now: Callable[[], datetime],
        count: Callable[[str, str, int, datetime], bool],
    ) -> None:
        self._control = control
        self._defaults = defaults
        self._now = now
        self._count = count

    def records(self, tenant_id: str, agent: str) -> dict[str, dict[str, Any]]:
        """The agent's stored ``grant``, ``kill`` and ``limits`` records, in one read."""
        prefix = agent_key(agent, "")
        return {key[len(prefix) :]: doc for key, doc in self._control.list(tenant_id, prefix)}

    def put(self, tenant_id: str, agent: str, record: str, document: dict[str, Any] | None) -> None:
        """Store (``None``: remove) one of the agent's records."""
        self._control.put(tenant_id, agent_key(agent, record), document)

    @staticmethod
    def read_policy(records: dict[str, dict[str, Any]]) -> ReadPolicy:
        """The read policy in an agent's ``records``."""
        return "all" if records.get("grant", {}).get("read") == "all" else "own"

    def limits(self, records: dict[str, dict[str, Any]]) -> AgentLimits:
        """The limits in an agent's ``records``, else the store's defaults."""
        stored = records.get("limits")
        return self._defaults if stored is None else AgentLimits.model_validate(stored)

    def count_write(self, tenant_id: str, agent: str, per_minute: int | None) -> None:
        """Refuse a write over the agent's rate; otherwise count it (a sliding minute, counted
        in the key store's anchors, so every process and instance shares one count)."""
        if per_minute is None:
            return
        if not self._count(tenant_id, agent, per_minute, self._now()):
            raise LimitExceededError(
                f"The agent reached its limit of {per_minute} writes per minute; nothing "
                "was stored. Wait, or raise the limit with memory.set_limits(...)."
            )
