"""The names of the MCP tools, in a leaf module both the server and its tools import.

The constants are the default names, with underscores (ADR 0089). ``--tool-names dotted``
offers the same tools under the specification's spelling, each underscore a dot
(``memory.remember``, ``memory.working.set``): :func:`tool_name` maps one to the other.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "FORGET",
    "LEARN",
    "LIST",
    "NAMES",
    "RECALL",
    "REMEMBER",
    "REVISE",
    "TOOL_NAME_STYLES",
    "WORKING_DELETE",
    "WORKING_GET",
    "WORKING_LIST",
    "WORKING_SET",
    "ToolNameStyle",
    "tool_name",
]

REMEMBER = "memory_remember"
"""The write tool."""
RECALL = "memory_recall"
"""The read tool: the escaped block, and the same memories as structured content."""
FORGET = "memory_forget"
"""The destructive tool (it only asks; the person approves)."""
LEARN = "memory_learn"
"""Learning from a passage: each durable fact remembered, untrusted, in the server's session."""
LIST = "memory_list"
"""A page of the current memories in scope, newest first."""
REVISE = "memory_revise"
"""The next version of a quarantined memory (the one this session wrote)."""
WORKING_SET = "memory_working_set"
"""Set one working-memory value of the server's session (an upsert)."""
WORKING_GET = "memory_working_get"
"""Read one working-memory value."""
WORKING_LIST = "memory_working_list"
"""Read every working-memory value the server's session sees."""
WORKING_DELETE = "memory_working_delete"
"""Delete one working-memory value of the server's session."""

NAMES: tuple[str, ...] = (
    REMEMBER,
    RECALL,
    FORGET,
    LEARN,
    LIST,
    REVISE,
    WORKING_SET,
    WORKING_GET,
    WORKING_LIST,
    WORKING_DELETE,
)
"""Every tool, by its default name, in the order the server lists them."""

ToolNameStyle = Literal["underscore", "dotted"]
"""How the tools are named on the wire: ``memory_remember`` (the default) or
``memory.remember``."""

TOOL_NAME_STYLES: tuple[ToolNameStyle, ...] = ("underscore", "dotted")
"""The styles ``memory mcp --tool-names`` takes."""


def tool_name(name: str, style: ToolNameStyle) -> str:
    """The name the tool ``name`` (one of :data:`NAMES`) has on the wire in ``style``."""
    if name not in NAMES:
        raise ValueError(f"not a tool of this server: {name!r}")
    return name if style == "underscore" else name.replace("_", ".")
