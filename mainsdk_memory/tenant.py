"""The current tenant: set with ``tenant.use(...)``, read with ``current()``, carried by ``bind``.

The tenant is never a parameter of a memory call. It lives in a :class:`contextvars.ContextVar`,
so each thread and each asyncio task sees its own tenant, and a task started inside
``tenant.use(...)`` inherits it. Threads and executors do not inherit it:
``executor.submit(tenant.bind(fn), ...)`` carries the current tenant into the other thread.

A context variable alone leaks through generators, which run in their caller's context: a
generator that yields inside ``use(...)`` would change its caller's tenant between yields,
and closing it late would set a tenant again after every block had ended (ADR 0028). So the
variable holds the open blocks, each with the frame it belongs to, and the rules are:

* a block whose frame is running (on the reader's stack) is seen, innermost first;
* a block of a suspended generator is *lent*: the code it yields to sees it only when that
  code has no tenant of its own (how a pytest fixture sets the tenant of its test), never
  in place of one; and not at all once the block around it has ended;
* leaving a block only ever removes it: a late ``finally`` never sets a tenant.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import ParamSpec, TypeVar

from mainsdk_memory._errors import InvalidInputError, NoTenantError

__all__ = ["bind", "current", "use"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Tenant ids name folders and database rows, so they are kept to a safe alphabet.
_TENANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_GENERATOR = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR

_HIDDEN = (
    "No tenant is set for this call. The only tenant.use(...) blocks in this context belong "
    "to generators that are suspended, closed, or outlived by the block they ran in, and a "
    "generator's tenant never replaces or outlives its caller's. Wrap this call in its own "
    "`with tenant.use(tenant_id):`."
)
_AMBIGUOUS = (
    "No tenant is set for this call: it has no tenant.use(...) block of its own, and the "
    "suspended generators it drives hold blocks of different tenants, so none is picked. "
    "Wrap this call in its own `with tenant.use(tenant_id):`."
)


@dataclass(eq=False)
class _Block:
    """One entered ``use(...)``: its tenant, the frame it belongs to, and whether it ended."""

    tenant: str
    frame: FrameType | None  # the frame the block belongs to; cleared when it ends
    lent: bool  # the frame is a generator's: its tenant is lent to the code it yields to
    open: bool = True
    stray: bool = False  # ended from a context that did not hold it: seen nowhere again


# The open blocks of this context, oldest first, each with its "orphaned" flag: a block that
# outlived an older block it was entered inside (a generator suspended when its caller's block
# ended) is seen only by its own running frame.
_Chain = tuple[tuple[_Block, bool], ...]
_blocks: ContextVar[_Chain] = ContextVar("mainsdk_memory_tenant", default=())


def _check(tenant_id: object) -> str:
    if not isinstance(tenant_id, str) or not _TENANT_ID.fullmatch(tenant_id):
        raise InvalidInputError(
            "A tenant id is 1 to 128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return tenant_id


def _in_contextlib(frame: FrameType) -> bool:
    return frame.f_globals.get("__name__") == "contextlib"


def _is_generator(frame: FrameType) -> bool:
    return bool(frame.f_code.co_flags & _GENERATOR)


def _owner(frame: FrameType | None) -> FrameType | None:
    """The frame a block entered from ``frame`` belongs to.

    ``ExitStack`` and ``@contextmanager`` frames are passed over: a ``@contextmanager``
    generator that enters ``use(...)`` lends its block to the ``with`` statement that
    entered it, which is where the caller meant the tenant to hold.
    """
    while frame is not None:
        driven = _is_generator(frame) and frame.f_back is not None and _in_contextlib(frame.f_back)
        if not (driven or _in_contextlib(frame)):
            return frame
        frame = frame.f_back
    return None


def _running(frame: FrameType | None) -> set[int]:
    """The ids of ``frame`` and every frame that called it: what is running right now."""
    ids = set()
    while frame is not None:
        ids.add(id(frame))
        frame = frame.f_back
    return ids


class _Use(AbstractContextManager[str]):
    """The context manager :func:`use` returns; one block at a time."""

    def __init__(self, tenant_id: str) -> None:
        self._tenant = _check(tenant_id)
        self._block: _Block | None = None

    def __enter__(self) -> str:
        if self._block is not None:
            raise InvalidInputError(
                "This tenant.use(...) is already entered; call tenant.use(tenant_id) again "
                "for another block."
            )
        here = inspect.currentframe()  # this method; its caller holds the `with`
        frame = _owner(here.f_back if here is not None else None)
        lent = frame is not None and _is_generator(frame)
        self._block = _Block(self._tenant, frame, lent)
        _blocks.set((*_blocks.get(), (self._block, False)))
        return self._tenant

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        block, self._block = self._block, None
        if block is None:
            return
        block.frame, block.open = None, False
        chain = _blocks.get()
        at = next((i for i, (b, _) in enumerate(chain) if b is block), None)
        if at is None:
            # Ended from another context (a generator closed by another thread or task):
            # nothing here to remove, and nothing is ever set.
            block.stray = True
            return
        running = _running(inspect.currentframe())
        newer = tuple(
            (b, orphaned or b.frame is None or id(b.frame) not in running)
            for b, orphaned in chain[at + 1 :]
        )
        _blocks.set(chain[:at] + newer)


def use(tenant_id: str) -> AbstractContextManager[str]:
    """Run the enclosed calls as ``tenant_id``; the previous tenant comes back on exit.

    Inside a generator, the block holds while the generator runs; the code the generator
    yields to keeps its own tenant (see the module's docstring).
    """
    return _Use(tenant_id)


def current() -> str:
    """Return the current tenant id, or raise :class:`NoTenantError` outside ``use(...)``."""
    chain = _blocks.get()
    if not chain:
        raise NoTenantError
    running = _running(inspect.currentframe())
    lent: set[str] = set()
    for block, orphaned in reversed(chain):
        if block.frame is not None and id(block.frame) in running:
            return block.tenant
        if orphaned or block.stray:
            continue
        if not block.lent:
            return block.tenant  # inherited by a task or copied context, or entered by hand
        if block.open:
            lent.add(block.tenant)
    if len(lent) == 1:
        return lent.pop()
    raise NoTenantError(_AMBIGUOUS if lent else _HIDDEN)


def bind(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Return ``fn`` bound to the current tenant, to run in another thread or an executor.

    Threads, ``ThreadPoolExecutor`` and ``loop.run_in_executor`` do not inherit the tenant:
    ``executor.submit(tenant.bind(fn), *args)`` runs ``fn`` inside ``use(<this tenant>)``
    wherever it is called. Raises :class:`NoTenantError` here, outside ``use(...)``.
    """
    if (
        inspect.isgeneratorfunction(fn)
        or inspect.iscoroutinefunction(fn)
        or inspect.isasyncgenfunction(fn)
    ):
        raise InvalidInputError(
            "tenant.bind takes a plain function: a generator or coroutine would run after the "
            "bound call returned. An asyncio task already inherits the tenant; in a thread, "
            "bind the function that iterates or runs it."
        )
    tenant_id = current()

    @functools.wraps(fn)
    def bound(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with use(tenant_id):
            return fn(*args, **kwargs)

    return bound
