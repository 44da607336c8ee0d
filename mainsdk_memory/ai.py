"""The model port: the one way the SDK calls a language model, and an OpenAI-compatible client.

Nothing here runs unless the app configures a model (``Memory.open(..., model=...)``); there
is no default model and no network call of its own. Every call the SDK makes goes through the
port (:mod:`mainsdk_memory._modelport`), which redacts identifiers, checks what goes in and
comes out for injection, applies the agent's limits, audits ids and counts, and never runs for
a child.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Model"]


@runtime_checkable
class Model(Protocol):
    """A language model: chat messages in, the model's text out.

    ``messages`` are ``{"role": "system" | "user" | "assistant", "content": str}`` dicts;
    ``schema`` (a JSON schema) asks for a JSON answer of that shape.
    """

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None
    ) -> str:
        """The model's answer to ``messages``."""
        ...
