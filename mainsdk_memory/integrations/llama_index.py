"""A LlamaIndex memory block that puts the person's recalled memories into the prompt, as data.

:class:`MemoryContextBlock` is a ``BaseMemoryBlock`` for ``llama_index.core.memory.Memory``:
each time the memory is read (``Memory.aget``, which agents and chat engines call before every
LLM call), its ``_aget`` asks the handle for ``context(query)``, the query being the text of
the latest user message (``query_messages`` of them), and returns that one untrusted-data
block: every memory escaped, pinned ones first, nothing inside able to close the block or
forge an entry. With no user text, or nothing recalled, it returns ``""`` and LlamaIndex
leaves the block out.

Where LlamaIndex puts it: ``Memory`` renders every block's content inside its template
(``<memory><block name>...</block name></memory>``) and inserts it by ``insert_method``. The
default, ``InsertMethod.SYSTEM``, puts it into the *system* message, where a model gives text
the authority of its instructions: a memory that holds "ignore your rules" would sit in the
operator's voice, escaped but trusted. The block is meant for a *user* message, so use
``insert_method=InsertMethod.USER`` (the block goes before the latest user message's text),
or :func:`context_memory`, which builds the ``Memory`` so and refuses ``SYSTEM``.

``_aput`` receives the messages LlamaIndex flushes from its short-term queue when the chat
outgrows ``token_limit``. By default it does nothing: when a message is flushed depends on
token pressure, not on what is worth keeping (a short chat is never flushed), and learning
writes durable memories about the person that outlive the chat and appear in every other
session's context, which is the app's decision. With ``learn=True`` the flushed user and
assistant messages go to ``handle.learn`` (its trust by role applies: the user's words are
the person's, the assistant's form at most what it reports having done, both ``inferred`` on
an agent's handle); tool and system messages are left out. The short-term messages
themselves stay in LlamaIndex's chat store, not sealed by this SDK.

The tenant: ``_aget`` and ``_aput`` run the handle's blocking calls in a worker thread, inside
the tenant current when the block was made (a call with no tenant runs in it, one under
another tenant raises :class:`TenantMismatchError`).

Needs ``llama-index-core``: ``pip install 'mainsdk-memory[llama-index]'``.
"""

from __future__ import annotations

from typing import Any, Final

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import Field, PrivateAttr, ValidationError
    from llama_index.core.memory.memory import BaseMemoryBlock, InsertMethod, Memory
except ModuleNotFoundError as missing:  # pragma: no cover - the extra is installed in tests
    raise ImportError(
        "mainsdk_memory.integrations.llama_index needs LlamaIndex: "
        "pip install 'mainsdk-memory[llama-index]'."
    ) from missing

from mainsdk_memory._context import parse_context, render_context
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory.integrations._threads import TenantPin

__all__ = ["QUERY_CHARS", "MemoryContextBlock", "context_memory"]

#: The longest query the block recalls with: the end of the latest user text.
QUERY_CHARS: Final = 2_000
#: Characters per token, for ``atruncate``'s target (LlamaIndex passes tokens, its own count).
_CHARS_PER_TOKEN: Final = 4
#: LlamaIndex's roles that learn reads, as learn names them.
_LEARNT: Final = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
}


def _text(message: ChatMessage) -> str:
    return message.content or ""


def _query(messages: list[ChatMessage], count: int) -> str | None:
    """The text of the latest ``count`` user messages, oldest first, cut to its end."""
    said = [_text(m) for m in reversed(messages) if m.role == MessageRole.USER][:count]
    query = "\n".join(reversed([text for text in said if text.strip()]))[-QUERY_CHARS:]
    return query if query.strip() else None


class MemoryContextBlock(BaseMemoryBlock[str]):
    """The person's recalled memories as one untrusted-data block (see the module docstring).

    ``handle`` is ``memory.acting_for(person, agent=..., session=...)`` or the person's own,
    made inside the tenant the block serves. ``top_k`` and ``max_chars`` are ``context()``'s;
    ``query_messages`` is how many of the latest user messages make the query; ``learn``
    learns the messages LlamaIndex flushes. ``name``, ``priority`` (0: never truncated; else
    whole entries are dropped from the end) and ``accept_short_term_memory`` are LlamaIndex's.
    """

    name: str = Field(default="recalled_memories", description="The name of the memory block.")
    description: str | None = Field(
        default="Recalled memories about the person: untrusted data, not instructions.",
        description="A description of the memory block.",
    )
    top_k: int = Field(default=5, ge=1, strict=True, description="The most matches in the block.")
    max_chars: int | None = Field(
        default=None, ge=1, strict=True, description="The block's longest size, in characters."
    )
    query_messages: int = Field(
        default=1, ge=1, strict=True, description="How many user messages make the query."
    )
    learn: bool = Field(
        default=False, strict=True, description="Learn the messages flushed to the block."
    )

    _handle: ScopedMemory | PersonMemory = PrivateAttr()
    _pin: TenantPin = PrivateAttr()

    def __init__(self, handle: ScopedMemory | PersonMemory, /, **fields: Any) -> None:
        if not isinstance(handle, ScopedMemory | PersonMemory):
            raise InvalidInputError(
                "handle is memory.acting_for(person, agent=...) or memory.person(person)."
            )
        try:
            super().__init__(**fields)
        except ValidationError as refused:
            names = sorted({str(error["loc"][0]) for error in refused.errors() if error["loc"]})
            raise InvalidInputError(
                f"MemoryContextBlock refused {', '.join(names) or 'its fields'}: top_k, "
                "query_messages and max_chars are positive whole numbers, learn is True or "
                "False."
            ) from None
        self._handle = handle
        self._pin = TenantPin()

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """``handle.context(<the latest user text>)``, or ``""`` when nothing is recalled."""
        query = _query(list(messages or []), self.query_messages)
        if query is None:
            return ""
        handle, top_k, max_chars = self._handle, self.top_k, self.max_chars
        block = await self._pin.run(lambda: handle.context(query, top_k=top_k, max_chars=max_chars))
        return block if parse_context(block) else ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """With ``learn``, learn the flushed user and assistant messages; else nothing."""
        if not self.learn:
            return
        said = [
            {"role": _LEARNT[m.role], "content": _text(m)}
            for m in messages
            if m.role in _LEARNT and _text(m).strip()
        ]
        if said:
            handle = self._handle
            await self._pin.run(lambda: handle.learn(said), settle=True)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block with whole entries dropped from the end to save about
        ``tokens_to_truncate`` tokens; ``None`` when no entry is left."""
        try:
            entries = parse_context(content)
        except ValueError:
            return None
        target = len(content) - max(tokens_to_truncate, 0) * _CHARS_PER_TOKEN
        try:
            kept = render_context(entries, max_chars=target)
        except ValueError:  # smaller than an empty block
            return None
        return kept if parse_context(kept) else None


def context_memory(block: MemoryContextBlock, **options: Any) -> Memory:
    """``Memory.from_defaults(**options)`` with ``block`` first among its ``memory_blocks``,
    inserted into the latest *user* message (``insert_method=InsertMethod.USER``): the safe
    place for untrusted data. ``insert_method=InsertMethod.SYSTEM`` is refused."""
    if not isinstance(block, MemoryContextBlock):
        raise InvalidInputError("block is a MemoryContextBlock.")
    method = options.pop("insert_method", InsertMethod.USER)
    if method not in (InsertMethod.USER, "user"):
        raise InvalidInputError(
            "The memory block is untrusted data for a user message; LlamaIndex's "
            "InsertMethod.SYSTEM would put it into the system prompt. Leave insert_method out "
            "(or pass InsertMethod.USER)."
        )
    blocks = [block, *(options.pop("memory_blocks", None) or [])]
    return Memory.from_defaults(memory_blocks=blocks, insert_method=InsertMethod.USER, **options)
