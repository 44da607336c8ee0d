"""The ``memory serve`` command: the HTTP service (``mainsdk_memory.service``) under uvicorn.

The token options (``--token-…``, ``--claim-…``) are ``memory mcp``'s
(:func:`mainsdk_memory.mcp_server.add_token_arguments`), with ``--claim-role`` added. FastAPI
and uvicorn are imported only when the command runs (the ``server`` extra).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mainsdk_memory._cli_common import store_arguments
from mainsdk_memory._errors import ConfigurationError, MemorySDKError
from mainsdk_memory._records import AgentLimits
from mainsdk_memory.mcp_server import EMBEDDERS, _token_settings, add_token_arguments

__all__ = ["add_serve_arguments", "add_serve_command", "main", "run_serve"]

_DEFAULT_PORT = 8080  # mainsdk_memory.service.DEFAULT_PORT, without importing it here
_DEFAULT_MAX_BODY = 4 * 1024 * 1024


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``memory serve`` to ``parser``."""
    store_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=_DEFAULT_PORT,
                        help=f"the port (default: {_DEFAULT_PORT})")
    parser.add_argument(
        "--audit", type=Path, help="append audit events (ids only) to this JSON Lines file"
    )
    parser.add_argument(
        "--embedder", choices=sorted(EMBEDDERS),
        help="embed memories for hybrid recall: hashing (no model) or minilm; default: the "
        "store's default embedder",
    )
    parser.add_argument("--max-body-bytes", type=int, default=_DEFAULT_MAX_BODY,
                        help=f"the largest request body read (default: {_DEFAULT_MAX_BODY})")
    parser.add_argument("--workers", type=int, default=4,
                        help="memory calls run at once, in threads (default: 4)")
    parser.add_argument("--writes-per-minute", type=int,
                        help="every agent's default write limit (default: none)")
    parser.add_argument("--memories-per-person", type=int,
                        help="every agent's default memories per person (default: none)")
    proxy = parser.add_argument_group("behind a reverse proxy")
    proxy.add_argument("--proxy-headers", action="store_true",
                       help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips")
    proxy.add_argument("--forwarded-allow-ips", default=None,
                       help="the proxy's addresses, comma-separated (default: 127.0.0.1)")
    tokens = parser.add_argument_group("bearer tokens (required)")
    add_token_arguments(
        tokens, session_help="the claim naming the session (default: none; no session)"
    )
    tokens.add_argument("--claim-role", default="role",
                        help="the claim naming the role: agent, person or admin (default: role)")


def run_serve(args: argparse.Namespace) -> int:
    """Run ``memory serve`` with parsed arguments; the exit status."""
    tokens = _token_settings(args)
    if tokens is None:
        raise ConfigurationError(
            "memory serve needs bearer tokens: give --token-issuer, --token-audience and "
            "--token-jwks (or --token-jwks-url)."
        )
    tokens = dataclasses.replace(
        tokens, claims=dataclasses.replace(tokens.claims, role=args.claim_role)
    )
    if isinstance(args.port, bool) or not 0 < args.port < 65536:
        raise ConfigurationError("--port is a TCP port, 1 to 65535.")
    from mainsdk_memory import service
    from mainsdk_memory._memory import Memory
    from mainsdk_memory.audit import JsonlFileSink

    settings = service.ServiceSettings(
        tokens=service.TokenVerifier(tokens),  # checked before the store is opened
        max_body_bytes=args.max_body_bytes,
        max_workers=args.workers,
    )
    options: dict[str, Any] = {}
    if args.audit is not None:
        options["audit"] = JsonlFileSink(args.audit)
    if args.embedder is not None:
        options["embedder"] = EMBEDDERS[args.embedder]()
    if args.writes_per_minute is not None or args.memories_per_person is not None:
        try:
            options["limits"] = AgentLimits(
                writes_per_minute=args.writes_per_minute,
                memories_per_person=args.memories_per_person,
            )
        except ValueError:
            raise ConfigurationError(
                "--writes-per-minute and --memories-per-person are positive whole numbers."
            ) from None
    with Memory.open(args.store, keys=args.keys, app=args.app, **options) as memory:
        app = service.build_app(memory, settings)
        try:
            service.run(
                app, host=args.host, port=args.port, proxy_headers=args.proxy_headers,
                forwarded_allow_ips=args.forwarded_allow_ips,
            )
        except KeyboardInterrupt:
            return 130
    return 0


def add_serve_command(commands: Any) -> None:
    """Register ``serve`` on ``memory``."""
    parser = commands.add_parser(
        "serve", help="serve memory over HTTP (REST, bearer tokens; the 'server' extra)"
    )
    add_serve_arguments(parser)
    parser.set_defaults(run=run_serve)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mainsdk_memory._cli_serve`` (the options of ``memory serve``)."""
    parser = argparse.ArgumentParser(
        prog="memory serve", description="Serve memory over HTTP with bearer tokens."
    )
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_serve(args)
    except MemorySDKError as exc:
        print(f"memory serve: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
