"""The names of the MCP tools, in a leaf module both the server and its tools import."""

from __future__ import annotations

__all__ = [
    "FORGET",
    "LEARN",
    "RECALL",
    "REMEMBER",
    "WORKING_DELETE",
    "WORKING_GET",
    "WORKING_LIST",
    "WORKING_SET",
]

REMEMBER = "memory.remember"
"""The write tool."""
RECALL = "memory.recall"
"""The read tool."""
FORGET = "memory.forget"
"""The destructive tool (it only asks; the person approves)."""
LEARN = "memory.learn"
"""Learning from a passage: each durable fact remembered, untrusted, in the server's session."""
WORKING_SET = "memory.working.set"
"""Set one working-memory value of the server's session (an upsert)."""
WORKING_GET = "memory.working.get"
"""Read one working-memory value."""
WORKING_LIST = "memory.working.list"
"""Read every working-memory value the server's session sees."""
WORKING_DELETE = "memory.working.delete"
"""Delete one working-memory value of the server's session."""
