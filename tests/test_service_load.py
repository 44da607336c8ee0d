"""The HTTP service under load loses nothing: many concurrent clients on loopback, every write
readable after, the counts equal, and two tenants' clients never see each other's memories.

Bounded in count and time (16 clients, 25 writes each, and 25 recalls, a deadline on the whole
run), loopback only; on the local store and on a real PostgreSQL. Structural asserts only:
no timing is asserted (``benchmarks/service_load.py`` measures throughput and latency).
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx2
import pytest
from _postgres import TestPostgres, release_store
from test_service import Service, start_service

from mainsdk_memory import tenant

CLIENTS = 16
WRITES = 25
DEADLINE = 300  # seconds for the whole run: a bound, not a measurement


@pytest.fixture(scope="module", params=["local", "postgresql"])
def loaded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    root = tmp_path_factory.mktemp(f"service-load-{request.param}")
    if request.param == "local":
        yield from start_service(root, f"local:{root / 'store'}", "--workers", "4")
        return
    postgres: TestPostgres = request.getfixturevalue("postgres")
    url = postgres.new_database()
    try:
        yield from start_service(root, url, "--workers", "4")
    finally:
        release_store(url)


def test_concurrent_clients_lose_no_write_and_see_only_their_own(loaded: Service) -> None:
    issuer = loaded.issuer
    written: dict[tuple[str, str], list[str]] = {}
    failures: list[str] = []

    async def client(number: int) -> None:
        tenant_id = f"load-{number % 2}"  # two tenants, the same person ids in both
        person = f"p{number // 2:02d}"
        headers = issuer.agent(tenant_id, person=person, agent="loader")
        ids = written.setdefault((tenant_id, person), [])
        async with httpx2.AsyncClient(base_url=loaded.url, headers=headers,
                                      timeout=httpx2.Timeout(120)) as http:
            for step in range(WRITES):
                text = f"Item {step} of client {number}: order {number * 1000 + step} shipped."
                answer = await http.post(
                    "/v1/memories", json={"text": text, "formation": False,
                                          "metadata": {"client": number, "step": step}})
                if answer.status_code != 201:
                    failures.append(f"write {number}/{step}: {answer.status_code}")
                    continue
                ids.append(answer.json()["id"])
                hits = await http.post("/v1/recall", json={"query": f"order {number * 1000}",
                                                           "top_k": 3})
                if hits.status_code != 200:
                    failures.append(f"recall {number}/{step}: {hits.status_code}")

    async def everyone() -> None:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as group:
                for number in range(CLIENTS):
                    group.start_soon(client, number)

    anyio.run(everyone)
    assert failures == []
    assert len(written) == CLIENTS
    assert all(len(ids) == WRITES for ids in written.values())
    every_id = [memory_id for ids in written.values() for memory_id in ids]
    assert len(set(every_id)) == CLIENTS * WRITES  # no write lost or merged
    with httpx2.Client(base_url=loaded.url, timeout=60) as http:
        for (tenant_id, person), ids in written.items():
            headers = issuer.agent(tenant_id, person=person, agent="loader")
            page = http.get("/v1/memories", params={"limit": 100}, headers=headers).json()
            assert sorted(item["id"] for item in page["items"]) == sorted(ids)
            assert page["next_cursor"] is None
            assert all(item["scope"]["tenant"] == tenant_id for item in page["items"])
            for memory_id in ids[:3]:
                assert http.get(f"/v1/memories/{memory_id}", headers=headers).status_code == 200
            # the same person id in the other tenant sees none of them
            other = issuer.agent(f"load-{1 - int(tenant_id[-1])}", person=person,
                                 agent="loader")
            assert http.get(f"/v1/memories/{ids[0]}", headers=other).status_code == 404
    with loaded.open() as memory:
        for (tenant_id, person), ids in written.items():
            with tenant.use(tenant_id):
                held = memory.person(person).list(limit=100).items
                assert sorted(record.id for record in held) == sorted(ids)
    served = [line for line in loaded.access_lines() if line["route"] == "/v1/memories"
              and line["method"] == "POST"]
    assert len(served) == CLIENTS * WRITES
    assert all(line["status"] == 201 for line in served)

