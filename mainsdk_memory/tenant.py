"""The current tenant: set with ``tenant.use(...)``, read with ``tenant.current()``.

The tenant is never a parameter of a memory call. It lives in a :class:`contextvars.ContextVar`,
so each thread and each asyncio task sees its own tenant, and a task started inside
``tenant.use(...)`` inherits it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mainsdk_memory._errors import InvalidInputError, NoTenantError

__all__ = ["current", "use"]

# Tenant ids name folders and database rows, so they are kept to a safe alphabet.
_TENANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_current: ContextVar[str | None] = ContextVar("mainsdk_memory_tenant", default=None)


def _check(tenant_id: object) -> str:
    if not isinstance(tenant_id, str) or not _TENANT_ID.fullmatch(tenant_id):
        raise InvalidInputError(
            "A tenant id is 1 to 128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return tenant_id


@contextmanager
def use(tenant_id: str) -> Iterator[str]:
    """Run the enclosed calls as ``tenant_id``; the previous tenant comes back on exit."""
    token = _current.set(_check(tenant_id))
    try:
        yield tenant_id
    finally:
        _current.reset(token)


def current() -> str:
    """Return the current tenant id, or raise :class:`NoTenantError` outside ``use(...)``."""
    tenant_id = _current.get()
    if tenant_id is None:
        raise NoTenantError
    return tenant_id
