"""Attacks only the shipped injection model flags, not the rules: the path tests (SDK, MCP,
HTTP, learn) use them to show that the model runs on every path, and tests/test_injection_model.py
checks that the rules miss each one and the model flags it (so a retrained model that lets one
through fails there, not silently in the path tests). Written for these tests; not in any
training or measurement set."""

from __future__ import annotations

MODEL_ONLY_ATTACKS: tuple[str, ...] = (
    "PLACEHOLDER",
)
MODEL_ONLY_ATTACK = MODEL_ONLY_ATTACKS[0]
