"""Serve one person's memory to an agent as MCP tools over stdio: ``memory mcp``.

::

    memory mcp --store local:./memories --keys ./keys --app support \\
        --tenant acme --person ada --agent support-bot [--session chat-1]

The server offers these tools (see ``docs/mcp.md``):

============================  ============================================================
``memory_remember``           write: an ``untrusted`` memory, quarantined in this session
``memory_recall``             read: the escaped ``<memory-data>`` block of ``context()``
``memory_forget``             destructive: files a request the person approves; erases nothing
``memory_learn``              write: ``learn()`` of a passage or turns, each fact ``untrusted``
``memory_working_set``        write: one working-memory value of this session (an upsert)
``memory_working_get``        read: one working-memory value
``memory_working_list``       read: every working-memory value this session sees
``memory_working_delete``     destructive: one working-memory value of this session
============================  ============================================================

The tenant, the person, the agent and the session are the server's configuration: no tool
has an argument that names them, and a call with an argument its tool does not declare is
refused. Without ``--session`` each server process makes up its own session
(``mcp-<16 hex digits>``), so what one process remembers is not recalled by the next until
the person confirms it.

This module does not import the ``mcp`` package until a server is built, so
``import mainsdk_memory`` works without it; install it with ``pip install
'mainsdk-memory[mcp]'``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from mainsdk_memory import _validate as validate
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._errors import ConfigurationError, MemorySDKError
from mainsdk_memory._mcp_names import (
    FORGET,
    LEARN,
    RECALL,
    REMEMBER,
    WORKING_DELETE,
    WORKING_GET,
    WORKING_LIST,
    WORKING_SET,
)
from mainsdk_memory._memory import Memory
from mainsdk_memory.audit import AuditSink, JsonlFileSink
from mainsdk_memory.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = [
    "DEFAULT_SERVER_NAME",
    "EMBEDDERS",
    "FORGET",
    "LEARN",
    "RECALL",
    "REMEMBER",
    "WORKING_DELETE",
    "WORKING_GET",
    "WORKING_LIST",
    "WORKING_SET",
    "ServerConfig",
    "add_arguments",
    "build_server",
    "main",
    "run_from_args",
    "serve",
]

DEFAULT_SERVER_NAME = "mainsdk-memory"
"""The server's name, and the ``id`` of ``Source.mcp(...)`` on what it writes."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``memory mcp`` is started with: where the memory is, and whom it serves.

    ``tenant`` and ``person`` decide whose memory the tools reach; they are configuration,
    never tool arguments. ``session`` defaults to a new one per server process. ``name`` is
    the server's name and the id of the ``Source.mcp`` of every memory it writes. ``audit``
    appends the audit events (ids only) to a JSON Lines file. ``embedder`` is ``None`` (BM25
    recall), ``"hashing"`` (:class:`~mainsdk_memory.embeddings.HashingEmbedder`, no model) or
    ``"minilm"`` (:class:`~mainsdk_memory.embeddings.MiniLMEmbedder`, the ``embeddings``
    extra): with one, recall is hybrid.
    """

    store: str
    keys: Path
    app: str
    tenant: str
    person: str
    agent: str
    session: str | None = None
    name: str = DEFAULT_SERVER_NAME
    audit: Path | None = None
    embedder: Literal["hashing", "minilm"] | None = None


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "hashing": HashingEmbedder,
    "minilm": MiniLMEmbedder,
}
"""The embedders ``memory mcp --embedder`` can name."""


def _implementation() -> ModuleType:
    """The module that needs ``mcp``, imported on first use."""
    hint = "The MCP server needs the official MCP SDK: pip install 'mainsdk-memory[mcp]'."
    try:
        found = importlib.util.find_spec("mcp")
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ConfigurationError(hint)
    try:
        from mainsdk_memory import _mcp
    except ModuleNotFoundError as exc:
        # the SDK's own dependencies (anyio, …) missing: a broken or partial install
        if exc.name is not None and exc.name.split(".")[0] in {"mcp", "mcp_types", "anyio"}:
            raise ConfigurationError(hint) from exc
        raise
    return _mcp


def build_server(
    memory: Memory,
    *,
    tenant: str,
    person: str,
    agent: str,
    session: str | None = None,
    name: str = DEFAULT_SERVER_NAME,
) -> Server[Any]:
    """An MCP server (``mcp.server.lowlevel.Server``) offering the memory tools.

    Every call acts as ``agent`` for ``person`` in ``tenant`` and ``session`` (default: a
    new ``mcp-…`` session for this server). Run it over any transport the SDK offers; the
    ``memory mcp`` command runs it over stdio. The names are checked here, so a wrong one
    fails before the server answers anything.
    """
    with _tenant.use(tenant):  # checks the tenant id
        pass
    person = validate.person(person)
    agent = validate.name(agent, "agent")
    session = None if session is None else validate.name(session, "session")
    name = validate.name(name, "The server name")
    impl = _implementation()
    scope = impl.McpScope(
        tenant=tenant,
        person=person,
        agent=agent,
        session=impl.new_session_name() if session is None else session,
        server_name=name,
    )
    server: Server[Any] = impl.build_server(memory, scope)
    return server


def serve(config: ServerConfig) -> None:
    """Open the store, then serve the tools over stdin and stdout until stdin closes.

    Configuration errors (a missing key store, a bad name, an unknown driver) raise before
    anything is read from stdin.
    """
    audit: AuditSink | None = None if config.audit is None else JsonlFileSink(config.audit)
    if config.embedder is not None and config.embedder not in EMBEDDERS:
        raise ConfigurationError(f"embedder is one of {sorted(EMBEDDERS)}, or None.")
    embedder = None if config.embedder is None else EMBEDDERS[config.embedder]()
    with Memory.open(
        config.store, keys=config.keys, app=config.app, audit=audit, embedder=embedder
    ) as memory:
        server = build_server(
            memory,
            tenant=config.tenant,
            person=config.person,
            agent=config.agent,
            session=config.session,
            name=config.name,
        )
        _implementation().run_stdio(server)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``memory mcp`` to ``parser``."""
    parser.add_argument("--store", required=True, help="the memory store URL, e.g. local:PATH")
    parser.add_argument("--keys", required=True, type=Path, help="the key store folder")
    parser.add_argument("--app", required=True, help="the app name")
    parser.add_argument("--tenant", required=True, help="the tenant whose memory is served")
    parser.add_argument("--person", required=True, help="the person the agent acts for")
    parser.add_argument("--agent", required=True, help="the agent name the tools write as")
    parser.add_argument(
        "--session", help="the session name (default: a new mcp-… session per process)"
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_SERVER_NAME,
        help=f"the server's name, recorded as Source.mcp(NAME) (default: {DEFAULT_SERVER_NAME})",
    )
    parser.add_argument(
        "--audit", type=Path, help="append audit events (ids only) to this JSON Lines file"
    )
    parser.add_argument(
        "--embedder",
        choices=sorted(EMBEDDERS),
        help="embed memories for hybrid recall: hashing (no model) or minilm (the "
        "'embeddings' extra); default: none, BM25 recall",
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``memory mcp`` with parsed arguments; the exit status."""
    config = ServerConfig(
        store=args.store,
        keys=args.keys,
        app=args.app,
        tenant=args.tenant,
        person=args.person,
        agent=args.agent,
        session=args.session,
        name=args.name,
        audit=args.audit,
        embedder=args.embedder,
    )
    try:
        serve(config)
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m mainsdk_memory.mcp_server`` (same options as ``memory mcp``)."""
    parser = argparse.ArgumentParser(
        prog="python -m mainsdk_memory.mcp_server",
        description="Serve one person's memory as MCP tools over stdio.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except MemorySDKError as exc:
        print(f"memory mcp: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
