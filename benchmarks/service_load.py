"""The HTTP service under load against its baseline: the same calls through the SDK in-process.

::

    python -m benchmarks.service_load [--clients 16] [--operations 50] [--slice 5]
                                      [--workers 4] [--store local|sqlite]

Starts ``memory serve`` (``python -m mainsdk_memory._cli_serve``, the same options) on a free
127.0.0.1 port over a fresh store and key store in a temporary folder, with a made-up token
issuer (an Ed25519 key generated here). Each HTTP client is one agent token for its own person
and runs ``--operations`` rounds of a write (``POST /v1/memories``, formation off) then a
recall (``POST /v1/recall``, top 5); one in four rounds also reads the memory back (``GET
/v1/memories/{id}``).

The baseline is what a Python app would do instead of running the service: the same rounds,
the same texts and queries, the same persons, through :class:`~mainsdk_memory.AsyncMemory`
(``remember``, ``recall``, ``get`` of an ``acting_for`` handle) in this process, on a store and
key store of its own of the same driver. It matches what the service does inside: the service
runs each SDK call in a bounded thread pool of ``--workers`` threads, and the baseline's
``AsyncMemory`` has ``max_workers=--workers``, with one asyncio task per client (the same
concurrency). The two are interleaved in slices: every client runs ``--slice`` rounds over
HTTP, then every client runs the same ``--slice`` rounds in-process (the next slice starts
with the in-process side, so neither always goes first); only one side runs at a time, and
each side's throughput is its requests over the sum of its own slices' wall time.

Bounded in count and time (``--deadline`` seconds for the whole run), loopback only. Prints
JSON: the machine (:func:`benchmarks.machine.describe`, with the load average at the start and
at the end), throughput and p50/p95/max latency per route for each side as the caller saw it,
the ratios (HTTP over in-process), and whether every write was readable after on each side
(``lost`` must be 0). Nothing is asserted on time: this is a measurement.
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
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ed25519
from jwt.algorithms import OKPAlgorithm

from benchmarks.machine import describe, load_average
from mainsdk_memory import AsyncMemory, Memory, MemorySDKError, tenant
from mainsdk_memory.keys import KeyStore

ISSUER = "https://issuer.bench"
AUDIENCE = "mainsdk-memory"
TENANT = "bench"
AGENT = "bench-bot"
WRITE, RECALL, GET = "POST /v1/memories", "POST /v1/recall", "GET /v1/memories/{memory_id}"

Latencies = dict[str, list[float]]


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
        {"iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + lifetime, "tenant": TENANT,
         "sub": person, "agent": AGENT, "role": "agent"},
        key, algorithm="EdDSA", headers={"kid": "bench-1"},
    )


def _person(number: int) -> str:
    return f"person-{number:03d}"


def _text(number: int, step: int) -> str:
    return f"Order {number * 10_000 + step} for client {number} shipped on day {step % 28 + 1}."


def _query(number: int, step: int) -> str:
    return f"when did order {number * 10_000 + step // 2} ship?"


async def _timed(latencies: Latencies, route: str, call: Awaitable[Any]) -> Any:
    started = time.perf_counter()
    try:
        return await call
    finally:
        latencies[route].append((time.perf_counter() - started) * 1000)


class _HttpClient:
    """One agent token's client of the service: a round is a write, a recall, maybe a get."""

    def __init__(self, http: httpx2.AsyncClient, number: int) -> None:
        self.http, self.number = http, number
        self.latencies: Latencies = defaultdict(list)
        self.written: list[str] = []
        self.errors: list[str] = []

    async def _request(self, route: str, method: str, path: str, body: Any = None) -> Any:
        answer = await _timed(self.latencies, route,
                              self.http.request(method, path, json=body))
        if answer.status_code >= 300:
            self.errors.append(f"{route}: {answer.status_code}")
            return None
        return answer.json()

    async def rounds(self, steps: range) -> None:
        for step in steps:
            record = await self._request(WRITE, "POST", "/v1/memories", {
                "text": _text(self.number, step), "formation": False})
            if record is not None:
                self.written.append(record["id"])
            await self._request(RECALL, "POST", "/v1/recall",
                                {"query": _query(self.number, step), "top_k": 5})
            if record is not None and step % 4 == 0:
                await self._request(GET, "GET", f"/v1/memories/{record['id']}")

    async def held(self) -> set[str]:
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor is not None:
                params["cursor"] = cursor
            page = (await self.http.get("/v1/memories", params=params)).json()
            seen.update(item["id"] for item in page["items"])
            cursor = page["next_cursor"]
            if cursor is None:
                return seen


class _SdkClient:
    """The same person's rounds through ``AsyncMemory`` in this process (the baseline)."""

    def __init__(self, memory: AsyncMemory, number: int) -> None:
        self.number = number
        with tenant.use(TENANT):
            self.handle = memory.acting_for(_person(number), agent=AGENT)
        self.latencies: Latencies = defaultdict(list)
        self.written: list[str] = []
        self.errors: list[str] = []

    async def rounds(self, steps: range) -> None:
        with tenant.use(TENANT):
            for step in steps:
                try:
                    record = await _timed(self.latencies, WRITE, self.handle.remember(
                        _text(self.number, step), formation=False))
                except MemorySDKError as error:  # counted, as the HTTP side counts a status
                    self.errors.append(f"{WRITE}: {type(error).__name__}")
                    record = None
                if record is not None:
                    self.written.append(record.id)
                try:
                    await _timed(self.latencies, RECALL, self.handle.recall(
                        _query(self.number, step), top_k=5))
                except MemorySDKError as error:
                    self.errors.append(f"{RECALL}: {type(error).__name__}")
                if record is not None and step % 4 == 0:
                    try:
                        await _timed(self.latencies, GET, self.handle.get(record.id))
                    except MemorySDKError as error:
                        self.errors.append(f"{GET}: {type(error).__name__}")

    async def held(self) -> set[str]:
        seen: set[str] = set()
        cursor: str | None = None
        with tenant.use(TENANT):
            while True:
                page = await self.handle.list(limit=100, cursor=cursor)
                seen.update(item.id for item in page.items)
                cursor = page.next_cursor
                if cursor is None:
                    return seen


def _summary(clients: list[_HttpClient] | list[_SdkClient], seconds: float,
             lost: int) -> dict[str, Any]:
    latencies: Latencies = defaultdict(list)
    for client in clients:
        for route, values in client.latencies.items():
            latencies[route].extend(values)
    errors = [error for client in clients for error in client.errors]
    requests = sum(len(values) for values in latencies.values())
    return {
        "requests": requests,
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:10],
        "writes": sum(len(client.written) for client in clients),
        "lost": lost,
        "seconds": round(seconds, 2),
        "throughput_rps": round(requests / seconds, 1) if seconds else None,
        "routes": {
            route: {
                "count": len(values),
                "p50_ms": round(statistics.median(values), 2),
                "p95_ms": round(_percentile(values, 0.95), 2),
                "max_ms": round(max(values), 2),
            }
            for route, values in sorted(latencies.items())
        },
    }


def _ratio(over: float | None, under: float | None) -> float | None:
    return round(over / under, 2) if over and under else None


async def _lost(clients: list[_HttpClient] | list[_SdkClient]) -> int:
    lost = 0
    for client in clients:
        lost += len(set(client.written) - await client.held())
    return lost


async def _run(url: str, key: ed25519.Ed25519PrivateKey, memory: AsyncMemory, clients: int,
               operations: int, slice_rounds: int, deadline: float) -> dict[str, Any]:
    https = [httpx2.AsyncClient(base_url=url, timeout=httpx2.Timeout(120),
                                headers={"Authorization": f"Bearer {_token(key, _person(n))}"})
             for n in range(clients)]
    over_http = [_HttpClient(http, number) for number, http in enumerate(https)]
    in_process = [_SdkClient(memory, number) for number in range(clients)]
    seconds = {"http": 0.0, "in_process": 0.0}

    async def side(name: str, steps: range) -> None:
        group: list[_HttpClient] | list[_SdkClient] = (
            over_http if name == "http" else in_process)
        started = time.perf_counter()
        await asyncio.gather(*(client.rounds(steps) for client in group))
        seconds[name] += time.perf_counter() - started

    async def interleaved() -> int:
        slices = 0
        for at in range(0, operations, slice_rounds):
            steps = range(at, min(operations, at + slice_rounds))
            order = ("http", "in_process") if slices % 2 == 0 else ("in_process", "http")
            for name in order:
                await side(name, steps)
            slices += 1
        return slices

    try:
        slices = await asyncio.wait_for(interleaved(), timeout=deadline)
        http = _summary(over_http, seconds["http"], await _lost(over_http))
        sdk = _summary(in_process, seconds["in_process"], await _lost(in_process))
    finally:
        for client in https:
            await client.aclose()
    return {
        "clients": clients,
        "operations_per_client": operations,
        "slice_rounds": slice_rounds,
        "slices": slices,
        "http": http,
        "in_process": sdk,
        "http_over_in_process": {
            "throughput": _ratio(http["throughput_rps"], sdk["throughput_rps"]),
            "routes": {
                route: {
                    "p50": _ratio(values["p50_ms"], sdk["routes"].get(route, {}).get("p50_ms")),
                    "p95": _ratio(values["p95_ms"], sdk["routes"].get(route, {}).get("p95_ms")),
                }
                for route, values in http["routes"].items()
            },
        },
    }


def _serve(argv_serve: list[str], log_path: Path, url: str) -> subprocess.Popen[bytes] | None:
    """Start ``memory serve`` and wait (at most 60 s) until it answers ``/healthz``."""
    with log_path.open("wb") as log:
        server = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv_serve, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
    ready = time.monotonic() + 60
    while True:
        if server.poll() is not None:
            sys.stderr.write(log_path.read_text())
            return None
        try:
            if httpx2.get(f"{url}/healthz", timeout=2).status_code == 200:
                return server
        except httpx2.HTTPError:
            pass
        if time.monotonic() > ready:
            _stop(server)
            return None
        time.sleep(0.1)


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


async def _measure(url: str, key: ed25519.Ed25519PrivateKey, store: str, keys: Path,
                   args: argparse.Namespace) -> dict[str, Any]:
    opened = await asyncio.to_thread(Memory.open, store, keys=keys, app="bench")
    async with AsyncMemory(opened, max_workers=args.workers) as memory:
        return await _run(url, key, memory, args.clients, args.operations, args.slice,
                          args.deadline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service_load",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--operations", type=int, default=50, help="rounds per client")
    parser.add_argument("--slice", type=int, default=5,
                        help="rounds per client in each side's turn (HTTP, then in-process)")
    parser.add_argument("--workers", type=int, default=4,
                        help="memory serve --workers, and the baseline AsyncMemory's max_workers")
    parser.add_argument("--store", choices=("local", "sqlite"), default="local")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds, at most")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 256 or not 1 <= args.operations <= 1000:
        parser.error("--clients is 1 to 256 and --operations 1 to 1000")
    if not 1 <= args.slice <= args.operations or not 1 <= args.workers <= 64:
        parser.error("--slice is 1 to --operations and --workers 1 to 64")
    with tempfile.TemporaryDirectory(prefix="service-load-") as folder:
        root = Path(folder)
        for keys in ("keys", "keys-sdk"):
            KeyStore.create(root / keys)
        key = ed25519.Ed25519PrivateKey.generate()
        jwk = {**OKPAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "bench-1",
               "use": "sig"}
        (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}))

        def store_of(name: str) -> str:
            return (f"local:{root / name}" if args.store == "local"
                    else f"sqlite:///{root / name}.db")

        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = _serve([
            sys.executable, "-m", "mainsdk_memory._cli_serve", "--host", "127.0.0.1",
            "--port", str(port), "--store", store_of("store"), "--keys", str(root / "keys"),
            "--app", "bench", "--workers", str(args.workers), "--token-issuer", ISSUER,
            "--token-audience", AUDIENCE, "--token-jwks", str(root / "jwks.json"),
        ], root / "server.err", url)
        if server is None:
            return 1
        try:
            machine = describe(root)
            result = asyncio.run(_measure(url, key, store_of("store-sdk"), root / "keys-sdk",
                                          args))
        finally:
            _stop(server)
        machine["load_average_after"] = load_average()
    result["store"] = args.store
    result["workers"] = args.workers
    print(json.dumps({"machine": machine, "service_load": result}, indent=2))
    return 0 if result["http"]["lost"] == 0 and result["in_process"]["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
