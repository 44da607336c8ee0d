"""The HTTP service: :func:`build_app` serves a Memory over REST, callers named by bearer tokens.

::

    pip install 'mainsdk-memory[server]'
    memory serve --store local:./memories --keys ./keys --app support \\
        --token-issuer https://id.example.com --token-audience memory \\
        --token-jwks ./issuer-jwks.json

Every ``/v1/`` route needs ``Authorization: Bearer <JWT>`` that the configured issuer signed
for the configured audience (:class:`~mainsdk_memory._tokens.TokenSettings`). The tenant,
the person (``sub``), the agent and the role (``agent``, ``person`` or ``admin``) come from
that token only, never from a body, a query or a header; a route refuses a token of another
role with ``403``. Errors are RFC 9457 problem details without memory content; the access
log (logger ``mainsdk_memory.service``) holds ids only. docs/service.md lists the routes;
ADR 0093 says why they are as they are.

This module imports FastAPI only when :func:`build_app` runs, so ``import mainsdk_memory``
and ``memory --help`` work without the ``server`` extra.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mainsdk_memory._errors import ConfigurationError
from mainsdk_memory._memory import Memory
from mainsdk_memory._tokens import ROLES, Principal, Role, TokenSettings, TokenVerifier

if TYPE_CHECKING:
    from mainsdk_memory._service_edge import Edge

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_WORKERS",
    "DEFAULT_PORT",
    "ROLES",
    "Principal",
    "Role",
    "ServiceSettings",
    "TokenSettings",
    "TokenVerifier",
    "build_app",
    "run",
]

DEFAULT_PORT = 8080
"""The port ``memory serve`` listens on unless told otherwise."""
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body read (4 MiB); a larger one is answered ``413``."""
DEFAULT_MAX_WORKERS = 4
"""Worker threads the memory calls run in (as :class:`~mainsdk_memory.AsyncMemory`'s)."""
_HINT = "The HTTP service needs FastAPI and uvicorn: pip install 'mainsdk-memory[server]'."


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """How the service checks tokens and bounds requests.

    ``tokens`` (or a :class:`TokenVerifier` built from them) says which bearer tokens are
    accepted and which claims name the tenant, person, agent, session and role
    (``tokens.claims``). ``max_body_bytes`` caps a request body; ``max_workers`` is how many
    memory calls run at once (the rest wait, off the event loop).
    """

    tokens: TokenSettings | TokenVerifier
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_workers: int = DEFAULT_MAX_WORKERS
    title: str = "mainsdk-memory"


def _implementation() -> Any:
    for name in ("fastapi", "uvicorn"):
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise ConfigurationError(_HINT)
    from mainsdk_memory import _service

    return _service


def _checked(settings: ServiceSettings) -> TokenVerifier:
    if not isinstance(settings, ServiceSettings):
        raise ConfigurationError("build_app takes ServiceSettings(tokens=...).")
    size = settings.max_body_bytes
    if isinstance(size, bool) or not isinstance(size, int) or size < 1024:
        raise ConfigurationError("max_body_bytes is a whole number of bytes, at least 1024.")
    workers = settings.max_workers
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
        raise ConfigurationError("max_workers is a whole number of threads, 1 to 64.")
    tokens = settings.tokens
    verifier = tokens if isinstance(tokens, TokenVerifier) else TokenVerifier(tokens)
    names = verifier.settings.claims
    chosen = [names.tenant, names.person, names.agent, names.role]
    if names.session is not None:
        chosen.append(names.session)
    if not isinstance(names.role, str) or not names.role or len(set(chosen)) != len(chosen):
        raise ConfigurationError(
            "The role claim is a non-empty claim name other than the tenant, person, agent "
            "and session claims."
        )
    return verifier


def build_app(memory: Memory, settings: ServiceSettings) -> Edge:
    """The HTTP service over ``memory``: an ASGI app to run with uvicorn (see :func:`run`).

    The FastAPI app is inside an outer layer that verifies each ``/v1/`` request's token,
    caps the body and writes the access log; ``app.app`` is the FastAPI app
    (``app.app.openapi()`` is the document served at ``/openapi.json``). The caller keeps
    ``memory`` open while the app serves, and closes it after.
    """
    if not isinstance(memory, Memory):
        raise ConfigurationError("build_app serves a Memory: build_app(Memory.open(...), ...).")
    verifier = _checked(settings)
    from mainsdk_memory import __version__

    edge: Edge = _implementation().build(
        memory,
        verifier,
        max_workers=settings.max_workers,
        max_body_bytes=settings.max_body_bytes,
        title=settings.title,
        version=__version__,
    )
    return edge


def run(
    app: Edge,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    proxy_headers: bool = False,
    forwarded_allow_ips: str | None = None,
    timeout_keep_alive: int = 5,
) -> None:
    """Serve ``app`` with uvicorn on ``host``:``port`` until the process is stopped.

    uvicorn's own access log is off (it prints raw paths); the service's JSON lines
    (``mainsdk_memory.service``) and this package's other logs go to stderr, INFO and up.
    ``proxy_headers`` trusts ``X-Forwarded-For``/``-Proto`` from ``forwarded_allow_ips``
    only (a reverse proxy's address; docs/service.md).
    """
    import copy

    import uvicorn
    import uvicorn.config

    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["formatters"]["json_lines"] = {"format": "%(message)s"}
    log_config["handlers"]["json_lines"] = {
        "formatter": "json_lines", "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    log_config["loggers"]["mainsdk_memory"] = {
        "handlers": ["default"], "level": "INFO", "propagate": False,
    }
    log_config["loggers"]["mainsdk_memory.service"] = {
        "handlers": ["json_lines"], "level": "INFO", "propagate": False,
    }
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        server_header=False,
        access_log=False,
        proxy_headers=proxy_headers,
        forwarded_allow_ips=forwarded_allow_ips,
        timeout_keep_alive=timeout_keep_alive,
        timeout_graceful_shutdown=5,
        log_level="info",
        log_config=log_config,
    )
    uvicorn.Server(config).run()
