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

REMEMBER = "memory_remember"
"""The write tool."""
RECALL = "memory_recall"
"""The read tool."""
FORGET = "memory_forget"
"""The destructive tool (it only asks; the person approves)."""
LEARN = "memory_learn"
"""Learning from a passage: each durable fact remembered, untrusted, in the server's session."""
WORKING_SET = "memory_working_set"
"""Set one working-memory value of the server's session (an upsert)."""
WORKING_GET = "memory_working_get"
"""Read one working-memory value."""
WORKING_LIST = "memory_working_list"
"""Read every working-memory value the server's session sees."""
WORKING_DELETE = "memory_working_delete"
"""Delete one working-memory value of the server's session."""
