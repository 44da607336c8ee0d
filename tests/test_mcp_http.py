"""The MCP tools over streamable HTTP with bearer tokens, through the official SDK's own client.

One real ``memory mcp --transport http`` process (uvicorn on 127.0.0.1, a free port) serves
the whole module; it trusts the public keys of an issuer the tests make up (RSA, EC P-256 and
Ed25519 keys generated here, never stored in the repository) and names the session from the
``mcp_session`` claim when a token has one. Each test works in its own tenant, so the tests
share the server and still see nothing of each other; the store is checked in Python.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, TextContent

from mainsdk_memory import AgentLimits, Memory, Trust, tenant
from mainsdk_memory._context import parse_context
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.mcp_server import FORGET, LIST, RECALL, REMEMBER, WORKING_GET, WORKING_SET

MEMORY_COMMAND = Path(sys.executable).parent / "memory"
ISSUER = "https://issuer.test"
AUDIENCE = "mainsdk-memory"
TEST_TIMEOUT = 120  # seconds for a whole test body
CALL_TIMEOUT = 30
START_TIMEOUT = 60
CLIENT = Implementation(name="mcp-http-tests", version="1")

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


@dataclass(frozen=True)
class Issuer:
    """The made-up identity provider: one key per algorithm, by kid."""

    keys: dict[str, tuple[str, PrivateKey]]  # kid -> (algorithm, private key)

    def token(
        self,
        *,
        tenant: str | None = "acme",
        sub: str | None = "ada",
        agent: str | None = "bot",
        kid: str = "rsa-1",
        lifetime: int = 300,
        **claims: Any,
    ) -> str:
        algorithm, key = self.keys[kid]
        payload: dict[str, Any] = {
            "iss": ISSUER, "aud": AUDIENCE, "iat": int(time.time()),
            "exp": int(time.time()) + lifetime,
        }
        for name, value in (("tenant", tenant), ("sub", sub), ("agent", agent)):
            if value is not None:
                payload[name] = value
        payload.update(claims)
        return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": kid})


@dataclass(frozen=True)
class HttpServer:
    url: str
    root: Path
    store: str
    keys: Path
    audit: Path
    issuer: Issuer
    process: subprocess.Popen[bytes]

    def open(self) -> Memory:
        return Memory.open(self.store, keys=self.keys, app="app")

    def stderr(self) -> str:
        return (self.root / "server.err").read_text()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _public_jwk(kid: str, key: PrivateKey) -> dict[str, Any]:
    if isinstance(key, rsa.RSAPrivateKey):
        jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        jwk = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("mcp-http")
    keys = root / "keys"
    KeyStore.create(keys)
    issuer = Issuer(keys={
        "rsa-1": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        "ec-1": ("ES256", ec.generate_private_key(ec.SECP256R1())),
        "ed-1": ("EdDSA", ed25519.Ed25519PrivateKey.generate()),
    })
    jwks = root / "issuer-jwks.json"  # public keys only
    jwks.write_text(json.dumps(
        {"keys": [_public_jwk(kid, key) for kid, (_, key) in issuer.keys.items()]}))
    port = _free_port()
    store = f"local:{root / 'store'}"
    audit = root / "audit.jsonl"
    argv = [
        str(MEMORY_COMMAND), "mcp", "--transport", "http", "--host", "127.0.0.1",
        "--port", str(port), "--store", store, "--keys", str(keys), "--app", "app",
        "--token-issuer", ISSUER, "--token-audience", AUDIENCE, "--token-jwks", str(jwks),
        "--claim-session", "mcp_session", "--audit", str(audit),
    ]
    with (root / "server.err").open("wb") as errlog:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, (root / "server.err").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)
        yield HttpServer(url=f"http://127.0.0.1:{port}/mcp", root=root, store=store,
                         keys=keys, audit=audit, issuer=issuer, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(body: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            await body()

    anyio.run(bounded)


@asynccontextmanager
async def connect(server: HttpServer, token: str) -> AsyncIterator[ClientSession]:
    """The SDK's streamable HTTP client, every request carrying ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(CALL_TIMEOUT)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT, client_info=CLIENT)
        as session,
    ):
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def refused(result: CallToolResult, code: str) -> str:
    message = text_of(result)
    assert result.is_error, message
    assert f"[{code};" in message
    return message


def recalled(result: CallToolResult) -> list[str]:
    """The ids of a recall: the block's and the structured items', which must agree."""
    ids = [entry.id for entry in parse_context(text_of(result))]
    assert [item["id"] for item in ok(result)["items"]] == ids
    return ids


def raw_dump(server: HttpServer) -> list[bytes]:
    with server.open() as memory:
        return sorted(blob for _, blob in memory.driver.raw_dump())


# -- the walls between tokens ----------------------------------------------------------------


def test_two_tenants_tokens_see_nothing_of_each_other(server: HttpServer) -> None:
    issuer = server.issuer
    acme = issuer.token(tenant="t-one", kid="rsa-1")
    globex = issuer.token(tenant="t-two", kid="ec-1")  # the same person and agent names
    ids: dict[str, str] = {}

    async def body() -> None:
        async with connect(server, acme) as one, connect(server, globex) as two:
            ids["one"] = ok(await one.call_tool(
                REMEMBER, {"text": "Ada's locker code is 4417."}))["id"]
            ids["two"] = ok(await two.call_tool(
                REMEMBER, {"text": "Ada's locker code is 9902."}))["id"]
            assert recalled(await one.call_tool(RECALL, {"query": "locker code"})) == [ids["one"]]
            assert recalled(await two.call_tool(RECALL, {"query": "locker code"})) == [ids["two"]]
            assert [item["id"] for item in ok(await two.call_tool(LIST, {}))["items"]] == [
                ids["two"]]
            # The other tenant's id is as unknown as an id that never existed.
            foreign = refused(await two.call_tool(FORGET, {"id": ids["one"]}), "MAIN-MEM-E020")
            unknown = refused(
                await two.call_tool(FORGET, {"id": "mem_" + "a" * 26}), "MAIN-MEM-E020")
            assert foreign == unknown
            # An argument naming the tenant is refused, not obeyed.
            message = refused(await two.call_tool(
                RECALL, {"query": "locker", "tenant": "t-one"}), "MAIN-MEM-E010")
            assert "4417" not in message

    run(body)
    with server.open() as memory:
        with tenant.use("t-one"):
            [one] = memory.person("ada").list().items
            assert memory.person("ada").pending() == []
        with tenant.use("t-two"):
            [two] = memory.person("ada").list().items
    assert (one.id, one.scope.tenant, one.trust) == (ids["one"], "t-one", Trust.UNTRUSTED)
    assert (two.id, two.scope.tenant, two.scope.agent) == (ids["two"], "t-two", "bot")
    assert one.source.kind == "mcp" and (one.source.ref or "").startswith("mcp-http-tests#")


def test_two_persons_tokens_see_nothing_of_each_other(server: HttpServer) -> None:
    issuer = server.issuer
    with server.open() as memory, tenant.use("t-persons"):
        memory.grant("bot", read="all")  # even reading every agent's, never another person's
        bea_own = memory.person("bea").remember("Bea keeps her spare key under the flowerpot.")
    ada = issuer.token(tenant="t-persons", sub="ada", kid="ed-1")
    bea = issuer.token(tenant="t-persons", sub="bea", kid="rsa-1")
    ids: dict[str, str] = {}

    async def body() -> None:
        async with connect(server, ada) as for_ada, connect(server, bea) as for_bea:
            ids["ada"] = ok(await for_ada.call_tool(
                REMEMBER, {"text": "Ada's spare key is with her neighbour."}))["id"]
            assert recalled(await for_ada.call_tool(RECALL, {"query": "spare key"})) == [
                ids["ada"]]
            assert recalled(await for_bea.call_tool(RECALL, {"query": "spare key"})) == [
                bea_own.id]
            ok(await for_ada.call_tool(WORKING_SET, {"key": "step", "value": "ada's"}))
            assert ok(await for_bea.call_tool(WORKING_GET, {"key": "step"}))["found"] is False
            refused(await for_ada.call_tool(FORGET, {"id": bea_own.id}), "MAIN-MEM-E020")
            message = refused(await for_ada.call_tool(
                RECALL, {"query": "spare key", "person": "bea"}), "MAIN-MEM-E010")
            assert "flowerpot" not in message

    run(body)
    with server.open() as memory, tenant.use("t-persons"):
        assert [r.id for r in memory.person("bea").list().items] == [bea_own.id]
        assert memory.person("bea").pending() == []
        assert [r.id for r in memory.person("ada").list().items] == [ids["ada"]]


def test_each_mcp_session_has_its_own_memory_session_unless_the_token_names_one(
    server: HttpServer,
) -> None:
    issuer = server.issuer
    plain = issuer.token(tenant="t-sessions")
    named = issuer.token(tenant="t-sessions", mcp_session="chat-7")
    ids: dict[str, str] = {}

    async def body() -> None:
        async with connect(server, plain) as first:
            ids["first"] = ok(await first.call_tool(
                REMEMBER, {"text": "Ada's parcel locker is 17."}))["id"]
            assert recalled(await first.call_tool(RECALL, {"query": "parcel locker"})) == [
                ids["first"]]
        async with connect(server, plain) as second:  # the same token, a new MCP session
            assert recalled(await second.call_tool(RECALL, {"query": "parcel locker"})) == []
        for _ in range(2):  # the session claim: one memory session across MCP sessions
            async with connect(server, named) as client:
                seen = recalled(await client.call_tool(RECALL, {"query": "parcel locker"}))
                if "named" not in ids:
                    assert seen == []
                    ids["named"] = ok(await client.call_tool(
                        REMEMBER, {"text": "Ada's parcel locker moved to 23."}))["id"]
                else:
                    assert seen == [ids["named"]]

    run(body)
    with server.open() as memory, tenant.use("t-sessions"):
        ada = memory.person("ada")
        first, named_one = ada.get(ids["first"]), ada.get(ids["named"])
    assert first.scope.session is not None and first.scope.session.startswith("mcp-")
    assert len(first.scope.session) == len("mcp-") + 16
    assert named_one.scope.session == "chat-7"


# -- tokens that are refused -----------------------------------------------------------------


_INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}},
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _bad_tokens(issuer: Issuer) -> dict[str, str | None]:
    now = int(time.time())
    good = {"iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, "tenant": "t-bad", "sub": "ada",
            "agent": "bot"}
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    unsigned = jwt.encode(good, None, algorithm="none")
    return {
        "missing": None,
        "not a jwt": "not-a-jwt",
        "expired": issuer.token(tenant="t-bad", lifetime=-120),  # past the 30 s leeway
        "wrong key": jwt.encode(good, stranger, algorithm="RS256", headers={"kid": "rsa-1"}),
        "unknown kid": jwt.encode(good, stranger, algorithm="RS256", headers={"kid": "rsa-9"}),
        "alg none": unsigned,
        "alg none, kid": jwt.encode(good, None, algorithm="none", headers={"kid": "rsa-1"}),
        "wrong audience": issuer.token(tenant="t-bad", aud="another-service"),
        "wrong issuer": issuer.token(tenant="t-bad", iss="https://evil.test"),
        "HS256 not configured": jwt.encode(good, secrets.token_bytes(32), algorithm="HS256"),
        "no tenant claim": issuer.token(tenant=None),
        "no agent claim": issuer.token(tenant="t-bad", agent=None),
        "a bad tenant": issuer.token(tenant="no such tenant!"),
        "no exp": jwt.encode({k: v for k, v in good.items() if k != "exp"},
                             issuer.keys["rsa-1"][1], algorithm="RS256",
                             headers={"kid": "rsa-1"}),
    }


def test_bad_tokens_get_401_with_a_bearer_challenge_and_change_nothing(
    server: HttpServer,
) -> None:
    issuer = server.issuer
    before = raw_dump(server)
    audit_before = server.audit.read_text() if server.audit.exists() else ""
    # A real MCP session of a good token, so a refused request names a live session too.
    good = issuer.token(tenant="t-bad")
    with httpx2.Client(timeout=CALL_TIMEOUT) as http:
        opened = http.post(server.url, json=_INITIALIZE,
                           headers={**_HEADERS, "Authorization": f"Bearer {good}"})
        assert opened.status_code == 200
        session_id = opened.headers["mcp-session-id"]
        remember = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": REMEMBER, "arguments": {"text": "Ada's pin is 1234."}}}
        for what, token in _bad_tokens(issuer).items():
            for body, session in ((_INITIALIZE, None), (remember, session_id)):
                headers = dict(_HEADERS)
                if token is not None:
                    headers["Authorization"] = f"Bearer {token}"
                if session is not None:
                    headers["mcp-session-id"] = session
                answer = http.post(server.url, json=body, headers=headers)
                assert answer.status_code == 401, what
                challenge = answer.headers["www-authenticate"]
                assert challenge.startswith("Bearer "), what
                assert ('error="invalid_token"' in challenge) == (token is not None), what
                assert answer.content == b"", what
                assert "mcp-session-id" not in answer.headers, what
        answer = http.post(server.url, json=_INITIALIZE,
                           headers={**_HEADERS, "Authorization": f"Basic {good}"})
        assert answer.status_code == 401
    assert raw_dump(server) == before
    assert (server.audit.read_text() if server.audit.exists() else "") == audit_before
    with server.open() as memory, tenant.use("t-bad"):
        assert memory.person("ada").list().items == []
    log = server.stderr()
    for reason in ("expired", "signature", "algorithm", "audience", "issuer", "claims", "key"):
        assert f"a bearer token was refused ({reason})" in log  # the reason, ...
    for token in _bad_tokens(issuer).values():  # ... never the token
        if token:
            assert token not in log


def test_the_official_client_cannot_get_in_with_a_bad_token(server: HttpServer) -> None:
    expired = server.issuer.token(tenant="t-client", lifetime=-120)

    async def body() -> None:
        # The SDK's client fails its initialize (an MCPError, inside its task groups).
        with pytest.raises(BaseExceptionGroup) as caught:
            async with connect(server, expired) as client:
                await client.call_tool(REMEMBER, {"text": "Ada's pin is 1234."})
        assert caught.value.subgroup(lambda exc: isinstance(exc, MCPError)) is not None

    run(body)
    with server.open() as memory, tenant.use("t-client"):
        assert memory.person("ada").list().items == []


def test_an_mcp_session_is_bound_to_the_token_that_opened_it(server: HttpServer) -> None:
    issuer = server.issuer
    owner = issuer.token(tenant="t-bind")
    other_tenant = issuer.token(tenant="t-bind-2")
    other_person = issuer.token(tenant="t-bind", sub="bea")
    same_again = issuer.token(tenant="t-bind", kid="ec-1")  # a new token for the same caller
    with httpx2.Client(timeout=CALL_TIMEOUT) as http:
        opened = http.post(server.url, json=_INITIALIZE,
                           headers={**_HEADERS, "Authorization": f"Bearer {owner}"})
        session_id = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(server.url, json=initialized, headers={
            **_HEADERS, "Authorization": f"Bearer {owner}",
            "mcp-session-id": session_id}).status_code == 202
        remember = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": REMEMBER, "arguments": {"text": "Ada's pin is 1234."}}}
        for token in (other_tenant, other_person):
            answer = http.post(server.url, json=remember, headers={
                **_HEADERS, "Authorization": f"Bearer {token}", "mcp-session-id": session_id})
            assert answer.status_code == 404  # as if the session did not exist
        answer = http.post(server.url, json=remember, headers={
            **_HEADERS, "Authorization": f"Bearer {same_again}", "mcp-session-id": session_id})
        assert answer.status_code == 200
    with server.open() as memory:
        with tenant.use("t-bind"):
            [kept] = memory.person("ada").list().items
            assert memory.person("bea").list().items == []
        with tenant.use("t-bind-2"):
            assert memory.person("ada").list().items == []
    assert kept.text == "Ada's pin is 1234."


# -- the agent's grant, limits and kill switch -----------------------------------------------


def test_an_agent_the_app_forbids_gets_the_sdks_error_as_a_tool_error(
    server: HttpServer,
) -> None:
    issuer = server.issuer
    with server.open() as memory, tenant.use("t-agents"):
        other = memory.acting_for("ada", agent="other-bot").remember("Ada's gate code is 5521.")
        memory.set_limits("slow-bot", AgentLimits(writes_per_minute=1))
    own = issuer.token(tenant="t-agents", agent="bot")  # read "own": not other-bot's memory
    killed = issuer.token(tenant="t-agents", agent="killed-bot")
    slow = issuer.token(tenant="t-agents", agent="slow-bot")

    async def body() -> None:
        async with connect(server, own) as client:
            assert recalled(await client.call_tool(RECALL, {"query": "gate code"})) == []
            refused(await client.call_tool(FORGET, {"id": other.id}), "MAIN-MEM-E020")
        async with connect(server, killed) as client:
            ok(await client.call_tool(REMEMBER, {"text": "Ada's bike is blue."}))
            with server.open() as memory, tenant.use("t-agents"):
                memory.kill("killed-bot")
            for tool, arguments in [(REMEMBER, {"text": "Ada's car is red."}),
                                    (RECALL, {"query": "bike"}), (LIST, {})]:
                message = refused(await client.call_tool(tool, arguments), "MAIN-MEM-E012")
                assert "blue" not in message and "red" not in message
        async with connect(server, slow) as client:
            ok(await client.call_tool(REMEMBER, {"text": "Ada's train leaves at 8."}))
            refused(await client.call_tool(REMEMBER, {"text": "Ada's bus leaves at 9."}),
                    "MAIN-MEM-E013")

    run(body)
    with server.open() as memory, tenant.use("t-agents"):
        texts = sorted(record.text for record in memory.person("ada").list().items)
        assert memory.person("ada").pending() == []
    assert texts == ["Ada's bike is blue.", "Ada's gate code is 5521.", "Ada's train leaves at 8."]


# -- start-up --------------------------------------------------------------------------------


def test_the_transport_options_are_checked_before_anything_starts(tmp_path: Path) -> None:
    KeyStore.create(tmp_path / "keys")
    jwks = tmp_path / "jwks.json"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks.write_text(json.dumps({"keys": [_public_jwk("rsa-1", key)]}))
    base = [str(MEMORY_COMMAND), "mcp", "--store", f"local:{tmp_path / 'store'}",
            "--keys", str(tmp_path / "keys"), "--app", "app"]
    tokens = ["--token-issuer", ISSUER, "--token-audience", AUDIENCE, "--token-jwks", str(jwks)]
    for extra, words in [
        (["--transport", "http"], "--token-issuer"),
        (["--transport", "http", *tokens, "--tenant", "acme"], "drop --tenant"),
        (["--transport", "http", *tokens, "--person", "ada", "--session", "s"], "drop --person"),
        (["--transport", "http", "--token-issuer", ISSUER, "--token-audience", AUDIENCE],
         "JWKS"),
        (["--transport", "http", *tokens, "--token-algorithms", "RS256,none"], "'none'"),
        (["--transport", "http", *tokens, "--token-algorithms", "HS256"], "secret"),
        (["--transport", "http", *tokens, "--port", "70000"], "--port"),
        (["--tenant", "acme", "--agent", "bot"], "--person"),
        (["--tenant", "acme", "--person", "ada", "--agent", "bot", *tokens], "http only"),
    ]:
        done = subprocess.run([*base, *extra], capture_output=True, text=True,
                              timeout=CALL_TIMEOUT, stdin=subprocess.DEVNULL)
        assert done.returncode == 1 and done.stdout == "", extra
        assert done.stderr.startswith("memory: ") and words in done.stderr, (extra, done.stderr)
    assert not (tmp_path / "store").exists()  # nothing was opened
