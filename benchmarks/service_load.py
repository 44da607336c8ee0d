"""The HTTP service under load: concurrent clients on loopback against a real ``memory serve``.

::

    python -m benchmarks.service_load [--clients 16] [--operations 50] [--store local|sqlite]

Starts ``memory serve`` (``python -m mainsdk_memory._cli_serve``, the same options) on a free
127.0.0.1 port over a fresh store and key store in a temporary folder, with a made-up token
issuer (an Ed25519 key generated here). Each client is one agent token for its own person
and runs ``--operations`` rounds of a write (``POST /v1/memories``) then a recall (``POST
/v1/recall``); one in four rounds also reads the memory back (``GET /v1/memories/{id}``).
Bounded in count and time (``--deadline`` seconds for the whole run), loopback only.

Prints JSON: the machine (:func:`benchmarks.machine.describe`), the totals, throughput and
p50/p95/max latency per route as the client saw it, and whether every write was readable
after (``lost`` must be 0). Nothing is asserted on time: this is a measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ed25519
from jwt.algorithms import OKPAlgorithm

from benchmarks.machine import describe
from mainsdk_memory.keys import KeyStore

ISSUER = "https://issuer.bench"
AUDIENCE = "mainsdk-memory"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    at = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[at]


def _token(key: ed25519.Ed25519PrivateKey, person: str, *, lifetime: int = 3600) -> str:
    now = int(time.time())
    return jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + lifetime, "tenant": "bench",
         "sub": person, "agent": "bench-bot", "role": "agent"},
        key, algorithm="EdDSA", headers={"kid": "bench-1"},
    )


async def _client(
    url: str, token: str, number: int, operations: int,
    latencies: dict[str, list[float]], written: list[str], errors: list[str],
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=url, headers=headers,
                                  timeout=httpx2.Timeout(120)) as http:

        async def timed(route: str, method: str, path: str, body: Any = None) -> Any:
            started = time.perf_counter()
            answer = await http.request(method, path, json=body)
            latencies[route].append((time.perf_counter() - started) * 1000)
            if answer.status_code >= 300:
                errors.append(f"{route}: {answer.status_code}")
                return None
            return answer.json()

        for step in range(operations):
            record = await timed("POST /v1/memories", "POST", "/v1/memories", {
                "text": f"Order {number * 10_000 + step} for client {number} shipped on day "
                f"{step % 28 + 1}.", "formation": False,
            })
            if record is not None:
                written.append(record["id"])
            await timed("POST /v1/recall", "POST", "/v1/recall",
                        {"query": f"when did order {number * 10_000 + step // 2} ship?",
                         "top_k": 5})
            if record is not None and step % 4 == 0:
                await timed("GET /v1/memories/{memory_id}", "GET",
                            f"/v1/memories/{record['id']}")


async def _run(url: str, key: ed25519.Ed25519PrivateKey, clients: int, operations: int,
               deadline: float) -> dict[str, Any]:
    latencies: dict[str, list[float]] = defaultdict(list)
    written: dict[int, list[str]] = {number: [] for number in range(clients)}
    errors: list[str] = []
    started = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(
        _client(url, _token(key, f"person-{number:03d}"), number, operations, latencies,
                written[number], errors)
        for number in range(clients)
    )), timeout=deadline)
    elapsed = time.perf_counter() - started
    lost = 0
    async with httpx2.AsyncClient(base_url=url, timeout=httpx2.Timeout(120)) as http:
        for number, ids in written.items():
            headers = {"Authorization": f"Bearer {_token(key, f'person-{number:03d}')}"}
            seen: set[str] = set()
            cursor: str | None = None
            while True:
                params: dict[str, Any] = {"limit": 100}
                if cursor is not None:
                    params["cursor"] = cursor
                page = (await http.get("/v1/memories", params=params, headers=headers)).json()
                seen.update(item["id"] for item in page["items"])
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            lost += len(set(ids) - seen)
    requests = sum(len(values) for values in latencies.values())
    return {
        "clients": clients,
        "operations_per_client": operations,
        "requests": requests,
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:10],
        "writes": sum(len(ids) for ids in written.values()),
        "lost": lost,
        "seconds": round(elapsed, 2),
        "throughput_rps": round(requests / elapsed, 1),
        "routes": {
            route: {
                "count": len(values),
                "p50_ms": round(statistics.median(values), 1),
                "p95_ms": round(_percentile(values, 0.95), 1),
                "max_ms": round(max(values), 1),
            }
            for route, values in sorted(latencies.items())
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service_load",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--operations", type=int, default=50, help="rounds per client")
    parser.add_argument("--workers", type=int, default=4, help="memory serve --workers")
    parser.add_argument("--store", choices=("local", "sqlite"), default="local")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds, at most")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 256 or not 1 <= args.operations <= 1000:
        parser.error("--clients is 1 to 256 and --operations 1 to 1000")
    with tempfile.TemporaryDirectory(prefix="service-load-") as folder:
        root = Path(folder)
        KeyStore.create(root / "keys")
        key = ed25519.Ed25519PrivateKey.generate()
        jwk = {**OKPAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "bench-1",
               "use": "sig"}
        (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
        store = (f"local:{root / 'store'}" if args.store == "local"
                 else f"sqlite:///{root / 'store.db'}")
        port = _free_port()
        argv_serve = [
            sys.executable, "-m", "mainsdk_memory._cli_serve", "--host", "127.0.0.1",
            "--port", str(port), "--store", store, "--keys", str(root / "keys"),
            "--app", "bench", "--workers", str(args.workers), "--token-issuer", ISSUER,
            "--token-audience", AUDIENCE, "--token-jwks", str(root / "jwks.json"),
        ]
        with (root / "server.err").open("wb") as log:
            server = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                argv_serve, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        url = f"http://127.0.0.1:{port}"
        try:
            ready = time.monotonic() + 60
            while True:
                if server.poll() is not None:
                    sys.stderr.write((root / "server.err").read_text())
                    return 1
                try:
                    if httpx2.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > ready:
                    return 1
                time.sleep(0.1)
            machine = describe(root)
            result = asyncio.run(_run(url, key, args.clients, args.operations, args.deadline))
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    result["store"] = args.store
    result["workers"] = args.workers
    print(json.dumps({"machine": machine, "service_load": result}, indent=2))
    return 0 if result["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
