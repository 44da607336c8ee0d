"""Signed forget receipts: issue them (inside the SDK) and verify them (anyone, with a public key).

A receipt is a compact JWS (RFC 7515) signed with the project's Ed25519 key (``alg: EdDSA``),
header ``typ: memory-receipt+jwt`` and the signing key's ``kid``. Its claims hold ids only,
never content. Every receipt has::

    iss          "mainsdk-memory"
    jti          receipt id, "rcpt_…"
    iat          issue time (seconds since the epoch)
    op           "forget", "erase" (a whole person) or "retention" (a sweep)
    tenant, app  where the memories lived
    version_ids  every version removed ("<memory id>.v<n>")
    driver       the storage driver that confirmed the erase
    erase        "hard" (every row and index entry deleted through the driver) or "soft"
    copies       (receipts since ADR 0048) "unopenable": the key every copy of the rows was
                 sealed with is destroyed — the memory's salt in the key store's anchors (a
                 forget, a retention sweep) or the person's secret (an erase) — so no copy
                 the storage still holds (a PostgreSQL dead tuple, a WAL segment, a backup)
                 opens, with any key that is left

``forget`` adds ``about`` (the person id, or "tenant"), ``agent`` (who asked; ``@person`` for
the person), ``memory_id``, and after an approval ``request`` and ``approved_by``.
``erase`` adds ``about``, ``memory_ids`` and ``key``: ``"destroyed"`` (this erase destroyed the
person's key) or ``"absent"`` (nothing was left: an earlier erase had finished).
``retention`` adds ``subject`` (a pseudonym, or "tenant"), ``memory_id`` and ``label``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from mainsdk_memory._errors import ReceiptError
from mainsdk_memory.keys import SigningKey

__all__ = ["ISSUER", "TOKEN_TYPE", "Receipt", "verify"]

ISSUER = "mainsdk-memory"
TOKEN_TYPE = "memory-receipt+jwt"  # noqa: S105 - a JWS "typ", not a secret
_COMMON = ("iss", "jti", "iat", "op", "tenant", "app", "version_ids", "driver", "erase")
_BY_OP = {
    "forget": ("about", "agent", "memory_id"),
    "erase": ("about", "memory_ids", "key"),
    "retention": ("subject", "memory_id", "label"),
}


@dataclass(frozen=True, slots=True)
class Receipt:
    """A signed receipt: the compact JWS ``token`` and its verified ``claims``."""

    token: str
    claims: Mapping[str, Any]

    def __str__(self) -> str:
        return self.token

    @property
    def id(self) -> str:
        """The receipt id (``jti``)."""
        return str(self.claims["jti"])

    @property
    def op(self) -> str:
        """``"forget"``, ``"erase"`` or ``"retention"``."""
        return str(self.claims["op"])

    @property
    def memory_id(self) -> str:
        """The forgotten memory's id (``forget`` and ``retention`` receipts)."""
        return str(self.claims["memory_id"])

    @property
    def memory_ids(self) -> tuple[str, ...]:
        """Every memory the receipt covers."""
        if "memory_ids" in self.claims:
            return tuple(self.claims["memory_ids"])
        return (str(self.claims["memory_id"]),)

    @property
    def version_ids(self) -> tuple[str, ...]:
        """Every version id the erase removed."""
        return tuple(self.claims["version_ids"])

    @property
    def erase(self) -> str:
        """``"hard"`` or ``"soft"``: how the driver erased."""
        return str(self.claims["erase"])


def issue(claims: Mapping[str, Any], key: SigningKey, *, now: datetime) -> Receipt:
    """Sign a receipt for ``claims`` (ids only) with ``key`` at time ``now``."""
    body = {"iss": ISSUER, "jti": "rcpt_" + secrets.token_hex(12), "iat": int(now.timestamp())}
    body.update(claims)
    missing = [name for name in (*_COMMON, *_BY_OP[str(body["op"])]) if name not in body]
    if missing:  # pragma: no cover - a programming error inside the SDK
        raise ValueError(f"receipt claims missing: {missing}")
    token = jwt.encode(
        body, key.private, algorithm="EdDSA", headers={"kid": key.kid, "typ": TOKEN_TYPE}
    )
    return Receipt(token=token, claims=body)


def public_key_for(key: object, kid: str | None) -> Ed25519PublicKey:
    """The Ed25519 key to check a token signed by ``kid`` (PEM, JWK Set or key object)."""
    if isinstance(key, Ed25519PublicKey):
        return key
    if isinstance(key, str | bytes):
        text = key.decode() if isinstance(key, bytes) else key
        if text.lstrip().startswith("{"):
            try:
                key = json.loads(text)
            except ValueError as exc:
                raise ReceiptError("The public key is neither PEM nor a JWK Set.") from exc
        else:
            try:
                loaded = load_pem_public_key(text.encode())
            except ValueError as exc:
                raise ReceiptError("The public key is not a readable PEM public key.") from exc
            if not isinstance(loaded, Ed25519PublicKey):
                raise ReceiptError("The public key is not an Ed25519 key.")
            return loaded
    if isinstance(key, Mapping):
        try:
            jwks = jwt.PyJWKSet.from_dict(dict(key))
        except jwt.PyJWTError as exc:
            raise ReceiptError("The public key is neither PEM nor a JWK Set.") from exc
        for jwk in jwks.keys:
            if kid is not None and jwk.key_id == kid and isinstance(jwk.key, Ed25519PublicKey):
                return jwk.key
        raise ReceiptError(
            "No key in the key set matches the receipt's key id. Ask the issuer for their "
            "current key set (memory keys export-public --jwks)."
        )
    raise ReceiptError("Give the public key as PEM, a JWK Set, or an Ed25519PublicKey.")


class NotThisType(ReceiptError):
    """A signed token whose header names another type or algorithm than the one expected."""


def signed_claims(
    token: str,
    public_key: object,
    *,
    typ: str,
    require: Sequence[str],
    verify_iat: bool = True,
) -> dict[str, Any]:
    """The claims of ``token``, an EdDSA compact JWS of type ``typ`` signed with the project
    key (``public_key`` in any form :func:`public_key_for` takes), issued by :data:`ISSUER`
    and holding every claim of ``require`` (the signed documents of :mod:`._privacy` and
    :mod:`._importing`); :class:`NotThisType` for another type, :class:`ReceiptError` for
    anything else that does not verify. The caller words its own error."""
    try:
        header = jwt.get_unverified_header(token)
        if header.get("typ") != typ or header.get("alg") != "EdDSA":
            raise NotThisType
        claims: dict[str, Any] = jwt.decode(
            token,
            public_key_for(public_key, header.get("kid")),
            algorithms=["EdDSA"],
            issuer=ISSUER,
            options={"require": list(require), "verify_iat": verify_iat},
        )
    except jwt.PyJWTError as exc:
        raise ReceiptError from exc
    return claims


def verify(token: str, public_key: object) -> Receipt:
    """Verify a receipt's signature and claims; return it, or raise :class:`ReceiptError`.

    ``public_key`` is the issuer's key: PEM text or bytes, a JWK Set (dict or JSON text, the
    key is chosen by the receipt's ``kid``), or an :class:`Ed25519PublicKey`.
    """
    if not isinstance(token, str) or token.count(".") != 2:
        raise ReceiptError("This is not a receipt: a receipt is a compact JWS (three parts).")
    try:
        header = jwt.get_unverified_header(token.strip())
    except jwt.PyJWTError as exc:
        raise ReceiptError("This is not a receipt: its header cannot be read.") from exc
    if header.get("typ") != TOKEN_TYPE or header.get("alg") != "EdDSA":
        raise ReceiptError("This token is not a mainsdk-memory receipt (wrong type or algorithm).")
    key = public_key_for(public_key, header.get("kid"))
    try:
        claims = jwt.decode(
            token.strip(),
            key,
            algorithms=["EdDSA"],
            issuer=ISSUER,
            options={"require": list(_COMMON), "verify_exp": False},
        )
    except jwt.InvalidSignatureError as exc:
        raise ReceiptError from exc
    except jwt.PyJWTError as exc:
        raise ReceiptError(
            "The receipt is signed but its claims are not those of a receipt; it was altered "
            "or is not a receipt."
        ) from exc
    wanted = _BY_OP.get(claims["op"]) if isinstance(claims["op"], str) else None
    if (
        wanted is None
        or any(name not in claims for name in wanted)
        or claims["erase"] not in ("hard", "soft")
    ):
        raise ReceiptError("The receipt's claims are not those of a mainsdk-memory receipt.")
    return Receipt(token=token.strip(), claims=claims)
