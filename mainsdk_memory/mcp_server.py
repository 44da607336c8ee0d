"""Serve memory to agents as MCP tools: ``memory mcp``, over stdio or streamable HTTP.

::

    memory mcp --store local:./memories --keys ./keys --app support \\
        --tenant acme --person ada --agent support-bot [--session chat-1]

    memory mcp --transport http --host 127.0.0.1 --port 8765 \\
        --store local:./memories --keys ./keys --app support \\
        --token-issuer https://id.example.com --token-audience memory \\
        --token-jwks ./issuer-jwks.json

The server offers these tools (see ``docs/mcp.md``):

============================  ============================================================
``memory_remember``           write: an ``untrusted`` memory, quarantined in this session
``memory_recall``             read: the escaped ``<memory-data>`` block of ``context()``, and
                              the same memories, with scores, as structured content
``memory_forget``             destructive: files a request the person approves; erases nothing
``memory_learn``              write: ``learn()`` of a passage or turns, each fact ``untrusted``
``memory_list``               read: a page of ``list()``, as a block and structured content
``memory_revise``             write: the next version of a memory quarantined in this session
``memory_working_set``        write: one working-memory value of this session (an upsert)
``memory_working_get``        read: one working-memory value
``memory_working_list``       read: every working-memory value this session sees
``memory_working_delete``     destructive: one working-memory value of this session
============================  ============================================================

``--tool-names dotted`` offers them as ``memory.remember``, ``memory.working.set``, … (each
underscore a dot), the specification's spelling, for hosts that want it (ADR 0089).

Over stdio the tenant, the person, the agent and the session are the server's configuration;
over HTTP they come from each request's verified bearer token (ADR 0091). Either way no tool
has an argument that names them, and a call with an argument its tool does not declare is
refused. Without ``--session`` (stdio) each server process makes up its own session
(``mcp-<16 hex digits>``); over HTTP, without a session claim, each MCP session gets its own.

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
    LIST,
    RECALL,
    REMEMBER,
    REVISE,
    TOOL_NAME_STYLES,
    WORKING_DELETE,
    WORKING_GET,
    WORKING_LIST,
    WORKING_SET,
    ToolNameStyle,
    tool_name,
)
from mainsdk_memory._memory import Memory
from mainsdk_memory._tokens import (
    DEFAULT_ALGORITHMS,
    DEFAULT_LEEWAY,
    ClaimNames,
    Claims,
    TokenSettings,
    TokenVerifier,
)
from mainsdk_memory.audit import AuditSink, JsonlFileSink
from mainsdk_memory.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.applications import Starlette

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_SERVER_NAME",
    "EMBEDDERS",
    "FORGET",
    "LEARN",
    "LIST",
    "RECALL",
    "REMEMBER",
    "REVISE",
    "TOOL_NAME_STYLES",
    "WORKING_DELETE",
    "WORKING_GET",
    "WORKING_LIST",
    "WORKING_SET",
    "ClaimNames",
    "Claims",
    "ServerConfig",
    "TokenSettings",
    "TokenVerifier",
    "ToolNameStyle",
    "add_arguments",
    "build_http_app",
    "build_server",
    "main",
    "run_from_args",
    "serve",
    "tool_name",
]

DEFAULT_SERVER_NAME = "mainsdk-memory"
"""The server's name, and the ``id`` of ``Source.mcp(...)`` on what it writes."""
DEFAULT_PORT = 8765
"""The port ``memory mcp --transport http`` listens on unless told otherwise."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``memory mcp`` is started with: where the memory is, and whom it serves.

    Over ``stdio`` (the default), ``tenant``, ``person`` and ``agent`` decide whose memory the
    tools reach; they are configuration, never tool arguments, and ``session`` defaults to a
    new one per server process. Over ``http`` they must be ``None``: each request's bearer
    token names them, checked against ``tokens``; the server listens on ``host``:``port``.
    ``name`` is the server's name and the id of the ``Source.mcp`` of every memory it writes;
    ``tool_names`` is ``"underscore"`` (``memory_remember``) or ``"dotted"``
    (``memory.remember``). ``audit`` appends the audit events (ids only) to a JSON Lines file.
    ``embedder`` is ``None`` (BM25 recall), ``"hashing"``
    (:class:`~mainsdk_memory.embeddings.HashingEmbedder`, no model) or ``"minilm"``
    (:class:`~mainsdk_memory.embeddings.MiniLMEmbedder`, the ``embeddings`` extra): with one,
    recall is hybrid.
    """

    store: str
    keys: Path
    app: str
    tenant: str | None = None
    person: str | None = None
    agent: str | None = None
    session: str | None = None
    name: str = DEFAULT_SERVER_NAME
    audit: Path | None = None
    embedder: Literal["hashing", "minilm"] | None = None
    tool_names: ToolNameStyle = "underscore"
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tokens: TokenSettings | None = None


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
        missing = None if exc.name is None else exc.name.split(".")[0]
        if missing in {"mcp", "mcp_types", "anyio", "starlette"}:
            raise ConfigurationError(hint) from exc
        raise
    return _mcp


def _checked_style(tool_names: object) -> ToolNameStyle:
    if tool_names == "underscore":
        return "underscore"
    if tool_names == "dotted":
        return "dotted"
    raise ConfigurationError("tool_names is 'underscore' (memory_remember) or 'dotted'.")


def build_server(
    memory: Memory,
    *,
    tenant: str,
    person: str,
    agent: str,
    session: str | None = None,
    name: str = DEFAULT_SERVER_NAME,
    tool_names: ToolNameStyle = "underscore",
) -> Server[Any]:
    """An MCP server (``mcp.server.lowlevel.Server``) offering the memory tools.

    Every call acts as ``agent`` for ``person`` in ``tenant`` and ``session`` (default: a
    new ``mcp-…`` session for this server). ``tool_names="dotted"`` names the tools
    ``memory.remember``, … instead of ``memory_remember``, …. Run it over any transport the
    SDK offers; the ``memory mcp`` command runs it over stdio. The names are checked here,
    so a wrong one fails before the server answers anything.
    """
    with _tenant.use(tenant):  # checks the tenant id
        pass
    person = validate.person(person)
    agent = validate.name(agent, "agent")
    session = None if session is None else validate.name(session, "session")
    name = validate.name(name, "The server name")
    style = _checked_style(tool_names)
    impl = _implementation()
    scope = impl.McpScope(
        tenant=tenant,
        person=person,
        agent=agent,
        session=impl.new_session_name() if session is None else session,
    )
    server: Server[Any] = impl.build_server(
        memory, scope_of=impl.fixed_scope(scope), server_name=name, tool_names=style
    )
    return server


def build_http_app(
    memory: Memory,
    *,
    tokens: TokenSettings | TokenVerifier,
    name: str = DEFAULT_SERVER_NAME,
    tool_names: ToolNameStyle = "underscore",
    host: str = "127.0.0.1",
    path: str = "/mcp",
) -> Starlette:
    """The memory tools over streamable HTTP at ``path``: an ASGI app (Starlette) to run
    with uvicorn, as ``memory mcp --transport http`` does.

    Every request must carry ``Authorization: Bearer <JWT>`` that ``tokens`` verifies
    (:class:`TokenSettings`, or a :class:`TokenVerifier` built from them); any other is
    answered ``401`` with ``WWW-Authenticate: Bearer`` and reaches nothing. Each tool call
    acts as the tenant, person and agent the request's token names (``tokens.claims``), in
    the session its session claim names or, without one, a new session per MCP session.
    ``host`` is where it will listen: on a loopback address the MCP SDK's DNS-rebinding
    protection is on.
    """
    name = validate.name(name, "The server name")
    style = _checked_style(tool_names)
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigurationError("The HTTP path starts with '/', e.g. /mcp.")
    verifier = tokens if isinstance(tokens, TokenVerifier) else TokenVerifier(tokens)
    impl = _implementation()
    app: Starlette = impl.build_http_app(
        memory, verifier, server_name=name, tool_names=style, host=host, path=path
    )
    return app


def _check_transport(config: ServerConfig) -> None:
    if config.transport == "stdio":
        missing = [
            option
            for option, value in (
                ("--tenant", config.tenant), ("--person", config.person), ("--agent", config.agent)
            )
            if value is None
        ]
        if missing:
            raise ConfigurationError(
                "Over stdio the server serves one person: give " + ", ".join(missing) + "."
            )
        if config.tokens is not None:
            raise ConfigurationError("Bearer tokens are for --transport http only.")
    elif config.transport == "http":
        given = [
            option
            for option, value in (
                ("--tenant", config.tenant), ("--person", config.person),
                ("--agent", config.agent), ("--session", config.session),
            )
            if value is not None
        ]
        if given:
            raise ConfigurationError(
                "Over HTTP each request's bearer token names the tenant, person, agent and "
                "session: drop " + ", ".join(given) + " (see --claim-tenant and the other "
                "--claim-… options)."
            )
        if config.tokens is None:
            raise ConfigurationError(
                "--transport http needs bearer tokens: give --token-issuer, "
                "--token-audience and --token-jwks (or --token-jwks-url)."
            )
        if isinstance(config.port, bool) or not isinstance(config.port, int) or not (
            0 < config.port < 65536
        ):
            raise ConfigurationError("--port is a TCP port, 1 to 65535.")
    else:
        raise ConfigurationError("The transport is 'stdio' or 'http'.")


def serve(config: ServerConfig) -> None:
    """Open the store, then serve the tools: over stdin and stdout until stdin closes, or over
    HTTP until the process is stopped.

    Configuration errors (a missing key store, a bad name, an unknown driver, a bad token
    setting) raise before anything is read from stdin or the port is opened.
    """
    _check_transport(config)
    verifier = None if config.tokens is None else TokenVerifier(config.tokens)
    audit: AuditSink | None = None if config.audit is None else JsonlFileSink(config.audit)
    if config.embedder is not None and config.embedder not in EMBEDDERS:
        raise ConfigurationError(f"embedder is one of {sorted(EMBEDDERS)}, or None.")
    embedder = None if config.embedder is None else EMBEDDERS[config.embedder]()
    with Memory.open(
        config.store, keys=config.keys, app=config.app, audit=audit, embedder=embedder
    ) as memory:
        if verifier is not None:
            app = build_http_app(
                memory,
                tokens=verifier,
                name=config.name,
                tool_names=config.tool_names,
                host=config.host,
            )
            _implementation().run_http(app, host=config.host, port=config.port)
            return
        # _check_transport checked them
        assert config.tenant is not None  # noqa: S101
        assert config.person is not None  # noqa: S101
        assert config.agent is not None  # noqa: S101
        server = build_server(
            memory,
            tenant=config.tenant,
            person=config.person,
            agent=config.agent,
            session=config.session,
            name=config.name,
            tool_names=config.tool_names,
        )
        _implementation().run_stdio(server)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``memory mcp`` to ``parser``."""
    parser.add_argument("--store", required=True, help="the memory store URL, e.g. local:PATH")
    parser.add_argument("--keys", required=True, type=Path, help="the key store folder")
    parser.add_argument("--app", required=True, help="the app name")
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default: one person, named by the options below) or http (streamable "
        "HTTP: each request's bearer token names the person)",
    )
    scope = parser.add_argument_group("stdio: whom the server serves")
    scope.add_argument("--tenant", help="the tenant whose memory is served")
    scope.add_argument("--person", help="the person the agent acts for")
    scope.add_argument("--agent", help="the agent name the tools write as")
    scope.add_argument(
        "--session", help="the session name (default: a new mcp-… session per process)"
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_SERVER_NAME,
        help=f"the server's name, recorded as Source.mcp(NAME) (default: {DEFAULT_SERVER_NAME})",
    )
    parser.add_argument(
        "--tool-names",
        choices=list(TOOL_NAME_STYLES),
        default="underscore",
        help="underscore (default: memory_remember, …) or dotted (memory.remember, …)",
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
    http = parser.add_argument_group("http: where to listen, and the bearer tokens")
    http.add_argument("--host", default="127.0.0.1", help="the address (default: 127.0.0.1)")
    http.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default: {DEFAULT_PORT})"
    )
    add_token_arguments(
        http, session_help="the claim naming the session (default: none; a new session per MCP "
        "session)"
    )


def add_token_arguments(group: Any, *, session_help: str) -> None:
    """Add the bearer-token options (``--token-…``, ``--claim-…``) to ``group`` (a parser or
    an argument group); :func:`_token_settings` reads them back. Shared by ``memory mcp``
    and ``memory serve``."""
    group.add_argument("--token-issuer", help="the issuer every token must name (iss)")
    group.add_argument("--token-audience", help="the audience every token must name (aud)")
    group.add_argument("--token-jwks", type=Path, help="the issuer's public keys, a JWKS file")
    group.add_argument(
        "--token-jwks-url",
        help="fetch the issuer's public keys from this https:// URL (only when given)",
    )
    group.add_argument(
        "--token-algorithms",
        default=",".join(DEFAULT_ALGORITHMS),
        help=f"the accepted algorithms, comma-separated (default: {','.join(DEFAULT_ALGORITHMS)}"
        "; HS256 only with --token-secret-file; never none)",
    )
    group.add_argument(
        "--token-secret-file",
        type=Path,
        help="the HS256 shared secret, read from this file (with HS256 in --token-algorithms)",
    )
    group.add_argument(
        "--token-leeway",
        type=float,
        default=DEFAULT_LEEWAY,
        help=f"seconds of clock skew allowed on exp and nbf (default: {DEFAULT_LEEWAY:g})",
    )
    defaults = ClaimNames()
    group.add_argument("--claim-tenant", default=defaults.tenant,
                       help=f"the claim naming the tenant (default: {defaults.tenant})")
    group.add_argument("--claim-person", default=defaults.person,
                       help=f"the claim naming the person (default: {defaults.person})")
    group.add_argument("--claim-agent", default=defaults.agent,
                       help=f"the claim naming the agent (default: {defaults.agent})")
    group.add_argument(
        "--claim-session",
        help=session_help,
    )


def _token_settings(args: argparse.Namespace) -> TokenSettings | None:
    """The token settings the options give, or ``None`` when no token option is given."""
    given = [
        args.token_issuer, args.token_audience, args.token_jwks, args.token_jwks_url,
        args.token_secret_file,
    ]
    if all(value is None for value in given):
        return None
    if args.token_issuer is None or args.token_audience is None:
        raise ConfigurationError("Give both --token-issuer and --token-audience.")
    secret = None
    if args.token_secret_file is not None:
        try:
            secret = Path(args.token_secret_file).read_bytes().strip()
        except OSError:
            raise ConfigurationError("The --token-secret-file cannot be read.") from None
    algorithms = tuple(part.strip() for part in args.token_algorithms.split(",") if part.strip())
    return TokenSettings(
        issuer=args.token_issuer,
        audience=args.token_audience,
        algorithms=algorithms,
        jwks_file=args.token_jwks,
        jwks_url=args.token_jwks_url,
        secret=secret,
        leeway=args.token_leeway,
        claims=ClaimNames(
            tenant=args.claim_tenant,
            person=args.claim_person,
            agent=args.claim_agent,
            session=args.claim_session,
        ),
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
        tool_names=args.tool_names,
        transport=args.transport,
        host=args.host,
        port=args.port,
        tokens=_token_settings(args),
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
        description="Serve memory as MCP tools over stdio or streamable HTTP.",
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
