"""Synthetic rows for the suite: random sealed bytes, hex blind terms, pseudonymous subjects.

The suite works below the keys layer, so it needs no key store: a driver cannot tell these
rows from real ones (random bytes look like ciphertext, random hex like HMAC tokens).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from mainsdk_memory.drivers import Filter, StoredRow

__all__ = ["Scope", "SyntheticRows"]

_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_KINDS = ("fact", "preference", "event", "procedure", "note", "insight")
#: Trust of rows by default. ``untrusted`` rows are quarantined to their session by the
#: protocol, so checks add them on purpose, with a session, where they test visibility.
_TRUST = ("confirmed", "inferred")
#: A start with a non-zero microsecond, so a driver that drops microseconds is caught.
_EPOCH = datetime(2026, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where rows live: one tenant, one app, one subject."""

    tenant: str
    app: str
    subject: str

    def where(self, **options: object) -> Filter:
        """A filter that reads exactly this scope (plus ``options`` for :class:`Filter`)."""
        return Filter(
            tenant=self.tenant,
            app=self.app,
            subjects=(self.subject,),
            **options,  # type: ignore[arg-type]
        )


class SyntheticRows:
    """Makes rows shaped like the core's, from a seeded random source (reproducible)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - test data, not secrets
        self._clock = _EPOCH

    def hex(self, chars: int) -> str:
        """``chars`` random lowercase hex digits."""
        return f"{self.rng.getrandbits(chars * 4):0{chars}x}"

    def tenant(self) -> str:
        """A new tenant name."""
        return f"tenant-{self.hex(8)}"

    def app(self) -> str:
        """A new app name."""
        return f"app-{self.hex(8)}"

    def subject(self) -> str:
        """A new person pseudonym, shaped like the core's (``p_`` and 32 hex digits)."""
        return f"p_{self.hex(32)}"

    def scope(self, *, tenant: str | None = None, app: str | None = None) -> Scope:
        """A new scope (new subject; new tenant and app unless given)."""
        return Scope(tenant or self.tenant(), app or self.app(), self.subject())

    def memory_id(self) -> str:
        """A new memory id, shaped like the core's (``mem_`` and 26 base32 letters)."""
        return "mem_" + "".join(self.rng.choice(_BASE32) for _ in range(26))

    def term(self) -> str:
        """A new blind-index token, shaped like the core's (32 hex digits)."""
        return self.hex(32)

    def sealed(self, size: int | None = None) -> bytes:
        """Random bytes standing in for a sealed blob (at least 64 bytes unless ``size``)."""
        return self.rng.randbytes(self.rng.randint(64, 400) if size is None else size)

    def moment(self) -> datetime:
        """A time later than every earlier one, with random microseconds."""
        self._clock += timedelta(
            seconds=self.rng.randint(1, 7200), microseconds=self.rng.randint(1, 999_999)
        )
        return self._clock

    def terms(self, count: int | None = None) -> dict[str, int]:
        """``count`` new distinct tokens, each with a count of 1 to 3."""
        n = self.rng.randint(1, 6) if count is None else count
        return {self.term(): self.rng.randint(1, 3) for _ in range(n)}

    def row(
        self,
        scope: Scope,
        *,
        terms: dict[str, int] | None = None,
        at: datetime | None = None,
        **fields: object,
    ) -> StoredRow:
        """Version 1 of a new memory in ``scope``; ``fields`` override any StoredRow field."""
        when = self.moment() if at is None else at
        chosen = self.terms() if terms is None else terms
        row = StoredRow(
            tenant=scope.tenant,
            app=scope.app,
            subject=scope.subject,
            memory_id=self.memory_id(),
            version=1,
            kind=self.rng.choice(_KINDS),
            labels=("personal",),
            trust=self.rng.choice(_TRUST),
            agent=f"agent-{self.hex(6)}",
            session=None,
            session_only=False,
            pinned=False,
            created_at=when,
            recorded_at=when,
            valid_from=when,
            valid_to=None,
            sealed=self.sealed(),
            terms=chosen,
            length=sum(chosen.values()),
        )
        return replace(row, **fields)  # type: ignore[arg-type]

    def revision(
        self, current: StoredRow, *, terms: dict[str, int] | None = None, **fields: object
    ) -> StoredRow:
        """The next version of ``current``: new sealed blob and terms, later valid_from."""
        when = self.moment()
        chosen = self.terms() if terms is None else terms
        row = replace(
            current,
            version=current.version + 1,
            recorded_at=when,
            valid_from=when,
            valid_to=None,
            sealed=self.sealed(),
            terms=chosen,
            length=sum(chosen.values()),
        )
        return replace(row, **fields)  # type: ignore[arg-type]
