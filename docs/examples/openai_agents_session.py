"""The OpenAI Agents SDK's Runner with its conversation kept sealed in the person's ledger.

Runs offline, with no API key: the model is the SDK's own local stand-in
(``agents.testing.ScriptedModel``), which answers from the conversation the Runner sends it.
The second run is given a new session object, as another process would make: it recalls
what the first run stored. Needs ``pip install 'mainsdk-memory[openai-agents]'``.

    python docs/examples/openai_agents_session.py
"""

import asyncio
import tempfile
from pathlib import Path

from agents import Agent, RunConfig, Runner
from agents.items import TResponseOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message

from mainsdk_memory import Memory, tenant
from mainsdk_memory.integrations.openai_agents import MemorySession
from mainsdk_memory.keys import KeyStore


def answer(call: ModelCall) -> list[TResponseOutputItem]:
    """A stand-in model: it says where the user lives if an earlier message told it."""
    said = [item["content"] for item in call.input if item.get("role") == "user"]
    if said[-1] != "Where do I live?":
        return [assistant_message("Noted.")]
    city = next(text.split("live in ")[1].rstrip(".") for text in said if "live in " in text)
    return [assistant_message(f"You live in {city}.")]


async def conversation(memory: Memory) -> None:
    model = ScriptedModel([ModelStep.respond(answer), ModelStep.respond(answer)])
    agent = Agent(name="concierge", instructions="Help the person.", model=model)
    config = RunConfig(tracing_disabled=True)  # no trace leaves the process

    session = MemorySession(memory.acting_for("ada", agent="concierge", session="chat-42"))
    first = await Runner.run(agent, "Hi! I live in Lisbon.", session=session, run_config=config)
    print("run 1:", first.final_output)

    later = MemorySession(memory.acting_for("ada", agent="concierge", session="chat-42"))
    second = await Runner.run(agent, "Where do I live?", session=later, run_config=config)
    print("run 2:", second.final_output)

    items = await later.get_items()
    print("session items:", [item.get("role") for item in items])
    popped = await later.pop_item()
    print("popped:", popped.get("role") if popped else None, "->", len(await later.get_items()))
    await later.clear_session()
    print("after clear:", await later.get_items())
    # Nothing was deleted: the ledger keeps every item, the tombstone and the marker.
    print("entries in Ada's ledger:", len(memory.person("ada").episodes.list()))
    bob = MemorySession(memory.acting_for("bob", agent="concierge", session="chat-42"))
    print("bob's session of that name:", await bob.get_items())


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        keys = Path(folder) / "keys"
        KeyStore.create(keys)
        with (
            Memory.open(f"local:{folder}/store", keys=keys, app="concierge") as memory,
            tenant.use("acme"),
        ):
            asyncio.run(conversation(memory))


if __name__ == "__main__":
    main()
