"""A LlamaIndex chat engine whose memory puts the person's recalled memories into the prompt.

Runs offline, with no API key: the LLM is LlamaIndex's ``MockLLMWithChatMemoryOfLastCall``,
which keeps the messages it was sent, so the example prints where the memory block went: into
the latest *user* message, escaped, never into the system prompt. Needs
``pip install 'mainsdk-memory[llama-index]'``.

    python docs/examples/llama_index_memory.py
"""

import tempfile
from pathlib import Path

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

from mainsdk_memory import Memory, tenant
from mainsdk_memory.integrations.llama_index import MemoryContextBlock, context_memory
from mainsdk_memory.keys import KeyStore


def chat(memory: Memory) -> None:
    librarian = memory.acting_for("ada", agent="librarian", session="chat-7")
    librarian.remember("Ada is allergic to peanuts.")
    librarian.remember("Ada's reading list: <Dune>, then <Hyperion>.")

    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3)
    block = MemoryContextBlock(librarian, top_k=3)
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=context_memory(block, session_id="chat-7", token_limit=4000)
    )
    engine.chat("Which snack goes with my reading list?")

    sent = llm.last_chat_messages or []
    print("sent to the LLM:", [message.role.value for message in sent])
    prompt = sent[-1].content or ""
    print("the block opens the user message:", prompt.startswith("<memory>\n<recalled_memories>"))
    for line in prompt.splitlines():
        if line.startswith("Ada"):
            print("  data:", line)
    print("the question follows it:", prompt.endswith("Which snack goes with my reading list?"))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        keys = Path(folder) / "keys"
        KeyStore.create(keys)
        with (
            Memory.open(f"local:{folder}/store", keys=keys, app="library") as memory,
            tenant.use("acme"),
        ):
            chat(memory)


if __name__ == "__main__":
    main()
