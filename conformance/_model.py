"""The results of a conformance run: per check, per capability, and for the whole driver."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["CapabilityResult", "CheckFailed", "CheckResult", "Report", "Status"]


class Status(StrEnum):
    """The outcome of a check or of a capability."""

    PASSED = "passed"
    """Every check ran and the driver did what it declares."""
    FAILED = "failed"
    """The driver declares the capability and does not do it; the reason says how."""
    NOT_DECLARED = "not declared"
    """The driver does not declare the capability, so its checks were not run."""


class CheckFailed(AssertionError):
    """Raised inside a check when the driver does not do what it declares; carries the reason."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check on one driver."""

    check: str
    """The check's id, ``<capability>.<name>``, e.g. ``erase.no_bytes_left``."""
    capability: str
    status: Status
    reason: str = ""
    """Why it failed or was not run; for a pass, what was covered (may be empty)."""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """This result as plain JSON values."""
        return {
            "check": self.check,
            "status": self.status.value,
            "reason": self.reason,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True, slots=True)
class CapabilityResult:
    """The outcome for one capability: passed, failed (with the reason) or not declared."""

    name: str
    declared: str
    """What the driver declares, e.g. ``True``, ``'hard'``, or ``required`` for the contract
    every driver must keep."""
    status: Status
    reason: str = ""
    """The first failed check's reason, or why the capability was not checked."""
    checks: tuple[CheckResult, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """This result as plain JSON values."""
        return {
            "name": self.name,
            "declared": self.declared,
            "status": self.status.value,
            "reason": self.reason,
            "checks": [check.to_json() for check in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Report:
    """Everything one conformance run found about one driver."""

    driver: str
    """The driver's ``name`` (or the factory, if no driver could be made)."""
    factory: str
    """How the driver was made, e.g. ``mainsdk_memory.drivers.local:LocalDriver``."""
    seed: int
    """The seed of the synthetic data; the same seed reproduces the same run."""
    capabilities: tuple[CapabilityResult, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        """Whether every declared capability passed (nothing failed)."""
        return all(result.status is not Status.FAILED for result in self.capabilities)

    @property
    def failed(self) -> tuple[CapabilityResult, ...]:
        """The capabilities that failed."""
        return tuple(r for r in self.capabilities if r.status is Status.FAILED)

    def __getitem__(self, capability: str) -> CapabilityResult:
        for result in self.capabilities:
            if result.name == capability:
                return result
        raise KeyError(capability)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON values (what ``memory-conformance --json`` prints)."""
        return {
            "driver": self.driver,
            "factory": self.factory,
            "seed": self.seed,
            "passed": self.passed,
            "capabilities": [result.to_json() for result in self.capabilities],
        }

    def to_json_text(self) -> str:
        """The report as indented JSON text."""
        return json.dumps(self.to_json(), indent=2)

    def summary(self) -> str:
        """A human-readable table: one line per capability, with the reason of each failure."""
        lines = [f"Conformance of driver {self.driver!r} ({self.factory}), seed {self.seed}:"]
        width = max((len(r.name) for r in self.capabilities), default=0)
        for result in self.capabilities:
            ran = [c for c in result.checks if c.status is not Status.NOT_DECLARED]
            count = f"{len(ran)} check{'s' if len(ran) != 1 else ''}" if ran else ""
            lines.append(
                f"  {result.status.value:<12}  {result.name:<{width}}  "
                f"declared {result.declared:<10}  {count}".rstrip()
            )
            if result.status is Status.FAILED:
                for check in result.checks:
                    if check.status is Status.FAILED:
                        lines.append(f"      {check.check}: {check.reason}")
        declared = [r for r in self.capabilities if r.status is not Status.NOT_DECLARED]
        if self.passed:
            lines.append(f"PASSED: all {len(declared)} declared capabilities hold.")
        else:
            lines.append(
                f"FAILED: {len(self.failed)} of {len(declared)} declared capabilities do not hold: "
                + ", ".join(r.name for r in self.failed)
                + "."
            )
        return "\n".join(lines)
