"""The tenant comes from tenant.use(...), never a parameter, and is isolated per thread and task."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, asynccontextmanager, contextmanager

import pytest

from mainsdk_memory import (
    InvalidInputError,
    Memory,
    MemoryNotFound,
    NoTenantError,
    TenantMismatchError,
    tenant,
)


def test_current_outside_use_raises_no_tenant() -> None:
    with pytest.raises(NoTenantError, match=r"tenant\.use"):
        tenant.current()


def test_use_sets_and_restores_nested_tenants() -> None:
    with tenant.use("outer"):
        assert tenant.current() == "outer"
        with tenant.use("inner"):
            assert tenant.current() == "inner"
        assert tenant.current() == "outer"
    with pytest.raises(NoTenantError):
        tenant.current()


@pytest.mark.parametrize("bad", ["", " acme", "a/b", "../x", "a" * 129, None, 42, "é"])
def test_bad_tenant_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidInputError), tenant.use(bad):  # type: ignore[arg-type]
        pass


def test_threads_each_see_their_own_tenant() -> None:
    seen: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)

    def work(name: str) -> None:
        with tenant.use(name):
            barrier.wait()  # all four are inside their tenant at once
            seen[name] = [tenant.current() for _ in range(100)]

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {f"t{i}": [f"t{i}"] * 100 for i in range(4)}


def test_asyncio_tasks_each_see_their_own_tenant() -> None:
    async def task(name: str) -> list[str]:
        with tenant.use(name):
            out = []
            for _ in range(20):
                await asyncio.sleep(0)  # interleave with the other tasks
                out.append(tenant.current())
            return out

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(task(f"t{i}") for i in range(5)))

    results = asyncio.run(main())
    assert results == [[f"t{i}"] * 20 for i in range(5)]


def test_every_memory_call_needs_a_tenant(memory: Memory) -> None:
    with pytest.raises(NoTenantError):
        memory.acting_for("ada", agent="bot")


def test_a_handle_cannot_cross_into_another_tenant(memory: Memory) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        record = ada.remember("Ada keeps bees on the roof.")
    with tenant.use("globex"):
        with pytest.raises(TenantMismatchError):
            ada.recall("bees")
        with pytest.raises(TenantMismatchError):
            ada.remember("Planted in the wrong tenant.")
        # A handle made in globex for the same person id sees nothing of acme's.
        same_name = memory.acting_for("ada", agent="bot")
        assert same_name.recall("bees roof") == []
        with pytest.raises(MemoryNotFound):
            same_name.get(record.id)
    with pytest.raises(NoTenantError):
        ada.get(record.id)


# --- Walls around the context variable (ADR 0028): generators, late closes, threads. ---


def _stream(tenant_id: str, seen: list[str]) -> Iterator[int]:
    """A generator that runs under its own tenant and yields inside that block."""
    with tenant.use(tenant_id):
        for step in range(3):
            seen.append(tenant.current())
            yield step


def _outside_every_tenant() -> bool:
    try:
        tenant.current()
    except NoTenantError:
        return True
    return False


def test_a_generator_inside_use_does_not_change_its_callers_tenant() -> None:
    inside: list[str] = []
    with tenant.use("acme"):
        for _ in _stream("globex", inside):
            assert tenant.current() == "acme"  # between yields: the caller's own tenant
            with tenant.use("initech"):
                assert tenant.current() == "initech"
            assert tenant.current() == "acme"
    assert inside == ["globex"] * 3  # and the generator kept its own while it ran
    assert _outside_every_tenant()


def test_interleaved_generators_keep_their_tenants_and_the_caller_its_own() -> None:
    seen_b: list[str] = []
    seen_c: list[str] = []
    with tenant.use("a"):
        b, c = _stream("b", seen_b), _stream("c", seen_c)
        for _ in range(3):
            next(b)
            assert tenant.current() == "a"
            next(c)
            assert tenant.current() == "a"
    assert seen_b == ["b"] * 3 and seen_c == ["c"] * 3
    assert _outside_every_tenant()


def test_writes_between_yields_go_to_the_callers_tenant(memory: Memory) -> None:
    def ada_in(tenant_id: str) -> Iterator[str]:
        with tenant.use(tenant_id):
            yield memory.acting_for("ada", agent="bot").remember("Ada keeps bees.").id

    with tenant.use("acme"):
        writer = ada_in("globex")
        globex_id = next(writer)
        # The caller writes while the generator is suspended inside its globex block.
        memory.acting_for("ada", agent="bot").remember("Ada plants lavender.")
        with pytest.raises(StopIteration):
            next(writer)
    with tenant.use("acme"):
        acme_texts = [hit.record.text for hit in memory.acting_for("ada", agent="bot").recall(
            "bees lavender")]
    with tenant.use("globex"):
        globex = memory.acting_for("ada", agent="bot")
        globex_texts = [hit.record.text for hit in globex.recall("bees lavender")]
        assert globex.get(globex_id).text == "Ada keeps bees."
    assert acme_texts == ["Ada plants lavender."]
    assert globex_texts == ["Ada keeps bees."]


def test_a_generator_closed_late_sets_no_tenant() -> None:
    seen: list[str] = []
    with tenant.use("acme"):
        late = _stream("globex", seen)
        next(late)
    assert _outside_every_tenant()  # the suspended generator's block does not outlive acme's
    del late  # closed now, after every block: its finally must not bring acme back
    gc.collect()
    assert _outside_every_tenant()


def test_the_error_says_why_a_suspended_generators_tenant_is_not_seen() -> None:
    with tenant.use("acme"):
        late = _stream("globex", [])
        next(late)
    with pytest.raises(NoTenantError, match=r"generators that are suspended.*tenant\.use"):
        tenant.current()
    late.close()


def test_a_generator_closed_late_inside_another_block_leaves_that_block_alone() -> None:
    with tenant.use("acme"):
        late = _stream("globex", [])
        next(late)
    with tenant.use("initech"):
        late.close()
        assert tenant.current() == "initech"
    assert _outside_every_tenant()


def test_a_generator_closed_by_another_thread_sets_nothing_there_or_here() -> None:
    with tenant.use("acme"):
        late = _stream("globex", [])
        next(late)
    seen: list[bool] = []

    def close() -> None:
        late.close()
        seen.append(_outside_every_tenant())

    thread = threading.Thread(target=close)
    thread.start()
    thread.join()
    assert seen == [True]
    assert _outside_every_tenant()


def test_a_generator_resumed_after_its_callers_block_keeps_its_own_tenant() -> None:
    seen: list[str] = []
    with tenant.use("acme"):
        stream = _stream("globex", seen)
        next(stream)
    assert _outside_every_tenant()
    next(stream)  # running again, inside its own block
    assert seen == ["globex", "globex"]
    assert _outside_every_tenant()
    stream.close()
    assert _outside_every_tenant()


def test_an_async_generator_inside_use_does_not_change_its_callers_tenant() -> None:
    async def stream() -> AsyncIterator[str]:
        with tenant.use("globex"):
            for _ in range(3):
                await asyncio.sleep(0)
                yield tenant.current()

    async def main() -> tuple[list[str], list[str]]:
        inside, between = [], []
        with tenant.use("acme"):
            async for seen in stream():
                inside.append(seen)
                between.append(tenant.current())
        return inside, between

    assert asyncio.run(main()) == (["globex"] * 3, ["acme"] * 3)


def test_a_generator_fixture_still_sets_the_tenant_of_the_code_it_yields_to() -> None:
    # How tests/conftest.py's `acme` fixture works: the generator yields inside use(...)
    # to code that has no tenant of its own.
    def fixture() -> Iterator[None]:
        with tenant.use("acme"):
            yield

    setup = fixture()
    next(setup)
    assert tenant.current() == "acme"
    with tenant.use("globex"):
        assert tenant.current() == "globex"
    assert tenant.current() == "acme"
    with pytest.raises(StopIteration):
        next(setup)
    assert _outside_every_tenant()


def test_two_suspended_generators_of_different_tenants_pick_neither() -> None:
    first, second = _stream("acme", []), _stream("globex", [])
    next(first)
    next(second)
    with pytest.raises(NoTenantError, match="different tenants"):
        tenant.current()
    first.close()
    second.close()
    assert _outside_every_tenant()


def test_a_contextmanager_wrapping_use_sets_the_tenant_of_its_with_block() -> None:
    @contextmanager
    def as_globex() -> Iterator[str]:
        with tenant.use("globex") as tenant_id:
            yield tenant_id

    with tenant.use("acme"):
        with as_globex():
            assert tenant.current() == "globex"
        assert tenant.current() == "acme"
        with ExitStack() as stack:
            stack.enter_context(tenant.use("initech"))
            assert tenant.current() == "initech"
        assert tenant.current() == "acme"
    assert _outside_every_tenant()


def test_an_asynccontextmanager_wrapping_use_sets_the_tenant_of_its_block() -> None:
    @asynccontextmanager
    async def as_globex() -> AsyncIterator[None]:
        with tenant.use("globex"):
            yield

    async def main() -> list[str]:
        with tenant.use("acme"):
            async with as_globex():
                await asyncio.sleep(0)
                inside = tenant.current()
            return [inside, tenant.current()]

    assert asyncio.run(main()) == ["globex", "acme"]


def test_one_use_is_entered_once_at_a_time() -> None:
    block = tenant.use("acme")
    with block, pytest.raises(InvalidInputError, match="already entered"), block:
        pass
    with block:  # after it ended it can be entered again
        assert tenant.current() == "acme"


def test_asyncio_tasks_inherit_the_tenant_and_keep_it_after_the_block() -> None:
    async def child(release: asyncio.Event) -> list[str]:
        before = tenant.current()
        await release.wait()
        return [before, tenant.current()]

    async def main() -> list[str]:
        release = asyncio.Event()
        with tenant.use("acme"):
            task = asyncio.create_task(child(release))
            await asyncio.sleep(0)
        release.set()  # the parent's block has ended; the task keeps what it inherited
        out = await task
        assert _outside_every_tenant()
        return out

    assert asyncio.run(main()) == ["acme", "acme"]


def test_a_thread_pool_does_not_inherit_the_tenant_and_says_how_to_carry_it() -> None:
    with ThreadPoolExecutor(max_workers=1) as pool, tenant.use("acme"):
        with pytest.raises(NoTenantError, match=r"tenant\.bind\(fn\)"):
            pool.submit(tenant.current).result()
        assert pool.submit(tenant.bind(tenant.current)).result() == "acme"
        assert list(pool.map(tenant.bind(lambda _: tenant.current()), range(3))) == ["acme"] * 3
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The worker's own context holds no tenant after a bound call ended.
        with tenant.use("acme"):
            pool.submit(tenant.bind(tenant.current)).result()
        with pytest.raises(NoTenantError):
            pool.submit(tenant.current).result()


def test_bound_functions_write_to_the_bound_tenant(memory: Memory) -> None:
    def remember(text: str) -> str:
        return memory.acting_for("ada", agent="bot").remember(text).id

    with ThreadPoolExecutor(max_workers=2) as pool:
        with tenant.use("acme"):
            acme_id = pool.submit(tenant.bind(remember), "Ada keeps bees.").result()
        with tenant.use("globex"):
            globex_id = pool.submit(tenant.bind(remember), "Ada plants lavender.").result()
            ada = memory.acting_for("ada", agent="bot")
            assert ada.get(globex_id).text == "Ada plants lavender."
            with pytest.raises(MemoryNotFound):
                ada.get(acme_id)
    with tenant.use("acme"):
        assert memory.acting_for("ada", agent="bot").get(acme_id).text == "Ada keeps bees."


def test_run_in_executor_does_not_inherit_the_tenant_unless_bound() -> None:
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        with tenant.use("acme"):
            with pytest.raises(NoTenantError, match=r"tenant\.bind\(fn\)"):
                await loop.run_in_executor(None, tenant.current)
            bound = await loop.run_in_executor(None, tenant.bind(tenant.current))
            copied = await asyncio.to_thread(tenant.current)  # to_thread copies the context
        return [bound, copied]

    assert asyncio.run(main()) == ["acme", "acme"]


def test_bind_needs_a_tenant_and_a_plain_function() -> None:
    with pytest.raises(NoTenantError):
        tenant.bind(tenant.current)

    async def coroutine() -> None:
        pass

    def generator() -> Iterator[None]:
        yield

    with tenant.use("acme"):
        for fn in (coroutine, generator):
            with pytest.raises(InvalidInputError, match="plain function"):
                tenant.bind(fn)
