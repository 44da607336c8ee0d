"""Bearer tokens: a JWT verified against configured keys, and the caller it names (:class:`Claims`).

An HTTP service of the SDK (``memory mcp --transport http``, and the HTTP service after it)
takes who is calling from a verified token and from nothing else. :class:`TokenVerifier`
checks a compact JWT with PyJWT against :class:`TokenSettings`:

- the algorithm is one of the configured ones, read from the header before anything else.
  The default is asymmetric only (``RS256``, ``ES256``, ``EdDSA``); ``none`` is never
  accepted, and ``HS256`` only when it is configured together with a secret (at least 32
  bytes). The keys of a JWKS never verify an ``HS*`` token: a symmetric key in a JWKS file is
  refused when the verifier is built, and one served by a JWKS URL is never used;
- the key comes from a JWKS file (read once, when the verifier is built: a missing or
  unusable file fails then) or from a JWKS URL (fetched by :class:`jwt.PyJWKClient`, cached
  for five minutes, only when one is configured: by default nothing leaves the machine),
  chosen by the token's ``kid`` (a token may leave ``kid`` out when the file holds one key
  for its algorithm);
- ``exp``, ``iss`` and ``aud`` are required; the issuer must equal the configured one and the
  audience must be among the token's; ``exp`` and ``nbf`` are checked with a small leeway
  (30 seconds by default, at most 300);
- the tenant, the person and the agent are read from claims (:class:`ClaimNames`: by default
  ``tenant``, ``sub`` and ``agent``) and checked as the SDK checks those names; the session
  from a claim only when one is named, and a token without it has none;
- for the HTTP service (``memory serve``), :meth:`TokenVerifier.verify_principal` also reads
  the role claim (``role`` by default: ``agent``, ``person`` or ``admin``) and gives a
  :class:`Principal`: an ``admin`` token names a tenant and no person.

Every refusal is a :class:`~mainsdk_memory.TokenError` whose ``reason`` is a short code and
whose message holds neither the token nor a claim's value.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import jwt

from mainsdk_memory import _validate as validate
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._errors import ConfigurationError, InvalidInputError, TokenError

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULT_ALGORITHMS",
    "DEFAULT_LEEWAY",
    "MAX_LEEWAY",
    "MAX_TOKEN_CHARS",
    "ROLES",
    "SYMMETRIC_ALGORITHMS",
    "ClaimNames",
    "Claims",
    "Principal",
    "Role",
    "TokenSettings",
    "TokenVerifier",
]

logger = logging.getLogger("mainsdk_memory.tokens")

ASYMMETRIC_ALGORITHMS: tuple[str, ...] = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)
"""The signature algorithms a JWKS key may verify."""
SYMMETRIC_ALGORITHMS: tuple[str, ...] = ("HS256",)
"""The one shared-secret algorithm, accepted only when configured with a secret."""
DEFAULT_ALGORITHMS: tuple[str, ...] = ("RS256", "ES256", "EdDSA")
"""What a verifier accepts unless told otherwise: asymmetric signatures only."""
DEFAULT_LEEWAY = 30.0
"""Seconds of clock difference allowed on ``exp`` and ``nbf``."""
MAX_LEEWAY = 300.0
"""The most leeway a verifier takes."""
MAX_TOKEN_CHARS = 16_384
"""A longer bearer token is refused unread."""
MIN_SECRET_BYTES = 32
"""The shortest ``HS256`` secret (RFC 7518 asks for at least the hash size)."""
_JWKS_CACHE_SECONDS = 300.0
_JWKS_TIMEOUT_SECONDS = 10.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

Role = Literal["agent", "person", "admin"]
"""What a token of the HTTP service lets its bearer do (its role claim)."""
ROLES: tuple[Role, ...] = ("agent", "person", "admin")
"""The roles a token of the HTTP service may carry."""


@dataclass(frozen=True, slots=True)
class ClaimNames:
    """Which claims of a token name the tenant, the person, the agent and the session.

    ``session`` is ``None`` by default: no claim names the session, and the service makes one
    up (``memory mcp`` makes a new one per MCP session). ``role`` names the claim that says
    which :data:`Role` a token of the HTTP service carries (``memory serve``; ``memory mcp``
    refuses a token whose role claim is present and not ``agent``).
    """

    tenant: str = "tenant"
    person: str = "sub"
    agent: str = "agent"
    session: str | None = None
    role: str = "role"


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """What a bearer token must satisfy, and where the keys that verify it are.

    Give ``jwks_file`` or ``jwks_url`` (or both) for the asymmetric algorithms; ``secret``
    (kept out of ``repr``) only with ``"HS256"`` in ``algorithms``, and ``"HS256"`` only with a
    ``secret``.
    """

    issuer: str
    audience: str
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    jwks_file: Path | None = None
    jwks_url: str | None = None
    secret: bytes | None = field(default=None, repr=False)
    leeway: float = DEFAULT_LEEWAY
    claims: ClaimNames = field(default_factory=ClaimNames)


@dataclass(frozen=True, slots=True)
class Claims:
    """Who a verified token says is calling: checked names, ready for the handles.

    ``session`` is ``None`` when no session claim is configured or the token has none.
    ``subject`` is the token's ``sub`` (``None`` when it has none) and ``issuer`` its ``iss``:
    with ``tenant``, ``person`` and ``agent`` they identify the principal a session is bound to.
    """

    tenant: str
    person: str
    agent: str
    session: str | None
    issuer: str
    subject: str | None
    expires_at: int


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified token of the HTTP service says is calling, and in which role.

    Every role has a ``tenant``. An ``agent`` token names the ``person`` it acts for and the
    ``agent``; a ``person`` token names the ``person`` (``agent`` is ``None``); an ``admin``
    token names neither (both ``None``): it administers the tenant's agents and reads no
    memory. ``session`` is the session claim's, when one is configured and present.
    """

    tenant: str
    role: Role
    person: str | None
    agent: str | None
    session: str | None
    issuer: str
    subject: str | None
    expires_at: int


_REASONS: tuple[tuple[type[jwt.PyJWTError], str, str], ...] = (
    # Most specific first: PyJWT's exceptions are subclasses of one another.
    (jwt.ExpiredSignatureError, "expired", "The bearer token has expired"),
    (jwt.ImmatureSignatureError, "not-yet-valid", "The bearer token is not valid yet"),
    (jwt.InvalidAudienceError, "audience", "The bearer token is for another audience"),
    (jwt.InvalidIssuerError, "issuer", "The bearer token is from another issuer"),
    (jwt.MissingRequiredClaimError, "claims", "The bearer token lacks a required claim"),
    (jwt.InvalidSignatureError, "signature", "The bearer token's signature did not verify"),
    (jwt.InvalidAlgorithmError, "algorithm", "The bearer token's algorithm is not accepted"),
    (jwt.InvalidKeyError, "key", "No configured key verifies the bearer token"),
    (jwt.PyJWKClientError, "keys-unavailable", "The issuer's keys could not be fetched"),
    (jwt.DecodeError, "malformed", "The bearer token is not a well-formed JWT"),
)


def _refused(reason: str, what: str) -> TokenError:
    return TokenError(
        f"{what}; nothing was changed. Get a new token from the issuer and retry.", reason=reason
    )


def _translate(exc: jwt.PyJWTError) -> TokenError:
    for kind, reason, what in _REASONS:
        if isinstance(exc, kind):
            return _refused(reason, what)
    return _refused("invalid", "The bearer token was refused")


def _check_settings(settings: TokenSettings) -> None:
    if not isinstance(settings.issuer, str) or not settings.issuer:
        raise ConfigurationError("The token issuer must be a non-empty string (the iss claim).")
    if not isinstance(settings.audience, str) or not settings.audience:
        raise ConfigurationError("The token audience must be a non-empty string (the aud claim).")
    if not settings.algorithms:
        raise ConfigurationError("Name at least one token algorithm, e.g. RS256.")
    known = (*ASYMMETRIC_ALGORITHMS, *SYMMETRIC_ALGORITHMS)
    for algorithm in settings.algorithms:
        if algorithm not in known:
            raise ConfigurationError(
                "A token algorithm is one of " + ", ".join(known) + " ('none' never is)."
            )
    symmetric = [alg for alg in settings.algorithms if alg in SYMMETRIC_ALGORITHMS]
    asymmetric = [alg for alg in settings.algorithms if alg in ASYMMETRIC_ALGORITHMS]
    if symmetric and settings.secret is None:
        raise ConfigurationError("HS256 needs a shared secret; give one, or drop HS256.")
    if settings.secret is not None:
        if not symmetric:
            raise ConfigurationError(
                "A shared secret is used only for HS256: add HS256 to the algorithms "
                "explicitly, or give no secret."
            )
        if not isinstance(settings.secret, bytes) or len(settings.secret) < MIN_SECRET_BYTES:
            raise ConfigurationError(
                f"The HS256 secret must be at least {MIN_SECRET_BYTES} random bytes."
            )
    if asymmetric and settings.jwks_file is None and settings.jwks_url is None:
        raise ConfigurationError(
            "Asymmetric token algorithms need the issuer's public keys: give a JWKS file or "
            "a JWKS URL."
        )
    if settings.jwks_url is not None:
        parts = urlsplit(settings.jwks_url)
        loopback = parts.scheme == "http" and parts.hostname in _LOOPBACK
        if parts.scheme != "https" and not loopback:
            raise ConfigurationError(
                "The JWKS URL must be https:// (http:// only on the loopback address)."
            )
    leeway = settings.leeway
    if (
        isinstance(leeway, bool)
        or not isinstance(leeway, int | float)
        or not math.isfinite(leeway)
        or not 0 <= leeway <= MAX_LEEWAY
    ):
        raise ConfigurationError(f"The token leeway is 0 to {MAX_LEEWAY:g} seconds.")
    names = settings.claims
    chosen = [names.tenant, names.person, names.agent]
    if names.session is not None:
        chosen.append(names.session)
    if any(not isinstance(name, str) or not name for name in chosen):
        raise ConfigurationError("A claim name is a non-empty string.")
    if len(set(chosen)) != len(chosen):
        raise ConfigurationError(
            "The tenant, person, agent and session claims must be different claims."
        )


def _load_jwks(path: Path) -> list[jwt.PyJWK]:
    """The signing keys of a JWKS file; no symmetric key among them."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        keys = document["keys"] if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise ValueError
    except (OSError, ValueError, KeyError, UnicodeError):
        raise ConfigurationError(
            "The JWKS file cannot be read as a JSON Web Key Set ({\"keys\": [...]}): check "
            "the path and export the issuer's public keys again."
        ) from None
    if any(isinstance(key, dict) and key.get("kty") == "oct" for key in keys):
        raise ConfigurationError(
            "The JWKS file holds a symmetric (oct) key: a JWKS here holds public keys only; "
            "HS256 takes its secret separately."
        )
    try:
        found = jwt.PyJWKSet(keys).keys
    except jwt.PyJWTError:
        raise ConfigurationError(
            "The JWKS file holds no usable public key (RSA, EC P-256/384/521 or Ed25519)."
        ) from None
    signing = [key for key in found if key.public_key_use in ("sig", None)]
    if not signing:
        raise ConfigurationError("The JWKS file holds no signing key (use: sig).")
    return signing


class TokenVerifier:
    """Verifies bearer tokens against :class:`TokenSettings`; :meth:`verify` gives the
    :class:`Claims` or raises :class:`~mainsdk_memory.TokenError`.

    The settings are checked and a JWKS file is read when the verifier is built (a
    :class:`~mainsdk_memory.ConfigurationError` then); a JWKS URL is fetched on first use.
    Thread-safe: it holds no state but the keys.
    """

    def __init__(self, settings: TokenSettings) -> None:
        _check_settings(settings)
        self._settings = settings
        self._file_keys = [] if settings.jwks_file is None else _load_jwks(settings.jwks_file)
        self._client = (
            None
            if settings.jwks_url is None
            else jwt.PyJWKClient(
                settings.jwks_url,
                cache_jwk_set=True,
                lifespan=_JWKS_CACHE_SECONDS,
                timeout=_JWKS_TIMEOUT_SECONDS,
            )
        )

    def __repr__(self) -> str:
        settings = self._settings
        return (
            f"TokenVerifier(issuer={settings.issuer!r}, audience={settings.audience!r}, "
            f"algorithms={settings.algorithms!r})"
        )

    @property
    def settings(self) -> TokenSettings:
        """What this verifier checks."""
        return self._settings

    def verify(self, token: object) -> Claims:
        """The claims of ``token`` (a compact JWT, without ``Bearer``), once it verifies.

        These claims act as an agent (``memory mcp``), so a token whose role claim (``role``
        by default) is present and not ``agent`` — a person's or an admin's token of the HTTP
        service — is refused (reason ``claims``), even if it names an agent."""
        payload = self._payload(token)
        names = self._settings.claims
        role = payload.get(names.role)
        # (A role claim name that is also the tenant, person, agent or session claim's names
        # no role: ``memory mcp`` never configures the role claim.)
        other = names.role in (names.tenant, names.person, names.agent, names.session)
        if not other and role is not None and role != "agent":
            raise _refused(
                "claims",
                "The bearer token's role claim is not agent, and only agent tokens act here",
            )
        return self._claims(payload)

    def verify_principal(self, token: object) -> Principal:
        """The :class:`Principal` of ``token``, once it verifies: its role claim (``role`` by
        default) is ``agent``, ``person`` or ``admin``, and it names what that role needs."""
        payload = self._payload(token)
        names = self._settings.claims
        role = payload.get(names.role)
        if role not in ROLES:
            raise _refused(
                "claims",
                "The bearer token does not name a role (agent, person or admin) in the "
                "configured claim",
            )
        if role == "agent":
            claims = self._claims(payload)
            person: str | None = claims.person
            agent: str | None = claims.agent
            session = claims.session
        else:
            try:
                tenant_id = payload.get(names.tenant)
                if not isinstance(tenant_id, str):
                    raise InvalidInputError
                with _tenant.use(tenant_id):  # checks the tenant id
                    pass
                person = None if role == "admin" else validate.person(payload.get(names.person))
                agent = None
                session = None
                if (
                    role == "person"
                    and names.session is not None
                    and payload.get(names.session) is not None
                ):
                    session = validate.name(payload.get(names.session), "session")
            except InvalidInputError:
                raise _refused(
                    "claims",
                    "The bearer token does not name a valid tenant (and, for a person token, "
                    "person) in the configured claims",
                ) from None
        subject = payload.get("sub")
        tenant_claim = payload[names.tenant]
        return Principal(
            tenant=str(tenant_claim),
            role=role,
            person=person,
            agent=agent,
            session=session,
            issuer=str(payload["iss"]),
            subject=subject if isinstance(subject, str) else None,
            expires_at=int(payload["exp"]),
        )

    def _payload(self, token: object) -> Mapping[str, Any]:
        """The payload of ``token`` once its signature, algorithm, ``exp``, ``iss`` and
        ``aud`` verify."""
        if not isinstance(token, str) or not token:
            raise _refused("missing", "No bearer token was given")
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 2:
            raise _refused("malformed", "The bearer token is not a well-formed JWT")
        settings = self._settings
        try:
            header = jwt.get_unverified_header(token)
            algorithm = header.get("alg")
            if not isinstance(algorithm, str) or algorithm not in settings.algorithms:
                raise _refused("algorithm", "The bearer token's algorithm is not accepted")
            key: jwt.PyJWK | bytes
            if algorithm in SYMMETRIC_ALGORITHMS:
                assert settings.secret is not None  # noqa: S101 - checked with the settings
                key = settings.secret
            else:
                key = self._public_key(header.get("kid"), algorithm)
            payload = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=settings.audience,
                issuer=settings.issuer,
                leeway=settings.leeway,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt.PyJWTError as exc:
            raise _translate(exc) from None
        return payload

    def _public_key(self, kid: object, algorithm: str) -> jwt.PyJWK:
        """The configured public key for ``algorithm`` with this ``kid`` (the file's first,
        then the JWKS URL's)."""
        if kid is not None and not isinstance(kid, str):
            raise _refused("malformed", "The bearer token is not a well-formed JWT")
        usable = [
            key for key in self._file_keys
            if key.algorithm_name == algorithm and (kid is None or key.key_id == kid)
        ]
        if not usable and kid is not None and self._client is not None:
            try:
                fetched = self._client.get_signing_key(kid)
            except jwt.PyJWKClientError:
                # an unknown kid, or the URL did not answer: PyJWT raises the same for both
                logger.warning("the JWKS URL gave no key for a token's kid")
                raise _refused("key", "No configured key verifies the bearer token") from None
            if fetched.algorithm_name == algorithm:
                usable = [fetched]
        if len(usable) > 1:
            raise _refused("key", "The bearer token names no key (kid) and several could verify it")
        if not usable or usable[0].algorithm_name in SYMMETRIC_ALGORITHMS:
            raise _refused("key", "No configured key verifies the bearer token")
        return usable[0]

    def _claims(self, payload: Mapping[str, Any]) -> Claims:
        names = self._settings.claims
        try:
            tenant = payload.get(names.tenant)
            if not isinstance(tenant, str):
                raise InvalidInputError
            with _tenant.use(tenant):  # checks the tenant id
                pass
            person = validate.person(payload.get(names.person))
            agent = validate.name(payload.get(names.agent), "agent")
            session = None
            if names.session is not None and payload.get(names.session) is not None:
                session = validate.name(payload.get(names.session), "session")
        except InvalidInputError:
            raise _refused(
                "claims",
                "The bearer token does not name a valid tenant, person and agent in the "
                "configured claims",
            ) from None
        subject = payload.get("sub")
        expires = payload["exp"]
        return Claims(
            tenant=tenant,
            person=person,
            agent=agent,
            session=session,
            issuer=str(payload["iss"]),
            subject=subject if isinstance(subject, str) else None,
            expires_at=int(expires),
        )
