"""What memory-check knows about the code it reads: our API's names and a few libraries' shapes.

Every name here is a fully qualified name as the import table resolves it (``import requests``
then ``requests.get(...)`` is ``requests.get``). Names inside ``mainsdk_memory`` are
canonical: private module segments are dropped, so ``mainsdk_memory._memory.Memory`` is
``mainsdk_memory.Memory``.
"""

from __future__ import annotations

__all__ = [
    "CAPABILITIES_NAMES",
    "HTTP_CLIENT_CLASSES",
    "HTTP_CLIENT_METHODS",
    "HTTP_FUNCTIONS",
    "KEYSTORE",
    "LOGGER_FACTORIES",
    "LOGGER_OBJECTS",
    "LOG_FUNCTIONS",
    "LOG_METHODS",
    "MCP_METHODS",
    "MEMORY",
    "MEMORY_OPEN",
    "NON_CONTENT_ATTRIBUTES",
    "NON_TEXT_BUILTINS",
    "OPEN_DRIVER",
    "PERSON_MEMORY",
    "RECALL_METHODS",
    "RECEIPT_METHODS",
    "SCOPED_MEMORY",
    "SCOPED_METHODS",
    "SOURCE",
    "STORE_HANDLE_METHODS",
    "TENANT_USE",
    "TOOL_DECORATORS",
    "TOOL_RUN_METHODS",
    "TRUSTED_SOURCES",
    "UNTRUSTED_SOURCES",
    "canonical",
]

PACKAGE = "mainsdk_memory"

MEMORY = "mainsdk_memory.Memory"
MEMORY_OPEN = "mainsdk_memory.Memory.open"
SCOPED_MEMORY = "mainsdk_memory.ScopedMemory"
PERSON_MEMORY = "mainsdk_memory.PersonMemory"
STORE_HANDLE_METHODS = frozenset({"acting_for", "person"})
"""Store methods that make a handle; they read ``tenant.current()``."""
RECEIPT_METHODS = frozenset({"forget", "approve"})
"""Person-handle methods whose result is a signed receipt (an agent's forget is a request)."""
SOURCE = "mainsdk_memory.Source"
TENANT_USE = "mainsdk_memory.tenant.use"
KEYSTORE = "mainsdk_memory.keys.KeyStore"
OPEN_DRIVER = "mainsdk_memory.drivers.open_driver"
CAPABILITIES_NAMES = frozenset(
    {"mainsdk_memory.Capabilities", "mainsdk_memory.drivers.Capabilities"}
)

RECALL_METHODS = frozenset({"recall", "context", "search", "get", "history", "list"})
"""Handle methods whose result carries stored memory text back to the caller."""

SCOPED_METHODS = frozenset(
    {"remember", "recall", "context", "search", "get", "list", "history", "revise", "pin",
     "unpin", "feedback", "forget", "confirm", "pending", "approve", "reject"}
)
"""Handle methods that read ``tenant.current()`` and raise ``NoTenantError`` outside a tenant."""

UNTRUSTED_SOURCES = frozenset({"tool", "mcp", "web", "import_"})
TRUSTED_SOURCES = frozenset({"person", "agent", "model"})

_HTTP_VERBS = ("get", "post", "put", "patch", "delete", "head", "options", "request", "stream")
HTTP_FUNCTIONS = frozenset(
    [f"requests.{verb}" for verb in _HTTP_VERBS]
    + [f"httpx.{verb}" for verb in _HTTP_VERBS]
    + ["urllib.request.urlopen", "urllib3.request", "aiohttp.request"]
)
"""Module-level functions whose result is a web response."""

HTTP_CLIENT_CLASSES = frozenset(
    {"requests.Session", "requests.session", "httpx.Client", "httpx.AsyncClient",
     "aiohttp.ClientSession", "urllib3.PoolManager"}
)
HTTP_CLIENT_METHODS = frozenset({*_HTTP_VERBS, "send", "urlopen"})

MCP_METHODS = frozenset({"call_tool", "read_resource", "get_prompt"})
"""Methods of an MCP client session whose result is text a server chose (any receiver)."""

TOOL_DECORATORS = frozenset({"tool", "function_tool"})
"""Decorators that make a function an agent tool (LangChain ``@tool``, OpenAI Agents
``@function_tool``, MCP servers' ``@mcp.tool()``): what it returns is tool output."""
TOOL_RUN_METHODS = frozenset({"invoke", "ainvoke", "run", "arun", "on_invoke_tool"})

LOGGER_FACTORIES = frozenset({"logging.getLogger", "structlog.get_logger", "structlog.getLogger"})
LOGGER_OBJECTS = frozenset({"loguru.logger"})
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log", "msg",
     "success", "trace"}
)
LOG_FUNCTIONS = frozenset(
    [f"logging.{name}" for name in ("debug", "info", "warning", "warn", "error", "exception",
                                    "critical", "fatal", "log")]
    + ["warnings.warn"]
)

NON_CONTENT_ATTRIBUTES = frozenset(
    {"id", "version", "version_id", "version_ids", "memory_id", "score", "kind", "trust",
     "pinned", "session_only", "valid_from", "valid_to", "recorded_at", "created_at",
     "is_current", "next_cursor", "labels", "token"}
)
"""Attributes of records, hits, pages and receipts that hold ids and metadata, not memory text."""

NON_TEXT_BUILTINS = frozenset(
    {"len", "bool", "int", "float", "complex", "isinstance", "issubclass", "hasattr", "id",
     "hash", "type", "callable", "print", "any", "all", "range", "abs", "round", "ord",
     "divmod", "setattr", "delattr"}
)
"""Calls whose result carries no text of their arguments, so taint stops there."""


def canonical(qualified: str) -> str:
    """Drop private module segments inside ``mainsdk_memory``: ``mainsdk_memory._memory.Memory``
    is ``mainsdk_memory.Memory``, so a name imported from an implementation module is known."""
    if not qualified.startswith(PACKAGE + "."):
        return qualified
    parts = qualified.split(".")
    kept = [parts[0]] + [p for p in parts[1:-1] if not p.startswith("_")] + [parts[-1]]
    return ".".join(kept)
