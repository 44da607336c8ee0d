"""The async API: ``AsyncMemory`` and its handles, each call a coroutine run in a worker thread.

Every method of the sync API has an async twin with the same parameters, result, errors and
walls, because it *is* the sync method, run in a worker thread of a bounded executor the
:class:`AsyncMemory` owns (ADR 0090). The event loop only waits: a slow store, an fsync of the
audit log or a model call never stalls the other tasks.

The tenant is read in the caller's task when the call is made (not when it is awaited), and
re-established around the call in the worker thread, which runs in a copy of the caller's
context (as :func:`asyncio.to_thread` does, so the app's other context variables go along).
A call made with no tenant runs with none, and raises what the sync call raises.

The parameters are forwarded generically (``ParamSpec``): an async method's signature, as a
type checker and :func:`inspect.signature` see it, is its sync method's, and a parameter
added to a sync method reaches its async twin with nothing to change here.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from pydantic import BaseModel

from mainsdk_memory import tenant as _tenant
from mainsdk_memory._episodes import Episodes
from mainsdk_memory._errors import ConfigurationError, InvalidInputError, NoTenantError
from mainsdk_memory._memory import Memory
from mainsdk_memory._privacy import Privacy
from mainsdk_memory._scoped import PersonMemory, ScopedMemory, _Handle
from mainsdk_memory._working import WorkingMemory
from mainsdk_memory.audit import AuditSink
from mainsdk_memory.drivers import Capabilities, Driver
from mainsdk_memory.embeddings import Embedder
from mainsdk_memory.injection import Detector

__all__ = [
    "DEFAULT_MAX_WORKERS",
    "AsyncEpisodes",
    "AsyncMemory",
    "AsyncPersonMemory",
    "AsyncPrivacy",
    "AsyncScopedMemory",
    "AsyncWorkingMemory",
]

#: Worker threads of an :class:`AsyncMemory` unless ``max_workers`` says otherwise: enough to
#: overlap the store's waits (I/O, fsync, a database's round trips), and well under the db
#: driver's 15 connections (a pool of 5 and 10 more), so no call waits for one. Most of a
#: call is Python under the GIL: each more thread adds no throughput, and lengthens the
#: event loop's wait for the GIL by up to a switch interval (5 ms) when all are busy.
DEFAULT_MAX_WORKERS = 4

_P = ParamSpec("_P")
_R = TypeVar("_R")
_W = TypeVar("_W")
_S = TypeVar("_S")
_S_co = TypeVar("_S_co", covariant=True)
_H_co = TypeVar("_H_co", bound=_Handle, covariant=True)

_CLOSED = (
    "This AsyncMemory is closed, so it runs no more calls. Open a new one "
    "(await AsyncMemory.open(...) or AsyncMemory(Memory.open(...))) and use it instead."
)
_mark_coroutine_function = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+


def _as_tenant(tenant_id: str | None, job: Callable[[], _R]) -> _R:
    """Run ``job`` as ``tenant_id`` (in the worker thread); with ``None``, as no tenant."""
    if tenant_id is None:
        return job()
    with _tenant.use(tenant_id):
        return job()


class _Runner:
    """The bounded executor of one :class:`AsyncMemory`, and the carrying of the tenant into it."""

    __slots__ = ("_closed", "_executor")

    def __init__(self, max_workers: int) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="mainsdk-memory"
        )
        self._closed = False

    def call(
        self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Coroutine[Any, Any, _R]:
        """A coroutine that runs ``fn(*args, **kwargs)`` in a worker thread as the tenant of
        the caller right now (read here, in the caller's frame: ADR 0028's blocks are tied
        to frames)."""
        try:
            tenant_id: str | None = _tenant.current()
        except NoTenantError:
            tenant_id = None  # the sync call raises what it raises, from the worker
        context = contextvars.copy_context()
        return self._run(context, tenant_id, functools.partial(fn, *args, **kwargs))

    async def _run(
        self, context: contextvars.Context, tenant_id: str | None, job: Callable[[], _R]
    ) -> _R:
        if self._closed:
            raise ConfigurationError(_CLOSED)
        try:
            future = self._executor.submit(context.run, _as_tenant, tenant_id, job)
        except RuntimeError as exc:  # shut down between the check and the submit
            raise ConfigurationError(_CLOSED) from exc
        # A cancelled await cancels the call if it has not started; one that has started
        # runs to its end in its thread (a write may land), as a thread cannot be stopped.
        return await asyncio.wrap_future(future)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Refuse new calls, wait for the running and queued ones (blocks: run in a thread)."""
        self._closed = True
        self._executor.shutdown(wait=True)


class _Async(Generic[_S_co]):
    """An async face over one sync object: its calls go to the runner's worker threads."""

    __slots__ = ("_runner", "_sync")

    def __init__(self, sync: _S_co, runner: _Runner) -> None:
        """Made by :class:`AsyncMemory` (``acting_for``, ``person``, ``privacy``, ...)."""
        self._sync = sync
        self._runner = runner

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # functools.wraps names the sync method; a reader looks for the async one here.
        for name, value in vars(cls).items():
            function = value.__func__ if isinstance(value, staticmethod) else value
            if inspect.isfunction(function) and hasattr(function, "__wrapped__"):
                function.__qualname__ = f"{cls.__qualname__}.{name}"
                function.__module__ = __name__

    def __repr__(self) -> str:
        shown, name = repr(self._sync), type(self._sync).__name__
        if shown.startswith(f"<{name}"):
            return f"<Async{shown[1:]}"
        return f"<{type(self).__name__}>"


def _in_thread(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_Async[_S], _P], Coroutine[Any, Any, _R]]:
    """The async twin of a sync ``method``: same parameters, awaited for the same result.

    The call goes to the wrapped object's method of that name, so a subclass's override is
    the one that runs (tests/test_async.py checks that every twin's signature is its sync
    method's on the concrete class).
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self: _Async[_S], /, *args: _P.args, **kwargs: _P.kwargs) -> Coroutine[Any, Any, _R]:
        bound: Callable[_P, _R] = getattr(self._sync, name)
        return self._runner.call(bound, *args, **kwargs)

    if _mark_coroutine_function is not None:
        _mark_coroutine_function(call)
    return call


def _handing_out(
    method: Callable[Concatenate[_S, _P], _W], face: Callable[[_W, _Runner], _R]
) -> Callable[Concatenate[_Async[_S], _P], _R]:
    """A sync ``method`` that makes a handle (no I/O) and returns its async face."""

    name = method.__name__

    @functools.wraps(method)
    def call(self: _Async[_S], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        bound: Callable[_P, _W] = getattr(self._sync, name)
        return face(bound(*args, **kwargs), self._runner)

    _returning(call, method, getattr(face, "__name__", "object"))
    return call


def _opening(
    open_memory: Callable[_P, Memory],
) -> Callable[_P, Coroutine[Any, Any, AsyncMemory]]:
    """``Memory.open``'s async twin: the store and key store are opened in a thread."""

    @functools.wraps(open_memory)
    async def opened(*args: _P.args, **kwargs: _P.kwargs) -> AsyncMemory:
        return AsyncMemory(await asyncio.to_thread(open_memory, *args, **kwargs))

    _returning(opened, open_memory, "AsyncMemory")
    return opened


def _returning(twin: Callable[..., object], method: Callable[..., object], result: str) -> None:
    """Let :func:`inspect.signature` show ``twin`` with ``method``'s parameters and the
    ``result`` it really returns (``functools.wraps`` would show the sync method's)."""
    shown = inspect.signature(method).replace(return_annotation=result)
    twin.__signature__ = shown  # type: ignore[attr-defined]


class AsyncWorkingMemory(_Async[WorkingMemory]):
    """:class:`~mainsdk_memory.WorkingMemory`, awaited (``handle.working``)."""

    __slots__ = ()

    set = _in_thread(WorkingMemory.set)
    get = _in_thread(WorkingMemory.get)
    list = _in_thread(WorkingMemory.list)
    delete = _in_thread(WorkingMemory.delete)


class AsyncEpisodes(_Async[Episodes]):
    """:class:`~mainsdk_memory.Episodes`, awaited (``handle.episodes``)."""

    __slots__ = ()

    append = _in_thread(Episodes.append)
    list = _in_thread(Episodes.list)


class _AsyncHandle(_Async[_H_co]):
    """What both async handles share, as :class:`ScopedMemory` and :class:`PersonMemory` do."""

    __slots__ = ()

    @property
    def person(self) -> str:
        """The person this handle acts for."""
        return self._sync.person

    @property
    def agent(self) -> str:
        """The agent calling (``"@person"`` on the person's own handle)."""
        return self._sync.agent

    @property
    def session(self) -> str | None:
        """The session of this handle, if any."""
        return self._sync.session

    @property
    def working(self) -> AsyncWorkingMemory:
        """This agent's working memory about the person, awaited."""
        return AsyncWorkingMemory(self._sync.working, self._runner)

    @property
    def episodes(self) -> AsyncEpisodes:
        """The episodic ledger of the person, awaited."""
        return AsyncEpisodes(self._sync.episodes, self._runner)

    remember = _in_thread(_Handle.remember)
    remember_many = _in_thread(_Handle.remember_many)
    revise = _in_thread(_Handle.revise)
    get = _in_thread(_Handle.get)
    list = _in_thread(_Handle.list)
    history = _in_thread(_Handle.history)
    recall = _in_thread(_Handle.recall)
    context = _in_thread(_Handle.context)
    learn = _in_thread(_Handle.learn)
    links = _in_thread(_Handle.links)
    entities = _in_thread(_Handle.entities)
    pin = _in_thread(_Handle.pin)
    unpin = _in_thread(_Handle.unpin)
    feedback = _in_thread(_Handle.feedback)
    contest = _in_thread(_Handle.contest)
    retract = _in_thread(_Handle.retract)
    merge = _in_thread(_Handle.merge)
    consolidate = _in_thread(_Handle.consolidate)


class AsyncScopedMemory(_AsyncHandle[ScopedMemory]):
    """:class:`~mainsdk_memory.ScopedMemory`, awaited: an agent acting for a person.

    From :meth:`AsyncMemory.acting_for`. Each method is its sync method's twin
    (``await handle.recall(...)``); ``fork`` returns the same :class:`~mainsdk_memory.Fork`,
    whose ``handle`` :meth:`AsyncMemory.wrap` turns into an async one.
    """

    __slots__ = ()

    fork = _in_thread(ScopedMemory.fork)
    forget = _in_thread(ScopedMemory.forget)


class AsyncPersonMemory(_AsyncHandle[PersonMemory]):
    """:class:`~mainsdk_memory.PersonMemory`, awaited: the person themself.

    From :meth:`AsyncMemory.person`. Give it to the person's own interface, never to an agent.
    """

    __slots__ = ()

    confirm = _in_thread(PersonMemory.confirm)
    forget = _in_thread(PersonMemory.forget)
    pending = _in_thread(PersonMemory.pending)
    approve = _in_thread(PersonMemory.approve)
    reject = _in_thread(PersonMemory.reject)


class AsyncPrivacy(_Async[Privacy]):
    """:class:`~mainsdk_memory.Privacy`, awaited (``amemory.privacy``): erase, export,
    children, the receipts log and procedures."""

    __slots__ = ()

    erase = _in_thread(Privacy.erase)
    export = _in_thread(Privacy.export)
    set_guardian = _in_thread(Privacy.set_guardian)
    record_consent = _in_thread(Privacy.record_consent)
    guardian_policy = _in_thread(Privacy.guardian_policy)
    receipts = _in_thread(Privacy.receipts)
    export_procedures = _in_thread(Privacy.export_procedures)
    import_procedures = _in_thread(Privacy.import_procedures)
    import_export = _in_thread(Privacy.import_export)


class AsyncMemory(_Async[Memory]):
    """A :class:`~mainsdk_memory.Memory` for asyncio: every call awaited, none blocking the loop.

    ``AsyncMemory(Memory.open(...))`` or ``await AsyncMemory.open(...)``; then, inside
    ``tenant.use(...)``, ``amemory.acting_for(person, agent=...)`` (no await: making a
    handle does no I/O) gives an :class:`AsyncScopedMemory` whose methods are coroutines::

        amemory = await AsyncMemory.open("local:./memories", keys=KEYS, app="support")
        with tenant.use("acme"):
            ada = amemory.acting_for("ada", agent="support-bot", session="chat-1")
            await ada.remember("Ada prefers WhatsApp over email.", kind="preference")
            hits = await ada.recall("how do we reach her?")
        await amemory.aclose()

    Each call runs its sync method in one of ``max_workers`` threads (default
    :data:`DEFAULT_MAX_WORKERS`) of an executor this object owns; more calls at once wait
    for a thread without blocking the loop. The tenant is the caller's when the call is made;
    a callback (``progress=``) runs in the worker thread. The ``AsyncMemory`` takes the
    ``Memory`` over: :meth:`aclose` waits for the calls under way, then closes it.
    """

    __slots__ = ("privacy",)

    def __init__(self, memory: Memory, *, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        """Run ``memory``'s calls in ``max_workers`` threads of an executor of its own."""
        if not isinstance(memory, Memory):
            raise InvalidInputError("AsyncMemory wraps a Memory: AsyncMemory(Memory.open(...)).")
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ConfigurationError("max_workers is a positive whole number of threads.")
        super().__init__(memory, _Runner(max_workers))
        self.privacy = AsyncPrivacy(memory.privacy, self._runner)
        """Erase, export, children, the receipts log and procedures, awaited."""

    open = staticmethod(_opening(Memory.open))
    """``await AsyncMemory.open(url, *, keys, app, **options)``: :meth:`Memory.open` in a
    thread, wrapped (default ``max_workers``; for others, ``AsyncMemory(Memory.open(...),
    max_workers=...)``)."""

    def __repr__(self) -> str:
        return f"<AsyncMemory app={self.app!r} driver={self.driver.name!r}>"

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Refuse new calls, wait for those under way, then close the ``Memory`` (writing the
        ranking uses not written yet); the waiting happens in a thread, not on the loop."""
        if self._runner.closed:
            return
        await asyncio.to_thread(self._runner.close)
        await asyncio.to_thread(self._sync.close)

    # -- what needs no thread ---------------------------------------------------------------

    @property
    def memory(self) -> Memory:
        """The sync :class:`~mainsdk_memory.Memory` underneath (for sync code, CLIs, tests)."""
        return self._sync

    @property
    def app(self) -> str:
        """The app name given to :meth:`open`."""
        return self._sync.app

    @property
    def labels(self) -> frozenset[str] | None:
        """The only labels this store may hold, or ``None`` (any)."""
        return self._sync.labels

    @property
    def detector(self) -> Detector:
        """The injection check run at write and at recall."""
        return self._sync.detector

    @property
    def audit(self) -> AuditSink:
        """The sink that receives one audit event per call (called in the worker threads)."""
        return self._sync.audit

    @audit.setter
    def audit(self, sink: AuditSink) -> None:
        self._sync.audit = sink

    @property
    def retention(self) -> Mapping[str, timedelta]:
        """The lifetime of memories per label (a child's capped at 90 days)."""
        return self._sync.retention

    @property
    def capabilities(self) -> Capabilities:
        """What the store's driver declares it can do."""
        return self._sync.capabilities

    @property
    def embedder(self) -> Embedder | None:
        """The store's embedder, or ``None`` (BM25 only)."""
        return self._sync.embedder

    @property
    def driver(self) -> Driver:
        """The storage driver (it holds only sealed, blinded rows)."""
        return self._sync.driver

    def register_schema(self, model: type[BaseModel]) -> None:
        """Let typed facts of ``model`` come back as instances of it (no I/O: not awaited)."""
        self._sync.register_schema(model)

    acting_for = _handing_out(Memory.acting_for, AsyncScopedMemory)
    person = _handing_out(Memory.person, AsyncPersonMemory)

    @overload
    def wrap(self, handle: ScopedMemory) -> AsyncScopedMemory: ...
    @overload
    def wrap(self, handle: PersonMemory) -> AsyncPersonMemory: ...

    def wrap(self, handle: ScopedMemory | PersonMemory) -> AsyncScopedMemory | AsyncPersonMemory:
        """The async face of a sync handle of this memory (e.g. a :class:`Fork`'s ``handle``),
        run in this memory's worker threads."""
        if isinstance(handle, ScopedMemory):
            return AsyncScopedMemory(handle, self._runner)
        if isinstance(handle, PersonMemory):
            return AsyncPersonMemory(handle, self._runner)
        raise InvalidInputError("wrap takes a ScopedMemory or a PersonMemory.")

    # -- administration, shared memory, embeddings, retention: awaited ------------------------

    grant = _in_thread(Memory.grant)
    revoke = _in_thread(Memory.revoke)
    kill = _in_thread(Memory.kill)
    revive = _in_thread(Memory.revive)
    set_limits = _in_thread(Memory.set_limits)
    read_policy = _in_thread(Memory.read_policy)
    is_killed = _in_thread(Memory.is_killed)
    confirm_shared = _in_thread(Memory.confirm_shared)
    reindex = _in_thread(Memory.reindex)
    enforce_retention = _in_thread(Memory.enforce_retention)

