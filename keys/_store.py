"""The project key store: a key-encryption key, wrapped per-subject secrets, and signing keys.

Layout of a key store folder (0700; every file 0600)::

    keystore.json          format, naming key, key-encryption key (KEK), Ed25519 signing keys
    subjects/<name>.json   one wrapped 32-byte secret per subject (a person, or the tenant)
                           in one tenant and app; <name> is an HMAC of (tenant, app, subject)
                           under the naming key, so no file name carries a person id

A subject secret is random and never stored unwrapped: it is sealed with AES-256-GCM under
the KEK, with associated data binding tenant, app and subject, so a wrapped secret copied to
another name does not open. From the secret, HKDF-SHA256 derives the subject's sealing key,
its blind-index key and (for the tenant subject) the pseudonym key that hides person ids
from the storage driver. Destroying a subject removes its file; nothing else holds the secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
)

from mainsdk_memory._errors import KeyStoreError, SealError
from mainsdk_memory._files import create_private_once, make_private_dir, remove_durably

__all__ = ["KeyStore", "SigningKey", "SubjectKeys", "associated_data"]

FORMAT = "mainsdk-memory-keystore/1"
_ENVELOPE_VERSION = b"\x01"
_NONCE = 12
_TAG = 16


def associated_data(*parts: str | int) -> bytes:
    """Encode ``parts`` unambiguously (length-prefixed) for use as AEAD associated data."""
    out = bytearray()
    for part in parts:
        raw = str(part).encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _hkdf(secret: bytes, info: str) -> bytes:
    return HKDF(algorithm=SHA256(), length=32, salt=None, info=info.encode()).derive(secret)


class _NoCopy:
    """Key handles refuse to be pickled or copied, and print without their secrets."""

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be pickled")

    def __copy__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be copied")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be copied")


class SubjectKeys(_NoCopy):
    """Sealing and blind-index keys of one subject; a handle, never the raw keys.

    Envelope produced by :meth:`seal`, byte by byte::

        0      1 byte    envelope version, 0x01
        1      12 bytes  random nonce
        13     n bytes   AES-256-GCM ciphertext of the plaintext
        13+n   16 bytes  GCM tag (authenticates the ciphertext and the associated data)
    """

    __slots__ = ("_aead", "_index", "_pseudonym", "label")

    def __init__(self, secret: bytes, label: str) -> None:
        if len(secret) != 32:
            raise KeyStoreError("A subject secret must be 32 bytes.")
        self._aead = AESGCM(_hkdf(secret, "mainsdk-memory/v1/seal"))
        self._index = _hkdf(secret, "mainsdk-memory/v1/blind-index")
        self._pseudonym = _hkdf(secret, "mainsdk-memory/v1/pseudonym")
        self.label = label

    def __repr__(self) -> str:
        return f"<SubjectKeys {self.label} (secret hidden)>"

    def seal(self, plaintext: bytes, associated_data: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext`` bound to ``associated_data`` (required)."""
        nonce = os.urandom(_NONCE)
        return _ENVELOPE_VERSION + nonce + self._aead.encrypt(nonce, plaintext, associated_data)

    def open(self, envelope: bytes, associated_data: bytes) -> bytes:
        """Decrypt an envelope from :meth:`seal`; raise the opaque :class:`SealError` on failure."""
        if len(envelope) < 1 + _NONCE + _TAG or envelope[:1] != _ENVELOPE_VERSION:
            raise SealError
        nonce = envelope[1 : 1 + _NONCE]
        try:
            return self._aead.decrypt(nonce, envelope[1 + _NONCE :], associated_data)
        except InvalidTag:
            raise SealError from None

    def blind(self, term: str) -> str:
        """Return the blind-index token of a normalized term: a keyed HMAC, 128 bits, hex."""
        return hmac.new(self._index, term.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def pseudonym(self, name: str) -> str:
        """Return a stable keyed pseudonym for ``name`` (used for person ids), 128 bits, hex."""
        mac = hmac.new(self._pseudonym, name.encode("utf-8"), hashlib.sha256).hexdigest()
        return "p_" + mac[:32]


@dataclass(frozen=True, slots=True, repr=False)
class SigningKey(_NoCopy):
    """An Ed25519 signing key with its key id; prints without the private key."""

    kid: str
    private: Ed25519PrivateKey
    created: datetime

    def __repr__(self) -> str:
        return f"<SigningKey {self.kid} (private key hidden)>"

    @property
    def public(self) -> Ed25519PublicKey:
        """The public half, safe to publish."""
        return self.private.public_key()


class KeyStore(_NoCopy):
    """A project key store in a folder of its own (never inside a memory store).

    Build it with :meth:`create` (once, ``memory keys init``) or :meth:`open`; both check that
    the store can seal, open and sign before returning, so a broken store fails at once.
    """

    def __init__(self, path: Path, document: dict[str, Any]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], SubjectKeys] = {}
        try:
            self._name_key = _unb64(document["name_key"])
            kek = document["kek"]
            self._kek_id: str = kek["kid"]
            self._kek = AESGCM(_unb64(kek["key"]))
            self._signing = [
                SigningKey(
                    kid=item["kid"],
                    private=Ed25519PrivateKey.from_private_bytes(_unb64(item["ed25519"])),
                    created=datetime.fromisoformat(item["created"]),
                )
                for item in document["signing"]
            ]
            self._active_signing: str = document["active_signing"]
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyStoreError(
                f"The key store at {path} is damaged (keystore.json is not readable). "
                "Restore it from your key backup; a lost key store cannot be recreated."
            ) from exc
        self._self_test()

    def __repr__(self) -> str:
        return f"<KeyStore {self.path} (keys hidden)>"

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Create a new key store at ``path``; refuse to overwrite an existing one."""
        root = Path(path)
        if (root / "keystore.json").exists():
            raise KeyStoreError(
                f"A key store already exists at {root}; it was left as it is. "
                "Use it, or choose another folder."
            )
        if root.exists() and any(root.iterdir()):
            raise KeyStoreError(
                f"{root} is not empty. A key store needs a folder of its own, outside the "
                "memory store."
            )
        make_private_dir(root)
        make_private_dir(root / "subjects")
        now = datetime.now(UTC).isoformat()
        document = {
            "format": FORMAT,
            "name_key": _b64(secrets.token_bytes(32)),
            "kek": {"kid": "kek_" + secrets.token_hex(8), "key": _b64(AESGCM.generate_key(256))},
            "signing": [
                {
                    "kid": "sig_" + secrets.token_hex(8),
                    "ed25519": _b64(Ed25519PrivateKey.generate().private_bytes_raw()),
                    "created": now,
                }
            ],
        }
        document["active_signing"] = document["signing"][0]["kid"]  # type: ignore[index]
        if not create_private_once(root / "keystore.json", json.dumps(document).encode()):
            raise KeyStoreError(f"A key store was created at {root} concurrently; use that one.")
        return cls(root, document)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Open the key store at ``path``, or explain how to create one."""
        root = Path(path)
        file = root / "keystore.json"
        if not file.is_file():
            raise KeyStoreError(
                f"No key store at {root}. Create one with `memory keys init --keys {root}` "
                "and keep it outside the memory store (and out of version control)."
            )
        try:
            document = json.loads(file.read_bytes())
        except (OSError, ValueError) as exc:
            raise KeyStoreError(
                f"The key store at {root} cannot be read. Check its permissions, or restore it "
                "from your key backup."
            ) from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise KeyStoreError(
                f"{file} is not a mainsdk-memory key store of a format this version knows."
            )
        return cls(root, document)

    def _self_test(self) -> None:
        probe = os.urandom(16)
        ad = associated_data("self-test")
        nonce = os.urandom(_NONCE)
        try:
            ok = self._kek.decrypt(nonce, self._kek.encrypt(nonce, probe, ad), ad) == probe
            signer = self.signing_key
            signer.public.verify(signer.private.sign(probe), probe)
        except Exception as exc:
            raise KeyStoreError(f"The key store at {self.path} failed its self-test.") from exc
        if not ok:  # pragma: no cover - AES-GCM either round-trips or raises
            raise KeyStoreError(f"The key store at {self.path} failed its self-test.")

    # -- subjects -------------------------------------------------------------------------

    def _subject_file(self, tenant: str, app: str, subject: str) -> Path:
        name = hmac.new(
            self._name_key, associated_data("subject", tenant, app, subject), hashlib.sha256
        ).hexdigest()[:40]
        return self.path / "subjects" / f"{name}.json"

    def _wrap_ad(self, tenant: str, app: str, subject: str, kid: str) -> bytes:
        return associated_data("mainsdk-memory/v1/wrap", tenant, app, subject, kid)

    def subject_keys(
        self, tenant: str, app: str, subject: str, *, create: bool
    ) -> SubjectKeys | None:
        """Return the keys of ``subject`` in ``tenant``/``app``.

        With ``create=False`` a subject that has no key (never written, or destroyed) gives
        ``None``; with ``create=True`` a new random secret is made and stored wrapped.
        """
        cache_key = (tenant, app, subject)
        with self._lock:
            cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        file = self._subject_file(tenant, app, subject)
        label = f"subject {file.stem[:8]}"
        secret = self._read_subject(file, tenant, app, subject)
        if secret is None:
            if not create:
                return None
            secret = secrets.token_bytes(32)
            nonce = os.urandom(_NONCE)
            wrapped = self._kek.encrypt(
                nonce, secret, self._wrap_ad(tenant, app, subject, self._kek_id)
            )
            record = {"v": 1, "kek": self._kek_id, "nonce": _b64(nonce), "wrapped": _b64(wrapped)}
            if not create_private_once(file, json.dumps(record).encode()):
                secret = self._read_subject(file, tenant, app, subject)  # another writer won
                if secret is None:
                    raise KeyStoreError(f"The key store at {self.path} lost a subject key.")
        keys = SubjectKeys(secret, label)
        with self._lock:
            return self._cache.setdefault(cache_key, keys)

    def _read_subject(self, file: Path, tenant: str, app: str, subject: str) -> bytes | None:
        try:
            record = json.loads(file.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise KeyStoreError(
                f"A subject key in {self.path} cannot be read. Restore the key store from backup."
            ) from exc
        try:
            nonce, wrapped = _unb64(record["nonce"]), _unb64(record["wrapped"])
            ad = self._wrap_ad(tenant, app, subject, record["kek"])
            return self._kek.decrypt(nonce, wrapped, ad)
        except (KeyError, TypeError, ValueError, InvalidTag) as exc:
            raise KeyStoreError(
                f"A subject key in {self.path} does not open under this key store's "
                "key-encryption key. Restore the key store from backup."
            ) from exc

    def destroy_subject(self, tenant: str, app: str, subject: str) -> bool:
        """Destroy the subject's secret for good; return whether one existed."""
        with self._lock:
            self._cache.pop((tenant, app, subject), None)
        return remove_durably(self._subject_file(tenant, app, subject))

    # -- signing --------------------------------------------------------------------------

    @property
    def signing_key(self) -> SigningKey:
        """The signing key that signs new receipts."""
        for key in self._signing:
            if key.kid == self._active_signing:
                return key
        raise KeyStoreError(f"The key store at {self.path} has no active signing key.")

    def public_keys(self) -> Iterable[tuple[str, Ed25519PublicKey]]:
        """Every signing key's id and public key (old ones too, so old receipts verify)."""
        return [(key.kid, key.public) for key in self._signing]

    def export_public_pem(self) -> bytes:
        """The active signing key's public key as PEM (SubjectPublicKeyInfo)."""
        public = self.signing_key.public
        return public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)

    def export_public_jwks(self) -> dict[str, Any]:
        """Every signing public key as a JWK Set (each with its ``kid``)."""
        keys = []
        for kid, public in self.public_keys():
            raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
            x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
            keys.append({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"})
        return {"keys": keys}
