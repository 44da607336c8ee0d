"""Adapters for the frameworks agent apps are built on: LangGraph, OpenAI Agents SDK, LlamaIndex.

Each adapter is its own module, imported on its own (``from mainsdk_memory.integrations.langgraph
import MemoryStore``), and needs its framework, installed through the extra of the same name
(``pip install 'mainsdk-memory[langgraph]'``). Every adapter is a thin layer over the public
handles: the walls (tenant, person, agent grant, injection check, quarantine, forget requests)
are the SDK's own, never re-implemented here.
"""
