"""The names of the MCP tools, in a leaf module both the server and its tools import."""

from __future__ import annotations

__all__ = ["FORGET", "RECALL", "REMEMBER"]

REMEMBER = "memory.remember"
"""The write tool."""
RECALL = "memory.recall"
"""The read tool."""
FORGET = "memory.forget"
"""The destructive tool (it only asks; the person approves)."""
