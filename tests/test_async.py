"""The async API: every sync call has an awaited twin with its signature and semantics, none
blocks the event loop, and the tenant of the caller's task is the one each call runs in."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from _typecheck import mypy

from mainsdk_memory import (
    AgentDisabledError,
    ConfigurationError,
    ConsolidationReport,
    Episodes,
    ForgetRequest,
    Fork,
    InvalidInputError,
    Memory,
    MemoryNotFound,
    NoTenantError,
    PersonMemory,
    Privacy,
    Receipt,
    ScopedMemory,
    Source,
    TenantMismatchError,
    Trust,
    WorkingMemory,
    tenant,
)
from mainsdk_memory._async import (
    AsyncEpisodes,
    AsyncMemory,
    AsyncPersonMemory,
    AsyncPrivacy,
    AsyncScopedMemory,
    AsyncWorkingMemory,
)
from mainsdk_memory.audit import AuditEvent, MemorySink

TWINS = [
    (ScopedMemory, AsyncScopedMemory),
    (PersonMemory, AsyncPersonMemory),
    (Memory, AsyncMemory),
    (Privacy, AsyncPrivacy),
    (WorkingMemory, AsyncWorkingMemory),
    (Episodes, AsyncEpisodes),
]
#: Public sync members whose twin is not awaited, on purpose (ADR 0090): making a handle does
#: no I/O, nor registering a schema; properties are read as they are.
NOT_AWAITED = {"acting_for", "person", "register_schema"}
#: What the twins that hand out an async object return.
RETURNS = {"open": "AsyncMemory", "acting_for": "AsyncScopedMemory", "person": "AsyncPersonMemory"}
#: Public sync members with no twin of the same name, and what replaces each.
REPLACED = {"close": "aclose"}


def _public(cls: type) -> list[str]:
    return [name for name in dir(cls) if not name.startswith("_")]


def test_every_sync_member_has_an_async_twin_with_its_signature() -> None:
    for sync, twin in TWINS:
        for name in _public(sync):
            if name in REPLACED:
                assert inspect.iscoroutinefunction(getattr(twin, REPLACED[name]))
                assert not hasattr(twin, name), f"{twin.__name__}.{name}"
                continue
            assert hasattr(twin, name), f"{twin.__name__}.{name} is missing"
            member = inspect.getattr_static(sync, name)
            if isinstance(member, property):
                assert isinstance(inspect.getattr_static(twin, name), property), name
                continue
            # The same parameters, names, kinds, defaults and annotations as the sync method;
            # awaited, the same result, except where the twin hands out an async object.
            shown, expected = inspect.signature(getattr(twin, name)), inspect.signature(
                getattr(sync, name)
            )
            assert shown.parameters == expected.parameters, f"{twin.__name__}.{name}"
            assert shown.return_annotation == RETURNS.get(name, expected.return_annotation)
            # open is an `async def`; the others return a coroutine, marked as such on 3.12+.
            assert inspect.iscoroutinefunction(getattr(twin, name)) == (
                name == "open" or (name not in NOT_AWAITED and sys.version_info >= (3, 12))
            ), name
            assert getattr(twin, name).__qualname__ in {
                f"{twin.__name__}.{name}", f"_AsyncHandle.{name}"
            }
            if hasattr(getattr(twin, name), "__wrapped__"):  # forwarded: the sync docstring
                assert getattr(twin, name).__doc__ == getattr(sync, name).__doc__


def _run(coroutine: Coroutine[Any, Any, Any]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coroutine, 120)

    asyncio.run(bounded())


def test_an_async_handle_does_what_the_sync_handle_does(memory: Memory) -> None:
    amemory = AsyncMemory(memory)

    async def walk() -> None:
        with tenant.use("acme"):
            ada = amemory.acting_for("ada", agent="bot", session="s-1")
            assert isinstance(ada, AsyncScopedMemory)
            assert (ada.person, ada.agent, ada.session) == ("ada", "bot", "s-1")
            call = ada.recall("anything")
            assert inspect.iscoroutine(call)  # nothing runs until awaited
            assert await call == []
            home = await ada.remember("Ada lives in Lisbon.", source=Source.person("ada"))
            await ada.remember("Ada prefers WhatsApp over email.", kind="preference")
            assert home.formation is not None and home.formation.outcome == "novel"
            # What the async handle wrote, the sync one reads: it is the same store and walls.
            same = memory.acting_for("ada", agent="bot", session="s-1")
            assert same.get(home.id) == await ada.get(home.id)
            hits = await ada.recall("how do we reach her?")
            assert hits[0].record.text == "Ada prefers WhatsApp over email."
            assert "WhatsApp" in await ada.context("how do we reach her?")
            moved = await ada.revise(home.id, "Ada lives in Porto.")
            assert (moved.id, moved.version) == (home.id, 2)
            assert [r.version for r in await ada.history(home.id)] == [1, 2]
            assert len((await ada.list(limit=10)).items) == 2
            # Caller keys and metadata filters go through like every other parameter.
            plan = await ada.remember("Ada is on the gold plan.", key="plan", metadata={"tier": 3})
            again = await ada.remember("Ada is on the platinum plan.", key="plan",
                                       metadata={"tier": 4})
            assert (again.id, again.version) == (plan.id, 2)
            assert (await ada.get(key="plan")).metadata == {"tier": 4}
            top = await ada.recall("plan", where={"tier": {"$gte": 4}})
            assert [hit.record.id for hit in top] == [plan.id]
            assert [r.id for r in (await ada.list(where={"tier": 4})).items] == [plan.id]
            assert (await ada.pin(home.id)).pinned
            assert not (await ada.unpin(home.id)).pinned
            assert await ada.feedback(home.id, 1) is None
            assert (await ada.contest(home.id)).status == "disputed"
            assert isinstance(await ada.links(home.id), list)
            assert isinstance(await ada.entities(), list)
            extra = await ada.remember("Ada has a cat named Miso.", formation=False)
            twin = await ada.remember("Ada's cat is called Miso.", formation=False)
            merged = await ada.merge(extra.id, [twin.id])
            assert merged.revision is not None and merged.revision.memories == (twin.id,)
            assert (await ada.retract(extra.id)).status == "retracted"
            learned = await ada.learn([{"role": "user", "content": "I work at Initech."}])
            assert all(record.scope.tenant == "acme" for record in learned)
            assert isinstance(await ada.consolidate(), ConsolidationReport)
            # Working memory and the episodic ledger are awaited too.
            assert isinstance(ada.working, AsyncWorkingMemory)
            await ada.working.set("step", {"n": 1})
            assert await ada.working.get("step") == {"n": 1}
            assert await ada.working.list() == {"step": {"n": 1}}
            assert await ada.working.delete("step") is True
            await ada.episodes.append("user", "Where is my parcel?")
            assert [e.text for e in await ada.episodes.list()] == ["Where is my parcel?"]
            fork = await ada.fork(agent="billing", session="s-2")
            assert isinstance(fork, Fork) and fork.memories >= 1
            billing = amemory.wrap(fork.handle)
            assert isinstance(billing, AsyncScopedMemory) and billing.agent == "billing"
            assert len((await billing.list()).items) == fork.memories
            # The walls are the sync ones: an agent only asks to forget, the person decides.
            request = await ada.forget(home.id)
            assert isinstance(request, ForgetRequest) and request.status == "pending"
            me = amemory.person("ada")
            assert isinstance(me, AsyncPersonMemory)
            assert [r.id for r in await me.pending()] == [request.id]
            assert (await me.reject(request.id)).status == "rejected"
            receipt = await me.approve((await ada.forget(home.id)).id)
            assert isinstance(receipt, Receipt) and receipt.claims["memory_id"] == home.id
            tool = await ada.remember("Ada's order shipped.", source=Source.tool("shop"))
            assert (await me.confirm(tool.id)).trust is Trust.CONFIRMED
            assert isinstance(await me.forget(tool.id), Receipt)
            with pytest.raises(MemoryNotFound):
                await ada.get(home.id)
            with pytest.raises(InvalidInputError):
                await ada.remember("   ")
            # The app's calls: grants, the kill switch, privacy.
            await amemory.grant("bot", read="all")
            assert await amemory.read_policy("bot") == "all"
            await amemory.revoke("bot")
            await amemory.kill("bot")
            assert await amemory.is_killed("bot")
            with pytest.raises(AgentDisabledError):
                await ada.recall("Ada")
            await amemory.revive("bot")
            assert isinstance(amemory.privacy, AsyncPrivacy)  # memory.privacy, awaited
            exported = await amemory.privacy.export("ada")
            # each export is its own signed document: its id, time and signature differ
            unique = {"exported_at": None, "id": None, "signature": None}
            assert {**exported, **unique} == {
                **memory.privacy.export("ada"), **unique
            }
            assert isinstance(await amemory.privacy.erase("ada"), Receipt)
            assert await ada.recall("Ada") == []
            assert await amemory.enforce_retention() == []

    _run(walk())
    _run(amemory.aclose())


def _tick_gaps(stop: asyncio.Event, gaps: list[float]) -> asyncio.Task[None]:
    async def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    return asyncio.create_task(tick())


class _SlowSink:
    """An audit sink that takes 0.15 s per event: a slow disk or a far store, without CPU."""

    def emit(self, event: object) -> None:
        time.sleep(0.15)


def test_calls_never_block_the_event_loop(memory: Memory) -> None:
    # Structural, not a race against the CPU: each call waits 0.15 s on its audit sink (a
    # sleep, which releases the GIL). Sync calls hold the loop for all of it; async calls
    # leave it free, so it keeps ticking (1 ms sleeps) all through them, however loaded the
    # machine is.
    amemory = AsyncMemory(memory)
    with tenant.use("acme"):
        sync_ada = memory.acting_for("ada", agent="bot")
        for i in range(4):
            sync_ada.remember(f"Note {i}: Ada follows topic {i} closely.", formation=False)
    memory.audit = _SlowSink()

    async def gaps_during(calls: Callable[[], Awaitable[None]]) -> list[float]:
        stop, gaps = asyncio.Event(), []
        ticker = _tick_gaps(stop, gaps)
        await asyncio.sleep(0.005)
        gaps.clear()
        with tenant.use("acme"):
            await calls()
        stop.set()
        await ticker
        return gaps

    async def sync_recalls() -> None:
        for i in range(4):
            sync_ada.recall(f"what is topic {i}?")

    async def async_recalls() -> None:
        ada = amemory.acting_for("ada", agent="bot")
        results = await asyncio.gather(*(ada.recall(f"what is topic {i}?") for i in range(4)))
        assert all(hits for hits in results)

    async def main() -> tuple[list[float], list[float]]:
        return await gaps_during(sync_recalls), await gaps_during(async_recalls)

    blocked, free = asyncio.run(main())
    assert len(blocked) <= 2 and max(blocked) >= 0.55  # the loop stood still for 4 x 0.15 s
    assert len(free) >= 20, (len(free), max(free))  # it ticked through the async ones
    _run(amemory.aclose())

def test_interleaved_tasks_of_two_tenants_never_see_each_others_memories(memory: Memory) -> None:
    # Two worker threads for sixteen tasks: each thread serves both tenants in turn.
    amemory = AsyncMemory(memory, max_workers=2)

    async def one(tenant_id: str, i: int) -> list[str]:
        with tenant.use(tenant_id):
            ada = amemory.acting_for("ada", agent="bot")  # the same person id in both tenants
            await asyncio.sleep(0)
            await ada.remember(f"{tenant_id} note {i}: Ada's code word.", formation=False)
            await asyncio.sleep(0)
            hits = await ada.recall("Ada's code word", top_k=100)
            listed = await ada.list(limit=100)
            seen = [hit.record for hit in hits] + list(listed.items)
            assert all(record.scope.tenant == tenant_id for record in seen)
            return [record.text for record in seen]

    async def child_of_a_block(tenant_id: str) -> list[str]:
        async def child() -> list[str]:
            await asyncio.sleep(0.01)  # runs after the block that started it has ended
            ada = amemory.acting_for("ada", agent="bot")
            return [record.text for record in (await ada.list(limit=100)).items]

        with tenant.use(tenant_id):
            task = asyncio.create_task(child())  # a task inherits the tenant it started in
        return await task

    async def main() -> tuple[list[list[str]], list[list[str]]]:
        tenants = ["acme", "globex"]
        writes = await asyncio.gather(*(one(tenants[i % 2], i) for i in range(16)))
        children = await asyncio.gather(*(child_of_a_block(t) for t in tenants * 2))
        return writes, children

    writes, children = asyncio.run(main())
    for i, texts in enumerate(writes):
        own = "acme" if i % 2 == 0 else "globex"
        assert texts and all(text.startswith(own + " ") for text in texts)
    acme, globex = children[0], children[1]
    assert sorted(acme) == sorted(f"acme note {i}: Ada's code word." for i in range(0, 16, 2))
    assert sorted(globex) == sorted(f"globex note {i}: Ada's code word." for i in range(1, 16, 2))
    assert children[2:] == [acme, globex]

    async def after() -> None:
        # The worker threads keep no tenant from the jobs they ran.
        with pytest.raises(NoTenantError):
            await amemory.privacy.export("ada")

    _run(after())
    _run(amemory.aclose())


def test_the_tenant_is_the_callers_when_the_call_is_made(memory: Memory) -> None:
    amemory = AsyncMemory(memory)
    for tenant_id in ("acme", "globex"):
        with tenant.use(tenant_id):
            memory.acting_for("ada", agent="bot").remember(f"Ada is a customer of {tenant_id}.")

    async def main() -> None:
        with tenant.use("acme"):
            export = amemory.privacy.export("ada")  # made here, awaited below
            ada = amemory.acting_for("ada", agent="bot")
        with tenant.use("globex"):
            exported = await export
            texts = [v["text"] for m in exported["memories"] for v in m["versions"]]
            assert exported["tenant"] == "acme"
            assert texts == ["Ada is a customer of acme."]
            # A handle made in one tenant refuses another, as the sync one does.
            with pytest.raises(TenantMismatchError):
                await ada.recall("customer")
        # No tenant: the error the sync call raises, in the same order as its checks.
        with pytest.raises(NoTenantError):
            amemory.acting_for("ada", agent="bot")
        with pytest.raises(NoTenantError):
            await amemory.privacy.export("ada")
        with pytest.raises(InvalidInputError):
            await amemory.grant("not a name!", read="all")  # checked before the tenant

    _run(main())
    _run(amemory.aclose())


def test_a_generators_own_tenant_is_the_one_its_calls_run_in(memory: Memory) -> None:
    # A copy of the context alone would run this generator's calls as its caller's tenant:
    # its block is lent (ADR 0028), seen only while its frame runs, and the worker's frames
    # are others. The tenant read in the caller's frame and entered again is the right one.
    amemory = AsyncMemory(memory)
    for tenant_id in ("acme", "globex"):
        with tenant.use(tenant_id):
            memory.acting_for("ada", agent="bot").remember(f"Ada is a customer of {tenant_id}.")

    async def exports() -> AsyncIterator[dict[str, Any]]:
        with tenant.use("globex"):
            yield await amemory.privacy.export("ada")

    async def main() -> list[str]:
        with tenant.use("acme"):
            tenants = [exported["tenant"] async for exported in exports()]
            texts = [v["text"] for m in (await amemory.privacy.export("ada"))["memories"]
                     for v in m["versions"]]
            assert texts == ["Ada is a customer of acme."]
            return tenants

    assert asyncio.run(main()) == ["globex"]
    _run(amemory.aclose())


class _GateSink(MemorySink):
    """An audit sink that holds the worker thread in ``emit`` while the gate is shut."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.held = threading.Event()

    def emit(self, event: AuditEvent) -> None:
        if not self.gate.is_set():
            self.held.set()
            self.gate.wait(60)
        super().emit(event)


def test_aclose_waits_for_calls_under_way_and_then_refuses_new_ones(
    tmp_path: Path, keys_path: Path
) -> None:
    sink = _GateSink()
    memory = Memory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="app", audit=sink)
    amemory = AsyncMemory(memory, max_workers=1)

    async def main() -> None:
        with tenant.use("acme"):
            ada = amemory.acting_for("ada", agent="bot")
            sink.gate.clear()
            writing = asyncio.create_task(ada.remember("Ada lives in Lisbon."))
            await asyncio.to_thread(sink.held.wait, 30)  # the one worker is held in emit
            queued = asyncio.create_task(ada.recall("Lisbon"))
            await asyncio.sleep(0.01)
            queued.cancel()  # a call that has not started is cancelled: it never runs
            closing = asyncio.create_task(amemory.aclose())
            await asyncio.sleep(0.05)
            assert not closing.done()  # aclose waits for the call under way
            sink.gate.set()
            await closing
            assert (await writing).text == "Ada lives in Lisbon."
            with pytest.raises(asyncio.CancelledError):
                await queued
            assert [e.operation for e in sink.events] == ["remember"]
            with pytest.raises(ConfigurationError):
                await ada.recall("Lisbon")
            await amemory.aclose()  # twice is fine

    _run(main())


def test_bad_construction_is_refused(memory: Memory) -> None:
    with pytest.raises(ConfigurationError):
        AsyncMemory(memory, max_workers=0)
    with pytest.raises(ConfigurationError):
        AsyncMemory(memory, max_workers=True)
    with pytest.raises(InvalidInputError):
        AsyncMemory("local:./memories")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AsyncMemory(memory).wrap(memory)  # type: ignore[call-overload]


def test_async_open_opens_in_a_thread(tmp_path: Path, keys_path: Path) -> None:
    async def main() -> None:
        opened = await AsyncMemory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="app")
        async with opened as amemory:
            assert amemory.app == "app" and amemory.memory.app == "app"
            with tenant.use("acme"):
                ada = amemory.acting_for("ada", agent="bot")
                assert (await ada.remember("Ada lives in Lisbon.")).version == 1
        assert inspect.signature(AsyncMemory.open).return_annotation == "AsyncMemory"

    _run(main())


APP = '''
from mainsdk_memory import ForgetRequest, Hit, Page, Receipt, tenant
from mainsdk_memory._async import AsyncMemory, AsyncScopedMemory


async def main(amemory: AsyncMemory) -> None:
    with tenant.use("acme"):
        ada: AsyncScopedMemory = amemory.acting_for("ada", agent="bot", session="s")
        hits: list[Hit] = await ada.recall("where", top_k=3, mode="text")
        request: ForgetRequest = await ada.forget(hits[0].record.id)
        receipt: Receipt = await amemory.person("ada").approve(request.id)
        forked = amemory.wrap((await ada.fork(agent="billing")).handle)
        page: Page = await forked.list(limit=5)
        texts: list[str] = await ada.recall("where")
        await ada.recall("where", topk=3)
        not_awaited: Page = ada.list()
        await amemory.grant("bot", read="everything")
        print(receipt, page, texts, not_awaited)
'''


def test_a_type_checker_sees_the_sync_signatures(tmp_path: Path) -> None:
    app = tmp_path / "async_app.py"
    app.write_text(APP, encoding="utf-8")
    result = mypy("--strict", str(app))
    out = result.stdout
    assert 'Incompatible types in assignment (expression has type "list[Hit]"' in out, out
    assert 'Unexpected keyword argument "topk"' in out, out
    assert '(expression has type "Coroutine[Any, Any, Page]", variable has type "Page")' in out
    assert """Argument "read" has incompatible type "Literal['everything']";""" in out, out
    assert "Found 4 errors in 1 file" in out, out
