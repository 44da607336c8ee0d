"""The bearer-token verifier (``mainsdk_memory._tokens``) on its own: what it accepts, what it
refuses and why, with keys generated here (never stored in the repository).

The HTTP transport's tests (tests/test_mcp_http.py) send these tokens through a real server;
these check the settings the server is not started with: HS256 with a secret, a JWKS URL,
the leeway, other claim names and the configuration errors.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from mainsdk_memory import ConfigurationError, Memory, tenant
from mainsdk_memory._errors import TokenError
from mainsdk_memory._tokens import ClaimNames, TokenSettings, TokenVerifier
from mainsdk_memory.keys import KeyStore
from mainsdk_memory.mcp_server import REMEMBER, build_http_app

ISSUER = "https://issuer.test"
AUDIENCE = "mainsdk-memory"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def claims(**extra: Any) -> dict[str, Any]:
    return {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300, "tenant": "acme",
            "sub": "ada", "agent": "bot", **extra}


def jwks_of(*keys: tuple[str, Any]) -> dict[str, Any]:
    out = []
    for kid, key in keys:
        algorithm = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
        out.append({**algorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid})
    return {"keys": out}


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks_of(("rsa-1", RSA_KEY), ("ec-1", EC_KEY))))
    return path


def refused(verifier: TokenVerifier, token: str, reason: str) -> None:
    with pytest.raises(TokenError) as caught:
        verifier.verify(token)
    assert caught.value.reason == reason
    message = str(caught.value)
    assert token not in message and "acme" not in message and "ada" not in message
    assert "MAIN-MEM-E120" in message


def test_hs256_only_when_configured_with_a_secret(jwks_file: Path) -> None:
    secret = secrets.token_bytes(32)
    shared = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                         algorithms=("HS256",), secret=secret))
    assert shared.verify(jwt.encode(claims(), secret, algorithm="HS256")).person == "ada"
    refused(shared, jwt.encode(claims(), secrets.token_bytes(32), algorithm="HS256"),
            "signature")
    refused(shared, jwt.encode(claims(), RSA_KEY, algorithm="RS256"), "algorithm")
    asymmetric = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                             jwks_file=jwks_file))
    # the classic confusion: HS256 "signed" with the issuer's public key as the secret
    public_pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = b".".join(
        base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=")
        for part in ({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, claims()))
    mac = hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    forged = (signing_input + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")).decode()
    refused(asymmetric, forged, "algorithm")
    for bad in (
        {"algorithms": ("HS256",)},  # no secret
        {"algorithms": ("RS256",), "secret": secret, "jwks_file": jwks_file},  # secret, no HS256
        {"algorithms": ("HS256",), "secret": b"short"},
        {"algorithms": ("none",)},
        {"algorithms": ("RS256", "none"), "jwks_file": jwks_file},
        {"algorithms": ()},
        {"algorithms": ("RS256",)},  # no keys
    ):
        with pytest.raises(ConfigurationError):
            TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE, **bad))


def test_the_leeway_the_kid_and_the_claim_names(jwks_file: Path) -> None:
    verifier = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                           jwks_file=jwks_file))
    just_expired = claims(exp=int(time.time()) - 10)  # within the default 30 s
    assert verifier.verify(jwt.encode(just_expired, RSA_KEY, algorithm="RS256",
                                      headers={"kid": "rsa-1"})).agent == "bot"
    refused(verifier, jwt.encode(claims(exp=int(time.time()) - 60), RSA_KEY,
                                 algorithm="RS256", headers={"kid": "rsa-1"}), "expired")
    refused(verifier, jwt.encode(claims(nbf=int(time.time()) + 120), RSA_KEY,
                                 algorithm="RS256", headers={"kid": "rsa-1"}), "not-yet-valid")
    # without a kid: the one key of its algorithm; a key of another algorithm never
    assert verifier.verify(jwt.encode(claims(), EC_KEY, algorithm="ES256")).tenant == "acme"
    refused(verifier, jwt.encode(claims(), EC_KEY, algorithm="ES256", headers={"kid": "rsa-1"}),
            "key")
    refused(verifier, jwt.encode(claims(aud=["other", "more"]), RSA_KEY, algorithm="RS256"),
            "audience")
    assert verifier.verify(jwt.encode(claims(aud=["other", AUDIENCE]), RSA_KEY,
                                      algorithm="RS256")).issuer == ISSUER
    renamed = TokenVerifier(TokenSettings(
        issuer=ISSUER, audience=AUDIENCE, jwks_file=jwks_file,
        claims=ClaimNames(tenant="org", person="uid", agent="azp", session="sid")))
    token = jwt.encode(claims(org="globex", uid="bea", azp="desk", sid="chat-1"), RSA_KEY,
                       algorithm="RS256")
    got = renamed.verify(token)
    assert (got.tenant, got.person, got.agent, got.session, got.subject) == (
        "globex", "bea", "desk", "chat-1", "ada")
    refused(renamed, jwt.encode(claims(org="globex", uid="bea"), RSA_KEY, algorithm="RS256"),
            "claims")
    refused(renamed, jwt.encode(claims(org="globex", uid="bea", azp="desk", sid="a b"),
                                RSA_KEY, algorithm="RS256"), "claims")
    assert "secret" not in repr(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                              algorithms=("HS256",), secret=b"s" * 32))


def test_a_jwks_file_with_a_symmetric_key_or_none_at_all_is_refused_at_start(
    tmp_path: Path,
) -> None:
    for document in ({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}]}, {"keys": []},
                     {"no": "keys"}, "not json"):
        path = tmp_path / "jwks.json"
        path.write_text(document if isinstance(document, str) else json.dumps(document))
        with pytest.raises(ConfigurationError):
            TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=path))
    with pytest.raises(ConfigurationError):
        TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                    jwks_file=tmp_path / "missing.json"))
    two = tmp_path / "two.json"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    two.write_text(json.dumps(jwks_of(("rsa-1", RSA_KEY), ("rsa-2", other))))
    verifier = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=two))
    refused(verifier, jwt.encode(claims(), RSA_KEY, algorithm="RS256"), "key")  # which one?
    assert verifier.verify(jwt.encode(claims(), other, algorithm="RS256",
                                      headers={"kid": "rsa-2"})).person == "ada"


@pytest.fixture
def jwks_url() -> Iterator[tuple[str, list[str]]]:
    served = json.dumps(jwks_of(("rsa-1", RSA_KEY))).encode()
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(served)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json", requests
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_keys_from_a_jwks_url_only_when_configured(jwks_url: tuple[str, list[str]]) -> None:
    url, requests = jwks_url
    verifier = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE, jwks_url=url))
    assert requests == []  # nothing fetched until a token needs a key
    token = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    assert verifier.verify(token).person == "ada"
    assert verifier.verify(token).person == "ada"
    assert requests == ["/jwks.json"]  # cached
    refused(verifier, jwt.encode(claims(), RSA_KEY, algorithm="RS256"), "key")  # no kid
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused(verifier, jwt.encode(claims(), stranger, algorithm="RS256",
                                 headers={"kid": "rsa-1"}), "signature")
    for bad in ("http://issuer.example.com/jwks.json", "file:///etc/passwd", "ftp://x/y"):
        with pytest.raises(ConfigurationError):
            TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE, jwks_url=bad))


def test_a_token_of_another_role_is_not_an_agent(jwks_file: Path) -> None:
    """A person's or an admin's token of the HTTP service, even naming an agent, is refused:
    the MCP server acts for agents only. No role claim, or ``agent``, is an agent's token."""
    verifier = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                           jwks_file=jwks_file))

    def sign(**extra: Any) -> str:
        return jwt.encode(claims(**extra), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})

    for role in ("person", "admin", "", "Agent", ["agent"], 1):
        refused(verifier, sign(role=role), "claims")
    assert verifier.verify(sign(role="agent")).agent == "bot"
    assert verifier.verify(sign()).agent == "bot"
    renamed = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                          jwks_file=jwks_file, claims=ClaimNames(role="kind")))
    refused(renamed, sign(kind="person"), "claims")
    assert renamed.verify(sign(role="person", kind="agent")).person == "ada"
    # An agent claim named "role" names the agent, not a role.
    agent_is_role = TokenVerifier(TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                                jwks_file=jwks_file,
                                                claims=ClaimNames(agent="role")))
    assert agent_is_role.verify(sign(role="desk")).agent == "desk"


_INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}},
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_mcp_over_http_answers_401_to_a_person_or_admin_token(
    tmp_path: Path, jwks_file: Path
) -> None:
    """Through a real server on loopback: a person's or an admin's token naming an agent
    opens no MCP session and writes nothing; an agent's token does."""
    KeyStore.create(tmp_path / "keys")
    memory = Memory.open(f"local:{tmp_path / 'store'}", keys=tmp_path / "keys", app="app")
    app = build_http_app(memory, tokens=TokenSettings(issuer=ISSUER, audience=AUDIENCE,
                                                      jwks_file=jwks_file))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)

    def bearer(**extra: Any) -> dict[str, str]:
        token = jwt.encode(claims(**extra), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
        return {**_HEADERS, "Authorization": f"Bearer {token}"}

    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with httpx2.Client(timeout=30) as http:
            opened = http.post(url, json=_INITIALIZE, headers=bearer(role="agent"))
            assert opened.status_code == 200, opened.text
            session = opened.headers["mcp-session-id"]
            remember = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": REMEMBER,
                                   "arguments": {"text": "Ada's pin is 1234."}}}
            for role in ("person", "admin"):
                for body, headers in (
                    (_INITIALIZE, bearer(role=role)),
                    (remember, {**bearer(role=role), "mcp-session-id": session}),
                ):
                    answer = http.post(url, json=body, headers=headers)
                    assert answer.status_code == 401, role
                    assert answer.headers["www-authenticate"].startswith("Bearer ")
                    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
                    assert answer.content == b"" and "mcp-session-id" not in answer.headers
        with tenant.use("acme"):
            assert memory.person("ada").list().items == []
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()
        memory.close()
    assert not thread.is_alive()
