"""Forget receipts: signed, id-only, verifiable by anyone with the public key, tamper-evident."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mainsdk_memory import Memory, Receipt, ReceiptError, receipts, tenant
from mainsdk_memory.keys import KeyStore

BIN = Path(sys.executable).parent


@pytest.fixture
def receipt(memory: Memory) -> Receipt:
    with tenant.use("acme"):
        record = memory.acting_for("ada", agent="bot").remember("Ada's storage unit is 4B.")
        return memory.person("ada").forget(record.id)


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_receipt_is_a_compact_eddsa_jws_with_ids_only(receipt: Receipt, keys_path: Path) -> None:
    header_b64, payload_b64, _sig = receipt.token.split(".")
    header = json.loads(base64.urlsafe_b64decode(header_b64 + "=="))
    assert header["alg"] == "EdDSA" and header["typ"] == "memory-receipt+jwt"
    assert header["kid"] == KeyStore.open(keys_path).signing_key.kid
    claims = json.loads(base64.urlsafe_b64decode(payload_b64 + "=="))
    assert set(claims) == {"iss", "jti", "iat", "op", "tenant", "app", "about", "agent",
                           "memory_id", "version_ids", "driver", "erase", "copies",
                           # the driver stores relations: what the forget took along
                           "derived_ids", "link_keys", "entity_ids"}
    # Every copy left in storage is unopenable: the memory's salt is gone (ADR 0048).
    assert (claims["erase"], claims["copies"]) == ("hard", "unopenable")
    assert "storage" not in receipt.token.lower() and "4B" not in json.dumps(claims)


def test_verify_accepts_pem_jwks_and_key_objects(receipt: Receipt, keys_path: Path) -> None:
    store = KeyStore.open(keys_path)
    for key in (store.export_public_pem(), store.export_public_pem().decode(),
                store.export_public_jwks(), json.dumps(store.export_public_jwks()),
                store.signing_key.public):
        assert receipts.verify(receipt.token, key).claims == receipt.claims


def test_tampered_receipts_are_refused(receipt: Receipt, keys_path: Path) -> None:
    pem = KeyStore.open(keys_path).export_public_pem()
    header, payload, signature = receipt.token.split(".")
    forged_claims = dict(receipt.claims, memory_id="mem_" + "z" * 26)
    forgeries = [
        f"{header}.{_b64(forged_claims)}.{signature}",  # claims changed
        f"{header}.{payload}.{signature[:-3]}AAA",  # signature changed
        f"{_b64({'alg': 'none', 'typ': 'memory-receipt+jwt'})}.{payload}.",  # alg none
        f"{_b64({'alg': 'HS256', 'typ': 'memory-receipt+jwt'})}.{payload}.{signature}",
        "not a receipt",
    ]
    for forged in forgeries:
        with pytest.raises(ReceiptError):
            receipts.verify(forged, pem)


def test_a_foreign_key_does_not_verify(receipt: Receipt, tmp_path: Path) -> None:
    other = KeyStore.create(tmp_path / "other-keys")
    with pytest.raises(ReceiptError, match="another key"):
        receipts.verify(receipt.token, other.export_public_pem())
    with pytest.raises(ReceiptError, match="key id"):
        receipts.verify(receipt.token, other.export_public_jwks())


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], input=stdin, capture_output=True, text=True,
        timeout=60, check=False,
    )


def test_cli_verifies_a_receipt_and_refuses_a_forged_one(
    receipt: Receipt, keys_path: Path, tmp_path: Path
) -> None:
    exported = _run("memory", "keys", "export-public", "--keys", str(keys_path))
    assert exported.returncode == 0 and "BEGIN PUBLIC KEY" in exported.stdout
    assert "PRIVATE" not in exported.stdout
    pem = tmp_path / "issuer.pem"
    pem.write_text(exported.stdout)
    ok = _run("memory-receipt", "verify", receipt.token, "--key", str(pem))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout.split("\n", 1)[1])["memory_id"] == receipt.memory_id
    token_file = tmp_path / "receipt.jws"
    token_file.write_text(receipt.token + "\n")
    assert _run("memory-receipt", "verify", str(token_file), "--key", str(pem)).returncode == 0
    assert _run("memory-receipt", "verify", "-", "--key", str(pem),
                stdin=receipt.token).returncode == 0
    header, _payload, signature = receipt.token.split(".")
    forged = f"{header}.{_b64(dict(receipt.claims, erase='soft'))}.{signature}"
    bad = _run("memory-receipt", "verify", forged, "--key", str(pem))
    assert bad.returncode == 1 and "INVALID" in bad.stderr
    jwks = tmp_path / "issuer.jwks"
    jwks.write_text(_run("memory", "keys", "export-public", "--keys", str(keys_path),
                         "--jwks").stdout)
    assert _run("memory-receipt", "verify", receipt.token, "--key", str(jwks)).returncode == 0
    foreign = tmp_path / "foreign.pem"
    foreign.write_bytes(KeyStore.create(tmp_path / "k2").export_public_pem())
    assert _run("memory-receipt", "verify", receipt.token, "--key", str(foreign)).returncode == 1
