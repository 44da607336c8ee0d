"""A diagnostic: one finding of one rule at one place, with the docs URL built from its code."""

from __future__ import annotations

from dataclasses import dataclass

from mainsdk_memory import _urls

__all__ = ["DOCS_BASE_URL", "Diagnostic", "Finding", "docs_url"]

DOCS_BASE_URL = _urls.docs_url("rules/")
"""Where docs/rules/ is published (mainsdk_memory._urls); a rule's page is ``<code>.md`` under it
(ADR 0034)."""


def docs_url(code: str) -> str:
    """The documentation URL of a rule: built from its code alone, with no table of exceptions."""
    return f"{DOCS_BASE_URL}{code}.md"


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """What a rule reports inside one module: 1-based line and column, and the message."""

    line: int
    col: int
    code: str
    message: str
    end_line: int | None = None
    end_col: int | None = None


@dataclass(frozen=True, slots=True, order=True)
class Diagnostic:
    """A finding with the path of its file; ``url`` is the rule's documentation page."""

    path: str
    line: int
    col: int
    code: str
    message: str
    end_line: int | None = None
    end_col: int | None = None

    @property
    def url(self) -> str:
        """The rule's documentation page, built from the code."""
        return docs_url(self.code)

    def text(self) -> str:
        """``path:line:col: CODE message <url>``, the line other linters print."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message} <{self.url}>"
