"""The tenant comes from tenant.use(...), never a parameter, and is isolated per thread and task."""

from __future__ import annotations

import asyncio
import threading

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
