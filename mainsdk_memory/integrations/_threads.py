"""Running a handle's blocking calls off the event loop, in the tenant an adapter was made in.

The frameworks call their memory from async code, and every handle call does I/O (the
driver, the key store, the audit log), so an adapter runs each one in a worker thread
(:func:`asyncio.to_thread`, in a copy of the caller's context). A ``tenant.use(...)`` block
belongs to the frames that entered it (see :mod:`mainsdk_memory.tenant`), so the adapter does
not rely on the worker seeing its caller's: it captures the tenant when it is made, as
``tenant.bind`` does, and enters it again around each call in the worker.

A call made under another tenant is refused (:class:`TenantMismatchError`): an adapter kept
in a cache and handed to another tenant's request must not act in the tenant it was made in,
and its handle would refuse that call anyway. A call made with no tenant runs in the
captured one: the framework may call back from a thread or a task that never entered
``tenant.use(...)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from mainsdk_memory import tenant
from mainsdk_memory._errors import NoTenantError, TenantMismatchError

__all__ = ["TenantPin"]

_T = TypeVar("_T")

_ANOTHER_TENANT = (
    "This adapter was made under another tenant than the current one, so it refuses to act "
    "here. Make the adapter (and its handle) inside the tenant you mean to use."
)


class TenantPin:
    """The tenant an adapter was made in (:func:`tenant.current` at construction), and how
    its blocking calls run: in a worker thread, inside that tenant."""

    __slots__ = ("tenant_id",)

    def __init__(self) -> None:
        self.tenant_id = tenant.current()  # NoTenantError outside tenant.use(...)

    def check(self) -> str:
        """The tenant a call runs in: the captured one, unless another is current."""
        try:
            current = tenant.current()
        except NoTenantError:
            return self.tenant_id
        if current != self.tenant_id:
            raise TenantMismatchError(_ANOTHER_TENANT)
        return current

    async def run(self, call: Callable[[], _T], *, settle: bool = False) -> _T:
        """Run ``call`` in a worker thread inside ``tenant.use(<the captured tenant>)``.

        The tenant is checked here, in the caller's task, before the thread starts. With
        ``settle`` (a write), a cancelled caller still waits for the thread to finish before
        the cancellation is raised, as the Agents SDK's own sessions do: when the caller sees
        ``CancelledError`` the write is done or was never started, not still running.
        """
        tenant_id = self.check()

        def in_tenant() -> _T:
            with tenant.use(tenant_id):
                return call()

        work = asyncio.ensure_future(asyncio.to_thread(in_tenant))
        if not settle:
            return await work
        cancelled: asyncio.CancelledError | None = None
        while not work.done():
            try:
                await asyncio.wait({work})
            except asyncio.CancelledError as cancellation:
                cancelled = cancelled or cancellation
        if cancelled is not None:
            raise cancelled
        return work.result()
