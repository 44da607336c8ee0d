"""A LangGraph graph whose long-term store is the person's sealed memory (``MemoryStore``).

Runs offline, with no model: the graph's one node remembers what the person says they like
and answers from the store, reached through ``runtime.store`` (the store given to
``compile``). The namespace ``("memories", <user id>, "preferences")`` names the person, so
each user's items are their own memories, sealed under their key. The graph's delete is the
agent's forget request: the person approves it, and the memory is erased with a receipt.
Needs ``pip install 'mainsdk-memory[langgraph]'``.

    python docs/examples/langgraph_store.py
"""

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from mainsdk_memory import Memory, tenant
from mainsdk_memory.integrations.langgraph import MemoryStore
from mainsdk_memory.keys import KeyStore


class State(TypedDict):
    message: str
    reply: NotRequired[str]


@dataclass
class Context:
    user_id: str


def concierge(state: State, runtime: Runtime[Context]) -> dict[str, str]:
    """Remember "I like ..."; answer "What do I like?" from the store."""
    store = get_store()  # the store given to compile (also runtime.store)
    namespace = ("memories", runtime.context.user_id, "preferences")
    message = state["message"]
    if message.startswith("I like "):
        liked = message.removeprefix("I like ").rstrip(".")
        store.put(namespace, "likes", {"text": message, "thing": liked})
        return {"reply": "Noted."}
    found = store.search(namespace, query="like", limit=1)
    if not found:
        return {"reply": "I don't know what you like yet."}
    return {"reply": f"You like {found[0].value['thing']}."}


def build(store: BaseStore) -> CompiledStateGraph[State, Context, State, State]:
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("concierge", concierge)
    graph.add_edge(START, "concierge")
    graph.add_edge("concierge", END)
    return graph.compile(store=store)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        keys = Path(folder) / "keys"
        KeyStore.create(keys)  # what `memory keys init --keys …` does
        with (
            Memory.open(f"local:{folder}/store", keys=keys, app="example") as memory,
            tenant.use("acme"),  # the tenant is never a parameter of the store
        ):
            store = MemoryStore(memory, agent="concierge")
            graph = build(store)
            ada, bob = Context("ada"), Context("bob")
            turn = graph.invoke({"message": "I like green tea."}, context=ada)
            print("turn 1:", turn["reply"])
            turn = graph.invoke({"message": "What do I like?"}, context=ada)
            print("turn 2:", turn["reply"])
            turn = asyncio.run(graph.ainvoke({"message": "What do I like?"}, context=ada))
            print("turn 3 (async):", turn["reply"])
            turn = graph.invoke({"message": "What do I like?"}, context=bob)
            print("other person:", turn["reply"])

            # The graph's delete asks; the person (in their own UI) decides.
            store.delete(("memories", "ada", "preferences"), "likes")
            person = memory.person("ada")
            pending = person.pending()
            print("pending forget requests:", len(pending))
            turn = graph.invoke({"message": "What do I like?"}, context=ada)
            print("before approval:", turn["reply"])
            receipt = person.approve(pending[0].id)
            print("erased, with a receipt:", receipt.memory_id == pending[0].memory_id)
            turn = graph.invoke({"message": "What do I like?"}, context=ada)
            print("after approval:", turn["reply"])


if __name__ == "__main__":
    main()
