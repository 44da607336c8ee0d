"""The base of every rule, the module context rules read, and the registry of rules by code.

A rule is one module under ``checks/rules/`` holding one class registered with
:func:`register`. Its docstring is its documentation: ``docs/rules/<code>.md`` is generated
from it (``memory-check --explain CODE`` prints the same text) and a test keeps the two equal.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal, TypeVar

from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._flow import Analysis, Origin, Sink, Value

__all__ = [
    "RULES", "SECURITY_SEVERITY", "Module", "Rule", "Settings", "Severity", "TaintRule", "register",
]

Severity = Literal["critical", "high", "medium", "low"]
#: The CVSS-like score of each severity, as SARIF's ``properties.security-severity`` carries
#: it: GitHub code scanning ranks a finding critical over 9.0, high from 7.0, medium from 4.0.
SECURITY_SEVERITY: Final[dict[Severity, str]] = {
    "critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0",
}

_CODE = re.compile(r"MAIN-MEM-\d{4}")


@dataclass(frozen=True, slots=True)
class Settings:
    """Rule options read from ``[tool.memory-check]`` (see ``docs/rules/``)."""

    soft_erase_schemes: frozenset[str] = frozenset()
    soft_erase_drivers: frozenset[str] = frozenset()
    untrusted_calls: frozenset[str] = frozenset()


@dataclass(eq=False)
class Module:
    """One parsed file as the rules see it: its tree, the engine's analysis and the settings."""

    path: str
    source: str
    tree: ast.Module
    analysis: Analysis
    settings: Settings = field(default_factory=Settings)
    _nodes: list[ast.AST] | None = field(default=None, repr=False)
    _calls: list[ast.Call] | None = field(default=None, repr=False)

    def value(self, node: ast.AST) -> Value:
        """The engine's value of an expression."""
        return self.analysis.value(node)

    def qualname(self, node: ast.AST) -> str | None:
        """The canonical qualified name an expression refers to through imports."""
        return self.analysis.qualname(node)

    def nodes(self) -> list[ast.AST]:
        """Every node of the module, walked once and shared by the rules."""
        if self._nodes is None:
            self._nodes = _all_nodes(self.tree)
        return self._nodes

    def calls(self) -> list[ast.Call]:
        """Every call in the module (the engine's list when it ran: no second walk)."""
        if self._calls is None:
            if self.analysis.ran:
                self._calls = self.analysis.calls
            else:
                self._calls = [n for n in self.nodes() if isinstance(n, ast.Call)]
        return self._calls


def _all_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node under ``tree`` (like :func:`ast.walk`, about twice as fast, as a list)."""
    nodes: list[ast.AST] = [tree]
    index = 0
    while index < len(nodes):
        node = nodes[index]
        index += 1
        for name in node._fields:
            child = getattr(node, name, None)
            if isinstance(child, list):
                nodes.extend(c for c in child if isinstance(c, ast.AST))
            elif isinstance(child, ast.AST):
                nodes.append(child)
    return nodes


class Rule:
    """A memory-check rule; subclasses set ``code`` and ``name`` and write their docs."""

    code: ClassVar[str]
    name: ClassVar[str]
    since: ClassVar[str] = "0.1.0"
    needs_memory: ClassVar[bool] = True
    """Whether the rule can only fire in a module that mentions ``mainsdk_memory``."""
    suppressible: ClassVar[bool] = True
    severity: ClassVar[Severity] = "medium"
    """How much harm what the rule finds can do (each rule of this package sets its own)."""
    tags: ClassVar[tuple[str, ...]] = ("security",)
    """SARIF tags: ``security`` first, then the area and the CWE (``external/cwe/cwe-N``)."""

    @classmethod
    def summary(cls) -> str:
        """The first line of the rule's docstring."""
        return (cls.__doc__ or "").strip().splitlines()[0].strip()

    @classmethod
    def documentation(cls) -> str:
        """The rule's docstring without its first line, dedented (Markdown)."""
        doc = (cls.__doc__ or "").expandtabs()
        lines = doc.splitlines()
        body = "\n".join(lines[1:])
        return textwrap.dedent(body).strip() + "\n"

    def check(self, module: Module) -> Iterable[Finding]:
        """Findings that need more than the data-flow sinks (the default: none)."""
        return ()

    @staticmethod
    def at(node: ast.AST, code: str, message: str) -> Finding:
        """A finding at a node's start (1-based column), with its end when known."""
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        return Finding(lineno, col, code, message, end_line,
                       None if end_col is None else end_col + 1)


class TaintRule(Rule):
    """A rule the engine runs while it follows data: text of ``origin_kinds`` must not reach
    the sinks the rule names."""

    origin_kinds: ClassVar[frozenset[str]]

    def sinks(self, node: ast.AST, analysis: Analysis) -> Iterable[Sink]:
        """The sinks at ``node`` (a call, dict, tuple or raise statement)."""
        return ()

    def message(self, where: str, origin: Origin) -> str:
        """The message for text from ``origin`` reaching ``where``."""
        raise NotImplementedError

    @staticmethod
    def sink(node: ast.expr, analysis: Analysis, where: str) -> Sink:
        """A sink at ``node`` whose value the engine already knows."""
        return Sink(node, analysis.value(node), where)


RULES: dict[str, type[Rule]] = {}
"""Every rule by its code, filled by :func:`register` when ``checks.rules`` is imported."""


R = TypeVar("R", bound=type[Rule])


def register(rule: R) -> R:
    """Class decorator: add a rule to :data:`RULES` under its code (which must be new)."""
    if not _CODE.fullmatch(rule.code):
        raise ValueError(f"{rule.__name__}: a rule code looks like MAIN-MEM-0000")
    if rule.code in RULES:
        raise ValueError(f"{rule.code} is registered twice")
    RULES[rule.code] = rule
    return rule
